//! Reserve the firmware's memory in the device tree, in place: a
//! `/reserved-memory/mmode_resv0@<base>` child with `no-map`, so the kernel
//! neither uses nor maps memory S-mode cannot touch. QEMU packs its DTB, so
//! the blob grows into the free memory after it (the caller bounds that).
//! The blocks may lie in any order (`rvpmu_dtb::layout` checks where):
//! the new node and the new property names each open a gap in place, and
//! every block after a gap moves up by its size.
#![cfg(target_os = "none")]

use rvpmu_dtb::format::{Header, BEGIN_NODE, END, END_NODE, NOP, PROP};

/// Why the device tree could not be patched.
#[derive(Debug)]
pub enum PatchError {
    BadHeader,
    BadStructure,
    NoRoom,
}

impl PatchError {
    pub fn as_str(&self) -> &'static str {
        match self {
            PatchError::BadHeader => "invalid DTB header",
            PatchError::BadStructure => "malformed DTB structure block",
            PatchError::NoRoom => "no free memory after the DTB to add /reserved-memory",
        }
    }
}

struct Blob<'a>(&'a mut [u8]);

impl Blob<'_> {
    fn u32(&self, off: usize) -> Option<u32> {
        let b = self.0.get(off..off + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn set_u32(&mut self, off: usize, v: u32) {
        self.0[off..off + 4].copy_from_slice(&v.to_be_bytes());
    }
    /// The NUL-terminated string at `off` (without the NUL).
    fn cstr(&self, off: usize) -> Option<&[u8]> {
        let rest = self.0.get(off..)?;
        let n = rest.iter().position(|&b| b == 0)?;
        Some(&rest[..n])
    }
}

/// What a walk over the structure block found.
struct Walk {
    /// Offset of the root node's END_NODE token.
    root_end: usize,
    /// Offset of /reserved-memory's END_NODE token, if the node exists.
    resv_end: Option<usize>,
    root_cells: (u32, u32),
    resv_cells: (u32, u32),
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn walk(b: &Blob, st: usize, st_end: usize, strings: usize) -> Option<Walk> {
    let mut w = Walk {
        root_end: 0,
        resv_end: None,
        root_cells: (2, 1),
        resv_cells: (2, 1),
    };
    let mut depth = 0usize;
    let mut in_resv = false;
    let mut off = st;
    while off < st_end {
        let tok = b.u32(off)?;
        off += 4;
        match tok {
            BEGIN_NODE => {
                let name = b.cstr(off)?;
                depth += 1;
                if depth == 2 && name == b"reserved-memory" {
                    in_resv = true;
                }
                off = align4(off + name.len() + 1);
            }
            END_NODE => {
                if depth == 2 && in_resv {
                    w.resv_end = Some(off - 4);
                    in_resv = false;
                } else if depth == 1 {
                    w.root_end = off - 4;
                    return Some(w);
                }
                depth = depth.checked_sub(1)?;
            }
            PROP => {
                let len = b.u32(off)? as usize;
                let name = b.cstr(strings + b.u32(off + 4)? as usize)?;
                let val = off + 8;
                if len == 4 && (depth == 1 || (depth == 2 && in_resv)) {
                    let v = b.u32(val)?;
                    let cells = if depth == 1 {
                        &mut w.root_cells
                    } else {
                        &mut w.resv_cells
                    };
                    if name == b"#address-cells" {
                        cells.0 = v;
                    } else if name == b"#size-cells" {
                        cells.1 = v;
                    }
                }
                off = align4(val + len);
            }
            NOP => {}
            END => return None,
            _ => return None,
        }
    }
    None
}

/// Builds the bytes of the node to insert and the strings it needs.
struct Builder {
    node: [u8; 256],
    len: usize,
    strings: [u8; 64],
    strings_len: usize,
}

impl Builder {
    fn push(&mut self, bytes: &[u8]) {
        self.node[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
    fn token(&mut self, t: u32) {
        self.push(&t.to_be_bytes());
    }
    fn begin(&mut self, name: &[&[u8]]) {
        self.token(BEGIN_NODE);
        for part in name {
            self.push(part);
        }
        self.push(&[0]);
        while !self.len.is_multiple_of(4) {
            self.push(&[0]);
        }
    }
    /// Offset of `name` in the strings block: an existing copy or a new one.
    fn string(&mut self, old: &[u8], name: &[u8]) -> u32 {
        let mut i = 0;
        while i + name.len() < old.len() {
            if &old[i..i + name.len()] == name && old[i + name.len()] == 0 {
                return i as u32;
            }
            i += 1;
        }
        let mut j = 0;
        while j + name.len() < self.strings_len {
            if &self.strings[j..j + name.len()] == name && self.strings[j + name.len()] == 0 {
                return (old.len() + j) as u32;
            }
            j += 1;
        }
        let at = self.strings_len;
        self.strings[at..at + name.len()].copy_from_slice(name);
        self.strings[at + name.len()] = 0;
        self.strings_len += name.len() + 1;
        (old.len() + at) as u32
    }
    fn prop(&mut self, old: &[u8], name: &[u8], value: &[u8]) {
        let nameoff = self.string(old, name);
        self.token(PROP);
        self.token(value.len() as u32);
        self.token(nameoff);
        self.push(value);
        while !self.len.is_multiple_of(4) {
            self.push(&[0]);
        }
    }
    fn cells(&mut self, old: &[u8], name: &[u8], v: u32) {
        self.prop(old, name, &v.to_be_bytes());
    }
    fn reg(&mut self, old: &[u8], cells: (u32, u32), base: u64, size: u64) {
        let mut v = [0u8; 16];
        let mut n = 0;
        for (value, count) in [(base, cells.0), (size, cells.1)] {
            if count == 2 {
                v[n..n + 8].copy_from_slice(&value.to_be_bytes());
                n += 8;
            } else {
                v[n..n + 4].copy_from_slice(&(value as u32).to_be_bytes());
                n += 4;
            }
        }
        self.prop(old, b"reg", &v[..n]);
    }
}

/// Open a gap of `len` bytes at `at` in the first `total` bytes (which
/// grow by `len`): the bytes from `at` move up, and so do the blocks that
/// start there or later, except the one at header field `growing`.
fn open_gap(b: &mut Blob, total: usize, at: usize, len: usize, growing: usize) {
    b.0.copy_within(at..total, at + len);
    for field in [
        Header::OffStruct.at(),
        Header::OffStrings.at(),
        Header::OffRsvmap.at(),
    ] {
        let off = b.u32(field).unwrap_or(0) as usize;
        if field != growing && off >= at {
            b.set_u32(field, (off + len) as u32);
        }
    }
}

/// Add a no-map reservation of `[base, base + size)` to the DTB at `dtb`,
/// which may grow up to `room` bytes in total. Returns the new total size.
///
/// # Safety
/// `dtb .. dtb + room` must be writable memory owned by the firmware for now.
pub unsafe fn reserve(dtb: usize, room: usize, base: u64, size: u64) -> Result<usize, PatchError> {
    let head = core::slice::from_raw_parts(dtb as *const u8, 40);
    let total = u32::from_be_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if total > room {
        return Err(PatchError::BadHeader);
    }
    let mut b = Blob(core::slice::from_raw_parts_mut(dtb as *mut u8, room));
    let l = rvpmu_dtb::layout(&b.0[..total]).map_err(|_| PatchError::BadHeader)?;
    let (st, strings, str_size) = (l.structs, l.strings, l.strings_size);
    let w = walk(&b, st, st + l.struct_size, strings).ok_or(PatchError::BadStructure)?;

    let old_strings = &b.0[strings..strings + str_size];
    let mut nb = Builder {
        node: [0; 256],
        len: 0,
        strings: [0; 64],
        strings_len: 0,
    };
    let mut unit = [0u8; 16];
    let unit = crate::console::hex_digits(base, &mut unit);
    let (insert_at, cells) = match w.resv_end {
        Some(end) => (end, w.resv_cells),
        None => {
            nb.begin(&[b"reserved-memory"]);
            nb.cells(old_strings, b"#address-cells", w.root_cells.0);
            nb.cells(old_strings, b"#size-cells", w.root_cells.1);
            nb.prop(old_strings, b"ranges", &[]);
            (w.root_end, w.root_cells)
        }
    };
    nb.begin(&[b"mmode_resv0@", unit]);
    nb.reg(old_strings, cells, base, size);
    nb.prop(old_strings, b"no-map", &[]);
    nb.token(END_NODE);
    if w.resv_end.is_none() {
        nb.token(END_NODE);
    }
    // The memory reservation block stays 8-byte aligned when it moves: a
    // NOP token pads the node, filler the strings' gap.
    if l.rsvmap > insert_at && !nb.len.is_multiple_of(8) {
        nb.token(NOP);
    }
    let strings_end = strings + str_size;
    let strings_gap = if l.rsvmap >= strings_end {
        (nb.strings_len + 7) & !7
    } else {
        align4(nb.strings_len)
    };

    let new_total = total + nb.len + strings_gap;
    if new_total > room {
        return Err(PatchError::NoRoom);
    }
    open_gap(&mut b, total, insert_at, nb.len, Header::OffStruct.at());
    b.0[insert_at..insert_at + nb.len].copy_from_slice(&nb.node[..nb.len]);
    b.set_u32(Header::SizeStruct.at(), (l.struct_size + nb.len) as u32);
    let strings = b.u32(Header::OffStrings.at()).unwrap_or(0) as usize;
    let strings_end = strings + str_size;
    open_gap(
        &mut b,
        total + nb.len,
        strings_end,
        strings_gap,
        Header::OffStrings.at(),
    );
    b.0[strings_end..strings_end + nb.strings_len].copy_from_slice(&nb.strings[..nb.strings_len]);
    b.set_u32(Header::SizeStrings.at(), (str_size + nb.strings_len) as u32);
    b.set_u32(Header::TotalSize.at(), new_total as u32);
    Ok(new_total)
}
