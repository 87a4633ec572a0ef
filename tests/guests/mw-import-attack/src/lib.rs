//! `mw-import-attack`: a middleware that passes hostile arguments to the
//! import only middleware reach, `chain`, chosen by the call's input
//! (`attack`), and reports what each case got as a JSON object:
//!
//! - `input`: `next.run` with text that is not JSON, JSON that is not an
//!   object, an object the tool's schema refuses, a 16 MiB input;
//!   `outcome` twice and `next-chunk` after the end;
//! - `flood`: 300 runs started and never read past their first chunk,
//!   each holding an instance of the tool while its output waits; it
//!   reports how many started and ran, then holds
//!   them until the state key `release` is set (it needs the `state`
//!   grant), so that a test can make another call meanwhile;
//! - `handle`: a next-handler the host never gave out (traps).
//!
//! The other imports (`backend`, `state`, `log`, `output`) are the same
//! host code a tool reaches: `import-attack` covers them.
use serde_json::{Map, Value, json};
use toolhost_sdk::middleware::{Middleware, Next};
use toolhost_sdk::middleware_bindings::toolhost::tool::chain::NextHandler;
use toolhost_sdk::{Output, ToolError, ToolMetadata, export_middleware, state};

struct Hostile;

fn outcome<T>(result: Result<T, ToolError>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => {
            let text = format!("{e:?}");
            format!("err: {}", &text[..text.len().min(300)])
        }
    }
}

impl Middleware for Hostile {
    const NAME: &'static str = "mw-import-attack";
    const DESCRIPTION: &'static str = "Passes hostile arguments to the chain import.";
    fn on_tool_call(_tool: &ToolMetadata, input: String, next: &Next, out: &mut Output) -> Result<(), ToolError> {
        let given: Value = serde_json::from_str(&input).unwrap_or_default();
        let mut r = Map::new();
        match given["attack"].as_str().unwrap_or_default() {
            "input" => {
                for (case, text) in [
                    ("not-json", "{not json".to_string()),
                    ("array", "[1]".to_string()),
                    ("schema", "{}".to_string()),
                    ("nested", "[".repeat(100_000)),
                    ("huge", json!({"text": "h".repeat(16 << 20)}).to_string()),
                ] {
                    r.insert(format!("run {case}"), outcome(next.run(&text).map(|c| c.outcome())).into());
                }
                let call = next.run(&input)?;
                let first = call.outcome();
                let second = call.outcome();
                r.insert("outcome twice".into(), format!("{} {}", outcome(first), outcome(second)).into());
                r.insert("next-chunk after end".into(), format!("{:?}", call.next_chunk().is_none()).into());
            }
            "flood" => {
                let mut held = Vec::new();
                let mut refused = None;
                for i in 0..300 {
                    match next.run(&input) {
                        Ok(call) => held.push(call),
                        Err(e) => {
                            refused = Some(format!("refused at {i}: {e:?}"));
                            break;
                        }
                    }
                }
                // A first chunk from each: each run holds an instance now.
                let running = held.iter().filter(|call| call.next_chunk().is_some()).count();
                r.insert("started".into(), held.len().into());
                r.insert("running".into(), running.into());
                r.insert("refused".into(), refused.unwrap_or_default().into());
                // Reports now, then holds the runs until the test, having
                // made a call of its own meanwhile, sets the state key
                // `release` (reading it needs the `state` grant).
                out.text(&Value::Object(std::mem::take(&mut r)).to_string());
                while !matches!(state::get("release"), Ok(Some(_))) {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                return Ok(());
            }
            _ => {
                // SAFETY: deliberately a handle the host never gave out.
                let forged = unsafe { NextHandler::from_handle(0x00de_adbe) };
                r.insert("forged".into(), outcome(forged.run(&input)).into());
            }
        }
        out.text(&Value::Object(r).to_string());
        Ok(())
    }
}
export_middleware!(Hostile);
