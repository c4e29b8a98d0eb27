//! The `perf_event_open` system call for one counter of the calling
//! thread, and the `read_format` bits the group reads use.

use super::events::PERF_TYPE_SOFTWARE;
use std::io;

/// `read_format` bits.
pub(super) const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
pub(super) const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
pub(super) const PERF_FORMAT_GROUP: u64 = 1 << 3;

const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `struct perf_event_attr`, first 64 bytes (PERF_ATTR_SIZE_VER0).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    ty: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// Open one counter (`ty`, `config`) for the calling thread on any CPU,
/// in the group of `group_fd` (-1: a new group), close-on-exec.
pub(super) fn perf_event_open(
    ty: u32,
    config: u64,
    group_fd: i32,
    read_format: u64,
) -> io::Result<i32> {
    let attr = PerfEventAttr {
        ty,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        read_format,
        // Software events fire in the kernel on the thread's behalf (page
        // faults, switches): excluding the kernel would hide them all.
        flags: if ty == PERF_TYPE_SOFTWARE {
            0
        } else {
            FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV
        },
        ..Default::default()
    };
    // SAFETY: attr is a valid, initialised perf_event_attr of the size it
    // declares; pid 0 / cpu -1 = the calling thread on any CPU.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0 as libc::c_long,
            -1 as libc::c_long,
            group_fd as libc::c_long,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as i32)
    }
}
