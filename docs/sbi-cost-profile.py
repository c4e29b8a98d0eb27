#!/usr/bin/env python3
"""Instruction-level profile of the firmware's SBI calls in the cost bench.

Attributes every firmware instruction executed for each measured call of
crates/conformance's cost probes (`rvpmu.bench`) to the firmware's symbols,
and counts CSR instructions and loads/stores. See docs/sbi-cost.md.

Run QEMU like `cargo xtask bench` does, plus exec logging of the firmware
range (one instruction per translation block, so every executed instruction
is one log line):

  qemu-system-riscv64 -machine virt -cpu rv64,sscofpmf=true -m 256M \
    -nographic -icount shift=0,sleep=off -smp 1 -append rvpmu.bench \
    -bios target/riscv64gc-unknown-none-elf/fw/rvpmu-fw.bin \
    -kernel target/riscv64gc-unknown-none-elf/release/conformance \
    -accel tcg,one-insn-per-tb=on -d int,exec,nochain \
    -dfilter 0x80000000..0x80010000 -D log.txt > out.txt

  docs/sbi-cost-profile.py FW_ELF KERNEL_ELF log.txt out.txt [CALL...] \
    [--summary] [--trace]

A measured call is an S-mode ecall whose preceding instruction reads
instret (the probe's bracket); the probes run each call 7 times in the
order of the COST lines, and the shortest repetition is reported (the
bench reports the minimum too; the bench's figure is this count + 1, the
ecall itself).
"""
import re, subprocess, sys, collections, bisect

fw_elf, k_elf, log, out = sys.argv[1:5]

def symbols(elf):
    syms = []
    for line in subprocess.run(["riscv64-linux-gnu-nm", "-S", "-n", "-C", elf], capture_output=True, text=True).stdout.splitlines():
        p = line.split(None, 3)
        if len(p) == 4 and p[2].lower() in "tw":
            syms.append((int(p[0], 16), int(p[1], 16), p[3]))
        elif len(p) == 3 and p[1].lower() in "tw":
            syms.append((int(p[0], 16), 0, p[2]))
    syms.sort()
    return syms

def text_bytes(elf):
    import tempfile, os
    t = tempfile.mktemp()
    subprocess.run(["riscv64-linux-gnu-objcopy", "-O", "binary", "-j", ".text", elf, t], check=True)
    data = open(t, "rb").read(); os.unlink(t)
    base = int([l for l in subprocess.run(["riscv64-linux-gnu-readelf", "-S", "-W", elf], capture_output=True, text=True).stdout.splitlines() if " .text " in l][0].split("]")[1].split()[2], 16)
    return base, data

fsyms = symbols(fw_elf)
faddr = [s[0] for s in fsyms]
fbase, ftext = text_bytes(fw_elf)
kbase, ktext = text_bytes(k_elf)

def insn_at(base, data, pc):
    o = pc - base
    lo = int.from_bytes(data[o:o+2], "little")
    if lo & 3 != 3:
        return lo, 2
    return int.from_bytes(data[o:o+4], "little"), 4

def sym_of(pc):
    i = bisect.bisect_right(faddr, pc) - 1
    if i < 0: return "?"
    a, s, n = fsyms[i]
    n = re.sub(r"::h[0-9a-f]{16}$", "", n)
    return n

def is_csr(w, n):
    return n == 4 and (w & 0x7f) == 0x73 and ((w >> 12) & 7) != 0

def is_mem(w, n):
    if n == 4:
        return (w & 0x7f) in (0x03, 0x23)
    op, f3 = w & 3, w >> 13
    return (op == 0 and f3 in (1,2,3,5,6,7)) or (op == 2 and f3 in (1,2,3,5,6,7))

episodes = []  # (epc, [pcs])
cur = None
rx = re.compile(r"Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")
for line in open(log):
    if line.startswith("riscv_cpu_do_interrupt"):
        m = re.search(r"cause:([0-9a-f]+), epc:0x([0-9a-f]+)", line)
        cur = (int(m.group(1), 16), int(m.group(2), 16), [])
        episodes.append(cur)
        continue
    m = rx.match(line)
    if m and cur is not None:
        cur[2].append(int(m.group(1), 16))

names = [l.split()[1] for l in open(out) if l.startswith("COST ") ]
vals = {l.split()[1]: int(l.split()[2]) for l in open(out) if l.startswith("COST ")}
# The measured ecalls in the order they ran (the probes measure one call
# 7 times in a row, then the next): one bracket site may serve many calls.
counted = []
for cause, epc, pcs in episodes:
    if cause != 9 or not (kbase <= epc - 4 < kbase + len(ktext)):
        continue
    w, n = insn_at(kbase, ktext, epc - 4)
    if n == 4 and (w & 0xfff0707f) == 0xc0202073:
        counted.append(pcs)

if len(counted) != 7 * len(names):
    sys.exit(f"{len(counted)} measured ecalls for {len(names)} COST lines (expected 7 each)")
want = [a for a in sys.argv[5:] if not a.startswith("--")] or names
for k, name in enumerate(names):
    if name not in want or "--summary" in sys.argv: continue
    pcs = min(counted[7*k:7*k+7], key=len)
    per = collections.Counter()
    csr = collections.Counter(); mem = collections.Counter()
    order = []
    for pc in pcs:
        s = sym_of(pc)
        if s not in per: order.append(s)
        per[s] += 1
        w, n = insn_at(fbase, ftext, pc)
        if is_csr(w, n): csr[s] += 1
        if is_mem(w, n): mem[s] += 1
    print(f"== {name}: {len(pcs)} firmware instructions (bench says {vals.get(name)}), {sum(csr.values())} CSR accesses, {sum(mem.values())} loads/stores")
    for s in order:
        print(f"   {per[s]:6d}  csr {csr[s]:3d}  mem {mem[s]:4d}  {s}")
if "--trace" in sys.argv:
    for k, name in enumerate(names):
        if name not in want: continue
        pcs = min(counted[7*k:7*k+7], key=len)
        dis = {}
        for l in subprocess.run(["riscv64-linux-gnu-objdump", "-d", "--no-show-raw-insn", fw_elf], capture_output=True, text=True).stdout.splitlines():
            m = re.match(r"\s*([0-9a-f]+):\s+(.*)", l)
            if m: dis[int(m.group(1),16)] = m.group(2)
        for pc in pcs: print(hex(pc), sym_of(pc)[-30:], dis.get(pc))
if "--summary" in sys.argv:
    def cat(s):
        if s == "trap_entry": return "entry"
        if s.startswith("rvpmu_fw::sbi::"): return "dispatch"
        if s.startswith("rvpmu_fw::"): return "fw:" + s
        if s.startswith("rvpmu_csr"): return "csrtab"
        if "Ranges::owns" in s or "PhysMemory" in s or "snapshot::" in s: return "mem"
        if s.startswith("rvpmu") or s.startswith("<rvpmu"): return "engine"
        return "fw:" + s
    print("| call | total | trap entry/exit | dispatch | engine | memory access/checks | other firmware | CSR instructions |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k, name in enumerate(names):
        pcs = min(counted[7*k:7*k+7], key=len)
        c = collections.Counter(); ncsr = 0; other = collections.Counter()
        for pc in pcs:
            s = sym_of(pc); g = cat(s)
            if g.startswith("fw:"): other[g[3:]] += 1; g = "other"
            if g == "csrtab": g = "engine"
            c[g] += 1
            w, n = insn_at(fbase, ftext, pc)
            if is_csr(w, n): ncsr += 1
        o = ", ".join(f"{v} {k.split('::')[-1]}" for k, v in other.items())
        print(f"| {name} | {len(pcs)+1} | {c['entry']}+1 | {c['dispatch']} | {c['engine']} | {c['mem']} | {c['other']}{' ('+o+')' if o else ''} | {ncsr} |")
