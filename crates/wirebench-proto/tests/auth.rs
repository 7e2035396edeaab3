//! Tests of `wirebench_proto::auth`.

use wirebench_model::spec::TestSpec;
use wirebench_proto::auth::*;

const KEY: &str = "00112233445566778899aabbccddeeff";

fn table() -> KeyTable {
    KeyTable::parse(&format!("# keys\n\nalice {KEY}\nbob {KEY}{KEY}\n")).unwrap()
}

fn nonce(b: u8) -> Nonce {
    Nonce([b; NONCE_BYTES])
}

#[test]
fn proof_verifies() {
    let t = table();
    let spec = TestSpec::stream_default();
    let key = t.get("alice").unwrap();
    let p = prove(key, &nonce(1), "alice", "srv", &spec);
    assert_eq!(
        t.verify(Some(&p), &nonce(1), "srv", &spec).unwrap(),
        "alice"
    );
}

#[test]
fn every_failure_is_the_same_error() {
    let t = table();
    let spec = TestSpec::stream_default();
    let key = t.get("alice").unwrap().clone();
    let good = prove(&key, &nonce(1), "alice", "srv", &spec);
    let mut other_spec = spec.clone();
    other_spec.common.flows = 2;
    let wrong_key = Key::from_hex(&KEY.replace('0', "1")).unwrap();
    let cases: Vec<(Option<AuthProof>, Nonce, &str, &TestSpec)> = vec![
        // replayed under a new nonce
        (Some(good.clone()), nonce(2), "srv", &spec),
        // another server
        (Some(good.clone()), nonce(1), "other", &spec),
        // the spec was altered
        (Some(good.clone()), nonce(1), "srv", &other_spec),
        // wrong key
        (
            Some(prove(&wrong_key, &nonce(1), "alice", "srv", &spec)),
            nonce(1),
            "srv",
            &spec,
        ),
        // unknown identity, empty identity, 4 KiB identity
        (
            Some(prove(&key, &nonce(1), "mallory", "srv", &spec)),
            nonce(1),
            "srv",
            &spec,
        ),
        (
            Some(AuthProof {
                identity: String::new(),
                mac: good.mac.clone(),
            }),
            nonce(1),
            "srv",
            &spec,
        ),
        (
            Some(AuthProof {
                identity: "a".repeat(4096),
                mac: good.mac.clone(),
            }),
            nonce(1),
            "srv",
            &spec,
        ),
        // malformed MACs
        (
            Some(AuthProof {
                identity: "alice".into(),
                mac: String::new(),
            }),
            nonce(1),
            "srv",
            &spec,
        ),
        (
            Some(AuthProof {
                identity: "alice".into(),
                mac: "zz".repeat(32),
            }),
            nonce(1),
            "srv",
            &spec,
        ),
        (
            Some(AuthProof {
                identity: "alice".into(),
                mac: format!("{}00", good.mac),
            }),
            nonce(1),
            "srv",
            &spec,
        ),
        // no proof at all
        (None, nonce(1), "srv", &spec),
    ];
    for (i, (p, n, srv, s)) in cases.into_iter().enumerate() {
        let e = t.verify(p.as_ref(), &n, srv, s).unwrap_err();
        assert_eq!(e, AuthError::Failed, "case {i}");
        assert_eq!(e.to_string(), "authentication failed", "case {i}");
    }
}

#[test]
fn key_file_errors_name_the_line() {
    for (text, line) in [
        ("alice\n", 1),
        (&format!("# c\nalice {KEY} extra\n") as &str, 2),
        ("alice 0011\n", 1),
        (&format!("alice {KEY}x\n"), 1),
        (&format!("bad/name {KEY}\n"), 1),
        (&format!("alice {KEY}\nalice {KEY}\n"), 2),
        ("", 0),
        ("# only comments\n", 0),
    ] {
        let e = KeyTable::parse(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
    }
    assert_eq!(table().len(), 2);
    assert!(format!("{:?}", table().get("alice").unwrap()).contains("16 bytes"));
}

#[test]
fn hex_round_trip() {
    let n = Nonce([0xa5; NONCE_BYTES]);
    assert_eq!(Nonce::from_hex(&n.to_hex()), Some(n));
    assert_eq!(Nonce::from_hex("00"), None);
    assert_eq!(Key::from_hex(KEY).unwrap().to_hex(), KEY);
}

#[test]
fn identities() {
    assert!(valid_identity("ci-runner_1@lab.example"));
    assert!(!valid_identity(""));
    assert!(!valid_identity(&"a".repeat(65)));
    assert!(!valid_identity("a b"));
}
