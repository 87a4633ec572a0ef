//! A command running in the container: its events from the helper turned
//! into [`Process`] output, with the output cap and the timeout enforced
//! on the host side (the helper kills the process group on request).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::protocol::{self, Event};
use super::session::Session;
use crate::backend::{ExitStatus, OutputPiece, Process};

/// How long the exit of a killed command may take to be reported.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// A running command (see [`Process`]). Dropping it kills its process group.
pub struct DockerProcess {
    pub(super) id: u32,
    pub(super) events: mpsc::UnboundedReceiver<Event>,
    pub(super) session: Arc<Session>,
    pub(super) deadline: Instant,
    pub(super) cap: u64,
    pub(super) kept: [u64; 2],
    pub(super) truncated: bool,
    pub(super) timed_out: bool,
    pub(super) finished: Option<ExitStatus>,
}

impl DockerProcess {
    fn finish(&mut self, code: i32) {
        let code = if self.timed_out || code < 0 { -1 } else { code };
        self.finished = Some(ExitStatus { code, timed_out: self.timed_out, truncated: self.truncated });
    }

    /// Keeps what fits under the per-stream cap.
    fn capped(&mut self, stream: usize, mut bytes: Vec<u8>) -> Option<Vec<u8>> {
        let room = self.cap.saturating_sub(self.kept[stream]);
        if (bytes.len() as u64) > room {
            self.truncated = true;
            bytes.truncate(room as usize);
        }
        self.kept[stream] += bytes.len() as u64;
        (!bytes.is_empty()).then_some(bytes)
    }
}

#[async_trait]
impl Process for DockerProcess {
    async fn next_output(&mut self) -> Option<OutputPiece> {
        loop {
            if self.finished.is_some() {
                return None;
            }
            // Checked first: a ready event must not outrun an expired deadline (a zero timeout times out at once).
            if !self.timed_out && Instant::now() >= self.deadline {
                self.timed_out = true;
                self.session.send(protocol::kill(self.id));
                self.deadline = Instant::now() + KILL_GRACE;
            }
            let event = match tokio::time::timeout_at(self.deadline, self.events.recv()).await {
                Ok(Some(e)) => e,
                Ok(None) => {
                    self.finish(-1);
                    return None;
                }
                Err(_) if !self.timed_out => {
                    self.timed_out = true;
                    self.session.send(protocol::kill(self.id));
                    self.deadline = Instant::now() + KILL_GRACE;
                    continue;
                }
                Err(_) => {
                    self.finish(-1);
                    return None;
                }
            };
            match event {
                Event::Stdout(b) => {
                    if let Some(b) = self.capped(0, b) {
                        return Some(OutputPiece::Stdout(b));
                    }
                }
                Event::Stderr(b) => {
                    if let Some(b) = self.capped(1, b) {
                        return Some(OutputPiece::Stderr(b));
                    }
                }
                Event::Exit(code) => {
                    self.finish(code);
                    return None;
                }
                Event::Died(text) => {
                    self.finish(-1);
                    return Some(OutputPiece::Stderr(format!("\n{text}\n").into_bytes()));
                }
                Event::Ready | Event::Started | Event::SpawnError(..) => {}
            }
        }
    }

    async fn wait(&mut self) -> ExitStatus {
        while self.next_output().await.is_some() {}
        self.finished.unwrap_or(ExitStatus { code: -1, timed_out: self.timed_out, truncated: self.truncated })
    }
}

impl Drop for DockerProcess {
    fn drop(&mut self) {
        if self.finished.is_none() {
            self.session.send(protocol::kill(self.id));
        }
        self.session.unregister(self.id);
    }
}
