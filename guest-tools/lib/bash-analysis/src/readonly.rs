//! Read-only classification of one part (spec §5.4.1–5.4.2, 2.0.11 lists).

use crate::model::{Analysis, Part, RedirKind};
use crate::normalize::trusted_program;

impl Analysis {
    /// Whether each part, in order, is read-only on its own.
    pub fn read_only_parts(&self) -> &[bool] {
        self.read_only.get_or_init(|| self.parts.iter().map(part_is_read_only).collect())
    }

    /// Whether there are parts and every one is read-only.
    pub fn all_read_only(&self) -> bool {
        !self.parts.is_empty() && self.read_only_parts().iter().all(|&r| r)
    }
}

/// Commands that are read-only whatever their arguments (reference
/// `SAFE_COMMANDS` without `tee`, removed in 2.0.11).
pub const SAFE_COMMANDS: &[&str] = &["echo", "cat", "ls", "pwd", "cd", "true", "false", "printf", "grep"];

/// Read-only git invocations (reference list without `git branch`,
/// `git tag`, `git remote`, `git reflog`, removed in 2.0.11), plus the other
/// read-only forms of `git config`.
pub const GIT_READ_ONLY_COMMANDS: &[&str] = &[
    "git status",
    "git log",
    "git diff",
    "git show",
    "git ls-files",
    "git ls-tree",
    "git cat-file",
    "git rev-parse",
    "git rev-list",
    "git describe",
    "git shortlog",
    "git blame",
    "git grep",
    "git config --get",
    "git config --list",
    "git config --get-all",
    "git config --get-regexp",
    "git config -l",
];

/// Reference `READ_ONLY_COMMANDS` (exact or followed by a space and anything).
pub const READ_ONLY_COMMANDS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "file",
    "stat",
    "wc",
    "grep",
    "rg",
    "ag",
    "ack",
    "find",
    "tree",
    "pwd",
    "which",
    "whereis",
    "type",
    "docker ps",
    "docker images",
    "docker inspect",
    "docker logs",
    "docker version",
    "docker info",
    "gh repo view",
    "gh issue list",
    "gh pr list",
    "gh status",
    "python --version",
    "python -V",
    "node --version",
    "node -v",
    "npm list",
    "npm ls",
    "pip list",
    "pip show",
    "sort",
    "date",
];

/// Read-only programs that have no option which writes or executes, so a
/// dynamic argument (`cat $F`) cannot change that.
const DYNAMIC_ARGS_OK: &[&str] = &[
    "echo", "cat", "ls", "pwd", "cd", "true", "false", "printf", "grep", "head", "tail", "wc", "stat", "which",
    "whereis", "type",
];

/// `find` predicates that write, delete or execute.
pub const FIND_MUTATING_PREDICATES: &[&str] =
    &["-delete", "-exec", "-execdir", "-fls", "-fprint", "-fprint0", "-fprintf", "-ok", "-okdir"];

/// `find` primaries whose next argument is an operand (a name, a pattern...).
const FIND_ARG_PRIMARIES: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "-type",
    "-xtype",
    "-newer",
    "-anewer",
    "-cnewer",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-size",
    "-mtime",
    "-atime",
    "-ctime",
    "-mmin",
    "-amin",
    "-cmin",
    "-used",
    "-links",
    "-inum",
    "-samefile",
    "-maxdepth",
    "-mindepth",
    "-printf",
    "-fstype",
    "-regextype",
    "-context",
    "-D",
    "-newermt",
    "-newerct",
    "-newerat",
    "-newermm",
];

/// Options that make an otherwise read-only command write a file or run a
/// program. A long one matches as written, with `=value`, or abbreviated
/// (`sort --out=f`: getopt accepts any unambiguous prefix); a short one
/// anywhere in a cluster of short options (`sort -uo f`, `-ofile`), except
/// after a letter that takes the rest of the cluster as its value
/// ([`short_value_letters`]).
fn writes_or_runs(program: &str, arg: &str) -> bool {
    let opts: &[&str] = match program {
        "git" => &["--output", "-O", "--open-files-in-pager", "--ext-diff"],
        "rg" => &["--pre"],
        "ag" | "ack" => &["--pager"],
        "tree" => &["-o", "--output"],
        "file" => &["-C", "--compile"],
        "less" | "more" => &["-o", "-O", "--log-file", "--LOG-FILE"],
        "sort" => &["-o", "--output", "--compress-program"],
        "date" => &["-s", "--set"],
        _ => return false,
    };
    if let Some(long) = arg.strip_prefix("--") {
        let name = long.split_once('=').map_or(long, |(n, _)| n);
        return !name.is_empty() && opts.iter().any(|o| o.strip_prefix("--").is_some_and(|o| o.starts_with(name)));
    }
    let Some(cluster) = arg.strip_prefix('-') else {
        return false;
    };
    let takes_value = short_value_letters(program);
    for c in cluster.chars() {
        if opts.iter().any(|o| o.len() == 2 && o.ends_with(c)) {
            return true;
        }
        if takes_value.contains(c) {
            return false;
        }
    }
    false
}

/// Short options whose value is the rest of their cluster, for the
/// programs where a cluster is read exactly (elsewhere a dangerous letter
/// anywhere in the cluster counts).
fn short_value_letters(program: &str) -> &'static str {
    match program {
        "sort" => "ktST",
        "date" => "dfrI",
        _ => "",
    }
}

/// Environment names whose assignment cannot change what a read-only
/// program does (reference `SAFE_ENV_VARS` minus `PATH`, `HOME`, `USER`,
/// `SHELL`, `EDITOR`, `PAGER`, which can make a program run another).
pub const HARMLESS_ENV_VARS: &[&str] = &[
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "RUST_LOG",
    "LANG",
    "TERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "DEBUG",
    "VERBOSE",
    "CI",
    "TZ",
    "LC_ALL",
    "LC_CTYPE",
    "COLUMNS",
    "LINES",
    "CLICOLOR",
    "CLICOLOR_FORCE",
];

/// True when every leading assignment of the part is harmless (the
/// allow-list above; used for allow rules, suggestions and the accept-edits
/// auto-allow).
pub(crate) fn assigns_harmless(part: &Part) -> bool {
    part.assigns.iter().all(|(n, _)| HARMLESS_ENV_VARS.contains(&n.as_str()))
}

/// Environment names that change which program runs, what it loads or
/// reads, or how the shell itself behaves: an assignment to one of them
/// keeps a command out of the read-only class (see `docs/bash-deviations.md`
/// §3 for why each is here). Matched without regard to case; `*` at the
/// start or end is a wildcard.
pub const RISKY_ENV_VARS: &[&str] = &[
    // The dynamic loader: preload or redirect libraries into any program.
    "LD_*",
    "DYLD_*",
    "GLIBC_TUNABLES",
    "MALLOC_*",
    // Search paths: PATH picks the program; LD_LIBRARY_PATH, GCONV_PATH
    // (iconv loads modules from it), PYTHONPATH, NODE_PATH, CDPATH (moves
    // `cd`), MANPATH, LOCPATH/NLSPATH ... pick what is loaded or read.
    "*PATH",
    "*LIB",
    // The shell: startup files, tracing prompts, options, word splitting.
    "BASH*",
    "ENV",
    "IFS",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "SHELLOPTS",
    "PROMPT_COMMAND",
    "POSIXLY_CORRECT",
    "SHELL",
    "HOME",
    "XDG_*",
    "ZDOTDIR",
    "INPUTRC",
    // Git reads GIT_DIR, GIT_CONFIG*, GIT_PAGER, GIT_EXTERNAL_DIFF,
    // GIT_SSH_COMMAND...; configuration files can name programs to run.
    "GIT_*",
    "*CONFIG*",
    // Programs that a read-only program may start.
    "*PAGER*",
    "*EDITOR*",
    "VISUAL",
    "BROWSER",
    "*ASKPASS*",
    "LESS*",
    "MORE",
    "MAGIC",
    "GNUPG*",
    // Options read from the environment (GREP_OPTIONS, TAR_OPTIONS,
    // JAVA_TOOL_OPTIONS, NODE_OPTIONS, RUBYOPT, PERL5OPT, MAVEN_OPTS ...).
    "*OPTIONS",
    "*OPT",
    "*OPTS",
    // Interpreters' and package managers' own variables.
    "PYTHON*",
    "NODE_*",
    "PERL*",
    "RUBY*",
    "NPM_*",
    "PIP_*",
    "DOCKER_*",
    "GH_*",
];

/// True when `name` matches an entry of [`RISKY_ENV_VARS`] and is not one
/// of the [`HARMLESS_ENV_VARS`] (`NODE_ENV`, `PYTHONUNBUFFERED`).
pub(crate) fn env_var_is_risky(name: &str) -> bool {
    if HARMLESS_ENV_VARS.contains(&name) {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    RISKY_ENV_VARS.iter().any(|pat| match (pat.strip_prefix('*'), pat.strip_suffix('*')) {
        (Some(mid), _) if mid.ends_with('*') => upper.contains(&mid[..mid.len() - 1]),
        (Some(tail), _) => upper.ends_with(tail),
        (None, Some(head)) => upper.starts_with(head),
        (None, None) => upper == *pat,
    })
}

/// True when no leading assignment of the part can change what a read-only
/// program does: no name in [`RISKY_ENV_VARS`], and no value that names a
/// dangerous path (the default lists: the read-only test has no settings).
pub(crate) fn assigns_inert(part: &Part) -> bool {
    part.assigns.iter().all(|(n, raw)| {
        let value = raw.split_once('=').map_or("", |(_, v)| v);
        !env_var_is_risky(n) && !crate::paths::text_names_default_danger(value)
    })
}

/// True when this single part only reads.
///
/// Not read-only: any redirection writing a file other than `/dev/null`;
/// an assignment to a name in [`RISKY_ENV_VARS`] or of a value naming a
/// dangerous path; a bare assignment; a `sed` that may write, run or read
/// another file (see [`crate::sed::sed_is_read_only`]); a
/// dynamic or relative-path program; wrappers (`sudo ls`); a `find` with a
/// mutating predicate in predicate position (quoted or not); options that
/// write or execute (`git diff --output=f`, `rg --pre cmd`, `tree -o f`).
pub(crate) fn part_is_read_only(part: &Part) -> bool {
    !writes_by_redirect(part) && invocation_is_read_only(part)
}

/// True when the part has an output redirection to a file other than
/// `/dev/null`.
pub(crate) fn writes_by_redirect(part: &Part) -> bool {
    part.redirects.iter().any(|r| r.kind == RedirKind::Write && !r.is_dev_null())
}

/// [`part_is_read_only`] without looking at the redirections: the program
/// run with these assignments and arguments only reads (`wc -l .env` in
/// `wc -l .env > out.txt`).
pub(crate) fn invocation_is_read_only(part: &Part) -> bool {
    if !assigns_inert(part) {
        return false;
    }
    let Some((first, args)) = part.words.split_first() else {
        return false;
    };
    let Some(program) = trusted_program(first) else {
        return false;
    };
    // A dynamic argument (`$X`) may expand to any option (`--output=f`,
    // `-delete`): only programs without such options accept one.
    let mut vals: Vec<&str> = Vec::with_capacity(args.len());
    for a in args {
        match a.value.as_deref() {
            Some(v) => vals.push(v),
            None if DYNAMIC_ARGS_OK.contains(&program.as_str()) => vals.push(&a.raw),
            None => return false,
        }
    }
    if vals.iter().any(|a| writes_or_runs(&program, a)) {
        return false;
    }
    if program == "find" && find_mutates(&vals) {
        return false;
    }
    if program == "sed" {
        return crate::sed::sed_is_read_only(&vals);
    }
    let mut text = program.clone();
    for v in &vals {
        text.push(' ');
        text.push_str(v);
    }
    let listed = |list: &[&str]| {
        list.iter().any(|c| text.strip_prefix(c).is_some_and(|rest| rest.is_empty() || rest.starts_with(' ')))
    };
    if listed(READ_ONLY_COMMANDS) || listed(GIT_READ_ONLY_COMMANDS) {
        return true;
    }
    SAFE_COMMANDS.contains(&program.as_str())
}

/// True when a `find` argument list contains a mutating predicate outside
/// the operand position of a primary such as `-name`.
pub(crate) fn find_mutates(args: &[&str]) -> bool {
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if FIND_MUTATING_PREDICATES.contains(&a) {
            return true;
        }
        if FIND_ARG_PRIMARIES.contains(&a) {
            i += 1;
        }
        i += 1;
    }
    false
}
