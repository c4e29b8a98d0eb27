//! sbi-check: an S-mode payload that checks the firmware's non-PMU SBI calls
//! (BASE, TIME, IPI, RFENCE, HSM, SRST, DBCN, legacy), trap redirection,
//! PMP protection and the device-tree reservation, on every hart QEMU gives
//! it. Prints one line per failed check and a summary, then shuts down
//! (with "system failure" if anything failed). Run by `cargo xtask firmware
//! --test`. Entry, stacks, SMP bring-up, trap vector and console are the
//! S-mode runtime it shares with the conformance kernel (`rvpmu_rt`); its SBI
//! calls go through `rvpmu_sbi::client`. Bare-metal; an empty stub on the
//! host.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `payload` | |
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("this is a bare-metal program; build it with `cargo xtask firmware`");
}

#[cfg(target_os = "none")]
mod payload {
    use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use rvpmu_rt::runtime::{hartid, park, secondary_entry, MAX_HARTS};
    use rvpmu_rt::tally::Tally;
    use rvpmu_rt::{console, println};
    use rvpmu_sbi::client::{ecall, sbi as client, CounterCfgFlags, CounterStopFlags};
    use rvpmu_sbi::event::FwEvent;
    use rvpmu_sbi::SbiRet;
    use sbi_spec::base::EID_BASE;
    use sbi_spec::binary::{
        RET_ERR_ALREADY_AVAILABLE, RET_ERR_INVALID_ADDRESS, RET_ERR_INVALID_PARAM,
        RET_ERR_NOT_SUPPORTED, RET_SUCCESS,
    };
    use sbi_spec::dbcn::EID_DBCN;
    use sbi_spec::hsm::EID_HSM;
    use sbi_spec::legacy::{
        LEGACY_CONSOLE_GETCHAR, LEGACY_CONSOLE_PUTCHAR, LEGACY_REMOTE_FENCE_I,
        LEGACY_REMOTE_SFENCE_VMA, LEGACY_SEND_IPI, LEGACY_SET_TIMER,
    };
    use sbi_spec::pmu::EID_PMU;
    use sbi_spec::rfnc::EID_RFNC;
    use sbi_spec::spi::EID_SPI as EID_IPI;
    use sbi_spec::srst::EID_SRST;
    use sbi_spec::sta::EID_STA;
    use sbi_spec::time::EID_TIME;

    rvpmu_rt::entry!();

    const FW_BASE: usize = 0x8000_0000;
    const MAGIC: usize = 0x5eed_0000;
    /// Bound for every wait on another hart (loop iterations).
    const PATIENCE: usize = 20_000_000;

    const SUCCESS: isize = RET_SUCCESS as isize;
    const ERR_NOT_SUPPORTED: isize = RET_ERR_NOT_SUPPORTED as isize;
    const ERR_INVALID_PARAM: isize = RET_ERR_INVALID_PARAM as isize;
    const ERR_INVALID_ADDRESS: isize = RET_ERR_INVALID_ADDRESS as isize;
    const ERR_ALREADY_AVAILABLE: isize = RET_ERR_ALREADY_AVAILABLE as isize;

    // ---- shared state (this is a test program: plain atomics) ----
    static CHECKS: Tally = Tally::new();
    static ALIVE: [AtomicUsize; MAX_HARTS] = [const { AtomicUsize::new(0) }; MAX_HARTS];
    static IPIS: [AtomicUsize; MAX_HARTS] = [const { AtomicUsize::new(0) }; MAX_HARTS];
    static TIMER_IRQS: [AtomicUsize; MAX_HARTS] = [const { AtomicUsize::new(0) }; MAX_HARTS];
    static STORM_DONE: AtomicUsize = AtomicUsize::new(0);
    static STORM_ERRORS: AtomicUsize = AtomicUsize::new(0);
    static GO_STOP: AtomicUsize = AtomicUsize::new(0);
    static NHARTS: AtomicUsize = AtomicUsize::new(0);
    static STORM_READY: AtomicUsize = AtomicUsize::new(0);
    static START_STORM: AtomicUsize = AtomicUsize::new(0);
    const STORM_ROUNDS: usize = 50;
    static RESUMED: [AtomicUsize; MAX_HARTS] = [const { AtomicUsize::new(0) }; MAX_HARTS];
    /// Last exception per hart: (scause, stval, sepc).
    static EXC: [[AtomicUsize; 3]; MAX_HARTS] =
        [const { [const { AtomicUsize::new(0) }; 3] }; MAX_HARTS];

    /// The client's answer as (error, value), as the checks compare it.
    fn pair(r: SbiRet) -> (isize, usize) {
        (r.error as isize, r.value)
    }

    fn check(name: &str, ok: bool) {
        if !CHECKS.record(ok) {
            println!("sbi-check: FAIL {name} (hart {})", hartid());
        }
    }

    fn check_eq(name: &str, got: isize, want: isize) {
        if !CHECKS.record(got == want) {
            println!("sbi-check: FAIL {name}: got {got}, want {want}");
        }
    }

    fn wait_until(name: &str, mut cond: impl FnMut() -> bool) -> bool {
        for _ in 0..PATIENCE {
            if cond() {
                return true;
            }
            core::hint::spin_loop();
        }
        check(name, false);
        false
    }

    fn rdtime() -> u64 {
        let t: u64;
        // SAFETY: reads the time CSR, which the firmware opens to S-mode
        // (mcounteren.TM); a CSR read touches no memory and no other state.
        unsafe { core::arch::asm!("rdtime {0}", out(reg) t) };
        t
    }
    fn sip() -> usize {
        let v: usize;
        // SAFETY: reads sip, an S-mode CSR; no memory, no side effect.
        unsafe { core::arch::asm!("csrr {0}, sip", out(reg) v) };
        v
    }
    fn clear_ssip() {
        // SAFETY: clears sip.SSIP (S-mode writable), a pending-interrupt
        // bit; it touches no memory and only removes a pending IPI.
        unsafe { core::arch::asm!("csrc sip, {0}", in(reg) 2usize) };
    }
    const SIP_SSIP: usize = 1 << 1;
    const SIP_STIP: usize = 1 << 5;

    /// Supervisor trap handler: counts IPIs and timer interrupts; records
    /// exceptions and steps over the faulting instruction.
    #[no_mangle]
    extern "C" fn trap_handler(cause: usize, epc: usize, tval: usize) {
        let me = hartid();
        if (cause as isize) < 0 {
            match cause & 0xff {
                1 => {
                    clear_ssip();
                    IPIS[me].fetch_add(1, SeqCst);
                }
                5 => {
                    pair(client().set_timer(u64::MAX));
                    TIMER_IRQS[me].fetch_add(1, SeqCst);
                }
                _ => {}
            }
            return;
        }
        EXC[me][0].store(cause, SeqCst);
        EXC[me][1].store(tval, SeqCst);
        EXC[me][2].store(epc, SeqCst);
        // SAFETY: every exception this payload takes is one it provokes
        // on purpose (faulting or misaligned loads and stores, a misaligned
        // AMO, illegal CSR accesses), so sepc is the address of an
        // instruction in its own .text: mapped (no paging, satp = 0),
        // readable from S-mode and 2-byte aligned (IALIGN 16 with C). The
        // low halfword holds the length bits of the instruction.
        let insn = unsafe { core::ptr::read_volatile(epc as *const u16) };
        let len = if insn & 3 == 3 { 4 } else { 2 };
        // SAFETY: resumes after the faulting instruction, which then never
        // took effect. The provoking asm! blocks expect exactly that: their
        // outputs are plain registers (whatever the register held is a
        // valid usize/u64), they declare no memory effect that the skipped
        // access was needed for, and the runtime's trap vector plus this extern "C"
        // handler give back every register they had.
        unsafe { core::arch::asm!("csrw sepc, {0}", in(reg) epc + len) };
    }

    /// Count firmware event `code` on this hart while `f` runs, with a PMU
    /// firmware counter (config_matching CLEAR_VALUE|AUTO_START, fw_read,
    /// stop with RESET). `None` if the PMU refuses the event.
    fn fw_count(code: usize, f: impl FnOnce()) -> Option<usize> {
        // The firmware counters, as Linux finds them (counter_info bit 63).
        let fw_mask = (0..64).fold(0usize, |m, i| {
            let (e, info) = pair(client().pmu_counter_get_info(i));
            if e == SUCCESS && (info as isize) < 0 {
                m | 1 << i
            } else {
                m
            }
        });
        let event = FwEvent::from_code(code as u16)?;
        let (e, idx) = pair(client().pmu_counter_config_matching(
            0,
            fw_mask,
            CounterCfgFlags::CLEAR_VALUE | CounterCfgFlags::AUTO_START,
            event.event_idx() as usize,
            0,
        ));
        if e != SUCCESS {
            return None;
        }
        f();
        let (e, v) = pair(client().pmu_counter_fw_read(idx));
        pair(client().pmu_counter_stop(idx, 1, CounterStopFlags::RESET));
        (e == SUCCESS).then_some(v)
    }

    fn illegal() {
        // SAFETY: an S-mode read of an M-mode CSR raises an illegal
        // instruction exception, delegated to S-mode; trap_handler (stvec, set at
        // entry) records it and resumes 4 bytes on (norvc keeps the
        // instruction 4 bytes). The destination is x0: nothing is written.
        unsafe {
            core::arch::asm!(
                ".option push",
                ".option norvc",
                "csrr zero, mscratch",
                ".option pop"
            )
        };
    }

    fn take_exception(me: usize) -> (usize, usize, usize) {
        (
            EXC[me][0].swap(0, SeqCst),
            EXC[me][1].swap(0, SeqCst),
            EXC[me][2].swap(0, SeqCst),
        )
    }

    /// What the device tree says.
    struct Dt {
        harts: usize,
        has_h: bool,
        reserved_ok: bool,
    }

    fn read_dt(dtb: usize) -> Dt {
        let mut dt = Dt {
            harts: 0,
            has_h: false,
            reserved_ok: false,
        };
        // SAFETY: dtb is the a1 the firmware enters the payload with: the
        // address of the machine's flattened device tree in DRAM, readable
        // from S-mode (not in the PMP-protected firmware region), outside
        // this payload's image and stacks and written only here (`open_at`
        // removes NOP tokens in place), so it stays valid for the 'static
        // borrow. open_at checks the header and the whole tree first.
        let Ok(fdt) = (unsafe { rvpmu_dtb::open_at(dtb as *mut u8) }) else {
            return dt;
        };
        for node in fdt.all_nodes() {
            if node.property("device_type").and_then(|p| p.as_str()) == Some("cpu") {
                dt.harts += 1;
                if let Some(isa) = node.property("riscv,isa").and_then(|p| p.as_str()) {
                    let base = isa.split('_').next().unwrap_or("");
                    dt.has_h |= base.len() > 4 && base[4..].contains('h');
                }
            }
        }
        if let Some(resv) = fdt.find_node("/reserved-memory") {
            for child in resv.children() {
                let no_map = child.property("no-map").is_some();
                let covers = child
                    .reg()
                    .and_then(|mut r| r.next())
                    .map(|r| {
                        r.starting_address as usize == FW_BASE && r.size.unwrap_or(0) >= 0x1000
                    })
                    .unwrap_or(false);
                dt.reserved_ok |= no_map && covers;
            }
        }
        dt
    }

    /// Remote fences from this hart to all harts, many times, racing the
    /// other harts doing the same (deadlock freedom of the request slots).
    fn fence_storm(rounds: usize) {
        for i in 0..rounds {
            let calls = [
                pair(client().remote_fence(0, 0, usize::MAX, 0, 0, 0)),
                pair(client().remote_fence(1, 0, usize::MAX, 0x1000 * i, 0x2000, 0)),
                pair(client().remote_fence(2, 0, usize::MAX, 0, usize::MAX, i & 0xff)),
            ];
            for (e, _) in calls {
                if e != SUCCESS {
                    STORM_ERRORS.fetch_add(1, SeqCst);
                }
            }
        }
        STORM_DONE.fetch_add(1, SeqCst);
    }

    /// Started or resumed harts (the runtime's secondary entry).
    #[no_mangle]
    extern "C" fn secondary_main(hartid: usize, opaque: usize) -> ! {
        let (satp, sstatus): (usize, usize);
        // SAFETY: reads two S-mode CSRs; no memory, no other state.
        unsafe {
            core::arch::asm!("csrr {0}, satp", "csrr {1}, sstatus", out(reg) satp, out(reg) sstatus)
        };
        check(
            "secondary entry state (satp=0, SIE=0)",
            satp == 0 && sstatus & 2 == 0,
        );
        check("secondary opaque", opaque & !0xff == MAGIC);
        let round = opaque & 0xff;
        if round != 1 {
            ALIVE[hartid].fetch_add(1, SeqCst);
        }
        match round {
            1 => {
                // Take IPIs with interrupts on, then race remote fences;
                // the firmware counts what this hart received.
                // SAFETY: enables supervisor software interrupts (sie.SSIE,
                // sstatus.SIE). stvec is the runtime's trap vector, set before any Rust
                // code ran: it saves the caller-saved registers on the
                // current stack (RISC-V has no red zone below sp) and the
                // extern "C" trap_handler keeps the callee-saved ones, so the
                // interrupted code resumes with all its registers; trap_handler
                // touches only atomics, so it races with nothing.
                unsafe {
                    core::arch::asm!("csrs sie, {0}", "csrs sstatus, {1}", in(reg) 2usize, in(reg) 2usize)
                };
                let ipis = fw_count(7, || {
                    ALIVE[hartid].fetch_add(1, SeqCst);
                    wait_until("secondary receives IPI", || IPIS[hartid].load(SeqCst) >= 1);
                });
                check_eq(
                    "fw event IPI_RECEIVED (remote)",
                    ipis.map_or(-1, |v| v as isize),
                    1,
                );
                // Every hart sends STORM_ROUNDS fence.i to all; senders wait
                // for completion, so all have arrived once GO_STOP is set.
                let fences = fw_count(9, || {
                    STORM_READY.fetch_add(1, SeqCst);
                    wait_until("storm start", || START_STORM.load(SeqCst) != 0);
                    fence_storm(STORM_ROUNDS);
                    wait_until("stop order", || GO_STOP.load(SeqCst) != 0);
                });
                // From every other hart; a hart's fence to itself is local.
                let want = (STORM_ROUNDS * (NHARTS.load(SeqCst) - 1)) as isize;
                check_eq(
                    "fw event FENCE_I_RECEIVED (remote)",
                    fences.map_or(-1, |v| v as isize),
                    want,
                );
                // SAFETY: clears sstatus.SIE: turns interrupts off, which
                // only removes a way in to trap_handler.
                unsafe { core::arch::asm!("csrc sstatus, {0}", in(reg) 2usize) };
            }
            2 => {
                // Retentive suspend, woken by an IPI (SSIE on, SIE off).
                // SAFETY: sets sie.SSIE only; with sstatus.SIE clear the IPI
                // wakes the suspended hart (pending in sip) and no trap is
                // taken.
                unsafe { core::arch::asm!("csrs sie, {0}", in(reg) 2usize) };
                let (e, _) = pair(client().hart_suspend(0, 0, 0));
                check_eq("retentive suspend returns", e, SUCCESS);
                check("woken by the IPI", sip() & SIP_SSIP != 0);
                clear_ssip();
                RESUMED[hartid].fetch_add(1, SeqCst);
            }
            3 => {
                // SAFETY: as in round 2: sie.SSIE with sstatus.SIE clear
                // makes the IPI a wake-up source, never a trap here.
                unsafe { core::arch::asm!("csrs sie, {0}", in(reg) 2usize) };
                let (e, _) = pair(client().hart_suspend(0x8000_0000, secondary_entry(), MAGIC | 4));
                check_eq("non-retentive suspend must not return", e, 1000);
            }
            4 => {
                clear_ssip();
                RESUMED[hartid].fetch_add(1, SeqCst);
            }
            _ => {}
        }
        let (e, _) = pair(client().hart_stop());
        check_eq("hart_stop must not return", e, 1000);
        park()
    }

    fn status(h: usize) -> isize {
        let (e, v) = pair(client().hart_get_status(h));
        if e == SUCCESS {
            v as isize
        } else {
            e
        }
    }

    /// The boot hart (from the runtime's `_start`).
    #[no_mangle]
    extern "C" fn kmain(me: usize, dtb: usize, instret: u64) -> ! {
        console::init();
        println!("sbi-check: instructions-to-s-mode={instret} boot-hart={me}");
        let dt = read_dt(dtb);
        NHARTS.store(dt.harts, SeqCst);
        println!(
            "sbi-check: harts={} h={} dtb={dtb:#x}",
            dt.harts, dt.has_h as usize
        );

        // BASE
        check_eq(
            "spec version 3.0",
            pair(client().base_spec_version()).1 as isize,
            0x0300_0000,
        );
        check_eq(
            "impl id",
            pair(client().base_impl_id()).1 as isize,
            0x7276_706d,
        );
        for (name, eid) in [
            ("TIME", EID_TIME),
            ("IPI", EID_IPI),
            ("RFNC", EID_RFNC),
            ("HSM", EID_HSM),
            ("SRST", EID_SRST),
            ("DBCN", EID_DBCN),
            ("legacy putchar", LEGACY_CONSOLE_PUTCHAR),
        ] {
            let (e, v) = pair(client().base_probe_extension(eid));
            check(name, e == SUCCESS && v == 1);
        }
        check_eq(
            "probe unknown",
            pair(client().base_probe_extension(0x0bad_e1d0)).1 as isize,
            0,
        );
        check_eq(
            "unknown extension",
            ecall(0x0bad_e1d0, 0, [0, 0, 0, 0, 0, 0]).0,
            ERR_NOT_SUPPORTED,
        );
        check_eq(
            "unknown BASE function",
            ecall(EID_BASE, 99, [0, 0, 0, 0, 0, 0]).0,
            ERR_NOT_SUPPORTED,
        );
        // A probe answer must be true: offered extensions answer, absent ones do not.
        let pmu = pair(client().base_probe_extension(EID_PMU)).1;
        let (e, _) = ecall(EID_PMU, 0, [0, 0, 0, 0, 0, 0]);
        check("PMU probe truthful", (pmu != 0) == (e == SUCCESS));
        let sta = pair(client().base_probe_extension(EID_STA)).1;
        let (e, _) = pair(client().sta_set_shmem(None));
        check("STA probe truthful", (sta != 0) == (e == SUCCESS));

        // DBCN and legacy console
        let msg = b"sbi-check: dbcn write ok\n";
        check_eq(
            "dbcn write",
            pair(client().console_write(msg.len(), msg.as_ptr() as usize, 0)).1 as isize,
            msg.len() as isize,
        );
        for &b in b"sbi-check: dbcn byte ok\n" {
            pair(client().console_write_byte(b));
        }
        for &b in b"sbi-check: legacy putchar ok\n" {
            client().legacy(LEGACY_CONSOLE_PUTCHAR, [b as usize, 0, 0, 0]);
        }
        check_eq(
            "dbcn write from firmware memory",
            pair(client().console_write(8, FW_BASE, 0)).0,
            ERR_INVALID_PARAM,
        );
        check_eq(
            "dbcn write, high address bits",
            pair(client().console_write(8, msg.as_ptr() as usize, 1)).0,
            ERR_INVALID_PARAM,
        );
        check_eq(
            "dbcn write, wrapping range",
            pair(client().console_write(usize::MAX, msg.as_ptr() as usize, 0)).0,
            ERR_INVALID_PARAM,
        );
        let mut inbuf = [0u8; 8];
        let (e, n) = pair(client().console_read(inbuf.len(), inbuf.as_mut_ptr() as usize, 0));
        check("dbcn read (no input)", e == SUCCESS && n == 0);
        check_eq(
            "dbcn read into firmware memory",
            pair(client().console_read(8, FW_BASE + 0x100, 0)).0,
            ERR_INVALID_PARAM,
        );
        check_eq(
            "legacy getchar (no input)",
            client().legacy(LEGACY_CONSOLE_GETCHAR, [0, 0, 0, 0]),
            -1,
        );

        // Device tree and PMP: the firmware region is reserved and denied.
        check(
            "DT /reserved-memory covers the firmware, no-map",
            dt.reserved_ok,
        );
        let v: usize;
        // SAFETY: the firmware's PMP denies S-mode this load; the access
        // fault is delegated to S-mode and trap_handler records it and skips the
        // load (v is then whatever the register held, unused). Were PMP
        // missing, it would read firmware memory, no object of this program.
        unsafe { core::arch::asm!("ld {0}, 0({1})", out(reg) v, in(reg) FW_BASE) };
        let _ = v;
        let (cause, tval, _) = take_exception(me);
        check(
            "load from firmware -> load access fault",
            cause == 5 && tval == FW_BASE,
        );
        // SAFETY: as the load above: PMP denies the store, trap_handler skips it.
        // Were PMP missing, 8 bytes of firmware memory would change (the
        // check then fails); none of this program's memory is touched.
        unsafe { core::arch::asm!("sd zero, 16({0})", in(reg) FW_BASE) };
        let (cause, tval, _) = take_exception(me);
        check(
            "store to firmware -> store access fault",
            cause == 7 && tval == FW_BASE + 16,
        );

        // Illegal instruction redirected to S with its bits (or 0) in stval.
        let at: usize;
        // SAFETY: as in `illegal`: the M-mode CSR read traps, trap_handler skips
        // its 4 bytes, x0 is its destination; `la` then only computes the
        // address of the label.
        unsafe {
            core::arch::asm!(".option push", ".option norvc", "1: csrr zero, mscratch", ".option pop", "la {0}, 1b", out(reg) at)
        };
        let (cause, tval, epc) = take_exception(me);
        check(
            "illegal instruction redirected",
            cause == 2 && epc == at && (tval == 0 || tval == 0x3400_2073),
        );

        // Misaligned accesses: emulated or done by the hart, never wrong.
        let buf = [0x1122_3344_5566_7788u64, 0x99aa_bbcc_ddee_ff00u64];
        let p = buf.as_ptr() as usize + 3;
        let got: u64;
        // SAFETY: reads bytes 3..11 of `buf`, a live 16-byte local whose
        // address was exposed above; a misaligned load is done by the hart
        // or emulated by the firmware, either way it only reads.
        unsafe { core::arch::asm!("ld {0}, 0({1})", out(reg) got, in(reg) p) };
        check("misaligned load value", got == 0xeeff_0011_2233_4455);
        let mut wbuf = [0u64; 2];
        let q = wbuf.as_mut_ptr() as usize + 5;
        // SAFETY: writes bytes 5..13 of `wbuf`, a live, mutable 16-byte
        // local whose address was exposed above and which nothing else
        // borrows; done by the hart or emulated by the firmware.
        unsafe { core::arch::asm!("sd {0}, 0({1})", in(reg) 0x0102_0304_0506_0708u64, in(reg) q) };
        check(
            "misaligned store value",
            wbuf[0] == 0x0607_0800_0000_0000 && wbuf[1] == 0x0000_0001_0203_0405,
        );
        // A misaligned AMO cannot be emulated: S-mode gets it.
        let r = wbuf.as_mut_ptr() as usize + 1;
        // SAFETY: `r` is inside `wbuf` (bytes 1..5). The misaligned AMO
        // faults and trap_handler skips it; a hart that did it anyway would add
        // zero there, changing nothing.
        unsafe { core::arch::asm!("amoadd.w zero, zero, ({0})", in(reg) r) };
        let (cause, tval, _) = take_exception(me);
        check(
            "misaligned AMO redirected",
            (cause == 4 || cause == 6) && tval == r,
        );

        // IPI to self (SIE off: only the pending bit).
        check_eq("send_ipi self", pair(client().send_ipi(1, me)).0, SUCCESS);
        check("self IPI pending", sip() & SIP_SSIP != 0);
        clear_ssip();
        check_eq(
            "send_ipi bad hart",
            pair(client().send_ipi(1, 64)).0,
            ERR_INVALID_PARAM,
        );
        check_eq(
            "send_ipi mask overflow",
            pair(client().send_ipi(3, usize::MAX - 1)).0,
            ERR_INVALID_PARAM,
        );
        let self_mask: usize = 1 << me;
        check_eq(
            "legacy send_ipi",
            client().legacy(
                LEGACY_SEND_IPI,
                [&self_mask as *const usize as usize, 0, 0, 0],
            ),
            0,
        );
        check("legacy IPI pending", sip() & SIP_SSIP != 0);
        clear_ssip();
        client().legacy(LEGACY_SEND_IPI, [FW_BASE, 0, 0, 0]);
        let (cause, tval, _) = take_exception(me);
        check(
            "legacy hart mask in firmware memory -> load access fault",
            cause == 5 && tval == FW_BASE,
        );

        // RFENCE return values.
        check_eq(
            "remote fence.i all",
            pair(client().remote_fence(0, 0, usize::MAX, 0, 0, 0)).0,
            SUCCESS,
        );
        check_eq(
            "remote sfence.vma range",
            pair(client().remote_fence(1, 1 << me, 0, 0x8000_0000, 0x3000, 0)).0,
            SUCCESS,
        );
        check_eq(
            "remote sfence.vma.asid",
            pair(client().remote_fence(2, 0, usize::MAX, 0, usize::MAX, 1)).0,
            SUCCESS,
        );
        check_eq(
            "remote fence bad hart",
            pair(client().remote_fence(0, 1 << 40, 0, 0, 0, 0)).0,
            ERR_INVALID_PARAM,
        );
        check_eq(
            "legacy remote fence.i",
            client().legacy(
                LEGACY_REMOTE_FENCE_I,
                [&self_mask as *const usize as usize, 0, 0, 0],
            ),
            0,
        );
        check_eq(
            "legacy remote sfence.vma",
            client().legacy(LEGACY_REMOTE_SFENCE_VMA, [0, 0, usize::MAX, 0]),
            0,
        );
        let want_h = if dt.has_h { SUCCESS } else { ERR_NOT_SUPPORTED };
        for fid in 3..=6 {
            check_eq(
                "remote hfence (H present <=> supported)",
                pair(client().remote_fence(fid, 0, usize::MAX, 0, 0, 0)).0,
                want_h,
            );
        }
        check_eq(
            "unknown RFENCE function",
            ecall(EID_RFNC, 7, [0, usize::MAX, 0, 0, 0, 0]).0,
            ERR_NOT_SUPPORTED,
        );

        // TIME: an interrupt at the requested time, not before.
        // SAFETY: sets sie.STIE only; interrupts are taken once sstatus.SIE
        // is set below, by trap_handler (see secondary_main's round 1: every
        // register restored, only atomics touched).
        unsafe { core::arch::asm!("csrs sie, {0}", in(reg) SIP_STIP) };
        for (name, legacy_call) in [("set_timer", false), ("legacy set_timer", true)] {
            let before = TIMER_IRQS[me].load(SeqCst);
            let target = rdtime() + 20_000;
            if legacy_call {
                client().legacy(LEGACY_SET_TIMER, [target as usize, 0, 0, 0]);
            } else {
                check_eq(name, pair(client().set_timer(target)).0, SUCCESS);
            }
            check("timer not pending early", sip() & SIP_STIP == 0);
            // SAFETY: sstatus.SIE on while waiting: the timer interrupt
            // goes to trap_handler, which restores every register and touches
            // only atomics.
            unsafe { core::arch::asm!("csrs sstatus, {0}", in(reg) 2usize) };
            let fired = wait_until("timer interrupt arrives", || {
                TIMER_IRQS[me].load(SeqCst) > before
            });
            // SAFETY: sstatus.SIE off again; only removes a way in to trap_handler.
            unsafe { core::arch::asm!("csrc sstatus, {0}", in(reg) 2usize) };
            check(
                "timer fires at or after its time",
                !fired || rdtime() >= target,
            );
        }
        pair(client().set_timer(0));
        for _ in 0..100 {
            core::hint::spin_loop();
        }
        check("timer in the past is pending", sip() & SIP_STIP != 0);
        pair(client().set_timer(u64::MAX));
        check("timer far future clears pending", sip() & SIP_STIP == 0);
        // SAFETY: clears sie.STIE; disabling an interrupt source is inert.
        unsafe { core::arch::asm!("csrc sie, {0}", in(reg) SIP_STIP) };

        // Firmware events are counted where they happen (PMU firmware counters).
        if pmu != 0 {
            let self_mask: usize = 1 << me;
            let counts = [
                (
                    "fw event ILLEGAL_INSN",
                    4,
                    3,
                    fw_count(4, || (0..3).for_each(|_| illegal())),
                ),
                (
                    "fw event ACCESS_LOAD",
                    2,
                    1,
                    // SAFETY: the PMP-denied load of the PMP check above,
                    // into x0: it faults and trap_handler skips it.
                    fw_count(2, || unsafe {
                        core::arch::asm!("ld zero, 0({0})", in(reg) FW_BASE)
                    }),
                ),
                (
                    "fw event ACCESS_STORE",
                    3,
                    2,
                    // SAFETY: two PMP-denied stores, as in the PMP check
                    // above: each faults and trap_handler skips it; no memory of
                    // this program is named.
                    fw_count(3, || unsafe {
                        core::arch::asm!("sd zero, 0({0})", "sd zero, 8({0})", in(reg) FW_BASE)
                    }),
                ),
                (
                    "fw event SET_TIMER",
                    5,
                    2,
                    fw_count(5, || {
                        pair(client().set_timer(u64::MAX));
                        client().legacy(LEGACY_SET_TIMER, [usize::MAX, 0, 0, 0]);
                    }),
                ),
                (
                    "fw event IPI_SENT to self: not another hart, not counted",
                    6,
                    0,
                    fw_count(6, || {
                        pair(client().send_ipi(self_mask, 0));
                    }),
                ),
                (
                    "fw event IPI_RECEIVED to self: not another hart, not counted",
                    7,
                    0,
                    fw_count(7, || {
                        pair(client().send_ipi(self_mask, 0));
                    }),
                ),
                (
                    "fw event FENCE_I_SENT to self: not another hart, not counted",
                    8,
                    0,
                    fw_count(8, || {
                        pair(client().remote_fence(0, self_mask, 0, 0, 0, 0));
                    }),
                ),
                (
                    "fw event FENCE_I_RECEIVED to self: not another hart, not counted",
                    9,
                    0,
                    fw_count(9, || {
                        pair(client().remote_fence(0, self_mask, 0, 0, 0, 0));
                    }),
                ),
                (
                    "fw event SFENCE_VMA_SENT to self: not counted",
                    10,
                    0,
                    fw_count(10, || {
                        pair(client().remote_fence(1, self_mask, 0, 0, 0x1000, 0));
                        client().legacy(
                            LEGACY_REMOTE_SFENCE_VMA,
                            [&self_mask as *const usize as usize, 0, 0x1000, 0],
                        );
                    }),
                ),
                (
                    "fw event SFENCE_VMA_ASID_RECEIVED from self: not counted",
                    13,
                    0,
                    fw_count(13, || {
                        pair(client().remote_fence(2, self_mask, 0, 0, 0x1000, 7));
                    }),
                ),
            ];
            clear_ssip();
            for _ in 0..3 {
                take_exception(me);
            }
            for (name, _code, want, got) in counts {
                check_eq(name, got.map_or(-1, |v| v as isize), want);
            }
        }

        // HSM
        check_eq("status of self", status(me), 0);
        for h in 0..MAX_HARTS {
            let want = if h >= dt.harts {
                ERR_INVALID_PARAM
            } else if h == me {
                0
            } else {
                1
            };
            check_eq("initial hart status", status(h), want);
        }
        check_eq(
            "hart_start self",
            pair(client().hart_start(me, secondary_entry(), 0)).0,
            ERR_ALREADY_AVAILABLE,
        );
        check_eq(
            "hart_start absent hart",
            pair(client().hart_start(64, secondary_entry(), 0)).0,
            ERR_INVALID_PARAM,
        );
        check_eq(
            "unknown HSM function",
            ecall(EID_HSM, 9, [0, 0, 0, 0, 0, 0]).0,
            ERR_NOT_SUPPORTED,
        );
        check_eq(
            "reserved suspend type",
            pair(client().hart_suspend(1, 0, 0)).0,
            ERR_INVALID_PARAM,
        );
        let others: usize = (0..dt.harts)
            .filter(|&h| h != me)
            .fold(0, |m, h| m | 1 << h);
        let each = |f: &mut dyn FnMut(usize)| (0..dt.harts).filter(|&h| h != me).for_each(f);
        each(&mut |h| {
            check_eq(
                "hart_start into firmware memory",
                pair(client().hart_start(h, FW_BASE, 0)).0,
                ERR_INVALID_ADDRESS,
            );
        });
        // Round 1: start, IPI, fence storm on all harts, stop.
        each(&mut |h| {
            check_eq(
                "hart_start",
                pair(client().hart_start(h, secondary_entry(), MAGIC | 1)).0,
                SUCCESS,
            )
        });
        each(&mut |h| {
            wait_until("secondary comes up", || ALIVE[h].load(SeqCst) >= 1);
            check_eq("started hart status", status(h), 0);
            check_eq(
                "hart_start a started hart",
                pair(client().hart_start(h, secondary_entry(), MAGIC | 1)).0,
                ERR_ALREADY_AVAILABLE,
            );
        });
        if others != 0 {
            check_eq(
                "send_ipi to the others",
                pair(client().send_ipi(others, 0)).0,
                SUCCESS,
            );
        }
        // All counters set up before anyone sends a fence.
        wait_until("secondaries ready for the storm", || {
            STORM_READY.load(SeqCst) + 1 >= dt.harts
        });
        START_STORM.store(1, SeqCst);
        fence_storm(STORM_ROUNDS);
        wait_until("fence storms finish", || {
            STORM_DONE.load(SeqCst) >= dt.harts
        });
        check_eq("fence storm errors", STORM_ERRORS.load(SeqCst) as isize, 0);
        GO_STOP.store(1, SeqCst);
        each(&mut |h| {
            wait_until("hart stops", || status(h) == 1);
        });
        // Round 2: retentive suspend, woken by an IPI.
        each(&mut |h| {
            check_eq(
                "hart_start again",
                pair(client().hart_start(h, secondary_entry(), MAGIC | 2)).0,
                SUCCESS,
            );
            wait_until("restarted hart comes up", || ALIVE[h].load(SeqCst) >= 2);
            wait_until("hart suspends", || status(h) == 4);
            pair(client().send_ipi(1 << h, 0));
            wait_until("suspended hart resumes", || RESUMED[h].load(SeqCst) >= 1);
            wait_until("resumed hart stops", || status(h) == 1);
        });
        // Round 3: non-retentive suspend resumes at the given address.
        each(&mut |h| {
            pair(client().hart_start(h, secondary_entry(), MAGIC | 3));
            wait_until("hart suspends (non-retentive)", || status(h) == 4);
            pair(client().send_ipi(1 << h, 0));
            wait_until("hart resumes at resume_addr", || {
                RESUMED[h].load(SeqCst) >= 2
            });
            wait_until("hart stops after resume", || status(h) == 1);
        });

        // SRST argument checks, then the real shutdown.
        check_eq(
            "reset type reserved",
            pair(client().system_reset(3, 0)).0,
            ERR_INVALID_PARAM,
        );
        check_eq(
            "reset reason reserved",
            pair(client().system_reset(0, 2)).0,
            ERR_INVALID_PARAM,
        );
        // reset_type is 32 bits wide: only the low 32 bits count, and
        // these name the reserved type 3.
        check_eq(
            "reserved reset type, bits above 32 set",
            pair(client().system_reset((1 << 32) | 3, 0)).0,
            ERR_INVALID_PARAM,
        );

        let (checks, failed) = CHECKS.counts();
        if failed == 0 {
            println!("sbi-check: all {checks} checks passed");
            pair(client().system_reset(0, 0));
        } else {
            println!("sbi-check: {failed} of {checks} checks FAILED");
            pair(client().system_reset(0, 1));
        }
        println!("sbi-check: FAIL system_reset returned");
        park()
    }

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        println!("sbi-check: FAIL payload panic");
        pair(client().system_reset(0, 1));
        loop {}
    }
}
