//! The wire format between the host and the resident helper
//! (`host/docker-helper/main.rs`), over the container's attached stdin and
//! stdout: length-prefixed frames, little-endian.
//!
//! A frame is `len: u32` (of what follows), `kind: u8`, `id: u32`, then the
//! payload. Requests: `SPAWN` (argv, cwd, env as counted lists of
//! length-prefixed strings) and `KILL` (kill the command's process group).
//! Events: `READY` (once, id 0), `STARTED`, `STDOUT`/`STDERR` (bytes as
//! read), `EXIT` (`i32` code) and `SPAWN_ERROR` (a kind byte and text).

/// Request: start a command.
pub const REQ_SPAWN: u8 = 1;
/// Request: kill a command's process group.
pub const REQ_KILL: u8 = 2;

/// An event from the helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The helper is serving.
    Ready,
    /// The command started.
    Started,
    /// Bytes from its standard output.
    Stdout(Vec<u8>),
    /// Bytes from its standard error.
    Stderr(Vec<u8>),
    /// It ended with this code (negative: killed by a signal).
    Exit(i32),
    /// It could not start: 1 not found, 2 permission denied, 3 other.
    SpawnError(u8, String),
    /// The container stopped while the command ran (sent by the host's reader, not the helper).
    Died(String),
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn frame(kind: u8, id: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + payload.len());
    out.extend_from_slice(&((5 + payload.len()) as u32).to_le_bytes());
    out.push(kind);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The `SPAWN` frame of command `id`.
pub fn spawn(id: u32, argv: &[String], cwd: &str, env: &[(String, String)]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&(argv.len() as u32).to_le_bytes());
    for a in argv {
        put_str(&mut p, a);
    }
    put_str(&mut p, cwd);
    p.extend_from_slice(&(env.len() as u32).to_le_bytes());
    for (k, v) in env {
        put_str(&mut p, &format!("{k}={v}"));
    }
    frame(REQ_SPAWN, id, &p)
}

/// The `KILL` frame of command `id`.
pub fn kill(id: u32) -> Vec<u8> {
    frame(REQ_KILL, id, &[])
}

/// Takes every complete event frame off the front of `buf`.
pub fn drain(buf: &mut Vec<u8>) -> Result<Vec<(u32, Event)>, String> {
    let mut events = Vec::new();
    let mut at = 0;
    while buf.len() - at >= 4 {
        let len = u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes")) as usize;
        if !(5..=(64 << 20)).contains(&len) {
            return Err(format!("malformed frame from the helper (length {len})"));
        }
        if buf.len() - at - 4 < len {
            break;
        }
        let body = &buf[at + 4..at + 4 + len];
        let id = u32::from_le_bytes(body[1..5].try_into().expect("4 bytes"));
        let payload = &body[5..];
        let event = match body[0] {
            0 => Event::Ready,
            1 => Event::Started,
            2 => Event::Stdout(payload.to_vec()),
            3 => Event::Stderr(payload.to_vec()),
            4 if payload.len() == 4 => Event::Exit(i32::from_le_bytes(payload.try_into().expect("4 bytes"))),
            5 if !payload.is_empty() => {
                Event::SpawnError(payload[0], String::from_utf8_lossy(&payload[1..]).into_owned())
            }
            kind => return Err(format!("unknown event kind {kind} from the helper")),
        };
        events.push((id, event));
        at += 4 + len;
    }
    buf.drain(..at);
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere_are_reassembled() {
        let mut wire = frame(2, 7, b"hello");
        wire.extend(frame(4, 7, &3i32.to_le_bytes()));
        let mut buf = wire[..6].to_vec();
        assert_eq!(drain(&mut buf).unwrap(), vec![]);
        buf.extend_from_slice(&wire[6..]);
        assert_eq!(drain(&mut buf).unwrap(), vec![(7, Event::Stdout(b"hello".to_vec())), (7, Event::Exit(3))]);
        assert!(buf.is_empty());
        assert!(drain(&mut vec![1, 0, 0, 0, 9]).is_err());
    }
}
