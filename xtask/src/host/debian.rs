//! Debian packages the host's own suites do not have: the bookworm-backports
//! source for the host, and Debian trixie (riscv64 and `all`) through a
//! private apt configuration for the guest userland and the Linux 7.2
//! source.
//!
//! The mirror is never named here: it is read from the host's apt sources
//! (the URI that serves the host's own codename, component main), so the
//! machine's configured mirror (or proxy) serves everything. The host's apt
//! state is never touched by the trixie downloads: sources, lists, cache and
//! the dpkg status live under the cache directory, and apt verifies every
//! file against the signed Release (a partial or corrupt download is never
//! used).

use crate::host::{cache_dir, step};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Keyring apt uses to check Debian's Release files (bookworm's
/// debian-archive-keyring also holds the trixie keys).
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// One entry of an apt sources file, reduced to what we need.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Source {
    uri: String,
    suites: Vec<String>,
    components: Vec<String>,
}

/// Entries of one-line `.list` text (`deb [opts] URI suite comp...`).
fn parse_one_line(text: &str) -> Vec<Source> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut words = line.split_whitespace().peekable();
        if words.next() != Some("deb") {
            continue;
        }
        // Options: `[a=b c=d]`, possibly spread over several words.
        if words.peek().is_some_and(|w| w.starts_with('[')) {
            for w in words.by_ref() {
                if w.ends_with(']') {
                    break;
                }
            }
        }
        let (Some(uri), Some(suite)) = (words.next(), words.next()) else {
            continue;
        };
        out.push(Source {
            uri: uri.to_string(),
            suites: vec![suite.to_string()],
            components: words.map(String::from).collect(),
        });
    }
    out
}

/// Entries of deb822 `.sources` text (paragraphs of `Field: value`).
fn parse_deb822(text: &str) -> Vec<Source> {
    let mut out = Vec::new();
    for para in text.split("\n\n") {
        let field = |name: &str| -> Vec<String> {
            para.lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case(name)
                        .then(|| v.split_whitespace().map(String::from).collect())
                })
                .unwrap_or_default()
        };
        let enabled = field("Enabled");
        if !field("Types").iter().any(|t| t == "deb") || enabled.iter().any(|e| e == "no") {
            continue;
        }
        let (suites, components) = (field("Suites"), field("Components"));
        for uri in field("URIs") {
            out.push(Source {
                uri,
                suites: suites.clone(),
                components: components.clone(),
            });
        }
    }
    out
}

/// Every `deb` entry apt reads on this host.
fn host_sources() -> Vec<Source> {
    let mut out = Vec::new();
    if let Ok(t) = std::fs::read_to_string("/etc/apt/sources.list") {
        out.extend(parse_one_line(&t));
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir("/etc/apt/sources.list.d")
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        match f.extension().and_then(|e| e.to_str()) {
            Some("list") => out.extend(parse_one_line(&text)),
            Some("sources") => out.extend(parse_deb822(&text)),
            _ => {} // apt ignores other names (e.g. `.disabled`), so do we
        }
    }
    out
}

/// The host's codename (`bookworm`), from /etc/os-release.
fn host_codename() -> Result<String> {
    let text = std::fs::read_to_string("/etc/os-release").context("reading /etc/os-release")?;
    text.lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
        .context("/etc/os-release has no VERSION_CODENAME")
}

/// The Debian mirror URI among `sources` serving `codename` main.
fn mirror_in(sources: &[Source], codename: &str) -> Option<String> {
    sources
        .iter()
        .find(|s| {
            s.suites.iter().any(|x| x == codename) && s.components.iter().any(|c| c == "main")
        })
        .map(|s| s.uri.trim_end_matches('/').to_string())
}

/// The Debian mirror the host's apt is configured with: the URI serving
/// the host's own codename, component main.
pub fn host_mirror() -> Result<String> {
    let codename = host_codename()?;
    mirror_in(&host_sources(), &codename).with_context(|| {
        format!(
            "no apt source serves `{codename} main` (looked in /etc/apt/sources.list and \
             /etc/apt/sources.list.d/*.list|*.sources): add the Debian mirror for {codename} to apt's sources"
        )
    })
}

/// Whether the host's apt already reads `suite`.
pub fn host_has_suite(suite: &str) -> bool {
    host_sources()
        .iter()
        .any(|s| s.suites.iter().any(|x| x == suite))
}

/// The deb822 text of a source for `suite` main on `uri`.
pub fn deb822_source(uri: &str, suite: &str) -> String {
    format!("Types: deb\nURIs: {uri}\nSuites: {suite}\nComponents: main\nSigned-By: {KEYRING}\n")
}

/// A suite of the private apt: its codename and the alias the archive
/// also publishes it under. A mirror (or proxy) in the middle of a sync can
/// serve a new Release with old indexes under one name while the other
/// name's files are consistent; apt's checksums tell which.
#[derive(Clone, Copy, Debug)]
pub struct Suite {
    pub codename: &'static str,
    pub alias: &'static str,
}

/// Debian 13 and its backports.
pub const TRIXIE: Suite = Suite {
    codename: "trixie",
    alias: "stable",
};
pub const TRIXIE_BACKPORTS: Suite = Suite {
    codename: "trixie-backports",
    alias: "stable-backports",
};

/// Packages that must all come from one suite, whatever suite the rest
/// of a request prefers: an apt preferences entry (`Pin: release
/// n=<codename>`) with priority 995, above the 990 `-t <release>` gives
/// its target, below the 1000 that would allow downgrades. A set of
/// binary packages built from one source (QEMU's) is only consistent at
/// one version, and a backports suite may carry some of them (the
/// architecture-independent ones) at a newer version than the rest.
#[derive(Clone, Copy, Debug)]
pub struct Pin {
    /// apt's package glob: a name prefix and `*` (`qemu-*`).
    pub packages: &'static str,
    pub suite: Suite,
}

impl Pin {
    /// The apt preferences entry.
    fn preferences(&self) -> String {
        format!(
            "Package: {}\nPin: release n={}\nPin-Priority: 995\n",
            self.packages, self.suite.codename
        )
    }

    /// Whether `name` is one of the pinned packages.
    pub fn covers(&self, name: &str) -> bool {
        match self.packages.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == self.packages,
        }
    }
}

/// What to ask apt for: packages (apt adds every dependency), the
/// release preferred where it has them, and the packages pinned to a
/// suite.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub wanted: &'a [&'a str],
    pub release: Suite,
    pub pins: &'a [Pin],
}

/// A private apt configuration: its own sources, lists, archives and an
/// empty dpkg status (so dependency resolution yields every package a
/// root file system needs, not only what the host lacks).
pub struct PrivateApt {
    dir: PathBuf,
    arch: &'static str,
    suites: &'static [Suite],
}

/// A resolved package: what apt would download for it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Package {
    pub name: String,
    pub version: String,
    pub arch: String,
}

impl Package {
    /// The file name apt gives the downloaded .deb (`:` of an epoch as %3a).
    pub fn deb_name(&self) -> String {
        format!(
            "{}_{}_{}.deb",
            self.name,
            self.version.replace(':', "%3a"),
            self.arch
        )
    }
}

/// Tries per suite name before the alias is used, and pause between them.
const TRIES: u32 = 2;
const PAUSE: std::time::Duration = std::time::Duration::from_secs(3);

impl PrivateApt {
    /// Debian trixie for `arch` (plus `all`), kept under the cache.
    pub fn trixie(arch: &'static str) -> PrivateApt {
        PrivateApt {
            dir: cache_dir().join(format!("apt-trixie-{arch}")),
            arch,
            suites: &[TRIXIE, TRIXIE_BACKPORTS],
        }
    }

    fn archives(&self) -> PathBuf {
        self.dir.join("archives")
    }

    fn apt(&self, tool: &str) -> Command {
        let d = &self.dir;
        let mut c = Command::new(tool);
        // The host's apt.conf.d still applies (a proxy configured there is
        // wanted); everything that holds state is redirected.
        c.env("DEBIAN_FRONTEND", "noninteractive")
            .arg(format!("-oDir::Etc={}", d.join("etc").display()))
            .arg(format!("-oDir::State={}", d.join("state").display()))
            .arg(format!("-oDir::State::Lists={}", d.join("lists").display()))
            .arg(format!(
                "-oDir::State::status={}",
                d.join("state/status").display()
            ))
            .arg(format!("-oDir::Cache={}", d.join("cache").display()))
            .arg(format!(
                "-oDir::Cache::Archives={}",
                self.archives().display()
            ))
            .arg(format!("-oAPT::Architecture={}", self.arch))
            .arg(format!("-oAPT::Architectures::={}", self.arch))
            .arg("-oAPT::Architectures::=all")
            .arg("-oAPT::Install-Recommends=false")
            .arg("-oAPT::Update::Error-Mode=any")
            .arg("-oDebug::NoLocking=true")
            .arg("-q");
        c
    }

    /// [`PrivateApt::apt`] with `req`'s pins as the preferences (a file
    /// of their own, so that each request sees only its pins).
    fn apt_for(&self, tool: &str, req: &Request) -> Result<Command> {
        let text: String = req.pins.iter().map(Pin::preferences).collect();
        // Named after its pins: requests with the same pins share it.
        let name: String = req
            .pins
            .iter()
            .map(|p| format!("-{}-{}", p.packages.trim_end_matches('*'), p.suite.codename))
            .collect();
        let path = self.dir.join(format!("etc/pins{name}.pref"));
        std::fs::create_dir_all(self.dir.join("etc"))?;
        // Written whole under another name, then renamed: another xtask
        // process may be reading it.
        let tmp = path.with_extension(format!("{}.partial", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)?;
        let mut c = self.apt(tool);
        c.arg(format!("-oDir::Etc::Preferences={}", path.display()));
        Ok(c)
    }

    fn write_sources(&self, uri: &str, alias: bool) -> Result<()> {
        let etc = self.dir.join("etc");
        for sub in [
            "etc/sources.list.d",
            "etc/preferences.d",
            "etc/apt.conf.d",
            "lists/partial",
            "archives/partial",
            "state",
            "cache",
        ] {
            std::fs::create_dir_all(self.dir.join(sub))?;
        }
        let status = self.dir.join("state/status");
        if !status.exists() {
            std::fs::write(&status, "")?;
        }
        let text: String = self
            .suites
            .iter()
            .map(|s| deb822_source(uri, if alias { s.alias } else { s.codename }))
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(etc.join("sources.list.d/debian.sources"), text)?;
        std::fs::write(etc.join("sources.list"), "")?;
        Ok(())
    }

    /// Fetch the package indexes: each suite under its codename, retried,
    /// then under its alias; the Release's Codename is checked either way.
    pub fn update(&self) -> Result<()> {
        let uri = host_mirror()?;
        let mut errors = Vec::new();
        // The name that answered last time goes first.
        let remembered = self.dir.join("suite-names");
        let order = if std::fs::read_to_string(&remembered).is_ok_and(|t| t.trim() == "alias") {
            [true, false]
        } else {
            [false, true]
        };
        for alias in order {
            self.write_sources(&uri, alias)?;
            for attempt in 1..=TRIES {
                let names: Vec<_> = self
                    .suites
                    .iter()
                    .map(|s| if alias { s.alias } else { s.codename })
                    .collect();
                step(&format!(
                    "apt-get update (private, Debian {} for {}; try {attempt})",
                    names.join(" + "),
                    self.arch
                ));
                let out = self.apt("apt-get").arg("update").output()?;
                let err = String::from_utf8_lossy(&out.stderr);
                if out.status.success() && !err.lines().any(|l| l.starts_with("E:")) {
                    std::fs::write(&remembered, if alias { "alias" } else { "codename" })?;
                    return self.check_codenames();
                }
                let first = err
                    .lines()
                    .filter(|l| l.starts_with("E:"))
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" / ");
                eprintln!("    the mirror answered badly: {first}");
                errors.push(format!("{}: {first}", names.join("+")));
                std::thread::sleep(PAUSE);
            }
        }
        bail!(
            "could not fetch Debian trixie's package indexes from {uri} (the mirror the host's apt uses) after {} tries:\n  {}\n\
             The guest userland (busybox-static, linux-perf) and the Linux 7.2 source come from there. \
             A mirror in the middle of a sync answers like this for a while: run the command again later.",
            errors.len(),
            errors.join("\n  ")
        )
    }

    /// Every fetched Release must be the trixie one (an alias moves on at
    /// the next Debian release).
    fn check_codenames(&self) -> Result<()> {
        for e in std::fs::read_dir(self.dir.join("lists"))?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.ends_with("InRelease") && !name.ends_with("_Release") {
                continue;
            }
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            let code = text
                .lines()
                .find_map(|l| l.strip_prefix("Codename:"))
                .map(str::trim)
                .unwrap_or("");
            if !self.suites.iter().any(|s| s.codename == code) {
                bail!(
                    "{name}: Codename `{code}`, expected one of {:?}; the alias no longer points at trixie: update debian.rs",
                    self.suites.iter().map(|s| s.codename).collect::<Vec<_>>()
                );
            }
        }
        Ok(())
    }

    /// The packages apt would install for the request on an empty
    /// system, preferring its release where it has them; every pinned
    /// package at one version (the pin's suite holds one).
    pub fn resolve(&self, req: &Request) -> Result<Vec<Package>> {
        let target = self.target_name(&req.release);
        let out = self
            .apt_for("apt-get", req)?
            .args(["-s", "install", "-t", &target])
            .args(req.wanted)
            .output()?;
        if !out.status.success() {
            bail!(
                "apt cannot resolve {:?} in Debian trixie ({}): {}",
                req.wanted,
                self.arch,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let mut pkgs = parse_simulation(&String::from_utf8_lossy(&out.stdout));
        pkgs.sort();
        if pkgs.is_empty() {
            bail!("apt resolved {:?} to nothing", req.wanted);
        }
        check_pins(&pkgs, req.pins)?;
        Ok(pkgs)
    }

    /// The suite name in use (codename or alias), from the sources written.
    fn target_name(&self, s: &Suite) -> String {
        let text = std::fs::read_to_string(self.dir.join("etc/sources.list.d/debian.sources"))
            .unwrap_or_default();
        if text
            .lines()
            .any(|l| l.trim() == format!("Suites: {}", s.codename))
        {
            s.codename.to_string()
        } else {
            s.alias.to_string()
        }
    }

    /// Download `pkgs` (already resolved) and return their .deb paths;
    /// apt checks each file's size and SHA256 against the index.
    pub fn download(&self, req: &Request, pkgs: &[Package]) -> Result<Vec<PathBuf>> {
        let wanted = req.wanted;
        let paths: Vec<PathBuf> = pkgs
            .iter()
            .map(|p| self.archives().join(p.deb_name()))
            .collect();
        if paths.iter().all(|p| p.is_file()) {
            return Ok(paths);
        }
        let target = self.target_name(&req.release);
        let mut last = String::new();
        for attempt in 1..=3 {
            step(&format!(
                "apt-get download {} package(s) for {} ({} .. ; try {attempt})",
                pkgs.len(),
                wanted.join(" "),
                pkgs.first().map(|p| p.name.as_str()).unwrap_or("")
            ));
            let out = self
                .apt_for("apt-get", req)?
                .args(["install", "-y", "--download-only", "-t", &target])
                .args(wanted)
                .output()?;
            if out.status.success() && paths.iter().all(|p| p.is_file()) {
                return Ok(paths);
            }
            last = String::from_utf8_lossy(&out.stderr)
                .lines()
                .filter(|l| l.starts_with("E:"))
                .collect::<Vec<_>>()
                .join("\n  ");
            eprintln!("    download failed: {last}");
            std::thread::sleep(PAUSE);
        }
        let missing: Vec<_> = pkgs
            .iter()
            .zip(&paths)
            .filter(|(_, p)| !p.is_file())
            .map(|(k, _)| format!("{} {}", k.name, k.version))
            .collect();
        bail!(
            "downloading {} from Debian trixie failed 3 times; missing: {}\n  {last}\n\
             apt discarded what did not match the index. Run the command again (a mirror mid-sync recovers), \
             or check the host's apt proxy/mirror.",
            wanted.join(" "),
            missing.join(", ")
        )
    }

    /// [`PrivateApt::update`] at most once per xtask process; its error is
    /// kept and returned to every caller.
    pub fn update_once(&self) -> Result<()> {
        static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
        DONE.get_or_init(|| self.update().map_err(|e| format!("{e:#}")))
            .clone()
            .map_err(anyhow::Error::msg)
    }

    /// Download the single package `name` from `release` (no dependencies:
    /// e.g. a source tarball package) and return its .deb.
    pub fn download_one(&self, name: &str, release: &Suite) -> Result<PathBuf> {
        let spec = format!("{name}/{}", self.target_name(release));
        let uris = self
            .apt("apt-get")
            .args(["download", "--print-uris", &spec])
            .output()?;
        let text = String::from_utf8_lossy(&uris.stdout);
        let file = text
            .split_whitespace()
            .nth(1)
            .filter(|f| f.ends_with(".deb"))
            .with_context(|| {
                format!(
                    "apt knows no {spec} (Debian trixie): {}",
                    String::from_utf8_lossy(&uris.stderr).trim()
                )
            })?;
        let path = self.archives().join(file);
        if path.is_file() {
            return Ok(path);
        }
        let mut last = String::new();
        for attempt in 1..=3 {
            step(&format!("apt-get download {spec} (try {attempt})"));
            let out = self
                .apt("apt-get")
                .current_dir(self.archives())
                .args(["download", &spec])
                .output()?;
            if out.status.success() && path.is_file() {
                return Ok(path);
            }
            last = String::from_utf8_lossy(&out.stderr).trim().to_string();
            eprintln!("    download failed: {last}");
            std::thread::sleep(PAUSE);
        }
        bail!("downloading {spec} failed 3 times: {last}\nRun the command again (a mirror mid-sync recovers).")
    }
}

/// Every package a pin covers at one version: the pinned set is
/// consistent (its packages depend on each other's exact versions or
/// ranges the other suite's versions would not meet at run time).
fn check_pins(pkgs: &[Package], pins: &[Pin]) -> Result<()> {
    for pin in pins {
        let covered: Vec<&Package> = pkgs.iter().filter(|p| pin.covers(&p.name)).collect();
        if covered.is_empty() {
            bail!(
                "apt resolved no package `{}` though it is pinned to {}",
                pin.packages,
                pin.suite.codename
            );
        }
        if covered.iter().any(|p| p.version != covered[0].version) {
            bail!(
                "the packages `{}` pinned to {} came at different versions: {}",
                pin.packages,
                pin.suite.codename,
                covered
                    .iter()
                    .map(|p| format!("{} {}", p.name, p.version))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(())
}

/// `Inst name (version suites [arch])` lines of `apt-get -s install`.
fn parse_simulation(text: &str) -> Vec<Package> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Inst ")?;
            let (name, rest) = rest.split_once(" (")?;
            // "(version suites [arch])", possibly followed by " []".
            let inner = rest.split(')').next()?;
            let version = inner.split_whitespace().next()?;
            let arch = inner.rsplit_once('[')?.1.split(']').next()?;
            Some(Package {
                name: name.to_string(),
                version: version.to_string(),
                arch: arch.to_string(),
            })
        })
        .collect()
}

/// Unpack a .deb's files into `root` (no maintainer scripts run).
pub fn unpack(deb: &Path, root: &Path) -> Result<()> {
    crate::host::run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_sources() {
        let s = parse_one_line(
            "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main contrib\n\
             deb-src http://m.example/debian bookworm main\ndeb http://s.example/sec bookworm-security main # x\n",
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].uri, "http://m.example/debian");
        assert_eq!(s[0].suites, ["bookworm"]);
        assert_eq!(s[0].components, ["main", "contrib"]);
        assert_eq!(s[1].suites, ["bookworm-security"]);
    }

    #[test]
    fn deb822_sources_and_mirror() {
        let text = "Types: deb\n# http://old.example\nURIs: http://m.example/debian/\nSuites: bookworm bookworm-updates\n\
                    Components: main\nSigned-By: /k.gpg\n\nTypes: deb\nURIs: http://s.example/debian-security\n\
                    Suites: bookworm-security\nComponents: main\n\nTypes: deb\nEnabled: no\nURIs: http://off.example\n\
                    Suites: bookworm\nComponents: main\n";
        let s = parse_deb822(text);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(
            mirror_in(&s, "bookworm").as_deref(),
            Some("http://m.example/debian")
        );
        assert_eq!(mirror_in(&s, "trixie"), None);
        // Security is never taken for the main archive.
        let only_sec = parse_deb822(
            "Types: deb\nURIs: http://s.example\nSuites: bookworm-security\nComponents: main\n",
        );
        assert_eq!(mirror_in(&only_sec, "bookworm"), None);
    }

    #[test]
    fn pins_cover_their_glob_and_want_one_version() {
        let pin = Pin {
            packages: "qemu-*",
            suite: TRIXIE,
        };
        assert_eq!(
            pin.preferences(),
            "Package: qemu-*\nPin: release n=trixie\nPin-Priority: 995\n"
        );
        assert!(pin.covers("qemu-system-data") && !pin.covers("opensbi"));
        let p = |name: &str, version: &str| Package {
            name: name.into(),
            version: version.into(),
            arch: "all".into(),
        };
        let one = [
            p("opensbi", "1.6-1"),
            p("qemu-system-data", "1:10.0.13"),
            p("qemu-system-riscv", "1:10.0.13"),
        ];
        assert!(check_pins(&one, &[pin]).is_ok());
        let mixed = [
            p("qemu-system-data", "1:11.1.2"),
            p("qemu-system-riscv", "1:10.0.13"),
        ];
        let e = check_pins(&mixed, &[pin]).unwrap_err().to_string();
        assert!(e.contains("qemu-system-data 1:11.1.2"), "{e}");
        assert!(check_pins(&[p("opensbi", "1.6-1")], &[pin]).is_err());
        assert!(check_pins(&mixed, &[]).is_ok());
    }

    #[test]
    fn simulation_lines_and_deb_names() {
        let p = parse_simulation(
            "NOTE: x\nInst busybox-static (1:1.37.0-6+b9 Debian:13.2/stable [riscv64]) []\n\
             Inst linux-perf (7.2.11-1~bpo13+1 Debian Backports:stable-backports [riscv64])\nConf x\n",
        );
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0].deb_name(),
            "busybox-static_1%3a1.37.0-6+b9_riscv64.deb"
        );
        assert_eq!(p[0].arch, "riscv64");
        assert_eq!(p[1].version, "7.2.11-1~bpo13+1");
        assert_eq!(p[1].arch, "riscv64");
    }
}
