//! Misaligned load/store emulation for integer accesses (QEMU handles most
//! misaligned accesses itself; what traps here is done byte by byte in the
//! trapped context's translation). Anything else is redirected to S-mode.
#![cfg(target_os = "none")]

use crate::frame::{fetch_insn, load_u8, redirect, store_u8, TrapFrame};
use crate::machine::Ready;
use crate::pmu::HartPmu;
use rvpmu::event::FwEvent;

/// A decoded integer load or store.
struct Access {
    load: bool,
    width: usize,
    signed: bool,
    /// rd for loads, rs2 for stores.
    reg: usize,
    insn_len: usize,
}

fn decode(insn: u32) -> Option<Access> {
    let i = insn as usize;
    if i & 3 == 3 {
        let f3 = (i >> 12) & 7;
        return match i & 0x7f {
            0x03 if f3 != 7 => Some(Access {
                load: true,
                width: 1 << (f3 & 3),
                signed: f3 < 4,
                reg: (i >> 7) & 31,
                insn_len: 4,
            }),
            0x23 if f3 < 4 => Some(Access {
                load: false,
                width: 1 << f3,
                signed: false,
                reg: (i >> 20) & 31,
                insn_len: 4,
            }),
            _ => None,
        };
    }
    let (quadrant, f3) = (i & 3, (i >> 13) & 7);
    let rd_prime = 8 + ((i >> 2) & 7);
    let (load, width, reg) = match (quadrant, f3) {
        (0, 0b010) => (true, 4, rd_prime),       // c.lw
        (0, 0b011) => (true, 8, rd_prime),       // c.ld
        (0, 0b110) => (false, 4, rd_prime),      // c.sw
        (0, 0b111) => (false, 8, rd_prime),      // c.sd
        (2, 0b010) => (true, 4, (i >> 7) & 31),  // c.lwsp
        (2, 0b011) => (true, 8, (i >> 7) & 31),  // c.ldsp
        (2, 0b110) => (false, 4, (i >> 2) & 31), // c.swsp
        (2, 0b111) => (false, 8, (i >> 2) & 31), // c.sdsp
        _ => return None,
    };
    Some(Access {
        load,
        width,
        signed: width == 4,
        reg,
        insn_len: 2,
    })
}

/// Handle a misaligned load/store trap at `f.mepc` for address `addr`.
pub fn misaligned(ready: Ready, f: &mut TrapFrame, cause: usize, addr: usize, pmu: &mut HartPmu) {
    let is_load = cause == rvpmu_rt::csr::CAUSE_MISALIGNED_LOAD;
    pmu.record(if is_load {
        FwEvent::MisalignedLoad
    } else {
        FwEvent::MisalignedStore
    });
    let access = match fetch_insn(f, f.mepc).ok().and_then(decode) {
        Some(a) if a.load == is_load => a,
        // Floating point, atomics, vector: S-mode's business.
        _ => return redirect(ready, f, cause, addr),
    };
    if access.load {
        let mut v: u64 = 0;
        for i in 0..access.width {
            match load_u8(f, addr + i) {
                Ok(b) => v |= (b as u64) << (8 * i),
                Err(c) => return redirect(ready, f, c, addr + i),
            }
        }
        if access.signed {
            let shift = 64 - 8 * access.width as u32;
            v = (((v << shift) as i64) >> shift) as u64;
        }
        if access.reg != 0 {
            f.regs[access.reg] = v as usize;
        }
    } else {
        let v = f.regs[access.reg];
        for i in 0..access.width {
            if let Err(c) = store_u8(f, addr + i, (v >> (8 * i)) as u8) {
                return redirect(ready, f, c, addr + i);
            }
        }
    }
    f.mepc += access.insn_len;
}
