//! The files generated from the clap definitions are current and well formed: the man pages
//! (man/*.1), the shell completions (dist/completions/), the option reference (docs/CLI.md).
//! One text (each argument's doc comment) serves --help, the man pages and the reference.
//!
//! Regenerate all of them with
//! `WIREBENCH_BLESS=1 cargo test --release -p wirebench --test main generated::` and review the diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use wirebench::cli::Cli;
use wirebench_sys::require;

const REGENERATE: &str =
    "regenerate with `WIREBENCH_BLESS=1 cargo test --release -p wirebench --test main generated::`";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bless() -> bool {
    std::env::var_os("WIREBENCH_BLESS").is_some_and(|v| v == "1")
}

/// The command tree as the binary sees it, built (so subcommands know their bin names);
/// without the `help` subcommand for the man pages (clap_mangen's choice).
fn built(help_subcommand: bool) -> clap::Command {
    let mut cmd = wirebench::cli::command().disable_help_subcommand(!help_subcommand);
    cmd.build();
    cmd
}

/// Every (sub)command but `help` and the hidden ones, depth first, parents before children.
fn walk(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
    out.push(cmd.clone());
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        walk(sub, out);
    }
}

/// The man pages: file name → roff text (wirebench.1, wirebench-stream.1, wirebench-lab-up.1, ...).
fn man_pages() -> BTreeMap<String, Vec<u8>> {
    let mut all = Vec::new();
    walk(&built(false), &mut all);
    all.into_iter()
        .map(|c| {
            let man = clap_mangen::Man::new(c).manual("wirebench manual");
            let mut roff = Vec::new();
            man.render(&mut roff).expect("rendering a man page");
            (man.get_filename(), roff)
        })
        .collect()
}

/// Compares `want` (file name → contents) with the files of `dir` named by `keep`; with
/// WIREBENCH_BLESS=1 writes them and removes the stale ones.
fn check_dir(dir: &Path, want: &BTreeMap<String, Vec<u8>>, keep: impl Fn(&str) -> bool) {
    let have: BTreeMap<String, Vec<u8>> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| keep(n))
                .map(|n| {
                    let bytes = std::fs::read(dir.join(&n)).expect("reading a generated file");
                    (n, bytes)
                })
                .collect()
        })
        .unwrap_or_default();
    if bless() {
        std::fs::create_dir_all(dir).expect("creating the directory");
        for name in have.keys().filter(|n| !want.contains_key(*n)) {
            std::fs::remove_file(dir.join(name)).expect("removing a stale file");
        }
        for (name, bytes) in want {
            std::fs::write(dir.join(name), bytes).expect("writing a generated file");
        }
        return;
    }
    let stale: Vec<&String> = want
        .iter()
        .filter(|(n, b)| have.get(*n) != Some(b))
        .map(|(n, _)| n)
        .chain(have.keys().filter(|n| !want.contains_key(*n)))
        .collect();
    assert!(
        stale.is_empty(),
        "{}: stale: {stale:?}; {REGENERATE}",
        dir.display()
    );
}

/// man/ holds a page for wirebench and for every subcommand, as the clap definitions render it.
#[test]
fn man_pages_are_current() {
    let _shared = crate::common::shared();
    let pages = man_pages();
    for must in [
        "wirebench.1",
        "wirebench-stream.1",
        "wirebench-serve.1",
        "wirebench-lab.1",
    ] {
        assert!(pages.contains_key(must), "no {must} in {:?}", pages.keys());
    }
    check_dir(&repo().join("man"), &pages, |n| n.ends_with(".1"));
}

/// groff renders every committed page without a warning (-ww turns all warnings on).
#[test]
fn man_pages_render_without_warnings() {
    let _shared = crate::common::shared();
    if !require::capability(
        "groff",
        require::command_works("groff", "--version"),
        "groff renders the man pages (Debian: groff-base)",
    ) {
        return;
    }
    let dir = repo().join("man");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("man/") {
        let path = e.expect("entry").path();
        if path.extension() != Some(std::ffi::OsStr::new("1")) {
            continue;
        }
        let out = Command::new("groff")
            // -k: preconv, as man(1) runs it: the help texts are UTF-8 (—, ≥, ×).
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .arg(&path)
            .output()
            .expect("running groff");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.trim().is_empty(),
            "{}: {}",
            path.display(),
            stderr
        );
        n += 1;
    }
    assert_eq!(n, man_pages().len(), "pages in man/");
}

fn completion(shell: &str) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .args(["completions", shell])
        .stderr(Stdio::inherit())
        .output()
        .expect("running wirebench completions");
    assert!(out.status.success(), "wirebench completions {shell}");
    out.stdout
}

/// The file name each shell's completion directory expects.
const COMPLETIONS: [(&str, &str); 3] = [
    ("bash", "wirebench.bash"),
    ("zsh", "_wirebench"),
    ("fish", "wirebench.fish"),
];

/// dist/completions/ holds what `wirebench completions SHELL` prints.
#[test]
fn completions_are_current() {
    let _shared = crate::common::shared();
    let want: BTreeMap<String, Vec<u8>> = COMPLETIONS
        .iter()
        .map(|(shell, file)| (file.to_string(), completion(shell)))
        .collect();
    check_dir(&repo().join("dist/completions"), &want, |_| true);
}

/// Each shell parses the script `wirebench completions` prints for it (bash -n, zsh -n,
/// fish --no-execute), and the script names the subcommands.
#[test]
fn completions_parse() {
    let _shared = crate::common::shared();
    let checks: [(&str, &[&str]); 3] = [
        ("bash", &["-n"]),
        ("zsh", &["-n"]),
        ("fish", &["--no-execute"]),
    ];
    for (shell, args) in checks {
        if !require::capability(
            shell,
            require::command_works(shell, "--version"),
            "parses its completion script",
        ) {
            continue;
        }
        let script = completion(shell);
        let text = String::from_utf8_lossy(&script);
        // fish names a long option `-l flows`, the others `--flows`.
        let flows = if shell == "fish" {
            "-l flows"
        } else {
            "--flows"
        };
        for sub in ["stream", "serve", "completions", flows] {
            assert!(text.contains(sub), "{shell}: no {sub}");
        }
        let file = tempfile_path(shell);
        std::fs::write(&file, &script).expect("writing the script");
        let out = Command::new(shell)
            .args(args)
            .arg(&file)
            .output()
            .expect("running the shell");
        let _ = std::fs::remove_file(&file);
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{shell} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn tempfile_path(shell: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "wirebench-completion-{}-{shell}",
        std::process::id()
    ))
}

/// docs/CLI.md: every (sub)command's long --help, as the binary prints it.
fn cli_reference() -> String {
    let mut all = Vec::new();
    walk(&built(true), &mut all);
    let mut md = String::from(
        "# wirebench command-line reference\n\n\
         <!-- generated from the clap definitions (crates/wirebench/src/cli.rs and the \
         subcommands' Args); do not edit: regenerate with \
         `WIREBENCH_BLESS=1 cargo test --release -p wirebench --test main generated::` -->\n\n\
         Each section is the command's `--help` (the same text as its man page, \
         `man wirebench-SUBCOMMAND`).\n\n## Contents\n\n",
    );
    let name = |c: &clap::Command| c.get_bin_name().unwrap_or(c.get_name()).to_string();
    for c in &all {
        let n = name(c);
        md.push_str(&format!("- [`{n}`](#{})\n", n.replace(' ', "-")));
    }
    for c in &all {
        let help = c.clone().render_long_help().to_string();
        let help: Vec<&str> = help.lines().map(str::trim_end).collect();
        md.push_str(&format!(
            "\n## {}\n\n```text\n{}\n```\n",
            name(c),
            help.join("\n").trim_end()
        ));
    }
    md
}

/// docs/CLI.md is the reference generated from the clap definitions.
#[test]
fn cli_reference_is_current() {
    let _shared = crate::common::shared();
    let md = cli_reference();
    assert!(md.contains("## wirebench stream\n") && md.contains("--flows"));
    let mut want = BTreeMap::new();
    want.insert("CLI.md".to_string(), md.into_bytes());
    check_dir(&repo().join("docs"), &want, |n| n == "CLI.md");
}

/// Every `wirebench` command line in README.md's shell examples parses (so the front page
/// shows no flag that does not exist).
#[test]
fn readme_commands_parse() {
    let _shared = crate::common::shared();
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let mut n = 0;
    for line in readme.lines() {
        let Some(cmd) = line.strip_prefix("$ ") else {
            continue;
        };
        let cmd = cmd.trim_start_matches("sudo ");
        if !cmd.starts_with("wirebench ") {
            continue;
        }
        // The command alone: up to a comment, a redirection or the next command.
        let words: Vec<&str> = cmd
            .split_whitespace()
            .take_while(|w| !["#", ">", ">>", "&&", "|"].contains(w))
            .collect();
        if let Err(e) = Cli::try_parse_from(&words) {
            panic!("README.md: `{}` does not parse: {e}", words.join(" "));
        }
        n += 1;
    }
    assert!(n >= 15, "{n} wirebench command lines in README.md");
}

/// docs/ARCHITECTURE.md's crate graph (its first code block) names every crate of the
/// workspace (`members = ["crates/*"]`: each directory of crates/ with a Cargo.toml), and no
/// crate that is not one.
#[test]
fn architecture_names_every_workspace_crate() {
    let _shared = crate::common::shared();
    let doc =
        std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let graph = doc
        .split("```")
        .nth(1)
        .expect("ARCHITECTURE.md has no code block (the crate graph)");
    let mut crates = Vec::new();
    for entry in std::fs::read_dir(repo().join("crates")).expect("crates/") {
        let dir = entry.expect("crates/ entry").path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let table: toml::Table = manifest.parse().expect("a crate's Cargo.toml");
        let name = table["package"]["name"].as_str().expect("package.name");
        crates.push(name.to_string());
    }
    assert!(crates.len() >= 13, "workspace crates {crates:?}");
    let named: std::collections::BTreeSet<&str> = graph
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("wirebench"))
        .collect();
    for c in &crates {
        assert!(
            named.contains(c.as_str()),
            "ARCHITECTURE.md's crate graph does not name {c}"
        );
    }
    for n in &named {
        assert!(
            crates.iter().any(|c| c == n),
            "ARCHITECTURE.md's crate graph names {n}, which is no workspace crate"
        );
    }
}

/// The commands of README's quick start: `(line, argv after "wirebench")` for every `$ …`
/// line of the block under "## Quick start" that runs wirebench (after `sudo`, before a
/// redirection, `&&` or a comment).
fn quick_start_commands() -> Vec<(String, Vec<String>)> {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let block = readme
        .split("## Quick start")
        .nth(1)
        .and_then(|s| s.split("```").nth(1))
        .expect("README.md has a Quick start section with a code block");
    block
        .lines()
        .filter_map(|l| l.trim().strip_prefix("$ "))
        .filter_map(|l| {
            let cmd = l
                .split(['#', '>', '|'])
                .next()
                .unwrap_or("")
                .split("&&")
                .next()
                .unwrap_or("");
            let words: Vec<&str> = cmd.split_whitespace().collect();
            let words = match words.first() {
                Some(&"sudo") => &words[1..],
                _ => &words[..],
            };
            (words.first() == Some(&"wirebench")).then(|| {
                (
                    l.to_string(),
                    words[1..].iter().map(|w| w.to_string()).collect(),
                )
            })
        })
        .collect()
}

/// README's quick start shows every subcommand, and its sweep and study (whose flags and
/// values are checked only when they run; [`readme_commands_parse`] checks the rest) run with
/// `--dry-run`, which checks every point and cell and builds nothing.
#[test]
fn readme_quick_start_shows_every_subcommand_and_its_sweep_and_study_run() {
    let _g = crate::common::shared();
    let cmds = quick_start_commands();
    for sub in [
        "serve",
        "stream",
        "rr",
        "crr",
        "udp",
        "keygen",
        "limits",
        "sweep",
        "plot",
        "report",
        "lab",
        "study",
        "history",
        "compare",
        "completions",
    ] {
        assert!(
            cmds.iter()
                .any(|(_, a)| a.first().map(String::as_str) == Some(sub)),
            "README's quick start shows no `wirebench {sub}`"
        );
    }
    for (line, args) in &cmds {
        let dry = match args.first().map(String::as_str) {
            Some("sweep") => true,
            Some("study") => args.get(1).map(String::as_str) == Some("run"),
            _ => false,
        };
        if dry {
            let mut c = Command::new(env!("CARGO_BIN_EXE_wirebench"));
            c.current_dir(repo())
                .args(args)
                .arg("--dry-run")
                .stdin(Stdio::null());
            let out = c.output().expect("run wirebench");
            assert!(
                out.status.success(),
                "`{line}` with --dry-run: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
