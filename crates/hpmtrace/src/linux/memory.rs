//! The collector's large buffers (staging chunks, trace buffers) on
//! transparent huge pages where the kernel gives them.
//!
//! The hooks write these buffers at memory speed, so how the kernel maps
//! them shows end to end: on 4 KiB pages every page is its own TLB entry
//! and, in a virtual machine, its own entry in the host's page tables,
//! which some hosts fill or shadow slowly. With the system's THP setting
//! at `madvise` (Debian's default) huge pages come only when asked for.

/// Ask for transparent huge pages for the 2 MiB-aligned part of `buf`,
/// before its pages are first touched (pages already mapped stay as they
/// are until the kernel collapses them). Only advice: the contents do not
/// change, and a kernel without THP ignores it.
pub fn advise_huge_pages<T>(buf: &[T]) {
    const HUGE: usize = 2 << 20;
    let start = buf.as_ptr() as usize;
    let end = start + std::mem::size_of_val(buf);
    let (from, to) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
    if from < to {
        // SAFETY: advice on whole pages inside `buf`, which this process
        // owns; MADV_HUGEPAGE changes how they are mapped, not what they
        // hold.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) };
    }
}

/// `bytes` zeroed bytes, on huge pages where the kernel gives them; with
/// `prefault` every page is written once now, so that filling the buffer
/// never takes a page fault in the traced code.
pub fn zeroed_buffer(bytes: usize, prefault: bool) -> Box<[u8]> {
    // Zeroed memory this large comes straight from mmap, untouched, so the
    // advice below decides how it is first mapped.
    let mut buf = vec![0u8; bytes].into_boxed_slice();
    advise_huge_pages(&buf);
    if prefault {
        for page in buf.chunks_mut(4096) {
            // Volatile so that the store of a value already there is not
            // optimised away.
            // SAFETY: a byte of our own buffer.
            unsafe { std::ptr::write_volatile(&mut page[0], 0) };
        }
    }
    buf
}
