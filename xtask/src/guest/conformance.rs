//! The S-mode SBI conformance kernel (crates/conformance) under QEMU on
//! a firmware, directly or as the guest of a hypervisor on it ([`Target`]),
//! and what it prints: the suite's runs and reports (for the
//! `conformance` command and the test suite) and its cost probes (for the
//! benchmark and `conformance --cost`), on our firmware and/or OpenSBI.
//!
//! The kernel prints one line per check (`[PASS] id - what | expected: E |
//! actual: A`, `[FAIL] ...`, `[N/A ] ...`, or the same as JSON lines with
//! `rvpmu.format=json`: both are read here), announces each check with
//! `..> id` first, and ends with `RESULT N passed, M failed, K n/a`. N/A
//! (an optional feature absent) is counted apart from passed and failed:
//! on our own firmware it fails the run like a failure, on other firmware
//! it is reported. If a firmware hangs or crashes on a check (on any hart:
//! a check announced and never answered), QEMU is stopped once the console
//! has been quiet for [`QUIET`] and the run is repeated with that check on
//! the kernel command line (`rvpmu.skip=`, by its name without the hart
//! prefix, so every hart skips it), where it is reported as failed.
//!
//! The last check, `srst.upper32.shutdown`, passes by powering the machine
//! off: the kernel prints `PENDING id - what | expected: E` after RESULT
//! and makes the call; QEMU's exit status 0 makes it PASS, any other
//! status (or the kernel's own `[FAIL]` line when the call returns) FAIL.

use super::kvm::{host_cmd, KvmGuest, KvmHost};
use super::perftool::Plan;
use crate::build::firmware;
use crate::build::kernel::{Release, Version};
use crate::host::{run_captured_quiet, step};
use crate::qemu::{exit, Firmware, Qemu, HV_MEMORY};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// Wall-clock limit for one QEMU run (a normal run takes a few seconds).
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// How long the kernel's console may stay quiet before the run counts as
/// hung (QEMU is stopped, the check announced last is blamed). Under
/// icount a run's quiet stretches are fixed instruction counts, so their
/// wall time only varies with the host's speed: docs/conformance.md
/// ("Hangs and crashes") gives the longest stretch of full runs on every
/// peer and how to measure it, and this limit is more than ten times
/// that.
pub const QUIET: Duration = Duration::from_secs(5);

/// How many hanging checks one suite run may skip before giving up.
const MAX_SKIPS: usize = 8;

/// The suite must keep at least this many checks (guards against a
/// kernel that silently stops early).
const MIN_CHECKS: usize = 100;

/// Debian's OpenSBI 1.5.1, named `opensbi` in the reports.
pub fn opensbi() -> Result<Firmware> {
    Firmware::opensbi_installed("opensbi")
}

/// Debian trixie's OpenSBI 1.6, named `opensbi-1.6` in the reports.
pub fn opensbi_1_6() -> Result<Firmware> {
    Firmware::opensbi_1_6("opensbi-1.6")
}

/// Our firmware, built, named `ours` in the reports.
pub fn ours() -> Result<Firmware> {
    firmware::ours("ours").context("building our firmware (cargo xtask firmware)")
}

/// What the conformance kernel runs under, on the firmware.
#[derive(Clone)]
pub enum Under {
    /// Nothing: the firmware enters it in S-mode.
    Firmware,
    /// The hypervisor rvpmu-hv (this raw image): the kernel is its
    /// VS-mode guest, with vs-check's RAM (crates/rvpmu-hv, one hart).
    RvpmuHv(PathBuf),
    /// KVM: this Linux booted as a KVM host on the firmware (one hart,
    /// icount) runs the kernel with Debian's QEMU (`-accel kvm`, no
    /// firmware: KVM answers the SBI calls), [`KVM_GUEST_MEMORY`] of RAM:
    /// one nested boot per run.
    Kvm(Rc<KvmHost>),
}

/// The conformance kernel's RAM as a KVM guest (as under rvpmu-hv).
pub const KVM_GUEST_MEMORY: &str = "64M";

/// Seconds of the KVM host's clock (under icount: 10^9 instructions of
/// the whole machine) one KVM guest run of the kernel may take before the
/// KVM host kills its QEMU: a check that hangs KVM's guest costs this
/// much, and the run is repeated without it.
pub const KVM_GUEST_LIMIT_S: u64 = 2;

/// Wall-clock limit of one nested run: the KVM host's boot, the kernel
/// in its KVM guest up to [`KVM_GUEST_LIMIT_S`], the KVM host's
/// power-off.
const KVM_RUN_TIMEOUT: Duration = Duration::from_secs(900);

impl Under {
    /// Whether the kernel may read `instret` there (for the instret cost
    /// bracket): on the firmware, and under rvpmu-hv, which opens it in
    /// hcounteren; KVM traps it and answers a counter of its own.
    pub fn reads_instret(&self) -> bool {
        matches!(self, Under::Firmware | Under::RvpmuHv(_))
    }

    /// The name in reports (`None` for the firmware itself).
    pub fn name(&self) -> Option<&'static str> {
        match self {
            Under::Firmware => None,
            Under::RvpmuHv(_) => Some("rvpmu-hv"),
            Under::Kvm(_) => Some("kvm"),
        }
    }
}

/// Where one run of the kernel happens: a firmware, and what runs on it.
#[derive(Clone)]
pub struct Target {
    pub fw: Firmware,
    pub under: Under,
}

impl Target {
    /// The kernel on `fw` directly.
    pub fn firmware(fw: Firmware) -> Target {
        Target {
            fw,
            under: Under::Firmware,
        }
    }

    /// The name in reports: the firmware's, or the hypervisor's (with the
    /// firmware's after a slash when `with_fw`).
    pub fn name(&self, with_fw: bool) -> String {
        match self.under.name() {
            None => self.fw.name.clone(),
            Some(h) if with_fw => format!("{h}/{}", self.fw.name),
            Some(h) => h.to_string(),
        }
    }
}

/// What one QEMU run printed and how it ended.
pub struct Capture {
    pub text: String,
    /// Stopped: at the run's timeout, or after [`QUIET`] without output.
    pub timed_out: bool,
    /// QEMU's exit status (`None`: killed at the timeout).
    pub status: Option<i32>,
}

/// Boots the kernel (its ELF `kernel`) on `target` under exact
/// instruction counting, with `smp` harts and the command line `append`
/// (with the device tree `dtb` instead of QEMU's own, if given: on the
/// firmware directly only) and collects the serial output until QEMU
/// exits or the timeout hits.
pub fn boot(
    target: &Target,
    kernel: &Path,
    smp: u32,
    append: &str,
    dtb: Option<&Path>,
) -> Result<Capture> {
    let fw = &target.fw;
    let q = match &target.under {
        Under::Firmware => {
            let mut q = Qemu::virt(smp);
            q.bios = Some(fw.path.clone());
            q.kernel = Some(kernel.to_path_buf());
            q.dtb = dtb.map(Path::to_path_buf);
            if !append.is_empty() {
                q.append = Some(append.to_string());
            }
            q
        }
        Under::RvpmuHv(hypervisor) => {
            if smp != 1 || dtb.is_some() {
                bail!(
                    "under rvpmu-hv the kernel runs on one hart with the hypervisor's device tree"
                );
            }
            let bundle = super::hv::conformance_bundle(kernel, append)?;
            super::hv::machine(&fw.path, hypervisor, &bundle, HV_MEMORY)
        }
        Under::Kvm(host) => {
            if dtb.is_some() {
                bail!("under KVM the kernel gets the device tree of the KVM host's QEMU");
            }
            return boot_kvm(host, fw, kernel, smp, append);
        }
    };
    let mut cmd = q.command();
    let run = run_captured_quiet(&mut cmd, RUN_TIMEOUT, QUIET)?;
    let status = run.status.and_then(|s| s.code());
    // A failure status after the kernel started is the firmware's or the
    // kernel's report (e.g. 83: SRST "system failure" after a fatal trap in
    // the kernel) and the output says more; without any kernel output it
    // is QEMU's or the firmware's own failure.
    if status.is_some_and(|c| c != 0) && !run.stdout.contains("BOOT hart=") {
        bail!(
            "{} before the kernel started on {}: {}{}",
            exit::describe(status),
            target.name(true),
            run.stderr.trim(),
            run.stdout.trim()
        );
    }
    Ok(Capture {
        text: run.stdout,
        timed_out: run.timed_out || run.stalled,
        status,
    })
}

/// The checks KVM fails at -smp 1 (Linux 7.2's arch/riscv/kvm, with
/// Debian's QEMU 10.0 as its VMM), each with where the deviation is:
/// docs/hypervisor.md ("KVM's SBI judged by the suite") quotes the spec
/// for each cause and names the patch that fixes it ([`KVM_FIXES`]).
/// Four are not KVM's: the three checks that register 0x80000000, which
/// in any guest is its own RAM (as under rvpmu-hv), and the legacy
/// console's answer, which is QEMU's.
pub const KVM_FAIL: &[(&str, &str)] = &[
    (
        "pmu.info.past_end",
        "ctr_info: bound RISCV_KVM_MAX_COUNTERS, not the counter count",
    ),
    (
        "pmu.cfg.flag.bit8",
        "ctr_cfg_match: reserved config_flags not checked",
    ),
    (
        "pmu.cfg.flag.bit31",
        "ctr_cfg_match: reserved config_flags not checked",
    ),
    (
        "pmu.cfg.flag.bit32",
        "ctr_cfg_match: reserved config_flags not checked",
    ),
    (
        "pmu.cfg.flag.bit63",
        "ctr_cfg_match: reserved config_flags not checked",
    ),
    (
        "pmu.cfg.flag.each_reserved",
        "ctr_cfg_match: reserved config_flags not checked",
    ),
    (
        "pmu.start.flag.each_reserved",
        "ctr_start: reserved start_flags not checked",
    ),
    (
        "pmu.stop.flag.each_reserved",
        "ctr_stop: reserved stop_flags not checked",
    ),
    (
        "pmu.cfg.filter.vuinh",
        "kvm_pmu_get_fixed_pmc_index: cycles is counter 0 outside the set",
    ),
    (
        "pmu.cfg.filter.vsinh",
        "kvm_pmu_get_fixed_pmc_index: cycles is counter 0 outside the set",
    ),
    (
        "pmu.cfg.filter.uinh",
        "kvm_pmu_get_fixed_pmc_index: cycles is counter 0 outside the set",
    ),
    (
        "pmu.cfg.filter.sinh",
        "kvm_pmu_get_fixed_pmc_index: cycles is counter 0 outside the set",
    ),
    (
        "pmu.cfg.filter.minh",
        "kvm_pmu_get_fixed_pmc_index: cycles is counter 0 outside the set",
    ),
    (
        "pmu.cfg.filter.vsinh_vuinh",
        "kvm_pmu_get_fixed_pmc_index: cycles is counter 0 outside the set",
    ),
    (
        "pmu.cfg.set.hole",
        "kvm_pmu_validate_counter_mask: range only, holes pass",
    ),
    (
        "pmu.start.set.hole",
        "kvm_pmu_validate_counter_mask: range only; ctr_start skips unconfigured counters",
    ),
    (
        "pmu.stop.set.hole",
        "kvm_pmu_validate_counter_mask: range only; ctr_stop skips unconfigured counters",
    ),
    (
        "pmu.event.general.1",
        "kvm_pmu_get_fixed_pmc_index: cycles is counter 0 outside the set",
    ),
    (
        "pmu.event.general.2",
        "kvm_pmu_get_fixed_pmc_index: instructions is counter 2 outside the set",
    ),
    (
        "pmu.event.general.0",
        "kvm_pmu_get_perf_event_config: NO_EVENT maps to hw_event_perf_map[0], cycles",
    ),
    (
        "pmu.event.general.data",
        "ctr_cfg_match: event_data of a general event ignored",
    ),
    (
        "pmu.event.bit20",
        "get_event_type/get_event_code: event_idx bits 20.. dropped",
    ),
    (
        "pmu.event.raw.code1",
        "kvm_pmu_get_perf_event_config: raw event code not checked",
    ),
    (
        "pmu.event.raw2.code1",
        "kvm_pmu_get_perf_event_config: raw event code not checked",
    ),
    (
        "pmu.event.raw.data49",
        "kvm_pmu_get_perf_event_config: raw event_data masked, not rejected",
    ),
    (
        "pmu.event.raw2.data57",
        "kvm_pmu_get_perf_event_config: raw event_data masked, not rejected",
    ),
    (
        "pmu.event.fw.data",
        "ctr_cfg_match: event_data of a firmware event ignored",
    ),
    (
        "pmu.cfg.skip.unconfigured",
        "ctr_cfg_match: SKIP_MATCH on a free counter answers FAILED",
    ),
    (
        "pmu.cfg.auto_start",
        "kvm_pmu_create_perf_event: AUTO_START leaves pmc->started false",
    ),
    (
        "pmu.cfg.not_started",
        "kvm_pmu_get_fixed_pmc_index: a started counter 0 is matched again",
    ),
    (
        "pmu.cfg.hw_event_fw_set",
        "kvm_pmu_get_fixed_pmc_index: cycles is counter 0 outside the set",
    ),
    (
        "pmu.stop.flag.bit2",
        "ctr_stop: reserved stop_flags not checked",
    ),
    (
        "pmu.stop.flag.bit63",
        "ctr_stop: reserved stop_flags not checked",
    ),
    (
        "pmu.stop.fw",
        "ctr_stop: reserved stop_flags not checked (pmu.stop.flag.bit2 stopped it)",
    ),
    (
        "pmu.start.flag.bit2",
        "ctr_start: reserved start_flags not checked",
    ),
    (
        "pmu.start.flag.bit63",
        "ctr_start: reserved start_flags not checked",
    ),
    (
        "pmu.start.continue",
        "ctr_start: reserved start_flags not checked (pmu.start.flag.bit2 started it)",
    ),
    (
        "pmu.cfg.clear.fw",
        "ctr_cfg_match: CLEAR_VALUE ignored for firmware counters",
    ),
    (
        "pmu.fw_read.hw",
        "pmu_ctr_read: fw_read serves hardware counters",
    ),
    (
        "pmu.fw_read_hi.hw",
        "kvm_sbi_ext_pmu_handler: fw_read_hi on RV64 never checks counter_idx",
    ),
    (
        "pmu.fw_read_hi.past_end",
        "kvm_sbi_ext_pmu_handler: fw_read_hi on RV64 never checks counter_idx",
    ),
    (
        "pmu.fw_read_hi.neg",
        "kvm_sbi_ext_pmu_handler: fw_read_hi on RV64 never checks counter_idx",
    ),
    (
        "pmu.fw_read_hi.trunc32",
        "kvm_sbi_ext_pmu_handler: fw_read_hi on RV64 never checks counter_idx",
    ),
    (
        "pmu.fw_read_hi.hole",
        "kvm_sbi_ext_pmu_handler: fw_read_hi on RV64 never checks counter_idx",
    ),
    (
        "pmu.set.start_two",
        "kvpmu->fw_event[code]: firmware counters of one event share one state",
    ),
    (
        "pmu.set.stop_one_of_two",
        "kvpmu->fw_event[code]: firmware counters of one event share one state",
    ),
    (
        "pmu.set.stop_partly_stopped",
        "kvpmu->fw_event[code]: firmware counters of one event share one state",
    ),
    (
        "pmu.hw.counts",
        "kvm_pmu_get_fixed_pmc_index: counter 0 re-matched keeps a stale pmc->started",
    ),
    (
        "pmu.snap.align8",
        "snapshot_set_shmem: no 4 KiB alignment check",
    ),
    (
        "pmu.snap.align2048",
        "snapshot_set_shmem: no 4 KiB alignment check",
    ),
    (
        "pmu.snap.lo_ones",
        "snapshot_set_shmem: no 4 KiB alignment check",
    ),
    (
        "pmu.snap.fw_addr",
        "not KVM's: 0x80000000 is the guest's own RAM",
    ),
    (
        "pmu.snap.take.others",
        "ctr_stop: TAKE_SNAPSHOT writes KVM's whole copy of the area",
    ),
    (
        "pmu.snap.init_and_value",
        "ctr_start: SET_INIT_VALUE with INIT_SNAPSHOT accepted",
    ),
    (
        "pmu.snap.overflow",
        "ctr_stop: overflow bit only from the host's perf callback, not from the wrap",
    ),
    (
        "pmu.evinfo.fw_addr",
        "not KVM's: 0x80000000 is the guest's own RAM",
    ),
    (
        "pmu.evinfo.mmio",
        "event_info: an unreadable area answers FAILED",
    ),
    (
        "pmu.evinfo.size_overflow",
        "event_info: an area past 2^64 answers INVALID_PARAM",
    ),
    (
        "pmu.evinfo.past_ram",
        "event_info: an unreadable area answers FAILED",
    ),
    (
        "pmu.evinfo.wrap",
        "event_info: an unreadable area answers FAILED",
    ),
    (
        "pmu.evinfo.reserved20",
        "event_info: reserved event_idx bits not checked",
    ),
    (
        "pmu.evinfo.reserved31",
        "event_info: reserved event_idx bits not checked",
    ),
    (
        "pmu.evinfo.out.fw22",
        "event_info: undefined firmware code reads as a platform event",
    ),
    (
        "sta.flags63",
        "kvm_sbi_sta_steal_time_set_shmem: flags truncated to 32 bits",
    ),
    (
        "sta.flags.each_reserved",
        "kvm_sbi_sta_steal_time_set_shmem: flags truncated to 32 bits",
    ),
    (
        "sta.fw_addr",
        "not KVM's: 0x80000000 is the guest's own RAM",
    ),
    (
        "srst.type.upper32.reserved",
        "kvm_sbi_ext_srst_handler: reserved type answers NOT_SUPPORTED",
    ),
    (
        "srst.reason.upper32.reserved",
        "kvm_sbi_ext_srst_handler: reset_reason not checked (it shuts down)",
    ),
    (
        "legacy.putchar.upper",
        "not KVM's: QEMU's kvm_riscv_handle_sbi answers NOT_SUPPORTED",
    ),
];

/// The checks of [`KVM_FAIL`] each KVM patch of the series makes pass
/// (`patches/linux/7.2/`, docs/linux-patches.md), by the patch's file
/// name. On `7.2-fixed` KVM fails the rest: the four checks that are not
/// KVM's, and those of the fix the series leaves out (a cycles or
/// instructions request always gets counter 0 or 2, docs/linux-patches.md
/// says why). A patch with no check fixes what the suite cannot reach.
pub const KVM_FIXES: &[(&str, &[&str])] = &[
    (
        "0003-RISC-V-KVM-Bound-SBI-PMU-counter_get_info-by-the-num.patch",
        &["pmu.info.past_end"],
    ),
    (
        "0004-RISC-V-KVM-Reject-reserved-flags-of-SBI-PMU-config-s.patch",
        &[
            "pmu.cfg.flag.bit8",
            "pmu.cfg.flag.bit31",
            "pmu.cfg.flag.bit32",
            "pmu.cfg.flag.bit63",
            "pmu.stop.flag.bit2",
            "pmu.stop.flag.bit63",
            "pmu.stop.fw",
            "pmu.start.flag.bit2",
            "pmu.start.flag.bit63",
            "pmu.start.continue",
            "pmu.cfg.flag.each_reserved",
            "pmu.start.flag.each_reserved",
            "pmu.stop.flag.each_reserved",
        ],
    ),
    (
        "0005-RISC-V-KVM-Reject-SBI-PMU-start-with-SET_INIT_VALUE-.patch",
        &["pmu.snap.init_and_value"],
    ),
    (
        "0006-RISC-V-KVM-Reject-SBI-PMU-counter-sets-that-hold-cou.patch",
        &[
            "pmu.cfg.set.hole",
            "pmu.start.set.hole",
            "pmu.stop.set.hole",
        ],
    ),
    (
        "0007-RISC-V-KVM-Check-the-event-encoding-of-SBI-PMU-confi.patch",
        &[
            "pmu.event.general.0",
            "pmu.event.general.data",
            "pmu.event.bit20",
            "pmu.event.raw.code1",
            "pmu.event.raw2.code1",
            "pmu.event.raw.data49",
            "pmu.event.raw2.data57",
            "pmu.event.fw.data",
        ],
    ),
    (
        "0008-RISC-V-KVM-Select-the-first-counter-of-the-set-on-SB.patch",
        &["pmu.cfg.skip.unconfigured"],
    ),
    (
        "0009-RISC-V-KVM-Keep-the-state-of-each-SBI-PMU-firmware-c.patch",
        &[
            "pmu.set.start_two",
            "pmu.set.stop_one_of_two",
            "pmu.set.stop_partly_stopped",
            "pmu.cfg.clear.fw",
        ],
    ),
    (
        "0010-RISC-V-KVM-Refuse-hardware-counters-in-SBI-PMU-fw_re.patch",
        &["pmu.fw_read.hw"],
    ),
    (
        "0011-RISC-V-KVM-Check-the-counter-of-SBI-PMU-fw_read_hi-o.patch",
        &[
            "pmu.fw_read_hi.hw",
            "pmu.fw_read_hi.past_end",
            "pmu.fw_read_hi.neg",
            "pmu.fw_read_hi.trunc32",
            "pmu.fw_read_hi.hole",
        ],
    ),
    (
        "0012-RISC-V-KVM-Require-a-4-KiB-aligned-SBI-PMU-snapshot-.patch",
        &["pmu.snap.align8", "pmu.snap.align2048", "pmu.snap.lo_ones"],
    ),
    (
        "0013-RISC-V-KVM-Fix-the-SBI-PMU-snapshot-copy-when-the-ar.patch",
        &[],
    ),
    (
        "0014-RISC-V-KVM-Leave-the-other-counters-alone-in-the-SBI.patch",
        &["pmu.snap.take.others"],
    ),
    (
        "0015-RISC-V-KVM-Report-a-counter-that-wrapped-by-its-stop.patch",
        &["pmu.snap.overflow"],
    ),
    (
        "0016-RISC-V-KVM-Fix-the-errors-of-SBI-PMU-event_get_info.patch",
        &[
            "pmu.evinfo.mmio",
            "pmu.evinfo.past_ram",
            "pmu.evinfo.size_overflow",
            "pmu.evinfo.wrap",
            "pmu.evinfo.reserved20",
            "pmu.evinfo.reserved31",
        ],
    ),
    (
        "0017-RISC-V-KVM-Report-firmware-events-KVM-cannot-count-a.patch",
        &["pmu.evinfo.out.fw22"],
    ),
    (
        "0018-RISC-V-KVM-Read-all-bits-of-the-SBI-STA-set_shmem-fl.patch",
        &["sta.flags63", "sta.flags.each_reserved"],
    ),
    (
        "0019-RISC-V-KVM-Reject-reserved-SBI-SRST-reset-types-and-.patch",
        &["srst.type.upper32.reserved", "srst.reason.upper32.reserved"],
    ),
];

/// The check that ends KVM's guest (a reserved reset reason shuts it
/// down): a run that does not skip it from the start takes a second
/// nested boot.
pub const KVM_SKIP: &[&str] = &["srst.reason.upper32.reserved"];

/// The checks rustsbi-fw (crates/rustsbi-fw, the RustSBI-based
/// firmware) fails on each hart, all in crates.io rustsbi 0.4.1's
/// dispatch, before any trait method runs: `_rustsbi_hsm` and
/// `_rustsbi_reset` answer INVALID_PARAM (`u32::try_from`) for a 32-bit
/// parameter with any of bits 32..63 set, where the spec says the
/// parameter "is 32 bits wide" and the firmware "only uses 32 bit data".
/// These are hart_suspend's suspend_type (per hart) and, once at the end,
/// system_reset's reset_type and reset_reason ([`RUSTSBI_FW_FAIL_ONCE`]).
/// None is the PMU's or STA's: those go through rvpmu's adapter.
pub const RUSTSBI_FW_FAIL: &[&str] = &[
    "hsm.suspend.upper32.retentive",
    "hsm.suspend.upper32.non_retentive",
    "hsm.suspend.upper32.reserved",
    "hsm.suspend.upper32.reserved_non_retentive",
    "hsm.suspend.upper32.platform",
];

/// rustsbi-fw's failed check that runs once, on the last hart: see
/// [`RUSTSBI_FW_FAIL`].
pub const RUSTSBI_FW_FAIL_ONCE: &[&str] = &["srst.upper32.shutdown"];

/// rustsbi-fw's N/A check on each hart: rustsbi's probe_extension knows
/// no legacy extension, so the legacy console the firmware serves probes
/// as absent (0) and the suite leaves its check out.
pub const RUSTSBI_FW_NA: &[&str] = &["legacy.putchar.upper"];

/// [`unpinned`] for rustsbi-fw at `smp` harts.
pub fn rustsbi_fw_unpinned(rep: &Report, smp: u32) -> Option<String> {
    let (fail, na) = rustsbi_fw_pinned(smp);
    let fail: Vec<&str> = fail.iter().map(String::as_str).collect();
    let na: Vec<&str> = na.iter().map(String::as_str).collect();
    unpinned(rep, &fail, &na)
}

/// The (failed, N/A) check ids rustsbi-fw is pinned to at `smp` harts:
/// hart N > 0 runs the per-hart checks again as `hN.<id>`.
fn rustsbi_fw_pinned(smp: u32) -> (Vec<String>, Vec<String>) {
    let per_hart = |ids: &[&str]| -> Vec<String> {
        (0..smp)
            .flat_map(|h| {
                ids.iter().map(move |id| match h {
                    0 => id.to_string(),
                    h => format!("h{h}.{id}"),
                })
            })
            .collect()
    };
    let mut fail = per_hart(RUSTSBI_FW_FAIL);
    fail.extend(RUSTSBI_FW_FAIL_ONCE.iter().map(|id| id.to_string()));
    (fail, per_hart(RUSTSBI_FW_NA))
}

/// Whether the KVM of `host` has the KVM patches of the series.
fn has_kvm_fixes(host: Version) -> bool {
    host == Version::V7_2_FIXED
}

/// The checks KVM fails at -smp 1 with `host` as the KVM host's Linux:
/// [`KVM_FAIL`] on 7.2, less what [`KVM_FIXES`] fixes on 7.2-fixed;
/// `None` on 6.12, whose KVM the suite reports without pinning it.
pub fn kvm_fail_ids(host: Version) -> Option<Vec<&'static str>> {
    if host.release != Release::V7_2 {
        return None;
    }
    let fixed = kvm_fixed_ids(host);
    Some(
        KVM_FAIL
            .iter()
            .map(|f| f.0)
            .filter(|id| !fixed.contains(id))
            .collect(),
    )
}

/// The checks of [`KVM_SKIP`] still to skip under `host`'s KVM (a fixed
/// one no longer ends the guest).
pub fn kvm_skip(host: Version) -> Vec<&'static str> {
    let fixed = kvm_fixed_ids(host);
    KVM_SKIP
        .iter()
        .copied()
        .filter(|id| !fixed.contains(id))
        .collect()
}

/// The checks the KVM of `host` passes thanks to the series.
fn kvm_fixed_ids(host: Version) -> Vec<&'static str> {
    if !has_kvm_fixes(host) {
        return Vec::new();
    }
    KVM_FIXES
        .iter()
        .flat_map(|(_, ids)| ids.iter().copied())
        .collect()
}

/// [`boot`] under KVM: one nested boot whose KVM host's plan runs the
/// kernel's QEMU under `timeout` ([`KVM_GUEST_LIMIT_S`]); the capture is
/// that QEMU's output and exit status (QEMU exits 0 when the kernel shuts
/// the KVM guest down through SBI SRST).
fn boot_kvm(
    host: &KvmHost,
    fw: &Firmware,
    kernel: &Path,
    smp: u32,
    append: &str,
) -> Result<Capture> {
    let guest = KvmGuest {
        name: "conformance".into(),
        kernel: kernel.to_path_buf(),
        initrd: None,
        append: (!append.is_empty()).then(|| append.to_string()),
        smp,
        memory: KVM_GUEST_MEMORY.into(),
        cpus: None,
        timeout_s: Some(KVM_GUEST_LIMIT_S),
    };
    let mut plan = Plan::default();
    plan.args("conformance", guest.argv());
    let machine = crate::qemu::Machine {
        smp: 1,
        icount: true,
    };
    let out = host.run_plan(fw, machine, &plan, &[&guest], KVM_RUN_TIMEOUT)?;
    let Some(cmd) = host_cmd(&out, "conformance") else {
        bail!(
            "the KVM host on {} did not run the kernel's QEMU ({}); its console's tail:\n{}",
            fw.name,
            if out.timed_out {
                "timed out"
            } else {
                "no result"
            },
            out.tail(30)
        );
    };
    // Killed at the limit: by the signal itself (busybox's timeout execs
    // the command) or 128 + 9 (coreutils' reports it).
    let timed_out = cmd.signal == Some(9) || cmd.status == Some(137);
    let status = if timed_out {
        None
    } else {
        cmd.status.and_then(|s| i32::try_from(s).ok())
    };
    if status.is_some_and(|c| c != 0) && !cmd.stdout.contains("BOOT hart=") {
        bail!(
            "the KVM guest's QEMU ended ({}) before the kernel started: {}{}",
            exit::describe(status),
            cmd.stderr.trim(),
            cmd.stdout.trim()
        );
    }
    Ok(Capture {
        text: cmd.stdout.replace('\r', ""),
        timed_out,
        status,
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    Pass,
    Fail,
    Na,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Na => "N/A",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Check {
    pub id: String,
    pub status: Status,
    pub what: String,
    pub expected: String,
    pub actual: String,
}

/// The parsed output of one suite run.
#[derive(Default)]
pub struct Report {
    pub checks: Vec<Check>,
    /// `RESULT N passed, M failed, K n/a`, if the kernel got that far.
    pub result: Option<(usize, usize, usize)>,
    /// How many checks came before the RESULT line (the ones it counts).
    pub counted: usize,
    /// The first check announced with `..>` that never printed its
    /// result (on any hart; a hart that hung leaves its check open while
    /// the others go on).
    pub unfinished: Option<String>,
    /// Every check left open, in the order announced.
    open: Vec<String>,
    /// A check whose verdict is QEMU's exit status (`PENDING` line).
    pub pending: Option<Check>,
    pub fatal: Vec<String>,
    pub boot_instret: Option<u64>,
    /// `COST-METHOD`: how the cost probes bracketed each call
    /// (`instret` or `time`).
    pub cost_method: Option<String>,
    /// `COST-BRACKET`: the empty bracket's instructions, subtracted from
    /// every figure.
    pub cost_bracket: Option<u64>,
    pub costs: Vec<(String, u64, String)>,
}

/// (passed, failed, N/A) of some checks.
pub fn tally(checks: &[Check]) -> (usize, usize, usize) {
    let n = |s| checks.iter().filter(|c| c.status == s).count();
    (n(Status::Pass), n(Status::Fail), n(Status::Na))
}

impl Report {
    pub fn failed(&self) -> usize {
        tally(&self.checks).1
    }
    pub fn passed(&self) -> usize {
        tally(&self.checks).0
    }
    pub fn na(&self) -> usize {
        tally(&self.checks).2
    }
    /// Checks that keep our firmware's run from passing: failed or N/A.
    pub fn not_passed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.status != Status::Pass)
    }
    /// Settles the `PENDING` check from QEMU's exit status: it passed if
    /// the machine powered off (status 0) while the call was under way.
    pub fn settle(&mut self, status: Option<i32>) {
        let Some(mut c) = self.pending.take() else {
            return;
        };
        let Some(i) = self.open.iter().position(|o| *o == c.id) else {
            return;
        };
        self.open.remove(i);
        self.unfinished = self.open.first().cloned();
        c.status = if status == Some(0) {
            Status::Pass
        } else {
            Status::Fail
        };
        c.actual = match status {
            Some(0) => "the machine powered off (QEMU exit status 0)".into(),
            _ => exit::describe(status),
        };
        self.checks.push(c);
    }
}

fn parse_check(line: &str) -> Option<Check> {
    let (status, rest) = if let Some(r) = line.strip_prefix("[PASS] ") {
        (Status::Pass, r)
    } else if let Some(r) = line.strip_prefix("[FAIL] ") {
        (Status::Fail, r)
    } else if let Some(r) = line.strip_prefix("[N/A ] ") {
        (Status::Na, r)
    } else {
        return None;
    };
    let (head, actual) = rest.rsplit_once(" | actual: ")?;
    let (head, expected) = head.rsplit_once(" | expected: ")?;
    let (id, what) = head.split_once(" - ")?;
    Some(Check {
        id: id.into(),
        status,
        what: what.into(),
        expected: expected.into(),
        actual: actual.into(),
    })
}

/// The hart prefix of a check's name (`h1.` of `h1.pmu.x`; empty on the
/// boot hart).
pub fn hart_prefix(id: &str) -> &str {
    match id.split_once('.') {
        Some((h, _))
            if h.len() > 1 && h.starts_with('h') && h[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            &id[..h.len() + 1]
        }
        _ => "",
    }
}

/// One of the kernel's JSON lines (`rvpmu.format=json`) as the text line
/// it stands for, or `None` when it is not one.
fn json_line(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let s = |k: &str| v[k].as_str().map(str::to_string);
    if let Some(id) = s("start") {
        return Some(format!("..> {id}"));
    }
    if let Some(id) = s("check") {
        let tag = match v["status"].as_str()? {
            "pass" => "[PASS]",
            "fail" => "[FAIL]",
            "n/a" => "[N/A ]",
            _ => return None,
        };
        return Some(format!(
            "{tag} {id} - {} | expected: {} | actual: {}",
            s("what")?,
            s("expected")?,
            s("actual")?
        ));
    }
    if let Some(id) = s("pending") {
        return Some(format!(
            "PENDING {id} - {} | expected: {}",
            s("what")?,
            s("expected")?
        ));
    }
    let r = &v["result"];
    let n = |k: &str| r[k].as_u64();
    Some(format!(
        "RESULT {} passed, {} failed, {} n/a",
        n("passed")?,
        n("failed")?,
        n("n/a")?
    ))
}

pub fn parse(text: &str) -> Report {
    let mut r = Report::default();
    for line in text.lines().map(|l| l.trim_end_matches('\r')) {
        let json = line.starts_with('{').then(|| json_line(line)).flatten();
        let line = json.as_deref().unwrap_or(line);
        if let Some(id) = line.strip_prefix("..> ") {
            // A hart announces its next check only once it has answered
            // the last: what is still open of that hart was answered by a
            // line this parser did not read.
            let h = hart_prefix(id);
            r.open.retain(|o| hart_prefix(o) != h);
            r.open.push(id.to_string());
        } else if let Some(c) = parse_check(line) {
            r.open.retain(|o| *o != c.id);
            if r.pending.as_ref().is_some_and(|p| p.id == c.id) {
                r.pending = None;
            }
            r.checks.push(c);
        } else if let Some(rest) = line.strip_prefix("PENDING ") {
            // "PENDING id - what | expected: E": the verdict comes from how
            // the run ends (`Report::settle`).
            r.pending = parse_check(&format!("[FAIL] {rest} | actual: -"));
        } else if let Some(rest) = line.strip_prefix("RESULT ") {
            let nums: Vec<usize> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            if let [p, f, n] = nums[..] {
                r.result = Some((p, f, n));
                r.counted = r.checks.len();
            }
        } else if line.starts_with("FATAL") {
            r.fatal.push(line.to_string());
        } else if let Some(rest) = line.strip_prefix("BOOT ") {
            r.boot_instret = rest
                .split_whitespace()
                .find_map(|w| w.strip_prefix("instret=")?.parse().ok());
        } else if let Some(rest) = line.strip_prefix("COST-BRACKET ") {
            r.cost_bracket = rest.trim().parse().ok();
        } else if let Some(rest) = line.strip_prefix("COST-METHOD ") {
            r.cost_method = rest.split_whitespace().next().map(String::from);
        } else if let Some(rest) = line.strip_prefix("COST ") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            if let [name, n, answer] = f[..] {
                if let Ok(n) = n.parse() {
                    r.costs.push((name.into(), n, answer.into()));
                }
            }
        }
    }
    r.unfinished = r.open.first().cloned();
    r
}

/// What [`verdicts`] finds in one run.
pub(crate) struct Verdicts {
    /// Each check's id and `PASS`, `FAIL` or `N/A`, in order.
    pub checks: Vec<(String, &'static str)>,
    /// The kernel's RESULT line: passed, failed, n/a.
    pub result: Option<(usize, usize, usize)>,
    /// A check announced that never printed its result.
    pub unfinished: Option<String>,
}

/// The verdicts of one run's output (QEMU's exit status `status` settles
/// the last, PENDING check). For other runners of the same kernel
/// (`cargo xtask hv`, which boots it as a VS-mode guest).
pub(crate) fn verdicts(text: &str, status: Option<i32>) -> Verdicts {
    let mut r = parse(text);
    r.settle(status);
    Verdicts {
        checks: r
            .checks
            .iter()
            .map(|c| (c.id.clone(), c.status.label()))
            .collect(),
        result: r.result,
        unfinished: r.unfinished,
    }
}

/// Runs the suite on `fw` (with the device tree `dtb`, if given),
/// repeating the run without any check that hung or crashed the machine,
/// so one bad answer does not hide the rest.
pub fn suite(
    target: &Target,
    kernel: &Path,
    smp: u32,
    verbose: bool,
    dtb: Option<&Path>,
) -> Result<Report> {
    suite_with(target, kernel, smp, verbose, dtb, &[], &[])
}

/// [`suite`], with the checks `known` skipped from the first run on (ones
/// known to end the machine, so that one run is enough) and more options
/// on the kernel command line (`rvpmu.format=json`, `rvpmu.only=...`).
pub fn suite_with(
    target: &Target,
    kernel: &Path,
    smp: u32,
    verbose: bool,
    dtb: Option<&Path>,
    known: &[&str],
    options: &[&str],
) -> Result<Report> {
    let mut skip: Vec<String> = known.iter().map(|s| s.to_string()).collect();
    loop {
        step(&format!(
            "conformance suite on {} (-smp {smp}{}{})",
            target.name(true),
            if options.is_empty() { "" } else { ", " },
            options.join(" ")
        ));
        let mut words: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        if !skip.is_empty() {
            words.push(format!("rvpmu.skip={}", skip.join(",")));
        }
        let append = words.join(" ");
        let cap = boot(target, kernel, smp, &append, dtb)?;
        if verbose {
            println!("{}", cap.text);
        }
        let mut rep = parse(&cap.text);
        rep.settle(cap.status);
        for f in &rep.fatal {
            eprintln!("  {f}");
        }
        if rep.result.is_some() && !cap.timed_out && rep.unfinished.is_none() {
            return Ok(rep);
        }
        let why = if cap.timed_out {
            "hung (no output for a while, or the timeout)".to_string()
        } else if rep.result.is_some() {
            "left a check unanswered on a hart".to_string()
        } else {
            format!("stopped early ({})", exit::describe(cap.status))
        };
        // Skipped by its bare name: on every hart.
        let bare = rep
            .unfinished
            .as_deref()
            .map(|id| id[hart_prefix(id).len()..].to_string());
        match bare {
            Some(id) if skip.len() < MAX_SKIPS && !skip.contains(&id) => {
                eprintln!(
                    "  the run {why} in check {}; repeating without {id} on every hart (reported as failed, not run)",
                    rep.unfinished.as_deref().unwrap_or_default()
                );
                skip.push(id);
            }
            _ => bail!(
                "the conformance kernel {why} on {} after {} checks and no check to blame; rerun with --verbose",
                target.name(true),
                rep.checks.len()
            ),
        }
    }
}

/// How the cost probes bracket a call: `instret` around the ecall, or
/// the `time` CSR's edges around it (the one a KVM guest can read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostMethod {
    Instret,
    Time,
}

impl CostMethod {
    /// The kernel's command line for it, and its name in `COST-METHOD`.
    fn words(self) -> (&'static str, &'static str) {
        match self {
            CostMethod::Instret => ("rvpmu.bench", "instret"),
            CostMethod::Time => ("rvpmu.bench=time", "time"),
        }
    }

    pub fn name(self) -> &'static str {
        self.words().1
    }
}

/// The kernel's cost probes on `target` (one hart), bracketed by
/// `method`: the report's `costs` are each call's instructions (empty
/// bracket subtracted) and answer, in the kernel's order.
pub fn costs(target: &Target, kernel: &Path, method: CostMethod) -> Result<Report> {
    let (append, name) = method.words();
    step(&format!("cost probes ({name}) on {}", target.name(true)));
    let cap = boot(target, kernel, 1, append, None)?;
    let rep = parse(&cap.text);
    if cap.timed_out || !cap.text.contains("COST-END") || rep.cost_method.as_deref() != Some(name) {
        bail!(
            "the cost probes ({name}) did not finish on {} ({:?})",
            target.name(true),
            rep.fatal
        );
    }
    // The time bracket's empty content is a few instructions when `time`
    // reads without a trap; a trap on every read would make its spins
    // far longer than the 3 instructions the conversion counts.
    if method == CostMethod::Time && rep.cost_bracket.is_none_or(|b| b > TIME_BRACKET_MAX) {
        bail!(
            "the empty time bracket on {} is {:?} instructions (at most {TIME_BRACKET_MAX} when the time CSR reads without a trap): the time method does not apply there",
            target.name(true),
            rep.cost_bracket
        );
    }
    Ok(rep)
}

/// The most instructions the empty time bracket may take: its content
/// is 0 to 3 instructions when `time` reads directly.
const TIME_BRACKET_MAX: u64 = 3;

/// The checks a report failed and found N/A, against the lists a
/// target is pinned to: `None` when they are exactly those, else what
/// differs.
pub fn unpinned(rep: &Report, fail: &[&str], na: &[&str]) -> Option<String> {
    let ids = |s: Status| -> Vec<&str> {
        rep.checks
            .iter()
            .filter(|c| c.status == s)
            .map(|c| c.id.as_str())
            .collect()
    };
    let (got_fail, got_na) = (ids(Status::Fail), ids(Status::Na));
    let diff = |got: &[&str], want: &[&str]| -> String {
        let new: Vec<&str> = got.iter().filter(|g| !want.contains(g)).copied().collect();
        let gone: Vec<&str> = want.iter().filter(|w| !got.contains(w)).copied().collect();
        format!("not pinned {new:?}, pinned but not so {gone:?}")
    };
    fn sorted<'a>(v: &[&'a str]) -> Vec<&'a str> {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    }
    if sorted(&got_fail) == sorted(fail) && sorted(&got_na) == sorted(na) {
        return None;
    }
    Some(format!(
        "failed: {}; N/A: {}",
        diff(&got_fail, fail),
        diff(&got_na, na)
    ))
}

/// Sanity of a finished report: the kernel's own totals match the lines
/// before its RESULT line.
pub fn consistent(rep: &Report) -> Result<()> {
    let Some((p, f, n)) = rep.result else {
        bail!("no RESULT line")
    };
    let (lp, lf, ln) = tally(&rep.checks[..rep.counted]);
    if (p, f, n) != (lp, lf, ln) {
        bail!("kernel says {p} passed, {f} failed, {n} n/a but printed {lp} / {lf} / {ln}");
    }
    if rep.checks.len() < MIN_CHECKS {
        bail!(
            "only {} checks ran (expected at least {MIN_CHECKS})",
            rep.checks.len()
        );
    }
    Ok(())
}

/// Every check of `rep` that did not pass, one line each on stderr.
pub fn print_not_passed(rep: &Report) {
    for c in rep.not_passed() {
        eprintln!(
            "  {} {} - {} | expected: {} | actual: {}",
            c.status.label(),
            c.id,
            c.what,
            c.expected,
            c.actual
        );
    }
}

/// Our firmware implements every optional feature the suite checks, so an
/// N/A on it is as wrong as a failure: both fail the run (other firmware's
/// are reported only).
pub fn require_all_passed(rep: &Report, smp: u32) -> Result<()> {
    let bad: Vec<&Check> = rep.not_passed().collect();
    print_not_passed(rep);
    if !bad.is_empty() {
        bail!(
            "{} failed and {} N/A of {} conformance checks on our firmware (-smp {smp}); N/A counts as not passed on our firmware",
            rep.failed(),
            rep.na(),
            rep.checks.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_check_lines_and_totals() {
        let text = "junk\n..> a.b\n[PASS] a.b - what - with dash | expected: X | actual: Y | z\n\
                    ..> c\n[N/A ] c - w | expected: n/a | actual: n/a: optional\n..> d\n[FAIL] d - w | expected: E | actual: A\n\
                    ..> e\nRESULT 1 passed, 1 failed, 1 n/a\n";
        let r = parse(text);
        assert_eq!(r.checks.len(), 3);
        assert_eq!(r.checks[0].id, "a.b");
        assert_eq!(r.checks[0].what, "what - with dash");
        assert_eq!(r.checks[0].actual, "Y | z");
        assert_eq!(r.checks[1].status, Status::Na);
        assert_eq!(r.checks[2].status, Status::Fail);
        assert_eq!(r.result, Some((1, 1, 1)));
        // N/A is neither passed nor failed.
        assert_eq!((r.passed(), r.failed(), r.na()), (1, 1, 1));
        assert_eq!(r.not_passed().count(), 2);
        assert_eq!(r.unfinished.as_deref(), Some("e"));
        assert!(consistent_counts(&r));
    }

    fn consistent_counts(r: &Report) -> bool {
        r.result == Some(tally(&r.checks[..r.counted]))
    }

    const FINAL: &str =
        "[PASS] a - w | expected: E | actual: A\nRESULT 1 passed, 0 failed, 0 n/a\n\
                         ..> srst.x\nPENDING srst.x - shutdown | expected: off\n";

    #[test]
    fn pending_check_passes_on_power_off() {
        let mut r = parse(FINAL);
        assert_eq!(r.unfinished.as_deref(), Some("srst.x"));
        r.settle(Some(0));
        assert_eq!(r.unfinished, None);
        assert_eq!(r.checks.len(), 2);
        let c = &r.checks[1];
        assert_eq!((c.id.as_str(), c.status), ("srst.x", Status::Pass));
        assert_eq!((c.what.as_str(), c.expected.as_str()), ("shutdown", "off"));
        // RESULT counts only the checks before it.
        assert!(consistent_counts(&r));
    }

    #[test]
    fn pending_check_fails_on_other_exits_or_a_returned_call() {
        for status in [Some(1), Some(83), None] {
            let mut r = parse(FINAL);
            r.settle(status);
            assert_eq!(r.checks[1].status, Status::Fail, "{status:?}");
        }
        let text = format!("{FINAL}[FAIL] srst.x - shutdown | expected: off | actual: the call returned INVALID_PARAM\n");
        let mut r = parse(&text);
        r.settle(Some(0));
        assert_eq!(r.checks.len(), 2);
        assert_eq!(r.checks[1].status, Status::Fail);
        assert!(consistent_counts(&r));
    }

    #[test]
    fn pinned_lists_match_as_sets() {
        let r = parse(
            "[FAIL] b - w | expected: E | actual: A\n[PASS] c - w | expected: E | actual: E\n\
             [FAIL] a - w | expected: E | actual: A\n[N/A ] d - w | expected: n/a | actual: n/a\n",
        );
        assert_eq!(unpinned(&r, &["a", "b"], &["d"]), None);
        let off = unpinned(&r, &["a", "c"], &[]).expect("differs");
        assert!(off.contains(r#"not pinned ["b"]"#), "{off}");
        assert!(off.contains(r#"pinned but not so ["c"]"#), "{off}");
        assert!(off.contains(r#"N/A: not pinned ["d"]"#), "{off}");
    }

    #[test]
    fn kvm_pins_name_each_check_once() {
        let mut ids = kvm_fail_ids(Version::V7_2).unwrap();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
        assert!(KVM_SKIP.iter().all(|s| ids.contains(s)));
    }

    /// Every KVM patch of 7.2's series has its entry in [`KVM_FIXES`] and
    /// every entry its patch; each check there is one KVM fails unpatched,
    /// fixed by one patch only; the fixed kernel's pins are the rest.
    #[test]
    fn kvm_fixes_name_the_series_patches_and_pinned_checks() {
        let series = crate::build::kernel::read_series(Release::V7_2).unwrap();
        let kvm: Vec<&str> = series
            .iter()
            .filter(|p| String::from_utf8_lossy(&p.bytes).contains("] RISC-V: KVM: "))
            .map(|p| p.file_name())
            .collect();
        let named: Vec<&str> = KVM_FIXES.iter().map(|f| f.0).collect();
        assert_eq!(named, kvm);
        let stock = kvm_fail_ids(Version::V7_2).unwrap();
        let mut fixed = kvm_fixed_ids(Version::V7_2_FIXED);
        assert!(fixed.iter().all(|id| stock.contains(id)), "{fixed:?}");
        let n = fixed.len();
        fixed.sort_unstable();
        fixed.dedup();
        assert_eq!(fixed.len(), n, "a check named by two patches");
        let rest = kvm_fail_ids(Version::V7_2_FIXED).unwrap();
        assert_eq!(rest.len() + n, stock.len());
        assert!(rest.iter().all(|id| !fixed.contains(id)));
        assert!(kvm_skip(Version::V7_2_FIXED).is_empty());
        assert_eq!(kvm_skip(Version::V7_2), KVM_SKIP);
        assert_eq!(kvm_fail_ids(Version::V6_12), None);
    }

    #[test]
    fn a_hart_left_in_a_check_is_blamed_though_others_went_on() {
        // Hart 1 hangs in x; hart 0 reports it did not finish and sums up.
        let text = "..> a\n[PASS] a - w | expected: E | actual: E\n..> h1.a\n[PASS] h1.a - w | expected: E | actual: E\n\
                    ..> h1.x\n[FAIL] smp.hart1.ran - w | expected: E | actual: A\nRESULT 2 passed, 1 failed, 0 n/a\n";
        let r = parse(text);
        assert_eq!(r.result, Some((2, 1, 0)));
        assert_eq!(r.unfinished.as_deref(), Some("h1.x"));
        assert_eq!(hart_prefix("h1.x"), "h1.");
        assert_eq!(hart_prefix("h12.pmu.x"), "h12.");
        assert_eq!(hart_prefix("hsm.suspend"), "");
        assert_eq!(hart_prefix("h.x"), "");
        assert_eq!(hart_prefix("pmu.x"), "");
        // The pending check of hart 0 settles while hart 1's stays open.
        let text = "..> h1.x\nRESULT 0 passed, 0 failed, 0 n/a\n..> srst.s\nPENDING srst.s - w | expected: off\n";
        let mut r = parse(text);
        r.settle(Some(0));
        assert_eq!(r.checks.len(), 1);
        assert_eq!(r.unfinished.as_deref(), Some("h1.x"));
    }

    #[test]
    fn json_lines_read_as_the_text_lines() {
        let text = "OpenSBI banner {not json}\n{\"start\":\"a.b\"}\n\
                    {\"check\":\"a.b\",\"hart\":0,\"status\":\"pass\",\"what\":\"w \\\"q\\\" | x\",\"expected\":\"E\",\"actual\":\"A\"}\n\
                    {\"start\":\"h1.c\"}\n{\"check\":\"h1.c\",\"hart\":1,\"status\":\"n/a\",\"what\":\"w\",\"expected\":\"n/a\",\"actual\":\"n/a: x\"}\n\
                    {\"result\":{\"passed\":1,\"failed\":0,\"n/a\":1}}\n{\"start\":\"s\"}\n\
                    {\"pending\":\"s\",\"what\":\"w\",\"expected\":\"off\"}\n";
        let mut r = parse(text);
        r.settle(Some(0));
        assert_eq!(r.result, Some((1, 0, 1)));
        assert_eq!(r.checks.len(), 3);
        assert_eq!(r.checks[0].what, "w \"q\" | x");
        assert_eq!(
            (r.checks[1].id.as_str(), r.checks[1].status),
            ("h1.c", Status::Na)
        );
        assert_eq!(
            (r.checks[2].id.as_str(), r.checks[2].status),
            ("s", Status::Pass)
        );
        assert_eq!(r.unfinished, None);
        assert!(consistent_counts(&r));
    }

    #[test]
    fn parses_costs_and_boot() {
        let r = parse(
            "BOOT hart=0 instret=13114836\nCOST-METHOD time 100\nCOST-BRACKET 1\n\
             COST pmu.num_counters 332 SUCCESS\nCOST bad\n",
        );
        assert_eq!(r.boot_instret, Some(13114836));
        assert_eq!(r.cost_method.as_deref(), Some("time"));
        assert_eq!(r.cost_bracket, Some(1));
        assert_eq!(
            r.costs,
            vec![("pmu.num_counters".to_string(), 332, "SUCCESS".to_string())]
        );
    }
}
