//! Permission analysis of Bash commands for toolhost's Bash tool.
//!
//! Follows AgentScope 2.x (`shared/spec/agentscope-tools.md` §5.2–5.8, with
//! the 2.0.11 read-only lists) on a real shell parser (brush-parser), with
//! deliberate safe deviations (see `docs/bash-deviations.md`): every part of
//! a compound command is judged on its own whatever joins the parts (`;`,
//! `&&`, `||`, `|`, `&`, newline, substitutions, `eval`/`sh -c` scripts);
//! paths come from the parsed words whether quoted or not; allow rules must
//! cover every part; deny and ask rules match any part with wrappers and
//! program paths seen through.
//!
//! Pure Rust, no I/O: builds natively and for `wasm32-wasip2`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod model;
mod normalize;
mod parse;
mod paths;
mod patterns;
mod prefix;
mod readonly;
mod rules;
mod sed;

pub use patterns::DANGEROUS_COMMANDS;
pub use readonly::{
    FIND_MUTATING_PREDICATES, GIT_READ_ONLY_COMMANDS, HARMLESS_ENV_VARS, READ_ONLY_COMMANDS, RISKY_ENV_VARS,
    SAFE_COMMANDS,
};
pub use rules::match_rule_text;
pub use sed::check_sed_args;
pub use toolhost_policy::DangerLists;

use model::{Analysis, Place};
use parse::analyse;

/// Permission mode of the engine (spec §1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Ask for anything not read-only or allowed by a rule.
    Default,
    /// Also auto-allow filesystem edits inside the working directories.
    AcceptEdits,
    /// Read-only: everything else is denied (the engine never consults the tool).
    Explore,
    /// Allow everything not denied by a rule.
    Bypass,
    /// Like accept-edits, but asks become denials.
    DontAsk,
}

/// What a decision says to do (spec §1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask the user.
    Ask,
    /// No opinion: the engine continues with rules and the mode.
    Passthrough,
}

/// What the analysis may look at. Nothing here touches the filesystem.
#[derive(Clone, Debug)]
pub struct Context {
    /// The active mode.
    pub mode: Mode,
    /// Absolute working directories (the host also passes their
    /// symlink-resolved forms). `cwd` is not implicitly one of them.
    pub working_dirs: Vec<String>,
    /// The directory relative paths are resolved against.
    pub cwd: String,
    /// The home directory `~` stands for.
    pub home: String,
}

/// The tool's judgement of one command (spec §5.3).
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Allow, deny, ask or passthrough.
    pub behavior: Behavior,
    /// The message shown to the model / user (exact reference texts).
    pub message: String,
    /// Why, when there is a reason (reference texts).
    pub reason: Option<String>,
    /// A safety ask no allow rule can silence (meaningful for `Ask`).
    pub bypass_immune: bool,
}

/// Which rule list a rule comes from: allow rules must cover every part of
/// a command; deny and ask rules match when they match any part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// An allow rule.
    Allow,
    /// A deny rule.
    Deny,
    /// An ask rule.
    Ask,
}

fn verdict(behavior: Behavior, message: String, reason: Option<&str>, immune: bool) -> Verdict {
    Verdict { behavior, message, reason: reason.map(str::to_string), bypass_immune: immune }
}

fn safety_ask(message: String, reason: &str) -> Verdict {
    verdict(Behavior::Ask, message, Some(reason), true)
}

const PARSE_FAILED: &str = "Command parsing failed, cannot verify safety";

/// Reference injection message for the analysis, if any (§5.4.5).
fn injection_risk(a: &Analysis) -> Option<String> {
    if a.parse_error {
        return Some(PARSE_FAILED.to_string());
    }
    a.dynamic.map(|t| format!("Command contains {t} which cannot be statically analyzed"))
}

/// `check_read_only` (spec §5.2): true only when the command parses, has no
/// construct that cannot be analysed statically, and every part, however
/// the parts are joined, is read-only on its own (see the crate docs for
/// the per-part test). An empty or blank command is not read-only.
pub fn check_read_only(command: &str) -> bool {
    if command.trim().is_empty() {
        return false;
    }
    let a = analyse(command);
    injection_risk(&a).is_none() && a.all_read_only()
}

/// `check_permissions` (spec §5.3): the layers in reference order, each
/// applied to every part of the command.
///
/// 0. parse failure or dynamic construct → immune ASK;
/// 1. every part read-only → ALLOW;
/// 2. dangerous pattern → immune ASK; 3. sed constraint → immune ASK;
/// 4. sensitive paths (quoted or not, `~`, `..`, globs, `cd` followed) →
///    immune ASK: the targets of file commands and redirections, and any
///    word (option values and assignment values included) of a part that
///    is not read-only, whatever its program; 5. critical removal → immune ASK;
/// 6. accept-edits / dont-ask: every part read-only or a direct filesystem
///    command whose every target is in a working directory (and at least
///    one target) → ALLOW; 7. PASSTHROUGH.
pub fn check_permissions(command: &str, ctx: &Context, lists: &DangerLists) -> Verdict {
    if command.is_empty() {
        return verdict(Behavior::Passthrough, "Empty command".into(), None, false);
    }
    let a = analyse(command);
    let at = Place { cwd: &ctx.cwd, home: &ctx.home };
    if let Some(r) = injection_risk(&a) {
        return safety_ask(
            format!("Permission required: {r}"),
            "Safety check: command contains dynamic expansion that cannot be statically analyzed",
        );
    }
    if a.all_read_only() {
        return verdict(
            Behavior::Allow,
            "Permission granted for read-only command".into(),
            Some("Read-only command is allowed"),
            false,
        );
    }
    if let Some(p) = patterns::dangerous_pattern(command, &a.parts) {
        return safety_ask(
            format!("Permission required: Command contains dangerous pattern: {p}"),
            "Safety check: dangerous command pattern detected",
        );
    }
    for part in &a.parts {
        let words = normalize::strip_wrappers(&part.words);
        if let Some((first, args)) = words.split_first()
            && normalize::program_name(first) == Some("sed")
        {
            let vals: Vec<&str> = args.iter().map(|w| w.text()).collect();
            if let Some(e) = sed::check_sed_args(&vals, lists) {
                return safety_ask(
                    format!("Permission required: {e}"),
                    "Safety check: sed in-place modification of dangerous file",
                );
            }
        }
    }
    let mut sensitive: Vec<String> = Vec::new();
    paths::Needles::with(lists, |needles| {
        let mut judge = |targets: Vec<paths::Target>| {
            for t in targets {
                if paths::target_is_dangerous(&t, &ctx.home, lists, needles) && !sensitive.contains(&t.display) {
                    sensitive.push(t.display);
                }
            }
        };
        for (part, &read_only) in a.parts.iter().zip(a.read_only_parts()) {
            let mut targets = paths::part_targets(part, &at);
            let reads_only =
                read_only || (readonly::writes_by_redirect(part) && readonly::invocation_is_read_only(part));
            if !reads_only {
                // Any word of a part that may write (issue 12): the words of
                // a read-only invocation are reads (its redirections are
                // judged all the same).
                for t in paths::named_paths(part, &at, needles) {
                    // A file command's targets are named by its words too.
                    if !targets.iter().any(|o| o.raw == t.raw && o.abs == t.abs) {
                        targets.push(t);
                    }
                }
            }
            judge(targets);
        }
    });
    if !sensitive.is_empty() {
        return safety_ask(
            format!("Permission required: Bash command operates on sensitive paths: {}", sensitive.join(", ")),
            "Safety check: dangerous file or directory in bash command",
        );
    }
    for part in &a.parts {
        if let Some(p) = paths::dangerous_removal(part, &at) {
            return safety_ask(
                format!(
                    "Dangerous removal operation detected: '{p}'\n\nThis command would remove a critical system directory. This requires explicit approval and cannot be auto-allowed by permission rules."
                ),
                "Safety check: dangerous removal of critical system path",
            );
        }
    }
    if matches!(ctx.mode, Mode::AcceptEdits | Mode::DontAsk)
        && let Some(base) = fs_auto_allow(&a, ctx)
    {
        return verdict(
            Behavior::Allow,
            format!("Permission granted for '{base}' command (filesystem command, all targets in working directory)"),
            Some(&format!(
                "Filesystem command '{base}' is auto-allowed because all target paths are within a working directory"
            )),
            false,
        );
    }
    verdict(Behavior::Passthrough, format!("Execute bash command: {command}"), None, false)
}

/// Layer 6: the program of the first filesystem part when every part is
/// read-only or a filesystem edit confined to the working directories.
fn fs_auto_allow(a: &Analysis, ctx: &Context) -> Option<String> {
    let at = Place { cwd: &ctx.cwd, home: &ctx.home };
    let mut base: Option<String> = None;
    let mut any_target = false;
    for (part, &read_only) in a.parts.iter().zip(a.read_only_parts()) {
        if read_only {
            continue;
        }
        let (name, targets) = paths::fs_edit_targets(part, &at)?;
        for t in &targets {
            let abs = t.abs.as_ref()?;
            if !toolhost_policy::in_working_dirs(abs, "/", &ctx.home, &ctx.working_dirs) {
                return None;
            }
        }
        any_target |= !targets.is_empty();
        base.get_or_insert(name);
    }
    if any_target { base } else { None }
}

/// The texts of a part that deny and ask rules are matched against.
fn deny_texts(p: &model::Part) -> [String; 3] {
    [p.text(), p.words_text(), normalize::normalized_text(&p.words)]
}

/// Fallback fragments when the command does not parse: split on every
/// shell operator character, each fragment trimmed, plus its form with a
/// program path reduced to the basename and wrappers dropped.
fn fallback_fragments(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    for frag in command.split([';', '&', '|', '\n', '(', ')', '`', '{', '}', '"', '\'']) {
        let toks: Vec<&str> = frag.split_whitespace().skip_while(|t| t.contains('=')).collect();
        if toks.is_empty() {
            continue;
        }
        out.push(toks.join(" "));
        let mut k = 0;
        while k < toks.len() && normalize::WRAPPERS.contains(&toks[k].rsplit('/').next().unwrap_or(toks[k])) {
            k += 1;
            while k < toks.len() && toks[k].starts_with('-') {
                k += 1;
            }
        }
        if k < toks.len() {
            let mut v: Vec<&str> = toks[k..].to_vec();
            v[0] = v[0].rsplit('/').next().unwrap_or(v[0]);
            out.push(v.join(" "));
        }
    }
    out
}

/// `match_rule` for a whole rule list (spec §5.6 syntax, per part): the
/// index of the first matching rule.
///
/// * `Deny` / `Ask`: a rule matches when it matches the raw command or any
///   part (raw, without assignments, or normalised: wrappers such as
///   `sudo`/`env`/`command` dropped and `/bin/rm` reduced to `rm`). A part
///   whose program is not static (`$X args`, `eval "$x"`) matches every
///   rule. When the command does not parse, every operator-separated
///   fragment is tried.
/// * `Allow`: never for a command that does not parse or has a dynamic
///   construct. Otherwise every part must be read-only or match some rule
///   (its text without harmless `NAME=value` prefixes, no wrappers seen
///   through); the result is the rule used by the first such part. When
///   all parts are read-only, the first rule matching any part (or the raw
///   command) is returned.
///
/// An empty rule content matches everything.
pub fn match_rules(kind: RuleKind, rule_contents: &[String], command: &str) -> Option<usize> {
    let a = analyse(command);
    match kind {
        RuleKind::Deny | RuleKind::Ask => {
            let mut texts: Vec<String> = vec![command.to_string()];
            let mut wildcard = false;
            if a.parse_error {
                texts.extend(fallback_fragments(command));
            }
            for p in &a.parts {
                texts.extend(deny_texts(p));
                let inner = normalize::strip_wrappers(&p.words);
                if inner.first().is_some_and(|w| w.value.is_none()) {
                    wildcard = true;
                }
            }
            rule_contents.iter().position(|r| r.is_empty() || wildcard || texts.iter().any(|t| match_rule_text(r, t)))
        }
        RuleKind::Allow => {
            if injection_risk(&a).is_some() {
                // Only a tool-wide (empty) rule covers an unanalysable command.
                return rule_contents.iter().position(|r| r.is_empty());
            }
            let find = |text: &str| rule_contents.iter().position(|r| r.is_empty() || match_rule_text(r, text));
            let mut used: Option<usize> = None;
            let mut any_strict = false;
            for (p, &read_only) in a.parts.iter().zip(a.read_only_parts()) {
                if read_only {
                    continue;
                }
                any_strict = true;
                let i = find(&rules::allow_text(p, p.words.len()))?;
                used.get_or_insert(i);
            }
            if any_strict {
                return used;
            }
            if a.parts.is_empty() {
                return find(command);
            }
            rule_contents.iter().position(|r| {
                match_rule_text(r, command) || a.parts.iter().any(|p| match_rule_text(r, &p.words_text()))
            })
        }
    }
}

/// Most rules suggested for one command; a longer command gets none.
pub const MAX_SUGGESTIONS: usize = 8;

/// Suggested allow-rule contents (`"git commit:*"`) for a command (spec
/// §5.4.8, §5.8, made narrow): one rule per part that is not read-only,
/// from the same analysis as the judgement (parts of lists, pipelines,
/// brace groups; wrappers such as `timeout 60` kept in front). Each rule is
/// the narrowest prefix that still reads as a command (see `prefix.rs` and
/// `docs/permissions.md`): never the program alone when it has
/// subcommands, nothing for dangerous programs, shells and interpreters
/// (except `python -m MODULE`).
///
/// All or nothing: the rules together always allow the command
/// (`match_rules(Allow, &suggestions, command)` is `Some`), or `[]` when a
/// part has no rule, there are more than [`MAX_SUGGESTIONS`], or the
/// command cannot be analysed (then no allow rule could allow it anyway).
pub fn suggestions(command: &str) -> Vec<String> {
    if command.trim().is_empty() {
        return Vec::new();
    }
    let a = analyse(command);
    if injection_risk(&a).is_some() {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for (p, &read_only) in a.parts.iter().zip(a.read_only_parts()) {
        if read_only {
            continue;
        }
        let Some(rule) = prefix::part_rule(p) else {
            return Vec::new();
        };
        if !out.contains(&rule) {
            out.push(rule);
        }
    }
    if out.is_empty() || out.len() > MAX_SUGGESTIONS || match_rules(RuleKind::Allow, &out, command).is_none() {
        return Vec::new();
    }
    out
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod write_tests;
