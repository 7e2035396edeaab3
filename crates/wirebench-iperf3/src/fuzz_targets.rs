//! Bodies of the cargo-fuzz targets (`fuzz/fuzz_targets/iperf3_*.rs`), also run as proptests
//! (`tests/props.rs`) because cargo-fuzz needs a nightly toolchain. Each must never panic,
//! whatever the bytes.

use std::time::{Duration, Instant};

use crate::server::{ServerConn, ServerPhase, Timeouts};
use crate::wire::{COOKIE_BYTES, MAX_PARAMS_BYTES};

/// A server's control connection fed arbitrary bytes, in arbitrary pieces (the first byte
/// picks the piece size), with the caller's steps taken whenever the machine waits for
/// them. Checks the invariants: nothing is buffered beyond the current message's cap.
pub fn iperf3_server(data: &[u8]) {
    let Some((&piece, data)) = data.split_first() else {
        return;
    };
    let piece = usize::from(piece).max(1);
    let t0 = Instant::now();
    let mut s = ServerConn::new(t0, Timeouts::default());
    for chunk in data.chunks(piece) {
        if s.handle_bytes(t0, chunk).is_err() {
            assert_eq!(s.phase(), ServerPhase::Closed);
            return;
        }
        assert!(s.wanted() <= COOKIE_BYTES.max(MAX_PARAMS_BYTES as usize) + (1 << 20) * 2);
        match s.phase() {
            ServerPhase::Setup => s.create_streams(t0 + Duration::from_secs(1)).unwrap(),
            ServerPhase::Streams => s.test_started().unwrap(),
            _ => {}
        }
        let _ = s.take_output();
    }
}

/// The parameters and results decoders on arbitrary bytes.
pub fn iperf3_json(data: &[u8]) {
    if let Ok(p) = crate::params::Params::decode(data) {
        // What was read is what a client writes back, exactly.
        let again = crate::params::Params::decode(p.encode().as_bytes()).unwrap();
        assert_eq!(again.parallel, p.parallel);
        assert_eq!(again.direction, p.direction);
    }
    if let Ok(r) = crate::results::Results::decode(data) {
        let again = crate::results::Results::decode(r.encode().as_bytes()).unwrap();
        assert_eq!(again.streams.len(), r.streams.len());
    }
    let _ = crate::udp::UdpHeader::parse(data, data.first().is_some_and(|b| b & 1 == 1));
}
