//! Property tests of the STA writer (`rvpmu::sta::StealTime`) against the
//! SBI STA chapter: registration rules through the raw register boundary,
//! and the sequence protocol of every update, replayed write by write
//! through the reader side.

use crate::spec::{owned, BUF_BASE, IA, IP, RAM_HI, RAM_LO};
use proptest::prelude::*;
use rvpmu::ecall;
use rvpmu::mem::{MemFault, SupervisorMemory};
use rvpmu::sim::BufMemory;
use rvpmu::sta::{read_steal, StealTime};

/// Supervisor memory that logs every write with its bytes.
struct LogMem {
    inner: BufMemory,
    log: Vec<(u64, Vec<u8>)>,
}

impl SupervisorMemory for LogMem {
    fn owns(&self, addr: u64, len: u64) -> bool {
        self.inner.owns(addr, len)
    }
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        self.inner.read(addr, buf)
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        self.log.push((addr, data.to_vec()));
        self.inner.write(addr, data)
    }
}

fn sta_addr() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => (0u64..(RAM_HI - RAM_LO) / 64).prop_map(|k| RAM_LO + k * 64),
        2 => (0u64..0x1000).prop_map(|k| BUF_BASE + k * 64),
        1 => Just(RAM_HI - 64),
        1 => Just(RAM_HI),
        1 => Just(RAM_LO - 32),
        2 => RAM_LO..RAM_HI,
        1 => any::<u64>(),
        1 => Just(!63),
    ]
}

#[derive(Clone, Debug)]
enum StaOp {
    SetShmem(u64, u64, u64),
    Account(u64, bool),
    /// The supervisor stores into its own record (allowed, "MAY leave the
    /// shared memory filled with inconsistent data").
    Scribble(u64, u8),
}

fn sta_op() -> impl Strategy<Value = StaOp> {
    prop_oneof![
        2 => (sta_addr(), prop_oneof![10 => Just(0u64), 1 => Just(u64::MAX), 1 => any::<u64>()],
              prop_oneof![10 => Just(0u64), 1 => any::<u64>()])
            .prop_map(|(lo, hi, f)| StaOp::SetShmem(lo, hi, f)),
        1 => Just(StaOp::SetShmem(u64::MAX, u64::MAX, 0)),
        10 => (prop_oneof![Just(0u64), 1u64..1_000_000, any::<u64>()], any::<bool>())
            .prop_map(|(s, p)| StaOp::Account(s, p)),
        2 => (0u64..64, any::<u8>()).prop_map(|(o, b)| StaOp::Scribble(o, b)),
    ]
}

fn expected_set(lo: u64, hi: u64, flags: u64) -> Vec<isize> {
    let mut e = vec![];
    if flags != 0 {
        e.push(IP);
    }
    if lo == u64::MAX && hi == u64::MAX {
        return e;
    }
    if !lo.is_multiple_of(64) {
        e.push(IP);
    }
    if hi != 0 || !owned(lo, 64) {
        e.push(IA);
    }
    e
}

fn u32_at(m: &BufMemory, a: u64) -> u32 {
    u32::from_le_bytes(m.peek(a, 4).try_into().unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Registration: the error a (lo, hi, flags) triple must give, the 64
    /// bytes zeroed on success, nothing written outside them, and a failed
    /// call leaves the previous registration in place.
    #[test]
    fn sta_registration_rules(
        first in sta_addr(),
        lo in sta_addr(),
        hi in prop_oneof![10 => Just(0u64), 1 => Just(u64::MAX), 1 => any::<u64>()],
        flags in prop_oneof![10 => Just(0u64), 1 => any::<u64>()],
    ) {
        let mut mem = BufMemory::virt();
        let mut sta = StealTime::new();
        // A first registration (valid or not) to see what errors keep.
        let r0 = ecall::sta(&mut sta, &mut mem, 0, [first as usize, 0, 0, 0, 0, 0]);
        let before = sta.area();
        prop_assert_eq!(before.is_some(), r0.error == 0);
        if r0.error == 0 {
            prop_assert_eq!(before, Some(first));
        }
        if in_buffer(lo) {
            mem.poke(lo, &[0xA5; 64]);
        }
        let n = mem.writes.len();
        let r = ecall::sta(&mut sta, &mut mem, 0, [lo as usize, hi as usize, flags as usize, 0, 0, 0]);
        let errs = expected_set(lo, hi, flags);
        prop_assert_eq!(r.value, 0);
        if errs.is_empty() {
            prop_assert_eq!(r.error, 0, "set_shmem({:#x}, {:#x}, {:#x})", lo, hi, flags);
            if lo == u64::MAX {
                prop_assert_eq!(sta.area(), None);
                prop_assert!(mem.writes.len() == n);
            } else {
                prop_assert_eq!(sta.area(), Some(lo));
                prop_assert_eq!(mem.peek(lo, 64), &[0u8; 64][..]);
            }
        } else {
            prop_assert!(errs.contains(&(r.error as isize)), "set_shmem({:#x}, {:#x}, {:#x}): {} not in {:?}", lo, hi, flags, r.error as isize, errs);
            prop_assert_eq!(sta.area(), before);
            prop_assert!(mem.writes.len() == n);
        }
        for &(a, len) in &mem.writes[n..] {
            prop_assert!(a >= lo && a + len as u64 <= lo + 64);
        }
        prop_assert_eq!(mem.faults.get(), 0);
        // Any other FID of STA is not supported.
        let r = ecall::sta(&mut sta, &mut mem, 1, [0; 6]);
        prop_assert_eq!(r.error as isize, -2);
    }

    /// The sequence protocol: every update writes the sequence odd first and
    /// even last (one more), only inside the record; a reader replaying the
    /// writes one by one sees either the old total, a retry, or the new
    /// total; after each update steal equals the sum accounted since
    /// registration and `preempted` the last flag.
    #[test]
    fn sta_sequence_protocol(ops in prop::collection::vec(sta_op(), 1..80)) {
        let mut mem = LogMem { inner: BufMemory::virt(), log: vec![] };
        let mut sta = StealTime::new();
        let mut area: Option<u64> = None;
        let mut sum: u64 = 0;
        let mut last_seq: Option<u32> = None; // even value last published
        let mut scribbled = false; // sequence touched since the last update
        let mut dirty = false; // record touched since registration
        for op in ops {
            match op {
                StaOp::SetShmem(lo, hi, flags) => {
                    let r = ecall::sta(&mut sta, &mut mem, 0, [lo as usize, hi as usize, flags as usize, 0, 0, 0]);
                    if r.error == 0 {
                        if lo == u64::MAX && hi == u64::MAX {
                            area = None;
                        } else {
                            area = Some(lo);
                            sum = 0;
                            last_seq = Some(0);
                            scribbled = false;
                            dirty = false;
                        }
                    }
                    prop_assert_eq!(sta.area(), area);
                }
                StaOp::Scribble(off, b) => {
                    if let Some(a) = area {
                        mem.inner.poke(a + off, &[b]);
                        scribbled |= off < 4;
                        dirty = true;
                    }
                }
                StaOp::Account(steal, preempted) => {
                    let n = mem.log.len();
                    // What a reader sees before the update.
                    let mut view = area.map(|a| mem.inner.peek(a, 64).to_vec());
                    sta.account(&mut mem, steal, preempted);
                    sum = sum.wrapping_add(steal);
                    let writes = &mem.log[n..];
                    let Some(a) = area else {
                        prop_assert!(writes.is_empty(), "write with nothing registered: {:?}", writes);
                        continue;
                    };
                    prop_assert!(writes.len() >= 3);
                    for (x, d) in writes {
                        prop_assert!(*x >= a && x + d.len() as u64 <= a + 64, "write {:#x}+{} outside the record", x, d.len());
                    }
                    let seq_of = |w: &(u64, Vec<u8>)| {
                        (w.0 == a && w.1.len() == 4).then(|| u32::from_le_bytes(w.1[..].try_into().unwrap()))
                    };
                    let s_odd = seq_of(&writes[0]);
                    let s_even = seq_of(writes.last().unwrap());
                    prop_assert!(matches!(s_odd, Some(s) if s & 1 == 1), "first write is not an odd sequence: {:?}", writes[0]);
                    prop_assert_eq!(s_even, Some(s_odd.unwrap().wrapping_add(1)));
                    if let (Some(prev), false) = (last_seq, scribbled) {
                        prop_assert_eq!(s_odd.unwrap(), prev.wrapping_add(1));
                    }
                    for w in &writes[1..writes.len() - 1] {
                        prop_assert!(w.0 >= a + 4, "sequence rewritten mid-update");
                    }
                    // Replay through the reader.
                    let view = view.as_mut().unwrap();
                    let read = |v: &Vec<u8>| {
                        read_steal(
                            || u32::from_le_bytes(v[0..4].try_into().unwrap()),
                            || u64::from_le_bytes(v[8..16].try_into().unwrap()),
                            3,
                        )
                    };
                    for (k, (x, d)) in writes.iter().enumerate() {
                        let off = (x - a) as usize;
                        view[off..off + d.len()].copy_from_slice(d);
                        let got = read(view);
                        if k + 1 < writes.len() {
                            prop_assert_eq!(got, None, "reader accepted a value mid-update");
                        } else {
                            prop_assert_eq!(got, Some(sum));
                        }
                    }
                    let m = &mem.inner;
                    prop_assert_eq!(u32_at(m, a) & 1, 0);
                    prop_assert_eq!(m.peek_u64(a + 8), sum);
                    prop_assert_eq!(m.peek(a + 16, 1)[0], preempted as u8);
                    if !dirty {
                        prop_assert_eq!(u32_at(m, a + 4), 0, "flags must stay zero");
                        prop_assert_eq!(m.peek(a + 17, 47), &[0u8; 47][..]);
                    }
                    last_seq = s_even;
                    scribbled = false;
                    prop_assert_eq!(sta.steal_ns(), sum);
                }
            }
            prop_assert_eq!(mem.inner.faults.get(), 0);
        }
    }
}

fn in_buffer(a: u64) -> bool {
    a >= BUF_BASE && a.checked_add(64).is_some_and(|e| e <= RAM_HI)
}
