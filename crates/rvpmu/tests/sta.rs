//! STA registration and the writer's sequence protocol (SBI STA chapter).

use rvpmu::ecall;
use rvpmu::sim::BufMemory;
use rvpmu::sta::{read_steal, StealTime};
use rvpmu::Error;

const AREA: u64 = 0x8008_0040; // 64-byte aligned, supervisor-owned

fn set(st: &mut StealTime, mem: &mut BufMemory, lo: u64, hi: u64, flags: u64) -> Result<(), Error> {
    let r = ecall::sta(
        st,
        mem,
        0,
        [lo as usize, hi as usize, flags as usize, 0, 0, 0],
    );
    if r.error == 0 {
        assert_eq!(r.value, 0, "sbiret.value is zero");
        Ok(())
    } else {
        Err(Error::from_code(r.error as isize).unwrap())
    }
}

#[test]
fn registration_errors_follow_the_table() {
    let mut st = StealTime::new();
    let mut mem = BufMemory::virt();
    assert_eq!(
        set(&mut st, &mut mem, AREA, 0, 1),
        Err(Error::InvalidParam),
        "flags"
    );
    assert_eq!(
        set(&mut st, &mut mem, AREA + 32, 0, 0),
        Err(Error::InvalidParam),
        "64-byte alignment"
    );
    assert_eq!(
        set(&mut st, &mut mem, 0x8000_0000, 0, 0),
        Err(Error::InvalidAddress),
        "firmware"
    );
    assert_eq!(
        set(&mut st, &mut mem, AREA, 2, 0),
        Err(Error::InvalidAddress),
        "beyond 64 bits"
    );
    assert_eq!(st.area(), None);
    let r = ecall::sta(&mut st, &mut mem, 1, [0; 6]);
    assert_eq!(r.error as isize, Error::NotSupported.code(), "unknown FID");
    let r = ecall::sta(&mut st, &mut mem, 1 << 32 | 1, [0; 6]);
    assert_eq!(
        r.error as isize,
        Error::NotSupported.code(),
        "unknown FID, upper bits"
    );
    assert_eq!(mem.faults.get(), 0);
    assert!(mem.writes.is_empty(), "no write on any failed call");
}

/// Spec, "Binary Encoding": the FID is a 32-bit integer (only the low half
/// of a6 counts); `flags` is `unsigned long` (full width, so bit 32 is a
/// reserved bit).
#[test]
fn register_widths() {
    let mut st = StealTime::new();
    let mut mem = BufMemory::virt();
    let r = ecall::sta(&mut st, &mut mem, 0, [AREA as usize, 0, 1 << 32, 0, 0, 0]);
    assert_eq!(r.error as isize, Error::InvalidParam.code(), "flags bit 32");
    let r = ecall::sta(
        &mut st,
        &mut mem,
        0xffff_ffff << 32,
        [AREA as usize, 0, 0, 0, 0, 0],
    );
    assert_eq!(r.error, 0, "FID 0 with the upper half set");
    assert_eq!(st.area(), Some(AREA));
}

#[test]
fn registration_zeroes_64_bytes_and_nothing_else() {
    let mut st = StealTime::new();
    let mut mem = BufMemory::virt();
    mem.poke(AREA - 8, &[0xEE; 80]);
    set(&mut st, &mut mem, AREA, 0, 0).unwrap();
    assert_eq!(mem.peek(AREA, 64), &[0u8; 64][..]);
    assert_eq!(mem.peek(AREA - 8, 8), &[0xEE; 8][..]);
    assert_eq!(mem.peek(AREA + 64, 8), &[0xEE; 8][..]);
}

#[test]
fn account_publishes_with_even_sequence_and_moves_on_reregistration() {
    let mut st = StealTime::new();
    let mut mem = BufMemory::virt();
    set(&mut st, &mut mem, AREA, 0, 0).unwrap();
    st.account(&mut mem, 1500, true);
    assert_eq!(mem.peek(AREA + 16, 1), &[1], "preempted while withheld");
    st.account(&mut mem, 500, false);
    let seq = u32::from_le_bytes(mem.peek(AREA, 4).try_into().unwrap());
    assert_eq!(seq, 4, "two updates, each odd then even");
    assert_eq!(mem.peek_u64(AREA + 8), 2000);
    assert_eq!(mem.peek(AREA + 16, 1), &[0], "zero before it runs again");
    assert_eq!(mem.peek(AREA + 4, 4), &[0; 4], "flags stay zero");
    // Move the record: the old one is no longer written.
    let new = AREA + 0x1000;
    set(&mut st, &mut mem, new, 0, 0).unwrap();
    st.account(&mut mem, 7, false);
    assert_eq!(mem.peek_u64(AREA + 8), 2000);
    assert_eq!(mem.peek_u64(new + 8), 7);
    // Disable: nothing written any more.
    set(&mut st, &mut mem, u64::MAX, u64::MAX, 0).unwrap();
    let writes = mem.writes.len();
    st.account(&mut mem, 7, false);
    assert_eq!(mem.writes.len(), writes);
}

#[test]
fn reader_retries_on_odd_or_changed_sequence() {
    // Odd first, then a change between the two reads, then stable.
    let seqs = [1u32, 2, 4, 4, 4];
    let mut k = 0;
    let v = read_steal(
        || {
            let s = seqs[k.min(seqs.len() - 1)];
            k += 1;
            s
        },
        || 99,
        10,
    );
    assert_eq!(v, Some(99));
    assert!(k >= 4, "it retried");
    assert_eq!(read_steal(|| 1, || 0, 5), None, "gives up while odd");
}
