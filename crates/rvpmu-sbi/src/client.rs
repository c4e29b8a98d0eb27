//! The S-mode SBI client: typed calls of the PMU and STA extensions, like
//! `sbi_rt` (flags as `sbi-spec`'s `CounterCfgFlags`, `CounterStartFlags`
//! and `CounterStopFlags`), with `event_get_info` and the snapshot included, and of the
//! other extensions an S-mode test kernel needs (BASE, TIME, IPI, RFENCE,
//! HSM, SRST, DBCN and the legacy calls), numbers from `sbi-spec`.
//!
//! Calls go through a [`SbiCall`] transport: `Ecall` (riscv64 only) is the
//! real `ecall` instruction (`sbi()` is the client over it); tests plug in
//! an engine directly. The instruction itself is written here only:
//! `ecall` (raw registers in, `(error, value)` out, for checks that send
//! malformed registers on purpose), `ecall_counted` (the same call
//! between two `instret` reads, for cost probes) and `ecall_timed` (the
//! same call between two edges of the `time` CSR, for cost probes where
//! `instret` is not readable), all riscv64 only.

use sbi_spec::binary::SbiRet;
use sbi_spec::pmu as fid;
pub use sbi_spec::pmu::flags::{CounterCfgFlags, CounterStartFlags, CounterStopFlags};
use sbi_spec::pmu::EID_PMU;
use sbi_spec::sta::EID_STA;
use sbi_spec::{base, dbcn, hsm, rfnc, spi, srst, time};

/// A way to make an SBI call.
pub trait SbiCall {
    /// Call `eid`/`fid` with `a0..a5`.
    fn call(&mut self, eid: usize, fid: usize, args: [usize; 6]) -> SbiRet;
}

/// One raw SBI call from S-mode: `eid` in a7, `fid` in a6, `args` in
/// a0..a5; returns a0 (the error, signed) and a1 (the value). Nothing is
/// checked or typed: conformance checks use it to send malformed
/// registers. A legacy (v0.1) call answers in a0 alone (the first
/// element).
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn ecall(eid: usize, fid: usize, args: [usize; 6]) -> (isize, usize) {
    let (error, value);
    // SAFETY: an ecall to the SBI implementation, which returns in a0/a1
    // and preserves every other register (SBI calling convention). It may
    // read or write memory the caller passes by physical address, which
    // the default (non-`nomem`) asm options already tell the compiler; a
    // fault the firmware redirects to S-mode comes back through the
    // caller's trap vector, which resumes after the ecall.
    unsafe {
        core::arch::asm!("ecall",
            inlateout("a0") args[0] => error, inlateout("a1") args[1] => value,
            in("a2") args[2], in("a3") args[3], in("a4") args[4], in("a5") args[5],
            in("a6") fid, in("a7") eid, options(nostack));
    }
    (error, value)
}

/// [`ecall`] bracketed by two `instret` reads in one asm block, so the
/// only instructions between them are the ecall and whatever the firmware
/// runs. Returns the raw delta (subtract [`empty_bracket`]) and the answer.
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn ecall_counted(eid: usize, fid: usize, args: [usize; 6]) -> (u64, (isize, usize)) {
    let (error, value, before, after): (isize, usize, u64, u64);
    // SAFETY: as in `ecall`; reading instret needs mcounteren.IR, which any
    // SBI PMU implementation grants (S-mode reads counters directly).
    unsafe {
        core::arch::asm!("csrr {b}, instret", "ecall", "csrr {a}, instret",
            b = out(reg) before, a = out(reg) after,
            inlateout("a0") args[0] => error, inlateout("a1") args[1] => value,
            in("a2") args[2], in("a3") args[3], in("a4") args[4], in("a5") args[5],
            in("a6") fid, in("a7") eid, options(nostack));
    }
    (after.wrapping_sub(before), (error, value))
}

/// The cost of the empty bracket used by [`ecall_counted`].
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn empty_bracket() -> u64 {
    let (before, after): (u64, u64);
    // SAFETY: reads instret only.
    unsafe {
        core::arch::asm!("csrr {b}, instret", "csrr {a}, instret",
            b = out(reg) before, a = out(reg) after, options(nostack, nomem));
    }
    after.wrapping_sub(before)
}

/// Where a call timed by `ecall_timed` (or `empty_timed`; riscv64 only) ended.
///
/// The bracket starts right after an edge of `time` (a spin on `time`, 2
/// instructions per read, waits for it) and ends at the first edge after
/// the call (a counted spin, [`Timed::SPIN`] instructions per read). So
/// if one instruction takes a fixed time (QEMU `-icount`), then with `T`
/// instructions per tick the edges are `ticks * T` instructions apart,
/// and `ticks * T - spins * SPIN` is the call's instructions plus a
/// constant, within a span of 3 (the first spin's deciding read lands 0
/// or 1 instruction after its edge, the counted spin's 0, 1 or 2). An empty
/// bracket has the same constant, so a call's cost is the difference of
/// the two, within 3 instructions either way, whatever the call's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timed {
    /// Ticks of `time` from the first edge to the last.
    pub ticks: u64,
    /// Reads of the counted spin after the call.
    pub spins: u64,
}

impl Timed {
    /// Instructions per read in the counted spin (`addi`, `csrr`, `beq`).
    pub const SPIN: u64 = 3;

    /// The instructions from the first edge to the last read, less the
    /// counted spin, with `per_tick` instructions per tick.
    pub fn instructions(self, per_tick: u64) -> u64 {
        (self.ticks * per_tick).saturating_sub(self.spins * Self::SPIN)
    }
}

/// [`ecall`] timed with the `time` CSR from one of its edges to the next
/// edge after the call, in one asm block (see [`Timed`]). The time CSR is
/// the one counter a hypervisor's guest can read without a trap on KVM
/// (which opens only hcounteren.TM), and it ticks with the whole
/// machine's instructions under QEMU `-icount`.
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn ecall_timed(eid: usize, fid: usize, args: [usize; 6]) -> (Timed, (isize, usize)) {
    let (error, value, first, last, spins): (isize, usize, u64, u64, u64);
    // SAFETY: as in `ecall`; reading `time` needs mcounteren.TM (and in a
    // guest hcounteren.TM), which any SBI implementation that lets Linux
    // use `rdtime` grants.
    unsafe {
        core::arch::asm!(
            "csrr {t}, time",
            "1: csrr {first}, time",
            "beq {first}, {t}, 1b",
            "ecall",
            "csrr {t}, time",
            "li {n}, 0",
            "2: addi {n}, {n}, 1",
            "csrr {last}, time",
            "beq {last}, {t}, 2b",
            t = out(reg) _, first = out(reg) first, last = out(reg) last, n = out(reg) spins,
            inlateout("a0") args[0] => error, inlateout("a1") args[1] => value,
            in("a2") args[2], in("a3") args[3], in("a4") args[4], in("a5") args[5],
            in("a6") fid, in("a7") eid, options(nostack));
    }
    let timed = Timed {
        ticks: last.wrapping_sub(first),
        spins,
    };
    (timed, (error, value))
}

/// The empty bracket of [`ecall_timed`]: the same instructions without
/// the `ecall`.
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub fn empty_timed() -> Timed {
    let (first, last, spins): (u64, u64, u64);
    // SAFETY: reads `time` only.
    unsafe {
        core::arch::asm!(
            "csrr {t}, time",
            "1: csrr {first}, time",
            "beq {first}, {t}, 1b",
            "csrr {t}, time",
            "li {n}, 0",
            "2: addi {n}, {n}, 1",
            "csrr {last}, time",
            "beq {last}, {t}, 2b",
            t = out(reg) _, first = out(reg) first, last = out(reg) last, n = out(reg) spins,
            options(nostack, nomem));
    }
    Timed {
        ticks: last.wrapping_sub(first),
        spins,
    }
}

/// The `ecall` instruction, from S-mode.
#[cfg(target_arch = "riscv64")]
#[derive(Clone, Copy, Debug, Default)]
pub struct Ecall;

#[cfg(target_arch = "riscv64")]
impl SbiCall for Ecall {
    #[inline(always)]
    fn call(&mut self, eid: usize, fid: usize, a: [usize; 6]) -> SbiRet {
        let (error, value) = ecall(eid, fid, a);
        SbiRet {
            error: error as usize,
            value,
        }
    }
}

/// The client over the real `ecall` instruction.
#[cfg(target_arch = "riscv64")]
#[inline(always)]
pub const fn sbi() -> Supervisor<Ecall> {
    Supervisor(Ecall)
}

/// Typed PMU and STA calls over a transport.
#[derive(Clone, Copy, Debug, Default)]
pub struct Supervisor<C: SbiCall>(pub C);

impl<C: SbiCall> Supervisor<C> {
    fn pmu(&mut self, f: usize, a: [usize; 6]) -> SbiRet {
        self.0.call(EID_PMU, f, a)
    }

    /// FID 0: number of counters.
    pub fn pmu_num_counters(&mut self) -> usize {
        self.pmu(fid::NUM_COUNTERS, [0; 6]).value
    }
    /// FID 1: `counter_info` of a counter (decode with [`crate::CounterInfo::decode`]).
    pub fn pmu_counter_get_info(&mut self, counter_idx: usize) -> SbiRet {
        self.pmu(fid::COUNTER_GET_INFO, [counter_idx, 0, 0, 0, 0, 0])
    }
    /// FID 2: find and configure a counter for `event_idx`.
    pub fn pmu_counter_config_matching(
        &mut self,
        counter_idx_base: usize,
        counter_idx_mask: usize,
        config_flags: CounterCfgFlags,
        event_idx: usize,
        event_data: u64,
    ) -> SbiRet {
        self.pmu(
            fid::COUNTER_CONFIG_MATCHING,
            [
                counter_idx_base,
                counter_idx_mask,
                config_flags.bits(),
                event_idx,
                event_data as usize,
                0,
            ],
        )
    }
    /// FID 3: start a set of counters.
    pub fn pmu_counter_start(
        &mut self,
        counter_idx_base: usize,
        counter_idx_mask: usize,
        start_flags: CounterStartFlags,
        initial_value: u64,
    ) -> SbiRet {
        self.pmu(
            fid::COUNTER_START,
            [
                counter_idx_base,
                counter_idx_mask,
                start_flags.bits(),
                initial_value as usize,
                0,
                0,
            ],
        )
    }
    /// FID 4: stop a set of counters.
    pub fn pmu_counter_stop(
        &mut self,
        counter_idx_base: usize,
        counter_idx_mask: usize,
        stop_flags: CounterStopFlags,
    ) -> SbiRet {
        self.pmu(
            fid::COUNTER_STOP,
            [
                counter_idx_base,
                counter_idx_mask,
                stop_flags.bits(),
                0,
                0,
                0,
            ],
        )
    }
    /// FID 5: read a firmware counter.
    pub fn pmu_counter_fw_read(&mut self, counter_idx: usize) -> SbiRet {
        self.pmu(fid::COUNTER_FW_READ, [counter_idx, 0, 0, 0, 0, 0])
    }
    /// FID 6: upper bits of a firmware counter (0 on RV64).
    pub fn pmu_counter_fw_read_hi(&mut self, counter_idx: usize) -> SbiRet {
        self.pmu(fid::COUNTER_FW_READ_HI, [counter_idx, 0, 0, 0, 0, 0])
    }
    /// FID 7: register (or with `None`, disable) the snapshot page.
    pub fn pmu_snapshot_set_shmem(&mut self, phys: Option<u64>) -> SbiRet {
        let (lo, hi) = match phys {
            Some(p) => (p as usize, 0),
            None => (usize::MAX, usize::MAX),
        };
        self.pmu(fid::SNAPSHOT_SET_SHMEM, [lo, hi, 0, 0, 0, 0])
    }
    /// FID 8: fill the output words of `num_entries` 16-byte entries at `phys`.
    pub fn pmu_event_get_info(&mut self, phys: u64, num_entries: usize) -> SbiRet {
        self.pmu(
            fid::EVENT_GET_INFO,
            [phys as usize, 0, num_entries, 0, 0, 0],
        )
    }
    /// STA FID 0: register (or with `None`, disable) the steal-time record.
    pub fn sta_set_shmem(&mut self, phys: Option<u64>) -> SbiRet {
        let (lo, hi) = match phys {
            Some(p) => (p as usize, 0),
            None => (usize::MAX, usize::MAX),
        };
        self.0
            .call(EID_STA, sbi_spec::sta::SET_SHMEM, [lo, hi, 0, 0, 0, 0])
    }

    /// BASE FID 0: the SBI specification version.
    pub fn base_spec_version(&mut self) -> SbiRet {
        self.0
            .call(base::EID_BASE, base::GET_SBI_SPEC_VERSION, [0; 6])
    }
    /// BASE FID 1: the implementation id.
    pub fn base_impl_id(&mut self) -> SbiRet {
        self.0.call(base::EID_BASE, base::GET_SBI_IMPL_ID, [0; 6])
    }
    /// BASE FID 3: whether extension `eid` is available (value 0: absent).
    pub fn base_probe_extension(&mut self, eid: usize) -> SbiRet {
        self.0
            .call(base::EID_BASE, base::PROBE_EXTENSION, [eid, 0, 0, 0, 0, 0])
    }
    /// TIME FID 0: program the next timer event at `stime_value`.
    pub fn set_timer(&mut self, stime_value: u64) -> SbiRet {
        self.0.call(
            time::EID_TIME,
            time::SET_TIMER,
            [stime_value as usize, 0, 0, 0, 0, 0],
        )
    }
    /// IPI FID 0: a supervisor software interrupt to the harts of the mask.
    pub fn send_ipi(&mut self, hart_mask: usize, hart_mask_base: usize) -> SbiRet {
        self.0.call(
            spi::EID_SPI,
            spi::SEND_IPI,
            [hart_mask, hart_mask_base, 0, 0, 0, 0],
        )
    }
    /// RFENCE FID `fid` (0 fence.i .. 6 hfence.vvma) with its arguments
    /// after the hart mask: `start_addr`, `size`, then ASID or VMID.
    pub fn remote_fence(
        &mut self,
        fid: usize,
        hart_mask: usize,
        hart_mask_base: usize,
        start_addr: usize,
        size: usize,
        id: usize,
    ) -> SbiRet {
        self.0.call(
            rfnc::EID_RFNC,
            fid,
            [hart_mask, hart_mask_base, start_addr, size, id, 0],
        )
    }
    /// HSM FID 0: start `hartid` at `start_addr` with `opaque` in a1.
    pub fn hart_start(&mut self, hartid: usize, start_addr: usize, opaque: usize) -> SbiRet {
        self.0.call(
            hsm::EID_HSM,
            hsm::HART_START,
            [hartid, start_addr, opaque, 0, 0, 0],
        )
    }
    /// HSM FID 1: stop the calling hart (returns only on failure).
    pub fn hart_stop(&mut self) -> SbiRet {
        self.0.call(hsm::EID_HSM, hsm::HART_STOP, [0; 6])
    }
    /// HSM FID 2: the state of `hartid` (`sbi_spec::hsm::hart_state`).
    pub fn hart_get_status(&mut self, hartid: usize) -> SbiRet {
        self.0
            .call(hsm::EID_HSM, hsm::HART_GET_STATUS, [hartid, 0, 0, 0, 0, 0])
    }
    /// HSM FID 3: suspend the calling hart. A non-retentive suspend that
    /// succeeds does not return: the hart resumes at `resume_addr` with
    /// `opaque` in a1.
    pub fn hart_suspend(
        &mut self,
        suspend_type: usize,
        resume_addr: usize,
        opaque: usize,
    ) -> SbiRet {
        self.0.call(
            hsm::EID_HSM,
            hsm::HART_SUSPEND,
            [suspend_type, resume_addr, opaque, 0, 0, 0],
        )
    }
    /// SRST FID 0: reset the system (returns only when refused).
    pub fn system_reset(&mut self, reset_type: usize, reset_reason: usize) -> SbiRet {
        self.0.call(
            srst::EID_SRST,
            srst::SYSTEM_RESET,
            [reset_type, reset_reason, 0, 0, 0, 0],
        )
    }
    /// DBCN FID 0: write `num_bytes` from physical address `base_hi:base_lo`.
    pub fn console_write(&mut self, num_bytes: usize, base_lo: usize, base_hi: usize) -> SbiRet {
        self.0.call(
            dbcn::EID_DBCN,
            dbcn::CONSOLE_WRITE,
            [num_bytes, base_lo, base_hi, 0, 0, 0],
        )
    }
    /// DBCN FID 1: read up to `num_bytes` into physical address `base_hi:base_lo`.
    pub fn console_read(&mut self, num_bytes: usize, base_lo: usize, base_hi: usize) -> SbiRet {
        self.0.call(
            dbcn::EID_DBCN,
            dbcn::CONSOLE_READ,
            [num_bytes, base_lo, base_hi, 0, 0, 0],
        )
    }
    /// DBCN FID 2: write one byte.
    pub fn console_write_byte(&mut self, byte: u8) -> SbiRet {
        self.0.call(
            dbcn::EID_DBCN,
            dbcn::CONSOLE_WRITE_BYTE,
            [byte as usize, 0, 0, 0, 0, 0],
        )
    }
    /// A legacy (v0.1) call, EID `eid` (`sbi_spec::legacy`), arguments in
    /// a0..a3: the answer is a0 alone (a1 is not part of it).
    pub fn legacy(&mut self, eid: usize, args: [usize; 4]) -> isize {
        self.0
            .call(eid, 0, [args[0], args[1], args[2], args[3], 0, 0])
            .error as isize
    }
}
