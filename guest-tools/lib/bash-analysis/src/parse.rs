//! Parser adapter: turns a command line into flat [`Part`]s with brush-parser.
//!
//! Every simple command anywhere in the program (in lists, pipelines,
//! background jobs, brace groups, loops, conditionals, function bodies,
//! subshells, command and process substitutions, heredoc bodies that expand,
//! `eval`/`sh -c` scripts) becomes one [`Part`]. Constructs that cannot be
//! analysed statically are recorded with the node-type names of
//! tree-sitter-bash used by the reference (`command_substitution`,
//! `subshell`, ...); the first one found in pre-order is reported.

use std::cell::RefCell;
use std::rc::Rc;

use brush_parser::ast;
use brush_parser::word::{self, Parameter, ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

use crate::model::{Analysis, Part, RedirKind, Redirect, Word};

/// Maximum nesting of substitutions / nested scripts we follow before giving up.
const MAX_DEPTH: usize = 12;
/// Longest command we analyse; longer ones are a parse failure (ask).
pub(crate) const MAX_LEN: usize = 64 * 1024;

/// How many analyses are kept (most recent first). One
/// decision asks for the same command several times (`check_read_only`,
/// `check_permissions`, `match_rules` per rule list, `suggestions`).
const CACHE_SLOTS: usize = 4;

/// A small most-recently-used cache keyed by exact strings.
struct Mru<K, V> {
    slots: Vec<(K, Rc<V>)>,
}

impl<K: PartialEq, V> Mru<K, V> {
    const fn new() -> Self {
        Mru { slots: Vec::new() }
    }

    fn get(&mut self, key: impl Fn(&K) -> bool) -> Option<Rc<V>> {
        let i = self.slots.iter().position(|(k, _)| key(k))?;
        let hit = self.slots.remove(i);
        let value = hit.1.clone();
        self.slots.insert(0, hit);
        Some(value)
    }

    fn put(&mut self, key: K, value: Rc<V>) {
        self.slots.truncate(CACHE_SLOTS - 1);
        self.slots.insert(0, (key, value));
    }
}

thread_local! {
    /// Analyses by command: an analysis is a pure function of the text.
    static ANALYSES: RefCell<Mru<String, Analysis>> = const { RefCell::new(Mru::new()) };
}

/// Parses `command` and flattens it ([`analyse_uncached`]), remembering
/// the last few answers: the same command is analysed by every permission
/// function of one decision.
pub(crate) fn analyse(command: &str) -> Rc<Analysis> {
    if let Some(hit) = ANALYSES.with_borrow_mut(|c| c.get(|k| k == command)) {
        return hit;
    }
    let a = Rc::new(analyse_uncached(command));
    ANALYSES.with_borrow_mut(|c| c.put(command.to_string(), a.clone()));
    a
}

/// Whether brush-parser would misbehave on `src`, which is then a parse
/// failure (an ask) without being given to it. Each case was found by the
/// `bash_analysis` fuzz target. The Bash tool is a wasm component with no
/// unwinding and one deadline: a panic there traps the decision, and a
/// loop burns the call's whole deadline and memory.
fn parser_would_choke(src: &str) -> bool {
    nests_too_deep(src) || overflows_a_parser_number(src) || has_an_unusual_here_document(src)
}

/// How much backtracking the parser is given: its length in bytes times
/// eight to the power of its nesting depth (see [`nests_too_deep`]).
const NESTING_BUDGET: usize = 1 << 24;

/// Whether `src` nests brackets deeper than its length allows.
///
/// brush-parser backtracks exponentially on brackets left open inside one
/// word, each level multiplying the time by two to six and a half: a run
/// of `(` at the start of a command (23 took 4 s), `a[$1` repeated (24
/// took 10 s), seven `[` inside `${…}` spread over lines (144 bytes, 9 s
/// in the fuzzing build), and the text inside is parsed again at every
/// level (six `a[$1` before 60 KB of `${a}` took 2.4 s). Where a bracket
/// closes cannot be told before parsing (`a[$1a[$1 ] ]` closes none of
/// them in its word), so the bound is on the deepest nesting of `(`, `[`
/// and `{`, read as bytes with quotes ignored, each closed only by its own
/// kind: 5 levels in 160 bytes, 4 in 4 KiB, 2 in 64 KiB.
fn nests_too_deep(src: &str) -> bool {
    // A `)` does not close a `[` (nor a `]` a `(`): a run of them would
    // otherwise hide the nesting before it (a fuzzed `${…[))))))k[…}`).
    let mut open = [0usize; 3];
    let mut deepest = 0;
    for b in src.bytes() {
        if !count_bracket(&mut open, b) {
            continue;
        }
        deepest = deepest.max(open.iter().sum());
    }
    // len × 8^deepest > budget, without overflow.
    3 * deepest >= usize::BITS as usize || src.len() > NESTING_BUDGET >> (3 * deepest)
}

/// Whether `src` holds a digit run brush-parser would panic on. It unwraps
/// two integer parses: a file descriptor written before a redirection
/// (`8888888888>x`, an `i32`) and a directory-stack index after a tilde
/// (`~+99999999999999999999`, a `usize`).
fn overflows_a_parser_number(src: &str) -> bool {
    let bytes = src.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        if !bytes[start].is_ascii_digit() {
            start += 1;
            continue;
        }
        let end = bytes[start..].iter().position(|b| !b.is_ascii_digit()).map_or(bytes.len(), |n| start + n);
        let digits = &src[start..end];
        let before_redirection = matches!(bytes.get(end), Some(b'<' | b'>'));
        let after_tilde = match &bytes[..start] {
            [.., b'~'] => true,
            [.., b'~', sign] => matches!(sign, b'+' | b'-'),
            _ => false,
        };
        if (before_redirection && digits.parse::<i32>().is_err()) || (after_tilde && digits.parse::<usize>().is_err()) {
            return true;
        }
        start = end;
    }
    false
}

/// Whether `src` starts a here-document that is not a plain word closed by
/// a line of its own later in the text.
///
/// brush-parser's tokenizer loops for ever, allocating, when the text ends
/// while it still looks for a here-document's end in some states: a tag
/// of only quotes or white space (`<<"" `, `<<\f `), a comment (`<< #`),
/// an expansion left open (`<<8$(  `), a document left open inside one
/// (`$(<<w "$((`), a `${`, `$(` or `$[` left open on the document's
/// first line (`<<c ${`), a document inside an open `${` (`${<<c`), a
/// document in a command that leaves an expansion open (`$(<<c`). A command that means a here-document closes it, with a
/// plain tag (letters, digits, `_-.,:/@%+=`, a `$NAME`, quoted or not:
/// `EOF`, `'END_1'`, its quotes balanced); anything else is not given to
/// the parser ([`next_here_document`] finds them).
fn has_an_unusual_here_document(src: &str) -> bool {
    let mut from = 0;
    while let Some(doc) = next_here_document(src, from) {
        let line_end = src[doc.end..].find('\n').map_or(src.len(), |n| doc.end + n);
        let rest = &src[doc.end..line_end];
        if !is_plain_here_document_tag(doc.tag)
            || !closes_here_document(&src[doc.end..], doc.tag, doc.strip_tabs)
            || first_line_may_run_on(rest)
            || open_expansions(&src[..doc.at])[PARAMETER] > 0
            || (inside_brackets(&without_here_document_bodies(&src[..doc.at])) && rest.contains(BRACKETS))
        {
            return true;
        }
        from = doc.end.max(doc.at + 2);
    }
    // Counted without the documents' bodies: a bracket there is text, and
    // counting it closed an expansion that the tokenizer then ran off the
    // end of the input to close (fuzzed: `$(<<c`, then `)` and `c`).
    if from == 0 {
        return false;
    }
    let bodyless = without_here_document_bodies(src);
    open_expansions(&bodyless).iter().any(|&depth| depth > 0) || brackets_interleave(&bodyless)
}

/// Whether a bracket in `text` closes one of another kind (escaped ones
/// aside): `$[)]` ends an enclosing `$(` inside the `$[…]` for the
/// tokenizer, which then read a here-document after it off the end of the
/// input (fuzzed: `$($[)]<<c`, then `)` and `c`). A closer with nothing
/// open (`case a)`) is not counted.
fn brackets_interleave(text: &str) -> bool {
    let mut open = Vec::new();
    let mut escaped = false;
    for b in text.bytes() {
        if std::mem::take(&mut escaped) {
            continue;
        }
        let opener = match b {
            b'\\' => {
                escaped = true;
                continue;
            }
            b'(' | b'[' | b'{' => {
                open.push(b);
                continue;
            }
            b')' => b'(',
            b']' => b'[',
            b'}' => b'{',
            _ => continue,
        };
        match open.pop() {
            Some(top) if top != opener => return true,
            _ => {}
        }
    }
    false
}

/// The characters that open or close a bracket, an expansion or a
/// command substitution.
const BRACKETS: [char; 8] = ['(', ')', '[', ']', '{', '}', '$', '`'];

/// Whether `text` ends inside a bracket of any kind, bare or of an
/// expansion (escaped ones aside). A here-document begun there with
/// brackets on the rest of its first line makes the tokenizer look for the
/// enclosing bracket's end through the document (fuzzed: `$(<<c<$[)]`,
/// then `c`: the `)` inside `$[…]` ended the `$(`), so it is not parsed;
/// the usual `"$(cat <<'EOF'` with nothing after the tag still is.
fn inside_brackets(text: &str) -> bool {
    let mut open = [0usize; 3];
    let mut escaped = false;
    for b in text.bytes() {
        if std::mem::take(&mut escaped) {
            continue;
        }
        escaped = b == b'\\';
        count_bracket(&mut open, b);
    }
    open.iter().any(|&depth| depth > 0)
}

/// Moves `open`, the depths of `(`, `[` and `{`, by the byte `b`, each
/// closed only by its own kind; whether `b` was a bracket.
fn count_bracket(open: &mut [usize; 3], b: u8) -> bool {
    match b {
        b'(' => open[0] += 1,
        b'[' => open[1] += 1,
        b'{' => open[2] += 1,
        b')' => open[0] = open[0].saturating_sub(1),
        b']' => open[1] = open[1].saturating_sub(1),
        b'}' => open[2] = open[2].saturating_sub(1),
        _ => return false,
    }
    true
}

/// A here-document's start in a command's text: `<<` or `<<-`, then its
/// tag (`src[tag_start..end]` as written, quotes included).
struct HereDocument<'a> {
    /// Where its `<<` is.
    at: usize,
    /// Its tag as written.
    tag: &'a str,
    /// Just after the tag.
    end: usize,
    /// `<<-`: leading tabs are stripped from its lines.
    strip_tabs: bool,
}

/// The first here-document that starts at or after `from` in `src`, read
/// as bytes with quoting ignored (so `echo '<<x'` and `$((1<<2))` count
/// too, which only makes the analysis more careful).
fn next_here_document(src: &str, mut from: usize) -> Option<HereDocument<'_>> {
    let bytes = src.as_bytes();
    while let Some(at) = src.get(from..)?.find("<<").map(|i| from + i) {
        let mut i = at + 2;
        if bytes.get(i) == Some(&b'<') {
            // `<<<` is a here-string, unless its first `<` is escaped: then
            // the other two start a here-document (a fuzzed `\<<<`).
            from = if at > 0 && bytes[at - 1] == b'\\' { at + 1 } else { i + 1 };
            continue;
        }
        let strip_tabs = bytes.get(i) == Some(&b'-');
        if strip_tabs {
            i += 1;
        }
        while matches!(bytes.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        let end = bytes[i..]
            .iter()
            .position(|b| matches!(b, b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'))
            .map_or(bytes.len(), |n| i + n);
        return Some(HereDocument { at, tag: &src[i..end], end, strip_tabs });
    }
    None
}

/// `src` with the body lines of its here-documents (up to and including
/// each end line) left empty, as far as they end. Only a `<<` the shell
/// reads as a here-document starts one ([`Quoting`]): one in quotes or a
/// comment does not, so the lines after it stay and are counted (fuzzed:
/// `#<<c` or `"<<c`, then `$(<<c`, `)` and `c`: taken for a body, the
/// `$(` line hid an expansion left open).
fn without_here_document_bodies(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut pending: std::collections::VecDeque<(String, bool)> = std::collections::VecDeque::new();
    let mut quoting = Quoting::default();
    for line in src.split('\n') {
        if let Some((end, strip_tabs)) = pending.front() {
            if if *strip_tabs { line.trim_start_matches('\t') } else { line } == end {
                pending.pop_front();
            }
            out.push('\n');
            continue;
        }
        out.push_str(line);
        out.push('\n');
        for at in quoting.here_document_starts(line) {
            if let Some(doc) = next_here_document(line, at).filter(|doc| doc.at == at) {
                pending.push_back((end_line(doc.tag), doc.strip_tabs));
            }
        }
    }
    out
}

/// Where a shell is in its quoting, line after line: what it is inside,
/// innermost last. Enough to tell a here-document's `<<` from one in
/// quotes, a comment or arithmetic; where it cannot tell, it says "not a
/// here-document", which only makes the analysis more careful.
#[derive(Default)]
struct Quoting {
    open: Vec<Inside>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Inside {
    Single,
    Double,
    Backquote,
    /// `$(…)` or a bare `(…)`: quoting starts afresh.
    Parens,
    /// `$((…))`.
    Arithmetic,
    /// An extended glob, `!(…)`, `@(…)`, `*(…)`, `+(…)` or `?(…)`: its
    /// `<<` is text (fuzzed: `!(<<c`, then `)$(<<c`, `)` and `c`).
    Pattern,
}

impl Quoting {
    /// The offsets in `line` of each `<<` (not `<<<`) that starts a
    /// here-document: outside quotes, comments and arithmetic. A comment
    /// ends with the line; quotes go on to the next.
    fn here_document_starts(&mut self, line: &str) -> Vec<usize> {
        let bytes = line.as_bytes();
        let mut starts = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            let top = self.open.last().copied();
            let next = bytes.get(i + 1).copied();
            match (top, b) {
                (Some(Inside::Single), b'\'') => drop(self.open.pop()),
                (Some(Inside::Single), _) => {}
                (_, b'\\') => i += 1,
                (Some(Inside::Double), b'"') | (Some(Inside::Backquote), b'`') => drop(self.open.pop()),
                (_, b'$') if next == Some(b'(') => {
                    let arithmetic = bytes.get(i + 2) == Some(&b'(');
                    self.open.push(if arithmetic { Inside::Arithmetic } else { Inside::Parens });
                    i += if arithmetic { 2 } else { 1 };
                }
                (Some(Inside::Double), _) => {}
                (Some(Inside::Arithmetic), b')') if next == Some(b')') => {
                    self.open.pop();
                    i += 1;
                }
                (Some(Inside::Arithmetic), _) => {}
                (_, b'"') => self.open.push(Inside::Double),
                (_, b'\'') => self.open.push(Inside::Single),
                (_, b'`') => self.open.push(Inside::Backquote),
                (_, b'(') if i > 0 && b"!@*+?".contains(&bytes[i - 1]) => self.open.push(Inside::Pattern),
                (_, b'(') => self.open.push(Inside::Parens),
                (Some(Inside::Parens | Inside::Pattern), b')') => drop(self.open.pop()),
                // A comment starts a word: after a blank or an operator
                // (a redirection's too: fuzzed `<#<<c`), not after a
                // carriage return, which the shell reads as part of a word
                // (fuzzed: `$(\r#<<c`).
                (_, b'#') if i == 0 || b" \t;|&()<>".contains(&bytes[i - 1]) => return starts,
                (Some(Inside::Pattern), _) => {}
                (_, b'<') if next == Some(b'<') => {
                    if bytes.get(i + 2) == Some(&b'<') {
                        i += 2;
                    } else {
                        starts.push(i);
                        i += 1;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        starts
    }
}

/// The line that ends a here-document with `tag`: the tag without its
/// quotes.
fn end_line(tag: &str) -> String {
    tag.chars().filter(|c| !matches!(c, '"' | '\'' | '\\')).collect()
}

/// See [`has_an_unusual_here_document`].
fn is_plain_here_document_tag(tag: &str) -> bool {
    let quote = |c: char| matches!(c, '"' | '\'' | '\\');
    let mut chars = tag.chars().peekable();
    let mut plain = tag.chars().any(|c| !quote(c));
    while let Some(c) = chars.next() {
        let name_follows = chars.peek().is_some_and(|n| n.is_alphanumeric() || *n == '_');
        plain &= c.is_alphanumeric() || quote(c) || "_-.,:/@%+=".contains(c) || (c == '$' && name_follows);
    }
    // A quote left open runs on into the document (fuzzed: `<<c"`, then
    // `$[c]$[`, then `c`: the tokenizer unwrapped a missing character).
    let balanced = |q: char| tag.chars().filter(|&c| c == q).count() % 2 == 0;
    // A backslash at its end joins the next line to it (fuzzed: `<<c\`).
    let trailing_escapes = tag.chars().rev().take_while(|&c| c == '\\').count();
    plain && balanced('"') && balanced('\'') && trailing_escapes % 2 == 0
}

/// Whether the rest of a here-document's first line (after its tag) may
/// run on into the document as brush-parser reads it: an expansion left
/// open ([`open_expansions`]), a backslash at its end (joining the next
/// line: fuzzed `<<c<$[…]\`, then `$[`), a quote left open (fuzzed
/// `<<c<"`, then `$[c]$[`), or an expansion beside anything that may hide
/// its closing bracket from the tokenizer: quoting (fuzzed `<<c<$[$["]"]`),
/// a comment (fuzzed `<<c<$[#x]`, then `]`) — each made the tokenizer
/// unwrap a character that is not there. So beside an expansion only
/// plain characters pass ([`is_plain_beside_an_expansion`]); a rarer
/// first line is not analysed and the command asks.
fn first_line_may_run_on(rest: &str) -> bool {
    let opens = ["$(", "${", "$["].iter().any(|o| rest.contains(o));
    let trailing_escapes = rest.chars().rev().take_while(|&c| c == '\\').count();
    let odd = |q: char| rest.chars().filter(|&c| c == q).count() % 2 == 1;
    open_expansions(rest).iter().any(|&depth| depth > 0)
        || trailing_escapes % 2 == 1
        || odd('"')
        || odd('\'')
        || odd('`')
        || ends_inside_a_quote(rest)
        || (opens && !rest.chars().all(is_plain_beside_an_expansion))
}

/// Whether `text`, quoted as the shell reads it, ends inside a quote (`'`,
/// `"` or a backquote): an escaped quote opens or closes nothing, so an
/// even count of quotes can still leave one open (fuzzed: `<<c<"\"`, then
/// `${n}${`).
fn ends_inside_a_quote(text: &str) -> bool {
    let mut quote = None;
    let mut escaped = false;
    for c in text.chars() {
        if std::mem::take(&mut escaped) {
            continue;
        }
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (_, '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"' | '`') => quote = Some(c),
            _ => {}
        }
    }
    quote.is_some()
}

/// A character that changes nothing in how brush-parser's tokenizer finds
/// the end of an expansion: letters, digits, blanks and punctuation other
/// than quotes, backslashes, backquotes and `#`.
fn is_plain_beside_an_expansion(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, ' ' | '\t') || (c.is_ascii_punctuation() && !"\"'\\`#".contains(c))
}

/// Where [`open_expansions`] counts `${…}`.
const PARAMETER: usize = 0;

/// How deep `text` leaves each kind of expansion open: `${…}`
/// ([`PARAMETER`]), `$(…)`, `$[…]`. Within an open expansion a bare bracket
/// of its kind nests too; outside one it is not counted, so `$(a)` after
/// `(` still closes. An expansion left open on a here-document's first
/// line (after its tag) makes brush-parser's tokenizer run into the
/// document's body and unwrap a character that is not there (fuzzed:
/// `<<c<${}${` and `<<c<…$[]$[` before the line `c`), and so does a
/// here-document that starts inside an open `${` (fuzzed: `${<<c`, then
/// `}` and `c`; a here-document inside `$(…)` is ordinary and parses).
fn open_expansions(text: &str) -> [usize; 3] {
    let bytes = text.as_bytes();
    let mut open = [0usize; 3];
    let mut escaped = false;
    for (i, b) in bytes.iter().enumerate() {
        // An escaped bracket closes nothing (fuzzed: `$[$[…]\]`).
        if std::mem::take(&mut escaped) {
            continue;
        }
        if *b == b'\\' {
            escaped = true;
            continue;
        }
        let after_dollar = i > 0 && bytes[i - 1] == b'$';
        let (kind, opens) = match b {
            b'{' => (PARAMETER, true),
            b'(' => (1, true),
            b'[' => (2, true),
            b'}' => (PARAMETER, false),
            b')' => (1, false),
            b']' => (2, false),
            _ => continue,
        };
        if !opens {
            open[kind] = open[kind].saturating_sub(1);
        } else if after_dollar || open[kind] > 0 {
            open[kind] += 1;
        }
    }
    open
}

/// Whether a line after the first line of `rest` is the here-document's
/// end: `tag` without its quotes, after leading tabs for `<<-`.
fn closes_here_document(rest: &str, tag: &str, strip_tabs: bool) -> bool {
    let end = end_line(tag);
    rest.split('\n').skip(1).any(|line| if strip_tabs { line.trim_start_matches('\t') } else { line } == end)
}

/// `src` parsed with brush-parser; `None` when it does not parse or the
/// parser would choke on it ([`parser_would_choke`]).
fn parse_program(src: &str) -> Option<ast::Program> {
    if parser_would_choke(src) {
        return None;
    }
    let parsed = std::panic::catch_unwind(|| {
        let mut p = Parser::new(std::io::Cursor::new(src.as_bytes()), &options());
        p.parse_program()
    });
    parsed.ok()?.ok()
}

/// A word's text parsed into pieces by brush-parser; `None` when it does
/// not parse or the parser would choke on it ([`parser_would_choke`]).
fn parse_word(text: &str) -> Option<Vec<WordPieceWithSource>> {
    if parser_would_choke(text) {
        return None;
    }
    word::parse(text, &options()).ok()
}

/// [`parse_word`] for the body of a here-document that expands.
fn parse_heredoc_body(text: &str) -> Option<Vec<WordPieceWithSource>> {
    if parser_would_choke(text) {
        return None;
    }
    word::parse_heredoc(text, &options()).ok()
}

/// Parses `command` and flattens it. Never panics; failures set `parse_error`.
pub(crate) fn analyse_uncached(command: &str) -> Analysis {
    analyse_with(command, true)
}

/// [`analyse_uncached`], optionally without the [`plain_simple_command`]
/// shortcut (the tests compare both).
pub(crate) fn analyse_with(command: &str, fast_path: bool) -> Analysis {
    let mut w = Walker { out: Analysis::default(), depth: 0, cwd: Some(Vec::new()), nested: false, fast_path };
    if command.len() > MAX_LEN {
        w.out.parse_error = true;
        return w.out;
    }
    w.program(command);
    w.out
}

/// Words the grammar gives a meaning in command position; a simple command
/// starting with one of them is left to the parser.
const RESERVED_WORDS: &[&str] = &[
    "!", "{", "}", "[[", "]]", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if",
    "in", "select", "then", "time", "until", "while",
];

/// The part of `src` when it is one simple command of plain words (see
/// [`is_plain`]) separated by blanks, whose first non-assignment word is not
/// a reserved word; `None` for anything else, which goes to the parser.
///
/// For such text the grammar reduces to: leading `NAME=value` /
/// `NAME+=value` words are assignments, the rest are the command's words,
/// each its own value. The property test `plain_commands_analyse_as_parsed`
/// checks this against brush-parser. Most commands an agent runs are of this
/// shape, and brush-parser costs several times the rest of the analysis.
fn plain_simple_command(src: &str) -> Option<Part> {
    let mut part = Part::default();
    for token in src.split([' ', '\t']).filter(|t| !t.is_empty()) {
        if !is_plain(token) {
            return None;
        }
        if part.words.is_empty()
            && let Some(name) = assignment_prefix(token)
        {
            part.assigns.push((name.to_string(), token.to_string()));
            part.assign_values.push(static_word(token.split_once('=').map_or("", |(_, v)| v)));
            continue;
        }
        if part.words.is_empty() && RESERVED_WORDS.contains(&token) {
            return None;
        }
        part.words.push(static_word(token));
    }
    (!part.words.is_empty() || !part.assigns.is_empty()).then_some(part)
}

/// The variable name of an assignment word (`NAME=...`, `NAME+=...`).
fn assignment_prefix(token: &str) -> Option<&str> {
    let (name, _) = token.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// True when no character of `raw` is special to the shell inside a word
/// (no quoting, expansion, glob, brace, tilde, history or comment syntax), so
/// the word's value is its text. Such words skip brush-parser's word parser,
/// which is most of the cost of analysing ordinary commands.
fn is_plain(raw: &str) -> bool {
    !raw.is_empty()
        && raw.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'-' | b'_' | b'.' | b'/' | b',' | b':' | b'+' | b'@' | b'%' | b'=')
        })
}

fn options() -> ParserOptions {
    ParserOptions::default()
}

struct Walker {
    out: Analysis,
    depth: usize,
    /// The `cd` trail in force (see [`Part::cd_trail`]).
    cwd: Option<Vec<String>>,
    nested: bool,
    /// Whether [`plain_simple_command`] may stand in for the parser.
    fast_path: bool,
}

impl Walker {
    fn flag(&mut self, kind: &'static str) {
        if self.out.dynamic.is_none() {
            self.out.dynamic = Some(kind);
        }
    }

    fn program(&mut self, src: &str) {
        if self.depth > MAX_DEPTH {
            self.out.parse_error = true;
            return;
        }
        if self.fast_path
            && let Some(part) = plain_simple_command(src)
        {
            self.finish_simple(part);
            return;
        }
        match &parse_program(src) {
            Some(prog) => {
                for cc in &prog.complete_commands {
                    self.list(cc);
                }
            }
            None => self.out.parse_error = true,
        }
    }

    /// Parses a nested script (substitution body, `sh -c` string, eval text).
    fn nested_program(&mut self, src: &str) {
        let (saved_nested, saved_cwd) = (self.nested, self.cwd.clone());
        self.nested = true;
        self.depth += 1;
        self.program(src);
        self.depth -= 1;
        self.nested = saved_nested;
        self.cwd = saved_cwd;
    }

    fn list(&mut self, l: &ast::CompoundList) {
        for item in &l.0 {
            for (_, pipeline) in item.0.iter() {
                for cmd in &pipeline.seq {
                    self.command(cmd);
                }
            }
        }
    }

    fn command(&mut self, cmd: &ast::Command) {
        match cmd {
            ast::Command::Simple(s) => self.simple(s),
            ast::Command::Compound(c, redirs) => {
                let first = self.out.parts.len();
                self.compound(c);
                if let Some(r) = redirs {
                    self.attach_redirects(first, &r.0);
                }
            }
            ast::Command::Function(f) => {
                self.flag("function_definition");
                let first = self.out.parts.len();
                self.compound(&f.body.0);
                if let Some(r) = &f.body.1 {
                    self.attach_redirects(first, &r.0);
                }
            }
            ast::Command::ExtendedTest(t, redirs) => {
                self.flag("test_command");
                self.ext_test(&t.expr);
                let first = self.out.parts.len();
                // Give the redirections a carrier so their targets are judged.
                self.push_part(Part { words: vec![static_word("[[")], ..Part::default() });
                if let Some(r) = redirs {
                    self.attach_redirects(first, &r.0);
                }
            }
        }
    }

    fn attach_redirects(&mut self, first: usize, redirs: &[ast::IoRedirect]) {
        let mut collected = Vec::new();
        for r in redirs {
            if let Some(x) = self.redirect(r) {
                collected.push(x);
            }
        }
        if collected.is_empty() {
            return;
        }
        if first == self.out.parts.len() {
            self.push_part(Part::default());
        }
        for p in &mut self.out.parts[first..] {
            p.redirects.extend(collected.iter().cloned());
        }
    }

    fn ext_test(&mut self, e: &ast::ExtendedTestExpr) {
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.ext_test(a);
                self.ext_test(b);
            }
            E::Not(a) | E::Parenthesized(a) => self.ext_test(a),
            E::UnaryTest(_, w) => {
                self.word(w);
            }
            E::BinaryTest(_, a, b) => {
                self.word(a);
                self.word(b);
            }
        }
    }

    fn compound(&mut self, c: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match c {
            C::Arithmetic(a) => {
                self.arith(&a.expr.value);
                self.push_part(Part { words: vec![static_word("((")], ..Part::default() });
            }
            C::ArithmeticForClause(f) => {
                self.flag("for_statement");
                for e in [&f.initializer, &f.condition, &f.updater].into_iter().flatten() {
                    self.arith(&e.value);
                }
                self.list(&f.body.list);
            }
            C::BraceGroup(b) => self.list(&b.list),
            C::Subshell(s) => {
                self.flag("subshell");
                let cwd = self.cwd.clone();
                self.list(&s.list);
                self.cwd = cwd;
            }
            C::ForClause(f) => {
                self.flag("for_statement");
                for w in f.values.iter().flatten() {
                    self.word(w);
                }
                self.list(&f.body.list);
            }
            C::CaseClause(cc) => {
                self.flag("case_statement");
                self.word(&cc.value);
                for item in &cc.cases {
                    for p in &item.patterns {
                        self.word(p);
                    }
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd);
                    }
                }
            }
            C::IfClause(i) => {
                self.flag("if_statement");
                self.list(&i.condition);
                self.list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond);
                    }
                    self.list(&e.body);
                }
            }
            C::WhileClause(w) => {
                self.flag("while_statement");
                self.list(&w.0);
                self.list(&w.1.list);
            }
            C::UntilClause(w) => {
                self.flag("until_statement");
                self.list(&w.0);
                self.list(&w.1.list);
            }
            C::Coprocess(c) => {
                // Runs asynchronously in a subshell.
                self.flag("subshell");
                let cwd = self.cwd.clone();
                self.command(&c.body);
                self.cwd = cwd;
            }
        }
    }

    fn push_part(&mut self, mut p: Part) {
        p.cd_trail = self.cwd.clone();
        p.nested = self.nested;
        self.track_cd(&p);
        self.out.parts.push(p);
    }

    /// Follows `cd`/`pushd`/`popd` so later relative paths resolve correctly.
    fn track_cd(&mut self, p: &Part) {
        let Some(name) = p.words.first().and_then(|w| w.value.as_deref()) else {
            return;
        };
        match name {
            "cd" | "pushd" => {
                let args = &p.words[1..];
                // `cd -` goes back to `$OLDPWD`, which is not knowable here.
                let back = args.iter().any(|w| w.text() == "-");
                let dirs: Vec<&Word> = args.iter().filter(|w| !w.text().starts_with('-')).collect();
                let step = match dirs.first() {
                    _ if back => None,
                    None if name == "cd" => Some("~".to_string()),
                    Some(w) => w.path(),
                    None => None,
                };
                match (step, &mut self.cwd) {
                    // An absolute target is known wherever the shell was.
                    (Some(step), _) if step.starts_with(['/', '~']) => self.cwd = Some(vec![step]),
                    (Some(step), Some(trail)) => trail.push(step),
                    _ => self.cwd = None,
                }
            }
            "popd" => self.cwd = None,
            _ => {}
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand) {
        let mut part = Part::default();
        let mut items: Vec<&ast::CommandPrefixOrSuffixItem> = Vec::new();
        if let Some(pre) = &s.prefix {
            items.extend(pre.0.iter());
        }
        let prefix_len = items.len();
        if let Some(suf) = &s.suffix {
            items.extend(suf.0.iter());
        }
        let mut name_done = false;
        for (i, item) in items.iter().enumerate() {
            if i == prefix_len && !name_done {
                if let Some(n) = &s.word_or_name {
                    let w = self.word(n);
                    part.words.push(w);
                }
                name_done = true;
            }
            match item {
                ast::CommandPrefixOrSuffixItem::IoRedirect(r) => {
                    if let Some(x) = self.redirect(r) {
                        part.redirects.push(x);
                    }
                }
                ast::CommandPrefixOrSuffixItem::Word(w) => {
                    let w = self.word(w);
                    part.words.push(w);
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, raw) => {
                    let values = self.assignment(a);
                    if i < prefix_len {
                        part.assigns.push((assignment_name(a), raw.value.clone()));
                        part.assign_values.extend(values);
                    } else {
                        let w = self.word(raw);
                        part.words.push(w);
                    }
                }
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    self.flag("process_substitution");
                    part.words.push(Word { raw: "<(...)".into(), ..Word::default() });
                    self.nested_list(&sub.list);
                }
            }
        }
        if !name_done && let Some(n) = &s.word_or_name {
            let w = self.word(n);
            part.words.push(w);
        }
        self.finish_simple(part);
    }

    /// Records a simple command's part and follows the script it runs
    /// (`eval`, `sh -c`, ...), if any.
    fn finish_simple(&mut self, part: Part) {
        if let Some(first) = part.words.first()
            && first.value.as_deref() == Some("[")
        {
            self.flag("test_command");
        }
        let nested_script = nested_script(&part);
        let host_index = self.out.parts.len();
        self.push_part(part);
        match nested_script {
            Some(Some(script)) => {
                let cwd = self.cwd.clone();
                self.nested_program(&script);
                self.cwd = cwd;
            }
            Some(None) => {
                // `eval "$x"`, `sh -c "$x"`: the script is not knowable.
                if let Some(p) = self.out.parts.get_mut(host_index)
                    && let Some(w) = p.words.first_mut()
                {
                    w.value = None;
                }
            }
            None => {}
        }
    }

    fn nested_list(&mut self, l: &ast::CompoundList) {
        let (saved_nested, saved_cwd) = (self.nested, self.cwd.clone());
        self.nested = true;
        self.list(l);
        self.nested = saved_nested;
        self.cwd = saved_cwd;
    }

    /// Walks an assignment and returns its value words.
    fn assignment(&mut self, a: &ast::Assignment) -> Vec<Word> {
        if let ast::AssignmentName::ArrayElementName(_, idx) = &a.name {
            self.arith(idx);
        }
        match &a.value {
            ast::AssignmentValue::Scalar(w) => vec![self.word(w)],
            ast::AssignmentValue::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (k, v) in items {
                    if let Some(k) = k {
                        self.word(k);
                    }
                    out.push(self.word(v));
                }
                out
            }
        }
    }

    fn redirect(&mut self, r: &ast::IoRedirect) -> Option<Redirect> {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T, IoRedirect as R};
        match r {
            R::File(_, kind, target) => match target {
                T::Filename(w) => {
                    let word = self.word(w);
                    let kind = match kind {
                        K::Read | K::DuplicateInput => RedirKind::Read,
                        _ => RedirKind::Write,
                    };
                    Some(Redirect { kind, target: word })
                }
                T::Fd(_) => None,
                T::Duplicate(w) => {
                    let word = self.word(w);
                    let v = word.value.clone().unwrap_or_default();
                    let is_fd = !v.is_empty() && v.trim_end_matches('-').chars().all(|c| c.is_ascii_digit());
                    if is_fd || v == "-" {
                        None
                    } else if matches!(kind, K::DuplicateOutput) {
                        // `>&file` writes stdout and stderr to `file`.
                        Some(Redirect { kind: RedirKind::Write, target: word })
                    } else {
                        Some(Redirect { kind: RedirKind::Read, target: word })
                    }
                }
                T::ProcessSubstitution(_, sub) => {
                    self.flag("process_substitution");
                    self.nested_list(&sub.list);
                    None
                }
            },
            R::OutputAndError(w, _) => {
                let word = self.word(w);
                Some(Redirect { kind: RedirKind::Write, target: word })
            }
            R::HereString(_, w) => {
                self.word(w);
                None
            }
            R::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    match parse_heredoc_body(&doc.doc.value) {
                        Some(pieces) => {
                            let mut st = WordState::default();
                            self.pieces(&doc.doc.value, &pieces, &mut st, true);
                        }
                        None => self.out.parse_error = true,
                    }
                }
                None
            }
        }
    }

    /// Analyses an arithmetic expression's text for substitutions.
    fn arith(&mut self, text: &str) {
        if !(text.contains('$') || text.contains('`')) {
            return;
        }
        match parse_word(text) {
            Some(pieces) => {
                let mut st = WordState::default();
                self.pieces(text, &pieces, &mut st, true);
            }
            None => {
                if text.contains("$(") || text.contains('`') {
                    self.flag("command_substitution");
                }
                self.out.parse_error = true;
            }
        }
    }

    /// Parses a word into its value, recording dynamic pieces.
    fn word(&mut self, w: &ast::Word) -> Word {
        let raw = w.value.clone();
        if is_plain(&raw) {
            // Nothing in it the shell expands or removes: the word is itself.
            return Word { value: Some(raw.clone()), raw, ..Word::default() };
        }
        match parse_word(&raw) {
            Some(pieces) => {
                let mut st = WordState::default();
                self.pieces(&raw, &pieces, &mut st, false);
                Word {
                    value: if st.dynamic { None } else { Some(st.value) },
                    tilde: st.tilde,
                    glob: st.glob,
                    brace: st.brace,
                    raw,
                }
            }
            None => {
                self.out.parse_error = true;
                Word { raw, ..Word::default() }
            }
        }
    }

    fn pieces(&mut self, src: &str, pieces: &[WordPieceWithSource], st: &mut WordState, in_dq: bool) {
        for p in pieces {
            let piece_src = src.get(p.start_index..p.end_index).unwrap_or("");
            self.piece(src, piece_src, &p.piece, st, in_dq);
        }
    }

    fn piece(&mut self, src: &str, piece_src: &str, p: &WordPiece, st: &mut WordState, in_dq: bool) {
        match p {
            WordPiece::Text(s) => {
                if !in_dq {
                    if s.contains(['*', '?', '[']) {
                        st.glob = true;
                    }
                    if s.contains('{') {
                        st.brace = true;
                    }
                }
                st.value.push_str(s);
            }
            WordPiece::SingleQuotedText(s) => st.value.push_str(s),
            WordPiece::AnsiCQuotedText(s) => match decode_ansi_c(s) {
                Some(d) => st.value.push_str(&d),
                None => st.dynamic = true,
            },
            WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                self.pieces(src, inner, st, true);
            }
            WordPiece::TildeExpansion(t) => match t {
                TildeExpr::Home if st.value.is_empty() && !in_dq => {
                    st.tilde = true;
                    st.value.push('~');
                }
                _ => st.dynamic = true,
            },
            WordPiece::ParameterExpansion(expr) => {
                if piece_src.starts_with("${") {
                    self.flag("expansion");
                }
                self.param_expr(expr);
                let is_home = matches!(expr, ParameterExpr::Parameter { parameter: Parameter::Named(n), indirect: false } if n == "HOME");
                if is_home && st.value.is_empty() && !st.dynamic {
                    // `$HOME` at the start of a word means the home directory.
                    st.tilde = true;
                    st.value.push('~');
                } else {
                    st.dynamic = true;
                }
            }
            WordPiece::CommandSubstitution(s) => {
                self.flag("command_substitution");
                st.dynamic = true;
                self.nested_program(s);
            }
            WordPiece::BackquotedCommandSubstitution(s) => {
                self.flag("command_substitution");
                st.dynamic = true;
                let unescaped = unescape_backquoted(s);
                self.nested_program(&unescaped);
            }
            WordPiece::EscapeSequence(s) => {
                let mut chars = s.chars();
                let _backslash = chars.next();
                let rest: String = chars.collect();
                if in_dq && !matches!(rest.as_str(), "$" | "`" | "\"" | "\\" | "\n") {
                    st.value.push_str(s);
                } else if rest != "\n" {
                    st.value.push_str(&rest);
                }
            }
            WordPiece::ArithmeticExpression(e) => {
                st.dynamic = true;
                self.arith(&e.value);
            }
        }
    }

    /// Looks for substitutions inside the strings of a `${...}` expression.
    fn param_expr(&mut self, e: &ParameterExpr) {
        use ParameterExpr as P;
        let mut texts: Vec<&str> = Vec::new();
        let param = match e {
            P::Parameter { parameter, .. } | P::ParameterLength { parameter, .. } | P::Transform { parameter, .. } => {
                parameter
            }
            P::UseDefaultValues { parameter, default_value: t, .. }
            | P::AssignDefaultValues { parameter, default_value: t, .. } => {
                texts.extend(t.as_deref());
                parameter
            }
            P::IndicateErrorIfNullOrUnset { parameter, error_message: t, .. } => {
                texts.extend(t.as_deref());
                parameter
            }
            P::UseAlternativeValue { parameter, alternative_value: t, .. } => {
                texts.extend(t.as_deref());
                parameter
            }
            P::RemoveSmallestSuffixPattern { parameter, pattern: t, .. }
            | P::RemoveLargestSuffixPattern { parameter, pattern: t, .. }
            | P::RemoveSmallestPrefixPattern { parameter, pattern: t, .. }
            | P::RemoveLargestPrefixPattern { parameter, pattern: t, .. }
            | P::UppercaseFirstChar { parameter, pattern: t, .. }
            | P::UppercasePattern { parameter, pattern: t, .. }
            | P::LowercaseFirstChar { parameter, pattern: t, .. }
            | P::LowercasePattern { parameter, pattern: t, .. } => {
                texts.extend(t.as_deref());
                parameter
            }
            P::Substring { parameter, offset, length, .. } => {
                self.arith(&offset.value);
                if let Some(l) = length {
                    self.arith(&l.value);
                }
                parameter
            }
            P::ReplaceSubstring { parameter, pattern, replacement, .. } => {
                texts.push(pattern);
                texts.extend(replacement.as_deref());
                parameter
            }
            P::VariableNames { .. } | P::MemberKeys { .. } => return,
        };
        if let Parameter::NamedWithIndex { index, .. } = param {
            self.arith(index);
        }
        for t in texts {
            if t.contains('$') || t.contains('`') {
                match parse_word(t) {
                    Some(pieces) => {
                        let mut st = WordState::default();
                        self.pieces(t, &pieces, &mut st, false);
                    }
                    None => self.out.parse_error = true,
                }
            }
        }
    }
}

#[derive(Default)]
struct WordState {
    value: String,
    dynamic: bool,
    tilde: bool,
    glob: bool,
    brace: bool,
}

fn static_word(s: &str) -> Word {
    Word { raw: s.to_string(), value: Some(s.to_string()), ..Word::default() }
}

fn assignment_name(a: &ast::Assignment) -> String {
    match &a.name {
        ast::AssignmentName::VariableName(n) => n.clone(),
        ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
    }
}

/// Undoes the backslash escapes that are special inside backquotes.
fn unescape_backquoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && matches!(n, '\\' | '`' | '$')
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Decodes the body of `$'...'`; `None` for escapes we do not model.
fn decode_ansi_c(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = *chars.get(i)?;
        i += 1;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' => {
                let mut n = 0u32;
                let mut k = 0;
                while k < 2 && i < chars.len() && chars[i].is_ascii_hexdigit() {
                    n = n * 16 + chars[i].to_digit(16)?;
                    i += 1;
                    k += 1;
                }
                if k == 0 {
                    return None;
                }
                out.push(char::from_u32(n)?);
            }
            '0'..='7' => {
                let mut n = e.to_digit(8)?;
                let mut k = 1;
                while k < 3 && i < chars.len() && ('0'..='7').contains(&chars[i]) {
                    n = n * 8 + chars[i].to_digit(8)?;
                    i += 1;
                    k += 1;
                }
                out.push(char::from_u32(n)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// For `eval ...`, `sh -c SCRIPT`, `bash -c`, `env -S STRING` (after
/// wrappers): `Some(Some(script))` when the script is static,
/// `Some(None)` when it is not knowable, `None` for other commands.
fn nested_script(p: &Part) -> Option<Option<String>> {
    let words = crate::normalize::strip_wrappers(&p.words);
    let (first, rest) = words.split_first()?;
    let name = crate::normalize::program_name(first)?;
    match name {
        "eval" => {
            let mut vals = Vec::new();
            for w in rest {
                vals.push(w.value.clone()?);
            }
            Some(Some(vals.join(" ")))
        }
        "env" => {
            let mut it = rest.iter();
            while let Some(w) = it.next() {
                let t = w.text();
                if let Some(v) = t.strip_prefix("--split-string=") {
                    return Some(w.value.as_ref().map(|_| v.to_string()));
                }
                if t == "-S" || t == "--split-string" {
                    return Some(it.next().map(|s| s.value.clone()).unwrap_or(None));
                }
                if t.starts_with('-') && !t.starts_with("--") && t.contains('S') {
                    // `-S'script'` glued or `-iS script`.
                    let glued = t.split_once('S').map(|(_, r)| r).unwrap_or("");
                    if !glued.is_empty() {
                        return Some(w.value.as_ref().map(|_| glued.to_string()));
                    }
                    return Some(it.next().map(|s| s.value.clone()).unwrap_or(None));
                }
            }
            None
        }
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "busybox" | "su" => {
            let mut it = rest.iter();
            while let Some(w) = it.next() {
                let t = w.text();
                if t.starts_with('-') && !t.starts_with("--") && t[1..].contains('c') {
                    return Some(it.next().map(|s| s.value.clone()).unwrap_or(None));
                }
                if t == "--command" {
                    return Some(it.next().map(|s| s.value.clone()).unwrap_or(None));
                }
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parser_would_choke;

    /// The text is kept from the parser (the fuzz target aborts on the
    /// panic that `catch_unwind` would hide here, as the wasm tool traps).
    #[test]
    fn a_parameter_left_open_on_a_here_documents_first_line_is_kept_from_the_parser() {
        assert!(parser_would_choke("<<c<${\0}${\nc"));
        assert!(parser_would_choke("cat <<EOF ${x\nhi\nEOF"));
        assert!(!parser_would_choke("cat <<EOF ${x}\nhi\nEOF"));
    }

    #[test]
    fn a_command_or_arithmetic_left_open_on_a_here_documents_first_line_is_kept_from_the_parser() {
        let fuzzed = "x\0\n!z<<c<JJJJz}\\\\z}}\u{1}\0@$[\u{e}\t\0\0]\0@$[\0\0\\  {\0\u{4}\\\\\\\\\nATnv FO\n i:*\nc";
        assert!(parser_would_choke(fuzzed));
        assert!(parser_would_choke("cat <<EOF $[1\nhi\nEOF"));
        assert!(parser_would_choke("cat <<EOF $(date\nhi\nEOF"));
        assert!(parser_would_choke("cat <<EOF $(echo (a)\nhi\nEOF"), "the bare ( nests inside $(");
        assert!(!parser_would_choke("cat <<EOF $[1] $(date) ${x}\nhi\nEOF"));
        assert!(!parser_would_choke("cat <<EOF (a $(b)\nhi\nEOF"), "a bare ( outside an expansion is not one");
    }

    #[test]
    fn a_here_document_inside_an_open_parameter_is_kept_from_the_parser() {
        assert!(parser_would_choke("${<<c\n}\nc"));
        assert!(parser_would_choke("echo ${x:-$(cat <<c\n}\nc\n)}"));
        assert!(parser_would_choke("echo ${x\ncat <<EOF\nhi\nEOF"), "open on an earlier line too");
        assert!(!parser_would_choke("echo \"$(cat <<EOF\nhi\nEOF\n)\""), "inside $( it is ordinary");
        assert!(!parser_would_choke("echo ${x}; cat <<EOF\nhi\nEOF"));
    }

    #[test]
    fn a_here_document_tag_with_a_quote_left_open_is_kept_from_the_parser() {
        assert!(parser_would_choke("<<c\"\n$[c]$[\nc"));
        assert!(parser_would_choke("cat <<'EOF\nhi\nEOF"));
        assert!(!parser_would_choke("cat <<'EOF'\nhi\nEOF"));
        assert!(!parser_would_choke("cat <<\"EOF\"\nhi $x\nEOF"));
        assert!(parser_would_choke("<<c\\\n$[c]$[\nc"), "a backslash at the tag's end");
        assert!(!parser_would_choke("cat <<\\EOF\nhi\nEOF"));
    }

    #[test]
    fn an_escaped_bracket_closes_no_expansion() {
        assert!(parser_would_choke("<<c<$[$[\u{e}]\\]\nc"));
        assert!(!parser_would_choke("cat <<EOF > x\\ y\nhi\nEOF"));
    }

    #[test]
    fn a_first_line_that_may_run_on_into_the_document_is_kept_from_the_parser() {
        assert!(parser_would_choke("<<c<$[$[\"]\"]\nc"), "a quoted bracket");
        assert!(parser_would_choke("<<c<$[\u{e}]\\\n$[\nc"), "a backslash at the line's end");
        assert!(parser_would_choke("<<c<\"\n$[c]$[\nc"), "a quote left open");
        assert!(parser_would_choke("cat <<EOF > 'x\nhi\nEOF"));
        assert!(parser_would_choke("$(<<c<$[\u{e}]\nc"), "inside a $( never closed");
        assert!(!parser_would_choke("x=$(cat <<c\nhi\nc\n)"), "inside a $( that closes");
        assert!(parser_would_choke("$(<<c\n)\nc"), "closed only by a bracket in the body");
        assert!(parser_would_choke("$(<<c<$[)]\nc"), "a bracket on the first line inside an open one");
        assert!(parser_would_choke("$($[)]<<c\n)\nc"), "brackets of two kinds interleaved before it");
        assert!(parser_would_choke("#<<c\n$(<<c\n)\nc"), "a << in a comment starts no body");
        assert!(parser_would_choke("\"<<c\n$(<<c\n)\nc"), "nor one in quotes");
        assert!(parser_would_choke("$(\r#<<c\n)\nc"), "a # after a carriage return starts no comment");
        assert!(parser_would_choke("!(<<c\n)$(<<c\n)\nc"), "nor one in an extended glob");
        assert!(parser_would_choke("<#<<c\n$(<<c\n)\nc"), "a # after a redirection starts a comment");
        let commit = "git commit -m \"$(cat <<'EOF'\nfix(x): a (bracket)\nEOF\n)\" # done";
        assert!(!parser_would_choke(commit), "a here-document in $( inside quotes is one");
        assert!(!parser_would_choke("[[ $(x) ]] && cat <<EOF\nhi\nEOF"), "well nested");
        assert!(!parser_would_choke("case $a in b) cat <<EOF\nhi\nEOF\n;; esac"), "a closer with nothing open");
        assert!(parser_would_choke("( cat <<EOF > ${out}\nhi\nEOF\n)"));
        assert!(!parser_would_choke("( cat <<EOF > out\nhi\nEOF\n)"), "nothing after the tag that brackets");
        let commit = "git commit -m \"$(cat <<'EOF'\nfix(parser): a [bracket] {here}\nEOF\n)\"";
        assert!(!parser_would_choke(commit), "brackets in a body inside $( are text");
        assert!(parser_would_choke("cat <<EOF x\\\nhi\nEOF"));
        assert!(parser_would_choke("cat <<EOF > \"$(dirname x)/y\"\nhi\nEOF"), "quoting beside an expansion asks");
        assert!(!parser_would_choke("cat <<EOF > \"$dir/y\"\nhi\nEOF"));
        assert!(!parser_would_choke("cat <<EOF > $(dirname x)/y\nhi\nEOF"));
        assert!(parser_would_choke("<<c<\"\\\"\n${n}${\nc"), "a quote left open past an escaped one");
        let fuzzed = "<<c<$[#Kx))))))))))))))))))gsn]\n]\nc";
        assert!(parser_would_choke(fuzzed), "a comment that hides the closing bracket");
        assert!(parser_would_choke("cat <<EOF > $(dirname x) # to x\nhi\nEOF"));
        assert!(parser_would_choke("cat <<EOF > ${x}\u{1}\nhi\nEOF"), "a control character");
        assert!(!parser_would_choke("cat <<EOF > ${dir:-/tmp}/y.txt && echo done\nhi\nEOF"));
        assert!(!parser_would_choke("cat <<EOF # a comment without an expansion\nhi\nEOF"));
    }
}
