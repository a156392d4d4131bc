//! Every command, policy and option of the repository's commands.json is in the
//! generated surface (generated from it by `make clients`; `make lint` fails when it
//! is stale), and the crate's version is the module's. No server needed; nothing
//! here names a command, so a command added to the table needs no edit.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = manifest_dir().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The repository's commands.json (generated from the command table by `make
/// commands-json`).
fn table() -> Value {
    serde_json::from_str(&read("../../commands.json")).expect("commands.json is JSON")
}

fn names<'a>(v: &'a Value, list: &str) -> Vec<&'a str> {
    v[list]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| c["name"].as_str().or(c["word"].as_str()))
        .collect()
}

#[test]
fn the_generated_surface_has_every_command_policy_and_option() {
    let table = table();
    let generated = read("src/generated/commands.rs");
    let mut missing = Vec::new();
    for c in table["commands"].as_array().expect("commands") {
        let name = c["name"].as_str().expect("a name");
        if !generated.contains(&format!("\"{name}\"")) {
            missing.push(name.to_string());
        }
        match c["function"].as_str() {
            Some(f) if !generated.contains(&format!("Some(\"{f}\")")) => {
                missing.push(format!("{name}'s function {f}"))
            }
            _ => {}
        }
        for option in names(c, "options") {
            if !generated.contains(&format!("\"{option}\"")) {
                missing.push(format!("{name} {option}"));
            }
        }
    }
    for word in names(&table, "policies") {
        if !generated.contains(&format!("Some(\"{word}\")")) {
            missing.push(format!("policy {word}"));
        }
    }
    assert!(
        missing.is_empty(),
        "not in the generated surface (run `make clients`): {missing:?}"
    );
}

fn package_version(cargo_toml: &Path) -> String {
    let text = std::fs::read_to_string(cargo_toml).unwrap();
    let mut in_package = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(v) = line.strip_prefix("version") {
                let v = v.trim_start().trim_start_matches('=').trim();
                return v.trim_matches('"').to_string();
            }
        }
    }
    panic!("no [package] version in {}", cargo_toml.display());
}

#[test]
fn version_is_the_modules() {
    let root = package_version(&manifest_dir().join("../../Cargo.toml"));
    assert_eq!(rl_client::VERSION, root);
    assert_eq!(package_version(&manifest_dir().join("Cargo.toml")), root);
}
