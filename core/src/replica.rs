//! A process's name among the replicas of one deployment (`serve
//! --replica-id`): it names the process in the shared store's records, in
//! audit records and in `[audit] path` (`{replica}`), so it is kept to
//! characters that are safe in a file name and a Redis key.

/// The most characters a replica id may have.
pub const MAX_REPLICA_ID: usize = 64;

/// What `[audit] path` writes where the replica id goes.
pub const PLACEHOLDER: &str = "{replica}";

/// Checks `id`: 1 to [`MAX_REPLICA_ID`] ASCII letters, digits, `.`, `_`
/// or `-`, not starting with `.`. The error names the rule.
pub fn validate(id: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if id.is_empty() || id.len() > MAX_REPLICA_ID || !id.chars().all(allowed) || id.starts_with('.') {
        return Err(format!(
            "the replica id {id:?} is not 1 to {MAX_REPLICA_ID} letters, digits, '.', '_' or '-' (not starting with \
             '.'); give another with --replica-id or TOOLHOST_REPLICA_ID"
        ));
    }
    Ok(())
}

/// This machine's host name, made a valid id (other characters become
/// `-`); `host` when it has none.
pub fn machine() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name: String = name
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .take(MAX_REPLICA_ID - 11)
        .collect();
    let name = name.trim_start_matches('.');
    if name.is_empty() { "host".to_string() } else { name.to_string() }
}

/// The id of a serving process that was given none: `HOST-PID`, which
/// differs between the processes of a machine and between machines.
pub fn default_for_process() -> String {
    format!("{}-{}", machine(), std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_could_leave_a_folder_or_split_a_key_are_refused() {
        for bad in ["", "../x", "a/b", ".hidden", "a b", "a:b", "a{b}", &"x".repeat(65)] {
            assert!(validate(bad).is_err(), "{bad:?}");
        }
        for good in ["r1", "web-2.eu_west", &"x".repeat(64)] {
            assert!(validate(good).is_ok(), "{good:?}");
        }
        assert!(validate(&default_for_process()).is_ok());
    }
}
