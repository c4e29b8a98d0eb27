#![doc = include_str!("../README.md")]
//!
//! ## What is checked, and why
//!
//! [`open`] checks the whole blob against the Devicetree Specification
//! v0.4, chapter 5 ("Flattened Devicetree (DTB) Format"): the header
//! (version 17, readable by a version-17 reader), the memory reservation
//! block, the structure block's token stream and every property name in the
//! strings block. Blocks may come in any order with gaps between them; they
//! may not overlap the header or each other. A blob that breaks a rule is
//! refused with an [`Error`] that says what is wrong and at which byte.
//! Then it removes every `FDT_NOP` token (and anything after `FDT_END`)
//! from the structure block in place, moving the tokens after them down and
//! shrinking `size_dt_struct`; the freed bytes become a gap the header no
//! longer covers. The tree is the same tree: the specification says readers
//! ignore NOP tokens, and libfdt's `fdt_nop_property` / `fdt_nop_node`
//! (boot loaders' fixups) leave them wherever a property or node was.
//!
//! Why a wrapper in front of `fdt` 0.1.5 rather than another crate. The
//! `fdt` 0.1.5 crate skips NOP tokens only in some places (it misses a
//! whole subtree after a NOPed property, and panics on a NOPed node), and it
//! panics on malformed blobs (unchecked slicing, `expect` on names).
//! Its fork `flat_device_tree` 3.1.1 skips NOPs the same way and also loses
//! nodes on such trees. `fdt` 0.2.0-alpha3 skips NOPs in one place and read
//! every NOP layout tried here the same as the tree without them, but it is
//! an unreleased API that every call site would be rewritten to, and its
//! root parsing still underflows on a structure block shorter than one
//! token (a debug-build panic), so it needs a header check in front anyway.
//! `fdt-parser` needs an allocator, which the firmware does not have, and
//! `fdt-rs` wants an aligned buffer behind an `unsafe` constructor and a
//! rewrite of every call site to its fallible iterators. One checked pass
//! here makes every `fdt` 0.1.5 lookup the call sites already use safe: it
//! guarantees exactly what that crate assumes (names NUL-terminated UTF-8
//! inside their blocks, values inside the structure block, properties before
//! child nodes, balanced nodes, `#address-cells` / `#size-cells` of 4 bytes,
//! at most [`MAX_DEPTH`] levels) and no NOP tokens. The `dtb` fuzz target
//! (`fuzz/`) holds it to that: arbitrary blobs through [`open`] and the
//! firmware's and engine's lookups, never a panic.
//!
//! The rewrite needs the blob writable. The firmware patches the DTB in RAM
//! anyway, and the stages after it find it already without NOP tokens, so
//! for them [`open`] only reads.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `format` | |

#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

use core::fmt;

/// The most nested levels of nodes (the root is level 1): `fdt` 0.1.5's
/// node walk keeps 64 parent slots, the first unused.
pub const MAX_DEPTH: usize = 63;

/// The flattened devicetree format's numbers (Devicetree Specification
/// v0.4, chapter 5), for every reader and writer of blobs in the project.
pub mod format {
    /// `magic`, the header's first word.
    pub const MAGIC: u32 = 0xd00d_feed;
    /// The version 17 header: ten big-endian 32-bit words.
    pub const HEADER_LEN: usize = 40;
    /// The format version read and written here (`size_dt_struct`
    /// appeared in version 17).
    pub const VERSION: u32 = 17;
    /// The oldest version a version-17 blob stays readable by.
    pub const LAST_COMP_VERSION: u32 = 16;
    /// One memory reservation entry (address, size: two 64-bit words).
    pub const RSVMAP_ENTRY_LEN: usize = 16;

    /// Structure block tokens.
    pub const BEGIN_NODE: u32 = 1;
    /// End of a node.
    pub const END_NODE: u32 = 2;
    /// A property: length, name offset, value.
    pub const PROP: u32 = 3;
    /// Nothing: readers skip it (libfdt's `fdt_nop_property` leaves them).
    pub const NOP: u32 = 4;
    /// End of the structure block.
    pub const END: u32 = 9;

    /// The header's fields in their order, big-endian 32-bit words, named
    /// as the specification names them (`magic`, `totalsize`,
    /// `off_dt_struct`, `off_dt_strings`, `off_mem_rsvmap`, `version`,
    /// `last_comp_version`, `boot_cpuid_phys`, `size_dt_strings`,
    /// `size_dt_struct`).
    #[allow(missing_docs)] // each variant is the field the enum doc names
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Header {
        Magic,
        TotalSize,
        OffStruct,
        OffStrings,
        OffRsvmap,
        Version,
        LastCompVersion,
        BootCpuid,
        SizeStrings,
        SizeStruct,
    }

    impl Header {
        /// The field's byte offset in the blob.
        pub const fn at(self) -> usize {
            4 * self as usize
        }
    }
}
use format::*;

/// The blocks of a DTB, for errors and layout checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Block {
    /// The 40-byte header.
    Header,
    /// The memory reservation block (16-byte entries up to an all-zero one).
    MemRsvmap,
    /// The structure block (the token stream).
    Struct,
    /// The strings block (property names).
    Strings,
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Block::Header => "header",
            Block::MemRsvmap => "memory reservation block",
            Block::Struct => "structure block",
            Block::Strings => "strings block",
        })
    }
}

/// What is wrong with a blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A null pointer instead of a blob.
    Null,
    /// Fewer bytes than the header or `totalsize` needs.
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes there.
        have: usize,
    },
    /// The magic word is not 0xd00dfeed.
    BadMagic(u32),
    /// A version this reader cannot read.
    Version {
        /// `version`.
        version: u32,
        /// `last_comp_version`.
        last_comp: u32,
    },
    /// A block reaches past `totalsize` (or past 4 GiB).
    OutsideBlob(Block),
    /// A block starts inside the header.
    InHeader(Block),
    /// A block's offset or size breaks its alignment rule.
    Misaligned(Block),
    /// Two blocks share bytes.
    Overlap(Block, Block),
    /// The memory reservation block has no all-zero entry before `totalsize`.
    RsvmapUnterminated,
    /// The structure block ends inside a token or with nodes open.
    StructEndsEarly,
    /// A token value the format does not have.
    UnknownToken(u32),
    /// A node name without its NUL inside the structure block.
    NameUnterminated,
    /// A node name or property name that is not UTF-8.
    NotUtf8,
    /// A property value longer than the rest of the structure block.
    ValueTooLong(u32),
    /// A property name offset outside the strings block.
    NameOffset(u32),
    /// A property name without its NUL inside the strings block.
    PropNameUnterminated,
    /// A property outside every node.
    PropOutsideNode,
    /// A property after a child node of the same node.
    PropAfterChild,
    /// `#address-cells` or `#size-cells` whose value is not one `<u32>`.
    CellsNotU32(u32),
    /// Nodes nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// `FDT_END_NODE` with no node open.
    UnmatchedEndNode,
    /// A second top-level node after the root.
    SecondRoot,
    /// `FDT_END` while nodes are open.
    EndInsideNode,
    /// No root node before `FDT_END`.
    NoRoot,
    /// The root node has a name (it has none: its path is `/`).
    RootName,
}

/// A blob that is not a readable device tree: what and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    /// What is wrong.
    pub problem: Problem,
    /// The byte offset in the blob where it is.
    pub offset: usize,
}

impl Problem {
    /// What is wrong, without the numbers (for consoles without
    /// `core::fmt`; [`Display`](fmt::Display) adds them).
    pub fn what(&self) -> &'static str {
        match self {
            Problem::Null => "null pointer instead of a device tree",
            Problem::Truncated { .. } => "truncated",
            Problem::BadMagic(_) => "magic is not 0xd00dfeed",
            Problem::Version { .. } => "not a version-17 device tree",
            Problem::OutsideBlob(_) => "a block reaches past totalsize",
            Problem::InHeader(_) => "a block starts inside the header",
            Problem::Misaligned(_) => "a block breaks its alignment rule",
            Problem::Overlap(..) => "two blocks overlap",
            Problem::RsvmapUnterminated => "the memory reservation block has no all-zero entry",
            Problem::StructEndsEarly => "the structure block ends before FDT_END closes it",
            Problem::UnknownToken(_) => "unknown token",
            Problem::NameUnterminated => "node name without NUL inside the structure block",
            Problem::NotUtf8 => "name is not UTF-8",
            Problem::ValueTooLong(_) => "property value runs past the structure block",
            Problem::NameOffset(_) => "property name offset outside the strings block",
            Problem::PropNameUnterminated => "property name without NUL inside the strings block",
            Problem::PropOutsideNode => "property outside every node",
            Problem::PropAfterChild => "property after a child node",
            Problem::CellsNotU32(_) => "#address-cells / #size-cells is not one <u32>",
            Problem::TooDeep => "nodes nested too deep",
            Problem::UnmatchedEndNode => "FDT_END_NODE with no node open",
            Problem::SecondRoot => "a second root node",
            Problem::EndInsideNode => "FDT_END with nodes still open",
            Problem::NoRoot => "no root node",
            Problem::RootName => "the root node has a name",
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what())?;
        match *self {
            Problem::Truncated { need, have } => write!(f, ": {need} bytes needed, {have} there"),
            Problem::BadMagic(m) => write!(f, " ({m:#010x})"),
            Problem::Version { version, last_comp } => write!(
                f,
                " (version {version}, compatible back to {last_comp}; this reader reads {VERSION})"
            ),
            Problem::OutsideBlob(b) | Problem::InHeader(b) | Problem::Misaligned(b) => {
                write!(f, ": the {b}")
            }
            Problem::Overlap(a, b) => write!(f, ": the {a} and the {b}"),
            Problem::UnknownToken(t) => write!(f, " {t:#x}"),
            Problem::ValueTooLong(n) => write!(f, " ({n} bytes)"),
            Problem::NameOffset(o) => write!(f, " ({o})"),
            Problem::CellsNotU32(n) => write!(f, " ({n} bytes)"),
            Problem::TooDeep => write!(f, " (more than {MAX_DEPTH} levels)"),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device tree: {} (byte {:#x})", self.problem, self.offset)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}

fn fail<T>(problem: Problem, offset: usize) -> Result<T, Error> {
    Err(Error { problem, offset })
}

fn be32(b: &[u8], off: usize) -> Option<u32> {
    let w = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// A byte range `[start, end)` of the blob.
#[derive(Clone, Copy)]
struct Span {
    block: Block,
    start: usize,
    end: usize,
}

/// Where the blocks are, from a checked header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `totalsize`.
    pub total: usize,
    /// `off_dt_struct`.
    pub structs: usize,
    /// `size_dt_struct`.
    pub struct_size: usize,
    /// `off_dt_strings`.
    pub strings: usize,
    /// `size_dt_strings`.
    pub strings_size: usize,
    /// `off_mem_rsvmap`.
    pub rsvmap: usize,
    /// Length of the memory reservation block, its all-zero entry included.
    pub rsvmap_size: usize,
}

impl Layout {
    fn spans(&self) -> [Span; 4] {
        [
            Span {
                block: Block::Header,
                start: 0,
                end: HEADER_LEN,
            },
            Span {
                block: Block::MemRsvmap,
                start: self.rsvmap,
                end: self.rsvmap + self.rsvmap_size,
            },
            Span {
                block: Block::Struct,
                start: self.structs,
                end: self.structs + self.struct_size,
            },
            Span {
                block: Block::Strings,
                start: self.strings,
                end: self.strings + self.strings_size,
            },
        ]
    }
}

/// Check the header and where the blocks lie (not their contents).
pub fn layout(blob: &[u8]) -> Result<Layout, Error> {
    let field = |off| be32(blob, off).map(|v| v as usize);
    if blob.len() < HEADER_LEN {
        return fail(
            Problem::Truncated {
                need: HEADER_LEN,
                have: blob.len(),
            },
            blob.len(),
        );
    }
    let h = |off| field(off).unwrap_or(0);
    let magic = h(0) as u32;
    if magic != MAGIC {
        return fail(Problem::BadMagic(magic), 0);
    }
    let (version, last_comp) = (
        h(Header::Version.at()) as u32,
        h(Header::LastCompVersion.at()) as u32,
    );
    if version < VERSION || last_comp > VERSION {
        return fail(
            Problem::Version { version, last_comp },
            Header::Version.at(),
        );
    }
    let total = h(Header::TotalSize.at());
    if total < HEADER_LEN || total > blob.len() {
        let need = total.max(HEADER_LEN);
        let have = blob.len();
        return fail(Problem::Truncated { need, have }, Header::TotalSize.at());
    }
    let mut l = Layout {
        total,
        structs: h(Header::OffStruct.at()),
        struct_size: h(Header::SizeStruct.at()),
        strings: h(Header::OffStrings.at()),
        strings_size: h(Header::SizeStrings.at()),
        rsvmap: h(Header::OffRsvmap.at()),
        rsvmap_size: 0,
    };
    // The reservation entries: 16 bytes each, 8-byte aligned, up to and
    // including an all-zero one.
    if !l.rsvmap.is_multiple_of(8) {
        return fail(
            Problem::Misaligned(Block::MemRsvmap),
            Header::OffRsvmap.at(),
        );
    }
    if l.rsvmap < HEADER_LEN {
        return fail(Problem::InHeader(Block::MemRsvmap), Header::OffRsvmap.at());
    }
    if l.rsvmap >= total {
        return fail(
            Problem::OutsideBlob(Block::MemRsvmap),
            Header::OffRsvmap.at(),
        );
    }
    loop {
        let at = l.rsvmap + l.rsvmap_size;
        if at + RSVMAP_ENTRY_LEN > total {
            return fail(Problem::RsvmapUnterminated, l.rsvmap);
        }
        l.rsvmap_size += RSVMAP_ENTRY_LEN;
        if blob[at..at + RSVMAP_ENTRY_LEN].iter().all(|&b| b == 0) {
            break;
        }
    }
    for (block, off, size, field_at) in [
        (
            Block::Struct,
            l.structs,
            l.struct_size,
            Header::OffStruct.at(),
        ),
        (
            Block::Strings,
            l.strings,
            l.strings_size,
            Header::OffStrings.at(),
        ),
    ] {
        if block == Block::Struct && !(off.is_multiple_of(4) && size.is_multiple_of(4)) {
            return fail(Problem::Misaligned(block), field_at);
        }
        if off < HEADER_LEN {
            return fail(Problem::InHeader(block), field_at);
        }
        if off.checked_add(size).is_none_or(|end| end > total) {
            return fail(Problem::OutsideBlob(block), field_at);
        }
    }
    let spans = l.spans();
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if a.start < b.end && b.start < a.end && a.start < a.end && b.start < b.end {
                return fail(Problem::Overlap(a.block, b.block), a.start.max(b.start));
            }
        }
    }
    Ok(l)
}

/// The property name at `nameoff` in the strings block (which starts at
/// byte `strings_at`); `field_at`: where the offset is written.
fn prop_name(
    strings: &[u8],
    nameoff: u32,
    strings_at: usize,
    field_at: usize,
) -> Result<&str, Error> {
    let Some(rest) = strings.get(nameoff as usize..).filter(|r| !r.is_empty()) else {
        return fail(Problem::NameOffset(nameoff), field_at);
    };
    let Some(n) = rest.iter().position(|&b| b == 0) else {
        return fail(Problem::PropNameUnterminated, strings_at + nameoff as usize);
    };
    core::str::from_utf8(&rest[..n]).or(fail(Problem::NotUtf8, strings_at + nameoff as usize))
}

/// The structure block's token stream, checked: `(NOP bytes, offset just
/// past FDT_END)`, both relative to the block.
fn check_structure(blob: &[u8], l: &Layout) -> Result<(usize, usize), Error> {
    let st = &blob[l.structs..l.structs + l.struct_size];
    let strings = &blob[l.strings..l.strings + l.strings_size];
    let at = |off: usize| l.structs + off;
    let mut off = 0;
    let mut depth = 0usize;
    // Per open level: whether a child node has started (no more properties).
    let mut had_child = [false; MAX_DEPTH + 1];
    let mut root_done = false;
    let mut nops = 0;
    // Property names checked already (a tree names the same few many
    // times): direct-mapped by name offset, `(offset, a cells name)`.
    let mut names: [Option<(u32, bool)>; 32] = [None; 32];
    loop {
        let Some(tok) = be32(st, off) else {
            return fail(Problem::StructEndsEarly, at(off));
        };
        let tok_at = off;
        off += 4;
        match tok {
            NOP => nops += 4,
            BEGIN_NODE => {
                if root_done {
                    return fail(Problem::SecondRoot, at(tok_at));
                }
                if depth == MAX_DEPTH {
                    return fail(Problem::TooDeep, at(tok_at));
                }
                let rest = &st[off..];
                let Some(n) = rest.iter().position(|&b| b == 0) else {
                    return fail(Problem::NameUnterminated, at(off));
                };
                if core::str::from_utf8(&rest[..n]).is_err() {
                    return fail(Problem::NotUtf8, at(off));
                }
                if depth == 0 && n != 0 {
                    return fail(Problem::RootName, at(off));
                }
                had_child[depth] = true;
                depth += 1;
                had_child[depth] = false;
                off = align4(off + n + 1);
            }
            END_NODE => {
                if depth == 0 {
                    return fail(Problem::UnmatchedEndNode, at(tok_at));
                }
                depth -= 1;
                root_done = depth == 0;
            }
            PROP => {
                if depth == 0 {
                    return fail(Problem::PropOutsideNode, at(tok_at));
                }
                if had_child[depth] {
                    return fail(Problem::PropAfterChild, at(tok_at));
                }
                let (Some(len), Some(nameoff)) = (be32(st, off), be32(st, off + 4)) else {
                    return fail(Problem::StructEndsEarly, at(off));
                };
                let value = off + 8;
                if len as usize > st.len() - value.min(st.len()) {
                    return fail(Problem::ValueTooLong(len), at(off));
                }
                let slot = &mut names[nameoff as usize % 32];
                let cells = match *slot {
                    Some((checked, cells)) if checked == nameoff => cells,
                    _ => {
                        let name = prop_name(strings, nameoff, l.strings, at(off + 4))?;
                        let cells = matches!(name, "#address-cells" | "#size-cells");
                        *slot = Some((nameoff, cells));
                        cells
                    }
                };
                if cells && len != 4 {
                    return fail(Problem::CellsNotU32(len), at(tok_at));
                }
                off = align4(value + len as usize);
            }
            END => {
                if depth != 0 {
                    return fail(Problem::EndInsideNode, at(tok_at));
                }
                if !root_done {
                    return fail(Problem::NoRoot, at(tok_at));
                }
                return Ok((nops, off));
            }
            t => return fail(Problem::UnknownToken(t), at(tok_at)),
        }
    }
}

/// Remove the NOP tokens from the (checked) structure block in place and
/// cut it after FDT_END; returns its new size.
fn compact(blob: &mut [u8], l: &Layout, end: usize) -> usize {
    let (base, mut read, mut write) = (l.structs, 0, 0);
    while read < end {
        let tok = be32(blob, base + read).unwrap_or(END);
        let len = match tok {
            BEGIN_NODE => {
                let name = base + read + 4;
                let n = blob[name..].iter().position(|&b| b == 0).unwrap_or(0);
                4 + align4(n + 1)
            }
            PROP => 12 + align4(be32(blob, base + read + 4).unwrap_or(0) as usize),
            _ => 4,
        };
        if tok != NOP {
            if read != write {
                blob.copy_within(base + read..base + read + len, base + write);
            }
            write += len;
        }
        read += len;
    }
    blob[Header::SizeStruct.at()..Header::SizeStruct.at() + 4]
        .copy_from_slice(&(write as u32).to_be_bytes());
    write
}

/// Check `blob` and remove its NOP tokens in place (see the module doc):
/// how many bytes of the structure block went. Writes nothing when there
/// is nothing to remove or the blob is refused.
pub fn normalise(blob: &mut [u8]) -> Result<usize, Error> {
    let l = layout(blob)?;
    let (nops, end) = check_structure(blob, &l)?;
    if nops == 0 && end == l.struct_size {
        return Ok(0);
    }
    Ok(l.struct_size - compact(blob, &l, end))
}

/// Check `blob`, remove its NOP tokens in place, and open it with `fdt`.
pub fn open(blob: &mut [u8]) -> Result<fdt::Fdt<'_>, Error> {
    normalise(blob)?;
    let blob: &[u8] = blob;
    // `layout` has checked what `Fdt::new` checks (magic, totalsize).
    fdt::Fdt::new(blob).map_err(|_| Error {
        problem: Problem::BadMagic(0),
        offset: 0,
    })
}

/// [`open`] for the blob at `ptr`, `totalsize` bytes long by its header.
///
/// # Safety
/// `ptr` is null or points at a device tree header whose `totalsize` bytes
/// are readable and writable, and nothing else accesses them while the
/// returned tree is alive.
pub unsafe fn open_at<'a>(ptr: *mut u8) -> Result<fdt::Fdt<'a>, Error> {
    if ptr.is_null() {
        return fail(Problem::Null, 0);
    }
    // SAFETY: the caller promises a header there.
    let head = unsafe { core::slice::from_raw_parts(ptr as *const u8, HEADER_LEN) };
    if be32(head, 0) != Some(MAGIC) {
        return fail(Problem::BadMagic(be32(head, 0).unwrap_or(0)), 0);
    }
    let total = be32(head, Header::TotalSize.at()).unwrap_or(0) as usize;
    if total < HEADER_LEN {
        let need = HEADER_LEN;
        return fail(
            Problem::Truncated { need, have: total },
            Header::TotalSize.at(),
        );
    }
    // SAFETY: `totalsize` bytes at `ptr` are the caller's blob, exclusively
    // ours for 'a.
    let blob = unsafe { core::slice::from_raw_parts_mut(ptr, total) };
    open(blob)
}
