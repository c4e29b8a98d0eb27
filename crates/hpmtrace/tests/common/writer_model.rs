// A model of a Nexus writer whose buffer stops on wrap, and random
// writers and timestamps for it. Included (`include!`, so no inner doc and
// no imports here) by the writer's unit tests and by tests/nexus_write.rs,
// in modules that import `NexusWriter`, `WriterConfig`, `VecBuffer`,
// `ItcWrite`, `Sink`, `Stopped` and `Rng`.

/// What a writer whose buffer stops on wrap must hold: every message
/// framed on its own (each write its own call of `put_writes`, at its
/// record's timestamp) into a buffer that never fills, and of those
/// the whole records before the first that does not fit in `cap`.
struct Model {
    w: NexusWriter<VecBuffer>,
    cap: usize,
    kept: Vec<u8>,
    full: bool,
}

impl Model {
    fn record(&mut self, writes: &[ItcWrite], ts: u64) -> Result<(), Stopped> {
        let before = self.w.inner().data().len();
        for w in writes {
            self.w.put_writes(std::slice::from_ref(w), ts).unwrap();
        }
        let bytes = &self.w.inner().data()[before..];
        self.full |= self.kept.len() + bytes.len() > self.cap;
        if self.full {
            return Err(Stopped);
        }
        self.kept.extend_from_slice(bytes);
        Ok(())
    }
}

/// A random framing configuration, a writer of it for one source into
/// a buffer that a third of the time holds fewer than `small` bytes
/// (stop-on-wrap mid-stream), else 1 MiB, and its model.
fn writer_and_model(r: &mut Rng, small: u64) -> (WriterConfig, NexusWriter<VecBuffer>, Model) {
    let cfg = WriterConfig {
        channel: r.below(32) as u8,
        src_bits: r.below(9) as u8,
        timestamp_bits: [40, 48, 64][r.below(3) as usize],
    };
    let src = r.below(1 << cfg.src_bits) as u16;
    let cap = if r.below(3) == 0 {
        r.below(small) as usize
    } else {
        1 << 20
    };
    let model = Model {
        w: NexusWriter::new(cfg, src, VecBuffer::with_capacity(1 << 24)),
        cap,
        kept: Vec::new(),
        full: false,
    };
    (
        cfg,
        NexusWriter::new(cfg, src, VecBuffer::with_capacity(cap)),
        model,
    )
}

/// The timestamp of the next record: mostly a step of up to 2^40, now
/// and then the same or anywhere.
fn next_ts(r: &mut Rng, ts: u64) -> u64 {
    match r.below(20) {
        0 => r.next(),
        1 => ts,
        _ => {
            let bits = r.below(40);
            ts.wrapping_add(r.below(1 << bits))
        }
    }
}
