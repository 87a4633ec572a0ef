//! ripgrep's output formats and the reference's pagination.

use toolhost_sdk::backend::{SearchFile, SearchMode};

/// How results are printed.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// What was searched for.
    pub mode: SearchMode,
    /// Prefix lines with the file path (rg does unless one file was given).
    pub with_path: bool,
    /// Prefix content lines with their line number (`-n`).
    pub line_numbers: bool,
    /// Context was asked for: `--` between non-adjacent groups and files.
    pub separators: bool,
}

/// The output lines rg would print (non-tty defaults): content
/// `path:line:text`, context `path-line-text`, `--` between groups; count
/// `path:n`; files mode one path per line. Empty lines are dropped (the
/// reference drops them from rg's output).
pub fn lines(files: &[SearchFile], style: &Style, display: impl Fn(&str) -> String) -> Vec<String> {
    let mut out = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        let path = display(&f.path);
        match style.mode {
            SearchMode::FilesWithMatches => out.push(path),
            SearchMode::Count => {
                out.push(if style.with_path { format!("{path}:{}", f.count) } else { f.count.to_string() });
            }
            SearchMode::Content => {
                for (li, line) in f.lines.iter().enumerate() {
                    if style.separators && ((li == 0 && fi > 0) || (li > 0 && line.gap_before)) {
                        out.push("--".to_string());
                    }
                    let sep = if line.is_context { '-' } else { ':' };
                    let mut s = String::with_capacity(path.len() + line.text.len() + 12);
                    if style.with_path {
                        s.push_str(&path);
                        s.push(sep);
                    }
                    if style.line_numbers {
                        s.push_str(&line.line_number.to_string());
                        s.push(sep);
                    }
                    s.push_str(&line.text);
                    out.push(s);
                }
            }
        }
    }
    out.retain(|l| !l.is_empty());
    out
}

/// The reference's pagination: `head_limit` 0 → everything from `offset`;
/// else (`None` → 250) that many lines from `offset`, and when more remain
/// the note `[Showing results with pagination = limit: L(, offset: O)]`
/// after a blank line.
pub fn paginate(lines: &[String], head_limit: Option<usize>, offset: usize) -> String {
    let start = offset.min(lines.len());
    if head_limit == Some(0) {
        return lines[start..].join("\n");
    }
    let eff = head_limit.unwrap_or(super::DEFAULT_HEAD_LIMIT);
    let end = start.saturating_add(eff).min(lines.len());
    let mut text = lines[start..end].join("\n");
    if lines.len().saturating_sub(offset) > eff {
        text.push_str(&format!("\n\n[Showing results with pagination = limit: {eff}"));
        if offset > 0 {
            text.push_str(&format!(", offset: {offset}"));
        }
        text.push(']');
    }
    text
}
