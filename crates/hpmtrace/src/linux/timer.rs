//! The per-thread sampling timer: a POSIX timer whose signal goes to one
//! thread, named by its kernel thread id.

use std::io;

/// The kernel thread id of the caller.
pub fn gettid() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// A POSIX timer delivering `signo` to one thread every `interval_us`.
pub struct ThreadTimer {
    id: libc::timer_t,
}

// SAFETY: timer_t is an opaque kernel id, valid from any thread.
unsafe impl Send for ThreadTimer {}

impl ThreadTimer {
    /// Start a CLOCK_MONOTONIC timer for thread `tid`.
    pub fn start(tid: i32, signo: i32, interval_us: u64) -> io::Result<ThreadTimer> {
        // SAFETY: zeroed sigevent is a valid starting point.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signo;
        sev.sigev_notify_thread_id = tid;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut id) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let iv = libc::timespec {
            tv_sec: (interval_us / 1_000_000) as _,
            tv_nsec: ((interval_us % 1_000_000) * 1000) as _,
        };
        let spec = libc::itimerspec {
            it_interval: iv,
            it_value: iv,
        };
        // SAFETY: id was just created.
        if unsafe { libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) } != 0 {
            let e = io::Error::last_os_error();
            // SAFETY: id was created above and is deleted once, here.
            unsafe { libc::timer_delete(id) };
            return Err(e);
        }
        Ok(ThreadTimer { id })
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: deleting our own timer.
        unsafe { libc::timer_delete(self.id) };
    }
}
