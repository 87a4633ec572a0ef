//! The bound on long-lived streams (a 2026-07-28 `subscriptions/listen`, a
//! 2025-11-25 GET stream) and on requests waiting for the user's answer (a
//! 2025-11-25 elicitation), kept apart from the connection slots that
//! requests use: in all, and per peer, so that streams no one reads and
//! questions no one answers cannot take the slots a new client's
//! `tools/call` needs, and one peer cannot take them all.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use toolhost::sync::MutexExt;

/// The streams open now, in all and per peer.
pub(crate) struct StreamSlots {
    max_total: usize,
    max_per_peer: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    total: usize,
    per_peer: HashMap<Peer, usize>,
}

/// Who holds a stream: an IPv4 address, or the /64 prefix of an IPv6 one
/// (one host usually has a whole /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Peer(IpAddr);

impl Peer {
    pub(crate) fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !(u128::from(u64::MAX));
                Peer(IpAddr::V6(prefix.into()))
            }
            v4 => Peer(v4),
        }
    }
}

/// Why a stream was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Full {
    /// Every stream of the server is taken.
    Total(usize),
    /// This peer holds as many as one peer may.
    Peer(usize),
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::Total(n) => write!(
                f,
                "toolhost serve holds {n} long-lived streams and questions waiting for an answer, as many as it \
                 keeps; retry shortly"
            ),
            Full::Peer(n) => write!(
                f,
                "this client address holds {n} long-lived streams and questions waiting for an answer, as many as \
                 one address may; close or answer one (or retry shortly)"
            ),
        }
    }
}

/// One open stream; its slot is free again when this is dropped.
pub(crate) struct StreamPermit {
    slots: Arc<StreamSlots>,
    peer: Peer,
}

impl StreamSlots {
    pub(crate) fn new(max_total: usize, max_per_peer: usize) -> Arc<Self> {
        Arc::new(Self { max_total, max_per_peer, held: Mutex::default() })
    }

    /// A slot for a stream of `peer`, or why there is none.
    pub(crate) fn take(self: &Arc<Self>, peer: Peer) -> Result<StreamPermit, Full> {
        let mut held = self.held.lock_unpoisoned();
        let of_peer = held.per_peer.get(&peer).copied().unwrap_or(0);
        if of_peer >= self.max_per_peer {
            return Err(Full::Peer(self.max_per_peer));
        }
        if held.total >= self.max_total {
            return Err(Full::Total(self.max_total));
        }
        held.total += 1;
        held.per_peer.insert(peer, of_peer + 1);
        Ok(StreamPermit { slots: self.clone(), peer })
    }

    #[cfg(test)]
    fn open(&self) -> usize {
        self.held.lock_unpoisoned().total
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock_unpoisoned();
        held.total -= 1;
        if let Some(n) = held.per_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                held.per_peer.remove(&self.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(s: &str) -> Peer {
        Peer::of(s.parse().unwrap())
    }

    #[test]
    fn streams_are_bounded_per_peer_and_in_all_and_freed_when_dropped() {
        let slots = StreamSlots::new(3, 2);
        let a1 = slots.take(peer("10.0.0.1")).unwrap();
        let _a2 = slots.take(peer("10.0.0.1")).unwrap();
        assert_eq!(slots.take(peer("10.0.0.1")).err(), Some(Full::Peer(2)));
        let _b1 = slots.take(peer("10.0.0.2")).unwrap();
        assert_eq!(slots.take(peer("10.0.0.3")).err(), Some(Full::Total(3)));
        drop(a1);
        assert_eq!(slots.open(), 2);
        let _c1 = slots.take(peer("10.0.0.3")).unwrap();
    }

    #[test]
    fn a_peer_is_an_ipv4_address_or_an_ipv6_prefix() {
        assert_eq!(peer("::ffff:10.0.0.1"), peer("10.0.0.1"));
        assert_eq!(peer("2001:db8:1:2::1"), peer("2001:db8:1:2:ffff::9"));
        assert_ne!(peer("2001:db8:1:2::1"), peer("2001:db8:1:3::1"));
        assert_ne!(peer("127.0.0.1"), peer("127.0.0.2"));
    }
}
