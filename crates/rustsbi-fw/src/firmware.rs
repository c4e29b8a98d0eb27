//! The whole firmware: entry, platform, the SBI extensions, traps.
#![cfg(target_os = "none")]

use core::cell::UnsafeCell;
use core::fmt::Write;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering::*};
use rustsbi::{HartMask, Physical, RustSBI, SbiRet};
use rvpmu::dt::{platform_quirk_of, EventMap, PmuProps};
use rvpmu::event::FwEvent;
use rvpmu::hart::IsaFeatures;
use rvpmu::hw::csr::CsrHpm;
use rvpmu::mem::{PhysMemory, Ranges, SupervisorMemory};
use rvpmu::rustsbi::{Hart, RustSbiPmu};
use rvpmu::{Pmu, PmuConfig};
use rvpmu_rt::csr::{self, *};
use rvpmu_rt::exit;
use sbi_spec::{hsm::hart_state, srst};

include!("stacks.rs");

/// Where the supervisor is loaded (QEMU's `-kernel`) and the firmware's
/// own span, hidden from it.
const NEXT_ADDR: usize = 0x8020_0000;
const FW_BASE: u64 = 0x8000_0000;
const FW_SIZE: u64 = NEXT_ADDR as u64 - FW_BASE;

/// The machine as the device tree describes it.
struct Board {
    uart: usize,
    msip: usize,
    mtimecmp: usize,
    finisher: usize,
    /// Bit per hart id the DT lists (below MAX_HARTS).
    harts: usize,
    isa: IsaFeatures,
    sstc: bool,
    /// Supervisor RAM: the memory node minus the firmware.
    ram: PhysMemory,
    /// Whether the DT's `riscv,pmu` node was rejected (the map is empty).
    map_rejected: bool,
}

static BOARD: spin::Once<Board> = spin::Once::new();

fn board() -> &'static Board {
    BOARD.wait()
}

/// The event map of the `riscv,pmu` node (about 25 KiB: loaded in place,
/// not moved through a stack), written by the boot hart in `read_board`
/// before `BOARD` is published, only read after.
struct MapCell(UnsafeCell<EventMap>);

// SAFETY: the one `&mut` (in `read_board`, inside `BOARD.call_once`) ends
// before `BOARD` is published; every `&` is taken after (`event_map`).
unsafe impl Sync for MapCell {}

static MAP: MapCell = MapCell(UnsafeCell::new(EventMap::empty()));

fn event_map() -> &'static EventMap {
    board();
    // SAFETY: `BOARD` is published, so nothing writes the map any more.
    unsafe { &*MAP.0.get() }
}

fn hart_id() -> usize {
    MHARTID.read()
}

// ---- the SBI implementation ----

type Perf = RustSbiPmu<Pmu<'static, CsrHpm>, PhysMemory, MAX_HARTS>;
static PERF: Perf = RustSbiPmu::new(hart_id);

#[derive(RustSBI)]
struct Sbi {
    console: Uart,
    timer: Clint,
    ipi: Clint,
    fence: Clint,
    hsm: Hsm,
    reset: Finisher,
    pmu: &'static Perf,
    sta: &'static Perf,
}

static SBI: Sbi = Sbi {
    console: Uart,
    timer: Clint,
    ipi: Clint,
    fence: Clint,
    hsm: Hsm,
    reset: Finisher,
    pmu: &PERF,
    sta: &PERF,
};

struct Uart;

impl Uart {
    fn putc(b: u8) {
        let base = board().uart as *mut u8;
        // SAFETY: the DT's ns16550a registers (LSR at 5, THR at 0).
        unsafe {
            while base.add(5).read_volatile() & 0x20 == 0 {}
            base.write_volatile(b);
        }
    }
}

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        s.bytes().for_each(Uart::putc);
        Ok(())
    }
}

/// Supervisor memory `[lo, lo + n)` of a DBCN call, if it owns it.
fn dbcn_area(lo: usize, hi: usize, n: usize) -> Option<u64> {
    (hi == 0 && (n == 0 || board().ram.owns(lo as u64, n as u64))).then_some(lo as u64)
}

impl rustsbi::Console for Uart {
    fn write(&self, b: Physical<&[u8]>) -> SbiRet {
        let Some(at) = dbcn_area(b.phys_addr_lo(), b.phys_addr_hi(), b.num_bytes()) else {
            return SbiRet::invalid_param();
        };
        let mut buf = [0u8; 64];
        for off in (0..b.num_bytes()).step_by(64) {
            let chunk = &mut buf[..(b.num_bytes() - off).min(64)];
            let _ = board().ram.read(at + off as u64, chunk);
            chunk.iter().copied().for_each(Uart::putc);
        }
        SbiRet::success(b.num_bytes())
    }
    fn read(&self, b: Physical<&mut [u8]>) -> SbiRet {
        let Some(at) = dbcn_area(b.phys_addr_lo(), b.phys_addr_hi(), b.num_bytes()) else {
            return SbiRet::invalid_param();
        };
        let (base, mut ram, mut n) = (board().uart as *mut u8, board().ram, 0);
        // SAFETY: the DT's ns16550a registers (LSR at 5, RBR at 0).
        while n < b.num_bytes() && unsafe { base.add(5).read_volatile() } & 1 != 0 {
            // SAFETY: as above.
            let _ = ram.write(at + n as u64, &[unsafe { base.read_volatile() }]);
            n += 1;
        }
        SbiRet::success(n)
    }
    fn write_byte(&self, b: u8) -> SbiRet {
        Uart::putc(b);
        SbiRet::success(0)
    }
}

/// The ACLINT (or CLINT) of QEMU virt: MSWI and MTIMER.
struct Clint;

fn msip(hart: usize) -> *mut u32 {
    (board().msip + 4 * hart) as *mut u32
}

fn mtimecmp(hart: usize) -> *mut u64 {
    (board().mtimecmp + 8 * hart) as *mut u64
}

/// What one hart asks another for (bits of `HartState::pending`).
const IPI: usize = 1;
const FENCE_I: usize = 2;
const SFENCE_VMA: usize = 4;
const SFENCE_VMA_ASID: usize = 8;

/// One hart's HSM state, start request and pending messages.
struct HartState {
    status: AtomicUsize,
    start: [AtomicUsize; 2],
    pending: AtomicUsize,
}

static HARTS: [HartState; MAX_HARTS] = [const {
    HartState {
        status: AtomicUsize::new(hart_state::STOPPED),
        start: [AtomicUsize::new(0), AtomicUsize::new(0)],
        pending: AtomicUsize::new(0),
    }
}; MAX_HARTS];

/// The harts (a bit per id) a hart mask names, or INVALID_PARAM when it
/// names one the machine does not have.
fn targets(mask: HartMask) -> Result<usize, SbiRet> {
    let (bits, base) = mask.into_inner();
    if base == usize::MAX {
        return Ok(board().harts);
    }
    let t = (0..usize::BITS as usize)
        .filter(|b| bits >> b & 1 != 0)
        .try_fold(0, |t, b| match base.checked_add(b) {
            Some(h) if h < MAX_HARTS && board().harts >> h & 1 != 0 => Ok(t | 1 << h),
            _ => Err(SbiRet::invalid_param()),
        })?;
    Ok(t)
}

fn running(hart: usize) -> bool {
    HARTS[hart].status.load(Acquire) == hart_state::STARTED
}

/// Post `msg` to every running hart of `mask` but this one, counting
/// `sent` for each (this hart's part is `local`'s); for fences, wait
/// until all have done it, serving this hart's own messages meanwhile.
fn post(mask: HartMask, msg: usize, sent: FwEvent, local: impl Fn()) -> SbiRet {
    let me = hart_id();
    let t = match targets(mask) {
        Ok(t) => t,
        Err(e) => return e,
    };
    if t >> me & 1 != 0 {
        local();
    }
    let others = (0..MAX_HARTS).filter(|&h| h != me && t >> h & 1 != 0 && running(h));
    for h in others.clone() {
        PERF.record(sent);
        HARTS[h].pending.fetch_or(msg, AcqRel);
        // SAFETY: the MSWI word of a hart the DT lists.
        unsafe { msip(h).write_volatile(1) };
    }
    if msg != IPI {
        for h in others {
            while HARTS[h].pending.load(Acquire) & msg != 0 {
                serve_messages(me);
            }
        }
    }
    SbiRet::success(0)
}

/// Act on the messages posted to hart `me`.
fn serve_messages(me: usize) {
    let p = HARTS[me].pending.load(Acquire);
    if p & IPI != 0 {
        csr::MIP.set(MIP_SSIP);
        PERF.record(FwEvent::IpiReceived);
    }
    if p & FENCE_I != 0 {
        // SAFETY: an instruction-fetch fence has no memory effects.
        unsafe { core::arch::asm!("fence.i") };
        PERF.record(FwEvent::FenceIReceived);
    }
    if p & (SFENCE_VMA | SFENCE_VMA_ASID) != 0 {
        // SAFETY: flushing the TLB (all of it, which every request allows)
        // has no effect on M-mode's untranslated accesses.
        unsafe { core::arch::asm!("sfence.vma") };
        let asid = p & SFENCE_VMA_ASID != 0;
        PERF.record(if asid {
            FwEvent::SfenceVmaAsidReceived
        } else {
            FwEvent::SfenceVmaReceived
        });
    }
    HARTS[me].pending.fetch_and(!p, AcqRel);
}

fn sfence_vma() {
    // SAFETY: see `serve_messages`.
    unsafe { core::arch::asm!("sfence.vma") }
}

impl rustsbi::Timer for Clint {
    fn set_timer(&self, t: u64) {
        PERF.record(FwEvent::SetTimer);
        if board().sstc {
            STIMECMP.write(t as usize);
        } else {
            // SAFETY: this hart's mtimecmp, from the DT.
            unsafe { mtimecmp(hart_id()).write_volatile(t) };
            csr::MIP.clear(MIP_STIP);
            MIE.set(MIP_MTIP);
        }
    }
}

impl rustsbi::Ipi for Clint {
    fn send_ipi(&self, mask: HartMask) -> SbiRet {
        post(mask, IPI, FwEvent::IpiSent, || csr::MIP.set(MIP_SSIP))
    }
}

impl rustsbi::Fence for Clint {
    fn remote_fence_i(&self, mask: HartMask) -> SbiRet {
        // SAFETY: see `serve_messages`.
        post(mask, FENCE_I, FwEvent::FenceISent, || unsafe {
            core::arch::asm!("fence.i")
        })
    }
    fn remote_sfence_vma(&self, mask: HartMask, _: usize, _: usize) -> SbiRet {
        post(mask, SFENCE_VMA, FwEvent::SfenceVmaSent, sfence_vma)
    }
    fn remote_sfence_vma_asid(&self, mask: HartMask, _: usize, _: usize, _: usize) -> SbiRet {
        post(
            mask,
            SFENCE_VMA_ASID,
            FwEvent::SfenceVmaAsidSent,
            sfence_vma,
        )
    }
}

struct Hsm;

impl rustsbi::Hsm for Hsm {
    fn hart_start(&self, hart: usize, addr: usize, opaque: usize) -> SbiRet {
        if hart >= MAX_HARTS || board().harts >> hart & 1 == 0 {
            return SbiRet::invalid_param();
        }
        if !board().ram.owns(addr as u64, 4) {
            return SbiRet::invalid_address();
        }
        let h = &HARTS[hart];
        let (stopped, pending) = (hart_state::STOPPED, hart_state::START_PENDING);
        if h.status
            .compare_exchange(stopped, pending, AcqRel, Acquire)
            .is_err()
        {
            return SbiRet::already_available();
        }
        h.start[0].store(addr, Relaxed);
        h.start[1].store(opaque, Relaxed);
        // SAFETY: the MSWI word of a hart the DT lists.
        unsafe { msip(hart).write_volatile(1) };
        SbiRet::success(0)
    }
    fn hart_stop(&self) -> SbiRet {
        HARTS[hart_id()].status.store(hart_state::STOPPED, Release);
        wait_for_start(hart_id())
    }
    fn hart_get_status(&self, hart: usize) -> SbiRet {
        match HARTS.get(hart) {
            Some(h) if board().harts >> hart & 1 != 0 => SbiRet::success(h.status.load(Acquire)),
            _ => SbiRet::invalid_param(),
        }
    }
}

struct Finisher;

impl rustsbi::Reset for Finisher {
    fn system_reset(&self, kind: u32, reason: u32) -> SbiRet {
        if (srst::RESET_REASON_SYSTEM_FAILURE + 1..0xf000_0000).contains(&reason) {
            return SbiRet::invalid_param();
        }
        let value = match kind {
            srst::RESET_TYPE_SHUTDOWN if reason == srst::RESET_REASON_SYSTEM_FAILURE => {
                exit::finisher_fail(exit::SYSTEM_FAILURE)
            }
            srst::RESET_TYPE_SHUTDOWN => exit::FINISHER_PASS,
            srst::RESET_TYPE_COLD_REBOOT | srst::RESET_TYPE_WARM_REBOOT => exit::FINISHER_RESET,
            0xf000_0000.. => return SbiRet::not_supported(),
            _ => return SbiRet::invalid_param(),
        };
        finish(value)
    }
}

fn finish(value: u32) -> ! {
    let at = BOARD
        .get()
        .map_or(exit::QEMU_VIRT_TEST_DEVICE, |b| b.finisher);
    // SAFETY: the sifive,test finisher's register.
    unsafe { (at as *mut u32).write_volatile(value) };
    loop {
        // SAFETY: waiting for the machine to stop.
        unsafe { core::arch::asm!("wfi") };
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    if BOARD.is_completed() {
        let _ = writeln!(Uart, "rustsbi-fw: {info}");
    }
    finish(exit::finisher_fail(exit::PANIC))
}

// ---- traps ----

/// The registers of the interrupted code, at their numbers (`x[10]` is
/// a0); only those the trap vector saves are meaningful.
#[repr(C)]
struct Frame {
    x: [usize; 32],
}

const INTERRUPT: usize = 1 << 63;
const ECALL_FROM_S: usize = 9;
const LEGACY_PUTCHAR: usize = 1;

extern "C" fn trap(f: &mut Frame) {
    match MCAUSE.read() {
        c if c == INTERRUPT | IRQ_M_SOFT => {
            // SAFETY: this hart's MSWI word.
            unsafe { msip(hart_id()).write_volatile(0) };
            serve_messages(hart_id());
        }
        c if c == INTERRUPT | IRQ_M_TIMER => {
            MIE.clear(MIP_MTIP);
            csr::MIP.set(MIP_STIP);
        }
        ECALL_FROM_S => {
            let (eid, fid) = (f.x[17], f.x[16]);
            let a = [f.x[10], f.x[11], f.x[12], f.x[13], f.x[14], f.x[15]];
            if eid == LEGACY_PUTCHAR {
                Uart::putc(a[0] as u8);
                f.x[10] = 0;
            } else {
                let r = PERF
                    .handle_ecall(eid, fid, a)
                    .unwrap_or_else(|| SBI.handle_ecall(eid, fid, a));
                (f.x[10], f.x[11]) = (r.error, r.value);
            }
            MEPC.write(MEPC.read() + 4);
        }
        cause => {
            let (epc, tval) = (MEPC.read(), MTVAL.read());
            let _ = writeln!(
                Uart,
                "rustsbi-fw: unexpected trap: mcause {cause:#x} mepc {epc:#x} mtval {tval:#x}"
            );
            finish(exit::finisher_fail(exit::FATAL));
        }
    }
}

// The trap vector: the interrupted registers a call may clobber (ra,
// t0-t6, a0-a7) go to a frame at the top of the hart's stack (mscratch
// holds it while S-mode runs), `trap` runs below it; `trap` is an
// extern "C" function, so the ABI keeps sp, s0-s11 for us, and the
// firmware never writes gp or tp. M-mode runs with interrupts off, so
// traps never nest.
core::arch::global_asm!(
    ".section .text",
    ".balign 4",
    ".globl trap_vector",
    "trap_vector:",
    "   csrrw sp, mscratch, sp",
    "   addi sp, sp, -256",
    ".irp n, 1,5,6,7,10,11,12,13,14,15,16,17,28,29,30,31",
    "   sd x\\n, \\n*8(sp)",
    ".endr",
    "   mv a0, sp",
    "   call {trap}",
    ".irp n, 1,5,6,7,10,11,12,13,14,15,16,17,28,29,30,31",
    "   ld x\\n, \\n*8(sp)",
    ".endr",
    "   addi sp, sp, 256",
    "   csrrw sp, mscratch, sp",
    "   mret",
    trap = sym trap,
);

// ---- boot ----

// Every hart: its stack, then the first one to arrive (an atomic swap on
// a word in .data) clears .bss while the others wait for it.
core::arch::global_asm!(
    ".section .text.entry, \"ax\"",
    ".globl _start",
    "_start:",
    "   csrw mie, zero",
    "   li t0, {max_harts}",
    "1: bgeu a0, t0, 1b",
    "   la sp, _stacks_end",
    "   li t0, {stack_size}",
    "   mul t0, t0, a0",
    "   sub sp, sp, t0",
    "   la t0, {lottery}",
    "   li t1, 1",
    "   amoswap.w.aq t1, t1, (t0)",
    "   bnez t1, 3f",
    "   la t0, __bss_start",
    "   la t1, __bss_end",
    "2: bgeu t0, t1, 4f",
    "   sd zero, (t0)",
    "   addi t0, t0, 8",
    "   j 2b",
    "3: lw t1, 4(t0)",
    "   beqz t1, 3b",
    "   fence r, rw",
    "   li a2, 0",
    "   j {main}",
    "4: fence rw, w",
    "   la t0, {lottery}",
    "   li t1, 1",
    "   sw t1, 4(t0)",
    "   li a2, 1",
    "   j {main}",
    max_harts = const MAX_HARTS,
    stack_size = const STACK_SIZE,
    lottery = sym BOOT_WORDS,
    main = sym main,
);

/// The boot hart's lottery word and the ".bss is clear" word (in .data:
/// the boot hart clears .bss while the others read them).
#[link_section = ".data"]
static BOOT_WORDS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

fn stack_top(hart: usize) -> usize {
    extern "C" {
        static _stacks_end: u8;
    }
    core::ptr::addr_of!(_stacks_end) as usize - hart * STACK_SIZE
}

extern "C" fn main(hart: usize, dtb: usize, boot: bool) -> ! {
    if boot && BOARD.call_once(|| read_board(dtb)).map_rejected {
        let _ = writeln!(
            Uart,
            "rustsbi-fw: riscv,pmu node rejected: only cycles and instructions count"
        );
    }
    let b = board();
    if b.harts >> hart & 1 == 0 {
        wait_forever();
    }
    // PMP: everything to S-mode.
    PMPADDR0.write(usize::MAX);
    PMPCFG0.write(0x1f);
    // S-mode's exceptions but its ecalls, and its interrupts.
    MEDELEG.write(0xb1ff);
    MIDELEG.write(MIP_SSIP | MIP_STIP | MIP_SEIP | MIP_LCOFIP);
    MENVCFG.write(MENVCFG_STCE | MENVCFG_PBMTE | MENVCFG_CBIE_INV | MENVCFG_CBCFE | MENVCFG_CBZE);
    MTVEC.write(trap_vector as *const () as usize);
    let present = present_counters();
    MCOUNTEREN.write(0xffff_ffff);
    // Every standard firmware event the ISA has, the snapshot offered.
    let cfg = PmuConfig::new(event_map(), b.isa).with_alias_window(true);
    // SAFETY: M-mode; `present` names only the counters this hart has.
    let hw = unsafe { CsrHpm::new(present) };
    let _ = PERF.install(Hart::new(Pmu::new(cfg, hw), b.ram));
    MIE.write(MIP_MSIP);
    if boot {
        HARTS[hart].status.store(hart_state::STARTED, Release);
        enter_supervisor(hart, dtb, NEXT_ADDR)
    }
    wait_for_start(hart)
}

extern "C" {
    fn trap_vector();
}

/// Counters the hart implements (bit per CSR offset): mcounteren and
/// mcountinhibit have read-only-zero bits for absent counters, whose
/// CSRs would trap.
fn present_counters() -> u32 {
    MCOUNTEREN.write(0xffff_ffff);
    MCOUNTINHIBIT.write(0xffff_ffff);
    (MCOUNTEREN.read() & MCOUNTINHIBIT.read()) as u32 & !0b111 | 0b101
}

/// A stopped hart: wait (interrupts masked, woken by its MSWI word) for
/// hart_start, then enter S-mode where it says.
fn wait_for_start(hart: usize) -> ! {
    let h = &HARTS[hart];
    loop {
        // SAFETY: waiting for an interrupt to become pending.
        unsafe { core::arch::asm!("wfi") };
        // SAFETY: this hart's MSWI word.
        unsafe { msip(hart).write_volatile(0) };
        h.pending.store(0, Release);
        if h.status.load(Acquire) == hart_state::START_PENDING {
            let (addr, opaque) = (h.start[0].load(Relaxed), h.start[1].load(Relaxed));
            h.status.store(hart_state::STARTED, Release);
            enter_supervisor(hart, opaque, addr)
        }
    }
}

fn wait_forever() -> ! {
    loop {
        // SAFETY: parking the hart.
        unsafe { core::arch::asm!("wfi") };
    }
}

/// mret to S-mode at `addr` with a0 = hartid, a1 = `a1`, satp = 0; the
/// next trap starts again at the top of the hart's stack.
fn enter_supervisor(hart: usize, a1: usize, addr: usize) -> ! {
    MEPC.write(addr);
    SSTATUS.clear(SSTATUS_SIE);
    let mpp = MSTATUS.read() & !(MSTATUS_MPP | MSTATUS_MPRV | MSTATUS_MPIE);
    // SAFETY: M-mode's own accesses stay untranslated (MPRV clear); satp
    // only acts on S-mode's.
    unsafe {
        MSTATUS.write(mpp | PRV_S << MSTATUS_MPP_SHIFT);
        SATP.write(0);
        core::arch::asm!(
            "csrw mscratch, {top}",
            "mret",
            top = in(reg) stack_top(hart),
            in("a0") hart,
            in("a1") a1,
            options(noreturn),
        )
    }
}

/// The board from the device tree at `dtb` (a boot failure without one).
fn read_board(dtb: usize) -> Board {
    // SAFETY: a1 from the loader points at the DTB, in RAM nothing else
    // uses yet.
    let fdt = match unsafe { rvpmu_dtb::open_at(dtb as *mut u8) } {
        Ok(f) => f,
        Err(_) => finish(exit::finisher_fail(exit::BOOT_FAILED)),
    };
    let reg = |compat: &[&str], n| {
        let node = fdt.find_compatible(compat)?;
        Some(node.reg()?.nth(n)?.starting_address as usize)
    };
    let mut harts = 0;
    let mut isa = IsaFeatures::default();
    let mut sstc = false;
    for cpu in fdt.cpus() {
        let id = cpu.ids().first();
        if id < MAX_HARTS {
            harts |= 1 << id;
        }
        let has = |ext: &str| has_extension(&cpu, ext);
        (isa.sscofpmf, isa.smcntrpmf, isa.h, sstc) =
            (has("sscofpmf"), has("smcntrpmf"), has("h"), has("sstc"));
    }
    let mem = fdt.memory().regions().next();
    let (base, size) = mem.map_or((0, 0), |r| {
        (r.starting_address as u64, r.size.unwrap_or(0) as u64)
    });
    let mut ranges = Ranges::new();
    ranges.add_ram(base, size);
    ranges.exclude(FW_BASE, FW_SIZE);
    // SAFETY: the boot hart, once, before `BOARD` is published (see
    // `MapCell`).
    let map = unsafe { &mut *MAP.0.get() };
    let map_rejected =
        PmuProps::find(&fdt).is_some_and(|p| map.load_props(p, Some(present_counters())).is_err());
    if platform_quirk_of(&fdt).is_some_and(|q| q.one_counter_per_event) {
        map.set_one_counter_per_event(true);
    }
    let board = Board {
        uart: reg(&["ns16550a", "ns16550"], 0).unwrap_or(0x1000_0000),
        msip: reg(&["riscv,aclint-mswi", "sifive,clint0", "riscv,clint0"], 0).unwrap_or(0x200_0000),
        mtimecmp: reg(&["riscv,aclint-mtimer"], 1)
            .or(reg(&["sifive,clint0", "riscv,clint0"], 0).map(|c| c + 0x4000))
            .unwrap_or(0x200_4000),
        finisher: reg(&["sifive,test0", "sifive,test1"], 0).unwrap_or(exit::QEMU_VIRT_TEST_DEVICE),
        harts,
        isa,
        sstc: sstc && {
            MENVCFG.set(MENVCFG_STCE);
            MENVCFG.read() & MENVCFG_STCE != 0
        },
        // SAFETY: the memory node minus the firmware: plain M-mode
        // accesses, no Rust object there.
        ram: unsafe { PhysMemory::new(ranges) },
        map_rejected,
    };
    let reg_at = fdt
        .all_nodes()
        .find(|n| n.name.starts_with("memory"))
        .and_then(|n| n.property("reg"))
        .map(|p| p.value.as_ptr() as usize);
    if let Some(at) = reg_at.filter(|_| base == FW_BASE && size > FW_SIZE) {
        // The supervisor's memory starts after the firmware: the node's
        // reg is <base size> in two cells each (QEMU virt).
        let cells = [base + FW_SIZE, size - FW_SIZE].map(|v| v.to_be_bytes());
        // SAFETY: the 16 bytes of the memory node's reg property in the
        // DTB; the tree read from it (`fdt`) is not used after this.
        unsafe { core::ptr::copy_nonoverlapping(cells.as_flattened().as_ptr(), at as *mut u8, 16) };
    }
    board
}

/// Whether a cpu node names ISA extension `ext`, in
/// `riscv,isa-extensions` or else in the `riscv,isa` string.
fn has_extension(cpu: &fdt::standard_nodes::Cpu, ext: &str) -> bool {
    if let Some(list) = cpu.property("riscv,isa-extensions") {
        return list.value.split(|&b| b == 0).any(|e| e == ext.as_bytes());
    }
    let isa = cpu
        .property("riscv,isa")
        .and_then(|p| p.as_str())
        .unwrap_or("");
    let mut parts = isa.split('_');
    let base = parts.next().unwrap_or("").get(4..).unwrap_or("");
    match ext.len() {
        1 => base.contains(ext),
        _ => parts.any(|e| e == ext),
    }
}
