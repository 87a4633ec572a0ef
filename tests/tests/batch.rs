//! A batch of calls: consecutive concurrency-safe calls overlap in time, the
//! others never overlap with anything, and results come back in call order.

use std::sync::Arc;

use serde_json::json;
use toolhost::batch::BatchResult;
use toolhost::{CallRequest, PermissionAnswer};
use toolhost_e2e::{Scratch, guest, text};

fn interval(r: &BatchResult) -> (u128, u128) {
    let BatchResult::Finished { response, .. } = r else { panic!("not finished: {r:?}") };
    let t = response.text();
    let mut parts = t.split_whitespace().map(|p| p.parse::<u128>().expect("a timestamp"));
    (parts.next().expect("start"), parts.next().expect("end"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_calls_overlap_and_unsafe_calls_run_alone_in_order() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.extend([guest("nap"), guest("nap-safe")]);
    let host = scratch.host(s).await;

    // Long enough that a loaded machine cannot delay a start past the
    // others' end.
    let plan = ["NapSafe", "NapSafe", "NapSafe", "Nap", "Nap", "NapSafe", "NapSafe"];
    let calls: Vec<CallRequest> = plan
        .iter()
        .enumerate()
        .map(|(i, tool)| CallRequest::new(*tool, json!({"millis": 800}).to_string()).id(format!("c{i}")))
        .collect();
    let results = host.run_batch(calls, Arc::new(|_| PermissionAnswer::Deny)).await;

    let ids: Vec<&str> = results
        .iter()
        .map(|r| match r {
            BatchResult::Finished { id, .. } | BatchResult::External { id, .. } | BatchResult::NotStarted { id } => {
                id.as_str()
            }
        })
        .collect();
    assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4", "c5", "c6"], "results come back in call order");
    let spans: Vec<(u128, u128)> = results.iter().map(interval).collect();

    let overlap = |group: &[(u128, u128)]| group.iter().map(|s| s.0).max() < group.iter().map(|s| s.1).min();
    assert!(overlap(&spans[0..3]), "the first three safe calls must run together: {spans:?}");
    assert!(overlap(&spans[5..7]), "the last two safe calls must run together: {spans:?}");
    for unsafe_index in [3, 4] {
        let (start, end) = spans[unsafe_index];
        for (j, other) in spans.iter().enumerate() {
            if j != unsafe_index {
                assert!(other.1 <= start || other.0 >= end, "call {unsafe_index} overlapped call {j}: {spans:?}");
            }
        }
    }
}

#[test]
fn cli_run_executes_a_batch_and_prints_results_in_order() {
    let scratch = Scratch::new();
    let batch = scratch.dir.path().join("batch.json");
    std::fs::write(
        &batch,
        json!([
            {"id": "a", "tool": "NapSafe", "input": {"millis": 10}},
            {"id": "b", "tool": "Nope", "input": {}},
            {"id": "c", "tool": "Nap", "input": {"millis": 10}}
        ])
        .to_string(),
    )
    .unwrap();
    let (nap, safe) = (guest("nap").display().to_string(), guest("nap-safe").display().to_string());
    let out = scratch.cli(&["--no-builtins", "--plugin", &nap, "--plugin", &safe, "run", batch.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    let results: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let ids: Vec<&str> = results.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(results[1]["response"]["state"], "error");
    assert_eq!(out.status.code(), Some(1), "an error in the batch makes the exit code 1");
}
