//! Command prefixes for suggested allow rules (spec §5.4.8, made safe).

use crate::parse::Part;
use crate::readonly::{SAFE_COMMANDS, assigns_harmless};

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
    "python",
    "python3",
    "node",
    "perl",
    "ruby",
    "php",
    "deno",
    "bun",
    "tee",
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

/// True for a word that looks like a subcommand (`commit`, `run`,
/// `compose`), not a flag, path, assignment, pattern or number-like mode.
fn subcommand_like(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(c0) = chars.next() else { return false };
    c0.is_ascii_alphabetic() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '@'))
}

/// The prefix (`"git commit"`, or `"make"` when the second word is a flag
/// or a path) for one part, `None` when nothing safe can be offered:
/// non-harmless assignments, a dynamic program, a safe command (`ls`,
/// `echo`: read-only anyway), a program in [`NO_SUGGEST_PROGRAMS`], or a
/// single word (as the reference).
pub(crate) fn part_prefix(p: &Part) -> Option<String> {
    if !assigns_harmless(p) {
        return None;
    }
    let first = p.words.first()?;
    let name = first.value.as_ref()?;
    let base = name.rsplit('/').next().unwrap_or(name);
    if SAFE_COMMANDS.contains(&base.to_lowercase().as_str()) || NO_SUGGEST_PROGRAMS.contains(&base) {
        return None;
    }
    let second = p.words.get(1)?;
    match &second.value {
        Some(v) if subcommand_like(v) && second.raw == *v => Some(format!("{} {}", first.raw, second.raw)),
        _ => Some(first.raw.clone()),
    }
}
