//! `{{Tool}}`: a toolhost tool written in Rust. Build it with `toolhost build`.

/// Greets someone by name.
#[toolhost_sdk::tool(read_only, concurrency_safe)]
fn {{tool}}(
    /// Who to greet.
    name: String,
    /// How many times to say it.
    #[default = 1]
    times: u32,
) -> String {
    vec![format!("Hello, {name}!"); times as usize].join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn greets() {
        assert_eq!(super::{{tool}}("Ada".into(), 2), "Hello, Ada!\nHello, Ada!");
    }
}
