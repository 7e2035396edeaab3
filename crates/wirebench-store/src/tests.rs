//! The store against real SQLite files in temporary directories.

use super::*;

fn sample(i: i64, tags: &[(&str, &str)]) -> NewResult {
    NewResult {
        kind: ResultKind::Run,
        started_unix_ms: 1_700_000_000_000 + i,
        title: Some(format!("t{i}")),
        workload: Some(if i % 2 == 0 { "stream" } else { "rr" }.into()),
        status: Some("completed".into()),
        client_host: Some("alpha".into()),
        server_host: Some(if i % 3 == 0 { "beta" } else { "gamma" }.into()),
        kernel: Some("6.1.0".into()),
        figures: Headline {
            throughput_bps: Some(1e9 + i as f64),
            ..Headline::default()
        },
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        source: Source::Cli,
        document: format!("{{\"n\":{i}}}"),
    }
}

#[test]
fn save_list_get_delete_prune() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("sub/history.db")).unwrap();
    assert_eq!(s.version().unwrap(), SCHEMA_VERSION);
    let ids: Vec<i64> = (0..6)
        .map(|i| {
            s.save(&sample(i, &[("kernel", if i < 3 { "a" } else { "b" })]), 0)
                .unwrap()
        })
        .collect();
    let all = s.list(&Filter::default()).unwrap();
    assert_eq!(all.len(), 6);
    assert_eq!(all[0].id, ids[5], "newest first");
    let f = Filter {
        tags: vec![("kernel".into(), "b".into())],
        workload: Some("stream".into()),
        ..Filter::default()
    };
    let got: Vec<i64> = s.list(&f).unwrap().iter().map(|r| r.id).collect();
    assert_eq!(got, vec![ids[4]]);
    let f = Filter {
        host: Some("beta".into()),
        order: Order::OldestFirst,
        ..Filter::default()
    };
    assert_eq!(s.ids(&f).unwrap(), vec![ids[0], ids[3]]);
    let (row, doc) = s.get(ids[2]).unwrap().unwrap();
    assert_eq!(doc, "{\"n\":2}");
    assert_eq!(row.tags, vec![("kernel".to_string(), "a".to_string())]);
    assert!(s.delete(ids[2]).unwrap());
    assert!(!s.delete(ids[2]).unwrap());
    assert!(s.get(ids[2]).unwrap().is_none());
    // Tags went with it (ON DELETE CASCADE).
    let n: i64 = s
        .connection()
        .query_row(
            "SELECT count(*) FROM tags WHERE result_id = ?1",
            [ids[2]],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 0);
    assert_eq!(s.prune(1_700_000_000_000 + 4).unwrap(), 3);
    assert_eq!(s.list(&Filter::default()).unwrap().len(), 2);
    assert_eq!(s.integrity_check().unwrap(), "ok");
}

#[test]
fn migrates_a_version_1_file_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    {
        let mut old = Store::open_at(&path, 1).unwrap();
        assert_eq!(old.version().unwrap(), 1);
        // A version-1 row, written with version 1's columns only (no `source`).
        old.connection()
            .execute(
                "INSERT INTO results (kind, started_unix_ms, saved_unix_ms, workload, document)
                 VALUES ('run', 5, 6, 'stream', '{}')",
                [],
            )
            .unwrap();
        let has_source = old
            .connection()
            .prepare("SELECT source FROM results")
            .is_ok();
        assert!(!has_source, "version 1 has no source column");
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.version().unwrap(), SCHEMA_VERSION);
    let rows = s.list(&Filter::default()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].source, "cli",
        "the new column's default fills old rows"
    );
    assert_eq!(rows[0].workload.as_deref(), Some("stream"));
}

#[test]
fn a_newer_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let mut s = Store::open(&path).unwrap();
    s.connection()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(s);
    assert!(matches!(Store::open(&path), Err(StoreError::TooNew { .. })));
}

#[test]
fn a_corrupt_file_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    std::fs::write(&path, vec![0x5a_u8; 8192]).unwrap();
    let e = Store::open(&path).err().expect("garbage is not a database");
    assert!(e.to_string().contains("not a database"), "{e}");
    // The file is left as it was: the user's evidence, not ours to replace.
    assert_eq!(std::fs::read(&path).unwrap(), vec![0x5a_u8; 8192]);
}

#[test]
fn an_uncreatable_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    // Root writes anywhere it has permission bits for, so a path through a regular file
    // (ENOTDIR) is the unwritable place every user meets.
    let e = Store::open(&file.join("history.db")).err().unwrap();
    assert!(matches!(e, StoreError::Directory { .. }), "{e}");
}

#[test]
fn concurrent_writers_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    drop(Store::open(&path).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                // Each thread its own connection, as separate processes would have.
                let mut s = Store::open(&path).unwrap();
                for i in 0..25 {
                    s.save(&sample(t * 100 + i, &[("writer", &t.to_string())]), 0)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.list(&Filter::default()).unwrap().len(), 100);
    assert_eq!(s.integrity_check().unwrap(), "ok");
}

/// Not a test of its own: the child process of `sigkill_during_saves_leaves_whole_results`,
/// saving results with 20 tags each in a loop until it is killed.
#[test]
fn child_saver() {
    let Ok(path) = std::env::var("WIREBENCH_STORE_CHILD_DB") else {
        return;
    };
    let mut s = Store::open(Path::new(&path)).unwrap();
    let tags: Vec<(String, String)> = (0..20).map(|k| (format!("k{k}"), "v".into())).collect();
    let tag_refs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut r = sample(0, &tag_refs);
    r.document = "x".repeat(200_000);
    // Bounded: the parent kills it long before.
    for i in 0..100_000 {
        r.started_unix_ms = i;
        s.save(&r, 0).unwrap();
        if i == 0 {
            println!("saving");
        }
    }
}

#[test]
fn sigkill_during_saves_leaves_whole_results() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    for round in 0..3u64 {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::child_saver",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("WIREBENCH_STORE_CHILD_DB", &path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for its first committed save, then kill it at a different moment each round
        // (each save writes ~200 kB, a few ms: the kill lands inside one most of the time).
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("saving") {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "child ended early");
        }
        std::thread::sleep(Duration::from_millis(20 + 37 * round));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let s = Store::open(&path).unwrap();
        assert_eq!(s.integrity_check().unwrap(), "ok");
        // Every result that is there is whole: its document and all 20 tags.
        let rows = s.list(&Filter::default()).unwrap();
        assert!(!rows.is_empty());
        for row in &rows {
            assert_eq!(row.tags.len(), 20, "result {} lost tags", row.id);
        }
        let docs = s
            .documents(&rows.iter().map(|r| r.id).collect::<Vec<_>>())
            .unwrap();
        assert!(docs.iter().all(|(_, d)| d.len() == 200_000));
    }
}

/// Many connections opening one new file at the same instant (as clients started together
/// do): each one opens, migrates and saves, none gives up on a lock. Repeated on fresh files
/// because the race is in the first opening (the switch to WAL); without the retry of the
/// whole opening it failed with "database is locked" in a CI run of two processes.
#[test]
fn connections_opening_a_new_file_at_once_all_save() {
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        let start = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            for i in 0..8 {
                let (path, start) = (&path, &start);
                scope.spawn(move || {
                    start.wait();
                    let mut s = Store::open(path)
                        .unwrap_or_else(|e| panic!("round {round}, opener {i}: {e}"));
                    s.save(&sample(i, &[]), 0)
                        .unwrap_or_else(|e| panic!("round {round}, saver {i}: {e}"));
                });
            }
        });
        let s = Store::open(&path).unwrap();
        assert_eq!(
            s.list(&Filter::default()).unwrap().len(),
            8,
            "round {round}"
        );
    }
}
