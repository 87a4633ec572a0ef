//! `--allowed-origin`: the browser origins that may call, matched exactly.
//!
//! An origin is `scheme://host[:port]`; an entry without a port means the
//! default port of its scheme (80 for `http`, 443 for `https`), as a browser
//! serialises such an origin, and `:*` after the host means any port.
//! rmcp 3.11 reads a portless entry as *any* port (and says a later release
//! will not), so toolhost checks the header itself, before rmcp sees the
//! request, and hands rmcp the entries with their ports written out.

use anyhow::{Result, bail};
use axum::http::Uri;

/// The origins `--allowed-origin` admits, parsed at start-up.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowedOrigins {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// `null` (sandboxed frames, `file:` pages): only when listed.
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Port,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Port {
    Any,
    /// The port, or `None` for a scheme without a default port whose entry
    /// names none (then only an origin without a port matches).
    Exact(Option<u16>),
}

/// An `Origin` header value, parsed.
#[derive(Debug, PartialEq, Eq)]
enum Origin {
    Null,
    Tuple { scheme: String, host: String, port: Option<u16> },
}

impl AllowedOrigins {
    /// Parses the entries; a malformed one is an error naming it (rmcp
    /// would skip it silently, leaving an origin the user meant to allow
    /// refused).
    pub(crate) fn parse(entries: &[String]) -> Result<Self> {
        let entries = entries
            .iter()
            .map(|raw| match parse_entry(raw) {
                Some(entry) => Ok(entry),
                None => bail!(
                    "--allowed-origin {raw:?} is not an origin: give scheme://host or scheme://host:port \
                     (e.g. http://localhost:3000; no path), scheme://host:* for any port, or null"
                ),
            })
            .collect::<Result<_>>()?;
        Ok(Self { entries })
    }

    /// Whether a request whose `Origin` header is `value` may call.
    pub(crate) fn admits(&self, value: &str) -> bool {
        let Some(origin) = parse_origin(value) else { return false };
        self.entries.iter().any(|entry| match (entry, &origin) {
            (Entry::Null, Origin::Null) => true,
            (Entry::Tuple { scheme, host, port }, Origin::Tuple { scheme: s, host: h, port: p }) => {
                scheme == s
                    && host == h
                    && match port {
                        Port::Any => true,
                        Port::Exact(port) => *port == p.or_else(|| default_port(s)),
                    }
            }
            _ => false,
        })
    }

    /// The entries as rmcp should be given them: each port written out, so
    /// that its own check (behind toolhost's) is exact too.
    pub(crate) fn for_rmcp(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|entry| match entry {
                Entry::Null => "null".to_string(),
                Entry::Tuple { scheme, host, port: Port::Any } => format!("{scheme}://{host}:*"),
                Entry::Tuple { scheme, host, port: Port::Exact(Some(port)) } => format!("{scheme}://{host}:{port}"),
                Entry::Tuple { scheme, host, port: Port::Exact(None) } => format!("{scheme}://{host}"),
            })
            .collect()
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

fn parse_entry(raw: &str) -> Option<Entry> {
    let raw = raw.trim();
    if let Some(base) = raw.strip_suffix(":*") {
        return match parse_origin(base)? {
            Origin::Tuple { scheme, host, port: None } => Some(Entry::Tuple { scheme, host, port: Port::Any }),
            _ => None,
        };
    }
    Some(match parse_origin(raw)? {
        Origin::Null => Entry::Null,
        Origin::Tuple { scheme, host, port } => {
            let port = Port::Exact(port.or_else(|| default_port(&scheme)));
            Entry::Tuple { scheme, host, port }
        }
    })
}

/// `scheme://host[:port]` with nothing after (a browser sends no path), or
/// `null`. Scheme and host compare without case; `[::1]` keeps its brackets.
fn parse_origin(value: &str) -> Option<Origin> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("null") {
        return Some(Origin::Null);
    }
    let uri: Uri = value.parse().ok()?;
    let (scheme, authority) = (uri.scheme_str()?, uri.authority()?);
    let bare = uri.path_and_query().is_none_or(|p| p.as_str().is_empty() || p.as_str() == "/");
    if !bare || authority.as_str().contains('@') || value.ends_with('/') {
        return None;
    }
    Some(Origin::Tuple {
        scheme: scheme.to_ascii_lowercase(),
        host: authority.host().to_ascii_lowercase(),
        port: authority.port_u16(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(entries: &[&str]) -> AllowedOrigins {
        AllowedOrigins::parse(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn a_portless_entry_means_the_default_port_of_its_scheme() {
        let origins = allowed(&["http://app.localhost", "https://secure.example"]);
        assert!(origins.admits("http://app.localhost"));
        assert!(origins.admits("http://app.localhost:80"));
        assert!(origins.admits("HTTP://App.Localhost"));
        assert!(!origins.admits("http://app.localhost:6666"));
        assert!(!origins.admits("https://app.localhost"));
        assert!(origins.admits("https://secure.example:443"));
        assert!(!origins.admits("https://secure.example:8443"));
        assert_eq!(origins.for_rmcp(), ["http://app.localhost:80", "https://secure.example:443"]);
    }

    #[test]
    fn a_port_is_exact_and_a_star_is_any() {
        let origins = allowed(&["http://localhost:3000", "http://[::1]:*"]);
        assert!(origins.admits("http://localhost:3000"));
        assert!(!origins.admits("http://localhost:3001"));
        assert!(!origins.admits("http://localhost"));
        assert!(origins.admits("http://[::1]:5173"));
        assert!(origins.admits("http://[::1]"));
        assert!(!origins.admits("http://evil.example:3000"));
        assert!(!origins.admits("null"), "null only when listed");
        assert!(allowed(&["null"]).admits("null"));
    }

    #[test]
    fn malformed_entries_and_origins_are_refused() {
        for bad in ["localhost:3000", "http://localhost:3000/app", "http://", "http://a:1:*", "null:*", "*"] {
            let e = AllowedOrigins::parse(&[bad.to_string()]).unwrap_err().to_string();
            assert!(e.contains("--allowed-origin") && e.contains(bad), "{bad}: {e}");
        }
        let origins = allowed(&["http://localhost:3000"]);
        for bad in
            ["", "http://localhost:3000/x", "http://user@localhost:3000", "localhost:3000", "http://localhost:3000/"]
        {
            assert!(!origins.admits(bad), "{bad:?}");
        }
    }
}
