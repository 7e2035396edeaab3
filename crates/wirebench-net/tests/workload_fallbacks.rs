//! The workload is narrowed once: no `match` on [`WorkloadSpec`] outside `wirebench-model`
//! (whose accessors are the one place a question about "any workload" is answered) has a
//! `_ =>` arm, so that adding a workload makes every such match fail to compile instead of
//! silently taking a fallback.
//!
//! A text heuristic over `crates/*/src/**/*.rs`: within a `match` block whose top-level arm
//! patterns name `WorkloadSpec::`, a top-level `_ =>` (or `_ if … =>`) arm is a finding.
//! Comments, string and character literals are blanked first.
//!
//! [`WorkloadSpec`]: wirebench_model::spec::WorkloadSpec

use std::fs;
use std::path::{Path, PathBuf};

/// Findings tolerated, by path under `crates/` and the matched arm's first `WorkloadSpec::`
/// pattern, each with its reason (none now: every match outside the model names each
/// workload).
const ALLOWED: &[(&str, &str, &str)] = &[];

/// `s` with comments, string literals and character literals replaced by spaces (line
/// breaks kept, so that offsets map to the same lines).
fn blank(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank_to = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank_to(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = s[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
                blank_to(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(b.len());
                blank_to(&mut out, i + 1, end - 1);
                i = end;
            }
            // A character literal ('x', '\n', '{'); a lifetime has no closing quote there.
            b'\'' if b.get(i + 2) == Some(&b'\'') && b.get(i + 1) != Some(&b'\\') => {
                blank_to(&mut out, i + 1, i + 2);
                i += 3;
            }
            b'\'' if b.get(i + 1) == Some(&b'\\') && b.get(i + 3) == Some(&b'\'') => {
                blank_to(&mut out, i + 1, i + 3);
                i += 4;
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8")
}

/// The top-level arm patterns of the `match` whose block opens at `open` (a `{`).
fn arm_patterns(s: &[u8], open: usize) -> Vec<String> {
    let mut pats = Vec::new();
    let mut depth = 0usize;
    let mut start = open + 1;
    // Nesting of (), [] inside the current top-level segment.
    let mut inner = 0i32;
    let mut j = open;
    while j < s.len() {
        match s[j] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
                if depth == 1 {
                    start = j + 1;
                }
            }
            b'(' | b'[' if depth == 1 => inner += 1,
            b')' | b']' if depth == 1 => inner -= 1,
            b',' if depth == 1 && inner == 0 => start = j + 1,
            b'=' if depth == 1 && inner == 0 && s.get(j + 1) == Some(&b'>') => {
                pats.push(String::from_utf8_lossy(&s[start..j]).trim().to_string());
                start = j + 2;
            }
            _ => {}
        }
        j += 1;
    }
    pats
}

/// Every `(line, first WorkloadSpec pattern)` of a match on `WorkloadSpec` with a `_` arm.
fn findings(src: &str) -> Vec<(usize, String)> {
    let s = blank(src);
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = s[from..].find("match ") {
        let at = from + p;
        from = at + 6;
        let word_start = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        let Some(open) = s[at..].find('{').map(|o| at + o) else {
            break;
        };
        if !word_start {
            continue;
        }
        let pats = arm_patterns(b, open);
        let named = pats.iter().find(|p| p.contains("WorkloadSpec::"));
        let wildcard = pats.iter().any(|p| p == "_" || p.starts_with("_ if "));
        if let (Some(named), true) = (named, wildcard) {
            let first = named
                .split('|')
                .map(str::trim)
                .find(|x| x.contains("WorkloadSpec::"))
                .unwrap_or(named);
            let short = first[first.find("WorkloadSpec::").unwrap_or(0)..].to_string();
            out.push((s[..at].lines().count().max(1), short));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_heuristic_finds_a_wildcard_arm_and_ignores_the_rest() {
    let bad = "fn f(w: &WorkloadSpec) -> u32 {\n    match w {\n        WorkloadSpec::Stream(s) => { s.x }\n        _ => 0,\n    }\n}\n";
    assert_eq!(
        findings(bad),
        vec![(2, "WorkloadSpec::Stream(s)".to_string())]
    );
    let exhaustive = "match w {\n    WorkloadSpec::Stream(s) => match s.x { 1 => 2, _ => 3 },\n    WorkloadSpec::Rr(_) | WorkloadSpec::Crr(_) => 0,\n}\n";
    assert_eq!(findings(exhaustive), vec![]);
    let other = "match k { Some(WorkloadKind::Rr) => 1, _ => 2 } // WorkloadSpec::Rr\nlet x = \"WorkloadSpec::Rr => _ =>\";\n";
    assert_eq!(findings(other), vec![]);
    let guarded = "match &w {\n    WorkloadSpec::Stream(s) if s.x > '{' as u32 => 1,\n    _ if true => 2,\n    _ => 3,\n}";
    assert_eq!(findings(guarded).len(), 1);
}

#[test]
fn no_match_on_the_workload_spec_falls_back_outside_the_model() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf();
    let mut files = Vec::new();
    for e in fs::read_dir(&crates).expect("read crates/").flatten() {
        if e.file_name() == "wirebench-model" {
            continue;
        }
        rust_files(&e.path().join("src"), &mut files);
    }
    files.sort();
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("wirebench-net/src/workload.rs")),
        "the scan sees this crate's own sources"
    );
    let mut found = Vec::new();
    let mut allowed_seen = vec![false; ALLOWED.len()];
    for f in &files {
        let rel = f
            .strip_prefix(&crates)
            .expect("under crates/")
            .to_string_lossy()
            .replace('\\', "/");
        let src = fs::read_to_string(f).expect("read a source file");
        for (line, pat) in findings(&src) {
            match ALLOWED.iter().position(|(p, a, _)| *p == rel && *a == pat) {
                Some(i) => allowed_seen[i] = true,
                None => found.push(format!("crates/{rel}:{line}: {pat} … _ =>")),
            }
        }
    }
    assert!(
        found.is_empty(),
        "matches on WorkloadSpec with a `_ =>` fallback (name every workload, or ask a \
         wirebench-model accessor):\n{}",
        found.join("\n")
    );
    for (i, seen) in allowed_seen.iter().enumerate() {
        assert!(
            seen,
            "allow-list entry {:?} no longer matches anything: remove it",
            ALLOWED[i].0
        );
    }
}
