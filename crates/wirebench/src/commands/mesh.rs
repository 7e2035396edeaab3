//! `wirebench mesh`: tests between many hosts' daemons, the pairs from a topology, at most
//! one throughput test per host at a time ([`crate::mesh`]). Each test runs as a
//! third-party test: the coordinator asks the client host's daemon to test against the
//! server host's daemon. Progress as tests end; the mesh's document (`--json`), a results
//! directory (`-o DIR`: `mesh.json`, `tests/NNNN.json`, `report.html`) and one history row
//! per test.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use wirebench_model::mesh::{MeshResult, MeshStatus, MeshTest, MESH_SCHEMA_VERSION};
use wirebench_model::result::RunStatus;
use wirebench_net::runner::unix_ms;
use wirebench_report::print::mesh as show;
use wirebench_store::{ResultKind, Source};

use crate::history::SaveArgs;
use crate::mesh::exec::{execute, Outcome, TestRunner};
use crate::mesh::plan::{self, MeshPlan};
use crate::output::{write_atomically, write_derived};
use crate::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};

/// `wirebench mesh`.
#[derive(Debug, Args)]
#[command(
    after_help = "The test after `--` is any test command's line without -H/-p/-o/--json \
    (default `stream -t 5`), e.g. `wirebench mesh --hosts 10.0.0.1,10.0.0.2,10.0.0.3 -- rr -t 2`. \
    Every daemon must run `serve --allow-third-party`. See docs/MESH.md for plan files."
)]
pub struct MeshArgs {
    /// The hosts, comma-separated: addresses, ADDRESS:PORT, or DNS names (a name that
    /// resolves to several addresses, such as a Kubernetes headless Service, gives them all).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "A,B,C",
        required_unless_present = "plan",
        conflicts_with = "plan"
    )]
    pub hosts: Vec<String>,
    /// A plan file (TOML): hosts, topology (full-mesh, star, incast, ring, pairs), tests,
    /// repetitions, period, overlap (docs/MESH.md).
    #[arg(long, value_name = "PLAN.toml")]
    pub plan: Option<PathBuf>,
    /// The daemons' port where a host names none (default 5301; wins over the plan's).
    #[arg(short, long)]
    pub port: Option<u16>,
    /// Authenticate to every daemon as IDENTITY.
    #[arg(long, value_name = "IDENTITY")]
    pub auth: Option<String>,
    /// File holding the key for --auth (a key file, or the hex key alone).
    #[arg(long, value_name = "FILE", requires = "auth")]
    pub auth_key_file: Option<PathBuf>,
    /// Run the whole plan again every DURATION (seconds, or with s, m, h, d: `10m`), until
    /// interrupted or --count rounds have run.
    #[arg(long, value_name = "DURATION", value_parser = plan::parse_every)]
    pub every: Option<Duration>,
    /// With --every: how many rounds.
    #[arg(long, value_name = "N", requires = "every", value_parser = clap::value_parser!(u32).range(1..))]
    pub count: Option<u32>,
    /// Print the mesh's JSON document (docs/mesh.schema.json) at the end, nothing else.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// Write the results directory: mesh.json, tests/NNNN.json (one per test, in mesh.json's
    /// order), report.html (heatmaps per ordered pair).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Where results are saved (one row per test, kind `mesh`).
    #[command(flatten)]
    pub save: SaveArgs,
    /// The test to run for every pair, after `--` (default: stream -t 5).
    #[arg(last = true, value_name = "TEST")]
    pub test: Vec<String>,
}

fn refuse(msg: &str) -> i32 {
    eprintln!("wirebench mesh: {msg}");
    EXIT_USAGE
}

/// The plan from the flags or the file; `--every` on the command line wins.
fn plan_of(a: &MeshArgs) -> Result<MeshPlan, String> {
    let mut p = match &a.plan {
        Some(f) => {
            if !a.test.is_empty() {
                return Err(
                    "the test comes from the plan file's [[test]] lines, not after `--`".into(),
                );
            }
            plan::from_file(f, a.port)?
        }
        None => plan::from_flags(&a.hosts, a.port, &a.test, a.every)?,
    };
    if a.every.is_some() {
        p.every = a.every;
    }
    Ok(p)
}

/// The running mesh: its document, directory, progress and history.
struct Recorder<'a> {
    doc: MeshResult,
    dir: Option<&'a Path>,
    save: &'a SaveArgs,
    bar: Option<ProgressBar>,
    human: bool,
    total: usize,
    round: u32,
}

impl Recorder<'_> {
    fn say(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if self.human => println!("{line}"),
            None => {}
        }
    }

    fn seen(&mut self, outcomes: Vec<Outcome>) {
        for o in outcomes {
            let mut result = o.result;
            // The ends are other machines: this machine's cached limits do not describe them.
            wirebench_analysis::finish::finish(&mut result, None);
            let t = MeshTest {
                client: self.doc.hosts[o.client].clone(),
                server: self.doc.hosts[o.server].clone(),
                test: u32::try_from(o.test).unwrap_or(u32::MAX),
                repetition: o.repetition,
                round: self.round,
                started_unix_ms: o.started_unix_ms,
                ended_unix_ms: o.ended_unix_ms,
                result,
            };
            self.doc.tests.push(t);
            let n = self.doc.tests.len();
            let t = &self.doc.tests[n - 1];
            self.say(&show::test_line(&self.doc, t, n, self.total));
            if let Some(b) = &self.bar {
                b.set_position(n as u64);
            }
            if let Some(dir) = self.dir {
                let path = dir.join("tests").join(format!("{n:04}.json"));
                let text = serde_json::to_string_pretty(&t.result).unwrap_or_default();
                if let Err(e) = write_atomically(&path, text.as_bytes()) {
                    eprintln!("wirebench mesh: cannot write {}: {e:#}", path.display());
                }
            }
            self.save_test(n - 1);
        }
    }

    /// One history row for test `i`: its RunResult, tagged with the mesh and the pair.
    fn save_test(&self, i: usize) {
        let t = &self.doc.tests[i];
        if t.result.runs.is_empty() {
            // Nothing was measured (a host down): the mesh's document keeps the reason.
            return;
        }
        let mut tags = self.save.tags.clone();
        tags.push(("mesh".into(), self.doc.started_unix_ms.to_string()));
        tags.push(("mesh_client".into(), t.client.clone()));
        tags.push(("mesh_server".into(), t.server.clone()));
        let mut e = crate::history::save::entry(&t.result, &tags, Source::Cli);
        e.kind = ResultKind::Mesh;
        e.client_host = Some(t.client.clone());
        e.server_host = Some(t.server.clone());
        crate::history::save::save_entry(self.save, &e, "a mesh test");
    }

    /// Rewrites mesh.json and report.html.
    fn write_dir(&self) {
        let Some(dir) = self.dir else { return };
        let text = serde_json::to_string_pretty(&self.doc).unwrap_or_default();
        if let Err(e) = write_atomically(&dir.join("mesh.json"), text.as_bytes()) {
            eprintln!("wirebench mesh: cannot write mesh.json: {e:#}");
        }
        let page = wirebench_report::mesh_page::page(&self.doc);
        if let Err(e) = write_derived(&dir.join("report.html"), page.as_bytes()) {
            eprintln!("wirebench mesh: cannot write report.html: {e:#}");
        }
    }
}

/// Waits until `until`, or less if interrupted; whether it was interrupted.
fn wait_until(until: Instant, interrupt: &AtomicBool) -> bool {
    while Instant::now() < until {
        if interrupt.load(Ordering::Relaxed) {
            return true;
        }
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(100)));
    }
    interrupt.load(Ordering::Relaxed)
}

/// What each round runs.
struct Rounds<'a> {
    hosts: usize,
    jobs: &'a [wirebench_fleet::Job],
    plan: &'a MeshPlan,
    /// How many rounds (`None`: until interrupted).
    count: Option<u32>,
    per_round: usize,
}

/// Runs the rounds, each `plan.every` after the previous one's start; whether every round
/// ran to its end (false: interrupted).
fn run_rounds(
    rec: &mut Recorder,
    r: &Rounds,
    runner: &dyn TestRunner,
    interrupt: &AtomicBool,
) -> bool {
    let mut round = 0u32;
    loop {
        let round_start = Instant::now();
        rec.round = round;
        let done = execute(
            r.hosts,
            r.jobs.to_vec(),
            r.plan.overlap,
            runner,
            interrupt,
            &mut |o| rec.seen(o),
        );
        rec.doc.ended_unix_ms = unix_ms();
        rec.write_dir();
        round += 1;
        if !done {
            return false;
        }
        if r.count.is_some_and(|n| round >= n) {
            return true;
        }
        rec.total += r.per_round;
        if let Some(b) = &rec.bar {
            b.set_length(rec.total as u64);
        }
        let every = r.plan.every.unwrap_or_default();
        if wait_until(round_start + every, interrupt) {
            return false;
        }
    }
}

/// `wirebench mesh`; returns the exit code.
pub fn run(a: &MeshArgs) -> i32 {
    let plan = match plan_of(a) {
        Ok(p) => p,
        Err(e) => return refuse(&e),
    };
    let (addrs, first) = match plan::resolve_hosts(&plan) {
        Ok(x) => x,
        Err(e) => return refuse(&e),
    };
    let topology = match plan::topology_of(&plan, &first) {
        Ok(t) => t,
        Err(e) => return refuse(&e),
    };
    let classes: Vec<_> = plan.tests.iter().map(|t| t.class).collect();
    let jobs = match wirebench_fleet::topology::jobs(addrs.len(), &topology, &classes, plan.repeat)
    {
        Ok(j) => j,
        Err(e) => return refuse(&e.to_string()),
    };
    let interrupt = Arc::new(AtomicBool::new(false));
    let runner = match crate::mesh::daemons::DaemonRunner::new(
        &plan,
        &addrs,
        a.auth.as_deref(),
        a.auth_key_file.as_deref(),
        &interrupt,
    ) {
        Ok(r) => r,
        Err(e) => return refuse(&e),
    };
    if let Some(dir) = &a.output {
        if let Err(e) = std::fs::create_dir_all(dir)
            .and_then(|()| wirebench_sys::safefile::create_own_dir(&dir.join("tests")))
        {
            return refuse(&format!("-o {}: {e}", dir.display()));
        }
    }
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&interrupt));
    }
    let per_round: usize = jobs.iter().map(|j| j.clients.len()).sum();
    let rounds = match (plan.every, a.count) {
        (None, _) => Some(1),
        (Some(_), n) => n,
    };
    let human = !a.json;
    let mut command: Vec<String> = std::env::args().collect();
    if command.is_empty() {
        command.push("wirebench".into());
    }
    let now = unix_ms();
    let mut rec = Recorder {
        doc: MeshResult {
            schema_version: MESH_SCHEMA_VERSION,
            kind: "mesh".into(),
            software: wirebench_net::software(),
            command,
            hosts: addrs.iter().map(ToString::to_string).collect(),
            topology: plan.topology.name().into(),
            test_lines: plan.tests.iter().map(|t| t.line.clone()).collect(),
            started_unix_ms: now,
            ended_unix_ms: now,
            status: MeshStatus::Running,
            tests: Vec::new(),
        },
        dir: a.output.as_deref(),
        save: &a.save,
        bar: None,
        human,
        total: per_round * rounds.unwrap_or(1) as usize,
        round: 0,
    };
    if human {
        println!(
            "mesh: {} hosts, {}, {} test(s) per round{}",
            addrs.len(),
            plan.topology.name(),
            per_round,
            plan.every
                .map_or(String::new(), |e| format!(", every {}", humanize(e)))
        );
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            let b = ProgressBar::new(rec.total as u64);
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} tests, {elapsed} elapsed")
            {
                b.set_style(style);
            }
            rec.bar = Some(b);
        }
    }
    let completed = run_rounds(
        &mut rec,
        &Rounds {
            hosts: addrs.len(),
            jobs: &jobs,
            plan: &plan,
            count: rounds,
            per_round,
        },
        &runner,
        &interrupt,
    );
    if let Some(b) = &rec.bar {
        b.finish_and_clear();
    }
    rec.doc.status = if completed {
        MeshStatus::Completed
    } else {
        MeshStatus::Interrupted
    };
    rec.doc.ended_unix_ms = unix_ms();
    rec.write_dir();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rec.doc).unwrap_or_default()
        );
    } else {
        print!("{}", show::summary(&rec.doc));
        if let Some(dir) = &a.output {
            println!("results: {}", dir.display());
        }
    }
    if !completed {
        EXIT_INTERRUPTED
    } else if rec
        .doc
        .tests
        .iter()
        .any(|t| t.result.status == RunStatus::Completed)
    {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

fn humanize(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 3600.0 && s % 3600.0 == 0.0 {
        format!("{} h", s / 3600.0)
    } else if s >= 60.0 && s % 60.0 == 0.0 {
        format!("{} min", s / 60.0)
    } else {
        format!("{s} s")
    }
}
