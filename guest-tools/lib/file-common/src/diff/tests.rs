use std::cell::Cell;

use proptest::prelude::*;

use super::*;

/// What the diff was before this module: `similar`'s unified diff of
/// `similar`'s Myers (with no time limit, as on `wasm32`).
fn similar_diff(old: &str, new: &str) -> String {
    similar::TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("a/f", "b/f")
        .to_string()
}

/// Texts of up to `max` lines over a few distinct lines, with every kind of
/// line ending and sometimes none at the end: Myers' worst ties.
fn text(max: usize) -> impl Strategy<Value = String> {
    let line = prop::sample::select(vec!["a", "b", "c", "x y", "", "}", "é"]);
    let ending = prop::sample::select(vec!["\n", "\n", "\n", "\r\n", "\r"]);
    (prop::collection::vec((line, ending), 0..max), any::<bool>()).prop_map(|(lines, cut)| {
        let mut s: String = lines.iter().map(|(l, e)| format!("{l}{e}")).collect();
        if cut && s.ends_with('\n') {
            s.pop();
            s.push('z');
        }
        s
    })
}

/// `old` with `ops` applied, checking that every equal line is equal.
fn apply(old: &[&str], new: &[&str], ops: &[DiffOp]) -> String {
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    for op in ops {
        let (tag, o, n) = op.as_tag_tuple();
        assert_eq!((o.start, n.start), (i, j), "ops are contiguous: {ops:?}");
        if tag == DiffTag::Equal {
            assert_eq!(old[o.clone()], new[n.clone()], "equal lines are equal");
        }
        out.extend(new[n.clone()].iter().copied());
        (i, j) = (o.end, n.end);
    }
    assert_eq!((i, j), (old.len(), new.len()), "ops cover both texts");
    out
}

/// `old` patched with a unified diff of it, checking every context and
/// deleted line against `old`.
fn patch(old: &str, diff: &str) -> String {
    // (tag, line) in order, the newline added after a last line without one removed.
    let mut entries: Vec<(char, String)> = Vec::new();
    for line in lines(diff).into_iter().skip(2) {
        if line.starts_with('\\') {
            entries.last_mut().expect("a line before the marker").1.pop();
        } else if let Some(header) = line.strip_prefix("@@ -") {
            entries.push(('@', header.split(' ').next().unwrap().to_string()));
        } else {
            let (tag, body) = line.split_at(1);
            entries.push((tag.chars().next().unwrap(), body.to_string()));
        }
    }
    let old = lines(old);
    let (mut out, mut at) = (String::new(), 0);
    for (tag, body) in entries {
        match tag {
            '@' => {
                let mut parts = body.split(',').map(|n| n.parse::<usize>().unwrap());
                let start = parts.next().unwrap();
                let start = if parts.next() == Some(0) { start } else { start - 1 };
                out.extend(old[at..start].iter().copied());
                at = start;
            }
            ' ' | '-' => {
                assert_eq!(old[at], body);
                at += 1;
                if tag == ' ' {
                    out.push_str(&body);
                }
            }
            '+' => out.push_str(&body),
            _ => panic!("not a diff line: {tag}{body:?}"),
        }
    }
    out.extend(old[at..].iter().copied());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Within the exact budget the diff is `similar`'s, byte for byte.
    #[test]
    fn ordinary_diffs_are_what_they_were(old in text(150), new in text(150)) {
        prop_assert_eq!(unified_diff(&old, &new, "a/f", "b/f"), similar_diff(&old, &new));
    }

    /// Past any budget the diff still turns the old text into the new one.
    #[test]
    fn large_diffs_are_correct(old in text(60), new in text(60), budget in 0u64..400) {
        let (o, n) = (lines(&old), lines(&new));
        for bounded in [budget, u64::MAX] {
            let r = line_ops(&o, &n, 0, bounded);
            prop_assert_eq!(apply(&o, &n, &r.ops), new.clone());
            let text = render(&o, &n, r.ops.clone(), "a/f", "b/f");
            prop_assert_eq!(patch(&old, &text), new.clone(), "{}", text);
        }
    }
}

/// The matched pairs of `similar`'s own Myers (no compaction) of `a` → `b`.
fn similar_pairs(a: &[u32], b: &[u32]) -> Vec<(usize, usize)> {
    let mut capture = similar::algorithms::Capture::new();
    similar::algorithms::myers::diff(&mut capture, a, 0..a.len(), b, 0..b.len()).unwrap();
    let mut pairs = Vec::new();
    for op in capture.into_ops() {
        if let DiffOp::Equal { old_index, new_index, len } = op {
            pairs.extend((0..len).map(|t| (old_index + t, new_index + t)));
        }
    }
    pairs
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// With budget enough, the large path's Myers is `similar`'s, pair for pair.
    #[test]
    fn the_bounded_myers_is_similars(
        a in prop::collection::vec(0u32..4, 0..40),
        b in prop::collection::vec(0u32..4, 0..40),
    ) {
        let mut matched = Vec::new();
        Myers::new(a.len(), b.len()).conquer(&a, 0..a.len(), &b, 0..b.len(), &mut Budget::new(u64::MAX), &mut matched);
        prop_assert_eq!(matched, similar_pairs(&a, &b));
    }
}

#[test]
fn line_endings_and_the_last_line() {
    assert_eq!(lines("a\nb\r\nc\rd"), ["a\n", "b\r\n", "c\r", "d"]);
    assert_eq!(lines("\r\r\n\n"), ["\r", "\r\n", "\n"]);
    assert!(lines("").is_empty());
    assert_eq!(unified_diff("", "", "a", "b"), "");
    assert_eq!(unified_diff("a\n", "", "a", "b"), "--- a\n+++ b\n@@ -1 +0,0 @@\n-a\n");
}

thread_local! {
    static COMPARISONS: Cell<u64> = const { Cell::new(0) };
}

/// A line id that counts how often it is compared.
#[derive(Clone, Copy, Debug, Eq, PartialOrd, Ord)]
struct Counted(u32);

impl std::hash::Hash for Counted {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialEq for Counted {
    fn eq(&self, other: &Self) -> bool {
        COMPARISONS.with(|c| c.set(c.get() + 1));
        self.0 == other.0
    }
}

impl From<Counted> for u32 {
    fn from(line: Counted) -> u32 {
        line.0
    }
}

/// The work and the line comparisons [`id_ops`] spends on `a` → `b`
/// (line ids), and whether it took the exact path; its ops must turn one
/// into the other.
fn cost(a: &[u32], b: &[u32]) -> (u64, u64, bool) {
    let distinct = a.iter().chain(b).max().map_or(0, |&m| m as usize + 1);
    let counted = |ids: &[u32]| ids.iter().map(|&i| Counted(i)).collect::<Vec<_>>();
    let (ca, cb) = (counted(a), counted(b));
    COMPARISONS.with(|c| c.set(0));
    let r = id_ops(&ca, &cb, distinct, EXACT_BUDGET, BOUNDED_BUDGET);
    let comparisons = COMPARISONS.with(Cell::get);
    let text = |ids: &[u32]| ids.iter().map(|i| format!("{i}\n")).collect::<Vec<_>>();
    let (ta, tb) = (text(a), text(b));
    let (sa, sb): (Vec<&str>, Vec<&str>) =
        (ta.iter().map(String::as_str).collect(), tb.iter().map(String::as_str).collect());
    assert_eq!(apply(&sa, &sb, &r.ops), tb.concat());
    (r.work, comparisons, r.exact)
}

/// The rewrites that made a 60 000-line Write take half a minute in the
/// component cost at most the two budgets (plus a pass over the lines),
/// counted both as work and as actual line comparisons.
#[test]
fn a_rewrite_of_60000_lines_costs_at_most_the_budgets() {
    let n = 60_000u32;
    let same: Vec<u32> = (0..n).collect();
    let cases: [(&str, Vec<u32>, Vec<u32>); 5] = [
        ("every line new", same.clone(), (n..2 * n).collect()),
        ("reversed", same.clone(), same.iter().rev().copied().collect()),
        ("two halves swapped", same.clone(), (n / 2..n).chain(0..n / 2).collect()),
        ("every other line new", same.clone(), (0..n).map(|i| if i % 2 == 0 { i } else { n + i }).collect()),
        ("pairs swapped", same.clone(), (0..n).map(|i| i ^ 1).collect()),
    ];
    let bound = EXACT_BUDGET + BOUNDED_BUDGET + 4 * n as u64;
    for (name, a, b) in cases {
        let (work, comparisons, _) = cost(&a, &b);
        assert!(work <= bound, "{name}: {work} units of work");
        assert!(comparisons <= bound, "{name}: {comparisons} comparisons");
    }
}

/// An ordinary edit of a large file (a few scattered lines) stays on the
/// exact path, so its diff is what it always was.
#[test]
fn ordinary_edits_of_large_files_are_exact() {
    let n = 200_000u32;
    let a: Vec<u32> = (0..n).collect();
    let mut b = a.clone();
    for i in (0..n as usize).step_by(2_000) {
        b[i] = n + i as u32;
    }
    b.insert(1_000, 3 * n);
    assert!(cost(&a, &b).2);
    let one: String = (0..60_000).map(|i| format!("line {i}\n")).collect();
    let two = one.replacen("line 31337\n", "LINE 31337\n", 1);
    let r = line_ops(&lines(&one), &lines(&two), EXACT_BUDGET, BOUNDED_BUDGET);
    assert!(r.exact && r.work < 1_000, "{}", r.work);
    assert_eq!(unified_diff(&one, &two, "a/f", "b/f"), similar_diff(&one, &two));
}

/// A block moved in a large file is one deletion and one insertion around
/// the lines that stayed in order (patience's anchors), not a replacement
/// of everything.
#[test]
fn a_moved_block_is_deleted_and_inserted() {
    let line = |i: usize| format!("line {i}\n");
    let one: String = (0..60_000).map(line).collect();
    let two: String = (40_000..60_000).chain(0..40_000).map(line).collect();
    let (o, n) = (lines(&one), lines(&two));
    let r = line_ops(&o, &n, EXACT_BUDGET, BOUNDED_BUDGET);
    assert!(!r.exact);
    assert_eq!(
        r.ops,
        [
            DiffOp::Insert { old_index: 0, new_index: 0, new_len: 20_000 },
            DiffOp::Equal { old_index: 0, new_index: 20_000, len: 40_000 },
            DiffOp::Delete { old_index: 40_000, old_len: 20_000, new_index: 60_000 },
        ]
    );
    assert_eq!(patch(&one, &unified_diff(&one, &two, "a/f", "b/f")), two);
}

/// A whole new content is one replacement, as the exact diff has it.
#[test]
fn a_whole_new_content_is_one_replacement() {
    let one: String = (0..60_000).map(|i| format!("old {i}\n")).collect();
    let two: String = (0..60_000).map(|i| format!("new {i}\n")).collect();
    let (o, n) = (lines(&one), lines(&two));
    let r = line_ops(&o, &n, EXACT_BUDGET, BOUNDED_BUDGET);
    assert!(!r.exact);
    assert_eq!(r.ops, [DiffOp::Replace { old_index: 0, old_len: 60_000, new_index: 0, new_len: 60_000 }]);
    let diff = unified_diff(&one, &two, "a/f", "b/f");
    assert!(diff.starts_with("--- a/f\n+++ b/f\n@@ -1,60000 +1,60000 @@\n-old 0\n"), "{}", &diff[..60]);
    assert_eq!(patch(&one, &diff), two);
}
