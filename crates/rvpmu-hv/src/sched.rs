//! Time-slicing vCPUs on one hart, and the time accounting steal time
//! (SBI STA) reports: round-robin at a fixed quantum, in timebase ticks
//! of the hart's `time` CSR.
//!
//! A vCPU is in one of four states ([`State`]): running (it has the
//! hart), runnable (it wants the hart and another vCPU has it), idle (it
//! executed `wfi` and waits for its timer: nobody takes anything from
//! it), ended (its guest shut down). Its time is split into
//! [`Account::run`], [`Account::steal`] (runnable but not running: what
//! its STA record reports) and [`Account::idle`]:
//!
//! - a vCPU switched out at the end of its quantum is runnable from then;
//! - an idle vCPU becomes runnable when its timer (`vstimecmp`) passes:
//!   the time before is idle, the time after, until it runs, steal;
//! - the hart goes to the next runnable vCPU after the current one in a
//!   fixed order (the current one last), at quantum ends, when the
//!   current one goes idle, and when an idle vCPU's timer passes (a
//!   wake-up preempts: the woken vCPU waits only as long as the
//!   hypervisor takes to notice, not a quantum); if none is runnable the
//!   hypervisor waits for the earliest timer ([`Next::Wait`]).
//!   [`Sched::deadline`] is when the hypervisor's timer must fire.
//!
//! The scheduler only decides and counts; the hypervisor (`src/main.rs`'s
//! `guests` module) switches CSRs and counters and writes the STA
//! records through [`crate::ram::GuestMemory`].

/// What a vCPU is doing, with the tick its state began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// It has the hart since `since`.
    Running {
        /// Tick it started running.
        since: u64,
    },
    /// It wants the hart since `since`; another vCPU has it.
    Runnable {
        /// Tick it became runnable.
        since: u64,
    },
    /// In `wfi` since `since`, until its timer at `wake`.
    Idle {
        /// Tick it went idle.
        since: u64,
        /// Its timer (`vstimecmp`; `u64::MAX`: none).
        wake: u64,
    },
    /// Its guest shut down.
    Ended,
}

/// One vCPU's time, in ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Account {
    /// Running.
    pub run: u64,
    /// Runnable but not running.
    pub steal: u64,
    /// Idle.
    pub idle: u64,
}

/// What the hart does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Run `vcpu`; `steal` ticks were added to its steal since it last
    /// ran (to publish in its STA record before it resumes).
    Run {
        /// The vCPU.
        vcpu: usize,
        /// Steal added now, in ticks.
        steal: u64,
    },
    /// No vCPU is runnable: wait until tick `until` (the earliest idle
    /// vCPU's timer), then ask again.
    Wait {
        /// Earliest timer of an idle vCPU.
        until: u64,
    },
    /// Every guest has ended.
    AllEnded,
}

/// Round-robin over `N` vCPUs.
#[derive(Clone, Debug)]
pub struct Sched<const N: usize> {
    state: [State; N],
    acct: [Account; N],
    current: usize,
    quantum: u64,
    slice_end: u64,
}

impl<const N: usize> Sched<N> {
    /// `n` (1..=N) vCPUs at tick `now`: vCPU 0 runs, the others are
    /// runnable (they want the hart from the start), a quantum is
    /// `quantum` ticks (at least 1).
    pub fn new(n: usize, now: u64, quantum: u64) -> Self {
        let mut state = [State::Ended; N];
        for (i, s) in state.iter_mut().enumerate().take(n.clamp(1, N)) {
            *s = if i == 0 {
                State::Running { since: now }
            } else {
                State::Runnable { since: now }
            };
        }
        let quantum = quantum.max(1);
        Sched {
            state,
            acct: [Account::default(); N],
            current: 0,
            quantum,
            slice_end: now.saturating_add(quantum),
        }
    }

    /// The vCPU that has the hart (or had it last).
    pub fn current(&self) -> usize {
        self.current
    }

    /// When the current quantum ends.
    pub fn slice_end(&self) -> u64 {
        self.slice_end
    }

    /// A vCPU's state.
    pub fn state(&self, vcpu: usize) -> State {
        self.state[vcpu]
    }

    /// A vCPU's time so far (not counting the state it is in now).
    pub fn account(&self, vcpu: usize) -> Account {
        self.acct[vcpu]
    }

    /// Whether `vcpu` is withheld: runnable while another vCPU has the
    /// hart. Its STA record says `preempted` = 1 exactly then (an idle or
    /// ended vCPU is not withheld: it does not want the hart).
    pub fn withheld(&self, vcpu: usize) -> bool {
        vcpu != self.current && matches!(self.state[vcpu], State::Runnable { .. })
    }

    /// Whether a vCPU other than `vcpu` has not ended.
    pub fn others_alive(&self, vcpu: usize) -> bool {
        self.state
            .iter()
            .enumerate()
            .any(|(i, s)| i != vcpu && *s != State::Ended)
    }

    /// Close the current vCPU's running time at `now`, leaving it in `to`.
    fn leave(&mut self, now: u64, to: State) {
        let c = self.current;
        if let State::Running { since } = self.state[c] {
            self.acct[c].run += now.saturating_sub(since);
        }
        self.state[c] = to;
    }

    /// When the hypervisor must look again: the end of the quantum or
    /// the earliest idle vCPU's timer, whichever comes first.
    pub fn deadline(&self) -> u64 {
        self.state
            .iter()
            .filter_map(|s| match s {
                State::Idle { wake, .. } => Some(*wake),
                _ => None,
            })
            .fold(self.slice_end, u64::min)
    }

    /// The hypervisor's timer fired at `now`: if the quantum ended or an
    /// idle vCPU's timer passed, the current vCPU is preempted
    /// ([`Sched::preempt`]); otherwise (an early interrupt) nothing.
    pub fn timer(&mut self, now: u64) -> Option<Next> {
        (now >= self.deadline()).then(|| self.preempt(now))
    }

    /// The quantum ended at `now`: the current vCPU is runnable.
    pub fn preempt(&mut self, now: u64) -> Next {
        self.leave(now, State::Runnable { since: now });
        self.pick(now)
    }

    /// The current vCPU executed `wfi` at `now` and waits for its timer
    /// at `wake`.
    pub fn idle(&mut self, now: u64, wake: u64) -> Next {
        self.leave(now, State::Idle { since: now, wake });
        self.pick(now)
    }

    /// The current vCPU's guest shut down at `now`.
    pub fn end(&mut self, now: u64) -> Next {
        self.leave(now, State::Ended);
        self.pick(now)
    }

    /// Idle vCPUs whose timer passed by `now` become runnable at their
    /// timer; then the next runnable vCPU after the current one (the
    /// current one last) runs for a new quantum.
    pub fn pick(&mut self, now: u64) -> Next {
        for (s, a) in self.state.iter_mut().zip(self.acct.iter_mut()) {
            if let State::Idle { since, wake } = *s {
                if wake <= now {
                    let at = wake.max(since);
                    a.idle += at - since;
                    *s = State::Runnable { since: at };
                }
            }
        }
        for k in 1..=N {
            let v = (self.current + k) % N;
            if let State::Runnable { since } = self.state[v] {
                let steal = now.saturating_sub(since);
                self.acct[v].steal += steal;
                self.state[v] = State::Running { since: now };
                self.current = v;
                self.slice_end = now.saturating_add(self.quantum);
                return Next::Run { vcpu: v, steal };
            }
        }
        let until = self
            .state
            .iter()
            .filter_map(|s| match s {
                State::Idle { wake, .. } => Some(*wake),
                _ => None,
            })
            .min();
        match until {
            Some(until) => Next::Wait { until },
            None => Next::AllEnded,
        }
    }

    /// Close every vCPU's open state at `now` into its account (for the
    /// final report).
    pub fn settle(&mut self, now: u64) {
        for (s, a) in self.state.iter_mut().zip(self.acct.iter_mut()) {
            match *s {
                State::Running { since } => {
                    a.run += now.saturating_sub(since);
                    *s = State::Running { since: now };
                }
                State::Runnable { since } => {
                    a.steal += now.saturating_sub(since);
                    *s = State::Runnable { since: now };
                }
                State::Idle { since, wake } => {
                    let at = now.min(wake).max(since);
                    a.idle += at - since;
                    a.steal += now.saturating_sub(at);
                    *s = if wake <= now {
                        State::Runnable { since: now }
                    } else {
                        State::Idle { since: now, wake }
                    };
                }
                State::Ended => {}
            }
        }
    }
}

/// Nanoseconds in `ticks` of a `timebase` Hz clock (0 Hz: 0).
pub fn ticks_to_ns(ticks: u64, timebase: u64) -> u64 {
    if timebase == 0 {
        return 0;
    }
    (ticks as u128 * 1_000_000_000 / timebase as u128).min(u64::MAX as u128) as u64
}

/// Converts a vCPU's cumulative steal in ticks to the nanoseconds its STA
/// record adds, without losing the rounding remainder across updates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StealClock {
    published_ticks: u64,
}

impl StealClock {
    /// Nanoseconds to add to the record now that the vCPU's total steal
    /// is `total_ticks`.
    pub fn advance(&mut self, total_ticks: u64, timebase: u64) -> u64 {
        let ns = ticks_to_ns(total_ticks, timebase)
            .saturating_sub(ticks_to_ns(self.published_ticks, timebase));
        self.published_ticks = total_ticks.max(self.published_ticks);
        ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_busy_vcpus_alternate_and_each_is_stolen_from_while_the_other_runs() {
        let mut s = Sched::<2>::new(2, 1000, 100);
        assert_eq!(s.slice_end(), 1100);
        // vCPU 1 waited the whole first quantum.
        assert_eq!(
            s.preempt(1100),
            Next::Run {
                vcpu: 1,
                steal: 100
            }
        );
        assert_eq!(s.state(0), State::Runnable { since: 1100 });
        assert_eq!(s.slice_end(), 1200);
        // A quantum end that comes late (the trap is taken a bit after).
        assert_eq!(
            s.preempt(1203),
            Next::Run {
                vcpu: 0,
                steal: 103
            }
        );
        assert_eq!(
            s.preempt(1303),
            Next::Run {
                vcpu: 1,
                steal: 100
            }
        );
        s.settle(1403);
        for v in 0..2 {
            let a = s.account(v);
            assert_eq!(a.run + a.steal + a.idle, 403, "{v}: {a:?}");
            assert_eq!(a.idle, 0);
        }
        assert_eq!(s.account(0).run, 200);
        assert_eq!(s.account(1).steal, 200);
    }

    #[test]
    fn idle_time_is_never_steal_and_a_woken_vcpu_is_stolen_from_until_it_runs() {
        let mut s = Sched::<2>::new(2, 0, 100);
        // vCPU 0 idles at 10 until its timer at 500: vCPU 1 runs.
        assert_eq!(s.idle(10, 500), Next::Run { vcpu: 1, steal: 10 });
        // Quantum ends while vCPU 0 still sleeps: vCPU 1 again, no steal.
        assert_eq!(s.preempt(110), Next::Run { vcpu: 1, steal: 0 });
        assert_eq!(s.preempt(210), Next::Run { vcpu: 1, steal: 0 });
        assert_eq!(s.preempt(310), Next::Run { vcpu: 1, steal: 0 });
        assert_eq!(s.preempt(410), Next::Run { vcpu: 1, steal: 0 });
        // vCPU 0's timer passed at 500; it runs at the quantum end, 510:
        // 490 idle, 10 stolen.
        assert_eq!(s.preempt(510), Next::Run { vcpu: 0, steal: 10 });
        assert_eq!(
            s.account(0),
            Account {
                run: 10,
                steal: 10,
                idle: 490
            }
        );
        assert_eq!(s.account(1).steal, 10);
        // A short run, then idle again: vCPU 1 is stolen from only for it.
        assert_eq!(s.idle(530, 2000), Next::Run { vcpu: 1, steal: 20 });
        assert_eq!(
            s.account(1),
            Account {
                run: 500,
                steal: 30,
                idle: 0
            }
        );
    }

    #[test]
    fn only_a_runnable_vcpu_another_one_displaced_is_withheld() {
        let mut s = Sched::<3>::new(3, 0, 100);
        assert!(!s.withheld(0) && s.withheld(1) && s.withheld(2));
        // 0's quantum ends: 1 runs, 0 and 2 wait.
        assert_eq!(
            s.preempt(100),
            Next::Run {
                vcpu: 1,
                steal: 100
            }
        );
        assert!(s.withheld(0) && !s.withheld(1) && s.withheld(2));
        // 1 idles, 2 ends: neither is withheld.
        assert_eq!(
            s.idle(150, 1000),
            Next::Run {
                vcpu: 2,
                steal: 150
            }
        );
        assert!(!s.withheld(1));
        assert_eq!(s.end(160), Next::Run { vcpu: 0, steal: 60 });
        assert!(!s.withheld(0) && !s.withheld(1) && !s.withheld(2));
        // Alone, a vCPU preempted by its own quantum runs on: not withheld.
        assert_eq!(s.preempt(260), Next::Run { vcpu: 0, steal: 0 });
        assert!(!s.withheld(0));
    }

    #[test]
    fn an_idle_vcpus_timer_preempts_the_running_one() {
        let mut s = Sched::<2>::new(2, 0, 100);
        assert_eq!(s.idle(10, 150), Next::Run { vcpu: 1, steal: 10 });
        // vCPU 1's quantum would end at 110; vCPU 0 sleeps until 150.
        assert_eq!(s.deadline(), 110);
        assert_eq!(s.timer(105), None);
        assert_eq!(s.timer(110), Some(Next::Run { vcpu: 1, steal: 0 }));
        assert_eq!(s.deadline(), 150);
        // vCPU 0's timer: it runs at once (2 ticks late), vCPU 1 waits.
        assert_eq!(s.timer(152), Some(Next::Run { vcpu: 0, steal: 2 }));
        assert_eq!(
            s.account(0),
            Account {
                run: 10,
                steal: 2,
                idle: 140
            }
        );
        assert_eq!(s.deadline(), 252);
        // vCPU 0 handles its tick and idles: vCPU 1 was stolen from
        // exactly that long.
        assert_eq!(s.idle(160, 1000), Next::Run { vcpu: 1, steal: 8 });
        assert_eq!(
            s.account(1),
            Account {
                run: 142,
                steal: 18,
                idle: 0
            }
        );
    }

    #[test]
    fn with_everyone_idle_the_hart_waits_for_the_earliest_timer() {
        let mut s = Sched::<3>::new(3, 0, 100);
        assert_eq!(s.idle(5, 900), Next::Run { vcpu: 1, steal: 5 });
        assert_eq!(s.idle(7, 700), Next::Run { vcpu: 2, steal: 7 });
        assert_eq!(s.idle(8, u64::MAX), Next::Wait { until: 700 });
        // Woken early (nothing passed yet): still waiting.
        assert_eq!(s.pick(650), Next::Wait { until: 700 });
        // Late wake-up: vCPU 1's timer passed at 700, it runs at 720,
        // stolen from for the 20 ticks the hart took to notice.
        assert_eq!(s.pick(720), Next::Run { vcpu: 1, steal: 20 });
        assert_eq!(
            s.account(1),
            Account {
                run: 2,
                steal: 25,
                idle: 693
            }
        );
        // vCPU 2 never had a timer: it stays idle.
        assert_eq!(
            s.state(2),
            State::Idle {
                since: 8,
                wake: u64::MAX
            }
        );
    }

    #[test]
    fn ended_guests_drop_out_and_the_last_one_ends_the_machine() {
        let mut s = Sched::<2>::new(2, 0, 100);
        assert!(s.others_alive(0));
        assert_eq!(s.end(50), Next::Run { vcpu: 1, steal: 50 });
        assert!(!s.others_alive(1));
        assert_eq!(s.preempt(150), Next::Run { vcpu: 1, steal: 0 });
        assert_eq!(s.end(160), Next::AllEnded);
        // One vCPU alone is never stolen from.
        let mut one = Sched::<2>::new(1, 0, 10);
        assert_eq!(one.preempt(10), Next::Run { vcpu: 0, steal: 0 });
        assert_eq!(one.idle(15, 40), Next::Wait { until: 40 });
        assert_eq!(one.pick(40), Next::Run { vcpu: 0, steal: 0 });
        assert_eq!(
            one.account(0),
            Account {
                run: 15,
                steal: 0,
                idle: 25
            }
        );
    }

    #[test]
    fn steal_converts_to_nanoseconds_without_drift() {
        assert_eq!(ticks_to_ns(3, 10_000_000), 300);
        assert_eq!(ticks_to_ns(u64::MAX, 1), u64::MAX);
        assert_eq!(ticks_to_ns(5, 0), 0);
        // 3 Hz: a tick is 333,333,333.3 ns; the parts add up to the whole.
        let mut c = StealClock::default();
        let parts: u64 = [1, 2, 3, 4, 5]
            .iter()
            .scan(0, |t, d| {
                *t += d;
                Some(c.advance(*t, 3))
            })
            .sum();
        assert_eq!(parts, ticks_to_ns(15, 3));
        assert_eq!(c.advance(15, 3), 0);
    }
}
