use serde_json::{Value, json};

use crate::collect::Collector;
use crate::decode::{LineEndings, StreamDecoder};
use crate::stream::{Piece, ProcessSource, Sink, Status, StreamOptions, stream};
use crate::{MAX_OUTPUT_CHARS, TRUNCATION_NOTE, timeout_ms};

/// A scripted process.
struct Fake {
    pieces: std::vec::IntoIter<Piece>,
    status: Status,
    read: usize,
}

impl Fake {
    fn new(pieces: Vec<Piece>, code: i32, timed_out: bool) -> Self {
        Self { pieces: pieces.into_iter(), status: Status { code, timed_out, truncated: false }, read: 0 }
    }
}

impl ProcessSource for Fake {
    fn next_piece(&mut self) -> Option<Piece> {
        let p = self.pieces.next();
        self.read += usize::from(p.is_some());
        p
    }
    fn wait(&mut self) -> Status {
        self.status
    }
}

#[derive(Default)]
struct Recorder {
    texts: Vec<String>,
    last: Option<(String, bool, Value)>,
    /// Accept this many text chunks, then report the caller closed.
    close_after: Option<usize>,
}

impl Sink for Recorder {
    fn text(&mut self, text: &str) -> bool {
        self.texts.push(text.to_string());
        self.close_after.is_none_or(|n| self.texts.len() < n)
    }
    fn finish(&mut self, text: &str, error: bool, metadata: &Value) {
        self.last = Some((text.to_string(), error, metadata.clone()));
    }
}

impl Recorder {
    fn all(&self) -> String {
        let mut s = self.texts.concat();
        s.push_str(&self.last.as_ref().unwrap().0);
        s
    }
}

fn out(s: &str) -> Piece {
    Piece::Stdout(s.as_bytes().to_vec())
}
fn err(s: &str) -> Piece {
    Piece::Stderr(s.as_bytes().to_vec())
}

fn opts(command: &str) -> StreamOptions<'_> {
    StreamOptions { command, timeout_ms: 500, endings: LineEndings::CrLf, limit: MAX_OUTPUT_CHARS }
}

fn run(pieces: Vec<Piece>, code: i32, timed_out: bool, o: &StreamOptions<'_>) -> Recorder {
    let mut p = Fake::new(pieces, code, timed_out);
    let mut r = Recorder::default();
    stream(&mut p, &mut r, o);
    r
}

#[test]
fn success_streams_each_piece_in_arrival_order() {
    let r = run(vec![out("out\n"), err("err\n"), out("more\n")], 0, false, &opts("x"));
    assert_eq!(r.texts, ["out\n", "err\n", "more\n"]);
    let (text, error, meta) = r.last.unwrap();
    assert_eq!((text.as_str(), error), ("", false));
    assert_eq!(meta, json!({"exit_code": 0, "timed_out": false, "truncated": false}));
}

#[test]
fn success_without_output_is_one_empty_final_chunk() {
    let r = run(vec![], 0, false, &opts("true"));
    assert!(r.texts.is_empty());
    assert_eq!(r.last.unwrap().0, "");
}

#[test]
fn non_zero_exit_ends_with_an_error_line_and_the_code() {
    let r = run(vec![out("out\n"), err("err\n")], 3, false, &opts("echo out; echo err 1>&2; exit 3"));
    let (text, error, meta) = r.last.clone().unwrap();
    assert!(error);
    assert_eq!(text, "Command failed with exit code 3: echo out; echo err 1>&2; exit 3");
    assert_eq!(meta["exit_code"], 3);
    assert_eq!(r.all(), "out\nerr\nCommand failed with exit code 3: echo out; echo err 1>&2; exit 3");
}

#[test]
fn the_error_line_starts_on_its_own_line() {
    let r = run(vec![out("no newline")], 1, false, &opts("printf 'no newline'; false"));
    assert_eq!(r.all(), "no newline\nCommand failed with exit code 1: printf 'no newline'; false");
    let r = run(vec![], 2, false, &opts("exit 2"));
    assert_eq!(r.all(), "Command failed with exit code 2: exit 2");
}

#[test]
fn a_signal_is_named() {
    let r = run(vec![], -1, false, &opts("kill -9 $$"));
    assert_eq!(r.all(), "Command failed with exit code -1 (killed by a signal): kill -9 $$");
}

#[test]
fn timeout_keeps_the_partial_output_and_says_so() {
    let r = run(vec![out("started\n")], -1, true, &opts("echo started; sleep 10"));
    let (text, error, meta) = r.last.clone().unwrap();
    assert!(error);
    assert_eq!(text, "Command timed out after 500ms: echo started; sleep 10");
    assert_eq!(meta, json!({"exit_code": -1, "timed_out": true, "truncated": false}));
    let mut o = opts("echo hi");
    o.timeout_ms = 0;
    assert_eq!(run(vec![], -1, true, &o).all(), "Command timed out after 0ms: echo hi");
}

#[test]
fn truncates_at_the_limit_with_the_reference_note_and_stops_reading() {
    let big = "x".repeat(40_000);
    let mut p = Fake::new(vec![out(&big[..25_000]), out(&big[25_000..]), out("never read\n")], 0, false);
    let mut r = Recorder::default();
    stream(&mut p, &mut r, &opts("yes"));
    assert_eq!(p.read, 2, "reading stops at the cut");
    let all = r.all();
    assert_eq!(all, format!("{}{TRUNCATION_NOTE}", "x".repeat(30_000)));
    assert_eq!(r.last.unwrap().2["truncated"], true);
}

#[test]
fn exactly_the_limit_is_not_truncated() {
    let r = run(vec![out(&"y".repeat(30_000))], 0, false, &opts("y"));
    assert_eq!(r.all().len(), 30_000);
    assert_eq!(r.last.unwrap().2["truncated"], false);
    // One more character, even in a later piece, cuts.
    let r = run(vec![out(&"y".repeat(30_000)), err("z")], 0, false, &opts("y"));
    assert_eq!(r.all(), format!("{}{TRUNCATION_NOTE}", "y".repeat(30_000)));
}

#[test]
fn the_limit_counts_characters_not_bytes() {
    let r = run(vec![out(&"é".repeat(30_001))], 0, false, &opts("x"));
    let all = r.all();
    assert!(all.starts_with(&"é".repeat(30_000)));
    assert_eq!(all.chars().count(), 30_000 + TRUNCATION_NOTE.chars().count());
}

#[test]
fn truncation_then_failure_puts_the_error_on_its_own_line() {
    let r = run(vec![out(&"x".repeat(30_001))], 1, false, &opts("c"));
    assert!(r.all().ends_with("(output truncated)\nCommand failed with exit code 1: c"));
}

#[test]
fn backend_truncation_is_reported() {
    let mut p = Fake::new(vec![out("a")], 0, false);
    p.status.truncated = true;
    let mut r = Recorder::default();
    stream(&mut p, &mut r, &opts("x"));
    assert_eq!(r.last.unwrap().2["truncated"], true);
}

#[test]
fn a_closed_caller_stops_the_stream() {
    let mut p = Fake::new(vec![out("a"), out("b"), out("c")], 0, false);
    let mut r = Recorder { close_after: Some(1), ..Default::default() };
    stream(&mut p, &mut r, &opts("x"));
    assert_eq!(r.texts, ["a"]);
    assert_eq!(p.read, 1);
}

#[test]
fn crlf_is_normalised_even_across_pieces_and_lone_cr_is_kept() {
    let r = run(vec![out("a\r\nb\r"), out("\nc\rd\r")], 0, false, &opts("x"));
    assert_eq!(r.all(), "a\nb\nc\rd\r");
}

#[test]
fn powershell_normalises_every_line_ending() {
    let mut o = opts("x");
    o.endings = LineEndings::All;
    let r = run(vec![out("a\r\nb\r"), out("\nc\rd\r"), err("\r\n"), out("\ne")], 0, false, &o);
    // stdout: a\r\nb\r\nc\rd\r\ne → a\nb\nc\nd\ne ; stderr: \r\n → \n
    assert_eq!(r.all(), "a\nb\nc\nd\n\ne");
}

#[test]
fn streams_keep_separate_line_ending_state() {
    // A \r at the end of stdout is not paired with a \n from stderr.
    let r = run(vec![out("a\r"), err("\nb"), out("c")], 0, false, &opts("x"));
    assert_eq!(r.texts, ["a", "\nb", "\rc"]);
}

#[test]
fn utf8_split_across_pieces_is_decoded_whole() {
    let bytes = "héllo €".as_bytes();
    let pieces: Vec<Piece> = bytes.iter().map(|b| Piece::Stdout(vec![*b])).collect();
    assert_eq!(run(pieces, 0, false, &opts("x")).all(), "héllo €");
}

#[test]
fn invalid_utf8_is_replaced_like_from_utf8_lossy() {
    let cases: [&[u8]; 5] = [b"a\xffb", b"\xe2\x82", b"x\xe2\x82y", b"\xf0\x9f\x98", b"\xc3\xa9\xed\xa0\x80z"];
    for bytes in cases {
        let expected = String::from_utf8_lossy(bytes).into_owned();
        for split in 0..=bytes.len() {
            let mut d = StreamDecoder::new(LineEndings::CrLf);
            let mut got = d.push(&bytes[..split]);
            got.push_str(&d.push(&bytes[split..]));
            got.push_str(&d.finish());
            assert_eq!(got, expected, "{bytes:?} split at {split}");
        }
    }
}

#[test]
fn decoder_matches_whole_decoding_for_every_split() {
    let bytes = "ab\r\n\r\rü\r\nx\r".as_bytes();
    for endings in [LineEndings::CrLf, LineEndings::All] {
        let whole = {
            let mut d = StreamDecoder::new(endings);
            let mut s = d.push(bytes);
            s.push_str(&d.finish());
            s
        };
        for split in 0..=bytes.len() {
            let mut d = StreamDecoder::new(endings);
            let mut got = d.push(&bytes[..split]);
            got.push_str(&d.push(&bytes[split..]));
            got.push_str(&d.finish());
            assert_eq!(got, whole, "{endings:?} split at {split}");
        }
    }
    let mut d = StreamDecoder::new(LineEndings::CrLf);
    assert_eq!(d.push(bytes) + &d.finish(), "ab\n\r\rü\nx\r");
    let mut d = StreamDecoder::new(LineEndings::All);
    assert_eq!(d.push(bytes) + &d.finish(), "ab\n\n\nü\nx\n");
}

#[test]
fn collector_reports_the_separator_need() {
    let mut c = Collector::new(10);
    assert!(!c.needs_separator());
    c.accept("ab\n");
    assert!(!c.needs_separator());
    c.accept("cd");
    assert!(c.needs_separator());
}

#[test]
fn max_output_bytes_leaves_room_for_wide_characters() {
    assert!(opts("x").max_output_bytes() >= 4 * MAX_OUTPUT_CHARS as u64 + 4);
}

#[test]
fn timeout_guard() {
    let n = |v: Value| v.as_number().cloned().unwrap();
    assert_eq!(timeout_ms(None), Ok(120_000));
    assert_eq!(timeout_ms(Some(&n(json!(0)))), Ok(0));
    assert_eq!(timeout_ms(Some(&n(json!(600_000)))), Ok(600_000));
    assert_eq!(timeout_ms(Some(&n(json!(1500.0)))), Ok(1500));
    for bad in [json!(600_001), json!(-1), json!(1.5), json!(1e12)] {
        let e = timeout_ms(Some(&n(bad.clone()))).unwrap_err();
        assert!(e.contains("from 0 to 600000"), "{bad}: {e}");
    }
}
