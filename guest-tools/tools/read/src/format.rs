//! Text formatting: line splitting, the `cat -n` numbered format, binary
//! sniffing.

/// How many leading bytes are looked at for a NUL byte.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Whether `bytes` look like a binary file: a NUL byte in the first
/// [`BINARY_SNIFF_BYTES`] bytes (git's and ripgrep's heuristic).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// Splits normalised text into lines, each keeping its `\n` (the last one
/// may lack it); `""` has no lines.
pub fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
}

/// Lines `offset ..= offset + limit - 1` (1-based) of `text`, each as
/// `{number:>6}\t{line}`: the line end stripped, lines longer than
/// `max_chars` characters cut to that many and followed by `[truncated]`;
/// joined by `\n`, no trailing newline. An offset past the end gives `""`.
pub fn format_lines(text: &str, offset: usize, limit: usize, max_chars: usize) -> String {
    let start = offset.max(1) - 1;
    let mut out = String::new();
    for (i, line) in split_lines(text).enumerate().skip(start).take(limit) {
        if i > start {
            out.push('\n');
        }
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(&format!("{:>6}\t", i + 1));
        match line.char_indices().nth(max_chars) {
            Some((cut, _)) => {
                out.push_str(&line[..cut]);
                out.push_str("[truncated]");
            }
            None => out.push_str(line),
        }
    }
    out
}
