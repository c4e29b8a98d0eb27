//! The interrupted program counter, from a signal handler's ucontext.

/// The interrupted program counter in a signal handler's ucontext.
///
/// # Safety
/// `uc` must be the third argument of an `SA_SIGINFO` handler.
pub unsafe fn interrupted_pc(uc: *const libc::c_void) -> u64 {
    let uc = uc as *const libc::ucontext_t;
    #[cfg(target_arch = "x86_64")]
    {
        (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as u64
    }
    #[cfg(target_arch = "riscv64")]
    {
        (*uc).uc_mcontext.__gregs[0]
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "riscv64")))]
    {
        let _ = uc;
        0
    }
}
