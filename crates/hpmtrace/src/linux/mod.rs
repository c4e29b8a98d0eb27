//! Linux counter source (`perf_event_open`), trace clock and per-thread
//! sampling timer.
//!
//! Events are named in the SBI encoding
//! ([`Event`](crate::format::Event)) and mapped to perf attributes:
//! general events to `PERF_TYPE_HARDWARE`, cache events to
//! `PERF_TYPE_HW_CACHE` (the SBI and perf cache/op/result ids coincide),
//! raw events to `PERF_TYPE_RAW` with `event_data` as config (what the
//! RISC-V SBI PMU driver expects), Linux software events to
//! `PERF_TYPE_SOFTWARE`.
//!
//! All counters of a thread form one group read with one `read()`
//! (`PERF_FORMAT_GROUP`). When every counter of the group can be read from
//! user space, that path is used instead and no system call is made: a
//! hardware counter the kernel lets user space read (`cap_user_rdpmc` in
//! the perf mmap page: x86 `rdpmc`, RISC-V counter CSRs with the sysctl
//! `kernel.perf_user_access`), or a software event whose perf page is exact
//! while the thread runs ([`UserRead::PageCount`]).
//!
//! One concept per module: `events` maps SBI events to perf events,
//! `perf_event` is the system call, `group` a thread's counter group,
//! `mmap_page` the system-call-free read through the perf mmap page,
//! `memory` the buffers' huge pages, `clock` the trace clock, `timer` the per-thread sampling timer and
//! `ucontext` the interrupted PC in its signal handler. Everything is
//! re-exported here.

mod clock;
mod events;
mod group;
mod memory;
mod mmap_page;
pub mod perf_event;
mod timer;
mod ucontext;

pub use clock::TraceClock;
pub use events::{perf_attr_of, software_stand_in, sw};
pub use group::{check_group_runs, OpenError, PerfGroup};
pub use memory::{advise_huge_pages, zeroed_buffer};
pub use mmap_page::{user_read_method, UserRead};
pub use timer::{gettid, ThreadTimer};
pub use ucontext::interrupted_pc;
