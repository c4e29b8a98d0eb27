//! Disassembly of built ELFs (`riscv64-linux-gnu-objdump`): the
//! independent derivation of per-iteration and per-call instruction
//! counts the checks compare against.

use crate::host::output;
use anyhow::{Context, Result};
use std::path::Path;
use std::process::Command;

/// `objdump -d --no-show-raw-insn` of one function of a guest ELF.
pub fn disassemble(elf: &Path, symbol: &str) -> Result<String> {
    output(
        Command::new("riscv64-linux-gnu-objdump")
            .args(["-d", "--no-show-raw-insn"])
            .arg(format!("--disassemble={symbol}"))
            .arg(elf),
    )
}

/// One instruction of `objdump -d --no-show-raw-insn` output, e.g.
/// `   1a2b4:\tbnez\ta0,1a2b0 <rvpmu_alu_loop+0x4>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insn {
    pub addr: u64,
    /// Bytes up to the next instruction (4 for the last one).
    pub len: u64,
    pub mnemonic: String,
    /// The operands as objdump prints them, split at commas, without the
    /// `<symbol>` annotation and `#` comment.
    pub operands: Vec<String>,
    /// Where a branch, jump or call goes: its last operand, which objdump
    /// annotates with `<symbol+offset>` (an address in a `#` comment, as
    /// after `auipc`/`addi`, is not a target).
    pub target: Option<u64>,
    /// The annotation of `target` (`fib`, `rvpmu_alu_loop+0x4`).
    pub target_symbol: Option<String>,
}

/// The instructions of `objdump -d --no-show-raw-insn` output, in order
/// (other lines, such as `<symbol>:` headers, are skipped). The one
/// disassembly parser: loop bodies here, fib's paths in
/// `crate::suite::trace` (fibcheck).
pub fn parse_disassembly(text: &str) -> Vec<Insn> {
    let mut v: Vec<Insn> = Vec::new();
    for line in text.lines() {
        let Some((addr, rest)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let code = rest.split('#').next().unwrap_or("");
        let (code, target_symbol) = match code.split_once('<') {
            Some((code, sym)) => (code, sym.split_once('>').map(|(s, _)| s.to_string())),
            None => (code, None),
        };
        let mut words = code.split_whitespace();
        let Some(mnemonic) = words.next() else {
            continue;
        };
        let operands: Vec<String> = words
            .next()
            .map(|a| a.split(',').map(String::from).collect())
            .unwrap_or_default();
        let target = target_symbol
            .as_ref()
            .and(operands.last())
            .and_then(|t| u64::from_str_radix(t, 16).ok());
        if let Some(prev) = v.last_mut() {
            prev.len = addr - prev.addr;
        }
        v.push(Insn {
            addr,
            len: 4,
            mnemonic: mnemonic.to_string(),
            operands,
            target,
            target_symbol,
        });
    }
    v
}

/// Instructions in the loop body of `symbol`, read from its disassembly:
/// the instructions from a backward branch's target up to that branch.
/// This is the independent derivation of the workload's per-iteration cost.
pub fn loop_body_instructions(elf: &Path, symbol: &str) -> Result<u64> {
    let out = disassemble(elf, symbol)?;
    parse_loop_body(&out)
        .with_context(|| format!("no backward branch found in the disassembly of {symbol}:\n{out}"))
}

fn parse_loop_body(disasm: &str) -> Option<u64> {
    let insns = parse_disassembly(disasm);
    insns.iter().find_map(|i| {
        let t = i
            .target
            .filter(|&t| i.mnemonic.starts_with('b') && t <= i.addr)?;
        Some(
            insns
                .iter()
                .filter(|j| j.addr >= t && j.addr <= i.addr)
                .count() as u64,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_loop_body() {
        let d = "0000000000012340 <rvpmu_alu_loop>:\n   12340:\tbeqz\ta0,1234a <rvpmu_alu_loop+0xa>\n   12342:\taddi\ta0,a0,-1\n   12344:\tbnez\ta0,12342 <rvpmu_alu_loop+0x2>\n   12346:\tret\n";
        assert_eq!(parse_loop_body(d), Some(2));
        let d5 = "   10:\tld\tt0,0(a0)\n   14:\tsd\tt0,0(a0)\n   18:\tadd\ta0,a0,a2\n   1c:\taddi\ta1,a1,-1\n   20:\tbnez\ta1,10 <x>\n";
        assert_eq!(parse_loop_body(d5), Some(5));
        assert_eq!(
            parse_loop_body("   10:\taddi\ta0,a0,1\n   14:\tret\n"),
            None
        );
        // Zbs `bseti` starts with `b` but has no target.
        assert_eq!(
            parse_loop_body("   10:\tbseti\ta0,a0,5\n   14:\tret\n"),
            None
        );
    }

    #[test]
    fn disassembly_lines_parse() {
        let d = "0000000000012340 <f>:\n   12340:\tjal\t17112 <__cyg_profile_func_enter>\n   12344:\tadd\ta0,a0,-8 # 12340 <f>\n   12348:\tbeq\ts0,a5,12340 <f>\n   1234c:\tret\n";
        let v = parse_disassembly(d);
        fn row(i: &Insn) -> (u64, u64, &str, String, Option<u64>, Option<&str>) {
            (
                i.addr,
                i.len,
                i.mnemonic.as_str(),
                i.operands.join(","),
                i.target,
                i.target_symbol.as_deref(),
            )
        }
        assert_eq!(
            v.iter().map(row).collect::<Vec<_>>(),
            [
                (
                    0x12340,
                    4,
                    "jal",
                    "17112".into(),
                    Some(0x17112),
                    Some("__cyg_profile_func_enter")
                ),
                (0x12344, 4, "add", "a0,a0,-8".into(), None, None),
                (
                    0x12348,
                    4,
                    "beq",
                    "s0,a5,12340".into(),
                    Some(0x12340),
                    Some("f")
                ),
                (0x1234c, 4, "ret", String::new(), None, None),
            ]
        );
    }
}
