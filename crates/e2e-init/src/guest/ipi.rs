//! IPIs in a known number, from the calling CPU to another one, on Linux
//! 6.12 and 7.2 alike.
//!
//! # Why not membarrier
//!
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` interrupts only the CPUs
//! whose *current* task runs the caller's mm at the instant of the call
//! (kernel/sched/membarrier.c, membarrier_private_expedited(), the same in
//! 6.12 and 7.2):
//!
//! ```c
//! for_each_online_cpu(cpu) {
//!         p = rcu_dereference(cpu_rq(cpu)->curr);
//!         if (p && p->mm == mm)
//!                 __cpumask_set_cpu(cpu, tmpmask);
//! }
//! ...
//! smp_call_function_many(tmpmask, ipi_func, NULL, true);
//! ```
//!
//! A thread spinning in user mode on the target CPU is therefore not
//! enough: when a kernel thread runs there at that instant, the call sends
//! nothing and returns at once, without waiting for the target. Under
//! QEMU's icount (one vCPU runs at a time, round robin) the target vCPU
//! then does not run again before the sender's time slice ends, so every
//! following call of the slice sees the same kernel thread and misses too.
//! On Linux 7.2 this happens often enough to make whole runs of calls send
//! nothing (e2e/NOTES.md, "Findings", has the measurements); on 6.12 it
//! is rare. The selection is the same code in both.
//!
//! # What is used instead
//!
//! A read() of a perf event bound to the target CPU. perf_event_read()
//! (kernel/events/core.c, identical in 6.12 and 7.2) updates an active
//! event on the CPU it runs on, synchronously:
//!
//! ```c
//! if (state == PERF_EVENT_STATE_ACTIVE) {
//!         event_cpu = READ_ONCE(event->oncpu);
//!         ...
//!         event_cpu = __perf_event_read_cpu(event, event_cpu);
//!         (void)smp_call_function_single(event_cpu, __perf_event_read, &data, 1);
//! ```
//!
//! A CPU-bound software event (context-switches here) is always active on
//! its CPU and has neither PERF_EV_CAP_READ_SCOPE nor READ_ACTIVE_PKG, so
//! `event_cpu` stays the target. smp_call_function_single() to another
//! CPU queues the request (kernel/smp.c generic_exec_single ->
//! __smp_call_single_queue) and sends an IPI when the target's queue was
//! empty, which it is: every read waits (`wait` = 1) until the target ran
//! the previous one. RISC-V has no TIF_POLLING_NRFLAG, so
//! call_function_single_prep_ipi() never skips the IPI for an idle
//! target; arch_send_call_function_single_ipi() -> send_ipi_single() ->
//! ipi_mux -> sbi_send_ipi() (arch/riscv/kernel/sbi-ipi.c, without AIA or
//! ACLINT SSWI, as on QEMU virt's default machine) makes one SBI
//! send_ipi call per read. What the target runs does not matter: idle
//! (woken from wfi), a kernel thread or a user task, it takes the
//! interrupt. Measured in the same runs: 50 reads sent 50 IPIs, one each,
//! on 6.12 and 7.2, on rvpmu-fw and OpenSBI 1.5.1.
//!
//! Opening, enabling and closing the event add a constant number of IPIs
//! to the target (perf_install_in_context, perf_event_enable,
//! perf_remove_from_context each call the target CPU): a run with 0 reads
//! measures them.

use super::perf::{Counter, Event, Kind, Target};
use super::sys;

/// `PERF_COUNT_SW_CONTEXT_SWITCHES`.
const SW_CONTEXT_SWITCHES: u64 = 3;

/// A software event bound to another CPU; each [`Pinger::ping`] from a
/// different CPU makes the kernel send that CPU one IPI.
pub struct Pinger {
    counter: Counter,
    pub target: u32,
}

impl Pinger {
    /// Open and enable the event on `target` (this itself interrupts
    /// `target` a constant number of times, see the module comment).
    pub fn open(target: u32) -> Result<Pinger, String> {
        let counter = Counter::open(
            Event::new(Kind::Software(SW_CONTEXT_SWITCHES)),
            Target::Cpu(target as i32),
            None,
        )
        .map_err(|e| format!("open context-switches on cpu{target}: {e}"))?;
        counter
            .enable()
            .map_err(|e| format!("enable context-switches on cpu{target}: {e}"))?;
        Ok(Pinger { counter, target })
    }

    /// One read of the event: one IPI to the target when called on another
    /// CPU.
    pub fn ping(&self) -> Result<(), String> {
        self.counter
            .read()
            .map(|_| ())
            .map_err(|e| format!("read context-switches on cpu{}: {e}", self.target))
    }
}

/// Pin the calling thread to the CPU it runs on and pick the lowest other
/// online CPU as the target: (this CPU, target).
pub fn pin_here_and_pick_target() -> Result<(u32, u32), String> {
    let here = sys::current_cpu();
    if here < 0 {
        return Err("sched_getcpu failed".into());
    }
    let here = here as u32;
    sys::pin_to_cpu(here).map_err(|e| format!("pin to cpu{here}: {e}"))?;
    let online = sys::online_cpus();
    let target = online.iter().copied().find(|&c| c != here).ok_or_else(|| {
        format!("needs 2 online CPUs, online: {online:?} (boot with -smp 2 or more)")
    })?;
    Ok((here, target))
}
