//! Hardening, round 3: files written as root, key files, flag values, outputs that would
//! replace their inputs, sweeps and studies writing over earlier results, labs and the
//! namespaces and state they trust, a study killed mid-run. Each test drives the real binary
//! from outside (exit code, output, the files on disk, /proc, `ip netns`) and fails without
//! the fix it covers.
//!
//! "Another user" is `nobody` (uid 65534): it owns the sticky, world-writable directories
//! the writers write into and plants its links there with `setpriv`. Because the directory
//! belongs to the link's owner, the kernel follows those links for root whatever
//! `fs.protected_symlinks` says, so the tests do not depend on (and do not change) it.

use crate::common;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{finish, require_netns, serial, shared, wb, Ran, BIN};

const NOBODY: u32 = 65534;
const VICTIM_TEXT: &str = "VICTIM: must never be written\n";

/// A scratch directory of this test (root's, 0700), removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("wb-h3-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        Scratch(d)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// A victim file (root's, outside any directory another user may write to).
    fn victim(&self) -> PathBuf {
        let v = self.path("victim");
        std::fs::write(&v, VICTIM_TEXT).unwrap();
        v
    }

    /// A sticky world-writable directory owned by `nobody`, inside this scratch directory.
    fn nobody_dir(&self, name: &str) -> PathBuf {
        let d = self.path(name);
        std::fs::create_dir_all(&d).unwrap();
        std::os::unix::fs::chown(&d, Some(NOBODY), Some(NOBODY)).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        // The scratch directory must be traversable for nobody.
        std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o711)).unwrap();
        d
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a perl script as `nobody` (setpriv), arguments after it; asserts success.
fn as_nobody(script: &str, args: &[&str]) {
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "perl",
            "-e",
            script,
        ])
        .args(args)
        .output()
        .expect("setpriv");
    assert!(
        out.status.success(),
        "as nobody: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// As `nobody`, plants in `dir` the links the old writers' predictable temporary names
/// would have used (`.NAME.<pid>.tmp -> victim`) for the next 3000 PIDs.
fn plant_tmp(dir: &Path, name: &str, victim: &Path) {
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    as_nobody(
        r#"my ($v, $d, $n, $a, $b) = @ARGV;
           for my $p ($a .. $b) { symlink($v, "$d/.$n.$p.tmp") or die "$!" }"#,
        &[
            victim.to_str().unwrap(),
            dir.to_str().unwrap(),
            name,
            &(last + 1).to_string(),
            &(last + 3000).to_string(),
        ],
    );
}

/// [`plant_tmp`], and a link `NAME -> victim` at the output's own name.
fn plant(dir: &Path, name: &str, victim: &Path) {
    plant_tmp(dir, name, victim);
    as_nobody(
        r#"my ($v, $d, $n) = @ARGV; symlink($v, "$d/$n") or die "$!";"#,
        &[victim.to_str().unwrap(), dir.to_str().unwrap(), name],
    );
}

fn assert_victim_intact(victim: &Path, what: &str) {
    assert_eq!(
        std::fs::read_to_string(victim).unwrap(),
        VICTIM_TEXT,
        "{what} wrote through a planted link"
    );
}

/// `path` is a regular file of root's (not a link someone planted).
fn assert_root_file(path: &Path) {
    let m = std::fs::symlink_metadata(path).unwrap();
    assert!(
        m.file_type().is_file(),
        "{} is not a regular file",
        path.display()
    );
    assert_eq!(m.uid(), 0, "{}", path.display());
}

fn wb_env(args: &[&str], env: &[(&str, &Path)]) -> Ran {
    let mut c = Command::new(BIN);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    finish(c)
}

/// A process killed (by its PID) on drop.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < within, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A short loopback stream's result document (embedded server).
fn stream_result(s: &Scratch) -> PathBuf {
    let r = s.path("r.json");
    let out = wb(&["stream", "-t", "0.3", "-o", r.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    r
}

// ---------------------------------------------------------------------------------------

/// F1: no writer follows a link another user planted, neither at the output's name nor at
/// the temporary names the writers used to derive from their PID; append-only files refuse
/// a link and another user's file.
#[test]
fn writers_do_not_follow_planted_links() {
    let _g = shared();
    let s = Scratch::new("links");
    let victim = s.victim();
    let d = s.nobody_dir("shared");
    let input = stream_result(&s);

    // report -o, plot -o: write_atomically.
    plant(&d, "report.html", &victim);
    let out = d.join("report.html");
    let r = wb(&[
        "report",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_victim_intact(&victim, "report -o");
    assert_root_file(&out);
    assert!(std::fs::read_to_string(&out).unwrap().contains("<html"));

    plant(&d, "fig.svg", &victim);
    let out = d.join("fig.svg");
    let r = wb(&["plot", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_victim_intact(&victim, "plot -o");
    assert_root_file(&out);

    // stream -o: the writability probe before the test, the result after it.
    plant(&d, "r2.json", &victim);
    let out = d.join("r2.json");
    let r = wb(&["stream", "-t", "0.2", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_victim_intact(&victim, "stream -o");
    assert_root_file(&out);

    // serve --pidfile.
    plant(&d, "pid", &victim);
    let pidfile = d.join("pid");
    let daemon = Kill(
        Command::new(BIN)
            .args([
                "serve",
                "--port",
                "0",
                "--pidfile",
                pidfile.to_str().unwrap(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the pid file", Duration::from_secs(10), || {
        std::fs::symlink_metadata(&pidfile).is_ok_and(|m| m.file_type().is_file())
    });
    assert_victim_intact(&victim, "serve --pidfile");
    assert_eq!(
        std::fs::read_to_string(&pidfile).unwrap().trim(),
        daemon.0.id().to_string()
    );
    drop(daemon);

    // serve --records: a link, and another user's regular file, are refused.
    as_nobody(
        r#"my ($v, $d) = @ARGV; symlink($v, "$d/rec") or die "$!";
           open(my $f, ">", "$d/rec2") or die "$!"; close($f);"#,
        &[victim.to_str().unwrap(), d.to_str().unwrap()],
    );
    for (name, needle) in [("rec", "symbolic link"), ("rec2", "owned by uid 65534")] {
        let p = d.join(name);
        let mut c = Command::new(BIN);
        c.args(["serve", "--port", "0", "--records", p.to_str().unwrap()]);
        let r = finish(c);
        assert_ne!(r.code, 0, "serve --records {name} started");
        assert!(r.stderr.contains(needle), "{name}: {}", r.stderr);
    }
    assert_victim_intact(&victim, "serve --records");

    // sweep -o DIR: its whole files.
    let sw = s.nobody_dir("shared/sweep");
    plant(&sw, "points.csv", &victim);
    plant_tmp(&sw, "sweep.json", &victim);
    let r = wb(&[
        "sweep",
        "stream",
        "-l",
        "64K,128K",
        "-t",
        "0.2",
        "-o",
        sw.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_victim_intact(&victim, "sweep -o");
    assert_root_file(&sw.join("sweep.json"));
    assert_root_file(&sw.join("points.csv"));
}

/// F1: no file is created or opened for writing outside the one module that does it safely
/// (`wirebench_sys::safefile`), except the reviewed cases listed here.
#[test]
fn every_writer_goes_through_safefile() {
    let _shared = crate::common::shared();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Reviewed exceptions: an unnamed O_TMPFILE (no name to plant), /proc/sys writes, the
    // headless-browser check's scratch files (test tooling in its own temporary directory).
    let allowed = [
        "crates/wirebench-sys/src/safefile.rs",
        "crates/wirebench-sys/src/datapath/sendfile.rs",
        "crates/wirebench-lab/src/named/sys.rs",
        "crates/wirebench-plot/src/browser.rs",
    ];
    let mut offenders = Vec::new();
    let mut stack = vec![root.join("crates")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if p.is_dir() {
                // Only production sources: not tests/, examples/, benches/, test modules or
                // the test kit (a dev-dependency, never part of the product).
                if ![
                    "tests",
                    "examples",
                    "benches",
                    "target",
                    "wirebench-testkit",
                ]
                .iter()
                .any(|t| p.file_name().is_some_and(|n| n == *t))
                {
                    stack.push(p);
                }
                continue;
            }
            if !rel.ends_with(".rs") || rel.ends_with("tests.rs") || allowed.contains(&rel.as_str())
            {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for (i, line) in code.lines().enumerate() {
                let l = line.trim_start();
                if l.starts_with("//") {
                    continue;
                }
                for bad in ["File::create", "OpenOptions", "fs::write("] {
                    if l.contains(bad) {
                        offenders.push(format!("{rel}:{}: {}", i + 1, l));
                    }
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "files written outside wirebench_sys::safefile:\n{}",
        offenders.join("\n")
    );
}

/// F6: key files readable by others are refused at both ends (unless
/// `--insecure-key-file`); a device is refused at once instead of read without end.
#[test]
fn key_files_readable_by_others_or_devices_are_refused() {
    let _shared = crate::common::shared_timed();
    let s = Scratch::new("keys");
    let key = s.path("keys");
    common::write_alice_keys(&key, 0o644);
    let k = key.to_str().unwrap();
    let r = wb(&["serve", "--port", "0", "--auth-keys", k]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("readable or writable by group or others"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--insecure-key-file"), "{}", r.stderr);

    // Accepted with --insecure-key-file: the daemon says it listens.
    let mut child = Kill(
        Command::new(BIN)
            .args([
                "serve",
                "--port",
                "0",
                "--auth-keys",
                k,
                "--insecure-key-file",
            ])
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let t0 = Instant::now();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(10).saturating_sub(t0.elapsed()))
            .expect("the daemon did not start with --insecure-key-file");
        if line.contains("listening") {
            break;
        }
    }
    drop(child);

    // The client's --auth-key-file: refused before anything is sent.
    let r = wb(&[
        "stream",
        "-H",
        "127.0.0.1",
        "--auth",
        "alice",
        "--auth-key-file",
        k,
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("readable or writable by group or others"),
        "{}",
        r.stderr
    );

    // /dev/zero: refused at once.
    let t0 = Instant::now();
    let r = wb(&["serve", "--port", "0", "--auth-keys", "/dev/zero"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    assert!(t0.elapsed() < Duration::from_secs(5));
}

/// F10: non-finite and out-of-range seconds are refused naming the flag and its range, in
/// the client and the daemon; no 300-digit numbers; `--cport` past 65535 is named as such.
#[test]
fn non_finite_and_out_of_range_flag_values_are_refused() {
    let _shared = crate::common::shared();
    for v in ["NaN", "inf", "0", "1e308", "1e-320", "-1"] {
        // `--flag=VALUE`, so that "-1" is a value, not a flag.
        let r = wb(&["stream", &format!("--connect-timeout={v}")]);
        assert_eq!(r.code, 2, "--connect-timeout {v}: {}", r.stderr);
        assert!(
            r.stderr.contains("--connect-timeout") && r.stderr.contains("0.001"),
            "--connect-timeout {v}: {}",
            r.stderr
        );
    }
    for v in ["1e-300", "1e308", "NaN", "0"] {
        let r = wb(&["serve", "--port", "0", "--max-duration", v]);
        assert_eq!(r.code, 2, "--max-duration {v}: {}", r.stderr);
        assert!(
            r.stderr.contains("--max-duration") && r.stderr.contains("0.1"),
            "--max-duration {v}: {}",
            r.stderr
        );
    }
    for flag in ["--idle-timeout", "--handshake-timeout", "--results-timeout"] {
        let r = wb(&["serve", "--port", "0", flag, "inf"]);
        assert_eq!(r.code, 2, "{flag}: {}", r.stderr);
        assert!(r.stderr.contains(flag), "{}", r.stderr);
    }
    for v in ["1e308", "inf", "NaN", "-3"] {
        let r = wb(&["stream", &format!("--duration={v}")]);
        assert_eq!(r.code, 2, "-t {v}: {}", r.stderr);
        let longest_digits = r
            .stderr
            .split(|c: char| !c.is_ascii_digit())
            .map(str::len)
            .max()
            .unwrap_or(0);
        assert!(longest_digits < 12, "-t {v}: {}", r.stderr);
    }
    let r = wb(&["stream", "-t", "0.2", "--cport", "65535", "-P", "4"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("past the last port 65535"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("TIME-WAIT"), "{}", r.stderr);
}

/// F8, F11: an output that would replace its input is refused and the input kept; a
/// study's test args may not set the output in any spelling.
#[test]
fn outputs_never_replace_inputs_and_study_args() {
    let _g = shared();
    let s = Scratch::new("inout");
    let input = stream_result(&s);
    let before = std::fs::read(&input).unwrap();
    let other_name = s.path(".").join("r.json");
    for out in [input.clone(), other_name] {
        let r = wb(&[
            "report",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("own data"), "{}", r.stderr);
        let r = wb(&["plot", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{}", r.stderr);
    }
    assert_eq!(
        std::fs::read(&input).unwrap(),
        before,
        "the input was changed"
    );

    for args in [
        r#"["--output=/tmp/x.json"]"#,
        r#"["-o/tmp/x.json"]"#,
        r#"["-4o", "/tmp/x.json"]"#,
        r#"["--json"]"#,
        r#"["--host=10.0.0.1"]"#,
    ] {
        let file = s.path("study.toml");
        std::fs::write(
            &file,
            format!(
                "title = \"t\"\n[factors]\nmtu = [1500]\n[[test]]\ncommand = \"stream\"\nargs = {args}\n"
            ),
        )
        .unwrap();
        let r = wb(&["study", "run", "--dry-run", file.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{args}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("is set by the study"),
            "{args}: {}",
            r.stderr
        );
    }
}

/// F3: `sweep -o` onto an existing sweep refuses (naming --resume and --force); --force
/// replaces it; a resume refuses point files that are not the recorded sweep's.
#[test]
fn sweep_output_is_not_replaced_and_resume_checks_points() {
    let _g = shared();
    let s = Scratch::new("sweep");
    let d = s.path("sw");
    let ds = d.to_str().unwrap();
    let sweep = |extra: &[&str]| {
        let mut a = vec![
            "sweep", "stream", "-l", "64K,128K", "-t", "0.2", "-b", "200M", "-o", ds,
        ];
        a.extend_from_slice(extra);
        wb(&a)
    };
    let r = sweep(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let first = std::fs::read(d.join("sweep.json")).unwrap();
    let r = sweep(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--resume") && r.stderr.contains("--force"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read(d.join("sweep.json")).unwrap(), first);
    let r = sweep(&["--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_ne!(std::fs::read(d.join("sweep.json")).unwrap(), first);

    // A directory whose point files are an earlier sweep's: sweep.json records no points
    // (as after a kill before its first rewrite) and point 0 was measured before it began.
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("sweep.json")).unwrap()).unwrap();
    doc["points"] = serde_json::json!([]);
    doc["status"] = serde_json::json!("interrupted");
    std::fs::write(d.join("sweep.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    let p0 = d.join("points").join("0000.json");
    let mut point: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&p0).unwrap()).unwrap();
    point["result"]["started_unix_ms"] = serde_json::json!(1);
    std::fs::write(&p0, serde_json::to_vec(&point).unwrap()).unwrap();
    let r = wb(&["sweep", "stream", "--resume", ds]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("mixes sweeps"), "{}", r.stderr);
    // Settings outside the recorded grid.
    point["result"]["started_unix_ms"] = doc["started_unix_ms"].clone();
    point["settings"][0]["value"] = serde_json::json!(4096);
    std::fs::write(&p0, serde_json::to_vec(&point).unwrap()).unwrap();
    let r = wb(&["sweep", "stream", "--resume", ds]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("not in the recorded grid"),
        "{}",
        r.stderr
    );
}

/// `ip netns` names, deleted on drop.
struct Netns(Vec<String>);

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "delete", n]).status();
        }
    }
}

fn netns_exists(n: &str) -> bool {
    Path::new("/var/run/netns").join(n).exists()
}

/// F4, F5: a namespace named like a lab's without a state file is listed as foreign and
/// never deleted; a state directory another user can write to is refused, and a forged state
/// file in it does not get a process signalled.
#[test]
fn labs_own_only_what_they_recorded() {
    let _shared = crate::common::shared();
    require_netns();
    let s = Scratch::new("labs");
    let labs = s.path("labs");
    let name = format!("h3f{}", std::process::id() % 100_000);
    let ns = format!("wbl-{name}-c");
    let _ns = Netns(vec![ns.clone()]);
    assert!(Command::new("ip")
        .args(["netns", "add", &ns])
        .status()
        .unwrap()
        .success());
    let env = [("WIREBENCH_LAB_DIR", labs.as_path())];
    let r = wb_env(&["lab", "show"], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains(&format!("foreign: {name}")),
        "{}",
        r.stdout
    );
    let r = wb_env(&["lab", "down", &name], &env);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("no state file"), "{}", r.stderr);
    for args in [
        &["lab", "down", "--stale"][..],
        &["lab", "down", "--all"][..],
    ] {
        let r = wb_env(args, &env);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    }
    assert!(netns_exists(&ns), "a foreign namespace was deleted");

    // A forged state file in a directory nobody owns names a process of ours as the
    // emulator: root's `lab down` refuses the directory and signals nothing.
    let mut sleeper = Kill(Command::new("sleep").arg("60").spawn().unwrap());
    let pid = sleeper.0.id();
    let forged_dir = s.nobody_dir("forged");
    std::fs::set_permissions(&forged_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let st = wirebench_lab::named::LabState {
        version: wirebench_lab::named::STATE_VERSION,
        spec: wirebench_lab::named::LabSpec::new("x"),
        phase: wirebench_lab::named::Phase::Up,
        creator: None,
        owner: None,
        emulator: Some(wirebench_lab::named::EmulatorProc {
            proc: wirebench_lab::named::ProcRef::of(pid).unwrap(),
            argv: vec!["sleep".into(), "60".into()],
        }),
        created_unix_ms: 0,
    };
    let state_file = forged_dir.join("x.json");
    std::fs::write(&state_file, serde_json::to_vec(&st).unwrap()).unwrap();
    std::os::unix::fs::chown(&state_file, Some(NOBODY), Some(NOBODY)).unwrap();
    let env = [("WIREBENCH_LAB_DIR", forged_dir.as_path())];
    for args in [&["lab", "down", "x"][..], &["lab", "down", "--all"][..]] {
        let r = wb_env(args, &env);
        assert_ne!(r.code, 0, "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains("owned by uid 65534"), "{}", r.stderr);
    }
    assert!(
        sleeper.0.try_wait().unwrap().is_none(),
        "a process named in a forged state file was signalled"
    );
    // A root-owned but world-writable (sticky) directory is refused as well, for `up` too.
    let sticky = s.path("sticky");
    std::fs::create_dir(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let r = wb_env(
        &["lab", "up", &format!("{name}u")],
        &[("WIREBENCH_LAB_DIR", sticky.as_path())],
    );
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("mode 1777"), "{}", r.stderr);
    assert!(!netns_exists(&format!("wbl-{name}u-c")));
}

fn processes_with(pred: impl Fn(&str, &[u8]) -> bool) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            pred(&String::from_utf8_lossy(&cmd).replace('\0', " "), &env)
        })
        .collect()
}

/// F9: a study SIGKILLed mid-run takes its emulator and daemon with it within 5 s; its
/// namespaces stay, reported stale, and `lab down --stale` removes them.
#[test]
fn a_killed_study_leaves_no_process() {
    require_netns();
    let _g = serial();
    let s = Scratch::new("kill");
    let labs = s.path("labs");
    let file = s.path("study.toml");
    std::fs::write(
        &file,
        "title = \"killed\"\n[options]\ntime = 5.0\n[testbed]\ndelay = \"1ms\"\n\
         [factors]\nmtu = [1500, 9000]\n[[test]]\ncommand = \"stream\"\n",
    )
    .unwrap();
    let out = s.path("out");
    let mut study = Kill(
        Command::new(BIN)
            .args([
                "study",
                "run",
                file.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ])
            .env("WIREBENCH_LAB_DIR", &labs)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = study.0.id();
    let lab = format!("st-{pid}");
    let _ns = Netns(vec![
        format!("wbl-{lab}-c"),
        format!("wbl-{lab}-s"),
        format!("wbl-{lab}-m"),
    ]);
    let marker = format!("WIREBENCH_STUDY={lab}");
    let daemons =
        || processes_with(|_, env| env.split(|b| *b == 0).any(|v| v == marker.as_bytes()));
    let emulators = || processes_with(|cmd, _| cmd.contains("_emulate") && cmd.contains(&lab));
    wait_for(
        "the study's daemon and emulator",
        Duration::from_secs(30),
        || !daemons().is_empty() && !emulators().is_empty(),
    );
    let _ = study.0.kill();
    let _ = study.0.wait();
    wait_for(
        "the emulator and daemon to die with the study",
        Duration::from_secs(5),
        || daemons().is_empty() && emulators().is_empty(),
    );
    let env = [("WIREBENCH_LAB_DIR", labs.as_path())];
    let r = wb_env(&["lab", "show"], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .lines()
            .any(|l| l.contains(&lab) && l.contains("stale")),
        "{}",
        r.stdout
    );
    let r = wb_env(&["lab", "down", "--stale"], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for side in ["c", "s", "m"] {
        assert!(!netns_exists(&format!("wbl-{lab}-{side}")), "{}", r.stdout);
    }
}

/// F2: a daemon does not profile for unauthenticated clients (`--allow-profile` without
/// `--auth-keys` is refused at start, and a client without the key is not served), and the
/// sampling rate a client asks for is capped by the daemon.
#[test]
fn profiles_only_for_authenticated_clients_at_a_capped_rate() {
    let _g = serial();
    let r = wb(&["serve", "--port", "0", "--allow-profile"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("--allow-profile needs --auth-keys"),
        "{}",
        r.stderr
    );

    let s = Scratch::new("profile");
    let key = s.path("keys");
    common::write_alice_keys(&key, 0o600);
    let k = key.to_str().unwrap();
    let d = common::daemon::LocalDaemon::start(&["--allow-profile", "--auth-keys", k]);
    let port = d.addr.port().to_string();
    // Without the key (as nobody, who cannot read it): refused, nothing profiled.
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args([
            "stream",
            "-H",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "0.3",
            "--profile",
        ]);
    let r = finish(c);
    assert_ne!(r.code, 0, "{}", r.stdout);
    // With the key, asking for 20000 Hz: sampled at the daemon's cap (4000 Hz).
    let r = wb(&[
        "stream",
        "--auth",
        "alice",
        "--auth-key-file",
        k,
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.3",
        "--profile",
        "--profile-hz",
        "20000",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let profile = &doc["runs"][0]["server"]["profile"];
    assert_eq!(profile["freq_hz"], serde_json::json!(4000), "{profile}");
}

/// F2: a daemon takes at most `--max-profiles` profiles at once (default 1; each samples
/// every CPU). A second profiled test while one is being profiled runs unprofiled at the
/// daemon, and its result says the server refused; the daemon logs why; the slot is free
/// again once the first test ends.
#[test]
fn profiles_at_once_are_capped() {
    let _g = serial();
    let permitted = wirebench_sys::perf::system_wide_permitted();
    if !wirebench_sys::require::capability(
        "perf",
        permitted,
        "system-wide perf events are not permitted here",
    ) {
        return;
    }
    let s = Scratch::new("profile-cap");
    let key = s.path("keys");
    common::write_alice_keys(&key, 0o600);
    let k = key.to_str().unwrap();
    // Both tests come from 127.0.0.1: let one peer run two at once.
    let d = common::daemon::LocalDaemon::start(&[
        "--allow-profile",
        "--auth-keys",
        k,
        "--max-tests-per-peer",
        "2",
    ]);
    let port = d.addr.port().to_string();
    let args = |secs: &'static str| -> Vec<String> {
        [
            "stream",
            "--auth",
            "alice",
            "--auth-key-file",
            k,
            "-H",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            secs,
            "--profile",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    let server_profiled = |r: &wirebench_model::result::RunResult| -> bool {
        let server = r.runs.last().unwrap().server.as_ref().expect("server side");
        if server.profile.is_some() {
            return true;
        }
        assert!(
            server
                .warnings
                .contains(&wirebench_model::warning::Warning::ProfileUnavailable {
                    reason: wirebench_model::profile::ProfileUnavailable::RefusedByServer
                }),
            "no server profile and no refusal: {:?}",
            server.warnings
        );
        false
    };

    // The first test holds the daemon's one slot from its engines' start (its first server
    // interval) to its end; 3 s leaves the second test (0.3 s plus setup) inside it on a
    // busy host.
    let mut c = Command::new(BIN);
    c.args(args("3"))
        .args(["-i", "0.2", "--json-stream"])
        .stdin(Stdio::null());
    let first = common::streamed::Streamed::spawn(&mut c);
    assert!(
        first.wait_intervals("server", 1, Duration::from_secs(20)),
        "the first test never reported a server interval"
    );
    let second = wb(&[&args("0.3")[..], &["--json".to_owned()]]
        .concat()
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(second.code, 0, "{}", second.stderr);
    // The first client still running (not a zombie) now: its session held the slot while
    // the second was admitted.
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", first.id())).unwrap();
    let state = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let first_still_running = state != "Z";
    let end = first.wait();
    assert!(end.status.success(), "{:?}", end.lines.last());
    assert!(
        server_profiled(&end.result()),
        "the first test was not profiled"
    );
    assert!(
        first_still_running,
        "the first test ended before the second did: nothing was checked"
    );
    assert!(
        !server_profiled(&second.json()),
        "two profiles ran at once under --max-profiles 1"
    );
    d.wait_log("as many profiles run already", 1, Duration::from_secs(5));

    // The slot came back with the first test's end.
    let third = wb(&[&args("0.3")[..], &["--json".to_owned()]]
        .concat()
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert!(
        server_profiled(&third.json()),
        "the slot was not released when the first test ended"
    );
}

/// Runs a one-point study (`FILE`, one cell at MTU 1500, a 0.3 s stream) with `-o out`.
fn one_point_study(s: &Scratch, out: &Path) -> Ran {
    let file = s.path("one.toml");
    std::fs::write(
        &file,
        "title = \"one\"\n[options]\ntime = 0.3\n[factors]\nmtu = [1500]\n\
         [[test]]\ncommand = \"stream\"\n",
    )
    .unwrap();
    let labs = s.path("labs");
    wb_env(
        &[
            "study",
            "run",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        &[("WIREBENCH_LAB_DIR", labs.as_path())],
    )
}

/// F1, the writers not in `writers_do_not_follow_planted_links`: a study's files (its manifest, `results.jsonl`,
/// `points.csv`, its cells' daemon logs and sweep files below `cells/`), a sweep's `points/`
/// and the limits cache. A link planted at a file's name is replaced or refused, never
/// followed; a link planted at a subdirectory wirebench makes (`cells/`, `points/`) is
/// refused, so that nothing is written below it.
#[test]
fn study_sweep_and_limits_writers_do_not_follow_planted_links() {
    require_netns();
    let _g = shared();
    let s = Scratch::new("links2");
    let victim = s.victim();
    let victim_dir = s.path("victim-dir");
    std::fs::create_dir(&victim_dir).unwrap();
    let nothing_in_victim_dir = |what: &str| {
        let n = std::fs::read_dir(&victim_dir).unwrap().count();
        assert_eq!(
            n, 0,
            "{what} wrote {n} file(s) below a planted directory link"
        );
    };
    let link_dir = |dir: &Path, name: &str| {
        as_nobody(
            r#"my ($v, $d, $n) = @ARGV; symlink($v, "$d/$n") or die "$!";"#,
            &[victim_dir.to_str().unwrap(), dir.to_str().unwrap(), name],
        );
    };

    // A study's `cells/` planted as a link to another directory: refused.
    let d = s.nobody_dir("study-cells");
    link_dir(&d, "cells");
    let r = one_point_study(&s, &d);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(r.stderr.contains("symbolic link"), "{}", r.stderr);
    nothing_in_victim_dir("study run (cells)");

    // A planted manifest: the directory "holds a study" and is refused; nothing written.
    let d = s.nobody_dir("study-manifest");
    plant(&d, "manifest.json", &victim);
    let r = one_point_study(&s, &d);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert_victim_intact(&victim, "study run (manifest)");

    // Links at the study's file names: replaced by the study's own files.
    let d = s.nobody_dir("study-files");
    plant(&d, "results.jsonl", &victim);
    plant(&d, "points.csv", &victim);
    let r = one_point_study(&s, &d);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_victim_intact(&victim, "study run (files)");
    for f in [
        "manifest.json",
        "results.jsonl",
        "points.csv",
        "cells/0000-daemon.log",
    ] {
        assert_root_file(&d.join(f));
    }
    assert!(
        std::fs::read_to_string(d.join("results.jsonl"))
            .unwrap()
            .lines()
            .count()
            == 1,
        "one point expected in results.jsonl"
    );

    // A sweep's `points/` planted as a link: refused.
    let sw = s.nobody_dir("sweep-points");
    link_dir(&sw, "points");
    let r = wb(&[
        "sweep",
        "stream",
        "-l",
        "64K",
        "-t",
        "0.2",
        "-o",
        sw.to_str().unwrap(),
    ]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(r.stderr.contains("symbolic link"), "{}", r.stderr);
    nothing_in_victim_dir("sweep -o (points)");

    // The limits cache of this boot, planted as a link in a shared state directory.
    let state = s.nobody_dir("state");
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let cache = format!("limits-{}.json", boot.trim());
    plant(&state, &cache, &victim);
    let r = wb_env(
        &["limits", "--quick", "--json"],
        &[("WIREBENCH_STATE_DIR", state.as_path())],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_victim_intact(&victim, "limits (cache)");
    assert_root_file(&state.join(&cache));
}
