//! docs/PROTOCOL.md speaks the version the code speaks: its title, the examples' and rules'
//! version numbers and the versioning section's history are checked against
//! [`PROTOCOL_VERSION`], so a version bump without the document fails here.

use std::path::Path;

use wirebench_proto::message::PROTOCOL_VERSION;

fn document() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/PROTOCOL.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The number right after `prefix`, at every place `prefix` is followed by one.
fn numbers_after(text: &str, prefix: &str) -> Vec<u16> {
    text.match_indices(prefix)
        .filter_map(|(i, _)| {
            let digits: String = text[i + prefix.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .collect()
}

#[test]
fn protocol_doc_title_names_the_code_version() {
    let doc = document();
    let title = doc.lines().next().expect("an empty PROTOCOL.md");
    assert_eq!(
        numbers_after(title, "version "),
        vec![PROTOCOL_VERSION],
        "title {title:?}"
    );
}

#[test]
fn protocol_doc_examples_and_rules_use_the_code_version() {
    let doc = document();
    // Every place the document states the current version rather than a past one.
    let current = [
        "\"version\": ",
        "must be `",
        "This is version ",
        "`hello.version` = ",
        "with a version other than ",
        "fields versions 5 to ",
    ];
    for prefix in current {
        let found = numbers_after(&doc.to_lowercase(), &prefix.to_lowercase());
        assert!(!found.is_empty(), "PROTOCOL.md no longer says {prefix:?}");
        for v in found {
            assert_eq!(v, PROTOCOL_VERSION, "PROTOCOL.md: {prefix:?}{v}");
        }
    }
}

#[test]
fn protocol_doc_history_covers_every_version_and_none_later() {
    let doc = document();
    let history = doc[doc
        .find("## 9. Versioning")
        .expect("PROTOCOL.md has no versioning section")..]
        .to_lowercase();
    for v in 2..=PROTOCOL_VERSION {
        assert!(
            history.contains(&format!("version {v} ")),
            "the versioning section says nothing of version {v}"
        );
    }
    let later: Vec<u16> = numbers_after(&doc.to_lowercase(), "version ")
        .into_iter()
        .filter(|&v| v > PROTOCOL_VERSION)
        .collect();
    assert!(later.is_empty(), "PROTOCOL.md names versions {later:?}");
}
