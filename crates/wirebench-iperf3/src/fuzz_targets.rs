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

/// A client's control connection fed arbitrary server bytes in arbitrary pieces (the first
/// byte picks the piece size), with the caller's steps taken whenever the machine waits for
/// them. Checks: no panic, an error closes the machine, nothing is buffered beyond the
/// current message's cap, and nothing is written after the machine closed.
pub fn iperf3_client(data: &[u8]) {
    use crate::client::{ClientConn, ClientPhase, ClientTimeouts};
    use crate::params::Params;
    use crate::results::Results;
    use crate::wire::{max_results_bytes, Cookie};
    let Some((&piece, data)) = data.split_first() else {
        return;
    };
    let params = Params {
        parallel: u32::from(piece % 4) + 1,
        ..Params::default()
    };
    let piece = usize::from(piece).max(1);
    let t0 = Instant::now();
    let mut c = ClientConn::new(
        t0,
        Cookie::from_random([0; 36]),
        &params,
        ClientTimeouts::default(),
    );
    let mine = Results {
        cpu_util_total: 0.0,
        cpu_util_user: 0.0,
        cpu_util_system: 0.0,
        sender_has_retransmits: 0,
        congestion_used: None,
        streams: Vec::new(),
        server_output_text: None,
    };
    for chunk in data.chunks(piece) {
        if c.handle_bytes(t0, chunk).is_err() {
            assert_eq!(c.phase(), ClientPhase::Closed);
            return;
        }
        assert!(c.wanted() <= max_results_bytes(params.stream_count(), false) as usize);
        match c.phase() {
            ClientPhase::Running => c.test_end(t0).unwrap(),
            ClientPhase::ClientResults => c.send_results(t0, &mine).unwrap(),
            ClientPhase::Closed => {
                let _ = c.take_output();
                assert!(c.take_output().is_empty());
            }
            _ => {}
        }
        let _ = c.take_output();
    }
    let _ = c.eof();
}
