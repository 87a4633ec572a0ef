//! The MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.10,
//! npm, HTTP, protocol versions up to 2025-11-25) against the fixture
//! server (`tests/src/bin/mcp_fixture.rs`: `toolhost_mcp` over a host whose
//! fixture tools are native function tools, called through the whole
//! pipeline). Every scenario of `--suite all` runs; the ones toolhost does
//! not serve are listed, with the reason, in
//! `tests/mcp/conformance-expected-failures.txt`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;
use toolhost_e2e::mcp::{HttpServer, conformance_suite};
use toolhost_e2e::{Scratch, root};

/// The listed scenarios (the first word of each line that is not a comment).
fn expected_failures() -> BTreeSet<String> {
    let path = root().join("tests/mcp/conformance-expected-failures.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, reason) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            assert!(!reason.trim().is_empty(), "{name}: the list gives every scenario a reason");
            name.to_string()
        })
        .collect()
}

/// The server scenarios the suite knows (`conformance list`).
fn scenarios(suite: &std::path::Path) -> BTreeSet<String> {
    let out = Command::new("node").arg(suite).arg("list").output().expect("running conformance list");
    assert!(out.status.success(), "conformance list failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let server = text.split("Client scenarios").next().unwrap_or_default();
    let names: BTreeSet<String> =
        server.lines().filter_map(|l| l.trim().strip_prefix("- ")).map(str::to_string).collect();
    assert!(names.len() > 20, "conformance list named too few server scenarios: {text}");
    names
}

/// Scenario → its failed checks (empty: passed), from the `checks.json`
/// each scenario writes into `server-<scenario>-<timestamp>/`.
fn results(out: &std::path::Path, names: &BTreeSet<String>) -> BTreeMap<String, Vec<String>> {
    let mut results = BTreeMap::new();
    for entry in std::fs::read_dir(out).expect("the suite's output folder") {
        let dir = entry.unwrap().path();
        let folder = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Some(name) = names.iter().find(|n| {
            folder
                .strip_prefix(&format!("server-{n}-"))
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        }) else {
            continue;
        };
        let checks: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(dir.join("checks.json")).unwrap())
            .unwrap_or_else(|e| panic!("{folder}/checks.json: {e}"));
        let failed = checks
            .iter()
            .filter(|c| c["status"] == "FAILURE")
            .map(|c| format!("{}: {}", c["id"], c["errorMessage"].as_str().unwrap_or("")))
            .collect();
        results.insert(name.clone(), failed);
    }
    results
}

#[test]
fn mcp_conformance_suite_passes_all_but_the_listed_scenarios() {
    let Some(suite) = conformance_suite() else { return };
    let scratch = Scratch::new();
    let server = HttpServer::spawn(
        &scratch,
        &[
            env!("CARGO_BIN_EXE_mcp_fixture").to_string(),
            "--http".to_string(),
            "127.0.0.1:0".to_string(),
            "--conformance".to_string(),
            "--cache-dir".to_string(),
            root().join("target/test-cache").display().to_string(),
        ],
    );
    let names = scenarios(suite);
    let expected = expected_failures();
    let stale: Vec<_> = expected.difference(&names).collect();
    assert!(stale.is_empty(), "the list names scenarios the suite does not have: {stale:?}");

    let out = scratch.dir.path().join("conformance");
    let run = Command::new("node")
        .arg(suite)
        .args(["server", "--url", &server.url, "--suite", "all", "-o"])
        .arg(&out)
        .output()
        .expect("running the conformance suite");
    let log = String::from_utf8_lossy(&run.stdout);
    let results = results(&out, &names);
    let missing: Vec<_> = names.iter().filter(|n| !results.contains_key(*n)).collect();
    assert!(missing.is_empty(), "scenarios that wrote no result: {missing:?}\n{log}");

    let unexpected: Vec<_> =
        results.iter().filter(|(n, failed)| !failed.is_empty() && !expected.contains(*n)).collect();
    assert!(unexpected.is_empty(), "scenarios failed that should pass: {unexpected:#?}");
    let passing: Vec<_> = results.iter().filter(|(n, failed)| failed.is_empty() && expected.contains(*n)).collect();
    assert!(
        passing.is_empty(),
        "listed scenarios now pass: take them off tests/mcp/conformance-expected-failures.txt: {passing:?}"
    );
    // The tool scenarios toolhost serves are among those that passed.
    for served in ["server-initialize", "tools-list", "tools-call-simple-text", "tools-call-with-progress"] {
        assert!(results[served].is_empty(), "{served}: {:?}", results[served]);
    }
}
