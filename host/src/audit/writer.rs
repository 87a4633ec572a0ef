//! [`AuditLog`]: the bounded queue and the writer thread behind it.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result};
use toolhost_core::audit::rotated;

use super::AuditSettings;
use super::record::{Dropped, Record, Tampered, rfc3339};
use crate::sync::MutexExt;

/// How long queued records wait for the writer at most: it wakes this
/// often, or as soon as the queue is half full. A call never wakes it for
/// one record (that was a futex wake and a context switch on every call's
/// path, most of the log's cost on a trivial call). Drops are written as a
/// count at the same pace, so a loss is on disk even when no record
/// follows it.
const WRITE_EVERY: Duration = Duration::from_millis(25);

/// A record on its way to the writer thread: the input is redacted and
/// everything serialised there, off the call's path.
struct Pending {
    record: Record,
    raw_input: String,
    time: SystemTime,
}

/// Counts shared by the log and its writer thread.
#[derive(Debug, Default)]
struct Counters {
    /// Dropped and not yet written as a `dropped` line.
    unreported: AtomicU64,
    /// Dropped in all.
    dropped: AtomicU64,
    /// Lines written (records and `dropped` lines).
    written: AtomicU64,
    /// Records that could not be written (an I/O error), in all.
    failed: AtomicU64,
    /// Records in the queue.
    queued: AtomicUsize,
}

/// The figures of an [`AuditLog`] so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditStats {
    /// Records dropped because the queue was full.
    pub dropped: u64,
    /// Lines written.
    pub written: u64,
    /// Lines lost to write errors (each also logged as a warning).
    pub failed: u64,
}

/// An open audit log: [`AuditLog::submit`] never blocks; a thread of its
/// own writes, rotates and reports drops. Dropping the log writes what is
/// queued and the count of drops, then joins the thread.
pub struct AuditLog {
    tx: Mutex<Option<SyncSender<Pending>>>,
    counters: Arc<Counters>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The writer thread, woken when the queue holds `wake_at` records.
    writer: Thread,
    wake_at: usize,
    path: PathBuf,
    /// The log held by this process alone, when it asked.
    _hold: Option<crate::hold::Hold>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").field("path", &self.path).finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Starts the writer for `settings` (whose `path` must be set). The
    /// file is opened by the writer thread, so a path on a slow or stuck
    /// filesystem does not hold up start-up either; its folder must exist.
    ///
    /// `hold`: this process holds the log alone while it is open (`serve`,
    /// [`crate::Toolhost`]'s `hold_audit_log`): another process holding it
    /// is refused here, naming it.
    pub fn open(settings: &AuditSettings, hold: bool) -> Result<AuditLog> {
        let path = settings.path.clone().context("the audit log needs a path ([audit] path or --audit FILE)")?;
        settings.validate().map_err(anyhow::Error::msg)?;
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            anyhow::bail!(
                "the folder of the audit log {} does not exist; create it or point [audit] path elsewhere",
                path.display()
            );
        }
        let hold = if hold { Some(hold_log(&path)?) } else { None };
        let queue = settings.queue.max(1);
        let (tx, rx) = sync_channel(queue);
        let counters = Arc::new(Counters::default());
        let writer = Writer {
            path: path.clone(),
            max_bytes: settings.max_bytes.max(1),
            keep: settings.keep,
            file: None,
            identity: None,
            size: 0,
            counters: counters.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("toolhost-audit".into())
            .spawn(move || {
                crate::background::lower_priority();
                writer.run(rx)
            })
            .context("starting the audit log's writer thread")?;
        let writer = thread.thread().clone();
        Ok(AuditLog {
            tx: Mutex::new(Some(tx)),
            counters,
            thread: Mutex::new(Some(thread)),
            writer,
            wake_at: queue.div_ceil(2),
            path,
            _hold: hold,
        })
    }

    /// The live file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues `record` of a call that started at `time` (its `input` is
    /// replaced by `raw_input`, redacted, and its `time` by `time`, both on
    /// the writer thread). Never waits: when the queue is full the record
    /// is dropped and counted, and the count is written to the log.
    pub fn submit(&self, record: Record, raw_input: String, time: SystemTime) {
        let tx = self.tx.lock_unpoisoned();
        let Some(tx) = tx.as_ref() else { return };
        // Counted before it is sent: the writer may take it and count it
        // out at once, and a count taken after would go below zero (it
        // wrapped, and the next call's increment overflowed).
        let queued = self.counters.queued.fetch_add(1, Ordering::Relaxed) + 1;
        match tx.try_send(Pending { record, raw_input, time }) {
            Ok(()) => {
                if queued >= self.wake_at {
                    self.writer.unpark();
                }
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.queued.fetch_sub(1, Ordering::Relaxed);
                self.counters.unreported.fetch_add(1, Ordering::Relaxed);
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The counts so far.
    pub fn stats(&self) -> AuditStats {
        AuditStats {
            dropped: self.counters.dropped.load(Ordering::Relaxed),
            written: self.counters.written.load(Ordering::Relaxed),
            failed: self.counters.failed.load(Ordering::Relaxed),
        }
    }

    /// Writes everything queued and stops the writer (what `Drop` does;
    /// later submissions are counted as dropped).
    pub fn close(&self) {
        self.tx.lock_unpoisoned().take();
        self.writer.unpark();
        if let Some(thread) = self.thread.lock_unpoisoned().take() {
            let _ = thread.join();
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.close();
    }
}

/// `path` held by this process alone, or the refusal naming who holds it.
fn hold_log(path: &Path) -> Result<crate::hold::Hold> {
    match crate::hold::Hold::take(path)? {
        Ok(hold) => Ok(hold),
        Err(holder) => anyhow::bail!(
            "the audit log {} is written by {holder}: two serving processes on one log would interleave their \
             records and rotate each other's files; give each replica its own file, e.g. \
             [audit] path = \"{}\" (written with --replica-id)",
            path.display(),
            path.with_file_name(format!(
                "{}-{{replica}}{}",
                path.file_stem().unwrap_or_default().to_string_lossy(),
                path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default()
            ))
            .display()
        ),
    }
}

/// The writer thread's side.
struct Writer {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    file: Option<BufWriter<File>>,
    /// Device and inode of the open file, checked against the path before
    /// each batch.
    identity: Option<(u64, u64)>,
    /// Bytes in the open file as far as the writer knows (what it found
    /// there plus what it wrote): less on disk means it was cut short.
    size: u64,
    counters: Arc<Counters>,
}

impl Writer {
    fn run(mut self, rx: Receiver<Pending>) {
        loop {
            std::thread::park_timeout(WRITE_EVERY);
            self.check_tampered();
            // Everything queued, then one flush.
            let closed = loop {
                match rx.try_recv() {
                    Ok(pending) => {
                        self.counters.queued.fetch_sub(1, Ordering::Relaxed);
                        self.report_dropped();
                        let line = line_of(pending);
                        self.write(&line);
                    }
                    Err(TryRecvError::Empty) => break false,
                    Err(TryRecvError::Disconnected) => break true,
                }
            };
            self.report_dropped();
            self.flush();
            if closed {
                return;
            }
        }
    }

    /// Notices the log file removed, replaced or cut short since the
    /// writer's last write (a process with the user's rights can do that
    /// much, e.g. a sandbox-off `rm` through a glob): the writer drops its
    /// descriptor, which would write into an unlinked or foreign file, and
    /// opens the path again (creating it), writing a `tampered` record
    /// first that says what it saw. Another toolhost rotating the same log
    /// is reported the same way: a log shared by two hosts is not told
    /// apart from one tampered with.
    fn check_tampered(&mut self) {
        use std::os::unix::fs::MetadataExt as _;
        let (Some(_), Some((dev, ino))) = (&self.file, self.identity) else { return };
        let seen = match std::fs::metadata(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                "the log file was removed; records written to it since the last check are lost".to_string()
            }
            Err(_) => return,
            Ok(meta) if (meta.dev(), meta.ino()) != (dev, ino) => format!(
                "the log file was replaced by another file (inode {} where the writer had written to inode {ino});                  records written to the old one since the last check went there",
                meta.ino()
            ),
            Ok(meta) if meta.is_file() && meta.len() < self.size => {
                format!("the log file was cut short from {} to {} bytes", self.size, meta.len())
            }
            Ok(_) => return,
        };
        tracing::warn!("the audit log {}: {seen}; opening it again", self.path.display());
        self.file = None;
        self.identity = None;
        let line = serde_json::to_string(&Tampered { kind: "tampered".into(), time: rfc3339(SystemTime::now()), seen })
            .expect("a tampered record serialises");
        self.write(&line);
    }

    fn report_dropped(&mut self) {
        let count = self.counters.unreported.swap(0, Ordering::Relaxed);
        if count > 0 {
            let line =
                serde_json::to_string(&Dropped { kind: "dropped".into(), time: rfc3339(SystemTime::now()), count })
                    .expect("a dropped record serialises");
            self.write(&line);
        }
    }

    fn write(&mut self, line: &str) {
        let len = line.len() as u64 + 1;
        if let Err(e) = self.write_line(line, len) {
            self.counters.failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("could not write the audit log {}: {e:#}", self.path.display());
            self.file = None;
        } else {
            self.counters.written.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn write_line(&mut self, line: &str, len: u64) -> Result<()> {
        if self.file.is_some() && self.size > 0 && self.size + len > self.max_bytes {
            self.rotate()?;
        }
        if self.file.is_none() {
            self.open()?;
            if self.size > 0 && self.size + len > self.max_bytes {
                self.rotate()?;
                return self.write_line(line, len);
            }
        }
        let file = self.file.as_mut().expect("opened above");
        file.write_all(line.as_bytes())?;
        file.write_all(b"\n")?;
        self.size += len;
        Ok(())
    }

    /// `FILE.keep` goes, `FILE.n` becomes `FILE.n+1`, `FILE` becomes
    /// `FILE.1` (with `keep = 0`, `FILE` goes), and a new `FILE` opens.
    fn rotate(&mut self) -> Result<()> {
        self.flush();
        self.file = None;
        if self.keep == 0 {
            std::fs::remove_file(&self.path).with_context(|| format!("removing {}", self.path.display()))?;
        } else {
            let _ = std::fs::remove_file(rotated(&self.path, self.keep));
            for n in (1..self.keep).rev() {
                let from = rotated(&self.path, n);
                if from.exists() {
                    std::fs::rename(&from, rotated(&self.path, n + 1))
                        .with_context(|| format!("rotating {}", from.display()))?;
                }
            }
            std::fs::rename(&self.path, rotated(&self.path, 1))
                .with_context(|| format!("rotating {}", self.path.display()))?;
        }
        self.open()
    }

    /// Opens the log for appending, creating it readable and writable by
    /// the user alone (0600: it holds what every call did), and notes its
    /// identity and size.
    fn open(&mut self) -> Result<()> {
        use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)
            .with_context(|| format!("opening {}", self.path.display()))?;
        let meta = file.metadata().ok();
        self.size = meta.as_ref().map_or(0, |m| m.len());
        self.identity = meta.map(|m| (m.dev(), m.ino()));
        self.file = Some(BufWriter::with_capacity(64 * 1024, file));
        Ok(())
    }

    fn flush(&mut self) {
        if let Some(file) = self.file.as_mut()
            && let Err(e) = file.flush()
        {
            self.counters.failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("could not write the audit log {}: {e}", self.path.display());
            self.file = None;
        }
    }
}

/// The JSON line of a queued record, its input and host operations
/// redacted.
fn line_of(pending: Pending) -> String {
    let Pending { mut record, raw_input, time } = pending;
    record.time = rfc3339(time);
    record.input = redacted_input(&raw_input);
    for op in &mut record.ops {
        op.redact();
    }
    serde_json::to_string(&record).expect("a record serialises")
}

/// The input as JSON with every string value (and key) redacted; text that
/// is not JSON is kept as a string, redacted.
pub fn redacted_input(raw: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(mut value) => {
            redact_value(&mut value);
            value
        }
        Err(_) => serde_json::Value::String(toolhost_redaction::redact(raw).0),
    }
}

fn redact_value(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            let (text, n) = toolhost_redaction::redact(s);
            if n > 0 {
                *s = text;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_value),
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (key, mut v) in old {
                redact_value(&mut v);
                map.insert(toolhost_redaction::redact(&key).0, v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(path: &Path) -> Writer {
        Writer {
            path: path.to_path_buf(),
            max_bytes: 1 << 20,
            keep: 1,
            file: None,
            identity: None,
            size: 0,
            counters: Arc::default(),
        }
    }

    fn kinds(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).map_or(l.to_string(), |v| v["kind"].to_string()))
            .collect()
    }

    /// Issue 29 item 10: `rm -f audit.jsonl` used to send every later
    /// record into the unlinked file, and a replaced or truncated log went
    /// unnoticed.
    #[test]
    fn a_removed_replaced_or_cut_log_is_opened_again_with_a_tampered_record_first() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut w = writer(&path);
        w.write(r#"{"kind":"call","n":1}"#);
        w.flush();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "created 0600");
        w.check_tampered();
        w.write(r#"{"kind":"call","n":2}"#);
        w.flush();
        assert_eq!(kinds(&path), ["\"call\"", "\"call\""], "nothing seen: nothing reported");

        std::fs::remove_file(&path).unwrap();
        w.check_tampered();
        w.write(r#"{"kind":"call","n":3}"#);
        w.flush();
        let text = std::fs::read_to_string(&path).expect("the log is created again");
        assert!(text.lines().next().unwrap().contains("the log file was removed"), "{text}");
        assert_eq!(kinds(&path), ["\"tampered\"", "\"call\""]);

        let forged = dir.path().join("forged");
        std::fs::write(&forged, "{\"kind\":\"call\",\"forged\":true}\n").unwrap();
        std::fs::rename(&forged, &path).unwrap();
        w.check_tampered();
        w.flush();
        assert!(std::fs::read_to_string(&path).unwrap().contains("replaced by another file"));

        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(3).unwrap();
        w.check_tampered();
        w.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("cut short from") && text.contains("to 3 bytes"), "{text}");
    }

    #[test]
    fn inputs_are_redacted_value_by_value() {
        let v =
            redacted_input(r#"{"command":"curl -u x https://h/?token=abc123&q=1","n":1,"k":["AKIAABCDEFGHIJKLMNOP"]}"#);
        assert_eq!(v["command"], "curl -u x https://h/?token=[REDACTED]&q=1");
        assert_eq!(v["k"][0], "[REDACTED]");
        assert_eq!(v["n"], 1);
        assert_eq!(redacted_input("not json password=x y"), serde_json::json!("not json password=[REDACTED] y"));
    }
}
