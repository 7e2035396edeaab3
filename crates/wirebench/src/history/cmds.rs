//! `wirebench history list|show|export|delete|prune|import`.

use std::path::{Path, PathBuf};

use clap::Args;
use wirebench_model::result::{iso8601_utc, RunRecord, RunResult, RunStatus};
use wirebench_model::side::SideReport;
use wirebench_model::spec::TestSpec;
use wirebench_model::text::escape;
use wirebench_report::print::{self, units::RateUnit};
use wirebench_store::{Filter, Row, Source, Store};

use super::save::{entry, now_ms};
use super::select::{parse_date, parse_selector, parse_tag};
use crate::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// `history list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only results started at or after DATE (YYYY-MM-DD, YYYY-MM-DDTHH:MM UTC, or an age:
    /// 7d, 12h).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only this workload (stream, rr, crr, udp_rr, udp_stream).
    #[arg(long, value_name = "W")]
    pub workload: Option<String>,
    /// Only results with this tag (repeatable: all of them).
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<(String, String)>,
    /// Only results with this host at either end.
    #[arg(long, value_name = "H")]
    pub host: Option<String>,
    /// At most N results, newest first (0: all).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    /// The rows as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// `history show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The result's id.
    pub id: i64,
    /// Its JSON document instead of the human report.
    #[arg(long, conflicts_with_all = ["verbose", "quiet"])]
    pub json: bool,
    /// The whole human report (as `-v` printed it).
    #[arg(short = 'v', long, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Only the result's summary line.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// A stored document for people: a test or a sweep as its command printed it; a study as
/// its summary of cells and points (`wirebench report` on its directory draws it).
fn shown(row: &Row, doc: &str, a: &ShowArgs) -> String {
    match row.kind.as_str() {
        "sweep" => match serde_json::from_str::<wirebench_model::sweep::SweepResult>(doc) {
            Ok(sw) => print::sweep::summary(&sw),
            Err(e) => format!("{}\n(the stored sweep cannot be read: {e})\n", row_line(row)),
        },
        "study" => match serde_json::from_str::<super::save::StoredStudy>(doc) {
            Ok(st) => format!(
                "{}\nstudy \"{}\": {} cell(s), {} point(s), {:?}; its JSON: history show {} --json\n",
                row_line(row),
                escape(&st.manifest.title),
                st.manifest.cells.len(),
                st.points.len(),
                st.manifest.status,
                row.id
            ),
            Err(e) => format!("{}\n(the stored study cannot be read: {e})\n", row_line(row)),
        },
        _ => match RunResult::from_json(doc) {
            Ok(r) => print::human_with(
                &r,
                print::HumanOptions {
                    verbosity: crate::output::verbosity(a.verbose, a.quiet),
                    ..Default::default()
                },
            ),
            Err(e) => format!("{}\n(the stored result cannot be read: {e})\n", row_line(row)),
        },
    }
}

/// `history export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// An id or a selector (KEY=VALUE, workload:W, host:H, since:DATE, last:N, ...).
    pub selector: String,
    /// JSON: the document, or an array of them when several match.
    #[arg(long, conflicts_with = "csv", required_unless_present = "csv")]
    pub json: bool,
    /// CSV: each result's rows under one header.
    #[arg(long)]
    pub csv: bool,
}

/// `history delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The result's id.
    pub id: i64,
}

/// `history prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Delete the results that started more than DAYS days ago.
    #[arg(long, value_name = "DAYS")]
    pub older_than: f64,
}

/// `history import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Result JSON files (`--json` / `-o` output) and the daemon's `--records` files (one
    /// record a line).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// A KEY=VALUE tag for every imported result (repeatable).
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<(String, String)>,
}

/// Open the database or say why not.
pub(crate) fn open(path: &Path) -> Result<Store, i32> {
    Store::open(path).map_err(|e| {
        eprintln!("wirebench history: {}: {e}", path.display());
        EXIT_FAILED
    })
}

/// `history list`.
pub fn list(path: &Path, a: &ListArgs) -> i32 {
    let since = match a
        .since
        .as_deref()
        .map(|d| parse_date(d, now_ms()))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("wirebench history list: --since {e}");
            return EXIT_USAGE;
        }
    };
    let f = Filter {
        since_unix_ms: since,
        workload: a.workload.clone(),
        tags: a.tags.clone(),
        host: a.host.clone(),
        limit: (a.limit > 0).then_some(a.limit),
        ..Filter::default()
    };
    let store = match open(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let rows = match store.list(&f) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("wirebench history list: {}: {e}", path.display());
            return EXIT_FAILED;
        }
    };
    let mut out = String::new();
    if a.json {
        let v: Vec<serde_json::Value> = rows.iter().map(row_json).collect();
        out = serde_json::to_string_pretty(&v).unwrap_or_default();
        out.push('\n');
    } else {
        out.push_str(&format!(
            "{:>6}  {:<20}  {:<10}  {:<24}  {:>14}  {:>10}  {:>10}  TAGS / TITLE\n",
            "ID", "STARTED (UTC)", "WORKLOAD", "CLIENT -> SERVER", "THROUGHPUT", "TX/S", "RTT P99"
        ));
        for r in &rows {
            out.push_str(&row_line(r));
        }
    }
    print_out(&out);
    EXIT_OK
}

fn row_line(r: &Row) -> String {
    let opt = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map(f).unwrap_or_else(|| "-".into());
    let started = iso8601_utc(u64::try_from(r.started_unix_ms).unwrap_or(0));
    let hosts = format!(
        "{} -> {}",
        r.client_host.as_deref().unwrap_or("?"),
        r.server_host.as_deref().unwrap_or("?")
    );
    let mut extra: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if let Some(t) = &r.title {
        extra.push(format!("\"{t}\""));
    }
    escape(&format!(
        "{:>6}  {:<20}  {:<10}  {:<24}  {:>14}  {:>10}  {:>10}  {}",
        r.id,
        started.get(..19).unwrap_or(&started),
        r.workload.as_deref().unwrap_or(&r.kind),
        hosts,
        opt(r.figures.throughput_bps, &|x| RateUnit::AutoBits.rate(x)),
        opt(r.figures.transactions_per_s, &print::units::number),
        opt(r.figures.rtt_p99_ns, &print::units::duration_ns),
        extra.join(" ")
    )) + "\n"
}

fn row_json(r: &Row) -> serde_json::Value {
    serde_json::json!({
        "id": r.id,
        "kind": r.kind,
        "started_unix_ms": r.started_unix_ms,
        "title": r.title,
        "workload": r.workload,
        "status": r.status,
        "client_host": r.client_host,
        "server_host": r.server_host,
        "kernel": r.kernel,
        "throughput_bps": r.figures.throughput_bps,
        "transactions_per_s": r.figures.transactions_per_s,
        "rtt_p50_ns": r.figures.rtt_p50_ns,
        "rtt_p99_ns": r.figures.rtt_p99_ns,
        "source": r.source,
        "tags": r.tags.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
    })
}

fn print_out(s: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

/// The stored documents a selector picks, oldest first, parsed; or the exit code.
pub(crate) fn load(store: &Store, selector: &str) -> Result<Vec<(i64, RunResult)>, String> {
    let f = parse_selector(selector, now_ms())?;
    let mut ids = store.ids(&f).map_err(|e| e.to_string())?;
    ids.reverse();
    let docs = store.documents(&ids).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(docs.len());
    for (id, d) in docs {
        match RunResult::from_json(&d) {
            Ok(r) => out.push((id, r)),
            Err(e) => tracing::warn!("result {id} is not a RunResult ({e}); left out"),
        }
    }
    if out.is_empty() {
        return Err(format!("'{selector}' selects no stored test result"));
    }
    Ok(out)
}

/// `history show`.
pub fn show(path: &Path, a: &ShowArgs) -> i32 {
    let store = match open(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    match store.get(a.id) {
        Ok(Some((_, doc))) if a.json => print_out(&format!("{doc}\n")),
        Ok(Some((row, doc))) => print_out(&shown(&row, &doc, a)),
        Ok(None) => {
            eprintln!("wirebench history show: no result {}", a.id);
            return EXIT_FAILED;
        }
        Err(e) => {
            eprintln!("wirebench history show: {}: {e}", path.display());
            return EXIT_FAILED;
        }
    }
    EXIT_OK
}

/// `history export`.
pub fn export(path: &Path, a: &ExportArgs) -> i32 {
    let store = match open(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let results = match load(&store, &a.selector) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("wirebench history export: {e}");
            return EXIT_FAILED;
        }
    };
    if a.csv {
        let mut out = String::new();
        for (i, (_, r)) in results.iter().enumerate() {
            let text = print::csv(r);
            let skip = usize::from(i > 0);
            for line in text.lines().skip(skip) {
                out.push_str(line);
                out.push('\n');
            }
        }
        print_out(&out);
    } else if results.len() == 1 {
        print_out(&print::json(&results[0].1));
    } else {
        let v: Vec<&RunResult> = results.iter().map(|(_, r)| r).collect();
        print_out(&(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"));
    }
    EXIT_OK
}

/// `history delete`.
pub fn delete(path: &Path, a: &DeleteArgs) -> i32 {
    let mut store = match open(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    match store.delete(a.id) {
        Ok(true) => EXIT_OK,
        Ok(false) => {
            eprintln!("wirebench history delete: no result {}", a.id);
            EXIT_FAILED
        }
        Err(e) => {
            eprintln!("wirebench history delete: {}: {e}", path.display());
            EXIT_FAILED
        }
    }
}

/// `history prune`.
pub fn prune(path: &Path, a: &PruneArgs) -> i32 {
    if !(a.older_than.is_finite() && a.older_than >= 0.0) {
        eprintln!("wirebench history prune: --older-than must be a number of days >= 0");
        return EXIT_USAGE;
    }
    let mut store = match open(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let before = now_ms() - (a.older_than * 86_400_000.0) as i64;
    match store.prune(before) {
        Ok(n) => {
            println!("deleted {n} result{}", if n == 1 { "" } else { "s" });
            EXIT_OK
        }
        Err(e) => {
            eprintln!("wirebench history prune: {}: {e}", path.display());
            EXIT_FAILED
        }
    }
}

/// `history import`.
pub fn import(path: &Path, a: &ImportArgs) -> i32 {
    let mut store = match open(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let mut code = EXIT_OK;
    for file in &a.files {
        let results = match std::fs::read_to_string(file) {
            Ok(text) => parse_import(&text),
            Err(e) => Err(e.to_string()),
        };
        let results = match results {
            Ok(r) => r,
            Err(e) => {
                eprintln!("wirebench history import: {}: {e}", file.display());
                code = EXIT_FAILED;
                continue;
            }
        };
        let mut ids = Vec::new();
        for r in &results {
            match store.save(&entry(r, &a.tags, Source::Import), now_ms()) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    eprintln!("wirebench history import: {}: {e}", path.display());
                    return EXIT_FAILED;
                }
            }
        }
        println!(
            "{}: imported {} result(s) {:?}",
            file.display(),
            ids.len(),
            ids
        );
    }
    code
}

/// A file's results: one RunResult document, or JSON lines (RunResults or the daemon's
/// test records).
fn parse_import(text: &str) -> Result<Vec<RunResult>, String> {
    if let Ok(r) = RunResult::from_json(text) {
        return Ok(vec![r]);
    }
    let mut out = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let r = RunResult::from_json(line)
            .map_err(|e| e.to_string())
            .or_else(|_| from_record(line))
            .map_err(|e| {
                format!(
                    "line {}: neither a RunResult nor a daemon record: {e}",
                    n + 1
                )
            })?;
        out.push(r);
    }
    if out.is_empty() {
        return Err("no result in the file".into());
    }
    Ok(out)
}

/// A daemon record (`serve --records`) as a RunResult: one run, summarized from both ends'
/// reports as the client would have.
pub fn from_record(line: &str) -> Result<RunResult, String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let field = |k: &str| v.get(k).cloned().unwrap_or(serde_json::Value::Null);
    let spec: TestSpec = serde_json::from_value(field("spec")).map_err(|e| format!("spec: {e}"))?;
    let client: Option<SideReport> =
        serde_json::from_value(field("client")).map_err(|e| format!("client: {e}"))?;
    let server: Option<SideReport> =
        serde_json::from_value(field("server")).map_err(|e| format!("server: {e}"))?;
    let started = field("admitted_unix_ms")
        .as_u64()
        .ok_or("no admitted_unix_ms")?;
    let completed = field("status").as_str() == Some("completed");
    let boot = |r: &Option<SideReport>| r.as_ref().and_then(|r| r.env.boot_id.clone());
    let same = boot(&client).is_some() && boot(&client) == boot(&server);
    let summary = client
        .as_ref()
        .map(|c| wirebench_analysis::summarize(&spec, c, server.as_ref(), same));
    let status = if completed && summary.is_some() {
        RunStatus::Completed
    } else {
        RunStatus::Aborted
    };
    let mut r = wirebench_net::runner::failed_result(
        Some(spec),
        field("peer").as_str().map(str::to_string),
        false,
        wirebench_model::error::ErrorInfo::new(
            wirebench_model::error::ErrorKind::Protocol,
            String::new(),
        ),
    );
    r.error = None;
    r.status = status;
    r.started_unix_ms = started;
    r.started_utc = iso8601_utc(started);
    r.runs = vec![RunRecord {
        index: 0,
        status,
        client,
        server,
        summary,
        iperf3: None,
    }];
    Ok(r)
}
