//! Running a study: for each cell, build the testbed (a lab owned by this process), read it
//! back, start a daemon inside the server namespace, run each test's sweep from a thread
//! inside the client namespace, then stop the daemon and remove the testbed. Points are
//! appended to `results.jsonl` and `points.csv` as they complete; the manifest is rewritten
//! after every cell.

use std::fs::File;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use wirebench_analysis::study::figures;
use wirebench_lab::named::{Endpoint, LabManager, LabReport};
use wirebench_model::study::{
    CellRecord, CellTest, EmulatorSettings, Level, OffloadState, Placement, QdiscState,
    StudyFactor, StudyManifest, StudyPoint, StudyStatus, SysctlValue, Testbed, TestbedEnd,
    STUDY_SCHEMA_VERSION,
};
use wirebench_model::sweep::{FactorName, SweepPoint, SweepResult, SweepStatus};
use wirebench_report::print::study as show;

use super::plan::{run_order, PlannedCell, StudyPlan, TestRun};
use crate::output::{write_atomically, write_derived};
use crate::sweep::{execute, load_previous, plan::plan as sweep_plan, runner_config_of};
use crate::sweep::{Execution, Observer};

/// Longest wait for a cell's daemon to accept connections.
const DAEMON_READY: Duration = Duration::from_secs(10);

/// The parts of a running study its sweeps' observers write to.
pub struct Shared {
    /// Every point so far (all cells).
    pub points: Vec<StudyPoint>,
    dir: PathBuf,
    jsonl: File,
    bar: Option<ProgressBar>,
    human: bool,
    done: u64,
    total: u64,
}

impl Shared {
    /// Opens `DIR/results.jsonl` for appending, after rewriting it from `points` (so that a
    /// line half-written by a killed run is gone).
    pub fn open(
        dir: &Path,
        points: Vec<StudyPoint>,
        total: u64,
        human: bool,
    ) -> std::io::Result<Shared> {
        let mut text = String::new();
        for p in &points {
            text.push_str(&serde_json::to_string(p).unwrap_or_default());
            text.push('\n');
        }
        write_atomically(&dir.join("results.jsonl"), text.as_bytes())
            .map_err(std::io::Error::other)?;
        let jsonl = wirebench_sys::safefile::open_append(&dir.join("results.jsonl"), false)?;
        let bar = (human && std::io::IsTerminal::is_terminal(&std::io::stdout())).then(|| {
            let b = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:30} {pos}/{len} points, {elapsed} elapsed, ETA {eta}",
            ) {
                b.set_style(style);
            }
            b.set_position(points.len() as u64);
            b
        });
        Ok(Shared {
            done: points.len() as u64,
            points,
            dir: dir.to_path_buf(),
            jsonl,
            bar,
            human,
            total,
        })
    }

    /// Prints a line (above the bar on a terminal).
    pub fn say(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if self.human => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            None => {}
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    fn add(&mut self, p: StudyPoint) {
        let mut line = serde_json::to_string(&p).unwrap_or_default();
        line.push('\n');
        // One write of a whole line: a reader never sees half a record from a live run.
        if let Err(e) = self.jsonl.write_all(line.as_bytes()) {
            eprintln!("wirebench study: cannot append to results.jsonl: {e}");
        }
        self.done += 1;
        self.total = self.total.max(self.done);
        self.say(&show::point_line(&p, self.done, self.total));
        if let Some(b) = &self.bar {
            b.set_length(self.total);
            b.set_position(self.done);
        }
        self.points.push(p);
        if let Err(e) = write_derived(
            &self.dir.join("points.csv"),
            show::csv(&self.points).as_bytes(),
        ) {
            eprintln!("wirebench study: cannot write points.csv: {e:#}");
        }
    }
}

/// A study point from a sweep point of cell `cell`, test `test`. Its levels are the cell's
/// and those of the test's declared factors (`declared`): a factor flag among the test's
/// plain flags has one value and is not a level of the study.
pub fn study_point(
    cell: u32,
    round: u32,
    test: &str,
    cell_levels: &[Level],
    declared: &[FactorName],
    p: &SweepPoint,
) -> StudyPoint {
    let mut levels = cell_levels.to_vec();
    levels.extend(
        p.settings
            .iter()
            .filter(|s| declared.contains(&s.factor))
            .map(|s| Level {
                factor: StudyFactor::Test(s.factor),
                value: s.value.clone(),
            }),
    );
    StudyPoint {
        schema_version: STUDY_SCHEMA_VERSION,
        cell,
        round,
        test: test.to_string(),
        levels,
        settings: p.settings.clone(),
        figures: figures(&p.result),
        result: p.result.clone(),
    }
}

/// The observer of one test's sweep in one cell.
struct CellObserver<'a> {
    shared: &'a mut Shared,
    cell: u32,
    round: u32,
    test: String,
    levels: Vec<Level>,
    declared: Vec<FactorName>,
}

impl Observer for CellObserver<'_> {
    fn grow(&mut self, by: usize) {
        self.shared.total += by as u64;
    }

    fn point(&mut self, p: &SweepPoint, _total: usize) {
        let sp = study_point(
            self.cell,
            self.round,
            &self.test,
            &self.levels,
            &self.declared,
            p,
        );
        self.shared.add(sp);
    }
}

/// Why a cell's daemon did not start.
enum StartError {
    /// The program did not run (spawn failed, or it exited before listening).
    CannotRun(String),
    /// Anything else (a slow start, a missing namespace).
    Other(String),
}

/// A daemon started inside a cell's server namespace; killed when dropped.
struct Daemon {
    child: Child,
}

impl Daemon {
    /// Starts the daemon and waits until it accepts connections; the error says whether
    /// the program could not run at all (`true`: no later cell can start one either).
    fn start(mgr: &LabManager, lab: &str, log: &Path) -> Result<Daemon, (String, bool)> {
        Self::start_inner(mgr, lab, log).map_err(|e| match e {
            StartError::Other(m) => (m, false),
            StartError::CannotRun(m) => (m, true),
        })
    }

    fn start_inner(mgr: &LabManager, lab: &str, log: &Path) -> Result<Daemon, StartError> {
        // This process' executable as the kernel holds it: runs even if the file was
        // replaced or deleted since the study started (a package upgrade).
        let exe = wirebench_lab::named::self_exe();
        let mut cmd = mgr
            .command(lab, Endpoint::Server, &exe.display().to_string())
            .map_err(|e| StartError::Other(e.to_string()))?;
        cmd.args([
            "serve",
            "--bind",
            Endpoint::Server.ipv4(),
            "--allow-unauthenticated",
            // A study's tests may ask for --profile; the daemon is the study's own, and only
            // root can reach it inside the cell's namespace.
            "--allow-profile",
            "--allow-profile-unauthenticated",
        ]);
        let out = wirebench_sys::safefile::create_log(log)
            .map_err(|e| StartError::Other(e.to_string()))?;
        let err = out
            .try_clone()
            .map_err(|e| StartError::Other(e.to_string()))?;
        // Marks the daemon as this study's (tests find leftovers by it).
        cmd.env("WIREBENCH_STUDY", lab);
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        wirebench_sys::process::kill_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| StartError::CannotRun(format!("cannot start the daemon: {e}")))?;
        let mut d = Daemon { child };
        let addr: SocketAddr = format!(
            "{}:{}",
            Endpoint::Server.ipv4(),
            wirebench_net::DEFAULT_PORT
        )
        .parse()
        .map_err(|e| StartError::Other(format!("{e}")))?;
        let client_ns = Endpoint::Client.ns(lab);
        let deadline = Instant::now() + DAEMON_READY;
        loop {
            if let Ok(Some(status)) = d.child.try_wait() {
                return Err(StartError::CannotRun(format!(
                    "the daemon exited ({status}); see {}",
                    log.display()
                )));
            }
            let ok = wirebench_sys::netns::run_in(&client_ns, || {
                TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            })
            .unwrap_or(false);
            if ok {
                return Ok(d);
            }
            if Instant::now() >= deadline {
                d.stop();
                return Err(StartError::Other(format!(
                    "the daemon did not accept connections within {DAEMON_READY:?}; see {}",
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The testbed as read back, in the model's terms.
pub fn testbed_of(r: &LabReport, levels: &[Level], placement: Placement) -> Testbed {
    let end = |e: &wirebench_lab::named::EndpointReport| TestbedEnd {
        namespace: e.namespace.clone(),
        ifname: e.ifname.clone(),
        mtu_bytes: e.mtu,
        offloads: e
            .offloads
            .iter()
            .map(|o| OffloadState {
                feature: o.feature.clone(),
                state: o.state.clone(),
            })
            .collect(),
        qdiscs: e
            .qdiscs
            .iter()
            .map(|q| QdiscState {
                kind: q.kind.clone(),
                rate_bps: q.rate_bps,
            })
            .collect(),
        congestion_default: e.cc_default.clone(),
        route_congestion: e.routes.iter().find_map(|r| r.congctl.clone()),
        sysctls: e
            .sysctls
            .iter()
            .map(|s| SysctlValue {
                key: s.key.clone(),
                value: s.value.clone(),
            })
            .collect(),
        rps_cpus: e.rps_cpus.clone(),
        xps_cpus: e.xps_cpus.clone(),
    };
    let emulator = r
        .emulator
        .as_ref()
        .and_then(|e| e.status.as_ref())
        .map(|s| EmulatorSettings {
            delay_ns: s.impair.delay_ns,
            jitter_ns: s.impair.jitter_ns,
            loss_pct: s.impair.loss_pct,
            reorder_pct: s.impair.reorder_pct,
            duplicate_pct: s.impair.duplicate_pct,
        });
    Testbed {
        lab: r.name.clone(),
        levels: levels.to_vec(),
        placement,
        client: r.client.as_ref().map(end),
        server: r.server.as_ref().map(end),
        emulator,
    }
}

/// A running study.
pub struct Runner<'a> {
    /// The plan.
    pub plan: &'a StudyPlan,
    /// The output directory.
    pub dir: PathBuf,
    /// The lab manager.
    pub mgr: LabManager,
    /// The lab name cells are built under.
    pub lab_name: String,
    /// Set by SIGINT/SIGTERM.
    pub interrupt: Arc<AtomicBool>,
    /// The manifest.
    pub manifest: StudyManifest,
    /// Points and files.
    pub shared: Shared,
    /// Set when a cell's daemon could not start at all (this program cannot be run again):
    /// every later cell would fail the same way, so the study stops.
    pub cannot_start: bool,
}

impl Runner<'_> {
    /// Writes the manifest atomically.
    pub fn write_manifest(&mut self) {
        self.manifest.ended_unix_ms = wirebench_net::runner::unix_ms();
        let json = serde_json::to_string_pretty(&self.manifest).unwrap_or_default();
        if let Err(e) = write_atomically(&self.dir.join("manifest.json"), json.as_bytes()) {
            eprintln!("wirebench study: cannot write the manifest: {e:#}");
        }
    }

    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// Runs every cell run (a cell in a round, in the manifest's interleaved order) not
    /// completed yet; false if interrupted.
    pub fn run(&mut self) -> bool {
        for j in 0..self.manifest.cells.len() {
            if self.manifest.cells[j].status == StudyStatus::Completed {
                continue;
            }
            if self.interrupted() {
                return false;
            }
            let i = self.manifest.cells[j].index as usize;
            let rec = self.run_cell(&self.plan.cells[i], j);
            self.manifest.cells[j] = rec;
            self.write_manifest();
            if self.cannot_start {
                self.shared.say(&format!(
                    "stopping the study: cell {i}'s daemon could not start ({}); every later \
                     cell would fail the same way",
                    self.manifest.cells[j].error.as_deref().unwrap_or("")
                ));
                return false;
            }
            if self.interrupted() {
                return false;
            }
        }
        true
    }

    /// One cell in one round (the manifest's record `j`), start to teardown.
    fn run_cell(&mut self, cell: &PlannedCell, j: usize) -> CellRecord {
        let mut rec = self.manifest.cells[j].clone();
        let round = rec.round.max(1);
        let repeat = self.plan.repeat();
        rec.error = None;
        let t0 = Instant::now();
        let mut spec = cell.lab.clone();
        spec.name = self.lab_name.clone();
        self.shared.say(&format!(
            "cell {}{}: building {}",
            cell.index,
            if repeat > 1 {
                format!(" (round {round} of {repeat})")
            } else {
                String::new()
            },
            show::levels_text(&cell.spec.levels)
        ));
        let lab = match self.mgr.up_owned(&spec) {
            Ok(l) => l,
            Err(e) => {
                rec.status = StudyStatus::Failed;
                rec.error = Some(format!("testbed: {e}"));
                return rec;
            }
        };
        // Made (and checked to be this user's own directory) before the first cell.
        let cell_dir = self.dir.join("cells");
        let log = cell_dir.join(if repeat > 1 {
            format!("{:04}-r{round}-daemon.log", cell.index)
        } else {
            format!("{:04}-daemon.log", cell.index)
        });
        let daemon = match Daemon::start(&self.mgr, lab.name(), &log) {
            Ok(d) => d,
            Err((e, fatal)) => {
                rec.status = StudyStatus::Failed;
                rec.error = Some(e);
                self.cannot_start = fatal;
                let _ = lab.down();
                return rec;
            }
        };
        let testbed = testbed_of(lab.report(), &cell.spec.levels, cell.placement);
        rec.testbed = Some(testbed.clone());
        rec.build_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        rec.status = StudyStatus::Completed;
        let mut measured_ms = 0.0;
        rec.tests.clear();
        for t in &cell.tests {
            let entry = &self.plan.file.tests[t.test];
            let run = &t.runs[(round - 1) as usize];
            let (status, points, ms) =
                self.run_test(cell, round, t.test, run, &testbed, lab.name());
            measured_ms += ms;
            rec.tests.push(CellTest {
                test: entry.label.clone(),
                dir: run.dir.clone(),
                points,
                status,
            });
            if status != StudyStatus::Completed {
                rec.status = status;
                break;
            }
        }
        rec.measured_ms = Some(measured_ms);
        let t1 = Instant::now();
        drop(daemon);
        if let Err(e) = lab.down() {
            rec.error
                .get_or_insert(format!("removing the testbed: {e}"));
        }
        rec.teardown_ms = Some(t1.elapsed().as_secs_f64() * 1e3);
        rec.wall_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        rec
    }

    /// One test's sweep in a cell, from a thread inside the client namespace. Returns its
    /// status, its points and the time its points measured (ms).
    fn run_test(
        &mut self,
        cell: &PlannedCell,
        round: u32,
        test: usize,
        run: &TestRun,
        testbed: &Testbed,
        lab: &str,
    ) -> (StudyStatus, u32, f64) {
        let (dir, argv) = (&run.dir, &run.argv);
        let entry = &self.plan.file.tests[test];
        let abs = self.dir.join(dir);
        let previous: Option<SweepResult> = abs
            .join("sweep.json")
            .exists()
            .then(|| load_previous(&abs).ok())
            .flatten();
        if previous
            .as_ref()
            .is_some_and(|p| p.status == SweepStatus::Completed)
        {
            let p = previous.as_ref().map_or(0, |p| p.points.len() as u32);
            return (StudyStatus::Completed, p, 0.0);
        }
        let plan = match sweep_plan(&entry.command, argv) {
            Ok(p) => p,
            Err(e) => {
                self.shared
                    .say(&format!("cell {}: {}: {e}", cell.index, entry.label));
                return (StudyStatus::Failed, 0, 0.0);
            }
        };
        if let Some(e) = previous
            .as_ref()
            .and_then(|p| crate::sweep::check_previous(p, &plan, &abs).err())
        {
            self.shared
                .say(&format!("cell {}: {}: {e}", cell.index, entry.label));
            return (StudyStatus::Failed, 0, 0.0);
        }
        if let Err(e) = std::fs::create_dir_all(&abs)
            .and_then(|()| wirebench_sys::safefile::create_own_dir(&abs.join("points")))
        {
            self.shared
                .say(&format!("cell {}: {}: {e}", cell.index, abs.display()));
            return (StudyStatus::Failed, 0, 0.0);
        }
        let cfg = match runner_config_of(&plan) {
            Ok(c) => c,
            Err(e) => {
                self.shared
                    .say(&format!("cell {}: {}: {e}", cell.index, entry.label));
                return (StudyStatus::Failed, 0, 0.0);
            }
        };
        let mut command = vec![
            "wirebench".to_string(),
            "sweep".into(),
            entry.command.clone(),
        ];
        command.extend(argv.iter().cloned());
        let x = Execution {
            plan,
            cfg,
            interrupt: Arc::clone(&self.interrupt),
            previous,
            command,
            testbed: Some(testbed.clone()),
        };
        let mut obs = CellObserver {
            shared: &mut self.shared,
            cell: cell.index as u32,
            round,
            test: entry.label.clone(),
            levels: cell.spec.levels.clone(),
            declared: entry.factors.iter().map(|(f, _)| *f).collect(),
        };
        let result =
            wirebench_sys::netns::run_in(&Endpoint::Client.ns(lab), || execute(x, &mut obs));
        match result {
            Ok(r) => {
                let ms: f64 = r.points.iter().map(|p| p.duration_ms as f64).sum();
                let status = match r.status {
                    SweepStatus::Completed => StudyStatus::Completed,
                    SweepStatus::Interrupted => StudyStatus::Interrupted,
                    _ => StudyStatus::Failed,
                };
                (status, r.points.len() as u32, ms)
            }
            Err(e) => {
                self.shared
                    .say(&format!("cell {}: client namespace: {e}", cell.index));
                (StudyStatus::Failed, 0, 0.0)
            }
        }
    }
}

/// The manifest of a new study.
pub fn new_manifest(plan: &StudyPlan, command: Vec<String>) -> StudyManifest {
    let now = wirebench_net::runner::unix_ms();
    StudyManifest {
        schema_version: STUDY_SCHEMA_VERSION,
        kind: "study".into(),
        software: wirebench_net::software(),
        title: plan.file.title.clone(),
        seed: plan.file.seed.clone(),
        file: plan.file.path.clone(),
        file_text: plan.file.text.clone(),
        command,
        repeat: plan.repeat(),
        host: Some(wirebench_engine::env::probe(None)),
        started_unix_ms: now,
        started_utc: wirebench_model::result::iso8601_utc(now),
        ended_unix_ms: now,
        status: StudyStatus::Running,
        error: None,
        cells: run_order(plan.cells.len(), plan.repeat())
            .into_iter()
            .map(|(round, i)| (round, &plan.cells[i]))
            .map(|(round, c)| CellRecord {
                index: c.index as u32,
                round,
                label: c.spec.label.clone(),
                levels: c.spec.levels.clone(),
                status: StudyStatus::Running,
                build_ms: None,
                teardown_ms: None,
                measured_ms: None,
                wall_ms: None,
                testbed: None,
                tests: Vec::new(),
                error: None,
            })
            .collect(),
        expectations: Vec::new(),
    }
}
