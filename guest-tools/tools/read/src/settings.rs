//! The Read tool's settings (AgentScope's constructor arguments).

use serde_json::Value;

/// Settings of `Read`, from the tool configuration (`[tools.Read]` in
/// `toolhost.toml`): `max_line_characters` (a positive integer, default
/// 2000) and `model_input_types` (media types or globs such as `image/*`;
/// default `image/png`, `image/jpeg`, `image/gif`, `image/webp`). A key with
/// a value of the wrong type keeps its default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Lines longer than this many characters are cut and marked `[truncated]`.
    pub max_line_characters: usize,
    /// Media types the model accepts as data blocks (globs allowed).
    pub model_input_types: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_line_characters: 2000,
            model_input_types: ["image/png", "image/jpeg", "image/gif", "image/webp"].map(String::from).to_vec(),
        }
    }
}

impl Settings {
    /// Reads the settings from a tool configuration object.
    pub fn from_config(config: &Value) -> Self {
        let mut s = Self::default();
        if let Some(n) = config.get("max_line_characters").and_then(Value::as_u64).filter(|n| *n > 0) {
            s.max_line_characters = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(list) = config.get("model_input_types").and_then(Value::as_array)
            && list.iter().all(Value::is_string)
        {
            s.model_input_types = list.iter().filter_map(Value::as_str).map(String::from).collect();
        }
        s
    }

    /// Whether `media_type` matches one of the accepted types (fnmatch globs).
    pub fn accepts(&self, media_type: &str) -> bool {
        self.model_input_types.iter().any(|g| file_common::fnmatch(g, media_type))
    }

    /// The accepted entries that are image types, as listed in messages.
    pub fn accepted_image_types(&self) -> Vec<&str> {
        self.model_input_types.iter().map(String::as_str).filter(|t| t.starts_with("image/")).collect()
    }
}
