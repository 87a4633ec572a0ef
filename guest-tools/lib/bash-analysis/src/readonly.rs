//! Read-only classification of one part (spec §5.4.1–5.4.2, 2.0.11 lists).

use crate::normalize::trusted_program;
use crate::parse::{Part, RedirKind};

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
/// program (matched as the whole argument or as `option=...`).
fn writes_or_runs(program: &str, arg: &str) -> bool {
    let opts: &[&str] = match program {
        "git" => &["--output", "-O", "--open-files-in-pager", "--ext-diff"],
        "rg" => &["--pre"],
        "ag" | "ack" => &["--pager"],
        "tree" => &["-o", "--output"],
        "file" => &["-C", "--compile"],
        "less" | "more" => &["-o", "-O", "--log-file", "--LOG-FILE"],
        _ => &[],
    };
    opts.iter().any(|o| {
        arg == *o
            || arg.strip_prefix(o).is_some_and(|r| r.starts_with('='))
            // Glued short option with a value: `-ofile`, `-Opager`.
            || (o.len() == 2 && !o.starts_with("--") && arg.starts_with(o) && arg.len() > 2 && !arg.starts_with("--"))
    })
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

/// True when every leading assignment of the part is harmless.
pub(crate) fn assigns_harmless(part: &Part) -> bool {
    part.assigns.iter().all(|(n, _)| HARMLESS_ENV_VARS.contains(&n.as_str()))
}

/// True when this single part only reads.
///
/// Not read-only: any redirection writing a file other than `/dev/null`;
/// assignments other than [`HARMLESS_ENV_VARS`]; a bare assignment; a
/// dynamic or relative-path program; wrappers (`sudo ls`); a `find` with a
/// mutating predicate in predicate position (quoted or not); options that
/// write or execute (`git diff --output=f`, `rg --pre cmd`, `tree -o f`).
pub(crate) fn part_is_read_only(part: &Part) -> bool {
    if part.redirects.iter().any(|r| r.kind == RedirKind::Write && !r.is_dev_null()) {
        return false;
    }
    if !assigns_harmless(part) {
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
