//! `wirebench study run --all`: every shipped study (`studies/*.toml`), one after another,
//! each into its own directory, then the claims table — each seed claim with this
//! machine's result and verdict — for a release check.
//!
//! The studies are found in `--studies-dir DIR`, else the first of: `$WIREBENCH_STUDIES`,
//! `PREFIX/share/wirebench/studies` beside an installed binary (`PREFIX/bin/wirebench`),
//! `studies/` of the source checkout the binary was built in (`target/release/wirebench`),
//! and `./studies`.

use std::path::{Path, PathBuf};

use wirebench_report::print::claims::{claims_text, StudyClaims};

use super::{load, plan, usage, RunArgs};
use crate::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};

/// The shipped studies' directory: `explicit`, else the first candidate that exists.
pub fn studies_dir(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(d) = explicit {
        return Ok(d.to_path_buf());
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("WIREBENCH_STUDIES") {
        candidates.push(PathBuf::from(d));
    }
    if let Some(bin) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        candidates.push(bin.join("../share/wirebench/studies"));
        candidates.push(bin.join("../../studies"));
    }
    candidates.push(PathBuf::from("studies"));
    candidates
        .iter()
        .find(|d| d.is_dir())
        .cloned()
        .ok_or_else(|| {
            format!(
                "no studies directory found (looked in {}); give --studies-dir DIR",
                candidates
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// The `*.toml` files of `dir`, sorted by name.
pub fn study_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no *.toml study files", dir.display()));
    }
    Ok(files)
}

fn stem(f: &Path) -> String {
    f.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `study run --all`.
pub fn run_all(a: &RunArgs) -> i32 {
    let dir = match studies_dir(a.studies_dir.as_deref()) {
        Ok(d) => d,
        Err(e) => return usage(&e),
    };
    let files = match study_files(&dir) {
        Ok(f) => f,
        Err(e) => return usage(&e),
    };
    let out = a.output.clone().unwrap_or_else(|| {
        let d = super::default_dir();
        PathBuf::from(d.display().to_string().replacen("study-", "studies-", 1))
    });
    if a.dry_run {
        return dry_run(a, &dir, &files, &out);
    }
    println!(
        "running {} studies from {} into {}",
        files.len(),
        dir.display(),
        out.display()
    );
    let started = std::time::Instant::now();
    let mut code = EXIT_OK;
    let mut claims = Vec::new();
    for f in &files {
        let sub = out.join(stem(f));
        println!("\n=== {} ({})", stem(f), f.display());
        let one = RunArgs {
            file: Some(f.clone()),
            output: Some(sub.clone()),
            resume: None,
            force: a.force,
            repeat: a.repeat,
            all: false,
            studies_dir: None,
            dry_run: false,
            json: false,
            save: a.save.clone(),
        };
        let c = super::run_study(one);
        claims.push(match load(&sub) {
            Ok(st) => StudyClaims {
                study: stem(f),
                outcomes: st.manifest.expectations,
                error: st.manifest.error,
            },
            Err(e) => StudyClaims {
                study: stem(f),
                outcomes: Vec::new(),
                error: Some(e),
            },
        });
        if c == EXIT_INTERRUPTED {
            code = c;
            break;
        }
        if c != EXIT_OK && code != EXIT_FAILED {
            code = c;
        }
    }
    println!("\n{}", claims_text(&claims));
    println!(
        "{} studies in {:.0} s; results in {}",
        claims.len(),
        started.elapsed().as_secs_f64(),
        out.display()
    );
    code
}

/// `study run --all --dry-run`: each study's plan summary and the total estimate.
fn dry_run(a: &RunArgs, dir: &Path, files: &[PathBuf], out: &Path) -> i32 {
    let mut total_s = 0.0;
    let mut total_points = 0;
    println!("{} studies in {}:", files.len(), dir.display());
    for f in files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => return usage(&format!("{}: cannot read: {e}", f.display())),
        };
        let mut file = match super::file::parse(&f.display().to_string(), &text) {
            Ok(x) => x,
            Err(e) => return usage(&e.to_string()),
        };
        if let Some(n) = a.repeat {
            file.options.repeat = n;
        }
        let p = match plan::plan(
            file,
            &out.join(stem(f)),
            wirebench_sys::thread::online_cpus(),
        ) {
            Ok(p) => p,
            Err(e) => return usage(&e.to_string()),
        };
        total_s += p.estimate_s();
        total_points += p.points();
        println!(
            "  {:<26} {:>3} cell(s) x {} round(s), {:>4} point(s), {:>3} expectation(s), about {:.0} s",
            stem(f),
            p.cells.len(),
            p.repeat(),
            p.points(),
            p.file.expectations.len(),
            p.estimate_s()
        );
    }
    println!(
        "total: {total_points} point(s), about {:.0} s ({:.1} min; adaptive points may run longer)",
        total_s,
        total_s / 60.0
    );
    EXIT_OK
}
