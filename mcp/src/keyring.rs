//! The keys that seal 2026-07-28 request states ([`Keyring`]). One process
//! makes a key of its own at start (its states open nowhere else); every
//! process of a deployment that shares its state reads the same keyring
//! file (`[state] keyring_file`), so a state sealed by one opens on any.
//!
//! The file holds one key per line, `ID BASE64` (at least 32 bytes once
//! decoded); blank lines and lines starting with `#` are skipped. The first
//! key seals; every key opens. Keys rotate by adding a line on every
//! process, then moving it first, then removing the old one once the
//! states it sealed have expired (10 minutes).

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use base64::Engine as _;

/// The fewest bytes a key may have.
pub const MIN_KEY_BYTES: usize = 32;

/// The most a keyring file may hold.
const MAX_KEYRING_BYTES: u64 = 64 << 10;

/// The keys: the first seals, all open.
#[derive(Clone)]
pub struct Keyring {
    keys: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Ids only: the keys never appear in a log line.
        f.debug_struct("Keyring").field("ids", &self.keys.iter().map(|(id, _)| id).collect::<Vec<_>>()).finish()
    }
}

impl Keyring {
    /// One fresh random key under `id`, for this process alone.
    pub fn generate(id: &str) -> Result<Self> {
        let mut key = vec![0u8; MIN_KEY_BYTES];
        getrandom::fill(&mut key).map_err(|e| anyhow::anyhow!("no randomness from the operating system: {e}"))?;
        Ok(Self { keys: vec![(id.to_string(), key)] })
    }

    /// A keyring file's line for a fresh key under `id` (`toolhost keyring
    /// new`).
    pub fn new_line(id: &str) -> Result<String> {
        check_id(id)?;
        let ring = Self::generate(id)?;
        Ok(format!("{id} {}", base64::engine::general_purpose::STANDARD.encode(&ring.keys[0].1)))
    }

    /// Parses a keyring file's text; errors name the line and never show a
    /// key.
    pub fn parse(text: &str) -> Result<Self> {
        let mut keys: Vec<(String, Vec<u8>)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let n = n + 1;
            let Some((id, encoded)) = line.split_once(char::is_whitespace) else {
                bail!("line {n} of the keyring is not `ID BASE64` (make one with `toolhost keyring new`)");
            };
            check_id(id).with_context(|| format!("line {n} of the keyring"))?;
            let key = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .map_err(|_| anyhow::anyhow!("line {n} of the keyring: the key is not base64"))?;
            if key.len() < MIN_KEY_BYTES {
                bail!(
                    "line {n} of the keyring: the key {id} is {} bytes, fewer than the {MIN_KEY_BYTES} a key needs \
                     (make one with `toolhost keyring new`)",
                    key.len()
                );
            }
            if keys.iter().any(|(other, _)| other == id) {
                bail!("line {n} of the keyring: the id {id} is there twice; give each key its own id");
            }
            keys.push((id.to_string(), key));
        }
        if keys.is_empty() {
            bail!("the keyring holds no key; add a line made by `toolhost keyring new`");
        }
        Ok(Self { keys })
    }

    /// Reads the keyring file at `path` (one of toolhost's own files: a
    /// regular file within 64 KiB).
    pub fn read(path: &Path) -> Result<Self> {
        let bound = toolhost::own_file::Bound { max: MAX_KEYRING_BYTES, name: "the most a keyring file may hold" };
        let own = toolhost::own_file::read(path, bound)
            .with_context(|| format!("reading the keyring {} ([state] keyring_file)", path.display()))?;
        let text = String::from_utf8(own.bytes).map_err(|_| anyhow::anyhow!("the keyring is not UTF-8 text"))?;
        Self::parse(&text).with_context(|| format!("the keyring {} is not valid", path.display()))
    }

    /// The id of the key that seals.
    pub fn sealing_id(&self) -> &str {
        &self.keys[0].0
    }

    /// Every key, the sealing one first.
    pub(crate) fn keys(&self) -> &[(String, Vec<u8>)] {
        &self.keys
    }
}

/// A key id: 1 to 64 letters, digits, `-`, `_` or `.`.
fn check_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        bail!("the key id '{id}' must be 1 to 64 letters, digits, '-', '_' or '.'");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keyring_is_read_first_key_sealing_and_its_errors_name_the_line_not_the_key() {
        let a = Keyring::new_line("a").unwrap();
        let b = Keyring::new_line("b-2").unwrap();
        let ring = Keyring::parse(&format!("# rotated 2026-12\n\n{b}\n{a}\n")).unwrap();
        assert_eq!(ring.sealing_id(), "b-2");
        assert_eq!(ring.keys().len(), 2);
        assert!(!format!("{ring:?}").contains(a.split_once(' ').unwrap().1));

        let short = format!("k {}", base64::engine::general_purpose::STANDARD.encode([7u8; 16]));
        let err = format!("{:#}", Keyring::parse(&short).unwrap_err());
        assert!(err.contains("line 1") && err.contains("16 bytes") && !err.contains("BwcH"), "{err}");
        let err = format!("{:#}", Keyring::parse(&format!("{a}\n{a}")).unwrap_err());
        assert!(err.contains("line 2") && err.contains("twice"), "{err}");
        assert!(Keyring::parse("# nothing\n").unwrap_err().to_string().contains("no key"));
        assert!(Keyring::parse("justoneword").unwrap_err().to_string().contains("ID BASE64"));
        assert!(Keyring::parse("k not*base64").unwrap_err().to_string().contains("not base64"));
        assert!(Keyring::new_line("bad id").is_err());
    }
}
