//! `cargo xtask dt-check FILE`: the riscv,pmu node of a board's device tree,
//! parsed by the same code the firmware uses (`rvpmu::dt`), printed as an
//! event table with its validation result.

use anyhow::{bail, Context, Result};
use rvpmu::dt::{
    platform_quirk_of, standard_events, CounterList, EventMap, PlatformQuirk, PmuProps,
};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::host::{root, step};

const AFTER_HELP: &str = "\
FILE is a .dts (compiled with dtc) or a .dtb (read as the firmware reads it).
Exit status: 0 when the riscv,pmu node is valid, 1 with the exact property,
row and reason otherwise (or when there is no riscv,pmu node).

Examples:
  cargo xtask dt-check board.dts
  cargo xtask dt-check --present 0,2-18 board.dtb
  cargo xtask dt-check --qemu       # the tree QEMU virt generates";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct DtCheckArgs {
    /// The device tree: .dts or .dtb.
    #[arg(required_unless_present = "qemu", conflicts_with = "qemu")]
    pub file: Option<PathBuf>,
    /// Check the tree QEMU virt generates (-cpu rv64,sscofpmf=true) instead of FILE.
    #[arg(long)]
    pub qemu: bool,
    /// Counters the hart implements, as CSR offsets ("0,2-18") or a hex
    /// bitmap ("0x7fffd"); the map may then name only these. Default: not checked.
    #[arg(long, value_name = "LIST")]
    pub present: Option<String>,
    /// Fail on warnings (rows that are accepted but can never take effect).
    #[arg(long)]
    pub strict: bool,
}

pub fn run(a: DtCheckArgs) -> Result<()> {
    let present = a.present.as_deref().map(parse_counters).transpose()?;
    let file = match (&a.file, a.qemu) {
        (_, true) => dump_qemu_dtb()?,
        (Some(f), false) => f.clone(),
        (None, false) => bail!("give a .dts/.dtb FILE or --qemu (see --help)"),
    };
    check(&file, present, a.strict)
}

/// Host-side demo: QEMU virt's own tree, checked against its 16 HPM counters.
#[allow(dead_code)] // kept for `cargo xtask run` while the firmware demo is built
pub fn demo() -> Result<()> {
    let dtb = dump_qemu_dtb()?;
    check(&dtb, Some(QEMU_PRESENT), false)
}

/// cycle, instret and QEMU virt's default 16 HPM counters (mhpmcounter3..18).
const QEMU_PRESENT: u32 = 0x7fffd;

/// Dump QEMU virt's generated DT (the one our firmware receives) to target/.
fn dump_qemu_dtb() -> Result<PathBuf> {
    let dir = root().join("target/dtcheck");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dtb = dir.join("qemu-virt.dtb");
    step("dumping QEMU virt's device tree (-cpu rv64,sscofpmf=true)");
    crate::qemu::Qemu::virt(1).dump_dtb(&dtb)?;
    Ok(dtb)
}

/// FILE as a blob: a .dtb as it is (`rvpmu_dtb::open` checks it as the
/// firmware does; dtc refuses some valid blobs, e.g. NOP tokens before the
/// root node), a .dts compiled with dtc.
fn load_dtb(file: &Path) -> Result<(Vec<u8>, &'static str)> {
    let head = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    if head.starts_with(&[0xd0, 0x0d, 0xfe, 0xed]) {
        return Ok((head, "device tree blob"));
    }
    let (input, kind) = ("dts", "device tree source, compiled with dtc");
    let out = Command::new("dtc")
        .args(["-q", "-I", input, "-O", "dtb", "-o", "-"])
        .arg(file)
        .output()
        .context("cannot run dtc; `cargo xtask setup` installs device-tree-compiler")?;
    if !out.status.success() {
        bail!(
            "dtc cannot read {} as {input}:\n{}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    Ok((out.stdout, kind))
}

fn check(file: &Path, present: Option<u32>, strict: bool) -> Result<()> {
    let (mut blob, kind) = load_dtb(file)?;
    let size = blob.len();
    let fdt = rvpmu_dtb::open(&mut blob).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    println!("{}: {kind}, {size} bytes", file.display());
    print_isa(&fdt);

    let nodes: Vec<&str> = fdt
        .all_nodes()
        .filter(|n| {
            n.compatible()
                .is_some_and(|c| c.all().any(|s| s == "riscv,pmu"))
        })
        .map(|n| n.name)
        .collect();
    let Some(props) = PmuProps::find(&fdt) else {
        bail!(
            "{}: no node with compatible = \"riscv,pmu\". Without one only cycle and \
             instret are usable; add a pmu node (binding: OpenSBI docs/pmu_support.md)",
            file.display()
        );
    };
    println!("\npmu node: {} (compatible \"riscv,pmu\")", nodes[0]);
    if nodes.len() > 1 {
        println!(
            "  note: {} riscv,pmu nodes; like OpenSBI, only the first is used",
            nodes.len()
        );
    }
    for (name, value, per_row) in [
        ("riscv,event-to-mhpmevent", props.event_to_mhpmevent, 3),
        (
            "riscv,event-to-mhpmcounters",
            props.event_to_mhpmcounters,
            3,
        ),
        (
            "riscv,raw-event-to-mhpmcounters",
            props.raw_event_to_mhpmcounters,
            5,
        ),
    ] {
        match value {
            None => println!("  {name:<33} absent"),
            Some(v) => println!(
                "  {name:<33} {} cells, {}",
                v.len() / 4,
                plural(v.len() / 4 / per_row, "row")
            ),
        }
    }
    let name = "rvpmu,one-counter-per-event";
    match props.one_counter_per_event {
        None => println!("  {name:<33} absent"),
        Some([]) => println!("  {name:<33} present"),
        Some(v) => println!("  {name:<33} {} bytes (must be empty)", v.len()),
    }

    // The firmware's own parse: all four properties, counters checked.
    let mut map = EventMap::empty();
    map.load_props(props, present).map_err(|e| {
        println!();
        anyhow::anyhow!("invalid riscv,pmu node in {}:\n  {e}", file.display())
    })?;

    print!("\n{}", map_table(&map));
    let warnings: Vec<String> = map.warnings().map(|w| w.to_string()).collect();
    for w in &warnings {
        println!("warning: {w}");
    }
    let all = map.all_counters();
    let hpm = all & !0b111;
    print!(
        "counters named by the map: {} ({} HPM counters)",
        CounterList(all),
        hpm.count_ones()
    );
    match present {
        Some(p) => println!(", all present on the hart ({})", CounterList(p | 0b101)),
        None => println!(", not checked against the hart (pass --present LIST)"),
    }
    println!(
        "{}",
        one_counter_line(map.one_counter_per_event(), platform_quirk_of(&fdt))
    );
    if strict && !warnings.is_empty() {
        bail!("{} warning(s) and --strict", warnings.len());
    }
    println!(
        "OK: valid riscv,pmu node ({}, {}, {}, {})",
        plural(map.selector_rows().len(), "selector row"),
        plural(map.range_rows().len(), "range row"),
        plural(map.raw_rows().len(), "raw row"),
        plural(warnings.len(), "warning")
    );
    Ok(())
}

/// Whether the firmware will keep one HPM counter per event selector, and
/// why: the pmu node's `rvpmu,one-counter-per-event` (`from_dt`), the
/// platform quirk table (`quirk`, by the root `compatible`), or neither.
fn one_counter_line(from_dt: bool, quirk: Option<&PlatformQuirk>) -> String {
    let quirk = quirk.filter(|q| q.one_counter_per_event);
    let why = match (from_dt, quirk) {
        (false, None) => {
            return "one counter per event: off (HPM counters may share an event selector)"
                .to_string()
        }
        (true, None) => "rvpmu,one-counter-per-event in the pmu node".to_string(),
        (from_dt, Some(q)) => format!(
            "{}platform quirk for root compatible \"{}\": {}",
            if from_dt {
                "rvpmu,one-counter-per-event in the pmu node, and the "
            } else {
                ""
            },
            q.root_compatible,
            q.why
        ),
    };
    format!(
        "one counter per event: on ({why})\n  config_matching gives no HPM counter an event \
         selector another configured HPM counter holds (it would read 0); such a request gets \
         the fixed counter or NOT_SUPPORTED, and Linux multiplexes"
    )
}

/// Print each CPU's PMU-relevant ISA extensions.
fn print_isa(fdt: &fdt::Fdt) {
    let Some(cpus) = fdt.find_node("/cpus") else {
        println!("no /cpus node: ISA extensions not checked");
        return;
    };
    for cpu in cpus
        .children()
        .filter(|c| c.name.split('@').next() == Some("cpu"))
    {
        let isa = cpu
            .property("riscv,isa")
            .and_then(|p| p.as_str())
            .unwrap_or("");
        let list: Vec<&str> = cpu
            .property("riscv,isa-extensions")
            .map(|p| {
                p.value
                    .split(|&b| b == 0)
                    .filter_map(|s| std::str::from_utf8(s).ok())
                    .collect()
            })
            .unwrap_or_default();
        let has = |ext: &str| {
            list.iter().any(|e| e.eq_ignore_ascii_case(ext))
                || isa.split('_').skip(1).any(|e| e.eq_ignore_ascii_case(ext))
        };
        println!("{}: riscv,isa = \"{}\"", cpu.name, shorten(isa));
        for (ext, yes, no) in [
            (
                "zihpm",
                "mhpmcounter3..31 may exist",
                "no HPM counters: only cycle and instret",
            ),
            (
                "sscofpmf",
                "overflow interrupts and mode filtering on HPM counters (perf record works)",
                "no overflow interrupts: counting only, no sampling",
            ),
            (
                "smcntrpmf",
                "cycle/instret can be filtered by mode",
                "cycle/instret cannot be filtered: filtered events need HPM counters",
            ),
        ] {
            let (mark, what) = if has(ext) { ("yes", yes) } else { ("no ", no) };
            println!("  {ext:<10} {mark}  {what}");
        }
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn shorten(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s.to_string()
    }
}

/// "0,2-18" or "0x7fffd" -> bitmap over CSR offsets.
fn parse_counters(s: &str) -> Result<u32> {
    let bad = || {
        format!("--present {s:?}: give CSR offsets 0..31 like \"0,2-18\" or a hex bitmap like \"0x7fffd\"")
    };
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u32::from_str_radix(hex, 16).with_context(bad);
    }
    let mut bits = 0u32;
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
            None => (part.parse::<u32>(), part.parse::<u32>()),
        };
        let (lo, hi) = (lo.with_context(bad)?, hi.with_context(bad)?);
        if lo > hi || hi > 31 {
            bail!(bad());
        }
        for i in lo..=hi {
            bits |= 1 << i;
        }
    }
    if bits == 0 {
        bail!(bad());
    }
    Ok(bits)
}

/// The map as a table: every standard general/cache event some counter
/// can count (name, event_idx, selector and where it comes from,
/// counters), then the raw rows. Names come from the engine; widths are
/// in characters.
fn map_table(map: &EventMap) -> String {
    use std::fmt::Write;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<26} {:<9} {:<20} counters",
        "event", "idx", "selector"
    );
    let mut listed = 0;
    for ev in standard_events() {
        let counters = map.counters(&ev);
        if counters == 0 {
            continue;
        }
        listed += 1;
        let from = if map.has_dt_selector(&ev) {
            "dt"
        } else {
            "idx"
        };
        let _ = writeln!(
            t,
            "{:<26} {:<9} {:<20} {}",
            ev.to_string(),
            format!("{:#07x}", ev.idx()),
            format!("{:#x} ({from})", map.selector(&ev)),
            CounterList(counters)
        );
    }
    let _ = writeln!(
        t,
        "{listed} of {} standard hardware events have counters",
        standard_events().count()
    );
    let raw = map.raw_rows();
    if !raw.is_empty() {
        let _ = writeln!(t, "\n{:<20} {:<20} counters", "raw match", "mask");
        for r in raw {
            let _ = writeln!(
                t,
                "{:#018x}   {:#018x}   {}",
                r.select,
                r.mask,
                CounterList(r.counters)
            );
        }
        let _ = writeln!(
            t,
            "{} raw rows in {} mask groups",
            raw.len(),
            map.raw_mask_groups()
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::{check, load_dtb, map_table, one_counter_line, parse_counters};
    use crate::host::root;
    use rvpmu::dt::PLATFORM_QUIRKS;

    fn fixture(name: &str) -> std::path::PathBuf {
        root().join("tests/fixtures/dt").join(name)
    }

    #[test]
    fn table_view_of_qemu_virt() {
        let (blob, _) = load_dtb(&fixture("qemu-virt.dts")).unwrap();
        let fdt = fdt::Fdt::new(&blob).unwrap();
        let map = rvpmu::dt::EventMap::from_fdt(&fdt).unwrap().unwrap();
        let expected = "\
event                      idx       selector             counters
CPU_CYCLES                 0x00001   0x1 (idx)            0,3-18
INSTRUCTIONS               0x00002   0x2 (idx)            2-18
DTLB_READ_MISS             0x10019   0x10019 (idx)        3-18
DTLB_WRITE_MISS            0x1001b   0x1001b (idx)        3-18
ITLB_READ_MISS             0x10021   0x10021 (idx)        3-18
5 of 52 standard hardware events have counters
";
        assert_eq!(map_table(&map), expected);
    }

    #[test]
    fn check_accepts_the_binding_examples_and_refuses_malformed() {
        for ok in [
            "pmu-support-example2.dts",
            "pmu-support-example3.dts",
            "qemu-virt.dts",
        ] {
            check(&fixture(ok), None, true).unwrap();
        }
        // Example 1 is valid but has two dead rows: --strict refuses it.
        check(&fixture("pmu-support-example1.dts"), None, false).unwrap();
        let e = check(&fixture("pmu-support-example1.dts"), None, true).unwrap_err();
        assert_eq!(e.to_string(), "2 warning(s) and --strict");
        let e = check(&fixture("bad-overlap.dts"), None, false).unwrap_err();
        assert!(e.to_string().ends_with(
            "riscv,event-to-mhpmcounters row 3 (<0x10000 0x10033 0xff000>): range overlaps row 2"
        ));
        let e = check(&fixture("qemu-virt.dts"), Some(0x7ff8), false).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("counters 15-18 do not exist on this hart"),
            "{e}"
        );
        // Not a device tree at all.
        let e = check(&root().join("Cargo.toml"), None, false).unwrap_err();
        assert!(e.to_string().contains("dtc cannot read"), "{e}");
    }

    #[test]
    fn one_counter_per_event_source_is_named() {
        assert_eq!(
            one_counter_line(false, None),
            "one counter per event: off (HPM counters may share an event selector)"
        );
        let dt = one_counter_line(true, None);
        assert!(
            dt.starts_with(
                "one counter per event: on (rvpmu,one-counter-per-event in the pmu node)\n"
            ),
            "{dt}"
        );
        let q = &PLATFORM_QUIRKS[0];
        let quirk = one_counter_line(false, Some(q));
        assert!(
            quirk.starts_with(
                "one counter per event: on (platform quirk for root compatible \"riscv-virtio\": QEMU"
            ),
            "{quirk}"
        );
        assert!(one_counter_line(true, Some(q)).contains("pmu node, and the platform quirk"));
    }

    #[test]
    fn malformed_one_counter_per_event_is_refused() {
        let dir = std::env::temp_dir().join(format!("rvpmu-dtcheck-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dts = dir.join("bad-bool.dts");
        std::fs::write(
            &dts,
            "/dts-v1/;\n/ { #address-cells = <2>; #size-cells = <2>;\n\
             pmu { compatible = \"riscv,pmu\"; rvpmu,one-counter-per-event = <1>; }; };\n",
        )
        .unwrap();
        let e = check(&dts, None, false).unwrap_err();
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            e.to_string().ends_with(
                "rvpmu,one-counter-per-event: a boolean property is empty (present means \
                 true), but this one has 4 bytes; write it without a value"
            ),
            "{e}"
        );
    }

    /// `blob` with `n` FDT_NOP tokens at structure-block offset `at` (the
    /// blocks after it move up; dtc's layout: reservations, structure, strings).
    fn with_nops(blob: &[u8], at: usize, n: usize) -> Vec<u8> {
        let field = |b: &[u8], i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
        let st = field(blob, 8) as usize;
        let mut out = blob.to_vec();
        out.splice(st + at..st + at, 4u32.to_be_bytes().repeat(n));
        for (i, grow) in [(4, 4 * n), (12, 4 * n), (36, 4 * n)] {
            let v = field(&out, i) as usize + grow;
            out[i..i + 4].copy_from_slice(&(v as u32).to_be_bytes());
        }
        out
    }

    #[test]
    fn nop_tokens_anywhere_are_accepted_like_the_tree_without_them() {
        let (plain, _) = load_dtb(&fixture("qemu-virt.dts")).unwrap();
        let size = u32::from_be_bytes(plain[36..40].try_into().unwrap()) as usize;
        // Before FDT_END, after the root's FDT_BEGIN_NODE (4 + a 4-byte
        // name slot), before the root node (dtc itself refuses that one).
        let nopped = with_nops(&with_nops(&with_nops(&plain, size - 4, 3), 8, 2), 0, 1);
        let dir = std::env::temp_dir().join(format!("rvpmu-dtcheck-nop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("plain.dtb"), dir.join("nopped.dtb"));
        std::fs::write(&a, &plain).unwrap();
        std::fs::write(&b, &nopped).unwrap();
        let map = |file: &std::path::Path| {
            let (mut blob, _) = load_dtb(file).unwrap();
            let fdt = rvpmu_dtb::open(&mut blob).unwrap();
            map_table(&rvpmu::dt::EventMap::from_fdt(&fdt).unwrap().unwrap())
        };
        assert_eq!(map(&b), map(&a));
        check(&b, Some(0x7fffd), true).unwrap();
        // A NOP token cut short: refused with what and where.
        std::fs::write(&b, &nopped[..nopped.len() - 1]).unwrap();
        let e = check(&b, None, false).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            e.ends_with(&format!(
                "truncated: {} bytes needed, {} there (byte 0x4)",
                nopped.len(),
                nopped.len() - 1
            )),
            "{e}"
        );
    }

    #[test]
    fn counter_lists() {
        assert_eq!(parse_counters("0,2-18").unwrap(), 0x7fffd);
        assert_eq!(parse_counters("0x7fff8").unwrap(), 0x7fff8);
        assert_eq!(parse_counters("3, 4").unwrap(), 0x18);
        assert!(parse_counters("3-32").is_err());
        assert!(parse_counters("5-3").is_err());
        assert!(parse_counters("x").is_err());
        assert!(parse_counters("").is_err());
    }
}
