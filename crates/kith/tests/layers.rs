//! The crate dependency graph respects the layer order ARCHITECTURE.md
//! states: its crate table lists the crates from the bottom layer up, and a
//! crate may depend only on crates listed above it. Every crate of the
//! workspace must be in the table, so the document cannot drift from the
//! tree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The crate names of the table rows (`| `kith-x` | ... |`), in order.
fn layer_order(architecture: &str) -> Vec<String> {
    architecture
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| name.to_string())
        .filter(|name| name.starts_with("kith"))
        .collect()
}

/// The workspace crates a manifest's `[dependencies]` name (not dev- or
/// build-dependencies: tests may reach anywhere).
fn kith_dependencies(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if !in_deps {
            continue;
        }
        let key = line
            .split(['=', '.', ' '])
            .next()
            .unwrap_or("")
            .trim_matches('"');
        if key.starts_with("kith") {
            out.push(key.to_string());
        }
    }
    out
}

#[test]
fn dependencies_point_down_the_layer_table() {
    let root = root();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let order = layer_order(&architecture);
    assert!(order.len() > 5, "no crate table found in ARCHITECTURE.md");
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let mut problems = Vec::new();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").exists())
        .collect();
    crates.sort();
    for dir in crates {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let Some(&own) = rank.get(name.as_str()) else {
            problems.push(format!(
                "crate {name} is not in ARCHITECTURE.md's crate table"
            ));
            continue;
        };
        for dep in kith_dependencies(&manifest) {
            match rank.get(dep.as_str()) {
                Some(&r) if r < own => {}
                Some(_) => problems.push(format!(
                    "{name} depends on {dep}, which the table lists at or below it"
                )),
                None => problems.push(format!(
                    "{name} depends on {dep}, which is not in the crate table"
                )),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "layer violations:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_parsers_read_what_they_should() {
    let table = "| crate | owns |\n|---|---|\n| `kith-common` | x |\n| `kith-exec` | y |\n";
    assert_eq!(layer_order(table), vec!["kith-common", "kith-exec"]);
    let manifest = "[package]\nname = \"kith-x\"\n[dependencies]\nkith-common.workspace = true\n\
                    kith-pager = { path = \"../kith-pager\" }\nserde = \"1\"\n\
                    [dev-dependencies]\nkith-exec = { path = \"../kith-exec\" }\n";
    assert_eq!(
        kith_dependencies(manifest),
        vec!["kith-common", "kith-pager"]
    );
}
