//! The data a command is analysed into: shell [`Word`]s, [`Part`]s (one
//! simple command each), their [`Redirect`]s, the [`Place`] a command runs
//! at and the whole [`Analysis`]. `parse` builds these, `normalize`,
//! `readonly` and the rest read them; this module imports none of them.

use std::borrow::Cow;

/// One shell word as written and, when it is static, as the shell sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Word {
    /// The source text (quotes included).
    pub raw: String,
    /// The word after quote removal, `None` when it contains an expansion
    /// or substitution whose value we cannot know (`$X`, `$(..)`, `~user`).
    pub value: Option<String>,
    /// The value starts with an unquoted `~` (or `$HOME`) that the shell expands.
    pub tilde: bool,
    /// Unquoted glob characters (`*`, `?`, `[`) occur.
    pub glob: bool,
    /// An unquoted `{` occurs (possible brace expansion).
    pub brace: bool,
}

impl Word {
    /// The value, or the raw text for a dynamic word.
    pub fn text(&self) -> &str {
        self.value.as_deref().unwrap_or(&self.raw)
    }
    /// The value when it is a static path we can resolve.
    pub fn path(&self) -> Option<String> {
        if self.brace {
            return None;
        }
        let v = self.value.as_ref()?;
        // A quoted `~` is a literal directory name, not the home directory.
        if v.starts_with('~') && !self.tilde {
            return Some(format!("./{v}"));
        }
        Some(v.clone())
    }
}

/// What a redirection does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RedirKind {
    /// `<`: reads a file.
    Read,
    /// `>`, `>>`, `>|`, `<>`, `&>`, `&>>`, `>&file`: writes a file.
    Write,
}

/// A redirection to or from a named file.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Redirect {
    pub kind: RedirKind,
    pub target: Word,
}

impl Redirect {
    /// Writes to `/dev/null` only (harmless).
    pub fn is_dev_null(&self) -> bool {
        self.target.value.as_deref() == Some("/dev/null")
    }
}

/// One simple command.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Part {
    /// Leading `NAME=value` assignments: (name, raw text).
    pub assigns: Vec<(String, String)>,
    /// The values of those assignments (each element of an array value).
    pub assign_values: Vec<Word>,
    /// The command name and its arguments.
    pub words: Vec<Word>,
    /// Redirections to or from files (descriptor duplications are omitted).
    pub redirects: Vec<Redirect>,
    /// How the part's working directory follows from the command's: the
    /// `cd`/`pushd` targets met before it, in order (empty: the command's
    /// own directory); `None` when a preceding `cd` made it unknowable.
    /// Kept unresolved so one analysis serves every working directory.
    pub cd_trail: Option<Vec<String>>,
    /// Found inside a substitution or a nested script, not at top level.
    pub nested: bool,
}

/// Where a command runs: the directory relative paths start from and the
/// home directory `~` stands for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place<'a> {
    pub cwd: &'a str,
    pub home: &'a str,
}

impl Part {
    /// The absolute working directory of this part when the command runs at
    /// `at`; `None` when a preceding `cd` made it unknowable.
    pub fn dir<'a>(&self, at: &Place<'a>) -> Option<Cow<'a, str>> {
        let trail = self.cd_trail.as_ref()?;
        let mut dir = Cow::Borrowed(at.cwd);
        for step in trail {
            dir = Cow::Owned(toolhost_policy::normalize(step, &dir, at.home));
        }
        Some(dir)
    }

    /// The source-like text: assignments and words joined by one space.
    pub fn text(&self) -> String {
        let mut out: Vec<&str> = self.assigns.iter().map(|(_, raw)| raw.as_str()).collect();
        out.extend(self.words.iter().map(|w| w.raw.as_str()));
        out.join(" ")
    }
    /// The words alone (no assignments), joined by one space.
    pub fn words_text(&self) -> String {
        let v: Vec<&str> = self.words.iter().map(|w| w.raw.as_str()).collect();
        v.join(" ")
    }
}

/// The result of analysing one command line.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Analysis {
    /// Every simple command, in source order (nested ones after their host).
    pub parts: Vec<Part>,
    /// First construct that cannot be analysed statically (reference node name).
    pub dynamic: Option<&'static str>,
    /// The command (or a nested script) could not be parsed.
    pub parse_error: bool,
    /// Whether each part is read-only on its own, computed once by
    /// `readonly` (every permission function of a decision asks).
    pub read_only: std::cell::OnceCell<Vec<bool>>,
}
