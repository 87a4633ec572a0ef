//! `sed` constraints (spec §5.4.7), applied to each `sed` part on its own.
//!
//! Differences from the reference: the arguments are the part's parsed
//! words (not a shlex split of the whole line), and every `-e`/`--expression`
//! script is validated (the reference validates only the first non-flag
//! token, spec §13.10).

use toolhost_policy::DangerLists;

/// Checks one `sed` invocation given its arguments (quote-removed values);
/// `Some(error message)` when it is not allowed.
pub fn check_sed_args(args: &[&str], lists: &DangerLists) -> Option<String> {
    let mut flags: Vec<char> = Vec::new();
    let mut exprs: Vec<String> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut explicit_expr = false;
    let mut i = 0;
    while i < args.len() {
        let t = args[i];
        i += 1;
        if let Some(long) = t.strip_prefix("--") {
            if long.is_empty() {
                // End of options: the rest are files (or the script).
                for rest in &args[i..] {
                    if !explicit_expr && exprs.is_empty() {
                        exprs.push(rest.to_string());
                    } else {
                        files.push(rest.to_string());
                    }
                }
                break;
            }
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            match name {
                "in-place" => {
                    flags.push('i');
                    if let Some(v) = value {
                        flags.extend(v.chars());
                    }
                }
                "quiet" | "silent" => flags.push('n'),
                "regexp-extended" => flags.push('E'),
                "expression" => {
                    explicit_expr = true;
                    match value {
                        Some(v) => exprs.push(v.to_string()),
                        None => {
                            if let Some(e) = args.get(i) {
                                exprs.push(e.to_string());
                                i += 1;
                            }
                        }
                    }
                }
                _ => return Some(format!("sed flag --{name} not allowed")),
            }
            continue;
        }
        if t.starts_with('-') && t.len() > 1 {
            let chars: Vec<char> = t.chars().skip(1).collect();
            flags.extend(chars.iter().copied());
            if chars.contains(&'i') {
                // Reference rule: a following token that does not start with
                // `-` or `s` and has no `.` is a backup suffix.
                if let Some(next) = args.get(i)
                    && !next.starts_with('-')
                    && !next.starts_with('s')
                    && !next.contains('.')
                    && !chars.contains(&'e')
                {
                    i += 1;
                }
            }
            if chars.contains(&'e') {
                explicit_expr = true;
                if let Some(e) = args.get(i) {
                    exprs.push(e.to_string());
                    i += 1;
                }
            }
            continue;
        }
        if !explicit_expr && exprs.is_empty() {
            exprs.push(t.to_string());
        } else {
            files.push(t.to_string());
        }
    }
    if exprs.is_empty() {
        return Some("sed command missing expression".to_string());
    }
    if let Some(bad) = flags.iter().find(|c| !matches!(c, 'n' | 'E' | 'e' | 'i')) {
        return Some(format!("sed flag -{bad} not allowed"));
    }
    let n_flag = flags.contains(&'n');
    for e in &exprs {
        if let Some(err) = check_expression(e, n_flag) {
            return Some(err);
        }
    }
    if flags.contains(&'i') {
        for f in &files {
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
