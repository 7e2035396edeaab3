//! Saving a result (a test's, a sweep's or a study's) to the history: the columns extracted from the document, one
//! transaction, and a warning instead of a failure when the database cannot take it (the
//! result has been printed and written to `-o` before the save is tried).

use std::path::Path;
use std::time::Instant;

use wirebench_analysis::compare::values;
use wirebench_model::compare::Figure;
use wirebench_model::result::RunResult;
use wirebench_model::side::HostRole;
use wirebench_model::study::{StudyManifest, StudyPoint};
use wirebench_model::sweep::SweepResult;
use wirebench_stats::hypothesis::median;
use wirebench_store::{Headline, NewResult, ResultKind, Source, Store};

use super::SaveArgs;

/// The row to store for a result.
pub fn entry(r: &RunResult, tags: &[(String, String)], source: Source) -> NewResult {
    let side = |host: HostRole| {
        r.runs
            .iter()
            .filter_map(|run| match host {
                HostRole::Client => run.client.as_ref(),
                HostRole::Server => run.server.as_ref(),
            })
            .next()
    };
    let client = side(HostRole::Client);
    let server = side(HostRole::Server);
    let fig = |want: Figure| {
        values(std::slice::from_ref(r))
            .into_iter()
            .find(|(f, _)| *f == want)
            .map(|(_, v)| median(&v.runs))
            .filter(|x| x.is_finite())
    };
    NewResult {
        kind: ResultKind::Run,
        started_unix_ms: i64::try_from(r.started_unix_ms).unwrap_or(i64::MAX),
        title: r.title.clone(),
        workload: r.spec.as_ref().map(|s| s.kind().as_str().to_string()),
        status: serde_json::to_value(r.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string)),
        client_host: client.and_then(|c| c.env.hostname.clone()),
        server_host: server
            .and_then(|s| s.env.hostname.clone())
            .or_else(|| r.server_address.clone()),
        kernel: client.and_then(|c| c.env.kernel_release.clone()),
        figures: Headline {
            throughput_bps: fig(Figure::Throughput),
            transactions_per_s: fig(Figure::TransactionsPerS),
            rtt_p50_ns: fig(Figure::RttP50),
            rtt_p99_ns: fig(Figure::RttP99),
        },
        tags: tags.to_vec(),
        source,
        document: serde_json::to_string(r).unwrap_or_default(),
    }
}

/// Save `r` as `a` asks (nothing with --no-save or when nothing was measured). Never fails:
/// a database that cannot take the result gets a warning on stderr naming it and why.
pub fn save_run(a: &SaveArgs, r: &RunResult) {
    if !r.runs.is_empty() {
        save_entry(a, &entry(r, &a.tags, Source::Cli), "result");
    }
}

/// The row of a sweep: its document, the title its test flags gave (-T) and what identifies
/// it. A curve has no one headline figure, so none is stored; `history show` prints the
/// sweep.
pub fn sweep_entry(
    sw: &SweepResult,
    title: Option<String>,
    tags: &[(String, String)],
) -> NewResult {
    let first = sw.points.iter().find_map(|p| p.result.runs.first());
    NewResult {
        kind: ResultKind::Sweep,
        started_unix_ms: i64::try_from(sw.started_unix_ms).unwrap_or(i64::MAX),
        title,
        workload: Some(sw.test.as_str().to_string()),
        status: serde_json::to_value(sw.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string)),
        client_host: first
            .and_then(|r| r.client.as_ref())
            .and_then(|c| c.env.hostname.clone()),
        server_host: first
            .and_then(|r| r.server.as_ref())
            .and_then(|s| s.env.hostname.clone()),
        kernel: first
            .and_then(|r| r.client.as_ref())
            .and_then(|c| c.env.kernel_release.clone()),
        figures: Headline::default(),
        tags: tags.to_vec(),
        source: Source::Cli,
        document: serde_json::to_string(sw).unwrap_or_default(),
    }
}

/// A stored study: its manifest and its points.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredStudy {
    /// The manifest (cells, expectations, status).
    pub manifest: StudyManifest,
    /// Every point measured.
    pub points: Vec<StudyPoint>,
}

/// The row of a study.
pub fn study_entry(
    manifest: &StudyManifest,
    points: &[StudyPoint],
    tags: &[(String, String)],
) -> NewResult {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        manifest: &'a StudyManifest,
        points: &'a [StudyPoint],
    }
    let host = manifest.host.as_ref();
    NewResult {
        kind: ResultKind::Study,
        started_unix_ms: i64::try_from(manifest.started_unix_ms).unwrap_or(i64::MAX),
        title: Some(manifest.title.clone()),
        workload: None,
        status: serde_json::to_value(manifest.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string)),
        client_host: host.and_then(|h| h.hostname.clone()),
        server_host: host.and_then(|h| h.hostname.clone()),
        kernel: host.and_then(|h| h.kernel_release.clone()),
        figures: Headline::default(),
        tags: tags.to_vec(),
        source: Source::Cli,
        document: serde_json::to_string(&Doc { manifest, points }).unwrap_or_default(),
    }
}

/// Save a row (a test's, a sweep's or a study's) as `a` asks; never fails (a warning names
/// the database and why). `what` names it in the warning.
pub fn save_entry(a: &SaveArgs, e: &NewResult, what: &str) {
    if a.no_save {
        return;
    }
    let Some(path) = super::db_path(a.db.as_ref()) else {
        eprintln!(
            "wirebench: warning: {what} not saved to the history: neither XDG_DATA_HOME nor \
             HOME is set (give --db PATH, or --no-save)"
        );
        return;
    };
    let started = Instant::now();
    match save_to(&path, e) {
        Ok(id) => tracing::debug!(
            "saved as result {id} in {} ({} ms)",
            path.display(),
            started.elapsed().as_millis()
        ),
        Err(err) => eprintln!(
            "wirebench: warning: {what} not saved to the history database {}: {err} (the \
             output above is complete; --no-save skips the database)",
            path.display()
        ),
    }
}

/// Open, save, close; the new id.
pub fn save_to(path: &Path, e: &NewResult) -> Result<i64, wirebench_store::StoreError> {
    let mut s = Store::open(path)?;
    s.save(e, now_ms())
}

/// Now, milliseconds since the epoch.
pub fn now_ms() -> i64 {
    i64::try_from(wirebench_net::runner::unix_ms()).unwrap_or(i64::MAX)
}
