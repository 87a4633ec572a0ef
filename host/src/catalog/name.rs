//! The one rule for names: a tool and a middleware are named the same way
//! (they share the `[grants.NAME]` table, so they share the rule too).

/// The longest name a tool or middleware may have, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// Checks a tool or middleware name: 1-64 characters of `A-Z`, `a-z`,
/// `0-9`, `_` or `-`. `what` (`tool`, `middleware`) starts the message.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(format!("{what} name '{name}' must be 1-{MAX_NAME_BYTES} characters of A-Z, a-z, 0-9, _ or -"))
    }
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn names_follow_one_rule() {
        assert!(check_name("tool", "Bash").is_ok());
        assert!(check_name("tool", "my-tool_2").is_ok());
        assert!(check_name("tool", &"a".repeat(64)).is_ok());
        for bad in ["", "*", "a b", "../x", "é", &"a".repeat(65)] {
            let e = check_name("middleware", bad).unwrap_err();
            assert!(e.starts_with("middleware name"), "{e}");
        }
    }
}
