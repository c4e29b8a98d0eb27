//! The guest side: the workload runner (`rvpmu-work`), PID 1 setup,
//! scenario dispatch, power-off.

mod ipi;
mod perf;
mod samplecost;
mod scenarios;
mod session;
mod steal;
mod sys;
mod trace;
mod work;
mod workload;

use crate::cmdline::{Mode, Params};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

/// Entry point. Started as `rvpmu-work` it runs a workload and exits like
/// any program; otherwise it is /init and never returns: PID 1 must not
/// exit, so every outcome (success, error, panic) ends in a power-off.
pub fn main() -> ! {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    if crate::workcmd::is_work(argv0.as_bytes()) {
        std::process::exit(work::main());
    }
    if std::process::id() != 1 {
        // Not the kernel's init (e.g. /init typed in the shell): powering
        // off from here would be a surprise.
        eprintln!(
            "e2e-init: this is /init (PID 1) of the rvpmu guest; started as `{}` it runs \
             workloads instead\n{}",
            crate::workcmd::NAME,
            crate::workcmd::USAGE
        );
        std::process::exit(2);
    }
    let outcome = std::panic::catch_unwind(run);
    match outcome {
        Ok(Ok(())) => println!("{}", e2e_proto::done_line(Ok(()))),
        Ok(Err(e)) => println!("{}", e2e_proto::done_line(Err(&e))),
        Err(_) => println!("{}", e2e_proto::done_line(Err("/init panicked"))),
    }
    let _ = std::io::stdout().flush();
    sys::power_off()
}

fn run() -> Result<(), String> {
    sys::mount_pseudo_filesystems()?;
    let cmdline = std::fs::read_to_string("/proc/cmdline")
        .map_err(|e| format!("cannot read /proc/cmdline: {e}"))?;
    let params = Params::parse(&cmdline)?;
    println!(
        "rvpmu /init: mode {} ({} CPUs online)",
        params.mode.name(),
        sys::online_cpus().len()
    );
    match params.mode {
        Mode::Boot => scenarios::boot(),
        Mode::Demo => scenarios::demo(&params),
        Mode::Sampling => scenarios::sampling(&params),
        Mode::Stress => scenarios::stress(&params),
        Mode::FwEvents => scenarios::fwevents(),
        Mode::Steal => steal::steal(&params),
        Mode::Idle => steal::idle(&params),
        Mode::Trace => trace::trace(),
        Mode::Plan => session::plan(),
        Mode::Shell => session::shell(),
        Mode::SampleCost => samplecost::samplecost(&params),
    }
}
