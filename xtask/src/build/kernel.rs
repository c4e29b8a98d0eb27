//! Linux `Image`s for QEMU virt: tinyconfig + `e2e/kernel.config`,
//! olddefconfig, every fragment line verified, then `make Image`. Two
//! releases: 7.2 (the default; Debian trixie-backports' `linux-source-7.2`,
//! fetched through the private apt of [`crate::host::debian`]) and the 6.12 LTS
//! (the host's bookworm-backports `linux-source-6.12`), each as Debian
//! ships it or `fixed`: with the release's series of `patches/linux/`
//! applied to a tree of its own (the shared unpatched tree is never
//! touched), each patch exactly and checkpatch-clean, or the build fails.
//! A release's series is every `*.patch` of `patches/linux/` (for every
//! release) and of `patches/linux/<release>/` (for that release only: the
//! KVM fixes, in `patches/linux/7.2/`, fix code 6.12 does not have), in
//! the order of their `git format-patch` numbers, which run on across both
//! folders as one series. Built out of tree in the cache, keyed by the
//! version, the fragment, the source tarball and (fixed) the series'
//! names and bytes, so a second run costs nothing.

use crate::host::debian::{PrivateApt, TRIXIE_BACKPORTS};
use crate::host::{cache_dir, root, step};
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Bump when the build recipe changes in a way the key would not see.
const RECIPE_VERSION: &str = "1";

/// The kernel releases the project builds, as Debian ships their source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Release {
    /// Linux 6.12 LTS (Debian bookworm-backports).
    V6_12,
    /// Linux 7.2 (Debian trixie-backports), the default.
    V7_2,
}

impl Release {
    /// `6.12` / `7.2`.
    pub fn name(self) -> &'static str {
        match self {
            Release::V6_12 => "6.12",
            Release::V7_2 => "7.2",
        }
    }

    /// Debian's source package (and the top directory of its tarball).
    fn source_package(self) -> String {
        format!("linux-source-{}", self.name())
    }

    /// The source tarball: the host's for 6.12, downloaded for 7.2.
    fn tarball(self) -> Result<PathBuf> {
        match self {
            Release::V6_12 => {
                let p = PathBuf::from("/usr/src/linux-source-6.12.tar.xz");
                if !p.is_file() {
                    bail!("{} is missing: run `cargo xtask setup` (installs linux-source-6.12 from bookworm-backports)", p.display());
                }
                Ok(p)
            }
            Release::V7_2 => trixie_tarball(self),
        }
    }
}

/// A kernel the project builds and tests: a release as Debian ships it,
/// or with its series of `patches/linux/` applied (`fixed`; the fixes
/// of the SBI PMU driver and, on 7.2, of KVM's SBI that
/// docs/linux-patches.md describes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Version {
    pub release: Release,
    pub fixed: bool,
}

impl Version {
    pub const V6_12: Version = Version {
        release: Release::V6_12,
        fixed: false,
    };
    pub const V7_2: Version = Version {
        release: Release::V7_2,
        fixed: false,
    };
    pub const V6_12_FIXED: Version = Version {
        release: Release::V6_12,
        fixed: true,
    };
    pub const V7_2_FIXED: Version = Version {
        release: Release::V7_2,
        fixed: true,
    };
    /// The releases as Debian ships them, in the order the e2e suite runs
    /// them.
    pub const ALL: [Version; 2] = [Version::V7_2, Version::V6_12];
    /// What the e2e suite runs: both releases as shipped (every check),
    /// then with `patches/linux/` applied (the series' proofs only).
    pub const TESTED: [Version; 4] = [
        Version::V7_2,
        Version::V6_12,
        Version::V7_2_FIXED,
        Version::V6_12_FIXED,
    ];

    /// `6.12`, `7.2`, `6.12-fixed`, `7.2-fixed`: the `--kernel` value.
    pub fn name(self) -> &'static str {
        match (self.release, self.fixed) {
            (Release::V6_12, false) => "6.12",
            (Release::V7_2, false) => "7.2",
            (Release::V6_12, true) => "6.12-fixed",
            (Release::V7_2, true) => "7.2-fixed",
        }
    }
}

/// `--kernel 7.2|6.12|7.2-fixed|6.12-fixed` for every command that takes
/// one. Written out because the derive takes only enums of unit variants.
impl clap::ValueEnum for Version {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Version::V6_12,
            Version::V7_2,
            Version::V6_12_FIXED,
            Version::V7_2_FIXED,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match (self.release, self.fixed) {
            (Release::V6_12, false) => "Linux 6.12 LTS (Debian bookworm-backports)",
            (Release::V7_2, false) => "Linux 7.2 (Debian trixie-backports), the default",
            (Release::V6_12, true) => "Linux 6.12 with its fixes of patches/linux/ applied",
            (Release::V7_2, true) => "Linux 7.2 with its fixes of patches/linux/ applied",
        };
        Some(clap::builder::PossibleValue::new(self.name()).help(help))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Linux {}", self.name())
    }
}

/// The tarball inside trixie-backports' source package, extracted once per
/// package version into the cache. If the mirror cannot be reached, the
/// last tarball fetched is used (and said so).
fn trixie_tarball(v: Release) -> Result<PathBuf> {
    let pkg = v.source_package();
    let dir = cache_dir().join(&pkg);
    std::fs::create_dir_all(&dir)?;
    let last = dir.join("last");
    let apt = PrivateApt::trixie("riscv64");
    let deb = match apt
        .update_once()
        .and_then(|_| apt.download_one(&pkg, &TRIXIE_BACKPORTS))
    {
        Ok(deb) => deb,
        Err(e) => {
            let prev = std::fs::read_to_string(&last).unwrap_or_default();
            let prev = PathBuf::from(prev.trim());
            if prev.is_file() {
                eprintln!(
                    "    warning: {e:#}\n    using the {pkg} fetched before: {}",
                    prev.display()
                );
                return Ok(prev);
            }
            return Err(e.context(format!("fetching {pkg} for the Linux {} build", v.name())));
        }
    };
    let stem = deb
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let tarball = dir.join(format!("{stem}.tar.xz"));
    if !tarball.is_file() {
        step(&format!("extracting {pkg}.tar.xz from {}", deb.display()));
        let tmp = dir.join(format!("{stem}.partial"));
        let member = format!("./usr/src/{pkg}.tar.xz");
        let sh = format!(
            "dpkg-deb --fsys-tarfile '{}' | tar -xO '{member}' > '{}'",
            deb.display(),
            tmp.display()
        );
        crate::host::run(Command::new("sh").args(["-c", &sh]))
            .with_context(|| format!("{} has no {member}", deb.display()))?;
        std::fs::rename(&tmp, &tarball)?;
    }
    std::fs::write(&last, tarball.display().to_string())?;
    Ok(tarball)
}

/// A built kernel: the `Image` and the build tree (for usr/gen_init_cpio).
pub struct Kernel {
    pub image: PathBuf,
    pub build_dir: PathBuf,
}

impl Kernel {
    pub fn gen_init_cpio(&self) -> PathBuf {
        self.build_dir.join("usr/gen_init_cpio")
    }
}

/// FNV-1a, enough to name cache directories (not a security boundary).
pub(super) fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter().chain(std::iter::once(&0xffu8)) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn tarball_identity(tarball: &Path) -> Result<String> {
    let md =
        std::fs::metadata(tarball).with_context(|| format!("{} is missing", tarball.display()))?;
    let mtime = md
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Ok(format!("{}-{}", md.len(), mtime))
}

fn fragment_path() -> PathBuf {
    root().join("e2e/kernel.config")
}

/// Where the patch series of the `fixed` kernels lives.
fn series_dir() -> PathBuf {
    root().join("patches/linux")
}

/// One patch of a release's series: its path below `patches/linux/` and
/// its bytes.
pub(crate) struct Patch {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl Patch {
    /// The file name (without the release's folder, if any).
    pub fn file_name(&self) -> &str {
        self.name.rsplit('/').next().unwrap_or(&self.name)
    }
}

/// The series of `release` (module doc): the `*.patch` files of
/// `patches/linux/` and of `patches/linux/<release>/`, in the order they
/// apply (by file name, as `git format-patch` numbers them).
pub(crate) fn read_series(release: Release) -> Result<Vec<Patch>> {
    let mut series = Vec::new();
    for folder in ["", release.name()] {
        let dir = series_dir().join(folder);
        if !folder.is_empty() && !dir.is_dir() {
            continue;
        }
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?
        {
            let path = entry?.path();
            let Some(file) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !file.ends_with(".patch") || !path.is_file() {
                continue;
            }
            let bytes =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let name = if folder.is_empty() {
                file.to_string()
            } else {
                format!("{folder}/{file}")
            };
            series.push(Patch { name, bytes });
        }
    }
    if series.is_empty() {
        bail!("{} holds no *.patch file", series_dir().display());
    }
    series.sort_by(|a, b| a.file_name().cmp(b.file_name()));
    Ok(series)
}

/// Make sure kernel `v` is built; returns it (cached after the first build).
pub fn build(v: Version) -> Result<Kernel> {
    let fragment = std::fs::read_to_string(fragment_path())
        .with_context(|| format!("cannot read {}", fragment_path().display()))?;
    let tarball = v.release.tarball()?;
    let tar_id = tarball_identity(&tarball)?;
    let series = if v.fixed {
        read_series(v.release)?
    } else {
        Vec::new()
    };
    let options = config_lines(&fragment);
    let mut parts: Vec<&[u8]> = vec![
        v.name().as_bytes(),
        options.as_bytes(),
        tar_id.as_bytes(),
        RECIPE_VERSION.as_bytes(),
    ];
    // The series is part of a fixed kernel's key (an unfixed kernel's key
    // has no such part, and stays what it is).
    for p in &series {
        parts.push(p.name.as_bytes());
        parts.push(&p.bytes);
    }
    let key = fnv64(&parts);
    let build_dir = cache_dir().join(format!("linux-{}-build-{key:016x}", v.name()));
    let kernel = Kernel {
        image: build_dir.join("arch/riscv/boot/Image"),
        build_dir: build_dir.clone(),
    };
    let done = build_dir.join(".rvpmu-done");
    if done.exists() && kernel.image.exists() && kernel.gen_init_cpio().exists() {
        step(&format!("{v} Image (cached: {})", kernel.image.display()));
        return Ok(kernel);
    }
    let src = if v.fixed {
        let series_key = fnv64(
            &series
                .iter()
                .flat_map(|p| [p.name.as_bytes(), &p.bytes[..]])
                .collect::<Vec<_>>(),
        );
        let dir = format!("linux-{}-src-{tar_id}-{series_key:016x}", v.name());
        extract(v.release, &tarball, &dir, |src| {
            apply_series(v, src, &series)
        })?
    } else {
        let dir = format!("linux-{}-src-{tar_id}", v.name());
        extract(v.release, &tarball, &dir, |_| Ok(()))?
    };
    std::fs::create_dir_all(&build_dir)?;
    let log_path = build_dir.join("build.log");
    step(&format!(
        "building {v} Image (tinyconfig + e2e/kernel.config; a few minutes; log {})",
        log_path.display()
    ));
    let make = |args: &[&str]| -> Command {
        let mut c = Command::new("make");
        c.current_dir(&src)
            .arg(format!("O={}", build_dir.display()))
            .args(["ARCH=riscv", "CROSS_COMPILE=riscv64-linux-gnu-"])
            .args(args);
        c
    };
    let mut log = std::fs::File::create(&log_path)?;
    run_logged(&mut make(&["tinyconfig"]), &mut log, &log_path, None)?;
    let config_path = build_dir.join(".config");
    let mut config = std::fs::read_to_string(&config_path)?;
    config.push_str("\n# --- e2e/kernel.config ---\n");
    config.push_str(&fragment);
    std::fs::write(&config_path, config)?;
    run_logged(&mut make(&["olddefconfig"]), &mut log, &log_path, None)?;
    verify_config(&fragment, &std::fs::read_to_string(&config_path)?)?;
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    run_logged(
        &mut make(&[&format!("-j{jobs}"), "Image"]),
        &mut log,
        &log_path,
        Some(&format!("{v} build")),
    )?;
    if !kernel.gen_init_cpio().exists() {
        // Built with the kernel's usr/ (initramfs support); make sure of it.
        run_logged(&mut make(&["usr/gen_init_cpio"]), &mut log, &log_path, None)?;
    }
    if !kernel.image.exists() {
        bail!(
            "make succeeded but {} is missing (see {})",
            kernel.image.display(),
            log_path.display()
        );
    }
    std::fs::write(&done, format!("build key {key:016x}\n"))?;
    Ok(kernel)
}

/// Extract the tarball of `release` into `cache_dir()/dir_name` once, then
/// `prepare` the tree (into a temporary name, renamed when both are
/// complete, so an interrupted extraction or a failed preparation is never
/// used).
fn extract(
    release: Release,
    tarball: &Path,
    dir_name: &str,
    prepare: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let top = release.source_package();
    let dir = cache_dir().join(dir_name);
    let src = dir.join(&top);
    if src.join("Makefile").exists() {
        return Ok(src);
    }
    step(&format!("extracting {}", tarball.display()));
    let tmp = cache_dir().join(format!("{dir_name}.partial"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)?;
    }
    std::fs::create_dir_all(&tmp)?;
    crate::host::run(
        Command::new("tar")
            .arg("-xJf")
            .arg(tarball)
            .arg("-C")
            .arg(&tmp),
    )?;
    if !tmp.join(&top).join("Makefile").exists() {
        bail!("{} did not contain {top}/Makefile", tarball.display());
    }
    if let Err(e) = prepare(&tmp.join(&top)) {
        // A tree that failed its preparation is of no use: free its room.
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::rename(&tmp, &dir)?;
    Ok(src)
}

/// Apply `series` to the fresh tree `src` of `v`'s release: each patch
/// must apply exactly (no fuzz; line offsets are fine) and not be there
/// already; then the release's own `scripts/checkpatch.pl --strict` must
/// find nothing in any of them.
fn apply_series(v: Version, src: &Path, series: &[Patch]) -> Result<()> {
    for p in series {
        step(&format!("applying patches/linux/{} to {v}", p.name));
        let out = Command::new("patch")
            .current_dir(src)
            .args([
                "-p1",
                "--forward",
                "--batch",
                "--fuzz=0",
                "--no-backup-if-mismatch",
            ])
            .arg("-i")
            .arg(series_dir().join(&p.name))
            .output()
            .context("cannot start `patch`: run `cargo xtask setup`")?;
        if !out.status.success() {
            bail!(
                "patches/linux/{} does not apply to the {} source ({}):\n{}{}",
                p.name,
                v.release.name(),
                v.release.source_package(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // checkpatch looks every Fixes: id up in the tree's git history and
    // warns UNKNOWN_COMMIT_ID when there is none, as in a release tarball;
    // everything else it checks must be clean.
    let out = Command::new("perl")
        .current_dir(src)
        .env_remove("GIT_DIR")
        .args([
            "scripts/checkpatch.pl",
            "--strict",
            "--no-color",
            "--ignore",
            "UNKNOWN_COMMIT_ID",
        ])
        .args(series.iter().map(|p| series_dir().join(&p.name)))
        .output()
        .context("cannot start `perl` for checkpatch.pl: run `cargo xtask setup`")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if let Err(why) = checkpatch_clean(&text, series.len()).and_then(|()| {
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("checkpatch.pl exited with {}", out.status))
        }
    }) {
        bail!(
            "{}'s scripts/checkpatch.pl --strict on patches/linux: {why}\n{text}{}",
            v.release.name(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    step(&format!(
        "{}'s scripts/checkpatch.pl --strict: the {} patches are clean",
        v.release.name(),
        series.len()
    ));
    Ok(())
}

/// Whether checkpatch's output over `files` patches reports nothing: one
/// `total:` line per file, each with 0 errors, 0 warnings and 0 checks.
fn checkpatch_clean(output: &str, files: usize) -> std::result::Result<(), String> {
    let totals: Vec<&str> = output
        .lines()
        .filter(|l| l.starts_with("total: "))
        .collect();
    if totals.len() != files {
        return Err(format!("{} result lines for {files} patches", totals.len()));
    }
    match totals
        .iter()
        .find(|l| !l.starts_with("total: 0 errors, 0 warnings, 0 checks,"))
    {
        Some(bad) => Err(format!("not clean: {bad}")),
        None => Ok(()),
    }
}

/// Every `CONFIG_X=v` line must be in the final .config verbatim and every
/// `# CONFIG_X is not set` line must leave X unset: olddefconfig silently
/// drops what a dependency forbids, and this turns that into an error.
/// The fragment's option lines, in order, `# CONFIG_X is not set`
/// included (Kconfig reads it as an option): what the build depends on.
/// Other comments and blank lines do not change the kernel, so they do
/// not change the cache key.
fn config_lines(fragment: &str) -> String {
    fragment
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("CONFIG_") || (l.starts_with("# CONFIG_") && l.ends_with(" is not set"))
        })
        .fold(String::new(), |acc, l| acc + l + "\n")
}

pub fn verify_config(fragment: &str, config: &str) -> Result<()> {
    let mut bad = Vec::new();
    for line in fragment.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("# CONFIG_") {
            if let Some(name) = rest.strip_suffix(" is not set") {
                let prefix = format!("CONFIG_{name}=");
                if let Some(l) = config.lines().find(|l| l.starts_with(&prefix)) {
                    bad.push(format!("wanted CONFIG_{name} unset, got `{l}`"));
                }
            }
        } else if line.starts_with("CONFIG_") && !config.lines().any(|l| l.trim() == line) {
            let name = line.split('=').next().unwrap_or(line);
            let got = config
                .lines()
                .find(|l| {
                    l.starts_with(&format!("{name}=")) || l.starts_with(&format!("# {name} "))
                })
                .unwrap_or("(absent: a dependency is missing)");
            bad.push(format!("wanted `{line}`, got `{got}`"));
        }
    }
    if !bad.is_empty() {
        bail!(
            "kernel config does not match e2e/kernel.config after olddefconfig:\n  {}",
            bad.join("\n  ")
        );
    }
    Ok(())
}

/// Run a command with all output appended to `log`; with `progress`, show a
/// one-line count of compiled files instead of make's output. On failure
/// print the log's tail.
fn run_logged(
    cmd: &mut Command,
    log: &mut std::fs::File,
    log_path: &Path,
    progress: Option<&str>,
) -> Result<()> {
    writeln!(log, "$ {cmd:?}")?;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(log.try_clone()?)
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    let stdout = child.stdout.take().expect("piped");
    let mut compiled = 0u64;
    let start = std::time::Instant::now();
    let mut last = start;
    // On a terminal one line rewritten twice a second; in a log (CI) a
    // line every 30 s.
    let tty = std::io::stderr().is_terminal();
    let every = std::time::Duration::from_millis(if tty { 500 } else { 30_000 });
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap_or_default();
        writeln!(log, "{line}")?;
        if let Some(label) = progress {
            if line.starts_with("  CC") || line.starts_with("  AS") {
                compiled += 1;
            }
            if last.elapsed() >= every {
                let secs = start.elapsed().as_secs();
                let text = format!("    {label}: {compiled} files compiled, {secs} s");
                if tty {
                    eprint!("\r{text}");
                } else {
                    eprintln!("{text}");
                }
                last = std::time::Instant::now();
            }
        }
    }
    let status = child.wait()?;
    if let Some(label) = progress {
        let secs = start.elapsed().as_secs();
        let cr = if tty { "\r" } else { "" };
        eprintln!("{cr}    {label}: {compiled} files compiled in {secs} s, done");
    }
    if !status.success() {
        let text = std::fs::read_to_string(log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        bail!(
            "{cmd:?} failed with {status}; last lines of {}:\n{tail}",
            log_path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_config_catches_dropped_and_forced_options() {
        let frag = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_N=4\n";
        assert!(verify_config(frag, "CONFIG_A=y\nCONFIG_N=4\n# CONFIG_B is not set\n").is_ok());
        let e = verify_config(frag, "CONFIG_N=4\n").unwrap_err().to_string();
        assert!(e.contains("CONFIG_A=y"), "{e}");
        let e = verify_config(frag, "CONFIG_A=y\nCONFIG_B=y\nCONFIG_N=4\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("CONFIG_B unset"), "{e}");
        let e = verify_config(frag, "CONFIG_A=y\nCONFIG_N=8\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("CONFIG_N=8"), "{e}");
    }

    #[test]
    fn cache_key_ignores_comments_only() {
        let a = config_lines("# base\nCONFIG_A=y\n\n# n\nCONFIG_N=4\n");
        assert_eq!(a, config_lines("CONFIG_A=y\n# other words\n  CONFIG_N=4"));
        assert_ne!(a, config_lines("CONFIG_A=y\nCONFIG_N=8\n"));
        // Turning an option off is an option line, though it reads as a
        // comment.
        assert_ne!(
            a,
            config_lines("CONFIG_A=y\nCONFIG_N=4\n# CONFIG_X is not set\n")
        );
    }

    #[test]
    fn checkpatch_output_is_clean_only_with_nothing_reported() {
        let clean =
            "-----\n0001.patch\n-----\ntotal: 0 errors, 0 warnings, 0 checks, 8 lines checked\n\n\
                     0001.patch has no obvious style problems and is ready for submission.\n";
        assert_eq!(checkpatch_clean(clean, 1), Ok(()));
        let two = format!("{clean}{}", clean.replace("0001", "0002"));
        assert_eq!(checkpatch_clean(&two, 2), Ok(()));
        // A file without its result line (checkpatch stopped early).
        assert!(checkpatch_clean(clean, 2).is_err());
        for bad in [
            "total: 1 errors, 0 warnings, 0 checks, 8 lines checked",
            "total: 0 errors, 1 warnings, 0 checks, 8 lines checked",
            "total: 0 errors, 0 warnings, 2 checks, 8 lines checked",
        ] {
            let e = checkpatch_clean(&format!("{bad}\n"), 1).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }

    /// The releases' series are one git format-patch series: the longest
    /// (7.2's) is numbered 1..N, the other is the start of it, and each
    /// patch carries `[PATCH i/N]`, at least one well-formed Fixes: tag and
    /// a sign-off, and touches only what its subject names: the SBI PMU
    /// driver (`drivers/perf: riscv:`) or KVM's RISC-V code (`RISC-V:
    /// KVM:`). Whether it applies is the fixed kernels' build.
    #[test]
    fn series_are_one_sendable_series_of_driver_and_kvm_fixes() {
        let whole = read_series(Release::V7_2).unwrap();
        let start = read_series(Release::V6_12).unwrap();
        assert!(!start.is_empty() && start.len() <= whole.len());
        for (a, b) in start.iter().zip(&whole) {
            assert_eq!(a.name, b.name);
        }
        let total = whole.len();
        let width = total.to_string().len();
        for (i, p) in whole.iter().enumerate() {
            let text = std::str::from_utf8(&p.bytes).unwrap();
            let n = format!("{:04}-", i + 1);
            assert!(p.file_name().starts_with(&n), "{} is not patch {n}", p.name);
            assert!(text.starts_with("From "), "{}: no mbox From line", p.name);
            let subject = format!("Subject: [PATCH {:0width$}/{total}] ", i + 1);
            let line = text
                .lines()
                .find(|l| l.starts_with("Subject: "))
                .unwrap_or_default();
            let title = line
                .strip_prefix(&subject)
                .unwrap_or_else(|| panic!("{}: `{line}` does not start with `{subject}`", p.name));
            let touches_only: fn(&str) -> bool = if title.starts_with("drivers/perf: riscv: ") {
                |f| f == "drivers/perf/riscv_pmu_sbi.c"
            } else if title.starts_with("RISC-V: KVM: ") {
                |f| f.starts_with("arch/riscv/kvm/") || f.starts_with("arch/riscv/include/asm/kvm_")
            } else {
                panic!(
                    "{}: subject `{title}` names neither the driver nor KVM",
                    p.name
                )
            };
            let fixes: Vec<&str> = text.lines().filter(|l| l.starts_with("Fixes: ")).collect();
            assert!(!fixes.is_empty(), "{}: no Fixes: tag", p.name);
            for f in fixes {
                let (id, title) = f["Fixes: ".len()..].split_once(' ').unwrap_or_default();
                assert!(
                    id.len() >= 12 && id.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{}: Fixes id {id:?}",
                    p.name
                );
                assert!(
                    title.starts_with("(\"") && title.ends_with("\")"),
                    "{}: Fixes title {title:?}",
                    p.name
                );
            }
            assert!(
                text.lines().any(|l| l.starts_with("Signed-off-by: ")),
                "{}: no Signed-off-by",
                p.name
            );
            let files: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix("diff --git a/"))
                .map(|l| l.split(' ').next().unwrap_or_default())
                .collect();
            assert!(!files.is_empty(), "{}: no diff", p.name);
            for f in files {
                assert!(touches_only(f), "{}: `{title}` touches {f}", p.name);
            }
        }
    }

    /// `patches/linux/` holds patches and one folder per release, nothing
    /// else: a folder of another name would be a series no build applies.
    #[test]
    fn series_folders_are_releases() {
        let releases = [Release::V7_2, Release::V6_12].map(Release::name);
        for entry in std::fs::read_dir(series_dir()).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                assert!(releases.contains(&name.as_str()), "patches/linux/{name}/");
            } else {
                assert!(name.ends_with(".patch"), "patches/linux/{name}");
            }
        }
    }

    #[test]
    fn cache_key_depends_on_every_part() {
        let a = fnv64(&[b"frag", b"tar"]);
        assert_ne!(a, fnv64(&[b"frag2", b"tar"]));
        assert_ne!(a, fnv64(&[b"frag", b"tar2"]));
        assert_ne!(fnv64(&[b"ab", b"c"]), fnv64(&[b"a", b"bc"]));
    }
}
