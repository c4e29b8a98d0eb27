//! The guest's SBI calls (ecall from VS-mode, scause 10). One table,
//! [`GuestSbi::extension`], drives both the dispatch and
//! `probe_extension`, so a probe is true exactly for what is served:
//!
//! | extension | how |
//! |---|---|
//! | BASE | answered here ([`rvpmu_rt::base`]): spec 3.0, the hypervisor's implementation id ([`rvpmu_rt::base::impl_id::HYPERVISOR`]), the project version, machine ids 0 |
//! | TIME | `set_timer` writes the guest's `vstimecmp` ([`VsHart`]; needs Sstc with `henvcfg.STCE`) |
//! | DBCN | `console_write`/`console_read` forwarded to the host firmware after the guest-physical buffer is translated and bounds-checked against the guest's RAM ([`GuestRam::translate`]); `console_write_byte` forwarded |
//! | SRST | forwarded (the host firmware checks type and reason; a shutdown ends the machine) |
//! | HSM | one vCPU, hart id 0: always STARTED; start answers ALREADY_AVAILABLE, stop FAILED (the last hart cannot stop), suspend NOT_SUPPORTED for the two default types (no idle states are described), INVALID_PARAM for reserved and platform-specific types |
//! | IPI | to hart 0: the guest's supervisor software interrupt (hvip.VSSIP) |
//! | RFENCE | to hart 0: fence.i, or all of the guest's VS-stage translations (hfence.vvma); the hfence functions are NOT_SUPPORTED (the guest has no H) |
//! | PMU | the `rvpmu` engine ([`PmuExtension`], built by the hypervisor over [`crate::vpmu::HostHpm`]) when there is one; SET_TIMER is its firmware event |
//! | STA | `rvpmu`'s STA engine ([`rvpmu::ecall::sta`]) over the guest's RAM: the record is registered here, the scheduler (`crate::sched`) fills it |
//!
//! With more than one guest, a guest's SRST shutdown ends that guest only
//! ([`GuestSbi::call`] answers [`Outcome::Ended`]; the last one's is
//! forwarded), and its console lines are tagged `[gN] `
//! ([`GuestSbi::tag_console`]).
//!
//! Forwarded extensions are offered only when the host firmware offers
//! them ([`HostExtensions`]). Every other EID, and every unknown FID, is
//! `SBI_ERR_NOT_SUPPORTED`. EID and FID are the low 32 bits of a7 and a6
//! (the spec's binary encoding makes them signed 32-bit integers).

use crate::ram::{GuestMemory, GuestRam};
use rvpmu::ecall::PmuExtension;
use rvpmu::event::FwEvent;
use rvpmu::mem::SupervisorMemory;
use rvpmu::sta::StealTime;
use rvpmu_rt::base::{err, ok, Base, MachineId};
use rvpmu_sbi::client::{SbiCall, Supervisor};
use sbi_spec::binary::{SbiRet, RET_ERR_INVALID_PARAM, RET_ERR_NOT_SUPPORTED, RET_SUCCESS};
use sbi_spec::binary::{RET_ERR_ALREADY_AVAILABLE, RET_ERR_FAILED};
use sbi_spec::{base, dbcn, hsm, pmu, rfnc, spi, srst, sta, time};

/// No PMU for the guest (the type of `GuestSbi` without one).
pub enum NoPmu {}

impl PmuExtension<GuestMemory> for NoPmu {
    fn call(&mut self, _: &mut GuestMemory, _: usize, _: [usize; 6]) -> SbiRet {
        match *self {}
    }
    fn record(&mut self, _: FwEvent) {
        match *self {}
    }
}

/// What the calls here do to the guest's hart (its VS CSRs and fences):
/// the seam between the SBI semantics and the hardware.
pub trait VsHart {
    /// Program the next timer event at `stime_value` (the guest's time
    /// base), which also clears a pending one if it lies in the future.
    fn set_timer(&mut self, stime_value: u64);
    /// Make the guest's supervisor software interrupt pending.
    fn send_ipi(&mut self);
    /// Make the guest's instruction fetches see its earlier stores.
    fn fence_i(&mut self);
    /// Forget every guest-virtual translation of the guest.
    fn flush_guest_tlb(&mut self);
}

/// The guest's only hart id.
pub const GUEST_HART: usize = 0;

/// Most bytes of one tagged console write (several guests).
pub const TAGGED_WRITE_MAX: usize = 4096;

/// Whether the hart set (`hart_mask`, `hart_mask_base`) holds the guest's
/// hart, or INVALID_PARAM if it names any other (SBI "Hart list"; a base
/// of -1 means every hart).
fn names_our_hart(mask: usize, base: usize) -> Result<bool, SbiRet> {
    if base == usize::MAX {
        return Ok(true);
    }
    if mask == 0 {
        return Ok(false);
    }
    if base > GUEST_HART || mask >> (GUEST_HART - base) != 1 {
        return Err(err(RET_ERR_INVALID_PARAM));
    }
    Ok(true)
}

/// What the host firmware offers that the guest's calls are forwarded to
/// (probed once at boot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostExtensions {
    /// DBCN.
    pub dbcn: bool,
    /// SRST.
    pub srst: bool,
}

/// The extensions served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extension {
    /// BASE.
    Base,
    /// TIME.
    Time,
    /// DBCN, forwarded.
    Dbcn,
    /// SRST, forwarded.
    Srst,
    /// HSM, for the one vCPU.
    Hsm,
    /// IPI, to the one vCPU.
    Ipi,
    /// RFENCE, on the one vCPU.
    Rfence,
    /// PMU, the engine over host counters.
    Pmu,
    /// STA, the vCPU's steal-time record.
    Sta,
}

/// What a guest's SRST call means when other guests are still alive
/// ([`GuestSbi::call`] with `others_alive`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// An answer for the guest (it resumes).
    Answer(SbiRet),
    /// The guest asked for a shutdown and other guests still run: it
    /// ends, the machine does not (the last guest's shutdown is
    /// forwarded to the host firmware).
    Ended,
}

/// Whether an SRST `reset_type` and `reset_reason` (both 32 bits wide)
/// are defined by the spec (or in its implementation/vendor ranges);
/// reserved values are SBI_ERR_INVALID_PARAM.
fn srst_valid(reset_type: usize, reason: usize) -> bool {
    let t = reset_type as u32;
    let r = reason as u32;
    let type_ok = t <= srst::RESET_TYPE_WARM_REBOOT || t >= 0xf000_0000;
    let reason_ok = r <= srst::RESET_REASON_SYSTEM_FAILURE || r >= 0xe000_0000;
    type_ok && reason_ok
}

/// The SBI implementation one guest sees.
pub struct GuestSbi<C: SbiCall, T: VsHart, P: PmuExtension<GuestMemory> = NoPmu> {
    /// The host firmware, through the one S-mode client.
    pub host: Supervisor<C>,
    /// The guest's hart.
    pub hart: T,
    /// Whether the hart gives the guest `vstimecmp` (else TIME is not
    /// offered).
    timer: bool,
    ram: GuestRam,
    host_ext: HostExtensions,
    /// The guest's PMU, when the host can give it one.
    pub pmu: Option<P>,
    /// The guest's RAM, for the STA record and tagged console output.
    pub mem: GuestMemory,
    /// The vCPU's steal-time record (registered by the guest's STA call,
    /// written by the scheduler).
    pub sta: StealTime,
    /// With several guests: this guest's console lines, tagged and
    /// held until complete ([`GuestSbi::tag_console`]).
    console: Option<LineBuf>,
}

/// Bytes of one guest's console line held until its newline.
pub const LINE_MAX: usize = 8192;

/// The memory one guest's console line is assembled in (several
/// guests; [`GuestSbi::tag_console`]). Kept apart from [`GuestSbi`]
/// (the hypervisor has one static per guest), so that the fields every
/// SBI call uses stay close together.
pub struct ConsoleLine([u8; LINE_MAX]);

impl ConsoleLine {
    /// An empty line.
    pub const fn new() -> ConsoleLine {
        ConsoleLine([0; LINE_MAX])
    }
}

impl Default for ConsoleLine {
    fn default() -> Self {
        Self::new()
    }
}

/// A guest's console output being assembled into whole lines: `[gN] `,
/// then the line's bytes; sent to the host console at its newline (or
/// when full: a longer line goes out in parts, the later ones untagged).
struct LineBuf {
    n: u8,
    buf: &'static mut ConsoleLine,
    len: usize,
    /// The next byte continues a line already partly sent.
    continued: bool,
}

/// BASE: the probe is [`GuestSbi::extension`], the dispatch's table.
impl<C: SbiCall, T: VsHart, P: PmuExtension<GuestMemory>> Base for GuestSbi<C, T, P> {
    const IMPL_ID: usize = rvpmu_rt::base::impl_id::HYPERVISOR;
    fn probe(&self, eid: usize) -> bool {
        self.extension(eid).is_some()
    }
    /// 0 is always a legal value of these CSRs; a guest learns nothing
    /// about the host's machine.
    fn machine_id(&self, _: MachineId) -> usize {
        0
    }
}

impl<C: SbiCall, T: VsHart, P: PmuExtension<GuestMemory>> GuestSbi<C, T, P> {
    /// The SBI of a guest whose RAM is `mem`, on `hart`, which has the
    /// guest timer when `timer`, and the PMU `pmu` if any.
    pub fn new(
        host: Supervisor<C>,
        host_ext: HostExtensions,
        hart: T,
        timer: bool,
        mem: GuestMemory,
        pmu: Option<P>,
    ) -> Self {
        GuestSbi {
            host,
            hart,
            timer,
            ram: *mem.ram(),
            host_ext,
            pmu,
            mem,
            sta: StealTime::new(),
            console: None,
        }
    }

    /// Prefix every line this guest writes to the console with `[gn] `
    /// and send it whole (several guests share the host console: a line
    /// of one never has another's in its middle, even when the guest
    /// writes it in parts across a switch). Its DBCN writes are then
    /// copied through the hypervisor instead of forwarded in place.
    pub fn tag_console(&mut self, n: u8, line: &'static mut ConsoleLine) {
        self.console = Some(LineBuf {
            n,
            buf: line,
            len: 0,
            continued: false,
        });
    }

    /// Send what is held of an unfinished console line (the guest ends).
    pub fn flush_console(&mut self) {
        if let Some(mut l) = self.console.take() {
            self.send_line(&mut l);
            self.console = Some(l);
        }
    }

    /// [`GuestSbi::call`] for a guest that shares the machine: with
    /// `others_alive`, a valid SRST shutdown ends this guest only
    /// ([`Outcome::Ended`]) and a valid reboot is NOT_SUPPORTED (a guest
    /// cannot reboot the machine under the others; "reset_type is valid
    /// but not implemented"); reserved types or reasons are
    /// INVALID_PARAM. Without `others_alive` SRST is forwarded.
    pub fn call_shared(
        &mut self,
        eid: usize,
        fid: usize,
        a: [usize; 6],
        others_alive: bool,
    ) -> Outcome {
        let srst_call = self.extension(eid) == Some(Extension::Srst)
            && fid as u32 as usize == srst::SYSTEM_RESET;
        if !others_alive || !srst_call {
            return Outcome::Answer(self.call(eid, fid, a));
        }
        if !srst_valid(a[0], a[1]) {
            return Outcome::Answer(err(RET_ERR_INVALID_PARAM));
        }
        if a[0] as u32 == srst::RESET_TYPE_SHUTDOWN {
            Outcome::Ended
        } else {
            Outcome::Answer(err(RET_ERR_NOT_SUPPORTED))
        }
    }

    /// The extension serving `eid` (low 32 bits), if offered.
    pub fn extension(&self, eid: usize) -> Option<Extension> {
        let eid = eid as u32 as usize;
        match eid {
            base::EID_BASE => Some(Extension::Base),
            time::EID_TIME if self.timer => Some(Extension::Time),
            hsm::EID_HSM => Some(Extension::Hsm),
            spi::EID_SPI => Some(Extension::Ipi),
            rfnc::EID_RFNC => Some(Extension::Rfence),
            dbcn::EID_DBCN if self.host_ext.dbcn => Some(Extension::Dbcn),
            srst::EID_SRST if self.host_ext.srst => Some(Extension::Srst),
            pmu::EID_PMU if self.pmu.is_some() => Some(Extension::Pmu),
            sta::EID_STA => Some(Extension::Sta),
            _ => None,
        }
    }

    /// Answer one call: `eid` from a7, `fid` from a6, `a` from a0..a5.
    pub fn call(&mut self, eid: usize, fid: usize, a: [usize; 6]) -> SbiRet {
        let fid = fid as u32 as usize;
        match self.extension(eid) {
            Some(Extension::Base) => self.base(fid, a[0]),
            Some(Extension::Time) if fid == time::SET_TIMER => {
                self.hart.set_timer(a[0] as u64);
                if let Some(p) = &mut self.pmu {
                    p.record(FwEvent::SetTimer);
                }
                ok(0)
            }
            Some(Extension::Pmu) => match &mut self.pmu {
                Some(p) => p.call(&mut self.mem, fid, a),
                None => err(RET_ERR_NOT_SUPPORTED),
            },
            Some(Extension::Hsm) => self.hsm(fid, a),
            Some(Extension::Ipi) if fid == spi::SEND_IPI => match names_our_hart(a[0], a[1]) {
                Ok(ours) => {
                    if ours {
                        self.hart.send_ipi();
                    }
                    ok(0)
                }
                Err(e) => e,
            },
            Some(Extension::Rfence) => self.rfence(fid, a),
            Some(Extension::Dbcn) => self.dbcn(fid, a),
            Some(Extension::Sta) => rvpmu::ecall::sta(&mut self.sta, &mut self.mem, fid, a),
            Some(Extension::Srst) if fid == srst::SYSTEM_RESET => {
                // Returns only when the host refused (its error is the
                // guest's answer) or, under test, never acted.
                self.host.system_reset(a[0], a[1])
            }
            Some(Extension::Srst | Extension::Time | Extension::Ipi) | None => {
                err(RET_ERR_NOT_SUPPORTED)
            }
        }
    }

    fn base(&self, fid: usize, a0: usize) -> SbiRet {
        rvpmu_rt::base::call(self, fid, a0)
    }

    fn hsm(&mut self, fid: usize, a: [usize; 6]) -> SbiRet {
        match fid {
            hsm::HART_START | hsm::HART_GET_STATUS if a[0] != GUEST_HART => {
                err(RET_ERR_INVALID_PARAM)
            }
            hsm::HART_START => err(RET_ERR_ALREADY_AVAILABLE),
            hsm::HART_GET_STATUS => ok(hsm::hart_state::STARTED),
            // The only hart cannot stop ("Failed to stop execution of the
            // current hart"): there would be nothing left to start it.
            hsm::HART_STOP => err(RET_ERR_FAILED),
            // suspend_type is 32 bits wide. The two default types are not
            // reserved but not offered (no idle states are described):
            // NOT_SUPPORTED; every other value is reserved or platform
            // specific and unimplemented: INVALID_PARAM (spec, HSM
            // "Hart suspend" errors).
            hsm::HART_SUSPEND => match a[0] as u32 {
                0 | 0x8000_0000 => err(RET_ERR_NOT_SUPPORTED),
                _ => err(RET_ERR_INVALID_PARAM),
            },
            _ => err(RET_ERR_NOT_SUPPORTED),
        }
    }

    fn rfence(&mut self, fid: usize, a: [usize; 6]) -> SbiRet {
        let flush = match fid {
            rfnc::REMOTE_FENCE_I => false,
            rfnc::REMOTE_SFENCE_VMA | rfnc::REMOTE_SFENCE_VMA_ASID => true,
            _ => return err(RET_ERR_NOT_SUPPORTED),
        };
        match names_our_hart(a[0], a[1]) {
            Ok(true) if flush => self.hart.flush_guest_tlb(),
            Ok(true) => self.hart.fence_i(),
            Ok(false) => {}
            Err(e) => return e,
        }
        ok(0)
    }

    /// DBCN: a buffer is guest-physical `base_hi:base_lo`, `num_bytes`
    /// long. Anything not wholly inside the guest's RAM is refused with
    /// SBI_ERR_INVALID_PARAM, as the spec's "Debug Console Write/Read
    /// Errors" tables say for memory that does not satisfy the shared
    /// memory requirements (no host access is made then).
    fn dbcn(&mut self, fid: usize, a: [usize; 6]) -> SbiRet {
        let (len, lo, hi) = (a[0], a[1], a[2]);
        match fid {
            dbcn::CONSOLE_WRITE | dbcn::CONSOLE_READ => {
                if len == 0 {
                    return ok(0);
                }
                if hi != 0 {
                    return err(RET_ERR_INVALID_PARAM);
                }
                let Some(hpa) = self.ram.translate(lo as u64, len as u64) else {
                    return err(RET_ERR_INVALID_PARAM);
                };
                if fid == dbcn::CONSOLE_WRITE && self.console.is_some() {
                    self.tagged_write(lo as u64, len)
                } else if fid == dbcn::CONSOLE_WRITE {
                    self.host.console_write(len, hpa as usize, 0)
                } else {
                    self.host.console_read(len, hpa as usize, 0)
                }
            }
            // `uint8_t byte`: only the low 8 bits count.
            dbcn::CONSOLE_WRITE_BYTE if self.console.is_some() => {
                let b = [a[0] as u8];
                self.tagged_bytes(&b)
            }
            dbcn::CONSOLE_WRITE_BYTE => self.host.console_write_byte(a[0] as u8),
            _ => err(RET_ERR_NOT_SUPPORTED),
        }
    }

    /// A console write of guest-physical `[gpa, gpa + len)` (inside the
    /// guest's RAM: checked by the caller) with line tags, copied through
    /// a bounded buffer. At most [`TAGGED_WRITE_MAX`] bytes per call (the
    /// answer counts the guest's bytes written, which DBCN allows to be
    /// fewer than asked): one guest's write cannot hold the hart for long.
    fn tagged_write(&mut self, gpa: u64, len: usize) -> SbiRet {
        let len = len.min(TAGGED_WRITE_MAX);
        let mut chunk = [0u8; 128];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(chunk.len());
            if self.mem.read(gpa + done as u64, &mut chunk[..n]).is_err() {
                return err(RET_ERR_INVALID_PARAM);
            }
            let r = self.tagged_bytes(&chunk[..n]);
            if r.error != RET_SUCCESS {
                return r;
            }
            done += n;
        }
        ok(len)
    }

    /// Add `bytes` to the guest's console line, sending each line when
    /// it is complete (or the buffer full).
    fn tagged_bytes(&mut self, bytes: &[u8]) -> SbiRet {
        let Some(mut l) = self.console.take() else {
            return err(RET_ERR_FAILED);
        };
        let mut r = ok(bytes.len());
        for &b in bytes {
            if l.len == 0 && !l.continued {
                l.buf.0[..5].copy_from_slice(&[b'[', b'g', b'0' + l.n % 10, b']', b' ']);
                l.len = 5;
            }
            l.buf.0[l.len] = b;
            l.len += 1;
            if b == b'\n' || l.len == LINE_MAX {
                let sent = self.send_line(&mut l);
                l.continued = b != b'\n';
                if sent.error != RET_SUCCESS {
                    r = sent;
                    break;
                }
            }
        }
        self.console = Some(l);
        r
    }

    /// Send the held bytes to the host console and empty the buffer.
    fn send_line(&mut self, l: &mut LineBuf) -> SbiRet {
        let k = core::mem::take(&mut l.len);
        let mut sent = 0;
        while sent < k {
            // The buffer is the hypervisor's own (host-physical: it runs
            // untranslated), valid for the call.
            let r = self
                .host
                .console_write(k - sent, l.buf.0[sent..].as_ptr() as usize, 0);
            if r.error != RET_SUCCESS {
                return r;
            }
            if r.value == 0 {
                return err(RET_ERR_FAILED);
            }
            sent += r.value.min(k - sent);
        }
        ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sbi_spec::binary::RET_ERR_INVALID_ADDRESS;

    /// Records every call that reaches the "host" and answers success with
    /// the byte count (or the error set in `answer`).
    #[derive(Default)]
    struct Host {
        calls: Vec<(usize, usize, [usize; 6])>,
        answer: Option<usize>,
    }
    impl SbiCall for &mut Host {
        fn call(&mut self, eid: usize, fid: usize, args: [usize; 6]) -> SbiRet {
            self.calls.push((eid, fid, args));
            match self.answer {
                Some(e) => err(e),
                None => ok(args[0]),
            }
        }
    }
    /// What the calls did to the hart.
    #[derive(Debug, Default, PartialEq)]
    struct Hart(Vec<(&'static str, u64)>);
    impl VsHart for &mut Hart {
        fn set_timer(&mut self, v: u64) {
            self.0.push(("timer", v));
        }
        fn send_ipi(&mut self) {
            self.0.push(("ipi", 0));
        }
        fn fence_i(&mut self) {
            self.0.push(("fence.i", 0));
        }
        fn flush_guest_tlb(&mut self) {
            self.0.push(("hfence.vvma", 0));
        }
    }

    const RAM: (u64, u64, u64) = (0x8000_0000, 0x8840_0000, 64 << 20);

    fn guest<'a>(
        host: &'a mut Host,
        hart: &'a mut Hart,
        timer: bool,
        ext: HostExtensions,
    ) -> GuestSbi<&'a mut Host, &'a mut Hart> {
        let ram = GuestRam::new(RAM.0, RAM.1, RAM.2).unwrap();
        GuestSbi::new(Supervisor(host), ext, hart, timer, fake_mem(ram), None)
    }

    /// A window at a made-up host address: the tests using it never make
    /// the hypervisor touch guest memory (every such call is refused
    /// before, or forwarded by address only).
    fn fake_mem(ram: GuestRam) -> GuestMemory {
        // SAFETY: never dereferenced (see above).
        unsafe { GuestMemory::new(ram) }
    }

    /// Real host memory standing in for a 4 MiB guest RAM at 0x80000000.
    struct RealRam {
        _host: Vec<u8>,
        base: u64,
        ram: GuestRam,
    }
    impl RealRam {
        fn new() -> RealRam {
            let granule = crate::ram::GRANULE;
            let host = vec![0u8; 3 * granule as usize];
            let base = (host.as_ptr() as u64).div_ceil(granule) * granule;
            let ram = GuestRam::new(0x8000_0000, base, 2 * granule).unwrap();
            RealRam {
                _host: host,
                base,
                ram,
            }
        }
        fn mem(&self) -> GuestMemory {
            // SAFETY: the window lies inside `_host`, which lives as long
            // as `self`; the tests keep `self` alive while they use it.
            unsafe { GuestMemory::new(self.ram) }
        }
        fn peek(&self, gpa: u64, len: usize) -> Vec<u8> {
            let off = gpa - 0x8000_0000;
            // SAFETY: inside the window (the tests' addresses), as above.
            unsafe { std::slice::from_raw_parts((self.base + off) as *const u8, len).to_vec() }
        }
    }
    const ALL: HostExtensions = HostExtensions {
        dbcn: true,
        srst: true,
    };

    #[test]
    fn base_answers_and_probes_truthfully() {
        let mut h = Host::default();
        let mut t = Hart::default();
        let mut g = guest(&mut h, &mut t, true, ALL);
        assert_eq!(g.call(0x10, 0, [0; 6]), ok(3 << 24));
        assert_eq!(g.call(0x10, 1, [0; 6]), ok(0x7276_6876));
        assert_eq!(g.call(0x10, 2, [0; 6]), ok(0x000100));
        for fid in 4..=6 {
            assert_eq!(g.call(0x10, fid, [0; 6]), ok(0));
        }
        assert_eq!(g.call(0x10, 7, [0; 6]), err(RET_ERR_NOT_SUPPORTED));
        let probe = |g: &mut GuestSbi<_, _>, eid| g.call(0x10, 3, [eid, 0, 0, 0, 0, 0]).value;
        for eid in [
            0x10,
            0x5449_4d45,
            0x4442_434e,
            0x5352_5354,
            0x48534d,
            0x735049,
            0x52464e43,
        ] {
            assert_eq!(probe(&mut g, eid), 1, "{eid:#x}");
            // The EID is the low 32 bits.
            assert_eq!(probe(&mut g, eid | 1 << 32), 1, "{eid:#x}");
        }
        // STA is served (its record is the guest's RAM): probed; an address
        // outside the guest's RAM is refused before any access.
        assert_eq!(probe(&mut g, 0x535441), 1);
        assert_eq!(g.call(0x535441, 0, [0; 6]), err(RET_ERR_INVALID_ADDRESS));
        // Not served: PMU (without one), legacy, unknown.
        for eid in [0x504d55, 1, 8, 0x1234_5678] {
            assert_eq!(probe(&mut g, eid), 0, "{eid:#x}");
            assert_eq!(g.call(eid, 0, [0; 6]), err(RET_ERR_NOT_SUPPORTED));
        }
        assert!(h.calls.is_empty(), "BASE never reaches the host");
    }

    #[test]
    fn what_the_host_lacks_is_not_offered() {
        let mut h = Host::default();
        let mut t = Hart::default();
        let mut g = guest(&mut h, &mut t, false, HostExtensions::default());
        for eid in [0x5449_4d45, 0x4442_434e, 0x5352_5354] {
            assert_eq!(g.call(0x10, 3, [eid, 0, 0, 0, 0, 0]).value, 0);
            assert_eq!(
                g.call(eid, 0, [1, 0x8000_0000, 0, 0, 0, 0]),
                err(RET_ERR_NOT_SUPPORTED)
            );
        }
        assert!(h.calls.is_empty());
    }

    #[test]
    fn set_timer_writes_vstimecmp() {
        let mut h = Host::default();
        let mut t = Hart::default();
        let mut g = guest(&mut h, &mut t, true, ALL);
        assert_eq!(g.call(0x5449_4d45, 0, [12345, 0, 0, 0, 0, 0]), ok(0));
        assert_eq!(g.call(0x5449_4d45, 0, [usize::MAX, 0, 0, 0, 0, 0]), ok(0));
        assert_eq!(
            g.call(0x5449_4d45, 1, [1, 0, 0, 0, 0, 0]),
            err(RET_ERR_NOT_SUPPORTED)
        );
        assert_eq!(t.0, [("timer", 12345), ("timer", u64::MAX)]);
        assert!(h.calls.is_empty());
    }

    #[test]
    fn console_buffers_are_translated_or_refused() {
        let mut h = Host::default();
        let mut t = Hart::default();
        let mut g = guest(&mut h, &mut t, false, ALL);
        let dbcn = 0x4442_434e;
        // Inside: forwarded with the host-physical address.
        assert_eq!(g.call(dbcn, 0, [5, 0x8000_1000, 0, 0, 0, 0]), ok(5));
        assert_eq!(g.call(dbcn, 1, [7, 0x83ff_fff9, 0, 0, 0, 0]), ok(7));
        assert_eq!(g.call(dbcn, 2, [0x141, 0, 0, 0, 0, 0]), ok(0x41));
        // Zero bytes: nothing to check or do.
        assert_eq!(g.call(dbcn, 0, [0, 0x10, 0, 0, 0, 0]), ok(0));
        // Outside, straddling the end or the start, high word, wrapping:
        // refused, nothing forwarded.
        for (len, lo, hi) in [
            (1, 0x1000_0000, 0),
            (8, 0x83ff_fff9, 0),
            (2, 0x7fff_ffff, 0),
            (1, 0x8000_0000, 1),
            (usize::MAX, 0x8000_0000, 0),
            (2, usize::MAX, 0),
            (1, 0x8400_0000, 0),
        ] {
            for fid in [0, 1] {
                assert_eq!(
                    g.call(dbcn, fid, [len, lo, hi, 0, 0, 0]),
                    err(RET_ERR_INVALID_PARAM),
                    "fid {fid} len {len:#x} at {hi:#x}:{lo:#x}"
                );
            }
        }
        assert_eq!(g.call(dbcn, 3, [0; 6]), err(RET_ERR_NOT_SUPPORTED));
        assert_eq!(
            h.calls,
            [
                (0x4442_434e, 0, [5, 0x8840_1000, 0, 0, 0, 0]),
                (0x4442_434e, 1, [7, 0x8c3f_fff9, 0, 0, 0, 0]),
                (0x4442_434e, 2, [0x41, 0, 0, 0, 0, 0]),
            ]
        );
    }

    #[test]
    fn system_reset_is_forwarded_with_the_hosts_answer() {
        let mut h = Host {
            answer: Some(RET_ERR_FAILED),
            ..Host::default()
        };
        let mut t = Hart::default();
        let mut g = guest(&mut h, &mut t, false, ALL);
        let srst = 0x5352_5354;
        assert_eq!(g.call(srst, 0, [0, 1, 0, 0, 0, 0]), err(RET_ERR_FAILED));
        assert_eq!(
            g.call(srst, 1, [0, 1, 0, 0, 0, 0]),
            err(RET_ERR_NOT_SUPPORTED)
        );
        assert_eq!(h.calls, [(srst, 0, [0, 1, 0, 0, 0, 0])]);
    }

    #[test]
    fn one_vcpu_hsm_ipi_and_rfence() {
        let mut h = Host::default();
        let mut t = Hart::default();
        let mut g = guest(&mut h, &mut t, true, ALL);
        let (hsm, ipi, rfnc) = (0x48534d, 0x735049, 0x52464e43);
        let (invalid, not_supported) = (err(RET_ERR_INVALID_PARAM), err(RET_ERR_NOT_SUPPORTED));
        let mut answers = vec![
            (hsm, 2, [0, 0, 0, 0, 0, 0], ok(0)), // STARTED
            (hsm, 2, [1, 0, 0, 0, 0, 0], invalid),
            (
                hsm,
                0,
                [0, 0x8020_0000, 0, 0, 0, 0],
                err(RET_ERR_ALREADY_AVAILABLE),
            ),
            (hsm, 0, [3, 0x8020_0000, 0, 0, 0, 0], invalid),
            (hsm, 1, [0; 6], err(RET_ERR_FAILED)),
            (hsm, 3, [0; 6], not_supported),
            (
                hsm,
                3,
                [0xffff_ffff_8000_0000, 0, 0, 0, 0, 0],
                not_supported,
            ),
        ];
        for kind in [
            1,
            0x1000_0000,
            0x8000_0001,
            0x9000_0000,
            0xffff_ffff_0000_0001,
        ] {
            answers.push((hsm, 3, [kind, 0, 0, 0, 0, 0], invalid));
        }
        answers.extend([
            (hsm, 4, [0; 6], not_supported),
            // IPI: hart 0 (mask 1 base 0, or base -1), nobody (mask 0), others refused.
            (ipi, 0, [1, 0, 0, 0, 0, 0], ok(0)),
            (ipi, 0, [0, usize::MAX, 0, 0, 0, 0], ok(0)),
            (ipi, 0, [0, 0, 0, 0, 0, 0], ok(0)),
            (ipi, 0, [3, 0, 0, 0, 0, 0], invalid),
            (ipi, 0, [1, 1, 0, 0, 0, 0], invalid),
            (ipi, 1, [1, 0, 0, 0, 0, 0], not_supported),
            // RFENCE: fence.i, the two sfence.vma kinds; hfence kinds refused.
            (rfnc, 0, [1, 0, 0, 0, 0, 0], ok(0)),
            (rfnc, 1, [1, 0, 0x1000, 0x1000, 0, 0], ok(0)),
            (rfnc, 2, [0, usize::MAX, 0, 0, 7, 0], ok(0)),
            (rfnc, 1, [2, 0, 0, 0, 0, 0], invalid),
        ]);
        for fid in 3..=7 {
            answers.push((rfnc, fid, [1, 0, 0, 0, 0, 0], not_supported));
        }
        for (eid, fid, args, want) in answers {
            assert_eq!(g.call(eid, fid, args), want, "{eid:#x} {fid} {args:#x?}");
        }
        assert!(h.calls.is_empty());
        assert_eq!(
            t.0,
            [
                ("ipi", 0),
                ("ipi", 0),
                ("fence.i", 0),
                ("hfence.vvma", 0),
                ("hfence.vvma", 0)
            ]
        );
    }

    /// A PMU that records what reaches it.
    #[derive(Default)]
    struct FakePmu {
        calls: Vec<(usize, [usize; 6])>,
        events: Vec<FwEvent>,
    }
    impl PmuExtension<GuestMemory> for &mut FakePmu {
        fn call(&mut self, _: &mut GuestMemory, fid: usize, a: [usize; 6]) -> SbiRet {
            self.calls.push((fid, a));
            ok(fid + 100)
        }
        fn record(&mut self, ev: FwEvent) {
            self.events.push(ev);
        }
    }

    #[test]
    fn with_a_pmu_it_is_probed_served_and_hears_set_timer() {
        let mut h = Host::default();
        let mut t = Hart::default();
        let mut p = FakePmu::default();
        let ram = GuestRam::new(RAM.0, RAM.1, RAM.2).unwrap();
        let mut g = GuestSbi::new(
            Supervisor(&mut h),
            ALL,
            &mut t,
            true,
            fake_mem(ram),
            Some(&mut p),
        );
        let pmu = 0x504d55;
        assert_eq!(g.call(0x10, 3, [pmu, 0, 0, 0, 0, 0]), ok(1));
        assert_eq!(
            g.call(pmu | 1 << 32, 2 | 1 << 32, [1, 2, 3, 4, 5, 6]),
            ok(102)
        );
        assert_eq!(g.call(0x5449_4d45, 0, [5, 0, 0, 0, 0, 0]), ok(0));
        assert_eq!(p.calls, [(2, [1, 2, 3, 4, 5, 6])]);
        assert_eq!(p.events, [FwEvent::SetTimer]);
        assert!(h.calls.is_empty());
    }

    const STA: usize = 0x535441;

    #[test]
    fn sta_registers_only_inside_the_guests_ram_and_refuses_per_spec() {
        let real = RealRam::new();
        let mut h = Host::default();
        let mut t = Hart::default();
        let mut g: GuestSbi<_, _> =
            GuestSbi::new(Supervisor(&mut h), ALL, &mut t, true, real.mem(), None);
        let end = 0x8000_0000 + (4 << 20) as usize;
        // Dirty the record's place, then register: zeroed, answer 0.
        g.mem.write(0x8000_1000, &[0xaa; 64]).unwrap();
        assert_eq!(g.call(STA, 0, [0x8000_1000, 0, 0, 0, 0, 0]), ok(0));
        assert_eq!(real.peek(0x8000_1000, 64), vec![0; 64]);
        assert_eq!(g.sta.area(), Some(0x8000_1000));
        // Flags not 0, misaligned, above 64 bits, outside the RAM (below,
        // at the end, straddling it), unknown FID: the spec's errors, and
        // the registration stands.
        g.mem.write(0x8000_2000, &[0xbb; 128]).unwrap();
        for (a, e) in [
            ([0x8000_2000, 0, 1], RET_ERR_INVALID_PARAM),
            ([0x8000_2020, 0, 0], RET_ERR_INVALID_PARAM),
            ([0x8000_2000, 1, 0], RET_ERR_INVALID_ADDRESS),
            ([0x7fff_ffc0, 0, 0], RET_ERR_INVALID_ADDRESS),
            ([end, 0, 0], RET_ERR_INVALID_ADDRESS),
            ([end - 32, 0, 0], RET_ERR_INVALID_PARAM),
            ([0x1000_0000, 0, 0], RET_ERR_INVALID_ADDRESS),
        ] {
            assert_eq!(
                g.call(STA, 0, [a[0], a[1], a[2], 0, 0, 0]),
                err(e),
                "{a:x?}"
            );
        }
        assert_eq!(
            g.call(STA, 1, [0x8000_2000, 0, 0, 0, 0, 0]),
            err(RET_ERR_NOT_SUPPORTED)
        );
        assert_eq!(
            real.peek(0x8000_2000, 128),
            vec![0xbb; 128],
            "no write on refusal"
        );
        assert_eq!(g.sta.area(), Some(0x8000_1000));
        // The last 64 bytes of the RAM are a valid record; all-ones stops.
        assert_eq!(g.call(STA, 0, [end - 64, 0, 0, 0, 0, 0]), ok(0));
        assert_eq!(g.call(STA, 0, [usize::MAX, usize::MAX, 0, 0, 0, 0]), ok(0));
        assert_eq!(g.sta.area(), None);
        assert!(h.calls.is_empty(), "STA never reaches the host");
    }

    /// What the host console received, read from the buffers the calls
    /// named (they are the hypervisor's own and alive during the call).
    #[derive(Default)]
    struct Console {
        text: std::cell::RefCell<Vec<u8>>,
    }
    impl SbiCall for &Console {
        fn call(&mut self, eid: usize, fid: usize, args: [usize; 6]) -> SbiRet {
            assert_eq!((eid, fid), (0x4442434e, 0));
            // SAFETY: the address is a live buffer of the caller (above).
            let b = unsafe { std::slice::from_raw_parts(args[1] as *const u8, args[0]) };
            self.text.borrow_mut().extend_from_slice(b);
            ok(args[0])
        }
    }
    impl Console {
        fn seen(&self) -> String {
            String::from_utf8(self.text.borrow().clone()).unwrap()
        }
    }

    #[test]
    fn a_tagged_console_sends_whole_tagged_lines() {
        let real = RealRam::new();
        let c = Console::default();
        let mut t = Hart::default();
        let mut g: GuestSbi<_, _> =
            GuestSbi::new(Supervisor(&c), ALL, &mut t, true, real.mem(), None);
        g.tag_console(1, Box::leak(Box::default()));
        let dbcn = 0x4442434e;
        let long = "x".repeat(300);
        let text = format!("one\ntwo {long}\n\nthree");
        g.mem.write(0x8000_0100, text.as_bytes()).unwrap();
        assert_eq!(
            g.call(dbcn, 0, [text.len(), 0x8000_0100, 0, 0, 0, 0]),
            ok(text.len())
        );
        // "three" waits for the rest of its line (another guest may write
        // meanwhile: its lines cannot land in the middle of this one).
        let done = format!("[g1] one\n[g1] two {long}\n[g1] \n");
        assert_eq!(c.seen(), done);
        assert_eq!(
            g.call(dbcn, 2, [b'!' as usize | 0x100, 0, 0, 0, 0, 0]),
            ok(1)
        );
        assert_eq!(g.call(dbcn, 2, [b'\n' as usize, 0, 0, 0, 0, 0]), ok(1));
        assert_eq!(c.seen(), format!("{done}[g1] three!\n"));
        // Outside the RAM: refused as untagged.
        assert_eq!(
            g.call(dbcn, 0, [8, 0x7000_0000, 0, 0, 0, 0]),
            err(RET_ERR_INVALID_PARAM)
        );
        // A long write is cut at TAGGED_WRITE_MAX bytes (the guest writes
        // the rest with another call), the answer says how many; a line
        // longer than LINE_MAX goes out in parts, the later ones untagged;
        // the guest's end flushes what is held.
        g.mem.write(0x8001_0000, &[b'z'; 5000]).unwrap();
        for _ in 0..2 {
            assert_eq!(
                g.call(dbcn, 0, [5000, 0x8001_0000, 0, 0, 0, 0]),
                ok(TAGGED_WRITE_MAX)
            );
        }
        assert_eq!(c.seen().len(), done.len() + 12 + LINE_MAX);
        g.flush_console();
        let want = format!(
            "{done}[g1] three!\n[g1] {}",
            "z".repeat(2 * TAGGED_WRITE_MAX)
        );
        assert_eq!(c.seen(), want);
    }

    #[test]
    fn a_shared_guests_shutdown_ends_it_alone_and_reserved_values_are_refused() {
        let mut h = Host::default();
        let mut t = Hart::default();
        let mut g = guest(&mut h, &mut t, true, ALL);
        let srst = 0x5352_5354;
        assert_eq!(
            g.call_shared(srst, 0, [0, 0, 0, 0, 0, 0], true),
            Outcome::Ended
        );
        assert_eq!(
            g.call_shared(srst, 0, [1 << 32, 1, 0, 0, 0, 0], true),
            Outcome::Ended
        );
        for (ty, reason, e) in [
            (1, 0, RET_ERR_NOT_SUPPORTED),
            (2, 0xe000_0000, RET_ERR_NOT_SUPPORTED),
            (3, 0, RET_ERR_INVALID_PARAM),
            (0, 2, RET_ERR_INVALID_PARAM),
            (0xefff_ffff, 0, RET_ERR_INVALID_PARAM),
        ] {
            assert_eq!(
                g.call_shared(srst, 0, [ty, reason, 0, 0, 0, 0], true),
                Outcome::Answer(err(e)),
                "{ty:#x} {reason:#x}"
            );
        }
        // Other calls are the plain ones; the last guest's SRST is forwarded.
        assert_eq!(
            g.call_shared(0x10, 0, [0; 6], true),
            Outcome::Answer(ok(3 << 24))
        );
        assert_eq!(
            g.call_shared(srst, 0, [0, 0, 0, 0, 0, 0], false),
            Outcome::Answer(ok(0))
        );
        assert_eq!(h.calls, [(srst, 0, [0, 0, 0, 0, 0, 0])]);
    }
}
