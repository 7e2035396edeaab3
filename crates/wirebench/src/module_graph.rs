//! The crate's files import one another without a cycle, and the commands keep to their
//! rule: a command (`commands::x`) imports shared modules only, never another command, and
//! no shared module imports a command (only the command tree `cli` and the dispatch
//! `commands` name them).
//!
//! A text scan of each production file (comments and `#[cfg(test)]` modules left out) for
//! `crate::a::b` paths, mapped to the module they name: `commands::x` for a file under
//! `commands/`, else the top-level module (`sweep/plan.rs` is `sweep`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The module a file (its path under `src/`, with `/` separators) belongs to; `None` for the
/// crate root.
fn node_of(rel: &str) -> Option<String> {
    let stem = rel.trim_end_matches(".rs");
    let parts: Vec<&str> = stem.split('/').collect();
    match parts.as_slice() {
        ["lib"] | ["main"] => None,
        ["commands", "mod"] => Some("commands".into()),
        ["commands", x, ..] => Some(format!("commands::{x}")),
        [x, ..] => Some((*x).to_string()),
        [] => None,
    }
}

/// The production text of a file: line comments removed, and cut at its `#[cfg(test)]`
/// module.
fn production_text(text: &str) -> String {
    let mut out = String::new();
    let mut prev_cfg_test = false;
    for line in text.lines() {
        let t = line.trim();
        if prev_cfg_test && t.starts_with("mod ") {
            break;
        }
        prev_cfg_test = t == "#[cfg(test)]";
        out.push_str(line.split("//").next().unwrap_or(""));
        out.push('\n');
    }
    out
}

/// The modules `text` names through `crate::` paths, among `nodes`.
fn imports(text: &str, nodes: &BTreeSet<String>) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue; // e.g. `wirebench_crate::`
        }
        let rest = &text[i + "crate::".len()..];
        let first = ident(rest);
        let name = if first == "commands" {
            let sub = ident(rest.trim_start_matches("commands::"));
            let qualified = format!("commands::{sub}");
            if nodes.contains(&qualified) {
                qualified
            } else {
                first
            }
        } else {
            first
        };
        if nodes.contains(&name) {
            out.insert(name);
        }
    }
    out
}

/// The files `lib.rs` declares under `#[cfg(test)]` (test-only modules).
fn test_only_modules(lib: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0] == "#[cfg(test)]")
        .filter_map(|w| w[1].strip_prefix("mod ")?.strip_suffix(';'))
        .map(String::from)
        .collect()
}

fn rust_files(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(base).expect("under src");
            let rel = rel.to_string_lossy().replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&path).expect("read file")));
        }
    }
}

/// The graph of `files` (path under `src/`, text).
fn graph(files: &[(String, String)]) -> Graph {
    let lib = files
        .iter()
        .find(|(p, _)| p == "lib.rs")
        .map_or("", |(_, t)| t.as_str());
    let test_only = test_only_modules(lib);
    let owned: Vec<(String, &str)> = files
        .iter()
        .filter_map(|(p, t)| Some((node_of(p)?, t.as_str())))
        .filter(|(n, _)| !test_only.contains(n))
        .collect();
    let nodes: BTreeSet<String> = owned.iter().map(|(n, _)| n.clone()).collect();
    let mut g = Graph::new();
    for (node, text) in owned {
        let mut deps = imports(&production_text(text), &nodes);
        deps.remove(&node);
        g.entry(node).or_default().extend(deps);
    }
    g
}

/// A cycle of `g` as the modules along it (the first repeated at the end), if it has one.
fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &Graph,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut cycle = path[at..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, g, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(n, g, &mut done, &mut Vec::new()))
}

/// The imports that break the commands' rule, as `from -> to`.
fn rule_breaks(g: &Graph) -> Vec<String> {
    let is_command = |n: &str| n.starts_with("commands::");
    g.iter()
        .flat_map(|(from, deps)| deps.iter().map(move |to| (from, to)))
        .filter(|(from, to)| is_command(to) && !matches!(from.as_str(), "cli" | "commands"))
        .map(|(from, to)| format!("{from} -> {to}"))
        .collect()
}

fn this_crate() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &src, &mut files);
    graph(&files)
}

#[test]
fn the_crate_has_no_import_cycle() {
    let g = this_crate();
    assert!(
        g.contains_key("commands::test") && g.contains_key("sweep"),
        "{g:?}"
    );
    if let Some(c) = find_cycle(&g) {
        panic!("import cycle among the crate's modules: {}", c.join(" -> "));
    }
}

#[test]
fn commands_import_shared_modules_only() {
    let breaks = rule_breaks(&this_crate());
    assert!(
        breaks.is_empty(),
        "a command imported outside cli/commands: {breaks:?}"
    );
}

#[test]
fn the_scan_finds_a_cycle_and_a_broken_rule() {
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let files = [
        file("lib.rs", "pub mod a;\n#[cfg(test)]\nmod t;"),
        file("a.rs", "use crate::b::f; // crate::c\n"),
        file("b/mod.rs", "fn g() { crate::commands::x::run(); }\n"),
        file("commands/mod.rs", "use crate::a;"),
        file("commands/x.rs", "use crate::{EXIT_OK};\nuse crate::a::h;\n"),
        file("c.rs", "#[cfg(test)]\nmod tests { use crate::a; }\n"),
        file("t.rs", "use crate::a;"),
    ];
    let g = graph(&files);
    assert_eq!(g["a"], BTreeSet::from(["b".to_string()]));
    assert!(
        g["c"].is_empty(),
        "test modules and comments are not imports"
    );
    assert!(!g.contains_key("t"), "test-only files are left out");
    let cycle = find_cycle(&g).expect("a -> b -> commands::x -> a");
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4, "{cycle:?}");
    assert_eq!(rule_breaks(&g), ["b -> commands::x"]);
}
