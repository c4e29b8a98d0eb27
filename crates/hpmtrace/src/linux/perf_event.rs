//! The `perf_event_open` system call for one counter of the calling
//! thread, and the `read_format` bits the group reads use.

use super::events::PERF_TYPE_SOFTWARE;
use std::io;

/// `read_format` bits.
pub const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
pub const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
pub(super) const PERF_FORMAT_GROUP: u64 = 1 << 3;

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `struct perf_event_attr` (PERF_ATTR_SIZE_VER8, 136 bytes), written out
/// because its flag word is a C bitfield: the one layout of it in this
/// workspace (the guest's /init uses it too). Zeroed fields are what the
/// kernel takes as "not asked for".
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub struct PerfEventAttr {
    pub ty: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The bitfield word: the `FLAG_*` bits.
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
    pub aux_sample_size: u32,
    pub reserved_3: u32,
    pub sig_data: u64,
    pub config3: u64,
}
const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 136);

impl PerfEventAttr {
    /// An attribute of `ty`/`config` with its size filled in.
    pub fn new(ty: u32, config: u64) -> PerfEventAttr {
        PerfEventAttr {
            ty,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config,
            ..Default::default()
        }
    }
}

/// Bits of [`PerfEventAttr::flags`] (include/uapi/linux/perf_event.h).
pub const FLAG_DISABLED: u64 = 1 << 0;
pub const FLAG_PINNED: u64 = 1 << 2;
pub const FLAG_EXCLUDE_USER: u64 = 1 << 4;
pub const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
pub const FLAG_EXCLUDE_HV: u64 = 1 << 6;
pub const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;

/// Open one counter (`ty`, `config`) for the calling thread on any CPU,
/// in the group of `group_fd` (-1: a new group), close-on-exec.
pub(super) fn perf_event_open(
    ty: u32,
    config: u64,
    group_fd: i32,
    read_format: u64,
) -> io::Result<i32> {
    let attr = PerfEventAttr {
        read_format,
        // Software events fire in the kernel on the thread's behalf (page
        // faults, switches): excluding the kernel would hide them all.
        flags: if ty == PERF_TYPE_SOFTWARE {
            0
        } else {
            FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV
        },
        ..PerfEventAttr::new(ty, config)
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
