//! The write side's small rules: how many SRC bits a number of sources
//! needs, and a memory buffer that stops on wrap.

use hpmtrace::nexus::write::WriterConfig;
use hpmtrace::sink::{ByteSink, MemBuffer, Stopped};

#[test]
fn src_bits_for_sources() {
    assert_eq!(WriterConfig::src_bits_for(1), 0);
    assert_eq!(WriterConfig::src_bits_for(2), 1);
    assert_eq!(WriterConfig::src_bits_for(3), 2);
    assert_eq!(WriterConfig::src_bits_for(4), 2);
    assert_eq!(WriterConfig::src_bits_for(5), 3);
}

#[test]
fn mem_buffer_stops_on_wrap_and_stays_stopped() {
    let mut raw = [0u8; 5];
    let mut b = MemBuffer::new(&mut raw);
    assert_eq!(b.put_bytes(&[1, 2, 3]), Ok(()));
    assert_eq!(b.put_bytes(&[4, 5, 6]), Err(Stopped));
    // would fit, but the buffer has stopped
    assert_eq!(b.put_bytes(&[7]), Err(Stopped));
    assert_eq!(b.data(), &[1, 2, 3]);
    assert_eq!(b.dropped(), 2);
}
