//! The `[permissions]` table of `toolhost.toml`, and "allow and remember".
//!
//! ```toml
//! [permissions]
//! mode = "accept_edits"
//! allow = ["Bash(npm run:*)", "Edit(src/**)"]
//! deny = ["Read(/etc/**)"]
//! ask = ["Bash(git push:*)"]
//! working_dirs = ["/home/me/project"]
//! ```

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, anyhow, bail};
use serde::{Deserialize, Serialize};

use super::{Behavior, Mode, Rule, RuleSet, RuleSyntaxError};

/// The `[permissions]` table. Every key is optional; an unknown key is an
/// error naming the valid ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionSettings {
    /// The mode (`default` when absent).
    pub mode: Mode,
    /// Allow rules, as text (`Bash(npm run:*)`).
    pub allow: Vec<String>,
    /// Deny rules, as text.
    pub deny: Vec<String>,
    /// Ask rules, as text.
    pub ask: Vec<String>,
    /// Working directories in addition to the current one.
    pub working_dirs: Vec<String>,
}

impl PermissionSettings {
    /// Parses the three rule lists; the error names the rule, the column and
    /// the list.
    pub fn rule_set(&self) -> Result<RuleSet, RuleSyntaxError> {
        RuleSet::from_strings(&self.allow, &self.deny, &self.ask)
    }
}

/// Adds `rule` to the list of its behaviour in `[permissions]` of the TOML
/// file at `toml_path` (`allow` for the suggestions the user accepts with
/// "allow and remember").
///
/// Comments and formatting are kept; the file (with a comment saying that
/// "allow and remember" created it, when and for which rule), its directory
/// and the table are created when missing; nothing changes when an equivalent rule is
/// already listed (`Tool` and `Tool()` count as equal). The file is replaced
/// atomically (temporary file in the same directory, then rename), so a
/// crash never leaves it half written. Two processes remembering at the same
/// moment may lose one of the two rules.
pub fn remember_rule(toml_path: &Path, rule: &Rule) -> anyhow::Result<()> {
    let key = match rule.behavior {
        Behavior::Allow => "allow",
        Behavior::Deny => "deny",
        Behavior::Ask => "ask",
        Behavior::Passthrough => {
            bail!("cannot remember the passthrough rule `{rule}`: only allow, deny and ask rules are stored")
        }
    };
    let path = toml_path.display();
    // A file created here opens with a comment saying why it exists (put in
    // front of the document: toml_edit would keep a lone comment at the end).
    let mut header = String::new();
    let text = match crate::own_file::read_to_string(toml_path, crate::own_file::SETTINGS_BOUND) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            header = created_by(rule, std::time::SystemTime::now());
            String::new()
        }
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read {path} to remember `{rule}`"));
        }
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        anyhow!("cannot remember `{rule}`: {path} is not valid TOML ({e}); fix the file, then try again")
    })?;
    if doc.as_table().is_empty() && !text.trim().is_empty() {
        // Only comments: toml_edit would keep them after the new table; keep
        // them in front, where the user wrote them.
        header = if text.ends_with('\n') { text.clone() } else { format!("{text}\n") };
        doc = toml_edit::DocumentMut::new();
    }

    let table = doc.entry("permissions").or_insert_with(toml_edit::table).as_table_like_mut().ok_or_else(|| {
        anyhow!("cannot remember `{rule}`: `permissions` in {path} is not a table; make it a `[permissions]` table")
    })?;
    let list =
        table.entry(key).or_insert(toml_edit::value(toml_edit::Array::new())).as_array_mut().ok_or_else(|| {
            anyhow!(
                "cannot remember `{rule}`: `permissions.{key}` in {path} is not an array; \
                 make it a list of rule texts, e.g. {key} = [\"Bash(npm run:*)\"]"
            )
        })?;

    let already = list.iter().any(|v| {
        v.as_str().is_some_and(|s| match Rule::parse(s, rule.behavior) {
            Ok(existing) => existing.equivalent(rule),
            Err(_) => s.trim() == rule.to_string(),
        })
    });
    if already {
        return Ok(());
    }

    // Keep a multi-line array multi-line: the new element goes on its own
    // line with the indentation of the last one. toml_edit keeps a comment
    // that follows an element in the next element's prefix (or, for the last
    // element, in the array's trailing text), so that text stays in front of
    // the new element and the comment stays on its line.
    let indent = list
        .iter()
        .last()
        .and_then(|v| v.decor().prefix())
        .and_then(|p| p.as_str())
        .and_then(|p| p.rsplit_once('\n'))
        .map(|(_, indent)| indent.to_owned());
    let mut carried = String::new();
    if indent.is_some()
        && !list.trailing_comma()
        && let Some(last) = list.iter_mut().last()
    {
        // Without a trailing comma the line break after the last element is
        // part of that element: move it in front of the new one.
        carried = last.decor().suffix().and_then(|s| s.as_str()).unwrap_or("").to_owned();
        last.decor_mut().set_suffix("");
    }
    carried.push_str(list.trailing().as_str().unwrap_or(""));
    list.push(rule.to_string());
    if let Some(indent) = indent
        && let Some(new) = list.iter_mut().last()
    {
        let before = if carried.contains('\n') { carried } else { format!("{carried}\n") };
        new.decor_mut().set_prefix(format!("{before}{indent}"));
        list.set_trailing_comma(true);
        list.set_trailing("\n");
    }

    write_atomically(toml_path, format!("{header}{doc}").as_bytes())
        .with_context(|| format!("cannot save `{rule}` to {path}"))
}

/// The opening comment of a settings file created to remember `rule`. The
/// rule is quoted with its control characters escaped: a newline in it would
/// end the comment and make the rest of the rule settings of its own.
fn created_by(rule: &Rule, now: std::time::SystemTime) -> String {
    format!(
        "# toolhost settings. Created by toolhost's \"allow and remember\" on {} to keep `{}`.\n\
         # Every setting is also a command-line flag: see `toolhost --help`.\n\n",
        utc_minute(now),
        crate::escape::escaped(&rule.to_string(), false)
    )
}

/// `now` as `YYYY-MM-DD HH:MM UTC` (proleptic Gregorian calendar).
fn utc_minute(now: std::time::SystemTime) -> String {
    let u = crate::utc::UtcTime::of(now);
    format!("{:04}-{:02}-{:02} {:02}:{:02} UTC", u.year, u.month, u.day, u.hour, u.minute)
}

/// Writes `bytes` to a temporary file next to `path`, syncs it, keeps the
/// old file's permissions, and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).with_context(|| format!("cannot create directory {}", dir.display()))?;
    let file_name = path.file_name().ok_or_else(|| anyhow!("{} does not name a file", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        file_name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| -> anyhow::Result<()> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("cannot create temporary file {}", tmp.display()))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        if let Ok(meta) = fs::metadata(path) {
            fs::set_permissions(&tmp, meta.permissions())?;
        }
        fs::rename(&tmp, path).with_context(|| format!("cannot replace {} with {}", path.display(), tmp.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod created_tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn the_creation_date_is_utc_calendar_time() {
        assert_eq!(utc_minute(UNIX_EPOCH), "1970-01-01 00:00 UTC");
        // 2024-02-29 23:59:30 UTC (a leap day).
        assert_eq!(utc_minute(UNIX_EPOCH + Duration::from_secs(1_709_251_170)), "2024-02-29 23:59 UTC");
        assert_eq!(utc_minute(UNIX_EPOCH + Duration::from_secs(4_102_444_800)), "2100-01-01 00:00 UTC");
    }

    #[test]
    fn a_created_file_says_what_wrote_the_rule() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        let rule = Rule::parse("Bash(touch x:*)", Behavior::Allow).unwrap();
        remember_rule(&path, &rule).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# toolhost settings. Created by toolhost's \"allow and remember\" on "), "{text}");
        assert!(text.contains("to keep `Bash(touch x:*)`"), "{text}");
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(parsed["permissions"]["allow"][0].as_str(), Some("Bash(touch x:*)"));
    }

    #[test]
    fn a_file_of_comments_only_keeps_them_in_front() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        fs::write(&path, "# mine\n# also mine").unwrap();
        remember_rule(&path, &Rule::parse("Edit", Behavior::Allow).unwrap()).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "# mine\n# also mine\n[permissions]\nallow = [\"Edit\"]\n");
    }
}
