//! The STA sequence protocol under a real race: one writer thread (the
//! library's `StealTime::account`) and several reader threads (the
//! library's `read_steal`) share one record through atomics. No reader may
//! ever see a torn or decreasing value.

use rvpmu::sta::{read_steal, StaArea, StealTime};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

mod sta_record;
use sta_record::{Shared, BASE};

/// The 64-byte record as atomics, accessed with the widths the layout
/// uses (u32 sequence, u64 steal, u8 preempted).
#[derive(Default)]
struct Record {
    sequence: AtomicU32,
    steal: AtomicU64,
    preempted: AtomicU8,
}

impl sta_record::Fields for Arc<Record> {
    fn store_sequence(&self, v: u32) {
        self.sequence.store(v, Relaxed);
    }
    fn store_steal(&self, v: u64) {
        self.steal.store(v, Relaxed);
    }
    fn store_preempted(&self, v: u8) {
        self.preempted.store(v, Relaxed);
    }
}

#[test]
fn readers_never_see_torn_or_decreasing_steal() {
    const UPDATES: u64 = 10_000_000;
    const READERS: usize = 3;
    let rec = Arc::new(Record::default());
    let mut mem = Shared(rec.clone());
    let mut st = StealTime::new();
    st.set_shmem(&mut mem, StaArea::parse(BASE, 0).unwrap())
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));

    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let rec = rec.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let (mut last, mut reads) = (0u64, 0u64);
                while !done.load(Relaxed) {
                    let Some(v) = read_steal(
                        || rec.sequence.load(Relaxed),
                        || rec.steal.load(Relaxed),
                        1 << 20,
                    ) else {
                        continue;
                    };
                    // Each update adds 0x1_0000_0001: both halves move together,
                    // so a torn 64-bit value has unequal halves.
                    assert_eq!(v >> 32, v & 0xffff_ffff, "torn read {v:#x}");
                    assert!(v >= last, "steal went back from {last:#x} to {v:#x}");
                    last = v;
                    reads += 1;
                }
                reads
            })
        })
        .collect();

    for i in 0..UPDATES {
        st.account(&mut mem, 0x1_0000_0001, false);
        if i % 1024 == 0 {
            // Give readers on the other core a window between bursts.
            std::hint::spin_loop();
            std::thread::yield_now();
        }
    }
    done.store(true, Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert_eq!(rec.steal.load(Relaxed), UPDATES * 0x1_0000_0001);
    assert_eq!(rec.sequence.load(Relaxed), (2 * UPDATES) as u32);
    assert!(reads > 1000, "the readers actually read ({reads})");
    eprintln!("{UPDATES} updates, {reads} consistent reads by {READERS} readers");
}
