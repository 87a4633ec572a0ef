//! `sed` constraints (spec §5.4.7), applied to each `sed` part on its own.
//!
//! Differences from the reference: the arguments are the part's parsed
//! words (not a shlex split of the whole line), and every `-e`/`--expression`
//! script is validated (the reference validates only the first non-flag
//! token, spec §13.10).

use toolhost_policy::DangerLists;

/// One `sed` command line read as GNU sed's option parser reads it:
/// options anywhere before `--` (arguments are permuted), `-e`/`-f`/`-l`
/// take the rest of their token or the next argument, `-i` takes only an
/// attached suffix (`-i.orig`, `--in-place=.orig`), and without `-e`/`-f`
/// the first operand is the script.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct SedArgs {
    /// Every script (`-e` values, `--expression=` values, or the first
    /// operand), in order.
    pub scripts: Vec<String>,
    /// Indices (into the arguments) of the words that are scripts.
    pub script_words: Vec<usize>,
    /// Indices of the input-file operands.
    pub files: Vec<usize>,
    /// Script files (`-f FILE`, `--file=FILE`): their content is unknown.
    pub script_files: Vec<String>,
    /// `-i` / `--in-place` given, with its suffix (possibly empty).
    pub in_place: Option<String>,
    /// The short option letters met (`-i`'s and `-e`'s included), for the
    /// reference's flag allowlist.
    pub flags: Vec<char>,
    /// The first option GNU sed does not have (or that we do not model),
    /// as written (`-x`, `--debug-foo`).
    pub unknown: Option<String>,
    /// An option came after an operand: under `POSIXLY_CORRECT` it would
    /// be an operand instead, so the reading is ambiguous.
    pub option_after_operand: bool,
}

/// Long options of GNU sed 4.9 (exact names) other than those with values.
const SED_LONG_FLAGS: &[&str] = &[
    "quiet",
    "silent",
    "regexp-extended",
    "separate",
    "unbuffered",
    "null-data",
    "zero-terminated",
    "posix",
    "debug",
    "sandbox",
    "follow-symlinks",
    "binary",
    "help",
    "version",
];

/// Reads `args` (the words after `sed`) as GNU sed does; see [`SedArgs`].
pub(crate) fn parse_sed_args(args: &[&str]) -> SedArgs {
    let mut out = SedArgs::default();
    let mut operands: Vec<usize> = Vec::new();
    let mut explicit = false;
    let mut i = 0;
    while i < args.len() {
        let t = args[i];
        let at = i;
        i += 1;
        if t == "--" {
            operands.extend(i..args.len());
            break;
        }
        if !t.starts_with('-') || t == "-" {
            operands.push(at);
            continue;
        }
        out.option_after_operand |= !operands.is_empty();
        if let Some(long) = t.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            match name {
                "in-place" => out.in_place = Some(value.unwrap_or("").to_string()),
                "expression" | "file" | "line-length" => {
                    let v = match value {
                        Some(v) => Some(v.to_string()),
                        None => {
                            i += 1;
                            args.get(i - 1).map(|s| s.to_string())
                        }
                    };
                    if name == "line-length" {
                        continue;
                    }
                    explicit = true;
                    let Some(v) = v else {
                        out.unknown.get_or_insert(t.to_string());
                        continue;
                    };
                    if name == "file" {
                        out.script_files.push(v);
                    } else {
                        if value.is_none() {
                            out.script_words.push(i - 1);
                        } else {
                            out.script_words.push(at);
                        }
                        out.scripts.push(v);
                    }
                }
                n if SED_LONG_FLAGS.contains(&n) && value.is_none() => {}
                _ => {
                    out.unknown.get_or_insert(t.to_string());
                }
            }
            continue;
        }
        // A cluster of short options: `-ne'/x/p'`, `-i.orig`, `-l5`.
        for (k, c) in t.char_indices().skip(1) {
            out.flags.push(c);
            let rest = &t[k + c.len_utf8()..];
            match c {
                'i' => {
                    out.in_place = Some(rest.to_string());
                    break;
                }
                'e' | 'f' | 'l' => {
                    let (v, word) = if rest.is_empty() {
                        i += 1;
                        (args.get(i - 1).map(|s| s.to_string()), i - 1)
                    } else {
                        (Some(rest.to_string()), at)
                    };
                    if c != 'l' {
                        explicit = true;
                        match v {
                            None => {
                                out.unknown.get_or_insert(t.to_string());
                            }
                            Some(v) if c == 'e' => {
                                out.scripts.push(v);
                                out.script_words.push(word);
                            }
                            Some(v) => out.script_files.push(v),
                        }
                    }
                    break;
                }
                'n' | 'r' | 'E' | 's' | 'u' | 'z' | 'b' => {}
                _ => {
                    out.unknown.get_or_insert(format!("-{c}"));
                    break;
                }
            }
        }
    }
    let mut operands = operands.into_iter();
    if !explicit && let Some(first) = operands.next() {
        out.scripts.push(args[first].to_string());
        out.script_words.push(first);
    }
    out.files = operands.collect();
    out
}

/// True when this `sed` invocation only reads its inputs and writes to
/// standard output: no in-place editing, no script file, known options
/// only, and scripts with no command that writes a file, runs a program
/// or reads another file (`w`, `W`, `e`, `r`, `R`, `s///w`, `s///e`; see
/// [`script_is_read_only`]).
pub(crate) fn sed_is_read_only(args: &[&str]) -> bool {
    let s = parse_sed_args(args);
    s.in_place.is_none()
        && s.script_files.is_empty()
        && s.unknown.is_none()
        && !s.option_after_operand
        && !s.scripts.is_empty()
        && script_is_read_only(&s.scripts.join("\n"))
}

/// Checks one `sed` invocation given its arguments (quote-removed values);
/// `Some(error message)` when it is not allowed.
pub fn check_sed_args(args: &[&str], lists: &DangerLists) -> Option<String> {
    let s = parse_sed_args(args);
    for t in args.iter().take_while(|t| **t != "--") {
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            if !matches!(name, "in-place" | "quiet" | "silent" | "regexp-extended" | "expression") {
                return Some(format!("sed flag --{name} not allowed"));
            }
        }
    }
    if let Some(bad) = s.flags.iter().find(|c| !matches!(c, 'n' | 'E' | 'e' | 'i')) {
        return Some(format!("sed flag -{bad} not allowed"));
    }
    if s.scripts.is_empty() {
        return Some("sed command missing expression".to_string());
    }
    if let Some(u) = &s.unknown {
        return Some(format!("sed flag {u} not allowed"));
    }
    let n_flag = s.flags.contains(&'n') || args.iter().any(|a| matches!(*a, "--quiet" | "--silent"));
    for e in &s.scripts {
        if let Some(err) = check_expression(e, n_flag) {
            return Some(err);
        }
    }
    if s.in_place.is_some() {
        for f in s.files.iter().map(|&k| args[k]) {
            let fl = f.to_lowercase();
            for d in &lists.files {
                let dl = d.to_lowercase();
                if !dl.is_empty() && (fl.contains(&dl) || fl.ends_with(&dl)) {
                    return Some(format!("sed -i modifying dangerous file: {f}"));
                }
            }
        }
    }
    None
}

fn check_expression(e: &str, n_flag: bool) -> Option<String> {
    if has_write(e) {
        return Some("sed write operation (w/W) not allowed".to_string());
    }
    if has_execute(e) {
        return Some("sed execute operation (e/E) not allowed".to_string());
    }
    if e.contains('{') || e.contains('}') {
        return Some("sed curly braces not allowed".to_string());
    }
    if e.starts_with('!') {
        return Some("sed negation (!) not allowed".to_string());
    }
    if e.contains('#') && !e.starts_with("s#") {
        return Some("sed comments not allowed".to_string());
    }
    if n_flag && is_print_range(e) {
        return None;
    }
    if let Some(rest) = e.strip_prefix('s')
        && let Some(delim) = rest.chars().next().filter(|c| matches!(c, '/' | '|' | '#'))
    {
        let parts: Vec<&str> = rest[delim.len_utf8()..].split(delim).collect();
        if parts.len() >= 2 {
            let flags_ok = parts.get(2).is_none_or(|f| f.chars().all(|c| c == 'g' || c == 'p' || c.is_ascii_digit()));
            // More than three parts means extra delimiters after the flags.
            if flags_ok && parts.len() <= 3 {
                return None;
            }
        }
    }
    Some(format!("sed expression '{e}' not in allowlist"))
}

/// `/[wW]\s+\S+` anywhere, or ends with `/w` / `/W`.
fn has_write(e: &str) -> bool {
    let c: Vec<char> = e.chars().collect();
    for i in 0..c.len() {
        if c[i] == '/' && matches!(c.get(i + 1), Some('w' | 'W')) {
            let mut j = i + 2;
            let ws_start = j;
            while j < c.len() && c[j].is_whitespace() {
                j += 1;
            }
            if j > ws_start && j < c.len() {
                return true;
            }
        }
    }
    e.ends_with("/w") || e.ends_with("/W")
}

/// `/[eE](\s|$)` anywhere, or ends with `/e` / `/E`.
fn has_execute(e: &str) -> bool {
    let c: Vec<char> = e.chars().collect();
    for i in 0..c.len() {
        if c[i] == '/' && matches!(c.get(i + 1), Some('e' | 'E')) {
            match c.get(i + 2) {
                None => return true,
                Some(x) if x.is_whitespace() => return true,
                _ => {}
            }
        }
    }
    false
}

/// `^\d+p$` or `^\d+,\d+p$`.
fn is_print_range(e: &str) -> bool {
    let Some(body) = e.strip_suffix('p') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    match body.split_once(',') {
        Some((a, b)) => digits(a) && digits(b),
        None => digits(body),
    }
}

/// A GNU sed script scanned command by command (addresses, `!`, blocks,
/// labels, `a`/`i`/`c` text, comments, `s` and `y` with any delimiter):
/// true when it has no `w`, `W`, `e`, `r`, `R` command and no `s` command
/// with a `w` or `e` flag. Anything it does not fully understand (a
/// command letter it does not know, a regex whose end depends on how a
/// bracket expression is read, a label with unusual characters) gives
/// false: the answer is only ever "read-only" when sed cannot do more.
pub(crate) fn script_is_read_only(script: &str) -> bool {
    let mut sc = Scanner { c: script.chars().collect(), i: 0 };
    sc.script().is_some()
}

struct Scanner {
    c: Vec<char>,
    i: usize,
}

impl Scanner {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(|c| c == ' ' || c == '\t') {
            self.i += 1;
        }
    }

    /// `None`: not provably read-only.
    fn script(&mut self) -> Option<()> {
        loop {
            while self.peek().is_some_and(|c| c.is_whitespace() || c == ';') {
                self.i += 1;
            }
            let Some(c) = self.peek() else { return Some(()) };
            if c == '#' {
                self.skip_line();
                continue;
            }
            self.address()?;
            self.skip_blanks();
            if self.peek() == Some(',') {
                self.i += 1;
                self.skip_blanks();
                if matches!(self.peek(), Some('+' | '~')) {
                    self.i += 1;
                }
                self.address()?;
            }
            self.skip_blanks();
            while self.peek() == Some('!') {
                self.i += 1;
                self.skip_blanks();
            }
            self.command()?;
        }
    }

    /// An optional address: a number (`first~step`), `$`, `/re/` or
    /// `\cREc`, with `I`/`M` flags after a regex.
    fn address(&mut self) -> Option<()> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '~') {
                    self.i += 1;
                }
            }
            Some('$') => self.i += 1,
            Some('/') => {
                self.i += 1;
                self.delimited('/', true)?;
                self.regex_flags();
            }
            Some('\\') => {
                self.i += 1;
                let d = self.peek().filter(|d| *d != '\n' && *d != '\\')?;
                self.i += 1;
                self.delimited(d, true)?;
                self.regex_flags();
            }
            _ => {}
        }
        Some(())
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.i += 1;
        }
    }

    /// Skips to just after the closing delimiter `d` of a regex (or a
    /// replacement when `regex` is false). For a regex the end must be the
    /// same whether or not bracket expressions hide the delimiter (GNU sed
    /// 4.9 does, older ones do not); otherwise `None`.
    fn delimited(&mut self, d: char, regex: bool) -> Option<()> {
        let plain = end_of(&self.c, self.i, d, false)?;
        if regex && end_of(&self.c, self.i, d, true)? != plain {
            return None;
        }
        self.i = plain + 1;
        Some(())
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == '\n' {
                break;
            }
        }
    }

    /// After a command: blanks, then `;`, a newline, `}`, `#` or the end.
    fn end_of_command(&mut self) -> Option<()> {
        self.skip_blanks();
        match self.peek() {
            None | Some(';' | '\n' | '}' | '#') => Some(()),
            _ => None,
        }
    }

    fn label(&mut self) -> Option<()> {
        self.skip_blanks();
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')) {
            self.i += 1;
        }
        self.end_of_command()
    }

    fn command(&mut self) -> Option<()> {
        let c = self.peek()?;
        self.i += 1;
        match c {
            // A block may start right before its first command.
            '{' => Some(()),
            '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {
                self.end_of_command()
            }
            'l' | 'q' | 'Q' | 'L' => {
                self.skip_blanks();
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.i += 1;
                }
                self.end_of_command()
            }
            ':' | 'b' | 't' | 'T' => self.label(),
            'a' | 'i' | 'c' => {
                // The text runs to the first newline not escaped by `\`.
                while let Some(c) = self.peek() {
                    self.i += 1;
                    match c {
                        '\\' => self.i += 1,
                        '\n' => break,
                        _ => {}
                    }
                }
                Some(())
            }
            's' => {
                let d = self.peek().filter(|d| *d != '\n' && *d != '\\')?;
                self.i += 1;
                self.delimited(d, true)?;
                self.delimited(d, false)?;
                while let Some(f) = self.peek() {
                    match f {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' => self.i += 1,
                        f if f.is_ascii_digit() => self.i += 1,
                        _ => break,
                    }
                }
                self.end_of_command()
            }
            'y' => {
                let d = self.peek().filter(|d| *d != '\n' && *d != '\\')?;
                self.i += 1;
                self.delimited(d, false)?;
                self.delimited(d, false)?;
                self.end_of_command()
            }
            // `w`, `W`, `e`, `r`, `R`, `v` and anything unknown.
            _ => None,
        }
    }
}

/// The index of the delimiter `d` that ends the text starting at `from`
/// (backslash escapes skipped; with `brackets`, a `[...]` bracket
/// expression hides the delimiter); `None` when a newline or the end comes
/// first.
fn end_of(c: &[char], from: usize, d: char, brackets: bool) -> Option<usize> {
    let mut i = from;
    while i < c.len() {
        match c[i] {
            '\n' => return None,
            '\\' => i += 1,
            '[' if brackets => {
                i += 1;
                if c.get(i) == Some(&'^') {
                    i += 1;
                }
                if c.get(i) == Some(&']') {
                    i += 1;
                }
                while i < c.len() && c[i] != ']' {
                    if c[i] == '[' && matches!(c.get(i + 1), Some(':' | '.' | '=')) {
                        let close = c[i + 1];
                        i += 2;
                        while i + 1 < c.len() && !(c[i] == close && c[i + 1] == ']') {
                            i += 1;
                        }
                        i += 1;
                    } else if c[i] == '\n' {
                        return None;
                    }
                    i += 1;
                }
            }
            x if x == d => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}
