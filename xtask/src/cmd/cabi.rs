//! `cargo xtask cabi DIR`: install hpmtrace's C API (headers and static
//! library) into DIR.

use crate::build::hpmtrace::{install, install_host, Mode};
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct CabiArgs {
    /// Destination: DIR/include and DIR/lib are created.
    pub dir: PathBuf,
    /// The bare-metal library instead (riscv64 S-mode programs on an SBI
    /// firmware; sifive_bare_perf.h): riscv64gc-unknown-none-elf.
    #[arg(long)]
    pub bare_metal: bool,
    /// With --bare-metal: for M-mode programs (counters and CLINT timer
    /// programmed directly; the program provides
    /// `void hpmtrace_console_write(const char *, unsigned long)`).
    #[arg(long, requires = "bare_metal")]
    pub machine_mode: bool,
}

/// Build the static library (release) and install headers and library.
pub fn cabi(a: CabiArgs) -> Result<()> {
    let d = a.dir.display();
    if a.bare_metal {
        let mode = if a.machine_mode {
            Mode::Machine
        } else {
            Mode::Supervisor
        };
        install(&a.dir, mode, None)?;
        eprintln!("installed {d}/include/*.h and {d}/lib/libhpmtrace.a (bare metal, riscv64, {mode:?} mode)");
        eprintln!("build a program:  riscv64-linux-gnu-gcc -march=rv64gc -mabi=lp64d -mcmodel=medany -ffreestanding -nostdlib -finstrument-functions -I{d}/include prog.c your-runtime.o {d}/lib/libhpmtrace.a -lgcc");
        eprintln!("set HPMTRACE_POOL_BYTES=<n>[K|M] when building for a pool other than 256K (PERF_MEM_POOL_SIZE)");
        return Ok(());
    }
    install_host(&a.dir)?;
    eprintln!("installed {d}/include/*.h and {d}/lib/libhpmtrace.a");
    eprintln!("build a program:  cc -finstrument-functions -I{d}/include prog.c {d}/lib/libhpmtrace.a -lpthread -ldl -lm");
    eprintln!("events the machine cannot count are left out of the trace (a warning names each); HPMTRACE_SW_FALLBACK=1 counts Linux software events in their place (event type 16: hpmtrace's decoder only)");
    Ok(())
}
