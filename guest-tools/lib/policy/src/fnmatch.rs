//! Python `fnmatch.fnmatchcase` without a regex engine.

/// One element of a compiled pattern; every element but `Star` consumes
/// exactly one character.
#[derive(Debug, Clone)]
enum Tok {
    Star,
    Any,
    Lit(char),
    Class { negate: bool, items: Vec<(char, char)> },
}

/// A compiled wildcard pattern (`*`, `?`, `[seq]`, `[!seq]`), matched
/// against a whole string. `*` crosses `/`: to match one path segment, give
/// it one segment.
#[derive(Debug, Clone)]
pub struct Wildcard(Vec<Tok>);

impl Wildcard {
    /// Python `fnmatch` syntax: only `!` negates a class.
    pub fn new(pattern: &str) -> Self {
        Self(compile(pattern, false))
    }

    /// Glob syntax: `[^seq]` negates a class too.
    pub fn with_caret_negation(pattern: &str) -> Self {
        Self(compile(pattern, true))
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        matches_tokens(&self.0, text)
    }
}

fn compile(pattern: &str, caret_negates: bool) -> Vec<Tok> {
    let p: Vec<char> = pattern.chars().collect();
    let n = p.len();
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let c = p[i];
        i += 1;
        match c {
            '*' => {
                if !matches!(out.last(), Some(Tok::Star)) {
                    out.push(Tok::Star);
                }
            }
            '?' => out.push(Tok::Any),
            '[' => {
                // Find the closing bracket like fnmatch.translate: a `!`
                // then a `]` right after the opening are part of the set.
                let mut j = i;
                let negates = |c: char| c == '!' || (caret_negates && c == '^');
                if j < n && negates(p[j]) {
                    j += 1;
                }
                if j < n && p[j] == ']' {
                    j += 1;
                }
                while j < n && p[j] != ']' {
                    j += 1;
                }
                if j >= n {
                    out.push(Tok::Lit('['));
                    continue;
                }
                let mut k = i;
                let negate = negates(p[k]);
                if negate {
                    k += 1;
                }
                let mut items = Vec::new();
                while k < j {
                    let lo = p[k];
                    if k + 2 < j && p[k + 1] == '-' {
                        let hi = p[k + 2];
                        // Python drops reversed (empty) ranges.
                        if lo <= hi {
                            items.push((lo, hi));
                        }
                        k += 3;
                    } else {
                        items.push((lo, lo));
                        k += 1;
                    }
                }
                out.push(Tok::Class { negate, items });
                i = j + 1;
            }
            other => out.push(Tok::Lit(other)),
        }
    }
    out
}

fn one(tok: &Tok, c: char) -> bool {
    match tok {
        Tok::Star => true,
        Tok::Any => true,
        Tok::Lit(l) => *l == c,
        Tok::Class { negate, items } => {
            let hit = items.iter().any(|(lo, hi)| *lo <= c && c <= *hi);
            hit != *negate
        }
    }
}

/// Shell-style wildcard match with Python's `fnmatch.fnmatchcase` semantics
/// (case-sensitive, whole string): `*` matches any run of characters
/// **including `/`**, `?` any one character, `[seq]` one character in the
/// set (ranges `a-z`), `[!seq]` one character not in it. An unclosed `[` is
/// a literal; a backslash is an ordinary character. So `/tmp/**` matches
/// `/tmp/a/b.txt` and `**/*.py` does not match `main.py`.
///
/// Runs in O(pattern × text) worst case (no exponential backtracking).
pub fn fnmatch(pattern: &str, text: &str) -> bool {
    Wildcard::new(pattern).matches(text)
}

fn matches_tokens(toks: &[Tok], text: &str) -> bool {
    let t: Vec<char> = text.chars().collect();
    // Classic greedy matcher with a single backtrack point: valid because
    // every token other than `Star` consumes exactly one character.
    let (mut ti, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match toks.get(pi) {
            Some(Tok::Star) => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(tok) if one(tok, t[ti]) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    toks[pi..].iter().all(|tok| matches!(tok, Tok::Star))
}
