//! Property tests: the fuzz target bodies on arbitrary bytes (cargo-fuzz needs nightly), and
//! round trips of the parameters and results.

use proptest::prelude::*;
use wirebench_iperf3::fuzz_targets;
use wirebench_iperf3::params::{Direction, Params, Protocol};
use wirebench_iperf3::wire::encode_json;

fn a_valid_start() -> impl Strategy<Value = Vec<u8>> {
    (1u32..=128, any::<bool>(), 1u32..100_000, any::<u8>()).prop_map(|(p, udp, len, piece)| {
        let mut b = vec![piece];
        b.extend_from_slice(b"abcdefghijklmnopqrstuvwxyz0123456789\0");
        let params = Params {
            parallel: p,
            protocol: if udp { Protocol::Udp } else { Protocol::Tcp },
            len_bytes: len,
            ..Params::default()
        };
        b.extend(encode_json(&params.encode()));
        b
    })
}

proptest! {
    #[test]
    fn fuzz_target_iperf3_server(data in prop::collection::vec(any::<u8>(), 0..2048)) {
        fuzz_targets::iperf3_server(&data);
    }

    #[test]
    fn fuzz_target_iperf3_server_after_a_valid_start(
        start in a_valid_start(),
        tail in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut data = start;
        data.extend(tail);
        fuzz_targets::iperf3_server(&data);
    }

    #[test]
    fn fuzz_target_iperf3_client(data in prop::collection::vec(any::<u8>(), 0..2048)) {
        fuzz_targets::iperf3_client(&data);
    }

    #[test]
    fn fuzz_target_iperf3_client_after_a_valid_start(
        piece in any::<u8>(),
        results in prop::collection::vec(any::<u8>(), 0..400),
        tail in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        // A server that gets as far as its results, which are then arbitrary bytes.
        let mut data = vec![piece, 0x09, 0x0a, 0x01, 0x02, 0x0d];
        data.extend((results.len() as u32).to_be_bytes());
        data.extend(results);
        data.extend(tail);
        fuzz_targets::iperf3_client(&data);
    }

    #[test]
    fn fuzz_target_iperf3_json(data in prop::collection::vec(any::<u8>(), 0..1024)) {
        fuzz_targets::iperf3_json(&data);
    }

    #[test]
    fn fuzz_target_iperf3_json_on_json_text(s in "\\{(\"[a-z_]{1,12}\":(-?[0-9]{1,20}|true|false|\"[a-z]{0,8}\"|\\[\\]),?){0,8}\\}") {
        fuzz_targets::iperf3_json(s.as_bytes());
    }

    #[test]
    fn params_round_trip(
        parallel in 1u32..=128,
        time_s in 0u32..100_000,
        omit_s in 0u32..100,
        len in 1u32..=1_048_576,
        bw in 0u64..=u64::from(u32::MAX) * 8,
        dir in 0u8..3,
        window in prop::option::of(1u32..=i32::MAX as u32),
        gso in any::<bool>(),
    ) {
        let p = Params {
            parallel, time_s, omit_s, len_bytes: len, bandwidth_bps: bw,
            direction: [Direction::Forward, Direction::Reverse, Direction::Bidir][dir as usize],
            window_bytes: window,
            get_server_output: gso,
            ..Params::default()
        };
        prop_assert_eq!(Params::decode(p.encode().as_bytes()).unwrap(), p);
    }
}
