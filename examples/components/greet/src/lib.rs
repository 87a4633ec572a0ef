//! `Greet`: a function tool. The whole tool is the one annotated function
//! below: its name (`greet` → `Greet`), its description (the doc comment)
//! and its input schema (from the parameters, their doc comments and
//! defaults) are derived at compile time.
//!
//! ```text
//! cargo build --release --target wasm32-wasip2 -p greet
//! toolhost --plugin target/wasm32-wasip2/release/greet.wasm --allow Greet call Greet '{"name":"Ada"}'
//! ```

/// Greets someone by name.
#[toolhost_sdk::tool(concurrency_safe)]
fn greet(
    /// Who to greet.
    name: String,
    /// How many times to say it.
    #[default = 1]
    times: u32,
    /// Shout the greeting (upper case).
    shout: Option<bool>,
) -> Result<String, String> {
    if name.trim().is_empty() {
        return Err("the name is empty; pass who to greet, e.g. {\"name\": \"Ada\"}".into());
    }
    if times > 10 {
        return Err(format!("{times} greetings are too many; ask for at most 10"));
    }
    let line = format!("Hello, {name}!");
    let line = if shout.unwrap_or(false) { line.to_uppercase() } else { line };
    Ok(vec![line; times as usize].join("\n"))
}
