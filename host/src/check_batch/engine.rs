//! The work queue of a check batch: request lines in, answer lines out in
//! the same order, answered in parallel.
//!
//! Lines are answered concurrently by one worker thread per available core
//! (at most 16), each keeping one instance per tool for the whole batch. A
//! reader thread cuts what each read of the input brings into chunks of up
//! to [`CHUNK`] lines (one line when a driver writes one request and waits);
//! a worker takes a chunk, writes its answers into one buffer, and the
//! answers are written in input order, each run of finished chunks with one
//! `write`, as soon as they are ready, so an interactive driver gets each
//! answer at once. The answers to the lines read before a read error are
//! written before the error is reported.
//!
//! Guest code still runs on the async runtime's machinery (timers, host
//! I/O): each worker drives its chunk with `Handle::block_on`, so a decision
//! costs no task hand-off between threads.

use crate::sync::{CondvarExt, MutexExt};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{Read, Write};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::wire::{CheckRequest, write_answer, write_error};
use crate::CallableTool;
use crate::Toolhost;
use crate::permission::{Context, Mode, RuleSet};

/// Why a batch stopped before the end of its input.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// Reading the requests failed (invalid UTF-8 included). The answers
    /// to the lines before the error were written.
    #[error("reading the requests: {0}")]
    Read(#[source] std::io::Error),
    /// Writing an answer failed, a worker could not start, or a check
    /// panicked; nothing more was written.
    #[error(transparent)]
    Failed(anyhow::Error),
}

/// Answers check requests of the wire format ([`super::wire`]) for one
/// host, in parallel, in order. Built once, it may run any number of
/// batches; each batch reads the host's mode and rules when it starts.
#[derive(Clone)]
pub struct BatchChecker {
    host: Toolhost,
    workers: usize,
}

impl BatchChecker {
    /// A checker for `host` with one worker per available core (at most 16).
    pub fn new(host: &Toolhost) -> Self {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 16);
        Self { host: host.clone(), workers }
    }

    /// Uses `workers` worker threads (at least one).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Reads request lines from `input` to its end and writes one answer
    /// line per non-blank request line to `output`, in input order, each as
    /// soon as it and the ones before it are ready (flushed), so a driver
    /// that writes one request and waits gets its answer at once. A line
    /// that cannot be answered gets an error line (`{"id": …, "error": …}`);
    /// only a failure to read or write the streams ends a batch early.
    ///
    /// Runs on a blocking thread of the current tokio runtime; the workers
    /// drive guest code on that runtime.
    pub async fn run<R, W>(&self, input: R, output: W) -> Result<(), BatchError>
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        let workers = self.workers;
        let shared = Arc::new(Batch::new(&self.host, workers, Box::new(output)));
        let runtime = tokio::runtime::Handle::current();
        let mut input = input;
        tokio::task::spawn_blocking(move || run_batch(&shared, &mut input, &runtime, workers))
            .await
            .map_err(|e| BatchError::Failed(anyhow::Error::from(e).context("the batch failed")))?
    }

    /// Answers `lines` (one request each, as JSON text on one line) with the
    /// same engine, in memory: the answers' JSON texts, one per line, in
    /// order. A blank line or one holding a line end is refused up front
    /// (it would not get exactly one answer).
    pub async fn answer_lines<I, S>(&self, lines: I) -> anyhow::Result<Vec<String>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut input = String::new();
        for (i, line) in lines.into_iter().enumerate() {
            let line = line.as_ref();
            if line.trim().is_empty() || line.contains('\n') {
                anyhow::bail!(
                    "request {i} is blank or spans several lines; give each request as one line of JSON text"
                );
            }
            input.push_str(line);
            input.push('\n');
        }
        let output = SharedBuffer::default();
        self.run(std::io::Cursor::new(input.into_bytes()), output.clone()).await?;
        let bytes = std::mem::take(&mut *output.0.lock_unpoisoned());
        let text = String::from_utf8(bytes).map_err(|e| anyhow::anyhow!("an answer is not UTF-8: {e}"))?;
        Ok(text.lines().map(str::to_owned).collect())
    }
}

/// An in-memory output shared with the batch's writer thread.
#[derive(Clone, Default)]
struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock_unpoisoned().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The most lines one worker takes at a time. Fewer when fewer are at hand:
/// the lines one read of stdin brings are shared out among the workers.
const CHUNK: usize = 128;

/// How much of stdin one read asks for.
const READ_SIZE: usize = 64 * 1024;

/// Runs a batch on threads: `workers` workers and the reader (this thread).
fn run_batch(
    batch: &Batch,
    input: &mut impl Read,
    runtime: &tokio::runtime::Handle,
    workers: usize,
) -> Result<(), BatchError> {
    let read_error = std::thread::scope(|scope| {
        for i in 0..workers {
            let spawned = std::thread::Builder::new()
                .name(format!("toolhost-check-{i}"))
                .spawn_scoped(scope, || work(batch, runtime));
            if let Err(e) = spawned {
                batch.lanes.fail(anyhow::Error::from(e).context("starting a worker thread"));
            }
        }
        let read_error = read_chunks(input, &batch.lanes, workers);
        batch.lanes.close();
        read_error
    });
    // The answers to the lines read so far were written even after a read
    // error; a failure to write (or a panic) comes first.
    if let Some(e) = batch.lanes.take_failure() {
        return Err(BatchError::Failed(e));
    }
    match read_error {
        Some(e) => Err(BatchError::Read(e)),
        None => Ok(()),
    }
}

/// Reads `input` to the end (or until the batch fails), queueing its lines
/// in chunks for `workers` workers; returns the read error that ended it, if
/// any. The lines before an error (invalid UTF-8 included) are queued.
fn read_chunks(input: &mut impl Read, lanes: &Lanes, workers: usize) -> Option<std::io::Error> {
    let mut block = vec![0; READ_SIZE];
    let mut buf: Vec<u8> = Vec::with_capacity(READ_SIZE);
    loop {
        if lanes.failed() {
            return None;
        }
        let n = match input.read(&mut block) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Some(e),
        };
        let len = buf.len();
        buf.extend_from_slice(&block[..n]);
        // The complete lines: up to the last line end, or everything at the
        // end of input (a last line without a line end is still a line).
        let complete = match (n, buf[len..].iter().rposition(|&b| b == b'\n')) {
            (0, _) => buf.len(),
            (_, Some(i)) => len + i + 1,
            (_, None) => continue,
        };
        let (text, invalid) = match std::str::from_utf8(&buf[..complete]) {
            Ok(text) => (text, None),
            Err(e) => {
                // Queue the lines before the one with invalid UTF-8 (the
                // bytes up to the line end before it are valid), and report
                // that line's error as reading it line by line would.
                let start = buf[..e.valid_up_to()].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                let end = buf[start..complete].iter().position(|&b| b == b'\n').map_or(complete, |i| start + i + 1);
                let error = std::str::from_utf8(&buf[start..end]).err().unwrap_or(e);
                let error = std::io::Error::new(std::io::ErrorKind::InvalidData, error);
                (std::str::from_utf8(&buf[..start]).unwrap_or_default(), Some(error))
            }
        };
        queue_lines(text, lanes, workers);
        if let Some(error) = invalid {
            return Some(error);
        }
        if n == 0 {
            return None;
        }
        buf.drain(..complete);
    }
}

/// Queues the lines of `text` (whole lines, the last one possibly without a
/// line end) in chunks: as evenly as they share out among `workers`, at most
/// [`CHUNK`] lines each.
fn queue_lines(text: &str, lanes: &Lanes, workers: usize) {
    if text.is_empty() {
        return;
    }
    let lines = text.bytes().filter(|&b| b == b'\n').count() + usize::from(!text.ends_with('\n'));
    let per_chunk = lines.div_ceil(workers.max(1)).clamp(1, CHUNK);
    let mut rest = text;
    while !rest.is_empty() {
        // The end of the `per_chunk`-th line, or of the text.
        let mut end = 0;
        for _ in 0..per_chunk {
            match rest[end..].find('\n') {
                Some(i) => end += i + 1,
                None => {
                    end = rest.len();
                    break;
                }
            }
            if end == rest.len() {
                break;
            }
        }
        let (chunk, tail) = rest.split_at(end);
        lanes.push(chunk.to_owned());
        rest = tail;
    }
}

/// A worker thread: takes chunks until the input ends, answers each line
/// into one buffer and hands it to the output.
fn work(batch: &Batch, runtime: &tokio::runtime::Handle) {
    let mut worker = Worker::default();
    let mut out = Vec::new();
    while let Some((seq, chunk)) = batch.lanes.pop() {
        if batch.lanes.failed() {
            // Nothing more is written; keep taking chunks so the reader
            // never waits for room.
            batch.lanes.done(seq, Vec::new());
            continue;
        }
        let answered = std::panic::catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(async {
                for line in chunk.lines().filter(|line| !line.trim().is_empty()) {
                    worker.answer(batch, line, &mut out).await;
                    out.push(b'\n');
                }
            })
        }));
        if answered.is_err() {
            // The worker's instances may be mid-call: drop them all.
            worker = Worker::default();
            out.clear();
            batch.lanes.fail(anyhow::anyhow!("a check panicked"));
        }
        let capacity = out.capacity();
        batch.lanes.done(seq, std::mem::replace(&mut out, Vec::with_capacity(capacity)));
    }
}

/// The chunks between the reader, the workers and the output: a queue of
/// chunks to answer, and the answers waiting for their turn to be written.
///
/// At most `limit` chunks are between being queued and being written, so a
/// slow line (a check that runs into its deadline) holds back at most that
/// much input. Threads are woken only when someone waits: the reader when
/// half the room is free again, a worker when a chunk is queued.
struct Lanes {
    state: Mutex<LaneState>,
    /// Where the answers go; used by one thread at a time (`writing`).
    out: Mutex<Box<dyn Write + Send>>,
    /// Signalled when a chunk is queued or the input ends.
    work: Condvar,
    /// Signalled when chunks are written.
    room: Condvar,
    limit: u64,
}

#[derive(Default)]
struct LaneState {
    queue: VecDeque<(u64, String)>,
    /// The number the next queued chunk gets.
    next_in: u64,
    /// The number of the next chunk to write.
    next_out: u64,
    /// Answered chunks waiting for the ones before them.
    ready: BTreeMap<u64, Vec<u8>>,
    /// A thread is writing; the others leave their answers in `ready`.
    writing: bool,
    /// Workers waiting for a chunk.
    idle: usize,
    /// The reader waits for room.
    reader_waiting: bool,
    /// The input ended: workers stop when the queue is empty.
    closed: bool,
    /// Writing failed or a check panicked: nothing more is written.
    failure: Option<anyhow::Error>,
}

impl Lanes {
    fn new(limit: usize, out: Box<dyn Write + Send>) -> Self {
        Self {
            state: Mutex::new(LaneState::default()),
            out: Mutex::new(out),
            work: Condvar::new(),
            room: Condvar::new(),
            limit: limit.max(2) as u64,
        }
    }

    fn lock(&self) -> MutexGuard<'_, LaneState> {
        self.state.lock_unpoisoned()
    }

    /// Queues a chunk, waiting while too many are in flight.
    fn push(&self, chunk: String) {
        let mut state = self.lock();
        while state.failure.is_none() && state.next_in - state.next_out >= self.limit {
            state.reader_waiting = true;
            state = self.room.wait_unpoisoned(state);
        }
        state.reader_waiting = false;
        if state.failure.is_some() {
            return;
        }
        let seq = state.next_in;
        state.next_in += 1;
        state.queue.push_back((seq, chunk));
        let wake = state.idle > 0;
        drop(state);
        if wake {
            self.work.notify_one();
        }
    }

    /// The next chunk to answer; `None` once the input ended and every chunk
    /// was taken.
    fn pop(&self) -> Option<(u64, String)> {
        let mut state = self.lock();
        loop {
            if let Some(chunk) = state.queue.pop_front() {
                return Some(chunk);
            }
            if state.closed {
                return None;
            }
            state.idle += 1;
            state = self.work.wait_unpoisoned(state);
            state.idle -= 1;
        }
    }

    /// The input ended.
    fn close(&self) {
        self.lock().closed = true;
        self.work.notify_all();
    }

    /// Records a failure (the first one wins) and stops writing.
    fn fail(&self, error: anyhow::Error) {
        let mut state = self.lock();
        state.failure.get_or_insert(error);
        drop(state);
        self.room.notify_all();
    }

    fn failed(&self) -> bool {
        self.lock().failure.is_some()
    }

    fn take_failure(&self) -> Option<anyhow::Error> {
        self.lock().failure.take()
    }

    /// Writes answers out with as few `write`s as it takes, and flushes.
    fn write(&self, batch: &[Vec<u8>]) -> std::io::Result<()> {
        let mut out = self.out.lock_unpoisoned();
        match batch {
            [one] => out.write_all(one)?,
            _ => out.write_all(&batch.concat())?,
        }
        out.flush()
    }

    /// Hands over the answers to chunk `seq`, and writes every answer that
    /// is next in order unless another thread is already at it.
    fn done(&self, seq: u64, answers: Vec<u8>) {
        let mut state = self.lock();
        state.ready.insert(seq, answers);
        if state.writing {
            return;
        }
        state.writing = true;
        loop {
            let mut batch = Vec::new();
            loop {
                let next = state.next_out;
                let Some(answers) = state.ready.remove(&next) else { break };
                state.next_out += 1;
                batch.push(answers);
            }
            if batch.is_empty() || state.failure.is_some() {
                state.writing = false;
                return;
            }
            let wake = state.reader_waiting && state.next_in - state.next_out <= self.limit / 2;
            drop(state);
            if wake {
                self.room.notify_one();
            }
            let written = self.write(&batch);
            state = self.lock();
            if let Err(e) = written {
                state.failure.get_or_insert(e.into());
                drop(state);
                self.room.notify_all();
                state = self.lock();
            }
        }
    }
}

/// What every worker of a batch shares: the configuration read once.
struct Batch {
    host: Toolhost,
    mode: Mode,
    rules: Arc<RuleSet>,
    limits: crate::runtime::Limits,
    /// The base context per tool, built (working directories canonicalized)
    /// once per batch.
    contexts: Mutex<HashMap<String, Arc<Context>>>,
    /// The chunks in flight.
    lanes: Lanes,
}

impl Batch {
    /// The configuration of `host` now, and room for `2 * workers + 2`
    /// chunks in flight.
    fn new(host: &Toolhost, workers: usize, output: Box<dyn Write + Send>) -> Self {
        Batch {
            host: host.clone(),
            mode: host.mode(),
            rules: host.rules(),
            limits: host.settings().limits,
            contexts: Mutex::new(HashMap::new()),
            lanes: Lanes::new(2 * workers + 2, output),
        }
    }

    fn context(&self, tool: &str) -> Arc<Context> {
        let mut contexts = self.contexts.lock_unpoisoned();
        if let Some(ctx) = contexts.get(tool) {
            return ctx.clone();
        }
        contexts
            .entry(tool.to_string())
            .or_insert_with(|| Arc::new(self.host.permission_context(tool, self.mode)))
            .clone()
    }
}

/// One lane of a batch: an instance per tool, reused line after line.
///
/// Reuse is safe here, unlike for calls: these are decision instances with
/// no capability at all (no files, processes, state or output), and the
/// permission methods are pure functions of the input, context and rule
/// texts passed with each request, so an earlier request cannot change a
/// later answer. The one-fresh-instance-per-call rule is about `call`, which
/// this never reaches. An instance that trapped or timed out cannot be
/// entered again: it is dropped and the next line for that tool gets a fresh
/// one.
#[derive(Default)]
struct Worker {
    tools: HashMap<String, (CallableTool, Arc<Context>)>,
}

impl Worker {
    /// Writes the answer to `line` into `out` (no line end).
    async fn answer(&mut self, batch: &Batch, line: &str, out: &mut Vec<u8>) {
        let req = match CheckRequest::parse(line) {
            Ok(req) => req,
            Err(e) => return write_error(out, &e.id, &e.message),
        };
        let (tool, ctx) = match self.tools.get_mut(req.tool.as_str()) {
            Some(found) => found,
            None => match batch.host.decision_instance(&req.tool).await {
                Ok(tool) => match self.tools.entry(req.tool.clone()) {
                    Entry::Vacant(e) => e.insert((tool, batch.context(&req.tool))),
                    Entry::Occupied(e) => e.into_mut(),
                },
                Err(err) => return write_error(out, &req.id, &format!("{err:#}")),
            },
        };
        // Each request gets the full deadline.
        tool.rearm(&batch.limits);
        write_answer(out, &req, tool, ctx, &batch.rules).await;
        if tool.failed() {
            self.tools.remove(&req.tool);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the tests can look at.
    type Shared = SharedBuffer;

    /// Gives its pieces one read at a time, then an error if there is one.
    struct Pieces(VecDeque<Vec<u8>>, Option<std::io::ErrorKind>);

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.pop_front() {
                Some(piece) => {
                    buf[..piece.len()].copy_from_slice(&piece);
                    Ok(piece.len())
                }
                None => match self.1 {
                    Some(kind) => Err(std::io::Error::new(kind, "the pipe broke")),
                    None => Ok(0),
                },
            }
        }
    }

    fn drain(lanes: &Lanes) -> Vec<String> {
        lanes.close();
        std::iter::from_fn(|| lanes.pop().map(|(_, chunk)| chunk)).collect()
    }

    fn read(pieces: &[&[u8]], error: Option<std::io::ErrorKind>, workers: usize) -> (Vec<String>, Option<String>) {
        let lanes = Lanes::new(1000, Box::new(Shared::default()));
        let mut input = Pieces(pieces.iter().map(|p| p.to_vec()).collect(), error);
        let error = read_chunks(&mut input, &lanes, workers).map(|e| e.to_string());
        (drain(&lanes), error)
    }

    #[test]
    fn lines_are_shared_out_in_chunks() {
        let lanes = Lanes::new(1000, Box::new(Shared::default()));
        queue_lines("a\nb\nc\nd\ne\n", &lanes, 2);
        assert_eq!(drain(&lanes), ["a\nb\nc\n", "d\ne\n"]);

        let lanes = Lanes::new(1000, Box::new(Shared::default()));
        queue_lines("one\n", &lanes, 4);
        assert_eq!(drain(&lanes), ["one\n"], "a lone line is a chunk at once");

        let lanes = Lanes::new(1000, Box::new(Shared::default()));
        let text: String = (0..300).map(|i| format!("{i}\n")).collect::<String>() + "last";
        queue_lines(&text, &lanes, 1);
        let chunks = drain(&lanes);
        assert_eq!(chunks.iter().map(|c| c.lines().count()).collect::<Vec<_>>(), [CHUNK, CHUNK, 301 - 2 * CHUNK]);
        assert_eq!(chunks.concat(), text, "every byte once, in order, the last line without a line end too");
    }

    #[test]
    fn reads_split_anywhere_give_whole_lines() {
        let (chunks, error) = read(&[b"{\"a\"", b":1}\r\n{\"b\xc3", b"\xa9\":2}\n\n", b"{\"c\":3}"], None, 1);
        assert_eq!(error, None);
        assert_eq!(chunks.concat(), "{\"a\":1}\r\n{\"bé\":2}\n\n{\"c\":3}");
        let lines: Vec<&str> = chunks.iter().flat_map(|c| c.lines()).collect();
        assert_eq!(lines, ["{\"a\":1}", "{\"bé\":2}", "", "{\"c\":3}"]);
    }

    #[test]
    fn read_errors_come_after_the_lines_before_them() {
        let (chunks, error) = read(&[b"one\ntwo\nb\xffd\nthree\n"], None, 1);
        assert_eq!(chunks.concat(), "one\ntwo\n");
        assert_eq!(error.as_deref(), Some("invalid utf-8 sequence of 1 bytes from index 1"));

        let (chunks, error) = read(&[b"one\n", b"tw"], Some(std::io::ErrorKind::BrokenPipe), 1);
        assert_eq!(chunks.concat(), "one\n", "a line cut by the error is not answered");
        assert_eq!(error.as_deref(), Some("the pipe broke"));
    }

    #[test]
    fn answers_are_written_in_order_whatever_order_they_finish_in() {
        let out = Shared::default();
        let lanes = Lanes::new(1000, Box::new(out.clone()));
        for chunk in ["a", "b", "c", "d"] {
            lanes.push(chunk.into());
        }
        let chunks: Vec<(u64, String)> = (0..4).filter_map(|_| lanes.pop()).collect();
        let written = || String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        lanes.done(chunks[1].0, b"B\n".to_vec());
        lanes.done(chunks[2].0, b"C\n".to_vec());
        assert_eq!(written(), "", "nothing before the first chunk is done");
        lanes.done(chunks[0].0, b"A\n".to_vec());
        assert_eq!(written(), "A\nB\nC\n", "a finished run is written at once");
        lanes.done(chunks[3].0, b"D\n".to_vec());
        assert_eq!(written(), "A\nB\nC\nD\n");
        assert!(lanes.take_failure().is_none());
    }

    #[test]
    fn a_failed_write_stops_the_batch() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lanes = Lanes::new(2, Box::new(Broken));
        lanes.push("a".into());
        let (seq, _) = lanes.pop().unwrap();
        lanes.done(seq, b"A\n".to_vec());
        assert!(lanes.failed());
        // The reader is never held up once the batch failed, room or not.
        for _ in 0..10 {
            lanes.push("more".into());
        }
        assert_eq!(lanes.take_failure().map(|e| e.to_string()), Some("broken pipe".to_string()));
    }
}
