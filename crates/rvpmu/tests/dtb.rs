//! The DTB reader (`rvpmu_dtb`): trees with FDT_NOP tokens anywhere and
//! blocks in any order read exactly like the tree without them; malformed
//! blobs are refused with what and where. NOPed trees come from libfdt
//! itself (`fdt_nop_property`, `fdt_nop_node` through Debian's
//! python3-libfdt) and from a rewrite of dtc's output written here from the
//! Devicetree Specification v0.4, chapter 5.

use std::fmt::Write;
use std::path::PathBuf;
use std::process::Command;

use rvpmu::dt::{platform_quirk_of, EventMap};
use rvpmu_dtb as dtb;
use rvpmu_dtb::{Block, Problem};

const BEGIN_NODE: u32 = 1;
const END_NODE: u32 = 2;
const PROP: u32 = 3;
const NOP: u32 = 4;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/dt")
        .join(name)
}

/// Run dtc (package device-tree-compiler) on `input`.
fn dtc(input: &[u8], from: &str, to: &str) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new("dtc")
        .args(["-q", "-I", from, "-O", to, "-o", "-", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dtc not found: install device-tree-compiler (cargo xtask setup)");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "dtc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn compile(name: &str) -> Vec<u8> {
    dtc(&std::fs::read(fixture(name)).unwrap(), "dts", "dtb")
}

/// Every node (by path, depth first, through `children`), its properties,
/// the `all_nodes` walk the firmware does, and the lookups the call sites
/// make: what a reader of the tree can see.
fn view(fdt: &fdt::Fdt) -> String {
    fn walk(n: fdt::node::FdtNode, path: &str, s: &mut String) {
        let _ = writeln!(s, "{path}");
        for p in n.properties() {
            let _ = writeln!(s, "  {} = {:02x?}", p.name, p.value);
        }
        if let Some(reg) = n.reg() {
            for r in reg {
                let _ = writeln!(s, "  reg {:?} {:?}", r.starting_address, r.size);
            }
        }
        for c in n.children() {
            walk(c, &format!("{}/{}", path.trim_end_matches('/'), c.name), s);
        }
    }
    let mut s = String::new();
    walk(fdt.find_node("/").expect("root"), "/", &mut s);
    for n in fdt.all_nodes() {
        let _ = writeln!(s, "all_nodes {} {}", n.name, n.properties().count());
    }
    for path in [
        "/chosen",
        "/cpus",
        "/soc/clint",
        "/soc/serial",
        "/pmu",
        "/memory",
    ] {
        let _ = writeln!(s, "find {path}: {:?}", fdt.find_node(path).map(|n| n.name));
    }
    let _ = writeln!(
        s,
        "riscv,pmu: {:?}",
        fdt.find_compatible(&["riscv,pmu"]).map(|n| n.name)
    );
    let _ = writeln!(
        s,
        "quirk: {:?}",
        platform_quirk_of(fdt).map(|q| q.root_compatible)
    );
    s
}

/// The engine's view: the event map, row by row.
fn event_map(fdt: &fdt::Fdt) -> String {
    match EventMap::from_fdt(fdt) {
        Ok(Some(m)) => format!(
            "{:?} {:?} {:?} {}",
            m.selector_rows(),
            m.range_rows(),
            m.raw_rows(),
            m.one_counter_per_event()
        ),
        other => format!("{:?}", other.map(|m| m.is_some())),
    }
}

/// The view of a blob through `dtb::open`, and of its engine map.
fn read(mut blob: Vec<u8>) -> (String, String) {
    let fdt = dtb::open(&mut blob).unwrap_or_else(|e| panic!("{e}"));
    (view(&fdt), event_map(&fdt))
}

// ------------------------------------------------ a DTB rewriter (spec ch. 5)

fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes(b[off..off + 4].try_into().unwrap())
}

fn header(b: &[u8]) -> [u32; 10] {
    std::array::from_fn(|i| be32(b, 4 * i))
}

/// The structure block as (token, its bytes).
fn tokens(b: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let h = header(b);
    let st = &b[h[2] as usize..(h[2] + h[9]) as usize];
    let mut out = Vec::new();
    let mut i = 0;
    while i < st.len() {
        let t = be32(st, i);
        let mut j = i + 4;
        if t == BEGIN_NODE {
            let z = st[j..].iter().position(|&c| c == 0).unwrap();
            j = (j + z + 1 + 3) & !3;
        } else if t == PROP {
            j = (j + 8 + be32(st, j) as usize + 3) & !3;
        }
        out.push((t, st[i..j].to_vec()));
        i = j;
    }
    out
}

fn nops(n: usize) -> (u32, Vec<u8>) {
    (NOP, NOP.to_be_bytes().repeat(n))
}

/// A blob with `toks` as its structure block and `b`'s other blocks,
/// laid out in `order` with `gap` filler bytes before, between and after
/// them (each block at its alignment).
fn build(b: &[u8], toks: &[(u32, Vec<u8>)], order: [Block; 3], gap: usize) -> Vec<u8> {
    let h = header(b);
    let rsv_start = h[4] as usize;
    let mut rsv_len = 0;
    while b[rsv_start + rsv_len..rsv_start + rsv_len + 16] != [0; 16] {
        rsv_len += 16;
    }
    let rsv = b[rsv_start..rsv_start + rsv_len + 16].to_vec();
    let st: Vec<u8> = toks.iter().flat_map(|t| t.1.clone()).collect();
    let strings = b[h[3] as usize..(h[3] + h[8]) as usize].to_vec();
    let mut out = vec![0u8; 40];
    let mut offs = [0u32; 3];
    for block in order {
        out.extend(std::iter::repeat_n(0xa5, gap));
        while !out.len().is_multiple_of(8) {
            out.push(0xa5);
        }
        let (i, bytes) = match block {
            Block::MemRsvmap => (0, &rsv),
            Block::Struct => (1, &st),
            _ => (2, &strings),
        };
        offs[i] = out.len() as u32;
        out.extend_from_slice(bytes);
    }
    out.extend(std::iter::repeat_n(0xa5, gap));
    let mut nh = h;
    nh[1] = out.len() as u32;
    nh[4] = offs[0];
    nh[2] = offs[1];
    nh[3] = offs[2];
    nh[8] = strings.len() as u32;
    nh[9] = st.len() as u32;
    for (i, v) in nh.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&v.to_be_bytes());
    }
    out
}

const STANDARD: [Block; 3] = [Block::MemRsvmap, Block::Struct, Block::Strings];

/// One to three NOP tokens before every token, FDT_END and the root's
/// FDT_BEGIN_NODE included.
fn nops_everywhere(b: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    for (i, t) in tokens(b).into_iter().enumerate() {
        out.push(nops(1 + i % 3));
        out.push(t);
    }
    out
}

/// libfdt's own NOPs: `fdt_nop_property` on each (path, property) and
/// `fdt_nop_node` on each node path, through Debian's python3-libfdt.
fn libfdt_nop(blob: &[u8], props: &[(&str, &str)], nodes: &[&str]) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!(
        "rvpmu-dtb-{}-{}",
        std::process::id(),
        props.len() + 10 * nodes.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output) = (dir.join("in.dtb"), dir.join("out.dtb"));
    std::fs::write(&input, blob).unwrap();
    let script = format!(
        "import libfdt, sys\n\
         f = libfdt.Fdt(bytearray(open(sys.argv[1], 'rb').read()))\n\
         for path, name in {props:?}:\n\
         \x20   assert libfdt.fdt_nop_property(f._fdt, f.path_offset(path), name) == 0\n\
         for path in {nodes:?}:\n\
         \x20   assert libfdt.fdt_nop_node(f._fdt, f.path_offset(path)) == 0\n\
         open(sys.argv[2], 'wb').write(f._fdt)\n"
    );
    // Debian's own interpreter: python3-libfdt installs there.
    let out = Command::new("/usr/bin/python3")
        .args(["-c", &script])
        .arg(&input)
        .arg(&output)
        .output()
        .expect("/usr/bin/python3 not found: cargo xtask setup installs python3-libfdt");
    assert!(
        out.status.success(),
        "python3-libfdt (cargo xtask setup installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nopped = std::fs::read(&output).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    nopped
}

// ------------------------------------------------------------------ reading

#[test]
fn libfdt_noped_properties_and_nodes_read_like_the_tree_without_them() {
    let board = compile("qemu-virt-board.dts");
    // A boot loader's fixups: the root's model and /chosen/rng-seed removed.
    let nopped = libfdt_nop(&board, &[("/", "model"), ("/chosen", "rng-seed")], &[]);
    assert_eq!(nopped.len(), board.len(), "fdt_nop_property moves nothing");
    assert!(tokens(&nopped).iter().filter(|t| t.0 == NOP).count() > 10);
    // dtc drops NOP tokens when it rewrites a blob: the tree without them.
    let without = dtc(&nopped, "dtb", "dtb");
    let (view_nopped, map_nopped) = read(nopped.clone());
    assert_eq!(view_nopped, read(without).0);
    assert!(!view_nopped.contains("  model = "), "{view_nopped}");
    assert!(!view_nopped.contains("rng-seed"));
    assert!(view_nopped.contains("find /soc/clint: Some(\"clint@2000000\")"));
    assert!(view_nopped.contains("find /chosen: Some(\"chosen\")"));
    // The engine's map does not depend on the removed properties.
    assert_eq!(map_nopped, read(board.clone()).1);

    // A whole node removed (libfdt fills it with NOP tokens).
    let nopped = libfdt_nop(&board, &[("/", "model")], &["/poweroff", "/soc/rtc@101000"]);
    let (view_nopped, map_nopped) = read(nopped.clone());
    assert_eq!(view_nopped, read(dtc(&nopped, "dtb", "dtb")).0);
    assert!(!view_nopped.contains("poweroff") && !view_nopped.contains("rtc@"));
    assert!(view_nopped.contains("/reboot"));
    assert_eq!(map_nopped, read(board).1);
}

#[test]
fn nop_tokens_anywhere_and_blocks_in_any_order_read_the_same() {
    for name in [
        "qemu-virt-board.dts",
        "qemu-virt.dts",
        "pmu-support-example3.dts",
    ] {
        let plain = compile(name);
        let want = read(plain.clone());
        assert!(
            want.0.contains("riscv,pmu: Some(\"pmu"),
            "{name}: {}",
            want.0
        );
        let toks = tokens(&plain);
        let every = nops_everywhere(&plain);
        // A run of NOPs just before FDT_END, and one right after the root's
        // FDT_BEGIN_NODE (before its first property).
        let mut edges = toks.clone();
        edges.insert(toks.len() - 1, nops(5));
        edges.insert(1, nops(2));
        // dtc's own reader refuses NOP tokens outside the root node (before
        // it or before FDT_END); it reads the others.
        let mut inside = toks.clone();
        inside.insert(toks.len() - 2, nops(3));
        inside.insert(1, nops(2));
        let variants = [
            ("nops everywhere", build(&plain, &every, STANDARD, 0), false),
            (
                "nops at the edges",
                build(&plain, &edges, STANDARD, 0),
                false,
            ),
            (
                "nops inside the root",
                build(&plain, &inside, STANDARD, 0),
                true,
            ),
            (
                "strings, struct, rsvmap with gaps",
                build(
                    &plain,
                    &toks,
                    [Block::Strings, Block::Struct, Block::MemRsvmap],
                    20,
                ),
                true,
            ),
            (
                "struct first, nops everywhere, gaps",
                build(
                    &plain,
                    &every,
                    [Block::Struct, Block::MemRsvmap, Block::Strings],
                    12,
                ),
                false,
            ),
        ];
        for (what, blob, dtc_reads) in variants {
            assert_eq!(read(blob.clone()), want, "{name}: {what}");
            if dtc_reads {
                assert_eq!(
                    dtc(&blob, "dtb", "dts"),
                    dtc(&plain, "dtb", "dts"),
                    "{name}: {what}"
                );
            }
        }
    }
}

#[test]
fn normalised_blob_is_the_same_tree_for_dtc_and_stays_put() {
    let plain = compile("qemu-virt-board.dts");
    let mut blob = build(
        &plain,
        &nops_everywhere(&plain),
        [Block::Strings, Block::Struct, Block::MemRsvmap],
        8,
    );
    let before = blob.len();
    let removed = dtb::normalise(&mut blob).unwrap();
    let nop_bytes: usize = nops_everywhere(&plain)
        .iter()
        .filter(|t| t.0 == NOP)
        .map(|t| t.1.len())
        .sum();
    assert_eq!(removed, nop_bytes);
    assert_eq!(blob.len(), before);
    assert!(tokens(&blob).iter().all(|t| t.0 != NOP));
    assert_eq!(tokens(&blob), tokens(&plain));
    // Other readers see the tree unchanged after the rewrite.
    assert_eq!(dtc(&blob, "dtb", "dts"), dtc(&plain, "dtb", "dts"));
    // Nothing left to remove: no write.
    let again = blob.clone();
    assert_eq!(dtb::normalise(&mut blob), Ok(0));
    assert_eq!(blob, again);
}

#[test]
fn data_after_fdt_end_is_cut() {
    let plain = compile("qemu-virt.dts");
    let mut toks = tokens(&plain);
    toks.push((0, vec![0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 7]));
    let mut blob = build(&plain, &toks, STANDARD, 0);
    assert_eq!(dtb::normalise(&mut blob), Ok(8));
    assert_eq!(tokens(&blob), tokens(&plain));
}

#[test]
fn deepest_tree_reads_and_one_level_more_is_refused() {
    let nest = |levels: usize| {
        let mut s = String::from("/dts-v1/;\n/ { compatible = \"x\";\n");
        for i in 1..levels {
            let _ = writeln!(s, "n{i} {{ p = <{i}>;");
        }
        s.push_str(&"};".repeat(levels));
        dtc(s.as_bytes(), "dts", "dtb")
    };
    let mut ok = nest(dtb::MAX_DEPTH);
    let fdt = dtb::open(&mut ok).unwrap();
    assert_eq!(fdt.all_nodes().count(), dtb::MAX_DEPTH);
    let mut deep = nest(dtb::MAX_DEPTH + 1);
    let e = dtb::open(&mut deep).unwrap_err();
    assert_eq!(e.problem, Problem::TooDeep);
    let h = header(&deep);
    // The offending FDT_BEGIN_NODE: after the root's (4 + 4-byte name
    // slot) and its property (12 + 4), then 62 levels of 8 + 16 bytes.
    assert_eq!(e.offset, h[2] as usize + 8 + 16 + 62 * 24);
}

// ------------------------------------------------------------------ refusals

fn set32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// `open` refuses `blob` with `problem` at `offset`, and wrote nothing.
#[track_caller]
fn refused(mut blob: Vec<u8>, problem: Problem, offset: usize) {
    let before = blob.clone();
    let e = dtb::open(&mut blob).map(|_| ()).unwrap_err();
    assert_eq!((e.problem, e.offset), (problem, offset), "{e}");
    assert_eq!(blob, before, "a refused blob is not written");
    assert!(
        e.to_string().contains(&format!("(byte {offset:#x})")),
        "{e}"
    );
}

#[test]
fn malformed_headers_are_refused_with_what_and_where() {
    let plain = compile("qemu-virt.dts");
    let h = header(&plain);
    let (st, strs, rsv) = (h[2] as usize, h[3] as usize, h[4] as usize);
    refused(
        plain[..39].to_vec(),
        Problem::Truncated { need: 40, have: 39 },
        39,
    );
    let mut b = plain.clone();
    b[0] = 0xd1;
    refused(b, Problem::BadMagic(0xd10d_feed), 0);
    let mut b = plain.clone();
    set32(&mut b, 20, 16);
    refused(
        b,
        Problem::Version {
            version: 16,
            last_comp: 16,
        },
        20,
    );
    let mut b = plain.clone();
    set32(&mut b, 24, 18);
    refused(
        b,
        Problem::Version {
            version: 17,
            last_comp: 18,
        },
        20,
    );
    let total = plain.len();
    refused(
        plain[..total - 1].to_vec(),
        Problem::Truncated {
            need: total,
            have: total - 1,
        },
        4,
    );
    let mut b = plain.clone();
    set32(&mut b, 36, h[9] + 4);
    refused(b, Problem::Overlap(Block::Struct, Block::Strings), strs);
    let mut b = plain.clone();
    set32(&mut b, 36, h[9] + 2);
    refused(b, Problem::Misaligned(Block::Struct), 8);
    let mut b = plain.clone();
    set32(&mut b, 32, u32::MAX - 8);
    refused(b, Problem::OutsideBlob(Block::Strings), 12);
    let mut b = plain.clone();
    set32(&mut b, 12, 36);
    refused(b, Problem::InHeader(Block::Strings), 12);
    let mut b = plain.clone();
    set32(&mut b, 16, rsv as u32 + 4);
    refused(b, Problem::Misaligned(Block::MemRsvmap), 16);
    // The structure block moved onto the reservation block.
    let mut b = plain.clone();
    set32(&mut b, 8, rsv as u32);
    refused(b, Problem::Overlap(Block::MemRsvmap, Block::Struct), rsv);
    assert!(st > rsv);
    let mut b = plain.clone();
    set32(&mut b, 16, (total + 8) as u32 & !7);
    refused(b, Problem::OutsideBlob(Block::MemRsvmap), 16);
    // No all-zero entry before totalsize.
    let mut b = plain.clone();
    let last = (total - 16) & !7;
    set32(&mut b, 16, last as u32);
    b[last..].fill(0xff);
    refused(b, Problem::RsvmapUnterminated, last);
}

#[test]
fn malformed_structure_blocks_are_refused_with_what_and_where() {
    let plain = compile("qemu-virt.dts");
    let toks = tokens(&plain);
    let st_at = |b: &[u8]| header(b)[2] as usize;
    // Token offsets inside the structure block.
    let offsets: Vec<usize> = toks
        .iter()
        .scan(0, |o, t| {
            let at = *o;
            *o += t.1.len();
            Some(at)
        })
        .collect();
    let first_prop = toks.iter().position(|t| t.0 == PROP).unwrap();
    let rebuilt = |toks: &[(u32, Vec<u8>)]| build(&plain, toks, STANDARD, 0);

    // The first property's word at byte `at` (its token, value length,
    // name offset) set to `v`: refused with `problem` at that word.
    let first_prop_word = |at: usize, v: u32, problem: Problem| {
        let mut t = toks.clone();
        t[first_prop].1[at..at + 4].copy_from_slice(&v.to_be_bytes());
        let b = rebuilt(&t);
        refused(b.clone(), problem, st_at(&b) + offsets[first_prop] + at);
    };

    first_prop_word(0, 7, Problem::UnknownToken(7));
    // A property value longer than the rest of the block.
    first_prop_word(4, 0x1_0000, Problem::ValueTooLong(0x1_0000));
    // A name offset past the strings block.
    let strings_size = header(&plain)[8];
    first_prop_word(8, strings_size, Problem::NameOffset(strings_size));
    // The largest name offset (one past it wraps to zero).
    first_prop_word(8, u32::MAX, Problem::NameOffset(u32::MAX));

    // #address-cells of two bytes.
    let mut t = toks.clone();
    let cells = toks
        .iter()
        .position(|tk| {
            tk.0 == PROP && be32(&tk.1, 4) == 4 && {
                let h = header(&plain);
                let name_at = (h[3] + be32(&tk.1, 8)) as usize;
                plain[name_at..].starts_with(b"#address-cells\0")
            }
        })
        .unwrap();
    t[cells].1[4..8].copy_from_slice(&2u32.to_be_bytes());
    let b = rebuilt(&t);
    refused(
        b.clone(),
        Problem::CellsNotU32(2),
        st_at(&b) + offsets[cells],
    );

    // A property after a child node: move the pmu node's last property
    // (before its FDT_END_NODE) behind the root's first child.
    let mut t = toks.clone();
    let child = toks
        .iter()
        .skip(1)
        .position(|tk| tk.0 == BEGIN_NODE)
        .unwrap()
        + 1;
    let child_end = toks
        .iter()
        .skip(child)
        .position(|tk| tk.0 == END_NODE)
        .unwrap()
        + child;
    let p = t.remove(first_prop);
    t.insert(child_end, p);
    let b = rebuilt(&t);
    // The moved property now sits inside the first child, after its own
    // child (cpu@0): refused there.
    let at: usize = t[..child_end].iter().map(|tk| tk.1.len()).sum();
    refused(b.clone(), Problem::PropAfterChild, st_at(&b) + at);

    // Unbalanced: the root's FDT_END_NODE missing, then one too many.
    let n = toks.len();
    let b = rebuilt(&[&toks[..n - 2], &toks[n - 1..]].concat());
    refused(
        b.clone(),
        Problem::EndInsideNode,
        st_at(&b) + offsets[n - 2],
    );
    let b = rebuilt(
        &[
            &toks[..n - 1],
            &[(END_NODE, END_NODE.to_be_bytes().to_vec())],
            &toks[n - 1..],
        ]
        .concat(),
    );
    refused(
        b.clone(),
        Problem::UnmatchedEndNode,
        st_at(&b) + offsets[n - 1],
    );
    // No FDT_END at all.
    let b = rebuilt(&toks[..n - 1]);
    refused(
        b.clone(),
        Problem::StructEndsEarly,
        st_at(&b) + offsets[n - 1],
    );
    // Only FDT_END.
    let b = rebuilt(&toks[n - 1..]);
    refused(b.clone(), Problem::NoRoot, st_at(&b));
    // A second root after the first.
    let b = rebuilt(&[&toks[..n - 1], &toks[..n - 1], &toks[n - 1..]].concat());
    refused(b.clone(), Problem::SecondRoot, st_at(&b) + offsets[n - 1]);
    // A node name without its NUL before the block ends.
    let mut t = toks[..n - 2].to_vec();
    t.push((
        BEGIN_NODE,
        [&BEGIN_NODE.to_be_bytes()[..], b"abcd"].concat(),
    ));
    let b = rebuilt(&t);
    refused(
        b.clone(),
        Problem::NameUnterminated,
        st_at(&b) + offsets[n - 2] + 4,
    );
    // A named root.
    let mut t = toks.clone();
    t[0] = (
        BEGIN_NODE,
        [&BEGIN_NODE.to_be_bytes()[..], b"r\0\0\0"].concat(),
    );
    let b = rebuilt(&t);
    refused(b.clone(), Problem::RootName, st_at(&b) + 4);
    // A node name that is not UTF-8.
    let mut t = toks.clone();
    let child_name = offsets[child] + 4;
    t[child].1[4] = 0xff;
    let b = rebuilt(&t);
    refused(b.clone(), Problem::NotUtf8, st_at(&b) + child_name);
    // A property name that is not UTF-8 (the strings block's first byte).
    let mut b = plain.clone();
    let strs = header(&b)[3] as usize;
    b[strs] = 0xff;
    let e = dtb::open(&mut b).map(|_| ()).unwrap_err();
    assert_eq!((e.problem, e.offset), (Problem::NotUtf8, strs), "{e}");
}

#[test]
fn open_at_reads_through_a_pointer() {
    let plain = compile("qemu-virt-board.dts");
    let mut blob = build(&plain, &nops_everywhere(&plain), STANDARD, 0);
    let want = read(plain).0;
    // SAFETY: `blob` is a whole DTB, ours for the call.
    let fdt = unsafe { dtb::open_at(blob.as_mut_ptr()) }.unwrap();
    assert_eq!(view(&fdt), want);
    // SAFETY: null is refused before any access.
    let e = unsafe { dtb::open_at(std::ptr::null_mut()) }
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.problem, Problem::Null);
}
