//! What the firmware learns at boot: the fw_dynamic info from the previous
//! stage and the platform description from the device tree.
#![cfg(target_os = "none")]

use crate::console::{Uart, DEFAULT_UART};
use crate::layout::{DEFAULT_NEXT_ADDR, MAX_HARTS};
use fdt::Fdt;
use rvpmu::dt::{platform_quirk, PlatformQuirk, PmuProps, Property};
use rvpmu::mem::{PhysMemory, Ranges};

/// OpenSBI's fw_dynamic info, as QEMU passes it in a2.
#[repr(C)]
struct FwDynamicInfo {
    magic: usize,
    version: usize,
    next_addr: usize,
    next_mode: usize,
    options: usize,
    boot_hart: usize,
}
const FW_DYNAMIC_MAGIC: usize = 0x4942_534f;
const FW_DYNAMIC_NEXT_MODE_S: usize = 1;

/// The next stage and boot hart named by the previous stage.
pub struct BootInfo {
    pub next_addr: usize,
    /// `None`: no preference, the first hart to arrive boots.
    pub boot_hart: Option<usize>,
}

/// Read the fw_dynamic info at `ptr`; defaults when it is absent or foreign.
/// Errors name a next stage the firmware cannot enter.
pub fn boot_info(ptr: usize) -> Result<BootInfo, &'static str> {
    let default = BootInfo {
        next_addr: DEFAULT_NEXT_ADDR,
        boot_hart: None,
    };
    if ptr == 0 || !ptr.is_multiple_of(8) {
        return Ok(default);
    }
    // SAFETY: QEMU (and OpenSBI-compatible loaders) pass a readable struct
    // in a2; a nonzero aligned pointer is trusted like the DTB pointer.
    let info = unsafe { core::ptr::read_volatile(ptr as *const FwDynamicInfo) };
    if info.magic != FW_DYNAMIC_MAGIC {
        return Ok(default);
    }
    if info.next_mode != FW_DYNAMIC_NEXT_MODE_S {
        return Err("fw_dynamic next_mode is not S-mode");
    }
    let _ = info.options;
    let boot_hart = if info.version >= 2 && info.boot_hart < MAX_HARTS {
        Some(info.boot_hart)
    } else {
        None
    };
    Ok(BootInfo {
        next_addr: info.next_addr,
        boot_hart,
    })
}

/// ISA extensions the firmware acts on, per hart.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Features(u32);

impl Features {
    pub const H: Self = Self(1 << 0);
    pub const SSCOFPMF: Self = Self(1 << 1);
    pub const SMCNTRPMF: Self = Self(1 << 2);
    pub const SSTC: Self = Self(1 << 3);
    pub const SVPBMT: Self = Self(1 << 4);
    pub const ZICBOM: Self = Self(1 << 5);
    pub const ZICBOZ: Self = Self(1 << 6);
    pub const SVADU: Self = Self(1 << 7);
    pub const SVADE: Self = Self(1 << 8);

    pub fn has(self, f: Self) -> bool {
        self.0 & f.0 == f.0
    }

    fn from_name(name: &[u8]) -> Self {
        const NAMES: [(&[u8], Features); 9] = [
            (b"h", Features::H),
            (b"sscofpmf", Features::SSCOFPMF),
            (b"smcntrpmf", Features::SMCNTRPMF),
            (b"sstc", Features::SSTC),
            (b"svpbmt", Features::SVPBMT),
            (b"zicbom", Features::ZICBOM),
            (b"zicboz", Features::ZICBOZ),
            (b"svadu", Features::SVADU),
            (b"svade", Features::SVADE),
        ];
        for (n, f) in NAMES {
            if n.eq_ignore_ascii_case(name) {
                return f;
            }
        }
        Self(0)
    }

    /// From `riscv,isa-extensions` (a string list) or, failing that, the
    /// `riscv,isa` string ("rv64imafdch_zicbom_..._sstc").
    fn from_cpu_node(node: fdt::node::FdtNode) -> Self {
        let mut f = Self(0);
        if let Some(p) = node.property("riscv,isa-extensions") {
            for name in p.value.split(|&b| b == 0) {
                f.0 |= Self::from_name(name).0;
            }
            return f;
        }
        let Some(isa) = node.property("riscv,isa") else {
            return f;
        };
        let isa = isa.value.split(|&b| b == 0).next().unwrap_or(&[]);
        let mut parts = isa.split(|&b| b == b'_');
        if let Some(base) = parts.next() {
            // Single-letter extensions after "rv64"; digits are versions.
            for &c in base.iter().skip(4) {
                if c.is_ascii_alphabetic() {
                    f.0 |= Self::from_name(&[c]).0;
                }
            }
        }
        for name in parts {
            f.0 |= Self::from_name(name).0;
        }
        f
    }
}

/// The noisy neighbour's settings (`steal.rs`), from
/// `/chosen/rvpmu,noisy-neighbour`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Noisy {
    pub busy_us: u32,
    pub period_us: u32,
}

impl Noisy {
    /// Two big-endian cells `<busy_us period_us>`; nonsense (busy 0, busy
    /// not below period) disables it.
    pub fn from_cells(v: &[u8]) -> Option<Noisy> {
        if v.len() != 8 {
            return None;
        }
        let busy_us = u32::from_be_bytes(v[0..4].try_into().ok()?);
        let period_us = u32::from_be_bytes(v[4..8].try_into().ok()?);
        (busy_us > 0 && busy_us < period_us).then_some(Noisy { busy_us, period_us })
    }
}

/// A physical address range.
#[derive(Clone, Copy, Default)]
pub struct Region {
    pub base: u64,
    pub size: u64,
}

impl Region {
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.size)
    }
    /// Whether `[addr, addr + len)` lies inside this region (`len` > 0).
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        match addr.checked_add(len) {
            Some(end) => len > 0 && addr >= self.base && end <= self.end(),
            None => false,
        }
    }
}

/// DRAM ranges the firmware accepts (DT memory nodes beyond this are ignored).
pub const MAX_MEMORY_REGIONS: usize = 8;

/// Where shutdown and reboot go.
#[derive(Clone, Copy)]
pub struct PowerDevice {
    /// (address, value) to write for power-off.
    pub poweroff: Option<(usize, u32)>,
    /// (address, value) to write for a reset.
    pub reboot: Option<(usize, u32)>,
    /// A sifive,test device: also reports failures (0x3333 | code << 16).
    pub sifive_test: Option<usize>,
}

/// QEMU virt's test device, used for reports before the DT is read.
pub const DEFAULT_SIFIVE_TEST: usize = rvpmu_rt::exit::QEMU_VIRT_TEST_DEVICE;

/// The machine as the device tree describes it.
pub struct Platform {
    pub dtb: usize,
    pub next_addr: usize,
    pub boot_hart: usize,
    /// Features of each hart the DT lists as usable; `None`: absent.
    pub harts: [Option<Features>; MAX_HARTS],
    pub memory: [Region; MAX_MEMORY_REGIONS],
    pub memory_count: usize,
    /// The PMP-protected firmware region (also reserved in the DT).
    pub firmware: Region,
    pub initrd: Option<Region>,
    pub uart: Uart,
    /// Base of the per-hart MSIP words (CLINT or ACLINT MSWI).
    pub msip: usize,
    /// Base of the per-hart mtimecmp registers (CLINT or ACLINT MTIMER).
    pub mtimecmp: usize,
    pub power: PowerDevice,
    /// Hart ids at or above this are absent (for the `-1` hart mask base).
    pub hart_limit: usize,
    /// Memory S-mode may hand to SBI calls: DRAM minus the firmware.
    pub ram: PhysMemory,
    /// `time` ticks per second (`/cpus/timebase-frequency`).
    pub timebase_hz: u64,
    /// The steal-time injector, from `/chosen/rvpmu,noisy-neighbour`.
    pub noisy: Option<Noisy>,
    /// Offer the PMU counter snapshot (`/chosen/rvpmu,pmu-snapshot = <0>`
    /// turns it off, e.g. for kernels whose snapshot code is broken).
    pub pmu_snapshot: bool,
    /// Accept counter sets based at 4096 as aliases of the counters
    /// (`/chosen/rvpmu,pmu-alias-window = <0>` turns it off, so the Linux
    /// snapshot restart bug shows as it does on a firmware without it).
    pub pmu_alias_window: bool,
    /// The PMU quirks of this machine (`rvpmu::dt::PLATFORM_QUIRKS`, by the
    /// root node's `compatible`), for what its DT does not say.
    pub pmu_quirk: Option<&'static PlatformQuirk>,
}

impl Platform {
    pub fn hart_features(&self, hartid: usize) -> Features {
        self.harts
            .get(hartid)
            .copied()
            .flatten()
            .unwrap_or_default()
    }
    pub fn hart_valid(&self, hartid: usize) -> bool {
        matches!(self.harts.get(hartid), Some(Some(_)))
    }
    pub fn memory(&self) -> &[Region] {
        &self.memory[..self.memory_count]
    }
}

fn nth_reg(node: &fdt::node::FdtNode, n: usize) -> Option<usize> {
    node.reg()?.nth(n).map(|r| r.starting_address as usize)
}

fn prop_u32(node: &fdt::node::FdtNode, name: &str) -> Option<u32> {
    node.property(name)?.as_usize().map(|v| v as u32)
}

/// Parse the platform (and find the riscv,pmu node) in one pass over the
/// device tree's nodes.
pub fn parse<'a>(
    fdt: &Fdt<'a>,
    dtb: usize,
    boot: &BootInfo,
    boot_hart: usize,
) -> Result<(Platform, Option<PmuProps<'a>>), &'static str> {
    let (fw_base, fw_size) = crate::layout::protected_region();
    let mut p = Platform {
        dtb,
        next_addr: boot.next_addr,
        boot_hart,
        harts: [None; MAX_HARTS],
        memory: [Region::default(); MAX_MEMORY_REGIONS],
        memory_count: 0,
        firmware: Region {
            base: fw_base,
            size: fw_size,
        },
        initrd: None,
        uart: DEFAULT_UART,
        msip: 0,
        mtimecmp: 0,
        power: PowerDevice {
            poweroff: None,
            reboot: None,
            sifive_test: None,
        },
        hart_limit: 0,
        // SAFETY: owns nothing until filled below.
        ram: unsafe { PhysMemory::new(Ranges::new()) },
        // QEMU virt's value; the DT's /cpus node overrides it.
        timebase_hz: 10_000_000,
        noisy: None,
        pmu_snapshot: true,
        pmu_alias_window: true,
        pmu_quirk: None,
    };
    let mut uart_found = false;
    let mut syscon: [Option<(u32, u32, u32)>; 2] = [None, None]; // (regmap, offset, value)
    let mut pmu = None;
    for node in fdt.all_nodes() {
        // One pass over the properties: the fdt crate parses (and UTF-8
        // checks) every property name on each lookup, which dominates boot.
        let (mut dev_type, mut okay, mut compat): (&[u8], bool, &[u8]) = (&[], true, &[]);
        for prop in node.properties() {
            match prop.name {
                "device_type" => dev_type = prop.value,
                "status" => okay = matches!(prop.value, b"okay\0" | b"ok\0"),
                "compatible" => compat = prop.value,
                _ => {}
            }
        }
        let is = |names: &[&[u8]]| compat.split(|&b| b == 0).any(|c| names.contains(&c));
        if node.name == "/" {
            p.pmu_quirk = platform_quirk(compat);
        } else if dev_type == b"memory\0" {
            for r in node.reg().into_iter().flatten() {
                if p.memory_count < MAX_MEMORY_REGIONS {
                    let size = r.size.unwrap_or(0) as u64;
                    p.memory[p.memory_count] = Region {
                        base: r.starting_address as u64,
                        size,
                    };
                    p.memory_count += 1;
                }
            }
        } else if dev_type == b"cpu\0" {
            let Some(id) = nth_reg(&node, 0) else {
                continue;
            };
            if okay && id < MAX_HARTS {
                p.harts[id] = Some(Features::from_cpu_node(node));
                p.hart_limit = p.hart_limit.max(id + 1);
            }
        } else if node.name == "cpus" {
            if let Some(hz) = node
                .property("timebase-frequency")
                .and_then(|v| v.as_usize())
            {
                p.timebase_hz = hz as u64;
            }
        } else if node.name == "chosen" {
            // One pass here too (see above).
            let (mut start, mut end) = (None, None);
            for prop in node.properties() {
                match prop.name {
                    "rvpmu,noisy-neighbour" => p.noisy = Noisy::from_cells(prop.value),
                    "rvpmu,pmu-snapshot" => {
                        if let Some(v) = prop.as_usize() {
                            p.pmu_snapshot = v != 0;
                        }
                    }
                    "rvpmu,pmu-alias-window" => {
                        if let Some(v) = prop.as_usize() {
                            p.pmu_alias_window = v != 0;
                        }
                    }
                    "linux,initrd-start" => start = prop.as_usize(),
                    "linux,initrd-end" => end = prop.as_usize(),
                    _ => {}
                }
            }
            if let (Some(s), Some(e)) = (start, end) {
                if e > s {
                    p.initrd = Some(Region {
                        base: s as u64,
                        size: (e - s) as u64,
                    });
                }
            }
        } else if !okay || compat.is_empty() {
            continue;
        } else if pmu.is_none() && is(&[b"riscv,pmu"]) {
            let prop = |p: Property| node.property(p.name()).map(|p| p.value);
            pmu = Some(PmuProps {
                event_to_mhpmevent: prop(Property::EventToMhpmevent),
                event_to_mhpmcounters: prop(Property::EventToMhpmcounters),
                raw_event_to_mhpmcounters: prop(Property::RawEventToMhpmcounters),
                one_counter_per_event: prop(Property::OneCounterPerEvent),
            });
        } else if !uart_found && is(&[b"ns16550a", b"ns16550"]) {
            if let Some(base) = nth_reg(&node, 0) {
                p.uart = Uart {
                    base,
                    shift: prop_u32(&node, "reg-shift").unwrap_or(0),
                };
                uart_found = true;
            }
        } else if is(&[b"sifive,clint0", b"riscv,clint0"]) {
            if let Some(base) = nth_reg(&node, 0) {
                p.msip = base;
                p.mtimecmp = base + 0x4000;
            }
        } else if is(&[b"riscv,aclint-mswi"]) {
            p.msip = nth_reg(&node, 0).unwrap_or(p.msip);
        } else if is(&[b"riscv,aclint-mtimer"]) {
            // reg = <mtime>, <mtimecmp array>
            p.mtimecmp = nth_reg(&node, 1).unwrap_or(p.mtimecmp);
        } else if is(&[b"sifive,test0", b"sifive,test1"]) {
            p.power.sifive_test = nth_reg(&node, 0);
        } else if is(&[b"syscon-poweroff", b"syscon-reboot"]) {
            let i = if is(&[b"syscon-poweroff"]) { 0 } else { 1 };
            if let (Some(map), Some(value)) = (prop_u32(&node, "regmap"), prop_u32(&node, "value"))
            {
                syscon[i] = Some((map, prop_u32(&node, "offset").unwrap_or(0), value));
            }
        }
    }
    for (i, s) in syscon.iter().enumerate() {
        let Some((map, offset, value)) = *s else {
            continue;
        };
        let Some(base) = fdt.find_phandle(map).and_then(|n| nth_reg(&n, 0)) else {
            continue;
        };
        let target = Some((base + offset as usize, value));
        if i == 0 {
            p.power.poweroff = target;
        } else {
            p.power.reboot = target;
        }
    }
    if p.memory_count == 0 {
        return Err("device tree has no memory node");
    }
    let mut ranges = Ranges::new();
    for r in p.memory() {
        ranges.add_ram(r.base, r.size);
    }
    ranges.exclude(fw_base, fw_size);
    // SAFETY: DRAM from the DT minus the firmware: plain M-mode accesses,
    // and no Rust object lives there.
    p.ram = unsafe { PhysMemory::new(ranges) };
    if !p.hart_valid(boot_hart) {
        return Err("boot hart is not in the device tree");
    }
    if p.msip == 0 || p.mtimecmp == 0 {
        return Err("device tree has no CLINT / ACLINT (MSIP, mtimecmp)");
    }
    Ok((p, pmu))
}
