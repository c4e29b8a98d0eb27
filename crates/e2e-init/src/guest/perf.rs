//! perf_event_open(2) for the guest: the attribute struct (PERF_ATTR_SIZE_VER8,
//! written out here because its flag word is a C bitfield), the events this
//! project uses, reading counts with their enabled/running times, and the
//! sampling ring buffer.

use std::io;

use hpmtrace::linux::perf_event::{
    PerfEventAttr as Attr, FLAG_DISABLED, FLAG_ENABLE_ON_EXEC, FLAG_EXCLUDE_KERNEL,
    FLAG_EXCLUDE_USER, FLAG_PINNED, PERF_FORMAT_TOTAL_TIME_ENABLED as FORMAT_TOTAL_TIME_ENABLED,
    PERF_FORMAT_TOTAL_TIME_RUNNING as FORMAT_TOTAL_TIME_RUNNING,
};
pub use rvpmu_sbi::event::FwEvent;

const TYPE_HARDWARE: u32 = 0;
const TYPE_SOFTWARE: u32 = 1;
const TYPE_HW_CACHE: u32 = 3;
const TYPE_RAW: u32 = 4;

const SAMPLE_IP: u64 = 1 << 0;

const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_FLAG_GROUP: libc::c_ulong = 1;

/// What an event counts, as perf names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cycles,
    Instructions,
    DtlbLoadMisses,
    DtlbStoreMisses,
    ItlbLoadMisses,
    /// Linux's task-clock software event: ns the task ran (under icount
    /// shift=0 one ns per instruction, every privilege mode).
    TaskClock,
    /// Any `PERF_TYPE_HARDWARE` event by perf config (`PERF_COUNT_HW_*`).
    Hardware(u64),
    /// Any `PERF_TYPE_SOFTWARE` event by perf config (`PERF_COUNT_SW_*`).
    Software(u64),
    /// A `PERF_TYPE_RAW` event: config bits 63:62 = 0 select an SBI raw
    /// event with this event_data (riscv-pmu-sbi).
    Raw(u64),
    /// An SBI firmware event (SBI PMU spec, event type 15), by code.
    Firmware(FwEvent),
}

/// Firmware events Linux's riscv_pmu_sbi knows (codes 0 up to
/// HFENCE_GVMA_RECEIVED).
pub const LINUX_FW_EVENTS: usize = 16;

/// The standard firmware event with code `i` (< 22).
pub fn fw_event(i: usize) -> FwEvent {
    FwEvent::from_code(i as u16).expect("a standard firmware event code")
}

/// perf-style name of a firmware event: `fw_` and the spec's name in
/// lower case (`fw_ipi_sent`).
pub fn fw_name(f: FwEvent) -> String {
    format!("fw_{}", f.name().to_ascii_lowercase())
}

/// Privilege filter of an event (perf's `:u` / `:k` modifiers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    All,
    User,
    Kernel,
}

/// One event to open.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub kind: Kind,
    pub filter: Filter,
    pub pinned: bool,
}

impl Event {
    pub const fn new(kind: Kind) -> Event {
        Event {
            kind,
            filter: Filter::All,
            pinned: false,
        }
    }

    pub const fn filtered(kind: Kind, filter: Filter) -> Event {
        Event {
            kind,
            filter,
            pinned: false,
        }
    }

    /// perf's name for the event, with `:u` / `:k` as perf prints them.
    pub fn name(&self) -> String {
        let base = match self.kind {
            Kind::Cycles => "cycles",
            Kind::Instructions => "instructions",
            Kind::DtlbLoadMisses => "dTLB-load-misses",
            Kind::DtlbStoreMisses => "dTLB-store-misses",
            Kind::ItlbLoadMisses => "iTLB-load-misses",
            Kind::TaskClock => "task-clock",
            Kind::Hardware(c) => return with_filter(format!("hw:{c}"), self.filter),
            Kind::Software(c) => return with_filter(format!("sw:{c}"), self.filter),
            Kind::Raw(c) => return with_filter(format!("raw:{c:#x}"), self.filter),
            Kind::Firmware(f) => return with_filter(fw_name(f), self.filter),
        };
        with_filter(base.to_string(), self.filter)
    }

    fn attr(&self) -> Attr {
        // Cache events: id | op << 8 | result << 16 (dTLB 3, iTLB 4; read 0,
        // write 1; miss 1). Firmware events: raw config with top bits 0b10.
        let (type_, config) = match self.kind {
            Kind::Cycles => (TYPE_HARDWARE, 0),
            Kind::Instructions => (TYPE_HARDWARE, 1),
            Kind::DtlbLoadMisses => (TYPE_HW_CACHE, 3 | (1 << 16)),
            Kind::DtlbStoreMisses => (TYPE_HW_CACHE, 3 | (1 << 8) | (1 << 16)),
            Kind::ItlbLoadMisses => (TYPE_HW_CACHE, 4 | (1 << 16)),
            Kind::TaskClock => (TYPE_SOFTWARE, 1),
            Kind::Hardware(c) => (TYPE_HARDWARE, c),
            Kind::Software(c) => (TYPE_SOFTWARE, c),
            Kind::Raw(c) => (TYPE_RAW, c),
            Kind::Firmware(f) => (TYPE_RAW, (0b10 << 62) | f as u64),
        };
        let mut flags = FLAG_DISABLED;
        match self.filter {
            Filter::All => {}
            Filter::User => flags |= FLAG_EXCLUDE_KERNEL,
            Filter::Kernel => flags |= FLAG_EXCLUDE_USER,
        }
        if self.pinned {
            flags |= FLAG_PINNED;
        }
        Attr {
            read_format: FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
            flags,
            ..Attr::new(type_, config)
        }
    }
}

fn with_filter(base: String, filter: Filter) -> String {
    match filter {
        Filter::All => base,
        Filter::User => format!("{base}:u"),
        Filter::Kernel => format!("{base}:k"),
    }
}

/// Where an event counts: perf_event_open's (pid, cpu) pair.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// The calling thread, on any CPU.
    ThisThread,
    /// Everything on one CPU (needs root, which /init is).
    Cpu(i32),
    /// Another process (its first thread), on any CPU.
    Process(libc::pid_t),
}

/// An open perf event (closed on drop).
pub struct Counter {
    fd: libc::c_int,
    pub event: Event,
}

/// One reading: value and the times the event was enabled and on a counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    pub value: u64,
    pub enabled: u64,
    pub running: u64,
}

fn sys_open(attr: &Attr, target: Target, group: libc::c_int) -> io::Result<libc::c_int> {
    let (pid, cpu) = match target {
        Target::ThisThread => (0, -1),
        Target::Cpu(c) => (-1, c),
        Target::Process(p) => (p, -1),
    };
    // SAFETY: attr points to a fully initialised perf_event_attr of the size
    // it declares; the kernel only reads it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const Attr,
            pid as libc::pid_t,
            cpu as libc::c_int,
            group,
            0 as libc::c_ulong,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as libc::c_int)
    }
}

impl Counter {
    /// Open a counting event, disabled; `group` makes it a member of that
    /// leader's group.
    pub fn open(event: Event, target: Target, group: Option<&Counter>) -> io::Result<Counter> {
        let fd = sys_open(&event.attr(), target, group.map_or(-1, |g| g.fd))?;
        Ok(Counter { fd, event })
    }

    /// Open a counting event on another process that starts counting when
    /// that process calls execve (`enable_on_exec`): counts the new
    /// program from its first instruction, nothing of the fork before.
    pub fn open_on_exec(event: Event, pid: libc::pid_t) -> io::Result<Counter> {
        let mut attr = event.attr();
        attr.flags |= FLAG_ENABLE_ON_EXEC;
        let fd = sys_open(&attr, Target::Process(pid), -1)?;
        Ok(Counter { fd, event })
    }

    /// Whether the kernel lets user space read this (enabled) counter
    /// directly: `cap_user_rdpmc` (bit 2 of `capabilities`) and a non-zero
    /// `index` in the event's perf mmap page. On RISC-V that is what
    /// `kernel.perf_user_access` grants; trace libraries read the counter
    /// CSR then instead of calling read().
    pub fn user_readable(&self) -> io::Result<bool> {
        let p = map_shared(self.fd, PAGE, libc::PROT_READ)?;
        // perf_event_mmap_page: u32 version, compat_version, lock, index;
        // i64 offset; u64 time_enabled, time_running, capabilities.
        // SAFETY: the page is mapped and at least 48 bytes long; the kernel
        // updates it concurrently, hence volatile reads.
        let (index, caps) = unsafe {
            (
                std::ptr::read_volatile(p.add(12) as *const u32),
                std::ptr::read_volatile(p.add(40) as *const u64),
            )
        };
        // SAFETY: unmapping the page mapped above.
        unsafe { libc::munmap(p.cast(), PAGE) };
        Ok(caps & (1 << 2) != 0 && index != 0)
    }

    fn ioctl(&self, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<()> {
        // SAFETY: perf ioctls on our own fd with an integer argument.
        if unsafe { libc::ioctl(self.fd, req as _, arg) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn enable(&self) -> io::Result<()> {
        self.ioctl(IOC_ENABLE, 0)
    }

    pub fn disable(&self) -> io::Result<()> {
        self.ioctl(IOC_DISABLE, 0)
    }

    /// Enable the whole group this leader heads, in one call.
    pub fn enable_group(&self) -> io::Result<()> {
        self.ioctl(IOC_ENABLE, IOC_FLAG_GROUP)
    }

    pub fn disable_group(&self) -> io::Result<()> {
        self.ioctl(IOC_DISABLE, IOC_FLAG_GROUP)
    }

    /// Read value, time enabled, time running. A pinned event that could not
    /// get a counter is in error state and reads as end-of-file: that is an
    /// error here.
    pub fn read(&self) -> io::Result<Reading> {
        let mut buf = [0u64; 3];
        // SAFETY: reading at most 24 bytes into a 24-byte buffer.
        let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), 24) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n != 24 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("read {n} of 24 bytes (event in error state)"),
            ));
        }
        Ok(Reading {
            value: buf[0],
            enabled: buf[1],
            running: buf[2],
        })
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: closing the fd this value owns.
        unsafe { libc::close(self.fd) };
    }
}

/// A sampling event on the calling thread with its mmap'ed ring buffer.
pub struct Sampler {
    counter: Counter,
    base: *mut u8,
    len: usize,
}

/// What the ring buffer held after a sampling run.
#[derive(Clone, Copy, Debug, Default)]
pub struct SampleStats {
    pub samples: u64,
    pub lost: u64,
    pub throttle: u64,
    pub unthrottle: u64,
    pub other: u64,
}

const PAGE: usize = 4096;
const DATA_PAGES: usize = 16;

/// Map `len` bytes of a perf fd (control page first), shared with the
/// kernel.
fn map_shared(fd: libc::c_int, len: usize, prot: libc::c_int) -> io::Result<*mut u8> {
    // SAFETY: a new shared mapping of our perf fd at an address the kernel
    // picks; checked for MAP_FAILED below.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(p.cast())
    }
}

impl Sampler {
    pub fn open(event: Event, period: u64) -> io::Result<Sampler> {
        let mut attr = event.attr();
        attr.sample_period = period;
        attr.sample_type = SAMPLE_IP;
        let fd = sys_open(&attr, Target::ThisThread, -1)?;
        let counter = Counter { fd, event };
        let len = PAGE * (1 + DATA_PAGES);
        // The ring buffer is mapped read/write, as perf requires.
        let base = map_shared(fd, len, libc::PROT_READ | libc::PROT_WRITE)?;
        Ok(Sampler { counter, base, len })
    }

    pub fn counter(&self) -> &Counter {
        &self.counter
    }

    /// Walk the records written so far (call after disabling the event).
    pub fn stats(&self) -> SampleStats {
        // perf_event_mmap_page: data_head at 1024, data_offset at 1040,
        // data_size at 1048.
        // SAFETY: the first page is the mapped control page; volatile reads
        // because the kernel writes it.
        let (head, offset, size) = unsafe {
            let head = std::ptr::read_volatile(self.base.add(1024) as *const u64);
            let offset = std::ptr::read_volatile(self.base.add(1040) as *const u64);
            let size = std::ptr::read_volatile(self.base.add(1048) as *const u64);
            (head, offset as usize, size as usize)
        };
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let mut st = SampleStats::default();
        if size == 0 || offset + size > self.len {
            return st;
        }
        let data = self.base.wrapping_add(offset);
        let byte = |pos: u64| -> u8 {
            // SAFETY: index reduced modulo the data area size.
            unsafe { *data.add((pos % size as u64) as usize) }
        };
        let start = head.saturating_sub(size as u64);
        let mut pos = start;
        while pos + 8 <= head {
            let ty = u32::from_le_bytes([byte(pos), byte(pos + 1), byte(pos + 2), byte(pos + 3)]);
            let len = u16::from_le_bytes([byte(pos + 6), byte(pos + 7)]) as u64;
            if len < 8 {
                break;
            }
            match ty {
                9 => st.samples += 1,
                2 => {
                    st.lost +=
                        u64::from_le_bytes(std::array::from_fn(|i| byte(pos + 16 + i as u64)))
                }
                5 => st.throttle += 1,
                6 => st.unthrottle += 1,
                _ => st.other += 1,
            }
            pos += len;
        }
        st
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in open().
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
