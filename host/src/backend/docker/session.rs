//! One running container and its resident helper, attached once: a writer
//! task sends requests to the helper's stdin, a reader task routes its
//! events to the commands waiting for them. When the stream ends (the
//! container died, the engine went away) every running command gets
//! [`Event::Died`] and the session is marked dead, so the backend makes a
//! new container on the next call.
//!
//! An event is believed only when it carries the nonce its command's
//! `SPAWN` gave the helper. One that does not (a forged frame: something in
//! the container reached the helper's channel), or a second `READY`, ends
//! the session the same way, naming the cause, and the container is removed.

use crate::sync::MutexExt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::query_parameters::{AttachContainerOptions, CreateContainerOptions};
use futures::StreamExt as _;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::{mpsc, oneshot};

use super::protocol::{self, Event, Frame, Nonce};
use crate::backend::BackendError;

/// How long a new container may take to start its helper.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a command's events go (none once its handle is dropped), and the
/// nonce they must carry.
struct Route {
    nonce: Nonce,
    tx: Option<mpsc::UnboundedSender<Event>>,
}

/// The commands of a session whose last event (`EXIT`, `SPAWN_ERROR`) has
/// not come yet.
#[derive(Default)]
struct Commands {
    routes: HashMap<u32, Route>,
}

impl Commands {
    /// Hands `frame`'s event to its command, or names why it cannot be the
    /// helper's: no such command, or not its nonce.
    fn deliver(&mut self, frame: Frame) -> Result<(), String> {
        let Some(route) = self.routes.get(&frame.id) else {
            return Err(format!("an event for command {}, which is not running", frame.id));
        };
        if route.nonce != frame.nonce {
            return Err(format!(
                "an event for command {} without the nonce toolhost gave it: something in the container wrote into \
                 the helper's channel",
                frame.id
            ));
        }
        let done = matches!(frame.event, Event::Exit(_) | Event::SpawnError(..));
        if let Some(tx) = &route.tx {
            // A closed receiver (the handle is gone) just discards.
            let _ = tx.send(frame.event);
        }
        if done {
            self.routes.remove(&frame.id);
        }
        Ok(())
    }
}

type Routes = Arc<Mutex<Commands>>;

/// A started container with its helper serving.
pub struct Session {
    /// The container's id.
    pub id: String,
    requests: mpsc::UnboundedSender<Vec<u8>>,
    routes: Routes,
    alive: Arc<AtomicBool>,
    next: AtomicU32,
}

impl Session {
    /// Creates, attaches and starts a container from `body`, and waits for
    /// its helper to say it is ready.
    pub async fn start(docker: Docker, body: bollard::models::ContainerCreateBody) -> Result<Arc<Self>, BackendError> {
        let image = body.image.clone().unwrap_or_default();
        let created = docker.create_container(None::<CreateContainerOptions>, body).await.map_err(|e| {
            let text = e.to_string();
            if text.contains("No such image") || text.contains("404") {
                BackendError::NotFound(format!(
                    "the Docker engine has no image `{image}` ({text}); load or build it (`docker images` lists what \
                     there is; toolhost never pulls), or set [backend.docker] image"
                ))
            } else {
                BackendError::Io(format!("cannot create the Docker container from image `{image}`: {text}"))
            }
        })?;
        let id = created.id;
        let attach =
            AttachContainerOptions { stream: true, stdin: true, stdout: true, stderr: true, ..Default::default() };
        let attached = match docker.attach_container(&id, Some(attach)).await {
            Ok(a) => a,
            Err(e) => {
                super::container::remove(&docker, &id).await;
                return Err(BackendError::Io(format!("cannot attach to the Docker container {id}: {e}")));
            }
        };
        if let Err(e) = docker.start_container(&id, None).await {
            super::container::remove(&docker, &id).await;
            return Err(BackendError::Io(format!("cannot start the Docker container {id} from image `{image}`: {e}")));
        }
        let (requests, mut queue) = mpsc::unbounded_channel::<Vec<u8>>();
        let mut input = attached.input;
        tokio::spawn(async move {
            while let Some(frame) = queue.recv().await {
                if input.write_all(&frame).await.is_err() || input.flush().await.is_err() {
                    break;
                }
            }
            // Dropping the input closes the helper's stdin: it kills its
            // commands and exits, and the engine removes the container.
            let _ = input.shutdown().await;
        });
        let routes: Routes = Arc::default();
        let alive = Arc::new(AtomicBool::new(true));
        let (ready_tx, ready_rx) = oneshot::channel();
        tokio::spawn(read(attached.output, routes.clone(), alive.clone(), ready_tx, docker.clone(), id.clone()));
        let session = Arc::new(Self { id: id.clone(), requests, routes, alive, next: AtomicU32::new(1) });
        match tokio::time::timeout(READY_TIMEOUT, ready_rx).await {
            Ok(Ok(())) => Ok(session),
            Ok(Err(_)) => {
                let why = stop_reason(&docker, &id).await;
                super::container::remove(&docker, &id).await;
                Err(BackendError::Io(format!(
                    "the Docker container {id} stopped before its helper started ({why}); the image must run a \
                     static Linux executable of this machine's architecture"
                )))
            }
            Err(_) => {
                super::container::remove(&docker, &id).await;
                Err(BackendError::Timeout(format!(
                    "the Docker container {id} did not start within {} s",
                    READY_TIMEOUT.as_secs()
                )))
            }
        }
    }

    /// Whether the helper still serves.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Registers a new command: its id, its fresh nonce, and where its
    /// events arrive.
    pub fn register(&self) -> Result<(u32, Nonce, mpsc::UnboundedReceiver<Event>), BackendError> {
        let nonce = protocol::nonce()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        self.routes.lock_unpoisoned().routes.insert(id, Route { nonce, tx: Some(tx) });
        if !self.is_alive() {
            // The reader may have drained the routes just before: tell this one too.
            if let Some(Route { tx: Some(tx), .. }) = self.routes.lock_unpoisoned().routes.remove(&id) {
                let _ = tx.send(Event::Died("the container had stopped".into()));
            }
        }
        Ok((id, nonce, rx))
    }

    /// Stops delivering command `id`'s events (its handle was dropped); the
    /// events the helper still sends about it are checked and discarded.
    pub fn unregister(&self, id: u32) {
        if let Some(route) = self.routes.lock_unpoisoned().routes.get_mut(&id) {
            route.tx = None;
        }
    }

    /// Sends a request frame to the helper.
    pub fn send(&self, frame: Vec<u8>) {
        let _ = self.requests.send(frame);
    }
}

/// Why container `id` stopped, as far as the engine says.
async fn stop_reason(docker: &Docker, id: &str) -> String {
    match docker.inspect_container(id, None).await {
        Ok(info) => match info.state {
            Some(s) if s.oom_killed == Some(true) => "killed for exceeding its memory limit (OOMKilled)".into(),
            Some(s) => format!("exit code {}", s.exit_code.unwrap_or(-1)),
            None => "no state".into(),
        },
        Err(_) => "it is gone (removed, or the engine stopped)".into(),
    }
}

async fn read(
    mut output: std::pin::Pin<Box<dyn futures::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>,
    routes: Routes,
    alive: Arc<AtomicBool>,
    ready: oneshot::Sender<()>,
    docker: Docker,
    id: String,
) {
    let mut ready = Some(ready);
    let mut buf = Vec::new();
    let mut fault = None;
    while let Some(item) = output.next().await {
        match item {
            Ok(LogOutput::StdOut { message }) => {
                buf.extend_from_slice(&message);
                let delivered = protocol::drain(&mut buf).and_then(|frames| {
                    for frame in frames {
                        if frame.event == Event::Ready {
                            let tx = ready.take().ok_or_else(|| "a second READY from the helper".to_string())?;
                            let _ = tx.send(());
                        } else {
                            routes.lock_unpoisoned().deliver(frame)?;
                        }
                    }
                    Ok(())
                });
                if let Err(e) = delivered {
                    fault = Some(e);
                    break;
                }
            }
            Ok(LogOutput::StdErr { message }) => {
                let text = String::from_utf8_lossy(&message);
                tracing::warn!("Docker helper in {id}: {}", crate::escape::escaped(text.trim_end(), false));
            }
            Ok(_) => {}
            Err(e) => {
                fault = Some(e.to_string());
                break;
            }
        }
    }
    alive.store(false, Ordering::Release);
    let why = match fault {
        Some(f) => f,
        None => stop_reason(&docker, &id).await,
    };
    let text = format!(
        "toolhost: the Docker container {} stopped while this command ran ({why}); the next call starts a new one",
        &id[..id.len().min(12)]
    );
    for (_, route) in routes.lock_unpoisoned().routes.drain() {
        if let Some(tx) = route.tx {
            let _ = tx.send(Event::Died(text.clone()));
        }
    }
    // A container whose helper failed is not left behind either.
    super::container::remove(&docker, &id).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_events_with_their_commands_nonce_are_delivered() {
        let mut commands = Commands::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let nonce = [9u8; protocol::NONCE_BYTES];
        commands.routes.insert(4, Route { nonce, tx: Some(tx) });
        let frame = |id, nonce, event| Frame { id, nonce, event };
        let forged = commands.deliver(frame(4, [0; protocol::NONCE_BYTES], Event::Exit(0))).unwrap_err();
        assert!(forged.contains("command 4 without the nonce") && forged.contains("wrote into"), "{forged}");
        assert!(commands.deliver(frame(5, nonce, Event::Exit(0))).unwrap_err().contains("not running"));
        commands.deliver(frame(4, nonce, Event::Stdout(b"3 tests FAILED\n".to_vec()))).unwrap();
        commands.deliver(frame(4, nonce, Event::Exit(1))).unwrap();
        assert_eq!(rx.try_recv().unwrap(), Event::Stdout(b"3 tests FAILED\n".to_vec()));
        assert_eq!(rx.try_recv().unwrap(), Event::Exit(1));
        // After its exit, nothing more is believed about it.
        assert!(commands.deliver(frame(4, nonce, Event::Exit(0))).is_err());
    }
}
