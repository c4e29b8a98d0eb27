//! The S-mode SBI conformance kernel (riscv64gc-unknown-none-elf).
//!
//! Loaded at 0x80200000 by QEMU `-kernel` and entered in S-mode by any SBI
//! firmware. It runs the PMU/STA conformance checks (`checks`) and the
//! narrow-parameter checks (`params`) on every hart, one hart after the
//! other, or, with `rvpmu.bench` on the kernel command line, the per-call
//! cost probes (`cost`), bracketing each call with `instret`, or with
//! `rvpmu.bench=time` with the `time` CSR (which a hypervisor's guest can
//! read where `instret` traps). It then powers off through SBI SRST, with the
//! upper 32 bits of both SRST parameters set: that shutdown is the last
//! check (`srst.upper32.shutdown`), announced with a `PENDING` line and
//! judged by `cargo xtask conformance` from QEMU's exit status (0: the
//! machine powered off). With `rvpmu.srst=failure` it only shuts down with
//! reason "system failure" (the firmware tests read QEMU's exit status).
//! A fatal trap or panic in this kernel also shuts down with reason
//! "system failure". `cargo xtask conformance` / `cargo xtask bench` run
//! it and parse its output. Entry, stacks, trap vector and console are
//! the runtime this kernel shares with `sbi-check` and `vs-check`
//! (`rvpmu_rt`). On the
//! host this crate is an empty stub.
//!
//! ## Layering
//!
//! | module | uses |
//! |---|---|
//! | `sbi` | |
//! | `rt` | `sbi` |
//! | `report` | `sbi` |
//! | `mem` | `rt` |
//! | `params` | `sbi`, `rt`, `report` |
//! | `checks` | `sbi`, `rt`, `report`, `mem`, `params` |
//! | `cost` | `sbi`, `mem`, `checks` |
//! | `kernel` | `sbi`, `rt`, `report`, `params`, `checks`, `cost` |
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("this is a bare-metal program; run it with `cargo xtask conformance`");
}

#[cfg(target_os = "none")]
mod checks;
#[cfg(target_os = "none")]
use rvpmu_rt::{console, println, text};
#[cfg(target_os = "none")]
rvpmu_rt::entry!();
#[cfg(target_os = "none")]
mod cost;
#[cfg(target_os = "none")]
mod mem;
#[cfg(target_os = "none")]
mod params;
#[cfg(target_os = "none")]
mod report;
#[cfg(target_os = "none")]
mod rt;
#[cfg(target_os = "none")]
mod sbi;

#[cfg(target_os = "none")]
mod kernel {
    use crate::checks::{self, Env};
    use crate::cost::Method;
    use crate::report::Suite;
    use crate::rt::MAX_HARTS;
    use crate::sbi;
    use crate::{console, println, text};
    use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

    /// Boot parameters shared with secondary harts (written once by the
    /// boot hart before it starts them).
    static RAM_START: AtomicUsize = AtomicUsize::new(0);
    static RAM_END: AtomicUsize = AtomicUsize::new(0);
    static SSCOFPMF: AtomicBool = AtomicBool::new(false);
    static SKIP_PTR: AtomicUsize = AtomicUsize::new(0);
    static SKIP_LEN: AtomicUsize = AtomicUsize::new(0);
    /// Results handed back by a secondary hart.
    static SEC_DONE: AtomicBool = AtomicBool::new(false);
    static SEC_ALIVE: AtomicBool = AtomicBool::new(false);
    /// Spin iterations the boot hart waits for a secondary hart's suite
    /// (about ten times what a full suite takes on OpenSBI 1.5.1).
    const SEC_WAIT_SPINS: u64 = 40_000_000;
    static SEC_PASSED: AtomicU32 = AtomicU32::new(0);
    static SEC_FAILED: AtomicU32 = AtomicU32::new(0);
    static SEC_NA: AtomicU32 = AtomicU32::new(0);

    fn skip_list() -> &'static str {
        let (p, n) = (
            SKIP_PTR.load(Ordering::Acquire),
            SKIP_LEN.load(Ordering::Acquire),
        );
        if p == 0 {
            return "";
        }
        // SAFETY: points into the DTB's bootargs, which stays in memory.
        core::str::from_utf8(unsafe { core::slice::from_raw_parts(p as *const u8, n) })
            .unwrap_or("")
    }

    fn env(slot: usize) -> Env {
        Env {
            slot,
            ram_end: RAM_END.load(Ordering::Acquire),
            sscofpmf: SSCOFPMF.load(Ordering::Acquire),
        }
    }

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    /// Boot hart entry (from `_start`).
    #[no_mangle]
    extern "C" fn kmain(hartid: usize, dtb: usize, boot_instret: u64) -> ! {
        console::init();
        println!("BOOT hart={hartid} instret={boot_instret}");
        // SAFETY: the firmware passes the DTB address in a1, in RAM this
        // kernel may write (`open_at` removes NOP tokens in place).
        let fdt = match unsafe { rvpmu_dtb::open_at(dtb as *mut u8) } {
            Ok(f) => f,
            Err(e) => {
                println!("FATAL cannot parse the device tree at {dtb:#x}: {e}");
                sbi::shutdown();
            }
        };
        let bootargs = fdt
            .find_node("/chosen")
            .and_then(|c| c.property("bootargs"))
            .and_then(|p| p.as_str())
            .unwrap_or("");
        let memory = fdt.find_node("/memory").and_then(|m| m.reg());
        if let Some(region) = memory.and_then(|mut r| r.next()) {
            let start = region.starting_address as usize;
            RAM_START.store(start, Ordering::Release);
            RAM_END.store(start + region.size.unwrap_or(0), Ordering::Release);
        }
        // The cpu nodes' timebase-frequency, else their parent's.
        let cpus_node = fdt.find_node("/cpus");
        let mut timebase = cpus_node
            .and_then(|c| c.property("timebase-frequency"))
            .and_then(|p| p.as_usize());
        let mut harts = [usize::MAX; MAX_HARTS];
        let mut nharts = 0;
        let mut sscofpmf = true;
        let cpus = cpus_node.into_iter().flat_map(|c| c.children());
        for cpu in cpus.filter(|c| c.name.split('@').next() == Some("cpu")) {
            let isa = |name| {
                cpu.property(name)
                    .is_some_and(|p| contains(p.value, b"sscofpmf"))
            };
            sscofpmf &= isa("riscv,isa") || isa("riscv,isa-extensions");
            if let Some(hz) = cpu
                .property("timebase-frequency")
                .and_then(|p| p.as_usize())
            {
                timebase = Some(hz);
            }
            if nharts < MAX_HARTS {
                harts[nharts] = cpu
                    .reg()
                    .and_then(|mut r| r.next())
                    .map_or(usize::MAX, |r| r.starting_address as usize);
                nharts += 1;
            }
        }
        SSCOFPMF.store(sscofpmf, Ordering::Release);
        if let Some(i) = bootargs.find("rvpmu.skip=") {
            let rest = &bootargs[i + "rvpmu.skip=".len()..];
            let list = rest.split(' ').next().unwrap_or("");
            SKIP_PTR.store(list.as_ptr() as usize, Ordering::Release);
            SKIP_LEN.store(list.len(), Ordering::Release);
        }
        println!(
            "ENV harts={nharts} ram={:#x}..{:#x} sscofpmf={sscofpmf}",
            RAM_START.load(Ordering::Relaxed),
            RAM_END.load(Ordering::Relaxed)
        );

        let bench = bootargs
            .split(' ')
            .find_map(|a| a.strip_prefix("rvpmu.bench"));
        if let Some(how) = bench {
            let method = match how {
                "" => Some(Method::Instret),
                "=time" => timebase.and_then(|hz| Method::time(hz as u64)),
                _ => None,
            };
            match method {
                Some(m) => {
                    crate::cost::run(0, m);
                    println!("COST-END");
                }
                None => println!(
                    "FATAL rvpmu.bench{how}: no such method, or timebase-frequency {timebase:?} is not a whole number of ns"
                ),
            }
            sbi::shutdown();
        }
        if bootargs.split(' ').any(|a| a == "rvpmu.srst=failure") {
            system_failure();
        }

        let mut s = Suite::new("", skip_list());
        checks::run(&mut s, &env(0));
        let (mut passed, mut failed, mut na) = (s.passed, s.failed, s.na);

        // Other harts run the same suite on their own PMU state, one at a
        // time. Meanwhile a firmware counter on this hart counts SET_TIMER:
        // their many set_timer calls must not show up here (per-hart
        // counters: "configure per-hart hardware/firmware counters").
        let p = checks::Pmu::discover();
        let fw = sbi::config_matching(
            0,
            p.fw_set(),
            sbi::pmu::CFG_CLEAR_VALUE,
            sbi::pmu::FW_SET_TIMER,
            0,
        );
        if fw.ok() {
            let _ = sbi::start(fw.value, 1, sbi::pmu::START_SET_INIT_VALUE, 0);
        }
        let mut others = 0;
        for &h in &harts[..nharts] {
            if h == hartid {
                continue;
            }
            let slot = others + 1;
            if slot >= MAX_HARTS {
                break;
            }
            others += 1;
            SEC_DONE.store(false, Ordering::Release);
            SEC_ALIVE.store(false, Ordering::Release);
            println!("SMP starting hart {h} (slot {slot})");
            let r = sbi::hart_start(h, rvpmu_rt::runtime::secondary_entry(), slot);
            println!("SMP hart_start({h}) answered {r}");
            if !r.ok() {
                println!("[FAIL] smp.hart_start.{h} - HSM hart_start of hart {h} | expected: SUCCESS | actual: {r}");
                failed += 1;
                continue;
            }
            // Bounded wait (a secondary suite takes far fewer iterations than
            // this), so a hart that never arrives is reported, not hung on.
            let mut spins: u64 = 0;
            while !SEC_DONE.load(Ordering::Acquire) && spins < SEC_WAIT_SPINS {
                core::hint::spin_loop();
                spins += 1;
            }
            if !SEC_DONE.load(Ordering::Acquire) {
                let how = if SEC_ALIVE.load(Ordering::Acquire) {
                    "entered the kernel but did not finish its suite"
                } else {
                    "never entered the kernel after HSM hart_start answered SUCCESS"
                };
                println!("[FAIL] smp.hart{h}.ran - HSM hart_start: the started hart runs the suite in S-mode at the given address | expected: the hart finishes | actual: it {how}");
                println!("RESULT {passed} passed, {} failed, {na} n/a", failed + 1);
                sbi::shutdown();
            }
            println!("SMP hart {h} finished after {spins} wait iterations");
            passed += SEC_PASSED.load(Ordering::Acquire);
            failed += SEC_FAILED.load(Ordering::Acquire);
            na += SEC_NA.load(Ordering::Acquire);
        }
        if others > 0 {
            let mut s = Suite::new("", skip_list());
            s.check("smp.fw_per_hart", "firmware counters are per hart (\"configure per-hart hardware/firmware counters\"): other harts' set_timer calls do not count on this hart's SET_TIMER counter", || {
                if !fw.ok() {
                    return crate::report::Verdict::na("no firmware counter counts SET_TIMER; firmware counters are optional");
                }
                let r = sbi::fw_read(fw.value);
                let _ = sbi::stop(fw.value, 1, sbi::pmu::STOP_RESET);
                crate::report::Verdict::new(r.ok() && r.value == 0, text!("SUCCESS value=0x0"), text!("{r}"))
            });
            passed += s.passed;
            failed += s.failed;
            na += s.na;
        } else if fw.ok() {
            let _ = sbi::stop(fw.value, 1, sbi::pmu::STOP_RESET);
        }
        println!("RESULT {passed} passed, {failed} failed, {na} n/a");
        final_shutdown();
    }

    /// The last check: SRST shutdown with bits 32..63 of reset_type and
    /// reset_reason set ("In case the data is defined as 32bit wide, higher
    /// privilege software must ensure that it only uses 32 bit data"): the
    /// low 32 bits say shutdown, no reason. It passes by powering off, so
    /// the kernel announces it (`PENDING`) and `cargo xtask conformance`
    /// judges it from QEMU's exit status; if the call returns, the kernel
    /// prints the failure and powers off the plain way.
    fn final_shutdown() -> ! {
        use crate::params::HI32;
        use sbi::srst::{REASON_NONE, SHUTDOWN};
        const ID: &str = "srst.upper32.shutdown";
        const WHAT: &str = "system_reset: reset_type and reset_reason are \"32 bits wide\", so 0xffffffff_00000000 for both is shutdown with no reason: the machine powers off (the suite's last check, judged by QEMU's exit status)";
        const EXPECTED: &str = "the machine powers off (QEMU exit status 0)";
        println!("..> {ID}");
        let present = sbi::probe_extension(sbi::eid::SRST);
        if !(present.ok() && present.value != 0) {
            println!("[N/A ] {ID} - {WHAT} | expected: n/a | actual: n/a: optional feature absent (SRST extension absent (probe_extension 0))");
            sbi::shutdown();
        }
        if skip_list().split(',').any(|s| s == ID) {
            println!("[FAIL] {ID} - {WHAT} | expected: {EXPECTED} | actual: not run: it hung or crashed the firmware in an earlier run");
            sbi::shutdown();
        }
        println!("PENDING {ID} - {WHAT} | expected: {EXPECTED}");
        let r = sbi::system_reset(HI32 | SHUTDOWN, HI32 | REASON_NONE);
        println!("[FAIL] {ID} - {WHAT} | expected: {EXPECTED} | actual: the call returned {r}");
        sbi::shutdown();
    }

    /// `rvpmu.srst=failure`: SRST shutdown with reason "system failure"
    /// (upper 32 bits of both parameters set, then without them if that
    /// returned). A line `SRST-RETURNED` says a call came back.
    fn system_failure() -> ! {
        use crate::params::HI32;
        use sbi::srst::{REASON_SYSTEM_FAILURE, SHUTDOWN};
        println!("SRST shutdown, reason system failure (upper 32 bits set)");
        let r = sbi::system_reset(HI32 | SHUTDOWN, HI32 | REASON_SYSTEM_FAILURE);
        println!("SRST-RETURNED upper32 {r}");
        let r = sbi::system_reset(SHUTDOWN, REASON_SYSTEM_FAILURE);
        println!("SRST-RETURNED plain {r}");
        sbi::shutdown();
    }

    /// Secondary hart entry (from `_secondary`, started through HSM).
    #[no_mangle]
    extern "C" fn secondary_main(hartid: usize, slot: usize) -> ! {
        SEC_ALIVE.store(true, Ordering::Release);
        let prefix = text!("h{hartid}.");
        let mut s = Suite::new(prefix.as_str(), skip_list());
        checks::run(&mut s, &env(slot));
        SEC_PASSED.store(s.passed, Ordering::Release);
        SEC_FAILED.store(s.failed, Ordering::Release);
        SEC_NA.store(s.na, Ordering::Release);
        SEC_DONE.store(true, Ordering::Release);
        let _ = sbi::hart_stop();
        loop {
            core::hint::spin_loop();
        }
    }
}
