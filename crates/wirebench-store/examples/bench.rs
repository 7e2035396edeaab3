//! Timing the history: `cargo run --release -p wirebench-store --example bench -- DIR [N]`.
//!
//! Builds `DIR/bench.db` with N results (default 100,000; 1 KB documents, 3 tags each,
//! 5 workloads, 20 hosts, timestamps a minute apart), then times (a) opening the database
//! and saving one more result with a 200 KB document, as a test's save does, 20 times; and
//! (b) the queries `history list` runs: the newest 50, a workload, a tag, a host, and all
//! rows. Prints medians in milliseconds.

use std::time::Instant;

use wirebench_store::{Filter, Headline, NewResult, Store};

fn result(i: i64, doc: &str) -> NewResult {
    let w = ["stream", "rr", "crr", "udp_rr", "udp_stream"][(i % 5) as usize];
    NewResult {
        started_unix_ms: 1_700_000_000_000 + i * 60_000,
        title: Some(format!("result {i}")),
        workload: Some(w.into()),
        status: Some("completed".into()),
        client_host: Some(format!("client{}", i % 20)),
        server_host: Some(format!("server{}", i % 20)),
        kernel: Some("6.12.0".into()),
        figures: Headline {
            throughput_bps: Some(1e10 + i as f64),
            ..Headline::default()
        },
        tags: vec![
            ("build".into(), format!("b{}", i / 1000)),
            ("kernel".into(), format!("6.{}", i % 13)),
            ("run".into(), i.to_string()),
        ],
        document: doc.to_string(),
        ..NewResult::default()
    }
}

fn median_ms(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time<T>(f: impl Fn() -> T) -> f64 {
    let v = (0..20)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    median_ms(v)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("usage: bench DIR [N]"));
    let n: i64 = args.next().map(|s| s.parse().unwrap()).unwrap_or(100_000);
    let path = dir.join("bench.db");
    let _ = std::fs::remove_file(&path);
    let small = "x".repeat(1024);
    let t = Instant::now();
    {
        let mut s = Store::open(&path).unwrap();
        s.connection().execute_batch("BEGIN").unwrap();
        for i in 0..n {
            s.save_in_open_transaction(&result(i, &small), 0).unwrap();
        }
        s.connection().execute_batch("COMMIT").unwrap();
    }
    println!("built {n} results in {:.1} s", t.elapsed().as_secs_f64());
    let big = "y".repeat(200 * 1024);
    let save = time(|| {
        let mut s = Store::open(&path).unwrap();
        s.save(&result(n, &big), 0).unwrap()
    });
    println!("open + save one 200 KB result: {save:.2} ms (median of 20)");
    let s = Store::open(&path).unwrap();
    let q = |f: Filter| time(|| s.list(&f).unwrap().len());
    let newest = q(Filter {
        limit: Some(50),
        ..Filter::default()
    });
    let workload = q(Filter {
        workload: Some("rr".into()),
        limit: Some(50),
        ..Filter::default()
    });
    let tag = q(Filter {
        tags: vec![("build".into(), "b42".into())],
        limit: Some(50),
        ..Filter::default()
    });
    let host = q(Filter {
        host: Some("server7".into()),
        limit: Some(50),
        ..Filter::default()
    });
    let all = q(Filter::default());
    println!(
        "list (median of 20, ms): newest 50 {newest:.2}; workload {workload:.2}; tag {tag:.2}; \
         host {host:.2}; all {} rows {all:.1}",
        n + 20
    );
}
