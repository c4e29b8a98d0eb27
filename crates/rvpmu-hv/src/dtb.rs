//! The guest's device tree: a flattened device tree (devicetree
//! specification v0.4, chapter 5) written into a fixed buffer, no
//! allocator. [`guest_dt`] describes exactly what the guest gets: its RAM,
//! one hart (hart id 0) with the ISA the guest may use and the host's
//! timebase, and `/chosen` with the command line and the initrd. No
//! devices: the console is SBI DBCN (Linux: `earlycon=sbi console=hvc0`).

use crate::layout::GuestLayout;
use crate::ram::GuestRam;

use rvpmu_dtb::format::{
    BEGIN_NODE, END, END_NODE, HEADER_LEN, LAST_COMP_VERSION, MAGIC, PROP, VERSION,
};

/// The memory reservation block: only its terminating empty entry.
const RSVMAP_LEN: usize = rvpmu_dtb::format::RSVMAP_ENTRY_LEN;
const STRINGS_CAP: usize = 512;

/// The tree does not fit the buffer (or the strings table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtFull;

/// Writes a flattened device tree into a buffer: nodes and properties in
/// order, then [`FdtWriter::finish`]. An overflow is remembered and
/// reported by `finish`.
pub struct FdtWriter<'a> {
    buf: &'a mut [u8],
    pos: usize,
    strings: [u8; STRINGS_CAP],
    strings_len: usize,
    full: bool,
}

impl<'a> FdtWriter<'a> {
    /// A writer filling `buf` from its start.
    pub fn new(buf: &'a mut [u8]) -> FdtWriter<'a> {
        let full = buf.len() < HEADER_LEN + RSVMAP_LEN;
        FdtWriter {
            buf,
            pos: HEADER_LEN + RSVMAP_LEN,
            strings: [0; STRINGS_CAP],
            strings_len: 0,
            full,
        }
    }

    fn put(&mut self, bytes: &[u8]) {
        let padded = (bytes.len() + 3) & !3;
        if self.full || self.buf.len() - self.pos < padded {
            self.full = true;
            return;
        }
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.buf[self.pos + bytes.len()..self.pos + padded].fill(0);
        self.pos += padded;
    }

    fn put_u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }

    /// Offset of `name` in the strings block, adding it if new.
    fn string(&mut self, name: &str) -> u32 {
        let mut at = 0;
        while at < self.strings_len {
            let end = at
                + self.strings[at..self.strings_len]
                    .iter()
                    .position(|&b| b == 0)
                    .unwrap_or(0);
            if &self.strings[at..end] == name.as_bytes() {
                return at as u32;
            }
            at = end + 1;
        }
        if STRINGS_CAP - self.strings_len < name.len() + 1 {
            self.full = true;
            return 0;
        }
        let at = self.strings_len;
        self.strings[at..at + name.len()].copy_from_slice(name.as_bytes());
        self.strings[at + name.len()] = 0;
        self.strings_len += name.len() + 1;
        at as u32
    }

    /// Open node `name` (the root is "").
    pub fn begin(&mut self, name: &str) {
        self.put_u32(BEGIN_NODE);
        let mut n = [0u8; 64];
        let len = name.len().min(63);
        n[..len].copy_from_slice(&name.as_bytes()[..len]);
        self.put(&n[..len + 1]);
    }

    /// Close the innermost open node.
    pub fn end(&mut self) {
        self.put_u32(END_NODE);
    }

    /// A property with raw bytes.
    pub fn prop(&mut self, name: &str, value: &[u8]) {
        let off = self.string(name);
        self.put_u32(PROP);
        self.put_u32(value.len() as u32);
        self.put_u32(off);
        self.put(value);
    }

    /// A property of 32-bit cells.
    pub fn prop_cells(&mut self, name: &str, cells: &[u32]) {
        let mut v = [0u8; 64];
        let n = cells.len().min(16);
        for (i, c) in cells[..n].iter().enumerate() {
            v[4 * i..4 * i + 4].copy_from_slice(&c.to_be_bytes());
        }
        self.prop(name, &v[..4 * n]);
    }

    /// A one-cell property.
    pub fn prop_u32(&mut self, name: &str, v: u32) {
        self.prop_cells(name, &[v]);
    }

    /// A 64-bit value as two cells.
    pub fn prop_u64(&mut self, name: &str, v: u64) {
        self.prop_cells(name, &[(v >> 32) as u32, v as u32]);
    }

    /// A string list (each NUL-terminated), at most 512 bytes.
    pub fn prop_strs<'s>(&mut self, name: &str, list: impl IntoIterator<Item = &'s str>) {
        let mut v = [0u8; 512];
        let mut len = 0;
        for s in list {
            if v.len() - len < s.len() + 1 {
                self.full = true;
                return;
            }
            v[len..len + s.len()].copy_from_slice(s.as_bytes());
            len += s.len() + 1;
        }
        self.prop(name, &v[..len]);
    }

    /// A string property.
    pub fn prop_str(&mut self, name: &str, s: &str) {
        self.prop_strs(name, [s]);
    }

    /// Finish the tree (header, strings); returns its total size.
    pub fn finish(mut self, boot_cpuid: u32) -> Result<usize, DtFull> {
        self.put_u32(END);
        let struct_len = self.pos - HEADER_LEN - RSVMAP_LEN;
        let strings_at = self.pos;
        let total = strings_at + self.strings_len;
        if self.full || total > self.buf.len() {
            return Err(DtFull);
        }
        self.buf[strings_at..total].copy_from_slice(&self.strings[..self.strings_len]);
        self.buf[HEADER_LEN..HEADER_LEN + RSVMAP_LEN].fill(0);
        let header = [
            MAGIC,
            total as u32,
            (HEADER_LEN + RSVMAP_LEN) as u32,
            strings_at as u32,
            HEADER_LEN as u32,
            VERSION,
            LAST_COMP_VERSION,
            boot_cpuid,
            self.strings_len as u32,
            struct_len as u32,
        ];
        for (i, w) in header.iter().enumerate() {
            self.buf[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
        Ok(total)
    }
}

/// Multi-letter extensions a guest may be told about when the host has
/// them: unprivileged ones that need nothing from the hypervisor. Not
/// listed (the hypervisor does not give them to guests yet): `h`, the
/// counters beyond cycle/time/instret (zihpm, sscofpmf: added only with
/// the virtual PMU), cache block operations (henvcfg does not enable
/// them), Svpbmt/Svadu.
const GUEST_EXTENSIONS: &[&str] = &[
    "zicntr",
    "zicsr",
    "zifencei",
    "zihintpause",
    "zihintntl",
    "zba",
    "zbb",
    "zbc",
    "zbs",
    "zfa",
    "zmmul",
    "zaamo",
    "zalrsc",
    "zca",
    "zcd",
];

/// The guest's ISA string: the host's single letters without `h`, then the
/// host's extensions from the allowed list, then `zihpm` and `sscofpmf`
/// when the guest has the virtual PMU (its counters are host HPM counters
/// with Sscofpmf's filters; Linux's riscv_pmu_sbi offers mode filters
/// only with `sscofpmf`), then `sstc` when the guest has vstimecmp.
pub struct GuestIsa {
    buf: [u8; 256],
    len: usize,
}

impl GuestIsa {
    /// Derive it from the host hart's `riscv,isa`.
    pub fn from_host(host: &str, sstc: bool, pmu: bool) -> GuestIsa {
        let mut g = GuestIsa {
            buf: [0; 256],
            len: 0,
        };
        let mut parts = host.split('_');
        let base = parts.next().unwrap_or("");
        for b in base.bytes().filter(|&b| b != b'h' && b != b'H') {
            g.push(&[b]);
        }
        for e in parts.filter(|e| GUEST_EXTENSIONS.contains(e)) {
            g.push(b"_");
            g.push(e.as_bytes());
        }
        if pmu {
            g.push(b"_zihpm_sscofpmf");
        }
        if sstc {
            g.push(b"_sstc");
        }
        g
    }

    fn push(&mut self, b: &[u8]) {
        if self.buf.len() - self.len >= b.len() {
            self.buf[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
        }
    }

    /// `rv64imafdc_zicntr_...`
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("rv64ima")
    }

    /// The same as `riscv,isa-extensions` wants it: single letters, then
    /// each multi-letter extension.
    pub fn extensions(&self) -> impl Iterator<Item = &str> {
        let s = self.as_str();
        let mut parts = s.split('_');
        let letters = parts.next().unwrap_or("");
        let letters = letters.get(4..).unwrap_or("");
        (0..letters.len())
            .map(move |i| &letters[i..i + 1])
            .chain(parts)
    }
}

/// What goes into the guest's tree.
pub struct GuestDt<'a> {
    /// The guest's RAM.
    pub ram: GuestRam,
    /// Where kernel, initrd and DTB are.
    pub layout: GuestLayout,
    /// The host's timebase-frequency (the guest reads the host's time).
    pub timebase: u32,
    /// The guest hart's ISA.
    pub isa: &'a GuestIsa,
    /// The kernel command line.
    pub bootargs: &'a str,
    /// Entropy for the guest kernel's random pool (`/chosen/rng-seed`).
    pub rng_seed: Option<&'a [u8]>,
    /// The host hart's `mmu-type` (None: Sv39, which every RV64 hart
    /// running Linux has).
    pub mmu_type: Option<&'a str>,
}

/// The most bytes of the host's `rng-seed` a guest gets.
pub const MAX_RNG_SEED: usize = 64;

/// Guest `g`'s `rng-seed`, made from the host's (at most
/// [`MAX_RNG_SEED`] bytes of it) in `out`: guest 0 gets the host's bytes,
/// and every other guest the same with its index XORed into the first
/// eight, so no two guests of one machine start their random pool alike.
/// (The guests share the host's entropy: a hypervisor with its own
/// source of randomness would give each guest fresh bytes.)
pub fn guest_rng_seed<'a>(host: &[u8], g: usize, out: &'a mut [u8; MAX_RNG_SEED]) -> &'a [u8] {
    let n = host.len().min(MAX_RNG_SEED);
    out[..n].copy_from_slice(&host[..n]);
    for (b, x) in out[..n].iter_mut().zip((g as u64).to_le_bytes()) {
        *b ^= x;
    }
    &out[..n]
}

/// Write the guest's tree into `buf`; returns its size.
pub fn guest_dt(buf: &mut [u8], g: &GuestDt<'_>) -> Result<usize, DtFull> {
    let mut w = FdtWriter::new(buf);
    w.begin("");
    w.prop_u32("#address-cells", 2);
    w.prop_u32("#size-cells", 2);
    w.prop_str("compatible", "rvpmu,hv-guest");
    w.prop_str("model", "rvpmu-hv guest");

    w.begin("chosen");
    w.prop_str("bootargs", g.bootargs);
    if let Some(seed) = g.rng_seed {
        w.prop("rng-seed", seed);
    }
    if g.layout.initrd.0 != g.layout.initrd.1 {
        w.prop_u64("linux,initrd-start", g.layout.initrd.0);
        w.prop_u64("linux,initrd-end", g.layout.initrd.1);
    }
    w.end();

    let mut name = NameBuf::default();
    w.begin(name.node_at("memory", g.ram.gpa()));
    w.prop_str("device_type", "memory");
    let (b, s) = (g.ram.gpa(), g.ram.size());
    w.prop_cells(
        "reg",
        &[(b >> 32) as u32, b as u32, (s >> 32) as u32, s as u32],
    );
    w.end();

    w.begin("cpus");
    w.prop_u32("#address-cells", 1);
    w.prop_u32("#size-cells", 0);
    w.prop_u32("timebase-frequency", g.timebase);
    w.begin("cpu@0");
    w.prop_str("device_type", "cpu");
    w.prop_u32("reg", 0);
    w.prop_str("status", "okay");
    w.prop_str("compatible", "riscv");
    w.prop_str("riscv,isa", g.isa.as_str());
    w.prop_str("riscv,isa-base", "rv64i");
    w.prop_strs("riscv,isa-extensions", g.isa.extensions());
    w.prop_str("mmu-type", g.mmu_type.unwrap_or("riscv,sv39"));
    w.begin("interrupt-controller");
    w.prop_u32("#interrupt-cells", 1);
    w.prop("interrupt-controller", &[]);
    w.prop_str("compatible", "riscv,cpu-intc");
    w.prop_u32("phandle", 1);
    w.end();
    w.end();
    w.end();

    w.end();
    w.finish(0)
}

/// `name@hex` for a node, without an allocator.
struct NameBuf {
    buf: [u8; 48],
}

impl Default for NameBuf {
    fn default() -> Self {
        NameBuf { buf: [0; 48] }
    }
}

impl NameBuf {
    fn node_at<'s>(&'s mut self, name: &'s str, addr: u64) -> &'s str {
        let mut len = name.len().min(30);
        self.buf[..len].copy_from_slice(&name.as_bytes()[..len]);
        self.buf[len] = b'@';
        len += 1;
        let digits = if addr == 0 {
            1
        } else {
            (67 - addr.leading_zeros() as usize) / 4
        };
        for i in (0..digits).rev() {
            let d = (addr >> (4 * i)) & 0xf;
            self.buf[len] = b"0123456789abcdef"[d as usize];
            len += 1;
        }
        core::str::from_utf8(&self.buf[..len]).unwrap_or(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::guest_layout;

    const QEMU_ISA: &str = "rv64imafdch_zic64b_zicbom_zicboz_zicntr_zicsr_zifencei_zihintpause_zihpm_zba_zbb_zbs_sscofpmf_sstc_svadu";

    #[test]
    fn guest_isa_drops_what_the_guest_does_not_get() {
        let isa = GuestIsa::from_host(QEMU_ISA, true, false);
        assert_eq!(
            isa.as_str(),
            "rv64imafdc_zicntr_zicsr_zifencei_zihintpause_zba_zbb_zbs_sstc"
        );
        let ext: Vec<_> = isa.extensions().collect();
        assert_eq!(ext[..6], ["i", "m", "a", "f", "d", "c"]);
        assert_eq!(
            ext[6..],
            [
                "zicntr",
                "zicsr",
                "zifencei",
                "zihintpause",
                "zba",
                "zbb",
                "zbs",
                "sstc"
            ]
        );
        assert_eq!(
            GuestIsa::from_host("rv64imafdch_sstc", false, false).as_str(),
            "rv64imafdc"
        );
        assert_eq!(
            GuestIsa::from_host("rv64imafdch_sscofpmf_sstc", true, true).as_str(),
            "rv64imafdc_zihpm_sscofpmf_sstc"
        );
    }

    #[test]
    fn the_guest_tree_parses_and_says_what_the_guest_has() {
        let ram = GuestRam::new(0x8000_0000, 0x9000_0000, 256 << 20).unwrap();
        let layout = guest_layout(&ram, 8 << 20, 12345).unwrap();
        let isa = GuestIsa::from_host(QEMU_ISA, true, false);
        let mut buf = vec![0u8; 4096];
        let n = guest_dt(
            &mut buf,
            &GuestDt {
                ram,
                layout,
                timebase: 10_000_000,
                isa: &isa,
                bootargs: "earlycon=sbi console=hvc0",
                rng_seed: Some(&[7; 32]),
                mmu_type: Some("riscv,sv57"),
            },
        )
        .unwrap();
        let fdt = fdt::Fdt::new(&buf[..n]).unwrap();
        assert_eq!(fdt.total_size(), n);
        let mem: Vec<_> = fdt.memory().regions().collect();
        assert_eq!(mem.len(), 1);
        assert_eq!(mem[0].starting_address as u64, 0x8000_0000);
        assert_eq!(mem[0].size, Some(256 << 20));
        let chosen = fdt.chosen();
        assert_eq!(chosen.bootargs(), Some("earlycon=sbi console=hvc0"));
        let node = fdt.find_node("/chosen").unwrap();
        let start = node
            .property("linux,initrd-start")
            .unwrap()
            .as_usize()
            .unwrap();
        let end = node
            .property("linux,initrd-end")
            .unwrap()
            .as_usize()
            .unwrap();
        assert_eq!((start as u64, end as u64), layout.initrd);
        assert_eq!(node.property("rng-seed").unwrap().value, &[7; 32]);
        assert_eq!(end - start, 12345);
        let cpus: Vec<_> = fdt.cpus().collect();
        assert_eq!(cpus.len(), 1);
        assert_eq!(cpus[0].ids().first(), 0);
        assert_eq!(cpus[0].timebase_frequency(), 10_000_000);
        assert_eq!(
            cpus[0].property("riscv,isa").unwrap().as_str(),
            Some(isa.as_str())
        );
        assert_eq!(
            cpus[0].property("mmu-type").unwrap().as_str(),
            Some("riscv,sv57")
        );
        let exts = cpus[0].property("riscv,isa-extensions").unwrap().value;
        assert!(exts.starts_with(b"i\0m\0a\0f\0d\0c\0zicntr\0"));
        assert!(exts.ends_with(b"sstc\0"));
        let intc = fdt.find_node("/cpus/cpu@0/interrupt-controller").unwrap();
        assert_eq!(intc.compatible().unwrap().first(), "riscv,cpu-intc");
        assert!(fdt.find_node("/memory@80000000").is_some());
        // No initrd: no initrd properties.
        let layout = guest_layout(&ram, 8 << 20, 0).unwrap();
        let n = guest_dt(
            &mut buf,
            &GuestDt {
                ram,
                layout,
                timebase: 1,
                isa: &isa,
                bootargs: "",
                rng_seed: None,
                mmu_type: None,
            },
        )
        .unwrap();
        let fdt = fdt::Fdt::new(&buf[..n]).unwrap();
        assert!(fdt
            .find_node("/chosen")
            .unwrap()
            .property("linux,initrd-start")
            .is_none());
        // Neither seed nor host MMU type: no seed, and Sv39.
        assert!(fdt
            .find_node("/chosen")
            .unwrap()
            .property("rng-seed")
            .is_none());
        let cpu = fdt.cpus().next().unwrap();
        assert_eq!(
            cpu.property("mmu-type").unwrap().as_str(),
            Some("riscv,sv39")
        );
    }

    #[test]
    fn each_guest_gets_its_own_seed_of_the_hosts_length() {
        let host = [0x5a; 32];
        let (mut a, mut b, mut c) = ([0; MAX_RNG_SEED], [0; MAX_RNG_SEED], [0; MAX_RNG_SEED]);
        let g0 = guest_rng_seed(&host, 0, &mut a);
        let g1 = guest_rng_seed(&host, 1, &mut b);
        assert_eq!(g0, &host);
        assert_eq!(g1.len(), 32);
        assert_ne!(g0, g1);
        assert_eq!(g1[0], 0x5b);
        assert_eq!(g1[1..], host[1..]);
        // A longer host seed is cut; a short one (under 8 bytes) kept whole.
        assert_eq!(guest_rng_seed(&[1; 100], 2, &mut c).len(), MAX_RNG_SEED);
        assert_eq!(guest_rng_seed(&[1, 2, 3], 3, &mut c), &[2, 2, 3]);
    }

    #[test]
    fn a_small_buffer_is_an_error_not_a_panic() {
        let ram = GuestRam::new(0x8000_0000, 0x9000_0000, 64 << 20).unwrap();
        let layout = guest_layout(&ram, 1 << 20, 0).unwrap();
        let isa = GuestIsa::from_host(QEMU_ISA, true, false);
        let g = GuestDt {
            ram,
            layout,
            timebase: 1,
            isa: &isa,
            bootargs: "x",
            rng_seed: None,
            mmu_type: None,
        };
        for len in [0, 10, 56, 200, 500] {
            let mut buf = vec![0u8; len];
            assert_eq!(guest_dt(&mut buf, &g), Err(DtFull), "{len}");
        }
        let mut buf = vec![0u8; 2048];
        let n = guest_dt(&mut buf, &g).unwrap();
        let mut exact = vec![0u8; n];
        assert_eq!(guest_dt(&mut exact, &g), Ok(n));
        let long = "x".repeat(600);
        let g = GuestDt {
            bootargs: &long,
            rng_seed: None,
            mmu_type: None,
            ..g
        };
        assert_eq!(guest_dt(&mut buf, &g), Err(DtFull));
    }
}
