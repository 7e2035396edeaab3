//! Property tests: the fuzz target bodies on arbitrary bytes (cargo-fuzz needs nightly), and
//! round trips of the parameters and results; and the fuzz crate's targets checked against
//! the bodies they call.

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

/// A fuzz target's name, the path it calls its body by, and the body.
type FuzzBody = (&'static str, &'static str, fn(&[u8]));

/// `(name, "the::path", the::path)`: the path's text is the path itself, so the table cannot
/// name one function and check the target against another.
macro_rules! fuzz_body {
    ($name:literal, $($seg:ident)::+) => {
        ($name, stringify!($($seg)::+), $($seg)::+)
    };
}

/// Every fuzz body of the workspace: the name of the cargo-fuzz target that runs it, the
/// path the target calls it by (as `stringify!` spells it: spaces around `::`), and the body
/// (the compiler checks that the path exists with the signature the targets call).
const FUZZ_BODIES: [FuzzBody; 11] = [
    fuzz_body!("frame", wirebench_proto::fuzz_targets::frame),
    fuzz_body!("hello", wirebench_proto::fuzz_targets::hello),
    fuzz_body!("test_spec", wirebench_proto::fuzz_targets::test_spec),
    fuzz_body!("results", wirebench_proto::fuzz_targets::results),
    fuzz_body!("data_hello", wirebench_proto::fuzz_targets::data_hello),
    fuzz_body!("udp_datagram", wirebench_proto::fuzz_targets::udp_datagram),
    fuzz_body!("auth", wirebench_proto::fuzz_targets::auth),
    fuzz_body!("udp_setup", wirebench_proto::udpsetup::fuzz_udp_setup),
    fuzz_body!(
        "iperf3_server",
        wirebench_iperf3::fuzz_targets::iperf3_server
    ),
    fuzz_body!("iperf3_json", wirebench_iperf3::fuzz_targets::iperf3_json),
    fuzz_body!(
        "iperf3_client",
        wirebench_iperf3::fuzz_targets::iperf3_client
    ),
];

/// The fuzz crate (`fuzz/`, a workspace of its own that cargo-fuzz builds with nightly) is
/// not compiled by this workspace's build: its targets are checked here instead. Each target
/// `fuzz/Cargo.toml` declares is a file of exactly the one shape below, calling the body of
/// its name in the crate that owns it (the table above, checked by the compiler), so that a
/// renamed or removed body, a target left out of the manifest or a target with code of its
/// own fails here; the bodies themselves run in the property tests above and in
/// wirebench-proto's.
#[test]
fn every_fuzz_target_is_the_template_calling_its_body() {
    let fuzz = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz");
    let manifest: toml::Table = std::fs::read_to_string(format!("{fuzz}/Cargo.toml"))
        .expect("fuzz/Cargo.toml")
        .parse()
        .expect("fuzz/Cargo.toml parses");
    let deps = manifest["dependencies"].as_table().expect("[dependencies]");
    for (krate, path) in [
        ("wirebench-proto", "../crates/wirebench-proto"),
        ("wirebench-iperf3", "../crates/wirebench-iperf3"),
    ] {
        assert_eq!(deps[krate]["path"].as_str(), Some(path), "{krate}");
    }
    assert!(deps.contains_key("libfuzzer-sys"));
    let bins = manifest["bin"].as_array().expect("[[bin]] targets");
    let mut declared: Vec<&str> = Vec::new();
    for bin in bins {
        let name = bin["name"].as_str().expect("a target's name");
        assert_eq!(
            bin["path"].as_str(),
            Some(format!("fuzz_targets/{name}.rs").as_str()),
            "{name}"
        );
        let (_, call, body) = FUZZ_BODIES
            .iter()
            .find(|(n, _, _)| *n == name)
            .unwrap_or_else(|| panic!("fuzz target {name}: no body of that name in the table"));
        let text = std::fs::read_to_string(format!("{fuzz}/fuzz_targets/{name}.rs"))
            .unwrap_or_else(|e| panic!("fuzz target {name}: {e}"));
        let want = format!(
            "#![no_main]\n\nuse libfuzzer_sys::fuzz_target;\n\nfuzz_target!(|data: &[u8]| {{\n    \
             {}(data);\n}});\n",
            call.replace(' ', "")
        );
        assert_eq!(text, want, "fuzz/fuzz_targets/{name}.rs");
        body(b"");
        declared.push(name);
    }
    declared.sort_unstable();
    let mut files: Vec<String> = std::fs::read_dir(format!("{fuzz}/fuzz_targets"))
        .expect("fuzz/fuzz_targets")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort_unstable();
    let mut named: Vec<&str> = FUZZ_BODIES.iter().map(|(n, _, _)| *n).collect();
    named.sort_unstable();
    assert_eq!(
        declared, named,
        "targets in fuzz/Cargo.toml against the bodies"
    );
    let want_files: Vec<String> = named.iter().map(|n| format!("{n}.rs")).collect();
    assert_eq!(files, want_files, "files in fuzz/fuzz_targets");
}
