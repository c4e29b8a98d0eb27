//! vs-check: a VS-mode guest that checks what rvpmu-hv answers and
//! forwards: BASE (version, ids, truthful probes), unknown extensions and
//! functions, DBCN (a write forwarded to the host console, buffers outside
//! guest RAM refused), TIME (a vstimecmp interrupt), SRST (forwarded: the
//! host firmware's own answer), and exceptions reflected into the guest
//! (an illegal instruction the firmware redirects, a virtual-instruction
//! trap turned into an illegal instruction), and the virtual PMU
//! (`pmu_checks`: counters, get_info, config_matching, start/stop, direct
//! CSR reads of an exact loop, fw_read of SET_TIMER, snapshot and
//! event_get_info in guest memory, error paths, what a host counter given
//! to the guest does not count, and the cost of each call). Prints one line per failed
//! check and a summary, then ends as `/chosen/bootargs` asks:
//! `vs-check.end=shutdown` (default) an SRST shutdown ("system failure"
//! if a check failed), `vs-check.end=fault` a load from guest-physical
//! 0x10000000 (QEMU's UART, not mapped for the guest), which the
//! hypervisor must report and stop. Run by `cargo xtask hv`. Runtime:
//! `rvpmu_rt` (entry, stack, trap vector, console), calls through
//! `rvpmu_sbi::client`. Bare-metal; an empty stub on the host.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `guest` | |
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("this is a bare-metal guest; run it with `cargo xtask hv`");
}

#[cfg(target_os = "none")]
mod guest {
    use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use rvpmu_rt::csr::HPMCOUNTER3;
    use rvpmu_rt::tally::Tally;
    use rvpmu_rt::{console, println, runtime};
    use rvpmu_sbi::client::sbi;
    use sbi_spec::binary::{RET_ERR_INVALID_PARAM, RET_ERR_NOT_SUPPORTED, RET_SUCCESS};
    use sbi_spec::{base::EID_BASE, dbcn::EID_DBCN, srst::EID_SRST, time::EID_TIME};

    rvpmu_rt::entry!();

    static TIMER_IRQS: AtomicUsize = AtomicUsize::new(0);
    static SOFT_IRQS: AtomicUsize = AtomicUsize::new(0);
    static EXCEPTIONS: AtomicUsize = AtomicUsize::new(0);
    static LAST_CAUSE: AtomicUsize = AtomicUsize::new(0);
    static LAST_TVAL: AtomicUsize = AtomicUsize::new(0);
    static CHECKS: Tally = Tally::new();

    /// Timer interrupts are counted (and the timer pushed out); exceptions
    /// are recorded and stepped over.
    #[no_mangle]
    extern "C" fn trap_handler() {
        let (cause, epc, tval): (usize, usize, usize);
        // SAFETY: reads the trap CSRs of the trap being handled; no memory.
        unsafe {
            core::arch::asm!("csrr {0}, scause", "csrr {1}, sepc", "csrr {2}, stval",
                out(reg) cause, out(reg) epc, out(reg) tval);
        }
        if (cause as isize) < 0 {
            match cause & 0xff {
                1 => {
                    // SAFETY: clears sip.SSIP (hvip.VSSIP underneath), a
                    // pending bit; no memory.
                    unsafe { core::arch::asm!("csrc sip, {0}", in(reg) 2usize) };
                    SOFT_IRQS.fetch_add(1, SeqCst);
                }
                5 => {
                    sbi().set_timer(u64::MAX);
                    TIMER_IRQS.fetch_add(1, SeqCst);
                }
                _ => {}
            }
            return;
        }
        EXCEPTIONS.fetch_add(1, SeqCst);
        LAST_CAUSE.store(cause, SeqCst);
        LAST_TVAL.store(tval, SeqCst);
        // SAFETY: the only exceptions this guest takes are the illegal
        // instructions it provokes in its own .text (guest RAM, mapped,
        // satp = 0, 2-byte aligned); the low halfword gives the length.
        let insn = unsafe { core::ptr::read_volatile(epc as *const u16) };
        let len = if insn & 3 == 3 { 4 } else { 2 };
        // SAFETY: resumes after the provoking instruction, whose asm!
        // block declares only a register output.
        unsafe { core::arch::asm!("csrw sepc, {0}", in(reg) epc + len) };
    }

    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo) -> ! {
        println!("vs-check: FAIL panic: {info}");
        runtime::shutdown_failure()
    }

    #[no_mangle]
    extern "C" fn secondary_main(_hartid: usize, _opaque: usize) -> ! {
        runtime::park()
    }

    fn check(name: &str, ok: bool, got: core::fmt::Arguments<'_>) {
        if !CHECKS.record(ok) {
            println!("vs-check: FAIL {name}: got {got}");
        }
    }

    fn ret(name: &str, r: rvpmu_sbi::SbiRet, error: usize, value: Option<usize>) {
        let ok = r.error == error && value.is_none_or(|v| r.value == v);
        check(
            name,
            ok,
            format_args!("({}, {:#x})", r.error as isize, r.value),
        );
    }

    fn raw(eid: usize, fid: usize) -> rvpmu_sbi::SbiRet {
        let (error, value) = rvpmu_sbi::client::ecall(eid, fid, [0; 6]);
        rvpmu_sbi::SbiRet {
            error: error as usize,
            value,
        }
    }

    fn time() -> u64 {
        let t: u64;
        // SAFETY: reads the time CSR (hcounteren.TM lets VS-mode read it).
        unsafe { core::arch::asm!("csrr {0}, time", out(reg) t) };
        t
    }

    /// Guest RAM [start, end) and the bootargs, from the guest's DT.
    fn read_dt(dtb: usize) -> ((usize, usize), &'static str) {
        // SAFETY: a1 points at the DT the hypervisor wrote into guest RAM,
        // which nothing else touches while the guest runs (`open_at`
        // removes NOP tokens in place).
        let fdt = match unsafe { rvpmu_dtb::open_at(dtb as *mut u8) } {
            Ok(f) => f,
            Err(e) => {
                println!("vs-check: FAIL no valid device tree at a1 = {dtb:#x}: {e}");
                runtime::shutdown_failure()
            }
        };
        let ram = fdt
            .find_node("/memory")
            .and_then(|m| m.reg())
            .and_then(|mut r| r.next())
            .map(|r| {
                let b = r.starting_address as usize;
                (b, b + r.size.unwrap_or(0))
            })
            .unwrap_or((0, 0));
        let chosen = fdt.find_node("/chosen");
        let bootargs = chosen.and_then(|c| c.property("bootargs")?.as_str());
        (ram, bootargs.unwrap_or(""))
    }

    /// The guest's PMU counters: 16 HPM counters (QEMU's 3..=18, the host's
    /// own indices) and 16 firmware counters, behind the alias window.
    const HPM_BASE: usize = 3;
    const HPM_MASK: usize = 0xffff;
    const FW_BASE: usize = 19;
    const NUM_COUNTERS: usize = 4096 + FW_BASE + 16;

    /// hpmcounter3 before and after `n` (>= 1) iterations of a
    /// 2-instruction loop.
    #[inline(never)]
    fn loop_delta(n: usize) -> u64 {
        let (a, b): (u64, u64);
        // SAFETY: reads hpmcounter3 (hcounteren lets it through) around a
        // register-only loop.
        unsafe {
            core::arch::asm!("csrr {a}, {hpm3}", "mv t0, {n}", "1: addi t0, t0, -1", "bnez t0, 1b",
                "csrr {b}, {hpm3}", a = out(reg) a, b = out(reg) b, n = in(reg) n, out("t0") _,
                hpm3 = const HPMCOUNTER3.num(), options(nostack, nomem));
        }
        b.wrapping_sub(a)
    }

    /// hpmcounter3 and instret deltas around a PMU num_counters call
    /// (`call`) or around nothing.
    #[inline(never)]
    fn bracket(call: bool) -> (u64, u64) {
        let (g0, g1, i0, i1): (u64, u64, u64, u64);
        if call {
            // SAFETY: an SBI call (num_counters: no memory) between counter
            // reads; a0 and a1 are the answer, every other register kept.
            unsafe {
                core::arch::asm!("csrr {g0}, {hpm3}", "csrr {i0}, instret", "ecall",
                    "csrr {g1}, {hpm3}", "csrr {i1}, instret",
                    g0 = out(reg) g0, g1 = out(reg) g1, i0 = out(reg) i0, i1 = out(reg) i1,
                    hpm3 = const HPMCOUNTER3.num(),
                    in("a7") sbi_spec::pmu::EID_PMU, in("a6") sbi_spec::pmu::NUM_COUNTERS,
                    inlateout("a0") 0usize => _, lateout("a1") _, options(nostack));
            }
        } else {
            // SAFETY: counter reads only.
            unsafe {
                core::arch::asm!("csrr {g0}, {hpm3}", "csrr {i0}, instret", "nop",
                    "csrr {g1}, {hpm3}", "csrr {i1}, instret",
                    g0 = out(reg) g0, g1 = out(reg) g1, i0 = out(reg) i0, i1 = out(reg) i1,
                    hpm3 = const HPMCOUNTER3.num(),
                    options(nostack, nomem));
            }
        }
        (g1.wrapping_sub(g0), i1.wrapping_sub(i0))
    }

    /// `INSN`, a `csrr a0, CSR` the guest may not read, is a
    /// virtual-instruction trap, which the guest must see as an illegal
    /// instruction with the instruction bits in stval; a0 keeps 0.
    fn reads_as_illegal<const INSN: u32>(name: &str) {
        let before = EXCEPTIONS.load(SeqCst);
        let v: usize;
        // SAFETY: traps; the handler steps over it; a0 keeps its value.
        unsafe { core::arch::asm!("li a0, 0", ".word {insn}", insn = const INSN, out("a0") v) };
        check(
            name,
            EXCEPTIONS.load(SeqCst) == before + 1
                && LAST_CAUSE.load(SeqCst) == 2
                && LAST_TVAL.load(SeqCst) == INSN as usize
                && v == 0,
            format_args!(
                "{} traps, cause {} tval {:#x}, read {v}",
                EXCEPTIONS.load(SeqCst) - before,
                LAST_CAUSE.load(SeqCst),
                LAST_TVAL.load(SeqCst)
            ),
        );
    }

    /// A host counter that is not this guest's is closed to it
    /// (hcounteren), never showing another guest's value: `csrr a0,
    /// hpmcounter3`.
    fn hpm3_closed(when: &str) {
        reads_as_illegal::<0xc030_2573>(when);
    }

    fn hpm3() -> u64 {
        // hcounteren lets it through.
        HPMCOUNTER3.read() as u64
    }

    /// The snapshot page and an event_get_info array, in guest RAM
    /// (satp is 0: their addresses are guest-physical).
    #[repr(C, align(4096))]
    struct Shared {
        snapshot: [u64; 512],
        info: [[u32; 4]; 4],
    }
    static mut SHARED: Shared = Shared {
        snapshot: [0; 512],
        info: [[0; 4]; 4],
    };

    /// What one guest PMU call costs: instret (every mode) around the
    /// ecall, the empty bracket subtracted.
    fn cost(fid: usize, a: [usize; 6]) -> (u64, rvpmu_sbi::SbiRet) {
        let (d, (error, value)) = rvpmu_sbi::client::ecall_counted(sbi_spec::pmu::EID_PMU, fid, a);
        let r = rvpmu_sbi::SbiRet {
            error: error as usize,
            value,
        };
        (d - rvpmu_sbi::client::empty_bracket(), r)
    }

    fn pmu_checks(ram: (usize, usize)) {
        use rvpmu_sbi::client::{
            CounterCfgFlags as Cfg, CounterStartFlags as Start, CounterStopFlags as Stop,
        };
        use rvpmu_sbi::CounterInfo;
        use sbi_spec::binary::{
            RET_ERR_ALREADY_STARTED, RET_ERR_ALREADY_STOPPED, RET_ERR_INVALID_ADDRESS,
        };
        use sbi_spec::pmu::{event_type, firmware_event, hardware_event};
        let instructions = hardware_event::INSTRUCTIONS;
        let set_timer = event_type::FIRMWARE << 16 | firmware_event::SET_TIMER;

        let n = sbi().pmu_num_counters();
        check(
            "num_counters: 16 HPM + 16 firmware, alias window",
            n == NUM_COUNTERS,
            format_args!("{n}"),
        );
        let r = sbi().pmu_counter_get_info(HPM_BASE);
        check(
            "counter 3 is hpmcounter3, 64 bits",
            r.error == RET_SUCCESS
                && CounterInfo::decode(r.value as u64)
                    == CounterInfo::Hardware {
                        csr: 0xC03,
                        width: 64,
                    },
            format_args!("({}, {:#x})", r.error as isize, r.value),
        );
        let r = sbi().pmu_counter_get_info(FW_BASE);
        check(
            "counter 19 is a firmware counter",
            r.error == RET_SUCCESS
                && CounterInfo::decode(r.value as u64) == CounterInfo::Firmware { width: 64 },
            format_args!("({}, {:#x})", r.error as isize, r.value),
        );
        for i in [0, 1, 2, FW_BASE + 16] {
            let r = sbi().pmu_counter_get_info(i);
            ret(
                "get_info of cycle/time/instret/beyond",
                r,
                RET_ERR_INVALID_PARAM,
                None,
            );
        }

        hpm3_closed("hpmcounter3 not configured yet");

        // Instructions in VS-mode only (UINH): the guest's own loop.
        let vs_only = Cfg::CLEAR_VALUE | Cfg::SET_UINH;
        let r = sbi().pmu_counter_config_matching(HPM_BASE, HPM_MASK, vs_only, instructions, 0);
        ret(
            "config_matching instructions -> counter 3",
            r,
            RET_SUCCESS,
            Some(3),
        );
        let r = sbi().pmu_counter_config_matching(HPM_BASE, HPM_MASK, vs_only, instructions, 0);
        ret(
            "a second instructions counter (one counter per event)",
            r,
            RET_ERR_NOT_SUPPORTED,
            None,
        );
        let r = sbi().pmu_counter_start(HPM_BASE, 1, Start::INIT_VALUE, 1000);
        ret("start counter 3 at 1000", r, RET_SUCCESS, None);
        let v = hpm3();
        check(
            "hpmcounter3 read directly after start at 1000",
            (1000..1100).contains(&v),
            format_args!("{v}"),
        );
        let r = sbi().pmu_counter_start(HPM_BASE, 1, Start::empty(), 0);
        ret("start again", r, RET_ERR_ALREADY_STARTED, None);
        let (d1, d2) = (loop_delta(1000), loop_delta(2000));
        check(
            "1000 more loop iterations count 2000 more guest instructions",
            d2.wrapping_sub(d1) == 2000,
            format_args!("{d1} and {d2}"),
        );
        let (g_call, i_call) = bracket(true);
        let (g_none, i_none) = bracket(false);
        check(
            "the guest's counter does not count the hypervisor or firmware",
            g_call <= g_none + 1 && i_call > i_none + 100,
            format_args!("guest {g_call} vs {g_none}, all modes {i_call} vs {i_none}"),
        );
        println!(
            "vs-check: across one PMU call the guest's counter advanced {g_call} ({g_none} without the call), instret (every mode) {i_call} ({i_none})"
        );

        // Stop: the value holds.
        let r = sbi().pmu_counter_stop(HPM_BASE, 1, Stop::empty());
        ret("stop counter 3", r, RET_SUCCESS, None);
        let (a, b) = (hpm3(), {
            loop_delta(100);
            hpm3()
        });
        check(
            "a stopped counter holds",
            a == b,
            format_args!("{a} then {b}"),
        );
        let r = sbi().pmu_counter_stop(HPM_BASE, 1, Stop::empty());
        ret("stop again", r, RET_ERR_ALREADY_STOPPED, None);

        // Snapshot in guest memory.
        let shared = &raw mut SHARED;
        // SAFETY: the address of our own static (guest-physical: satp 0).
        let page = unsafe { (&raw mut (*shared).snapshot) as usize };
        let r = sbi().pmu_snapshot_set_shmem(Some(0x1000_0000));
        ret(
            "snapshot outside guest RAM",
            r,
            RET_ERR_INVALID_ADDRESS,
            None,
        );
        let r = sbi().pmu_snapshot_set_shmem(Some(page as u64 + 8));
        ret("snapshot not page-aligned", r, RET_ERR_INVALID_PARAM, None);
        let r = sbi().pmu_snapshot_set_shmem(Some((ram.1 - 4096) as u64));
        ret("snapshot in the last guest page", r, RET_SUCCESS, None);
        let r = sbi().pmu_snapshot_set_shmem(Some(ram.1 as u64));
        ret(
            "snapshot just past guest RAM",
            r,
            RET_ERR_INVALID_ADDRESS,
            None,
        );
        let r = sbi().pmu_snapshot_set_shmem(Some(page as u64));
        ret("snapshot in guest RAM", r, RET_SUCCESS, None);
        let r = sbi().pmu_counter_start(HPM_BASE, 1, Start::empty(), 0);
        ret("start counter 3 again", r, RET_SUCCESS, None);
        let r = sbi().pmu_counter_stop(HPM_BASE, 1, Stop::TAKE_SNAPSHOT);
        ret("stop with TAKE_SNAPSHOT", r, RET_SUCCESS, None);
        // SAFETY: the hypervisor wrote it during the call, nobody since.
        let snap = unsafe { core::ptr::read_volatile(&raw const (*shared).snapshot[1]) };
        let now = hpm3();
        check(
            "the snapshot holds the stopped counter's value",
            snap == now && now > 1000,
            format_args!("{snap} vs {now}"),
        );

        // event_get_info in guest memory: instructions yes, raw no (the
        // guest gets no raw rows), SET_TIMER yes, ILLEGAL_INSN no.
        // SAFETY: the address of our own static.
        let info = unsafe { (&raw mut (*shared).info) as usize };
        let entries: [[u32; 4]; 4] = [
            [instructions as u32, 0, 0, 0],
            [0x20000, 0, 5, 0],
            [set_timer as u32, 0, 0, 0],
            [
                (event_type::FIRMWARE << 16 | firmware_event::ILLEGAL_INSN) as u32,
                7,
                0,
                0,
            ],
        ];
        // SAFETY: our own static, not referenced elsewhere.
        unsafe { core::ptr::write_volatile(&raw mut (*shared).info, entries) };
        let r = sbi().pmu_event_get_info(info as u64, 4);
        ret("event_get_info", r, RET_SUCCESS, None);
        // SAFETY: written by the hypervisor during the call.
        let out = unsafe { core::ptr::read_volatile(&raw const (*shared).info) };
        let supported = out.map(|e| e[1]);
        check(
            "event_get_info: instructions, SET_TIMER supported; raw, ILLEGAL_INSN not",
            supported == [1, 0, 1, 0],
            format_args!("{supported:?}"),
        );
        let r = sbi().pmu_event_get_info(0x1000_0000, 1);
        ret(
            "event_get_info outside guest RAM",
            r,
            RET_ERR_INVALID_ADDRESS,
            None,
        );
        let r = sbi().pmu_event_get_info(info as u64 + 8, 1);
        ret("event_get_info misaligned", r, RET_ERR_INVALID_PARAM, None);
        // The last entry of guest RAM (in the page the snapshot had above,
        // past the DTB), and an array of two running past it: refused
        // whole, the entry inside not written.
        let last = (ram.1 - 16) as *mut [u32; 4];
        // SAFETY: guest RAM that nothing else of vs-check's uses.
        unsafe { core::ptr::write_volatile(last, [instructions as u32, 7, 0, 0]) };
        let r = sbi().pmu_event_get_info(last as u64, 2);
        ret(
            "event_get_info running past guest RAM",
            r,
            RET_ERR_INVALID_ADDRESS,
            None,
        );
        // SAFETY: as above.
        let out = unsafe { core::ptr::read_volatile(last) }[1];
        check(
            "event_get_info running past guest RAM wrote nothing",
            out == 7,
            format_args!("output {out}"),
        );
        let r = sbi().pmu_event_get_info(last as u64, 1);
        ret("event_get_info in the last 16 bytes", r, RET_SUCCESS, None);
        // SAFETY: as above.
        let out = unsafe { core::ptr::read_volatile(last) }[1];
        check(
            "event_get_info in the last 16 bytes: instructions supported",
            out == 1,
            format_args!("output {out}"),
        );

        // A firmware counter: SET_TIMER, read with fw_read.
        let r = sbi().pmu_counter_config_matching(
            FW_BASE,
            0xffff,
            Cfg::CLEAR_VALUE | Cfg::AUTO_START,
            set_timer,
            0,
        );
        ret(
            "config_matching SET_TIMER -> counter 19",
            r,
            RET_SUCCESS,
            Some(FW_BASE),
        );
        for _ in 0..3 {
            sbi().set_timer(u64::MAX);
        }
        let r = sbi().pmu_counter_fw_read(FW_BASE);
        ret("fw_read SET_TIMER after 3 calls", r, RET_SUCCESS, Some(3));
        let r = sbi().pmu_counter_fw_read_hi(FW_BASE);
        ret("fw_read_hi", r, RET_SUCCESS, Some(0));
        let r = sbi().pmu_counter_fw_read(HPM_BASE);
        ret(
            "fw_read of a hardware counter",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );

        // Malformed calls: the spec's errors.
        let r = sbi().pmu_counter_config_matching(HPM_BASE, 0, Cfg::empty(), instructions, 0);
        ret(
            "config_matching with an empty set",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );
        let bad_flag = rvpmu_sbi::client::ecall(
            sbi_spec::pmu::EID_PMU,
            sbi_spec::pmu::COUNTER_CONFIG_MATCHING,
            [HPM_BASE, HPM_MASK, 1 << 8, instructions, 0, 0],
        );
        check(
            "config_matching with a reserved flag bit",
            bad_flag.0 as usize == RET_ERR_INVALID_PARAM,
            format_args!("{}", bad_flag.0),
        );
        let r = sbi().pmu_counter_config_matching(1, 1, Cfg::empty(), instructions, 0);
        ret(
            "config_matching on time (a hole)",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );
        let r = sbi().pmu_counter_config_matching(usize::MAX, 3, Cfg::empty(), instructions, 0);
        ret(
            "config_matching with a wrapping set",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );
        let r = sbi().pmu_counter_config_matching(HPM_BASE, HPM_MASK, Cfg::empty(), 0x20000, 5);
        ret(
            "config_matching of a raw event",
            r,
            RET_ERR_NOT_SUPPORTED,
            None,
        );
        let r = sbi().pmu_counter_config_matching(HPM_BASE, HPM_MASK, Cfg::empty(), 1 << 20 | 2, 0);
        ret(
            "config_matching with reserved event_idx bits",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );
        for (fid, what) in [
            (
                sbi_spec::pmu::COUNTER_START,
                "start with a reserved flag bit",
            ),
            (sbi_spec::pmu::COUNTER_STOP, "stop with a reserved flag bit"),
        ] {
            let (e, _) = rvpmu_sbi::client::ecall(
                sbi_spec::pmu::EID_PMU,
                fid,
                [HPM_BASE, 1, 1 << 2, 0, 0, 0],
            );
            check(
                what,
                e as usize == RET_ERR_INVALID_PARAM,
                format_args!("{e}"),
            );
        }
        let r = sbi().pmu_counter_start(HPM_BASE, 1, Start::INIT_VALUE | Start::INIT_SNAPSHOT, 0);
        ret(
            "start with INIT_VALUE and INIT_SNAPSHOT",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );
        let r = sbi().pmu_counter_start(HPM_BASE + 1, 1, Start::empty(), 0);
        ret(
            "start of an unconfigured counter",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );
        let r = sbi().pmu_counter_start(NUM_COUNTERS, 1, Start::empty(), 0);
        ret("start beyond the counters", r, RET_ERR_INVALID_PARAM, None);

        // Release, then the cost of each call (every mode, icount-exact).
        let r = sbi().pmu_counter_stop(HPM_BASE, 1, Stop::RESET);
        ret(
            "stop with RESET (already stopped)",
            r,
            RET_ERR_ALREADY_STOPPED,
            None,
        );
        let r = sbi().pmu_counter_start(HPM_BASE, 1, Start::empty(), 0);
        ret(
            "a released counter cannot start",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );
        hpm3_closed("hpmcounter3 released");
        let cfg = (Cfg::CLEAR_VALUE | Cfg::SET_UINH).bits();
        let calls: [(&str, usize, [usize; 6], usize); 8] = [
            ("num_counters", 0, [0; 6], RET_SUCCESS),
            ("get_info", 1, [HPM_BASE, 0, 0, 0, 0, 0], RET_SUCCESS),
            (
                "config_matching",
                2,
                [HPM_BASE, HPM_MASK, cfg, instructions, 0, 0],
                RET_SUCCESS,
            ),
            ("start_value", 3, [HPM_BASE, 1, 1, 0, 0, 0], RET_SUCCESS),
            ("stop", 4, [HPM_BASE, 1, 0, 0, 0, 0], RET_SUCCESS),
            ("start_current", 3, [HPM_BASE, 1, 0, 0, 0, 0], RET_SUCCESS),
            ("stop_reset", 4, [HPM_BASE, 1, 1, 0, 0, 0], RET_SUCCESS),
            ("fw_read", 5, [FW_BASE, 0, 0, 0, 0, 0], RET_SUCCESS),
        ];
        let mut line = rvpmu_rt::text::Text::<256>::new();
        for (name, fid, a, want) in calls {
            let (d, r) = cost(fid, a);
            ret(name, r, want, None);
            let _ = core::fmt::Write::write_fmt(&mut line, format_args!(" {name} {d}"));
        }
        println!(
            "vs-check: guest PMU call cost in instructions (every mode):{}",
            line.as_str()
        );
    }

    #[no_mangle]
    extern "C" fn kmain(hartid: usize, dtb: usize, _instret: u64) -> ! {
        console::init();
        let (ram, bootargs) = read_dt(dtb);
        println!(
            "vs-check: hart {hartid}, guest RAM {:#x}..{:#x}, bootargs \"{bootargs}\"",
            ram.0, ram.1
        );

        // BASE.
        ret(
            "spec version 3.0",
            sbi().base_spec_version(),
            RET_SUCCESS,
            Some(3 << 24),
        );
        ret(
            "impl id rvhv",
            sbi().base_impl_id(),
            RET_SUCCESS,
            Some(0x7276_6876),
        );
        for (eid, want) in [
            (EID_BASE, 1),
            (EID_TIME, 1),
            (EID_DBCN, 1),
            (EID_SRST, 1),
            (sbi_spec::pmu::EID_PMU, 1),
            (sbi_spec::sta::EID_STA, 1),
            (sbi_spec::hsm::EID_HSM, 1),
            (sbi_spec::spi::EID_SPI, 1),
            (sbi_spec::rfnc::EID_RFNC, 1),
            (0x1234_5678, 0),
        ] {
            let r = sbi().base_probe_extension(eid);
            ret("probe_extension", r, RET_SUCCESS, Some(want));
        }
        let r = raw(0x1234_5678, 0);
        ret("unknown extension", r, RET_ERR_NOT_SUPPORTED, None);
        let r = raw(EID_BASE, 99);
        ret("unknown BASE function", r, RET_ERR_NOT_SUPPORTED, None);

        // DBCN: a forwarded write (the line must reach the console), then
        // buffers outside guest RAM.
        let line = b"vs-check: dbcn write forwarded\n";
        let r = sbi().console_write(line.len(), line.as_ptr() as usize, 0);
        ret("dbcn write", r, RET_SUCCESS, Some(line.len()));
        for (len, lo, hi) in [
            (1, 0x1000_0000, 0),
            (16, ram.1 - 8, 0),
            (2, ram.0 - 1, 0),
            (1, ram.0, 1),
            (usize::MAX, ram.0, 0),
        ] {
            let r = sbi().console_write(len, lo, hi);
            ret(
                "dbcn write outside guest RAM",
                r,
                RET_ERR_INVALID_PARAM,
                Some(0),
            );
        }
        for &b in b"vs-check: dbcn byte forwarded\n" {
            ret(
                "dbcn write_byte",
                sbi().console_write_byte(b),
                RET_SUCCESS,
                None,
            );
        }

        // TIME: one interrupt from vstimecmp, not before its deadline.
        let deadline = time() + 10_000;
        ret("set_timer", sbi().set_timer(deadline), RET_SUCCESS, None);
        // SAFETY: enables the supervisor timer interrupt, which the trap
        // handler serves (it pushes the timer out).
        unsafe {
            core::arch::asm!("csrs sie, {0}", "csrsi sstatus, 2", in(reg) 1usize << 5);
        }
        while TIMER_IRQS.load(SeqCst) == 0 && time() < deadline + 1_000_000 {
            // SAFETY: stalls until an interrupt.
            unsafe { core::arch::asm!("wfi") };
        }
        let at = time();
        // SAFETY: interrupts off again.
        unsafe { core::arch::asm!("csrci sstatus, 2") };
        check(
            "timer interrupt after its deadline",
            TIMER_IRQS.load(SeqCst) == 1 && at >= deadline,
            format_args!(
                "{} interrupts, time {at} deadline {deadline}",
                TIMER_IRQS.load(SeqCst)
            ),
        );

        // HSM, IPI, RFENCE for the one vCPU.
        let started = sbi_spec::hsm::hart_state::STARTED;
        ret(
            "hart 0 started",
            sbi().hart_get_status(0),
            RET_SUCCESS,
            Some(started),
        );
        ret(
            "no hart 1",
            sbi().hart_get_status(1),
            RET_ERR_INVALID_PARAM,
            None,
        );
        let r = sbi().hart_start(0, 0x8020_0000, 0);
        ret(
            "hart 0 already started",
            r,
            sbi_spec::binary::RET_ERR_ALREADY_AVAILABLE,
            None,
        );
        // SAFETY: enables the software interrupt, which the handler serves.
        unsafe { core::arch::asm!("csrs sie, {0}", "csrsi sstatus, 2", in(reg) 2usize) };
        ret("ipi to hart 0", sbi().send_ipi(1, 0), RET_SUCCESS, None);
        // SAFETY: interrupts off again.
        unsafe { core::arch::asm!("csrci sstatus, 2") };
        check(
            "ipi delivered once",
            SOFT_IRQS.load(SeqCst) == 1,
            format_args!("{} interrupts", SOFT_IRQS.load(SeqCst)),
        );
        ret(
            "ipi to hart 1",
            sbi().send_ipi(2, 0),
            RET_ERR_INVALID_PARAM,
            None,
        );
        let rf = |fid| sbi().remote_fence(fid, 1, 0, 0, usize::MAX, 0);
        ret("remote fence.i", rf(0), RET_SUCCESS, None);
        ret("remote sfence.vma", rf(1), RET_SUCCESS, None);
        ret("remote hfence.gvma", rf(4), RET_ERR_NOT_SUPPORTED, None);

        // Exceptions: the counters read directly, without a trap.
        let before = EXCEPTIONS.load(SeqCst);
        let (c, i): (usize, usize);
        // SAFETY: reads counters (hcounteren lets them through).
        unsafe { core::arch::asm!("csrr {0}, cycle", "csrr {1}, instret", out(reg) c, out(reg) i) };
        check(
            "cycle, time, instret readable",
            EXCEPTIONS.load(SeqCst) == before && c != 0 && i != 0,
            format_args!("{} traps", EXCEPTIONS.load(SeqCst) - before),
        );
        // A write to a read-only CSR: illegal everywhere, redirected by the
        // firmware to the hypervisor, reflected to us.
        // SAFETY: traps; the handler steps over it.
        unsafe { core::arch::asm!("csrw cycle, zero") };
        check(
            "illegal instruction reflected",
            EXCEPTIONS.load(SeqCst) == before + 1 && LAST_CAUSE.load(SeqCst) == 2,
            format_args!("cause {}", LAST_CAUSE.load(SeqCst)),
        );
        // hstatus from VS-mode (csrr a0, hstatus).
        reads_as_illegal::<0x6000_2573>("virtual instruction seen as illegal instruction");

        pmu_checks(ram);

        // SRST with a reserved reset type: the host firmware's answer.
        let r = sbi().system_reset(0x1000_0000, 0);
        ret(
            "srst reserved type forwarded",
            r,
            RET_ERR_INVALID_PARAM,
            None,
        );

        let (n, failed) = CHECKS.counts();
        if failed == 0 {
            println!("vs-check: all {n} checks passed");
        } else {
            println!("vs-check: {failed} of {n} checks failed");
        }
        if bootargs.split(' ').any(|a| a == "vs-check.end=fault") {
            println!("vs-check: loading from guest-physical 0x10000000");
            // SAFETY: not mapped for the guest: the hypervisor stops us.
            let v = unsafe { core::ptr::read_volatile(0x1000_0000 as *const u8) };
            println!("vs-check: FAIL the load returned {v}");
            runtime::shutdown_failure()
        }
        if failed == 0 {
            runtime::shutdown()
        } else {
            runtime::shutdown_failure()
        }
    }
}
