//! SBI call dispatch: BASE, TIME, IPI, RFENCE, HSM, SRST, DBCN, the legacy
//! calls, and (through `pmu`) PMU and STA.
#![cfg(target_os = "none")]

use crate::frame::{redirect, this_hart, TrapFrame, A0, A1};
use crate::layout::MAX_HARTS;
use crate::machine::{self, Fence, FenceKind, HartLocal, Ready};
use crate::platform::Features;
use crate::pmu::HartPmu;
use rvpmu::mem::{PhysMemory, SupervisorMemory};
use rvpmu_rt::base::{self as rt_base, err, ok, Base, MachineId};
use rvpmu_rt::csr::{self, MIP_SSIP};
use sbi_spec::binary::{
    SbiRet, RET_ERR_FAILED, RET_ERR_INVALID_ADDRESS, RET_ERR_INVALID_PARAM, RET_ERR_NOT_SUPPORTED,
    RET_SUCCESS,
};
use sbi_spec::{base, dbcn, hsm, legacy, rfnc, spi, srst, time};

/// (error, value) as returned in a0/a1 (`repr(C)`: the trap entry's fast
/// path takes it back from `ecall_fast` in those registers).
pub type Ret = SbiRet;

/// The highest legacy (SBI v0.1) EID; these take the full-frame path.
pub const LEGACY_LAST_EID: usize = legacy::LEGACY_SHUTDOWN;

/// Declares an `extern "C"` function `$name` of the argument registers
/// a0..a5 and then the FID (and the EID, where named), taken in the
/// registers they arrived in, answering in a0/a1; `$a` is a0..a5 as an
/// array in `$body`.
macro_rules! sbi_fn {
    ($(#[$attr:meta])* $vis:vis $name:ident, |$a:ident $(, $reg:ident)+| $body:expr) => {
        $(#[$attr])*
        #[allow(clippy::too_many_arguments)]
        $vis extern "C" fn $name(
            a0: usize,
            a1: usize,
            a2: usize,
            a3: usize,
            a4: usize,
            a5: usize,
            $($reg: usize),+
        ) -> SbiRet {
            #[allow(unused_variables)]
            let $a = [a0, a1, a2, a3, a4, a5];
            $body
        }
    };
}

sbi_fn!(
    /// The trap entry's fast path for an S-mode ecall with a non-legacy EID:
    /// the arguments arrive in their registers (a6 = FID, a7 = EID) and the
    /// answer goes back in a0/a1; the entry code advances mepc. Only what the
    /// C ABI lets this function clobber was saved, so nothing here may need
    /// the trap frame (see `entry.rs`).
    pub ecall_fast,
    |a, fid, eid| dispatch(a, fid, eid)
);

/// Handle an ecall from S-mode with the full trap frame saved (legacy
/// calls; any other EID is answered as on the fast path).
pub fn ecall(f: &mut TrapFrame) {
    let eid = f.regs[17];
    let fid = f.regs[16];
    let a = [
        f.regs[10], f.regs[11], f.regs[12], f.regs[13], f.regs[14], f.regs[15],
    ];
    if eid <= LEGACY_LAST_EID {
        return legacy_call(f, eid, a);
    }
    let r = dispatch(a, fid, eid);
    f.regs[A0] = r.error;
    f.regs[A1] = r.value;
    f.mepc += 4;
}

/// One extension's calls: a0..a5 and the FID, in the registers they
/// arrived in, so that dispatch is a compare tree over the EID and a tail
/// call. Each extension is its own function: the cheap calls pay for no
/// register saves the expensive ones need.
type Extension = extern "C" fn(usize, usize, usize, usize, usize, usize, usize) -> SbiRet;

/// Call the extension serving `eid`. PMU calls (the ones perf makes
/// while it samples) are recognised with one compare: the other extensions
/// are looked up in a separate function, where the compiler's search tree
/// cannot absorb the PMU compare.
#[inline(always)]
fn dispatch(a: [usize; 6], fid: usize, eid: usize) -> SbiRet {
    let [a0, a1, a2, a3, a4, a5] = a;
    if eid == rvpmu::ecall::EID_PMU {
        pmu_ext(a0, a1, a2, a3, a4, a5, fid)
    } else {
        other_ext(a0, a1, a2, a3, a4, a5, fid, eid)
    }
}

/// The one table of the extensions this firmware serves besides PMU (and
/// the legacy EIDs 0-8, served by the trap entry): dispatch and
/// probe_extension ([`Firmware::probe`]) both read it.
#[inline(always)]
fn other_extension(eid: usize) -> Option<Extension> {
    Some(match eid {
        time::EID_TIME => time_ext,
        spi::EID_SPI => spi_ext,
        rfnc::EID_RFNC => rfnc_ext,
        base::EID_BASE => base_ext,
        rvpmu::ecall::EID_STA => sta_ext,
        hsm::EID_HSM => hsm_ext,
        srst::EID_SRST => srst_ext,
        dbcn::EID_DBCN => dbcn_ext,
        _ => return None,
    })
}

sbi_fn!(
    /// Every extension but PMU: `ecall_fast`'s signature, the EID included.
    #[inline(never)]
    other_ext,
    |a, fid, eid| {
        let [a0, a1, a2, a3, a4, a5] = a;
        other_extension(eid).unwrap_or(unsupported_ext)(a0, a1, a2, a3, a4, a5, fid)
    }
);

// Each extension that needs the hart's state borrows it here, once per
// call: these functions are where an ecall's trap is served (the fast path
// reaches them from `ecall_fast`, the full path from `ecall`).
sbi_fn!(pmu_ext, |a, fid| {
    // SAFETY: once per trap, on this hart, not kept past it.
    let perf = &mut unsafe { this_hart() }.perf;
    rvpmu::ecall::pmu(&mut perf.pmu, &mut perf.mem, fid, a)
});
sbi_fn!(sta_ext, |a, fid| {
    // SAFETY: once per trap, on this hart, not kept past it.
    let perf = &mut unsafe { this_hart() }.perf;
    rvpmu::ecall::sta(&mut perf.sta, &mut perf.mem, fid, a)
});
sbi_fn!(base_ext, |a, fid| base_call(fid, a[0]));
sbi_fn!(time_ext, |a, fid| {
    if fid != time::SET_TIMER {
        return err(RET_ERR_NOT_SUPPORTED);
    }
    // SAFETY: once per trap, on this hart, not kept past it.
    crate::timer::set_timer(a[0] as u64, unsafe { this_hart() });
    ok(0)
});
sbi_fn!(spi_ext, |a, fid| {
    if fid != spi::SEND_IPI {
        return err(RET_ERR_NOT_SUPPORTED);
    }
    // SAFETY: once per trap, on this hart, not kept past it.
    let hart = unsafe { this_hart() };
    send_ipi(hart.ready, a[0], a[1], &mut hart.perf.pmu)
});
sbi_fn!(rfnc_ext, |a, fid| {
    // SAFETY: once per trap, on this hart, not kept past it.
    let hart = unsafe { this_hart() };
    rfence(hart.ready, fid, a, &mut hart.perf.pmu)
});
sbi_fn!(hsm_ext, |a, fid| {
    // SAFETY: once per trap, on this hart, not kept past it.
    hsm_call(fid, a, unsafe { this_hart() })
});
sbi_fn!(srst_ext, |a, fid| {
    if fid != srst::SYSTEM_RESET {
        return err(RET_ERR_NOT_SUPPORTED);
    }
    system_reset(a[0], a[1])
});
sbi_fn!(dbcn_ext, |a, fid| {
    // SAFETY: once per trap, on this hart, not kept past it.
    let hart = unsafe { this_hart() };
    dbcn_call(hart.ready, &mut hart.perf.mem, fid, a)
});
sbi_fn!(unsupported_ext, |a, _fid| err(RET_ERR_NOT_SUPPORTED));

/// The firmware as BASE answers: its extensions, the machine's own ids.
struct Firmware;

impl Base for Firmware {
    const IMPL_ID: usize = rvpmu_rt::base::impl_id::FIRMWARE;
    #[inline(always)]
    fn probe(&self, eid: usize) -> bool {
        // Legacy extensions 0-8, PMU (dispatched first, on its own), the rest.
        eid <= LEGACY_LAST_EID || eid == rvpmu::ecall::EID_PMU || other_extension(eid).is_some()
    }
    #[inline(always)]
    fn machine_id(&self, id: MachineId) -> usize {
        match id {
            MachineId::Vendor => csr::MVENDORID.read(),
            MachineId::Arch => csr::MARCHID.read(),
            MachineId::Impl => csr::MIMPID.read(),
        }
    }
}

fn base_call(fid: usize, arg: usize) -> Ret {
    rt_base::call(&Firmware, fid, arg)
}

/// The harts named by (hart_mask, hart_mask_base) as a bit set, or
/// INVALID_PARAM if any of them is not a hart of this machine.
fn hart_set(ready: Ready, mask: usize, mask_base: usize) -> Result<u64, usize> {
    let p = ready.platform();
    let mut set = 0u64;
    if mask_base == usize::MAX {
        for h in 0..MAX_HARTS {
            if p.hart_valid(h) {
                set |= 1 << h;
            }
        }
        return Ok(set);
    }
    for bit in 0..usize::BITS as usize {
        if mask & (1 << bit) == 0 {
            continue;
        }
        match mask_base.checked_add(bit) {
            Some(h) if p.hart_valid(h) => set |= 1 << h,
            _ => return Err(RET_ERR_INVALID_PARAM),
        }
    }
    Ok(set)
}

fn for_each_hart(set: u64, mut f: impl FnMut(usize)) {
    for h in 0..MAX_HARTS {
        if set & (1 << h) != 0 {
            f(h);
        }
    }
}

fn send_ipi(ready: Ready, mask: usize, mask_base: usize, pmu: &mut HartPmu) -> Ret {
    match hart_set(ready, mask, mask_base) {
        Ok(set) => {
            let me = csr::MHARTID.read();
            for_each_hart(set, |h| machine::send_ipi(ready, me, h, pmu));
            ok(0)
        }
        Err(e) => err(e),
    }
}

fn rfence(ready: Ready, fid: usize, a: [usize; 6], pmu: &mut HartPmu) -> Ret {
    let kind = match fid {
        rfnc::REMOTE_FENCE_I => FenceKind::I,
        rfnc::REMOTE_SFENCE_VMA => FenceKind::Vma,
        rfnc::REMOTE_SFENCE_VMA_ASID => FenceKind::VmaAsid,
        rfnc::REMOTE_HFENCE_GVMA_VMID => FenceKind::GvmaVmid,
        rfnc::REMOTE_HFENCE_GVMA => FenceKind::Gvma,
        rfnc::REMOTE_HFENCE_VVMA_ASID => FenceKind::VvmaAsid,
        rfnc::REMOTE_HFENCE_VVMA => FenceKind::Vvma,
        _ => return err(RET_ERR_NOT_SUPPORTED),
    };
    let me = csr::MHARTID.read();
    let hypervisor = !matches!(kind, FenceKind::I | FenceKind::Vma | FenceKind::VmaAsid);
    if hypervisor && !ready.platform().hart_features(me).has(Features::H) {
        return err(RET_ERR_NOT_SUPPORTED);
    }
    let set = match hart_set(ready, a[0], a[1]) {
        Ok(s) => s,
        Err(e) => return err(e),
    };
    let id = match kind {
        FenceKind::VmaAsid | FenceKind::GvmaVmid => a[4],
        // hfence.vvma acts on a VMID: the caller's current one (hgatp.VMID).
        FenceKind::Vvma | FenceKind::VvmaAsid => csr::HGATP.read() & (0x3fff << 44),
        _ => 0,
    };
    machine::remote_fence(
        ready,
        me,
        set,
        Fence {
            kind,
            start: a[2],
            size: a[3],
            id,
        },
        pmu,
    );
    ok(0)
}

fn hsm_call(fid: usize, a: [usize; 6], hart: &mut HartLocal) -> Ret {
    let me = csr::MHARTID.read();
    let p = hart.ready.platform();
    let ram = &p.ram;
    match fid {
        hsm::HART_START => {
            if !p.hart_valid(a[0]) {
                return err(RET_ERR_INVALID_PARAM);
            }
            if !ram.owns(a[1] as u64, 4) {
                return err(RET_ERR_INVALID_ADDRESS);
            }
            match machine::request_start(hart.ready, a[0], a[1], a[2]) {
                Ok(()) => ok(0),
                Err(e) => err(e),
            }
        }
        hsm::HART_STOP => crate::hsm::stop_and_wait(me, hart),
        hsm::HART_GET_STATUS => {
            if p.hart_valid(a[0]) {
                ok(machine::hsm_state(a[0]))
            } else {
                err(RET_ERR_INVALID_PARAM)
            }
        }
        hsm::HART_SUSPEND => {
            // suspend_type is 32 bits wide: only its low 32 bits count
            // (binary encoding: "In case the data is defined as 32bit
            // wide, higher privilege software must ensure that it only
            // uses 32 bit data"). A caller following the psABI passes
            // 0x80000000 as 0xffffffff_80000000.
            match a[0] as u32 {
                hsm::suspend_type::RETENTIVE => {
                    crate::hsm::suspend(me, hart);
                    ok(0)
                }
                hsm::suspend_type::NON_RETENTIVE => {
                    if !ram.owns(a[1] as u64, 4) {
                        return err(RET_ERR_INVALID_ADDRESS);
                    }
                    crate::hsm::suspend(me, hart);
                    // SAFETY: resuming S-mode at the address it gave.
                    unsafe { crate::frame::enter_supervisor(me, a[2], a[1]) }
                }
                // Reserved and (unimplemented) platform-specific types.
                _ => err(RET_ERR_INVALID_PARAM),
            }
        }
        _ => err(RET_ERR_NOT_SUPPORTED),
    }
}

fn system_reset(kind: usize, reason: usize) -> Ret {
    // reset_type and reset_reason are 32 bits wide: only their low 32 bits
    // count (binary encoding), whatever the upper bits of the registers.
    let (kind, reason) = (kind as u32, reason as u32);
    // Reasons: 0 none, 1 system failure, SBI- and vendor-specific ranges.
    if (2..0xE000_0000).contains(&reason) {
        return err(RET_ERR_INVALID_PARAM);
    }
    match kind {
        srst::RESET_TYPE_SHUTDOWN => {
            if reason == srst::RESET_REASON_SYSTEM_FAILURE {
                crate::power::fail(rvpmu_rt::exit::SYSTEM_FAILURE);
            }
            crate::power::shutdown();
        }
        srst::RESET_TYPE_COLD_REBOOT | srst::RESET_TYPE_WARM_REBOOT => crate::power::reboot(),
        _ => return err(RET_ERR_INVALID_PARAM),
    }
    err(RET_ERR_FAILED)
}

/// `ram`: S-mode memory as the hart's engine sees it (the platform's, as
/// for STA).
fn dbcn_call(ready: Ready, ram: &mut PhysMemory, fid: usize, a: [usize; 6]) -> Ret {
    let (len, addr) = (a[0], a[1]);
    match fid {
        dbcn::CONSOLE_WRITE | dbcn::CONSOLE_READ => {
            if len == 0 {
                return ok(0);
            }
            if a[2] != 0 || !ram.owns(addr as u64, len as u64) {
                return err(RET_ERR_INVALID_PARAM);
            }
            if fid == dbcn::CONSOLE_WRITE {
                machine::with_console(ready, |u| {
                    let mut buf = [0u8; 64];
                    for off in (0..len).step_by(buf.len()) {
                        let n = buf.len().min(len - off);
                        // Cannot fail: the whole range was checked above.
                        let _ = ram.read((addr + off) as u64, &mut buf[..n]);
                        buf[..n].iter().for_each(|&b| u.put(b));
                    }
                });
                ok(len)
            } else {
                let mut n = 0;
                while n < len {
                    let Some(b) = machine::with_console(ready, |u| u.get()) else {
                        break;
                    };
                    let _ = ram.write((addr + n) as u64, &[b]);
                    n += 1;
                }
                ok(n)
            }
        }
        dbcn::CONSOLE_WRITE_BYTE => {
            // `uint8_t byte`: only the low 8 bits count.
            machine::with_console(ready, |u| u.put(a[0] as u8));
            ok(0)
        }
        _ => err(RET_ERR_NOT_SUPPORTED),
    }
}

/// SBI v0.1 calls: the result goes in a0 only. Hart masks are pointers in
/// S-mode's address space (NULL: all harts); a fault reading one is
/// redirected to S-mode as the load's own fault. The IPI and fence calls
/// are v0.2's (sPI send_ipi, RFENCE) on the mask read from memory, so a bad
/// hart in it answers their error. Borrows the hart's state for the trap
/// (the full path's ecall borrows nowhere else).
fn legacy_call(f: &mut TrapFrame, eid: usize, a: [usize; 6]) {
    // SAFETY: once per trap, on this hart, not kept past it.
    let hart = unsafe { this_hart() };
    let ready = hart.ready;
    // v0.2's (hart_mask, hart_mask_base), or the fault (mcause, address).
    let mask = |ptr: usize| -> Result<(usize, usize), (usize, usize)> {
        if ptr == 0 {
            return Ok((0, usize::MAX));
        }
        let m = crate::frame::load_u64(f, ptr).map_err(|cause| (cause, ptr))?;
        Ok((m as usize, 0))
    };
    // A v0.2 answer as v0.1's one value: the error code, or the value.
    let value = |r: Ret| {
        if r.error == RET_SUCCESS {
            r.value
        } else {
            r.error
        }
    };
    let result: Result<usize, (usize, usize)> = match eid {
        legacy::LEGACY_SET_TIMER => {
            crate::timer::set_timer(a[0] as u64, hart);
            Ok(0)
        }
        legacy::LEGACY_CONSOLE_PUTCHAR => {
            // `int ch`: the character is its low 8 bits.
            machine::with_console(ready, |u| u.put(a[0] as u8));
            Ok(0)
        }
        legacy::LEGACY_CONSOLE_GETCHAR => {
            Ok(machine::with_console(ready, |u| u.get()).map_or(usize::MAX, |b| b as usize))
        }
        legacy::LEGACY_CLEAR_IPI => {
            csr::MIP.clear(MIP_SSIP);
            Ok(0)
        }
        legacy::LEGACY_SEND_IPI => {
            mask(a[0]).map(|(m, base)| value(send_ipi(ready, m, base, &mut hart.perf.pmu)))
        }
        legacy::LEGACY_REMOTE_FENCE_I
        | legacy::LEGACY_REMOTE_SFENCE_VMA
        | legacy::LEGACY_REMOTE_SFENCE_VMA_ASID => mask(a[0]).map(|(m, base)| {
            let fid = match eid {
                legacy::LEGACY_REMOTE_FENCE_I => rfnc::REMOTE_FENCE_I,
                legacy::LEGACY_REMOTE_SFENCE_VMA => rfnc::REMOTE_SFENCE_VMA,
                _ => rfnc::REMOTE_SFENCE_VMA_ASID,
            };
            // start, size and ASID go where RFENCE has them.
            let args = [m, base, a[1], a[2], a[3], 0];
            value(rfence(ready, fid, args, &mut hart.perf.pmu))
        }),
        _ => {
            // LEGACY_SHUTDOWN
            crate::power::shutdown();
            Ok(usize::MAX)
        }
    };
    match result {
        Ok(v) => {
            f.regs[A0] = v;
            f.mepc += 4;
        }
        Err((cause, addr)) => redirect(ready, f, cause, addr),
    }
}
