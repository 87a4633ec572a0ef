//! Hot reload in a running `toolhost serve --watch`, driven by real MCP
//! clients (the Python SDK, through `tests/mcp/reload_client.py`) while the
//! plugin file in the watched folder is replaced under them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_e2e::{Scratch, ServeProcess, guest, mcp_python, root};

/// A scratch dir with `plugins/swap.wasm` = `first`.
fn plugins_with(first: &str) -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    let plugins = scratch.dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(guest(first), plugins.join("swap.wasm")).unwrap();
    (scratch, plugins)
}

/// Puts `component` at `dir/file`: written beside, then renamed in.
fn put(dir: &Path, file: &str, component: &str) {
    let tmp = dir.parent().unwrap().join(format!(".{file}.part"));
    std::fs::copy(guest(component), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join(file)).unwrap();
}

/// Runs `clients` MCP clients calling `tool` for `seconds`.
fn clients(python: &Path, url: &str, clients: usize, seconds: f64, tool: &str) -> std::process::Child {
    Command::new(python)
        .arg(root().join("tests/mcp/reload_client.py"))
        .args([url, &clients.to_string(), &seconds.to_string(), tool, "{}"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("running the Python MCP clients")
}

fn results(child: std::process::Child) -> Value {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the MCP clients failed: {}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).expect("the clients print JSON")
}

#[test]
fn calls_from_several_clients_all_succeed_while_the_file_is_replaced_many_times() {
    let Some(py) = mcp_python() else { return };
    let (scratch, plugins) = plugins_with("swap-v2");
    let dir = plugins.display().to_string();
    let server = ServeProcess::start(
        &scratch,
        &["--no-builtins", "--mode", "bypass", "--plugins", &dir, "--grant", "Swap=fs-read"],
        &["--watch"],
    );
    let running = clients(py, &server.url, 3, 8.0, "Swap");
    std::thread::sleep(Duration::from_millis(1500));
    let start = Instant::now();
    let mut replaced = 0;
    while start.elapsed() < Duration::from_secs(5) {
        put(&plugins, "swap.wasm", if replaced % 2 == 0 { "swap-v1" } else { "swap-v2" });
        replaced += 1;
        std::thread::sleep(Duration::from_millis(150));
    }
    let out = results(running);
    let results = out["results"].as_array().unwrap();
    assert!(results.len() > 30, "only {} calls ran", results.len());
    let (mut v1, mut v2) = (0, 0);
    for r in results {
        assert_eq!(r["is_error"], false, "a call failed during the reloads: {r}");
        match r["text"].as_str().unwrap() {
            "v1 v1 v1 " => v1 += 1,
            "v2 v2 v2 " => v2 += 1,
            other => panic!("a result from no one whole version: {other:?}"),
        }
    }
    assert!(v1 > 0 && v2 > 0, "both versions served ({v1} v1, {v2} v2) over {replaced} replacements");
}

#[test]
fn inspect_old_new_prints_the_capability_diff() {
    let scratch = Scratch::new();
    let (v1, v2) = (guest("swap-v1").display().to_string(), guest("swap-v2").display().to_string());
    let out = scratch.cli(&["inspect", &v1, &v2]);
    let (stdout, stderr) = toolhost_e2e::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("+ read /") && stdout.contains("+ write /"), "{stdout}");
    assert!(stdout.contains("--grant Swap=fs-read:/ --grant Swap=fs-write:/"), "{stdout}");
    let out = scratch.cli(&["inspect", &v2, &v1, "--json"]);
    let diff: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(diff["asks_for_more"], false);
    assert_eq!(
        diff["removed"],
        serde_json::json!([{"capability": "fs_read", "root": "/"}, {"capability": "fs_write", "root": "/"}])
    );
}
