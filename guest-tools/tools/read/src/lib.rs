//! `Read`: reads a text file as numbered lines, an image as a data block, or
//! a PDF as a document or as text per page (AgentScope's `Read`, spec §6.2).
//!
//! Differences from the reference (also in `docs/tools.md`):
//! * a file with a NUL byte in its first 8 KiB that is neither an image nor a
//!   PDF is refused as binary instead of being shown as garbage;
//! * the settings (`max_line_characters`, `model_input_types`) reach `call`
//!   through the `TOOLHOST_TOOL_CONFIG` environment variable when the host
//!   sets it; otherwise their defaults apply.

#![warn(missing_docs)]

mod format;
mod pdf;
mod settings;

use serde::Deserialize;
use serde_json::json;
use toolhost_sdk::{
    Context, Decision, Output, PermissionBehavior, PermissionRule, Tool, ToolError, ToolSpec, backend, export_tool,
    state, suggest,
};

pub use format::{BINARY_SNIFF_BYTES, format_lines, looks_binary, split_lines};
pub use settings::Settings;

/// The `Read` tool.
pub struct Read;

/// The input of `Read`.
#[derive(Debug, Deserialize)]
pub struct Input {
    /// Absolute path of the file.
    pub file_path: String,
    /// First line to show, 1-based.
    #[serde(default = "default_offset")]
    pub offset: i64,
    /// How many lines to show.
    #[serde(default = "default_limit")]
    pub limit: i64,
    /// For PDFs: a page or a range of pages (`"3"`, `"1-5"`).
    #[serde(default)]
    pub pages: Option<String>,
}

fn default_offset() -> i64 {
    1
}

fn default_limit() -> i64 {
    2000
}

/// The kind of file, from the extension of its base name (lower-cased).
#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    /// A PDF document.
    Pdf,
    /// An image with this media type.
    Image(&'static str),
    /// Anything else: read as text.
    Text,
}

/// Classifies `path` by extension as the reference does.
pub fn kind_of(path: &str) -> Kind {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let ext = match base.rfind('.') {
        // `.bashrc` has no extension (os.path.splitext).
        Some(i) if base[..i].chars().any(|c| c != '.') => base[i..].to_lowercase(),
        _ => String::new(),
    };
    match ext.as_str() {
        ".pdf" => Kind::Pdf,
        ".png" => Kind::Image("image/png"),
        ".jpg" | ".jpeg" => Kind::Image("image/jpeg"),
        ".gif" => Kind::Image("image/gif"),
        ".webp" => Kind::Image("image/webp"),
        ".bmp" => Kind::Image("image/bmp"),
        ".tiff" | ".tif" => Kind::Image("image/tiff"),
        ".ico" => Kind::Image("image/x-icon"),
        _ => Kind::Text,
    }
}

fn basename(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// The model-facing description for the given settings (the reference
/// computes it from the accepted media types).
pub fn description(settings: &Settings) -> String {
    let mut d = String::from(
        "Reads a file from the filesystem.\n\n\
         Usage:\n\
         - The file_path parameter must be an absolute path, not a relative path.\n\
         - By default it reads up to 2000 lines from the beginning of the file; use offset (1-based line number) \
           and limit to read other parts of long files.\n",
    );
    d.push_str(&format!(
        "- Lines longer than {} characters are truncated.\n\
         - The result is in cat -n format: each line is prefixed with its line number, right-aligned, and a tab.\n",
        settings.max_line_characters
    ));
    let images = settings.accepted_image_types();
    if !images.is_empty() {
        d.push_str(&format!("- Images ({}) are returned for you to look at.\n", images.join(", ")));
    }
    if settings.accepts("application/pdf") {
        d.push_str("- PDF files are returned as documents.");
    } else {
        d.push_str("- PDF files: text is extracted per page.");
    }
    d.push_str(
        " For a PDF with more than 10 pages you must pass pages (e.g. \"1-5\"); at most 20 pages per request.\n\
         - Binary files other than images and PDFs are not shown.",
    );
    d
}

/// Reads `path` as text lines, from the read cache when it is still valid,
/// else from the backend (then caching the whole normalised content).
fn text_content(path: &str) -> Result<String, String> {
    if let Some(cached) = state::cached_file(path) {
        return Ok(cached);
    }
    let bytes = backend::read_file(path).map_err(|e| format!("Error reading file: {}", file_common::error_text(&e)))?;
    if looks_binary(&bytes) {
        return Err(format!("Error: {path} appears to be a binary file; Read shows text, images and PDFs only."));
    }
    let text = String::from_utf8_lossy(&bytes);
    let content = file_common::normalize_newlines(&text).into_owned();
    state::cache_file(path, &content);
    Ok(content)
}

fn run(input: &Input, settings: &Settings, out: &mut Output) -> Result<(), String> {
    let path = input.file_path.as_str();
    if !file_common::is_absolute(path) {
        return Err(file_common::not_absolute(path));
    }
    match backend::stat(path) {
        Ok(st) if st.kind == backend::EntryKind::Directory => {
            return Err(format!("Error: Path is a directory, not a file: {path}"));
        }
        Ok(_) => {}
        Err(ToolError::NotFound(_)) => return Err(format!("Error: File does not exist: {path}")),
        Err(e) => return Err(format!("Error: {}", file_common::error_text(&e))),
    }
    match kind_of(path) {
        Kind::Image(media_type) => {
            if !settings.accepts(media_type) {
                let accepted = settings.accepted_image_types();
                let list = if accepted.is_empty() { "none".to_string() } else { accepted.join(", ") };
                return Err(format!("Error: Unsupported image type {media_type}, only {list} are supported."));
            }
            let bytes =
                backend::read_file(path).map_err(|e| format!("Error reading file: {}", file_common::error_text(&e)))?;
            out.data(media_type, bytes, Some(basename(path)));
            Ok(())
        }
        Kind::Pdf => {
            let bytes =
                backend::read_file(path).map_err(|e| format!("Error reading PDF: {}", file_common::error_text(&e)))?;
            match pdf::read(&bytes, input.pages.as_deref(), settings.accepts("application/pdf"))? {
                pdf::PdfOutput::Document(doc) => {
                    out.data("application/pdf", doc, Some(basename(path)));
                }
                pdf::PdfOutput::Text(text) => {
                    out.text(&text);
                }
            }
            Ok(())
        }
        Kind::Text => {
            let content = text_content(path)?;
            let offset = usize::try_from(input.offset.max(1)).unwrap_or(1);
            let limit = usize::try_from(input.limit.max(0)).unwrap_or(0);
            out.text(&format_lines(&content, offset, limit, settings.max_line_characters));
            Ok(())
        }
    }
}

impl Tool for Read {
    type Input = Input;

    fn spec() -> ToolSpec {
        let settings = Settings::from_config(&file_common::tool_config());
        ToolSpec::new("Read", &description(&settings))
            .schema(json!({
                "type": "object",
                "description": "The parameters of the Read tool.",
                "properties": {
                    "file_path": {"type": "string", "description": "The absolute path to the file to read"},
                    "offset": {"type": "integer", "default": 1, "minimum": 1,
                               "description": "The line number to start reading from (1-based)"},
                    "limit": {"type": "integer", "default": 2000, "minimum": 1, "maximum": 2000,
                              "description": "The number of lines to read"},
                    "pages": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null,
                              "description": "Page range for PDF files (e.g. \"1-5\", \"3\"); required for PDFs of more than 10 pages, at most 20 pages per request"}
                },
                "required": ["file_path"]
            }))
            .read_only(true)
            .concurrency_safe(true)
            .state_injected(true)
            .reads("$WORKDIRS")
    }

    fn check_permissions(_input: &Input, _ctx: &Context) -> Decision {
        Decision::passthrough("File reading is read-only.")
    }

    fn match_rule(behavior: PermissionBehavior, rule_content: &str, input: &Input, _ctx: &Context) -> bool {
        file_common::file_rule_matches(behavior, rule_content, &input.file_path)
    }

    fn suggestions(input: &Input, _ctx: &Context) -> Vec<PermissionRule> {
        file_common::file_rule_suggestion(&input.file_path).map(|c| suggest("Read", Some(c))).into_iter().collect()
    }

    fn call(input: Input, out: &mut Output) -> Result<(), ToolError> {
        let settings = Settings::from_config(&file_common::tool_config());
        if let Err(message) = run(&input, &settings, out) {
            out.error(&message);
        }
        Ok(())
    }
}

export_tool!(Read);

#[cfg(test)]
mod tests;
