//! Seeing through wrappers (`sudo`, `env`, `command`, ...) and program paths.

use crate::model::Word;

/// Directories whose programs we judge by their basename (`/bin/ls` is `ls`)
/// for read-only and allow purposes. Any other path keeps its full text.
const SYSTEM_BIN_DIRS: &[&str] =
    &["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", "/opt/homebrew/bin"];

/// Programs that run another program given as their arguments.
pub(crate) const WRAPPERS: &[&str] =
    &["command", "builtin", "exec", "env", "nice", "nohup", "sudo", "doas", "time", "timeout", "xargs", "stdbuf"];

/// The basename of the command word (`/usr/bin/rm` → `rm`, `\rm` → `rm`),
/// `None` when the word is dynamic (`$X`, `$(..)`).
pub(crate) fn program_name(w: &Word) -> Option<&str> {
    let v = w.value.as_deref()?;
    Some(v.rsplit('/').next().unwrap_or(v))
}

/// The command word as judged for read-only and allow purposes: bare names
/// as they are, absolute paths in a system bin directory by basename, any
/// other path (`./ls`, `/tmp/x/ls`) `None`.
pub(crate) fn trusted_program(w: &Word) -> Option<String> {
    let v = w.value.as_ref()?;
    if !v.contains('/') {
        return Some(v.clone());
    }
    let (dir, base) = v.rsplit_once('/')?;
    if SYSTEM_BIN_DIRS.contains(&dir) && !base.is_empty() { Some(base.to_string()) } else { None }
}

/// Options of each wrapper that take a separate argument.
fn takes_arg(wrapper: &str, opt: &str) -> bool {
    match wrapper {
        "sudo" => matches!(opt, "-u" | "-g" | "-C" | "-D" | "-h" | "-p" | "-r" | "-t" | "-U" | "-T" | "-R"),
        "doas" => matches!(opt, "-u" | "-C"),
        "env" => matches!(opt, "-u" | "-C" | "--unset" | "--chdir"),
        "nice" => matches!(opt, "-n" | "--adjustment"),
        "timeout" => matches!(opt, "-s" | "-k" | "--signal" | "--kill-after"),
        "exec" => matches!(opt, "-a"),
        "xargs" => matches!(
            opt,
            "-I" | "-n"
                | "-P"
                | "-L"
                | "-d"
                | "-E"
                | "-s"
                | "-a"
                | "--arg-file"
                | "--delimiter"
                | "--max-args"
                | "--max-procs"
        ),
        "stdbuf" => matches!(opt, "-i" | "-o" | "-e"),
        _ => false,
    }
}

/// Skips leading wrappers and their options, `env`'s `NAME=value`
/// arguments and `timeout`'s duration. `env -S` is not skipped (its string
/// is a script, handled as a nested command). Returns the remaining words
/// (starting at the wrapped program), or the input when there is no wrapper.
pub(crate) fn strip_wrappers(words: &[Word]) -> &[Word] {
    let mut i = 0;
    // Bounded: each round consumes at least one word.
    while i < words.len() {
        let Some(name) = program_name(&words[i]) else {
            return &words[i..];
        };
        if !WRAPPERS.contains(&name) {
            return &words[i..];
        }
        if name == "env"
            && words[i + 1..].iter().any(|w| {
                let t = w.text();
                t == "-S"
                    || t.starts_with("--split-string")
                    || (t.starts_with('-') && !t.starts_with("--") && t.contains('S'))
            })
        {
            return &words[i..];
        }
        let start = i;
        i += 1;
        let mut duration_seen = false;
        while i < words.len() {
            let t = words[i].text();
            if t == "--" {
                i += 1;
                break;
            }
            if t.starts_with('-') && t.len() > 1 {
                if takes_arg(name, t) {
                    i += 1;
                }
                i += 1;
                continue;
            }
            if name == "env" && t.contains('=') {
                i += 1;
                continue;
            }
            if name == "nice" && t.starts_with('+') {
                i += 1;
                continue;
            }
            if name == "timeout" && !duration_seen {
                duration_seen = true;
                i += 1;
                continue;
            }
            break;
        }
        if i == start {
            break;
        }
    }
    &words[i.min(words.len())..]
}

/// True when the part's command is run through a wrapper.
pub(crate) fn has_wrapper(words: &[Word]) -> bool {
    words.first().and_then(program_name).is_some_and(|n| WRAPPERS.contains(&n))
}

/// The part's words with wrappers stripped and the program replaced by its
/// basename, joined by one space: the text deny and ask rules are matched
/// against (`sudo /bin/rm -rf x` → `rm -rf x`).
pub(crate) fn normalized_text(words: &[Word]) -> String {
    let inner = strip_wrappers(words);
    let mut out: Vec<String> = Vec::with_capacity(inner.len());
    for (k, w) in inner.iter().enumerate() {
        if k == 0 {
            out.push(program_name(w).unwrap_or(&w.raw).to_string());
        } else {
            out.push(w.raw.clone());
        }
    }
    out.join(" ")
}
