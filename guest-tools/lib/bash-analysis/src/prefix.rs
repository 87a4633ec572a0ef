//! Suggested allow rules (spec §5.4.8, made narrow and safe): for one part,
//! the narrowest prefix that still reads as a command a person would
//! approve. See "Suggested rules" in `docs/permissions.md` for the rule of
//! choice and examples.
//!
//! The prefix is the part's words from the start up to the last *command
//! word*: wrappers that only change how the program runs (`timeout 60`,
//! `time`, `nice -n 5`, `nohup`, `env A=b`, `stdbuf -oL`), the program, the
//! options before its subcommand (kept verbatim with their values, so `git
//! -C dir`, `kubectl --context dev -n ns`, `make -C dir` stay in the rule) and
//! the subcommand words ([`next`]): `git stash pop`, `npm run lint`, `yarn
//! workspace app build`, `python -m pytest`. A program with subcommands
//! never gets a rule without one.

use crate::model::{Part, Word};
use crate::normalize::{WRAPPERS, program_name, strip_wrappers};
use crate::readonly::{SAFE_COMMANDS, assigns_harmless, part_is_read_only};

/// Programs for which no rule is ever suggested: a prefix rule for them
/// would allow destruction, privilege escalation or arbitrary code.
pub const NO_SUGGEST_PROGRAMS: &[&str] = &[
    "rm",
    "rmdir",
    "dd",
    "mkfs",
    "fdisk",
    "format",
    "shred",
    "truncate",
    "chmod",
    "chown",
    "chgrp",
    "kill",
    "killall",
    "pkill",
    "sudo",
    "doas",
    "su",
    "env",
    "command",
    "builtin",
    "exec",
    "eval",
    "source",
    ".",
    "xargs",
    "nice",
    "nohup",
    "timeout",
    "time",
    "stdbuf",
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "node",
    "perl",
    "ruby",
    "php",
    "deno",
    "mv",
    "cp",
    "ln",
    "install",
    "curl",
    "wget",
    "ssh",
    "scp",
    "rsync",
    "nc",
    "ncat",
    "socat",
    "find",
    "sed",
    "awk",
    "crontab",
    "systemctl",
    "reboot",
    "shutdown",
    "mount",
    "umount",
];

/// Wrappers a suggested rule may keep in front of the program: they change
/// when or how long it runs, not what it does. Any other wrapper (`sudo`,
/// `xargs`, `exec`, ...) means no rule.
const SEE_PAST: &[&str] = &["timeout", "time", "nice", "nohup", "env", "stdbuf"];

/// Programs whose arguments are all the "what" (the files written): the
/// rule is the whole part.
const WHOLE_PART: &[&str] = &["tee", "mkdir", "touch"];

/// Interpreters that get a rule only for `-m MODULE` (`python -m pytest`).
const MODULE_RUNNERS: &[&str] = &["python", "python3", "py"];

/// What the next non-option word after a command path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Not a command word: the rule ends here.
    Stop,
    /// A subcommand if there is one (`git stash` or `git stash pop`).
    Optional,
    /// A subcommand that must be there: without one, no rule.
    Required,
    /// A name that must be there and is part of the command (a script,
    /// a workspace): `npm run lint`, `yarn workspace @org/app`.
    Name,
    /// A program run by the runner, judged as a command of its own
    /// (`uv run pytest`, `npx prettier`).
    Command,
}

/// The command path grammar of programs with subcommands; `None` for
/// programs without (their rule is the program and a subcommand-like second
/// word, as the reference).
fn next(program: &str, path: &[&str]) -> Option<Next> {
    let group = |groups: &[&str]| match path {
        [] => Next::Required,
        [g] if groups.contains(g) => Next::Optional,
        _ => Next::Stop,
    };
    Some(match program {
        "git" => group(&[
            "stash",
            "remote",
            "submodule",
            "worktree",
            "bisect",
            "notes",
            "lfs",
            "sparse-checkout",
            "reflog",
            "maintenance",
        ]),
        "cargo" => group(&["nextest"]),
        "rustup" => group(&["toolchain", "target", "component", "self", "override"]),
        "go" => group(&["mod", "work", "tool"]),
        "pip" | "pip3" => group(&["cache", "config"]),
        "kubectl" | "oc" => group(&["config", "rollout", "auth", "top", "certificate", "set", "create"]),
        "helm" => group(&["repo", "plugin", "dependency", "registry", "get", "show"]),
        "gh" => match path {
            [] => Next::Required,
            [_] => Next::Optional,
            _ => Next::Stop,
        },
        "terraform" | "tofu" => group(&["state", "workspace"]),
        "brew" | "apt" | "apt-get" | "dnf" | "yum" | "pacman" | "gradle" | "gradlew" | "mvn" | "dotnet" | "make"
        | "gmake" => group(&[]),
        "docker" | "podman" => match path {
            [] => Next::Required,
            [g] if DOCKER_GROUPS.contains(g) => Next::Optional,
            _ => Next::Stop,
        },
        "npm" | "pnpm" | "bun" => match path {
            [] => Next::Required,
            ["run" | "run-script" | "rum" | "urn"] => Next::Name,
            ["exec" | "x" | "dlx"] => Next::Command,
            _ => Next::Stop,
        },
        "yarn" => return Some(yarn_next(path)),
        "npx" | "bunx" | "pnpx" => match path {
            [] => Next::Command,
            _ => Next::Stop,
        },
        "uv" | "poetry" | "pipenv" | "pdm" | "hatch" => match path {
            [] => Next::Required,
            ["run"] => Next::Command,
            ["pip" | "tool" | "python" | "cache" | "self" | "env" | "source"] => Next::Optional,
            _ => Next::Stop,
        },
        _ => return None,
    })
}

/// Docker's management commands (`docker compose up`, `docker image rm`).
const DOCKER_GROUPS: &[&str] = &[
    "compose",
    "container",
    "image",
    "network",
    "volume",
    "system",
    "builder",
    "buildx",
    "context",
    "plugin",
    "secret",
    "service",
    "stack",
    "swarm",
    "node",
    "config",
    "trust",
    "manifest",
];

/// Yarn: `yarn workspace NAME …` and `yarn workspaces foreach …` run a
/// yarn command of their own, so they are followed into it.
fn yarn_next(path: &[&str]) -> Next {
    match path {
        [] => Next::Required,
        ["workspace"] => Next::Name,
        ["workspace", _, rest @ ..] | ["workspaces", "foreach", rest @ ..] => yarn_next(rest),
        ["workspaces"] => Next::Optional,
        ["run"] => Next::Name,
        ["dlx" | "exec"] => Next::Command,
        _ => Next::Stop,
    }
}

/// Options before (or between) command words that take the next word as
/// their value: they select *where* (`-C dir`, `--context X`, `-n ns`) or
/// how, and the value must not be mistaken for a subcommand.
fn takes_value(program: &str, path: &[&str], opt: &str, value: Option<&str>) -> bool {
    let opts: &[&str] = match (program, path) {
        ("git", []) => &["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"],
        ("cargo", []) => &["-C", "--config", "-Z", "--color", "--manifest-path"],
        ("go", []) => &["-C"],
        ("kubectl" | "oc", _) => &[
            "-n",
            "--namespace",
            "--context",
            "--cluster",
            "--user",
            "--kubeconfig",
            "-s",
            "--server",
            "--token",
            "--as",
            "-v",
        ],
        ("helm", _) => &["-n", "--namespace", "--kube-context", "--kubeconfig"],
        ("docker" | "podman", []) => &["-H", "--host", "-c", "--context", "--config", "-l", "--log-level"],
        ("docker" | "podman", ["compose"]) => {
            &["-f", "--file", "-p", "--project-name", "--env-file", "--profile", "--project-directory"]
        }
        ("make" | "gmake", _) => {
            // `-j` and `-l` take a number only when one follows.
            if matches!(opt, "-j" | "-l") {
                return value.is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit()));
            }
            &["-C", "--directory", "-f", "--file", "--makefile", "-I", "--include-dir", "-o", "-W"]
        }
        ("npm", _) => &["--prefix", "-w", "--workspace", "--loglevel"],
        ("pnpm", _) => &["-C", "--dir", "--filter", "-F"],
        ("yarn", p) if p.last() == Some(&"foreach") => &["--include", "--exclude", "--from", "-j", "--jobs"],
        ("yarn", _) => &["--cwd"],
        ("npx" | "pnpx" | "bunx", _) => &["-p", "--package"],
        ("uv" | "poetry" | "pdm", _) => &["--directory", "--project", "-C", "-P", "-p", "--python"],
        ("gradle" | "gradlew", _) => &["-p", "--project-dir", "-b", "--build-file"],
        ("mvn", _) => &["-f", "--file", "-pl", "--projects"],
        _ => &[],
    };
    opts.contains(&opt)
}

/// True for a word that is an option here (kept in the rule when a command
/// word follows, dropped when none does): `-x`, `--long`, `--opt=value`,
/// and `+toolchain` for cargo / rustup, `NAME=value` for make.
fn option_like(program: &str, s: &str) -> bool {
    (s.starts_with('-') && s.len() > 1)
        || (matches!(program, "cargo" | "rustup") && s.starts_with('+'))
        || (matches!(program, "make" | "gmake") && s.split_once('=').is_some_and(|(n, _)| subcommand_like(n)))
}

/// True for a word that looks like a subcommand (`commit`, `run`,
/// `compose`), not a flag, path, assignment, pattern or number-like mode.
fn subcommand_like(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '@'))
}

/// True for a name that may follow `run` or `workspace`: a script
/// (`test:unit`), a package (`@org/app`), a module (`http.server`).
fn name_like(s: &str) -> bool {
    !s.starts_with(['-', '.', '/'])
        && !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '@' | '/' | '.' | '+'))
}

/// The word's value when it is static and written without quotes or
/// escapes, so the rule reads as the command was typed.
fn plain(w: &Word) -> Option<&str> {
    w.value.as_deref().filter(|v| *v == w.raw)
}

/// How many of `words` (the program first) the rule keeps, `None` when no
/// rule can be offered for this command.
fn command_len(words: &[Word]) -> Option<usize> {
    let first = words.first()?;
    let name = program_name(first)?;
    if NO_SUGGEST_PROGRAMS.contains(&name) {
        return None;
    }
    if WHOLE_PART.contains(&name) {
        return (words.len() > 1).then_some(words.len());
    }
    if MODULE_RUNNERS.contains(&name) || name.starts_with("python3.") {
        return module_len(words);
    }
    if next(name, &[]).is_some() {
        return path_len(name, words);
    }
    match words.get(1).and_then(plain) {
        Some(v) if subcommand_like(v) => Some(2),
        _ => Some(1),
    }
}

/// `python -m MODULE …`: the module and, for a module with subcommands
/// (`python -m pip install`), its command path. Any other use of an
/// interpreter runs arbitrary code: no rule.
fn module_len(words: &[Word]) -> Option<usize> {
    if words.get(1).and_then(plain) != Some("-m") {
        return None;
    }
    let module = words.get(2).and_then(plain).filter(|m| name_like(m))?;
    if next(module, &[]).is_some() {
        return path_len(module, &words[2..]).map(|n| n + 2);
    }
    Some(3)
}

/// Walks the command path of `program` (`words[0]`): options (with their
/// values) and command words, as [`next`] says.
fn path_len(program: &str, words: &[Word]) -> Option<usize> {
    let mut path: Vec<&str> = Vec::new();
    let mut end = 1;
    loop {
        let want = next(program, &path).unwrap_or(Next::Stop);
        if want == Next::Stop {
            return Some(end);
        }
        let mut j = end;
        while let Some(opt) = words.get(j).and_then(plain).filter(|t| option_like(program, t)) {
            let value = words.get(j + 1).and_then(|w| w.value.as_deref());
            j += if takes_value(program, &path, opt, value) { 2 } else { 1 };
        }
        let word = words.get(j).and_then(plain);
        match want {
            Next::Command => return word.and_then(|_| command_len(&words[j..])).map(|n| j + n),
            Next::Name => {
                path.push(word.filter(|w| name_like(w))?);
            }
            Next::Required => path.push(word.filter(|w| subcommand_like(w))?),
            Next::Optional => match word.filter(|w| subcommand_like(w)) {
                Some(w) => path.push(w),
                None => return Some(end),
            },
            Next::Stop => unreachable!("returned above"),
        }
        end = j + 1;
    }
}

/// The suggested rule content (`"git commit:*"`) for one part that is not
/// read-only, `None` when nothing narrow and safe can be offered: a
/// dynamic program, a wrapper other than those in [`SEE_PAST`], a safe
/// command (`echo x > f`), a program in [`NO_SUGGEST_PROGRAMS`], an
/// interpreter not running a module, or a program with subcommands used
/// without one.
pub(crate) fn part_rule(p: &Part) -> Option<String> {
    let inner = strip_wrappers(&p.words);
    let wrapped = p.words.len() - inner.len();
    let wrappers_ok =
        p.words[..wrapped].iter().filter_map(program_name).all(|n| !WRAPPERS.contains(&n) || SEE_PAST.contains(&n));
    if !wrappers_ok {
        return None;
    }
    // A safe command (`echo`, `cat`) asked about for its redirect alone: a
    // rule would not name the file written.
    let safe = inner.first().and_then(program_name).is_some_and(|n| SAFE_COMMANDS.contains(&n.to_lowercase().as_str()));
    if safe && wrapped == 0 && assigns_harmless(p) {
        return None;
    }
    let mut n = command_len(inner)?;
    // A prefix that names a read-only command (`git diff`, `rg`, `nohup
    // ls`) would allow exactly what made this part not read-only (`--output
    // f`, `--pre cmd`) with any value: the rule is the whole part.
    if part_is_read_only(&Part { words: inner[..n].to_vec(), ..Part::default() }) {
        n = inner.len();
    }
    let text = crate::rules::allow_text(p, wrapped + n);
    // A rule is one line of a settings file.
    (!text.contains(['\n', '\r'])).then(|| format!("{text}:*"))
}
