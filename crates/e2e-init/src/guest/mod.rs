//! The guest side: PID 1 setup, scenario dispatch, power-off.

mod perf;
mod scenarios;
mod steal;
mod sys;
mod trace;
mod workload;

use crate::cmdline::Params;
use std::io::Write;

/// Entry point of /init. Never returns: PID 1 must not exit, so every
/// outcome (success, error, panic) ends in a power-off.
pub fn main() -> ! {
    let outcome = std::panic::catch_unwind(run);
    match outcome {
        Ok(Ok(())) => println!("RVPMU-DONE ok"),
        Ok(Err(e)) => println!("RVPMU-DONE error: {e}"),
        Err(_) => println!("RVPMU-DONE error: /init panicked"),
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
    scenarios::run(&params)
}
