//! The guest bundle: one file, given to QEMU as `-initrd`, holding what the
//! hypervisor boots (xtask writes it with [`Header::for_parts`] and
//! [`Header::to_bytes`]; the hypervisor finds it through the host device
//! tree's `/chosen` `linux,initrd-start`/`-end` and reads it with
//! [`Bundle::parse`]). Using QEMU's initrd loader means the hypervisor
//! learns the bundle's place and size from the device tree instead of
//! from addresses shared by convention.
//!
//! Layout, all fields little-endian u64:
//!
//! | offset | field |
//! |---|---|
//! | 0 | magic `RVHVGST1` |
//! | 8 | guest RAM size in bytes |
//! | 16, 24 | kernel offset, length |
//! | 32, 40 | initrd offset, length (0, 0: none) |
//! | 48, 56 | command line offset, length (bytes, no NUL) |
//!
//! then the parts, each at its offset (xtask puts them in that order
//! after the header, each 8-byte aligned).

/// The magic, "RVHVGST1".
pub const MAGIC: [u8; 8] = *b"RVHVGST1";
/// Header size.
pub const HEADER_LEN: usize = 64;

/// Why a bundle is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BundleError {
    /// Shorter than the header.
    Truncated,
    /// Not a bundle.
    BadMagic,
    /// A part lies (partly) outside the bundle.
    PartOutside,
    /// No kernel.
    NoKernel,
    /// The command line is not UTF-8.
    CmdlineNotUtf8,
}

impl BundleError {
    /// For the hypervisor's boot report.
    pub const fn as_str(self) -> &'static str {
        match self {
            BundleError::Truncated => "guest bundle shorter than its header",
            BundleError::BadMagic => "not a guest bundle (no RVHVGST1 magic)",
            BundleError::PartOutside => "a part of the guest bundle lies outside it",
            BundleError::NoKernel => "the guest bundle has no kernel",
            BundleError::CmdlineNotUtf8 => "the guest command line is not UTF-8",
        }
    }
}

/// The header's fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Guest RAM size.
    pub ram_size: u64,
    /// Kernel (offset, length).
    pub kernel: (u64, u64),
    /// Initrd (offset, length).
    pub initrd: (u64, u64),
    /// Command line (offset, length).
    pub cmdline: (u64, u64),
}

const fn align8(x: u64) -> u64 {
    (x + 7) & !7
}

impl Header {
    /// The header of a bundle holding parts of these lengths, laid out
    /// header, command line, kernel, initrd, each 8-byte aligned. The
    /// whole bundle is `total_len()` bytes.
    pub const fn for_parts(ram_size: u64, cmdline: u64, kernel: u64, initrd: u64) -> Header {
        let c = HEADER_LEN as u64;
        let k = align8(c + cmdline);
        let i = align8(k + kernel);
        Header {
            ram_size,
            kernel: (k, kernel),
            initrd: if initrd == 0 { (0, 0) } else { (i, initrd) },
            cmdline: (c, cmdline),
        }
    }

    /// One past the last byte of the last part.
    pub const fn total_len(&self) -> u64 {
        let mut end = HEADER_LEN as u64;
        let parts = [self.kernel, self.initrd, self.cmdline];
        let mut i = 0;
        while i < parts.len() {
            let e = parts[i].0 + parts[i].1;
            if e > end {
                end = e;
            }
            i += 1;
        }
        end
    }

    /// The header's bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        let words = [
            u64::from_le_bytes(MAGIC),
            self.ram_size,
            self.kernel.0,
            self.kernel.1,
            self.initrd.0,
            self.initrd.1,
            self.cmdline.0,
            self.cmdline.1,
        ];
        for (i, w) in words.iter().enumerate() {
            b[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        b
    }
}

/// A parsed bundle, borrowing its parts.
#[derive(Clone, Copy, Debug)]
pub struct Bundle<'a> {
    /// Guest RAM size (checked by `layout`, not here).
    pub ram_size: u64,
    /// The kernel image, copied to guest RAM.
    pub kernel: &'a [u8],
    /// The initrd (empty: none).
    pub initrd: &'a [u8],
    /// The kernel command line.
    pub cmdline: &'a str,
}

impl<'a> Bundle<'a> {
    /// Parse `bytes`, checking that every part lies inside them.
    pub fn parse(bytes: &'a [u8]) -> Result<Bundle<'a>, BundleError> {
        if bytes.len() < HEADER_LEN {
            return Err(BundleError::Truncated);
        }
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[8 * i..8 * i + 8]);
            u64::from_le_bytes(w)
        };
        if bytes[..8] != MAGIC {
            return Err(BundleError::BadMagic);
        }
        let part = |i: usize| -> Result<&'a [u8], BundleError> {
            let (off, len) = (word(i), word(i + 1));
            let end = off.checked_add(len).ok_or(BundleError::PartOutside)?;
            if end > bytes.len() as u64 {
                return Err(BundleError::PartOutside);
            }
            Ok(&bytes[off as usize..end as usize])
        };
        let kernel = part(2)?;
        if kernel.is_empty() {
            return Err(BundleError::NoKernel);
        }
        let initrd = part(4)?;
        let cmdline = core::str::from_utf8(part(6)?).map_err(|_| BundleError::CmdlineNotUtf8)?;
        Ok(Bundle {
            ram_size: word(1),
            kernel,
            initrd,
            cmdline,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(cmdline: &str, kernel: &[u8], initrd: &[u8]) -> Vec<u8> {
        let h = Header::for_parts(
            64 << 20,
            cmdline.len() as u64,
            kernel.len() as u64,
            initrd.len() as u64,
        );
        let mut b = vec![0u8; h.total_len() as usize];
        b[..HEADER_LEN].copy_from_slice(&h.to_bytes());
        for (p, d) in [
            (h.cmdline, cmdline.as_bytes()),
            (h.kernel, kernel),
            (h.initrd, initrd),
        ] {
            b[p.0 as usize..(p.0 + p.1) as usize].copy_from_slice(d);
        }
        b
    }

    #[test]
    fn round_trip() {
        let b = bundle("console=hvc0", &[1, 2, 3], &[9; 11]);
        let p = Bundle::parse(&b).unwrap();
        assert_eq!(p.ram_size, 64 << 20);
        assert_eq!(p.kernel, &[1, 2, 3]);
        assert_eq!(p.initrd, &[9; 11]);
        assert_eq!(p.cmdline, "console=hvc0");
        // Header, "console=hvc0" (12 -> 16), kernel at 80 (3 -> 8), initrd at 88.
        assert_eq!(b.len(), 88 + 11);
        assert_eq!(&b[..8], b"RVHVGST1");
        let none = bundle("", &[7], &[]);
        let p = Bundle::parse(&none).unwrap();
        assert!(p.initrd.is_empty() && p.cmdline.is_empty());
    }

    #[test]
    fn refuses_what_is_not_a_whole_bundle() {
        let b = bundle("x", &[1, 2, 3, 4], &[5; 8]);
        assert_eq!(Bundle::parse(&b[..63]).unwrap_err(), BundleError::Truncated);
        assert_eq!(
            Bundle::parse(&b[..b.len() - 1]).unwrap_err(),
            BundleError::PartOutside
        );
        let mut bad = b.clone();
        bad[0] = b'X';
        assert_eq!(Bundle::parse(&bad).unwrap_err(), BundleError::BadMagic);
        // A length that wraps around.
        let mut wrap = b.clone();
        wrap[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(Bundle::parse(&wrap).unwrap_err(), BundleError::PartOutside);
        let mut empty = b.clone();
        empty[24..32].copy_from_slice(&0u64.to_le_bytes());
        assert_eq!(Bundle::parse(&empty).unwrap_err(), BundleError::NoKernel);
        let mut utf = b.clone();
        utf[64] = 0xff;
        assert_eq!(
            Bundle::parse(&utf).unwrap_err(),
            BundleError::CmdlineNotUtf8
        );
    }
}
