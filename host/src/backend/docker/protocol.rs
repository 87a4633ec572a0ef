//! The wire format between the host and the resident helper
//! (`host/docker-helper/main.rs`), over the container's attached stdin and
//! stdout: length-prefixed frames, little-endian.
//!
//! A request is `len: u32` (of what follows), `kind: u8`, `id: u32`, then
//! the payload: `SPAWN` (the command's nonce, then argv, cwd, env as
//! counted lists of length-prefixed strings) and `KILL` (kill the command's
//! process group). An event is `len: u32`, `kind: u8`, `id: u32`, the
//! command's nonce (16 bytes), then the payload: `READY` (once, id 0, a
//! zero nonce), `STARTED`, `STDOUT`/`STDERR` (bytes as read), `EXIT` (`i32`
//! code) and `SPAWN_ERROR` (a kind byte and text).
//!
//! The nonce is fresh and random for every command and never reaches the
//! commands: an event that does not carry its command's nonce was not
//! written by the helper, and ends the session (`session.rs`).

use crate::backend::BackendError;

/// The bytes of a command's nonce.
pub const NONCE_BYTES: usize = 16;

/// A command's nonce: every event about it must carry it.
pub type Nonce = [u8; NONCE_BYTES];

/// The header of an event: kind, id and nonce.
const EVENT_HEADER: usize = 5 + NONCE_BYTES;

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

/// A fresh nonce from the kernel's random source.
pub fn nonce() -> Result<Nonce, BackendError> {
    let mut nonce = [0u8; NONCE_BYTES];
    // SAFETY: getrandom writes at most `nonce.len()` bytes into `nonce`.
    let n = unsafe { libc::getrandom(nonce.as_mut_ptr().cast(), nonce.len(), 0) };
    if n != NONCE_BYTES as isize {
        return Err(BackendError::Io(format!(
            "cannot draw a nonce for a Docker command (getrandom: {})",
            std::io::Error::last_os_error()
        )));
    }
    Ok(nonce)
}

/// The `SPAWN` frame of command `id`.
pub fn spawn(id: u32, nonce: &Nonce, argv: &[String], cwd: &str, env: &[(String, String)]) -> Vec<u8> {
    let mut p = nonce.to_vec();
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

/// One event as it came: for command `id`, carrying `nonce`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The command it is about (0 for `READY`).
    pub id: u32,
    /// The nonce it carries.
    pub nonce: Nonce,
    /// What it says.
    pub event: Event,
}

/// Takes every complete event frame off the front of `buf`.
pub fn drain(buf: &mut Vec<u8>) -> Result<Vec<Frame>, String> {
    let mut frames = Vec::new();
    let mut at = 0;
    while buf.len() - at >= 4 {
        let len = u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes")) as usize;
        if !(EVENT_HEADER..=(64 << 20)).contains(&len) {
            return Err(format!("malformed frame from the helper (length {len})"));
        }
        if buf.len() - at - 4 < len {
            break;
        }
        let body = &buf[at + 4..at + 4 + len];
        let id = u32::from_le_bytes(body[1..5].try_into().expect("4 bytes"));
        let nonce: Nonce = body[5..EVENT_HEADER].try_into().expect("16 bytes");
        let payload = &body[EVENT_HEADER..];
        let event = match body[0] {
            0 => Event::Ready,
            1 => Event::Started,
            2 => Event::Stdout(payload.to_vec()),
            3 => Event::Stderr(payload.to_vec()),
            4 if payload.len() == 4 => Event::Exit(i32::from_le_bytes(payload.try_into().expect("4 bytes"))),
            5 if !payload.is_empty() => {
                Event::SpawnError(payload[0], String::from_utf8_lossy(&payload[1..]).into_owned())
            }
            kind => return Err(format!("malformed event (kind {kind}, {} bytes) from the helper", payload.len())),
        };
        frames.push(Frame { id, nonce, event });
        at += 4 + len;
    }
    buf.drain(..at);
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: u8, id: u32, nonce: &Nonce, payload: &[u8]) -> Vec<u8> {
        let mut body = nonce.to_vec();
        body.extend_from_slice(payload);
        frame(kind, id, &body)
    }

    #[test]
    fn frames_split_anywhere_are_reassembled() {
        let nonce = [7u8; NONCE_BYTES];
        let mut wire = event(2, 7, &nonce, b"hello");
        wire.extend(event(4, 7, &nonce, &3i32.to_le_bytes()));
        let mut buf = wire[..6].to_vec();
        assert_eq!(drain(&mut buf).unwrap(), vec![]);
        buf.extend_from_slice(&wire[6..]);
        assert_eq!(
            drain(&mut buf).unwrap(),
            vec![
                Frame { id: 7, nonce, event: Event::Stdout(b"hello".to_vec()) },
                Frame { id: 7, nonce, event: Event::Exit(3) }
            ]
        );
        assert!(buf.is_empty());
        assert!(drain(&mut vec![1, 0, 0, 0, 9]).is_err());
        // A frame of the first protocol (no nonce) is too short to be an event.
        let mut old = frame(4, 1, &0i32.to_le_bytes());
        assert!(drain(&mut old).is_err());
    }

    #[test]
    fn every_command_gets_a_nonce_of_its_own() {
        let (a, b) = (nonce().unwrap(), nonce().unwrap());
        assert_ne!(a, b);
        assert_ne!(a, [0; NONCE_BYTES]);
        let spawn = spawn(3, &a, &["true".into()], "/", &[]);
        assert_eq!(&spawn[9..9 + NONCE_BYTES], &a, "the nonce leads the SPAWN payload");
    }
}
