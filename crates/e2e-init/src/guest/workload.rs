//! The fixed workloads. Their instruction counts come from the instructions
//! written here, not from measurement: `alu_loop(n)` runs exactly 2 user
//! instructions per iteration (`addi` + `bnez`; xtask re-derives this from
//! the disassembly of `rvpmu_alu_loop` in the built /init), `page_walk`
//! exactly 5 per page (`ld`, `sd`, `add`, `addi`, `bnez`), `hot_a` and
//! `hot_b` exactly 4 per iteration each (`addi`, `xor`, `addi`, `bnez`).

use std::arch::asm;

/// Instructions per iteration of [`rvpmu_alu_loop`].
pub const ALU_INSNS_PER_ITER: u64 = 2;
/// Instructions per page of [`rvpmu_page_walk`].
pub const WALK_INSNS_PER_PAGE: u64 = 5;

/// Count `n` down to zero: 2 instructions per iteration, no memory access.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rvpmu_alu_loop(n: u64) {
    if n == 0 {
        return;
    }
    // SAFETY: register-only loop.
    unsafe {
        asm!(
            "2:",
            "addi {n}, {n}, -1",
            "bnez {n}, 2b",
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
}

/// The "hot" function of `rvpmu-work hot`: 4 register-only instructions
/// per iteration. Its twin [`rvpmu_hot_b`] has the same shape with another
/// constant, so the two cannot be merged into one symbol (LLVM's
/// MergeFunctions would make identical bodies aliases of one address, and
/// perf could not tell them apart).
#[no_mangle]
#[inline(never)]
pub extern "C" fn rvpmu_hot_a(n: u64) {
    hot_loop::<1>(n)
}

/// The "cold" twin of [`rvpmu_hot_a`]: the same 4 instructions per
/// iteration.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rvpmu_hot_b(n: u64) {
    hot_loop::<3>(n)
}

/// The body of the hot/cold twins, `STEP` telling them apart.
#[inline(always)]
fn hot_loop<const STEP: i64>(n: u64) {
    // SAFETY: register-only loop. The zero test is in the assembly so
    // that n = 0 and n > 0 run the same instructions outside the loop.
    unsafe {
        asm!(
            "li {t}, 0",
            "li {u}, 0",
            "beqz {n}, 3f",
            "2:",
            "addi {t}, {t}, {step}",
            "xor {u}, {u}, {t}",
            "addi {n}, {n}, -1",
            "bnez {n}, 2b",
            "3:",
            n = inout(reg) n => _,
            t = out(reg) _,
            u = out(reg) _,
            step = const STEP,
            options(nomem, nostack),
        );
    }
}

/// Load and store one doubleword in each of `pages` consecutive 4 KiB pages
/// starting at `buf` (which must hold that many pages): 5 instructions per
/// page, one data-TLB lookup for a load and one for a store.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rvpmu_page_walk(buf: *mut u8, pages: u64) {
    if pages == 0 {
        return;
    }
    // SAFETY: the caller guarantees `pages` pages at `buf`; each iteration
    // reads and rewrites the same doubleword (contents unchanged).
    unsafe {
        asm!(
            "2:",
            "ld {t}, 0({p})",
            "sd {t}, 0({p})",
            "add {p}, {p}, {stride}",
            "addi {n}, {n}, -1",
            "bnez {n}, 2b",
            p = inout(reg) buf => _,
            n = inout(reg) pages => _,
            t = out(reg) _,
            stride = in(reg) 4096u64,
            options(nostack),
        );
    }
}

/// A page-aligned buffer, touched once so page faults stay out of
/// measurements.
pub struct Pages {
    ptr: *mut u8,
    pub pages: u64,
}

impl Pages {
    pub fn new(pages: u64) -> std::io::Result<Pages> {
        let len = (pages * 4096) as usize;
        // SAFETY: anonymous private mapping, checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let p = Pages {
            ptr: ptr.cast(),
            pages,
        };
        rvpmu_page_walk(p.ptr, pages);
        Ok(p)
    }

    pub fn walk(&self) {
        rvpmu_page_walk(self.ptr, self.pages);
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(self.ptr.cast(), (self.pages * 4096) as usize) };
    }
}
