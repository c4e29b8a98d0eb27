//! Trace buffers as console text: the framing worked out by hand, the
//! round trip among other console output, and damage found with its line.

use hpmtrace::dump::{fnv1a64, parse, write, DumpInfo};

fn dumped(info: DumpInfo<'_>, data: &[u8]) -> String {
    let mut s = String::new();
    write(info, data, &mut |l| {
        s.push_str(std::str::from_utf8(l).unwrap())
    });
    s
}

#[test]
fn framing_by_hand() {
    let info = DumpInfo {
        name: "t.rtd",
        core: 3,
        src_bits: Some(2),
    };
    // FNV-1a 64 of "ab": offset basis, xor 0x61, * prime, xor 0x62, * prime.
    let mut h: u64 = 0xcbf29ce484222325;
    h = (h ^ 0x61).wrapping_mul(0x100000001b3);
    h = (h ^ 0x62).wrapping_mul(0x100000001b3);
    assert_eq!(fnv1a64(b"ab"), h);
    assert_eq!(
        dumped(info, b"ab"),
        format!(
            "hpmtrace-dump v1 name=t.rtd core=3 src-bits=2 bytes=2\n6162\nhpmtrace-dump end core=3 fnv1a64={h:016x}\n"
        )
    );
}

#[test]
fn round_trip_among_other_output() {
    let a: Vec<u8> = (0..200u32).map(|i| (i * 7) as u8).collect();
    let b: Vec<u8> = vec![];
    let mut text = String::from("OpenSBI-like banner\r\nfib(20) = 6765\n");
    let ia = DumpInfo {
        name: "x.rtd",
        core: 0,
        src_bits: Some(1),
    };
    let ib = DumpInfo {
        name: "x.rtd",
        core: 1,
        src_bits: None,
    };
    // A kernel message between two hex lines, CR LF line ends.
    let mut da = dumped(ia, &a);
    let second = da.match_indices('\n').nth(1).unwrap().0 + 1;
    da.insert_str(second, "[    1.234] a kernel message\n");
    text += &da.replace('\n', "\r\n");
    text += "other text\n";
    text += &dumped(ib, &b);
    let d = parse(&text).unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(
        (d[0].core, d[0].src_bits, d[0].name.as_str()),
        (0, Some(1), "x.rtd")
    );
    assert_eq!(d[1].src_bits, None);
    assert_eq!(d[0].data, a);
    assert_eq!(d[1].core, 1);
    assert!(d[1].data.is_empty());
}

#[test]
fn damage_is_an_error_with_its_line() {
    let info = DumpInfo {
        name: "t",
        core: 0,
        src_bits: None,
    };
    let good = dumped(info, &[1u8; 100]);
    // A changed digit: checksum.
    let e = parse(&good.replacen("0101", "0102", 1)).unwrap_err();
    assert!(e.what.contains("checksum"), "{e}");
    assert_eq!(e.line, 4);
    // A lost line: length.
    let mut lines: Vec<&str> = good.lines().collect();
    lines.remove(2);
    let e = parse(&lines.join("\n")).unwrap_err();
    assert!(
        e.what.contains("1 bytes") || e.what.contains("64 bytes"),
        "{e}"
    );
    // Cut short.
    let cut = good.trim_end().rfind('\n').unwrap();
    let e = parse(&good[..cut]).unwrap_err();
    assert!(e.what.contains("no end line"), "{e}");
    assert_eq!(e.line, 1);
    // A damaged hex line is left out: the length says so.
    let e = parse(&good.replacen("0101", "01zz", 1)).unwrap_err();
    assert!(e.what.contains("36 bytes"), "{e}");
}
