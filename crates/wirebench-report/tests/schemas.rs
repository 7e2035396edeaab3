//! The JSON Schemas checked in under `docs/` are what the types generate: one table, one
//! test. Regenerate with `WIREBENCH_BLESS=1 cargo test -p wirebench-report schema_file` and
//! review the diff (bump the document's schema version for incompatible changes).

use wirebench_model::{compare, limits, mesh, result, study, sweep};

/// One checked-in schema: the file under `docs/`, the types it describes, the function that
/// generates it, and top-level properties it must have (so that a schema of the wrong
/// document cannot pass).
struct SchemaFile {
    file: &'static str,
    types: &'static str,
    generate: fn() -> String,
    properties: &'static [&'static str],
}

const SCHEMA_FILES: &[SchemaFile] = &[
    SchemaFile {
        file: "results.schema.json",
        types: "RunResult",
        generate: result::schema_json,
        properties: &[
            "schema_version",
            "status",
            "spec",
            "runs",
            "aggregate",
            "error",
        ],
    },
    SchemaFile {
        file: "sweep.schema.json",
        types: "SweepResult",
        generate: sweep::sweep_schema_json,
        properties: &["schema_version", "factors", "points", "analysis", "status"],
    },
    SchemaFile {
        file: "study.schema.json",
        types: "study",
        generate: study::study_schema_json,
        properties: &["manifest", "point"],
    },
    SchemaFile {
        file: "mesh.schema.json",
        types: "MeshResult",
        generate: mesh::mesh_schema_json,
        properties: &["schema_version", "kind", "hosts", "tests"],
    },
    SchemaFile {
        file: "compare.schema.json",
        types: "Comparison",
        generate: compare::compare_schema_json,
        properties: &[],
    },
    SchemaFile {
        file: "limits.schema.json",
        types: "LimitsResult",
        generate: limits::limits_schema_json,
        properties: &[
            "schema_version",
            "boot_id",
            "memory",
            "syscall",
            "wakeup",
            "loopback",
        ],
    },
];

#[test]
fn schema_files_are_current() {
    let bless = std::env::var_os("WIREBENCH_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for s in SCHEMA_FILES {
        let generated = (s.generate)();
        let path = format!("{}/../../docs/{}", env!("CARGO_MANIFEST_DIR"), s.file);
        if bless {
            std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("writing {path}: {e}"));
            continue;
        }
        let checked_in =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
        if checked_in != generated {
            stale.push(format!("docs/{} ({} types)", s.file, s.types));
        }
        let v: serde_json::Value = serde_json::from_str(&generated)
            .unwrap_or_else(|e| panic!("docs/{} is not JSON: {e}", s.file));
        for field in s.properties {
            assert!(
                v["properties"].get(field).is_some(),
                "docs/{}: no top-level property {field}",
                s.file
            );
        }
    }
    assert!(
        stale.is_empty(),
        "out of date with their types: {}; regenerate them with `WIREBENCH_BLESS=1 cargo test \
         -p wirebench-report schema_file` and review the diff (bump the document's schema \
         version for incompatible changes)",
        stale.join(", ")
    );
}
