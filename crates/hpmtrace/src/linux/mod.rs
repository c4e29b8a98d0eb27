//! Linux counter source (`perf_event_open`), trace clock and per-thread
//! sampling timer. One concept per module: `events` maps SBI events
//! ([`Event`](crate::format::Event)) to perf events, `perf_event` is the
//! system call, `group` a thread's counters as one group (read with one
//! `read()`, or with none when every member can be read from user space),
//! `mmap_page` that system-call-free read through the perf mmap page,
//! `memory` the buffers' huge pages, `clock` the trace clock, `timer` the
//! per-thread sampling timer and `ucontext` the interrupted PC in its
//! signal handler. Everything is re-exported here.

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
