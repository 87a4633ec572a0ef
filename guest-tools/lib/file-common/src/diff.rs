//! The unified diffs of Write and Edit, in time and memory linear in the
//! size of the files plus a fixed budget of work.
//!
//! The line matching is `similar`'s Myers diff whenever the two texts are
//! a small number of edits apart (every ordinary edit), so those diffs are
//! what they always were. Myers takes time proportional to the size times
//! the number of edits, which is quadratic for a rewrite of a large file,
//! and `similar`'s time limit does nothing on `wasm32` (it has no clock
//! there), so a 60 000-line rewrite took half a minute in the component.
//! Past a budget of work, counted in steps rather than measured in time so
//! the same files always give the same diff, the diff is made as GNU diff
//! and git make large ones: the lines found on only one side are set aside
//! (they cannot match), Myers runs on the rest within a second budget, and
//! whatever it has not matched when that runs out is a replacement.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;

use similar::{Algorithm, DiffOp, DiffTag};

/// The work (diagonal steps plus line comparisons) within which the edit
/// distance must be found for the diff to be `similar`'s exact Myers.
/// Below it, `similar` itself costs a small multiple of this.
const EXACT_BUDGET: u64 = 4_000_000;

/// The work the large-diff path may spend in Myers on the lines both sides
/// share before the rest of the changed region is a replacement.
const BOUNDED_BUDGET: u64 = 16_000_000;

/// A unified diff of `old` → `new` with 3 lines of context and the given
/// `---`/`+++` headers, in the format of Python's `difflib.unified_diff`
/// (hunk ranges `start,len`, `start` alone for one line). A last line
/// without a newline is followed by `\ No newline at end of file` (as GNU
/// diff; difflib would glue the next line on). Identical texts give `""`.
/// Lines end at `\n`, `\r\n` or a lone `\r`. Texts far apart are diffed
/// coarsely past a fixed budget of work (see the module's documentation),
/// never past a time limit, so the result is the same on every machine.
pub fn unified_diff(old: &str, new: &str, from: &str, to: &str) -> String {
    let old_lines = lines(old);
    let new_lines = lines(new);
    let ops = line_ops(&old_lines, &new_lines, EXACT_BUDGET, BOUNDED_BUDGET).ops;
    render(&old_lines, &new_lines, ops, from, to)
}

/// `text` split into lines that keep their ending (`\n`, `\r\n` or a lone
/// `\r`), the last one possibly without: `similar`'s line tokens.
fn lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                out.push(&text[start..=i]);
                start = i + 1;
            }
            b'\r' => {
                let end = if bytes.get(i + 1) == Some(&b'\n') { i + 1 } else { i };
                out.push(&text[start..=end]);
                i = end;
                start = end + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The ops of a line diff, and how it was made (the tests read how).
#[cfg_attr(not(test), allow(dead_code))]
struct LineOps {
    ops: Vec<DiffOp>,
    /// Whether the texts were close enough for `similar`'s exact Myers.
    exact: bool,
    /// The work counted (the exact check's, plus the large path's).
    work: u64,
}

/// The ops turning `old` into `new` (lines), see [`id_ops`].
fn line_ops(old: &[&str], new: &[&str], exact_budget: u64, bounded_budget: u64) -> LineOps {
    let (a, b, distinct) = intern(old, new);
    id_ops(&a, &b, distinct, exact_budget, bounded_budget)
}

/// The ops turning `a` into `b` (line ids below `distinct`): `similar`'s
/// Myers when the edit distance is found within `exact_budget`, else
/// [`bounded_ops`] with `bounded_budget`.
fn id_ops<T>(a: &[T], b: &[T], distinct: usize, exact_budget: u64, bounded_budget: u64) -> LineOps
where
    T: Copy + Into<u32> + std::hash::Hash + Ord,
{
    let mut budget = Budget::new(exact_budget);
    if distance_fits(a, b, &mut budget) {
        let ops = similar::capture_diff_slices(Algorithm::Myers, a, b);
        return LineOps { ops, exact: true, work: budget.used };
    }
    let exact_work = budget.used;
    let mut budget = Budget::new(bounded_budget);
    let ops = bounded_ops(a, b, distinct, &mut budget);
    LineOps { ops, exact: false, work: exact_work + budget.used }
}

/// Each line as a number, equal numbers for equal lines, and how many
/// distinct lines there are.
fn intern<'t>(old: &[&'t str], new: &[&'t str]) -> (Vec<u32>, Vec<u32>, usize) {
    let mut ids: HashMap<&'t str, u32> = HashMap::with_capacity(old.len().max(new.len()));
    let mut id = |line: &'t str| {
        let next = ids.len() as u32;
        *ids.entry(line).or_insert(next)
    };
    let a: Vec<u32> = old.iter().map(|l| id(l)).collect();
    let b: Vec<u32> = new.iter().map(|l| id(l)).collect();
    (a, b, ids.len())
}

/// Counted work: a diagonal step or a comparison costs 1.
struct Budget {
    left: u64,
    used: u64,
}

impl Budget {
    fn new(limit: u64) -> Self {
        Self { left: limit, used: 0 }
    }

    /// Spends `cost`; false once the budget is exhausted.
    fn spend(&mut self, cost: u64) -> bool {
        self.used += cost;
        self.left = self.left.saturating_sub(cost);
        self.left > 0
    }

    fn exhausted(&self) -> bool {
        self.left == 0
    }
}

fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn common_suffix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count()
}

/// Whether the edit distance of `a` and `b` is found within the budget:
/// the greedy forward Myers search, in memory proportional to the square
/// root of the budget (a search to distance `d` costs at least `d²`).
fn distance_fits<T: PartialEq>(a: &[T], b: &[T], budget: &mut Budget) -> bool {
    let pre = common_prefix(a, b);
    let (a, b) = (&a[pre..], &b[pre..]);
    let suf = common_suffix(a, b);
    let (a, b) = (&a[..a.len() - suf], &b[..b.len() - suf]);
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return true;
    }
    let max_d = (n + m).min(budget.left.isqrt() as usize + 2);
    let offset = max_d as isize + 1;
    let mut v = vec![0usize; 2 * max_d + 3];
    for d in 0..=max_d as isize {
        for k in (-d..=d).step_by(2) {
            let i = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[i - 1] < v[i + 1]) { v[i + 1] } else { v[i - 1] + 1 };
            let mut y = (x as isize - k) as usize;
            let start = x;
            while x < n && y < m && a[x] == b[y] {
                x += 1;
                y += 1;
            }
            v[i] = x;
            if x >= n && y >= m {
                return true;
            }
            if !budget.spend(1 + (x - start) as u64) {
                return false;
            }
        }
    }
    false
}

/// The ops of a large diff: the common prefix and suffix are equal; in
/// between, lines that occur only on one side are set aside (nothing can
/// match them), Myers matches the rest within the budget, and what is left
/// unmatched between two matched lines is deleted and inserted. `distinct`
/// bounds the ids in `a` and `b`.
fn bounded_ops<T: PartialEq + Copy + Into<u32>>(a: &[T], b: &[T], distinct: usize, budget: &mut Budget) -> Vec<DiffOp> {
    let pre = common_prefix(a, b);
    let suf = common_suffix(&a[pre..], &b[pre..]);
    let (a_mid, b_mid) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut in_a = vec![false; distinct];
    let mut in_b = vec![false; distinct];
    let id = |line: T| line.into() as usize;
    a_mid.iter().for_each(|&line| in_a[id(line)] = true);
    b_mid.iter().for_each(|&line| in_b[id(line)] = true);
    // Positions (in a_mid, b_mid) of the lines kept, and the kept lines.
    let keep_a: Vec<usize> = (0..a_mid.len()).filter(|&i| in_b[id(a_mid[i])]).collect();
    let keep_b: Vec<usize> = (0..b_mid.len()).filter(|&j| in_a[id(b_mid[j])]).collect();
    let ra: Vec<T> = keep_a.iter().map(|&i| a_mid[i]).collect();
    let rb: Vec<T> = keep_b.iter().map(|&j| b_mid[j]).collect();
    let mut matched = Vec::new();
    let mut myers = Myers::new(ra.len(), rb.len());
    let (mut i, mut j) = (0, 0);
    for (x, y) in anchors(&ra, &rb, distinct).into_iter().chain([(ra.len(), rb.len())]) {
        myers.conquer(&ra, i..x, &rb, j..y, budget, &mut matched);
        matched.push((x, y));
        (i, j) = (x + 1, y + 1);
    }
    matched.pop();
    let prefix = (0..pre).map(|i| (i, i));
    let middle = matched.into_iter().map(|(i, j)| (pre + keep_a[i], pre + keep_b[j]));
    let suffix = (0..suf).map(|t| (a.len() - suf + t, b.len() - suf + t));
    ops_from_pairs(prefix.chain(middle).chain(suffix), a.len(), b.len())
}

/// The anchors of patience diff: the pairs of lines that occur exactly
/// once in `a` and once in `b`, the longest chain of them increasing on
/// both sides (`O(n log n)`), so a moved block is matched where it is
/// longest instead of costing Myers its length squared.
fn anchors<T: Copy + Into<u32>>(a: &[T], b: &[T], distinct: usize) -> Vec<(usize, usize)> {
    let id = |line: T| line.into() as usize;
    let (mut in_a, mut in_b) = (vec![0u8; distinct], vec![0u8; distinct]);
    let mut at_b = vec![0usize; distinct];
    a.iter().for_each(|&line| in_a[id(line)] = in_a[id(line)].saturating_add(1));
    for (j, &line) in b.iter().enumerate() {
        in_b[id(line)] = in_b[id(line)].saturating_add(1);
        at_b[id(line)] = j;
    }
    let unique: Vec<(usize, usize)> =
        (0..a.len()).filter(|&i| in_a[id(a[i])] == 1 && in_b[id(a[i])] == 1).map(|i| (i, at_b[id(a[i])])).collect();
    // Longest increasing subsequence of the `b` positions (patience sorting):
    // `tails[k]` is the candidate ending the best chain of length k + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut before: Vec<Option<usize>> = vec![None; unique.len()];
    for (c, &(_, j)) in unique.iter().enumerate() {
        let k = tails.partition_point(|&t| unique[t].1 < j);
        before[c] = k.checked_sub(1).map(|p| tails[p]);
        if k == tails.len() {
            tails.push(c);
        } else {
            tails[k] = c;
        }
    }
    let mut chain = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(c) = at {
        chain.push(unique[c]);
        at = before[c];
    }
    chain.reverse();
    chain
}

/// The ops of a matching (pairs of equal lines, increasing on both sides):
/// runs of pairs are equal, and the lines between two pairs a deletion, an
/// insertion or a replacement (deleted lines shown before inserted ones, as
/// `similar` orders them).
fn ops_from_pairs(pairs: impl Iterator<Item = (usize, usize)>, n: usize, m: usize) -> Vec<DiffOp> {
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    for (x, y) in pairs.chain(std::iter::once((n, m))) {
        match (x - i, y - j) {
            (0, 0) => {}
            (old_len, 0) => ops.push(DiffOp::Delete { old_index: i, old_len, new_index: j }),
            (0, new_len) => ops.push(DiffOp::Insert { old_index: i, new_index: j, new_len }),
            (old_len, new_len) => ops.push(DiffOp::Replace { old_index: i, old_len, new_index: j, new_len }),
        }
        if (x, y) == (n, m) {
            break;
        }
        match ops.last_mut() {
            Some(DiffOp::Equal { len, .. }) if x == i && y == j => *len += 1,
            _ => ops.push(DiffOp::Equal { old_index: x, new_index: y, len: 1 }),
        }
        (i, j) = (x + 1, y + 1);
    }
    ops
}

/// Where the furthest path on diagonal `k` starts after `d` edits, from
/// the furthest reaches `v` (indexed `k + offset`) of the `d - 1` paths: a
/// step down from diagonal `k + 1`, or right from `k - 1`, whichever got
/// further (Myers 1986, section 2). The same for both directions.
fn furthest_start(v: &[usize], offset: isize, k: isize, d: isize) -> isize {
    let at = |k: isize| v[(k + offset) as usize];
    if k == -d || (k != d && at(k - 1) < at(k + 1)) { at(k + 1) as isize } else { at(k - 1) as isize + 1 }
}

/// Linear-space Myers (divide at the middle snake) within a budget: once
/// it is spent, each range still to divide is left unmatched.
struct Myers {
    forward: Vec<usize>,
    backward: Vec<usize>,
    offset: isize,
}

impl Myers {
    fn new(n: usize, m: usize) -> Self {
        let max_d = (n + m).div_ceil(2) + 1;
        Self { forward: vec![0; 2 * max_d + 1], backward: vec![0; 2 * max_d + 1], offset: max_d as isize }
    }

    /// Pushes the matched pairs of `a[ar]` and `b[br]`, in order.
    fn conquer<T: PartialEq>(
        &mut self,
        a: &[T],
        mut ar: Range<usize>,
        b: &[T],
        mut br: Range<usize>,
        budget: &mut Budget,
        matched: &mut Vec<(usize, usize)>,
    ) {
        let pre = common_prefix(&a[ar.clone()], &b[br.clone()]);
        matched.extend((0..pre).map(|t| (ar.start + t, br.start + t)));
        ar.start += pre;
        br.start += pre;
        let suf = common_suffix(&a[ar.clone()], &b[br.clone()]);
        ar.end -= suf;
        br.end -= suf;
        budget.spend((pre + suf) as u64 + 1);
        if !ar.is_empty()
            && !br.is_empty()
            && !budget.exhausted()
            && let Some((x, y)) = self.middle_snake(a, ar.clone(), b, br.clone(), budget)
        {
            self.conquer(a, ar.start..x, b, br.start..y, budget, matched);
            self.conquer(a, x..ar.end, b, y..br.end, budget, matched);
        }
        matched.extend((0..suf).map(|t| (ar.end + t, br.end + t)));
    }

    /// The start of the middle snake of an optimal path through `a[ar]`
    /// and `b[br]` (Myers 1986, section 4b), or `None` once the budget is
    /// spent.
    fn middle_snake<T: PartialEq>(
        &mut self,
        a: &[T],
        ar: Range<usize>,
        b: &[T],
        br: Range<usize>,
        budget: &mut Budget,
    ) -> Option<(usize, usize)> {
        let (n, m) = (ar.len() as isize, br.len() as isize);
        let delta = n - m;
        let odd = delta & 1 == 1;
        let off = self.offset;
        let idx = |k: isize| (k + off) as usize;
        self.forward[idx(1)] = 0;
        self.backward[idx(1)] = 0;
        let d_max = (n + m + 1) / 2 + 1;
        for d in 0..d_max {
            for k in (-d..=d).rev().step_by(2) {
                let mut x = furthest_start(&self.forward, off, k, d);
                let vf = &mut self.forward;
                let mut y = x - k;
                let (x0, y0) = (x, y);
                while x < n && y < m && a[ar.start + x as usize] == b[br.start + y as usize] {
                    x += 1;
                    y += 1;
                }
                vf[idx(k)] = x as usize;
                if !budget.spend(1 + (x - x0) as u64) {
                    return None;
                }
                if odd && (k - delta).abs() < d && x + self.backward[idx(-(k - delta))] as isize >= n {
                    return Some((ar.start + x0 as usize, br.start + y0 as usize));
                }
            }
            for k in (-d..=d).rev().step_by(2) {
                let mut x = furthest_start(&self.backward, off, k, d);
                let vb = &mut self.backward;
                let mut y = x - k;
                let x0 = x;
                while x < n && y < m && a[ar.start + (n - x - 1) as usize] == b[br.start + (m - y - 1) as usize] {
                    x += 1;
                    y += 1;
                }
                vb[idx(k)] = x as usize;
                if !budget.spend(1 + (x - x0) as u64) {
                    return None;
                }
                if !odd && (k - delta).abs() <= d && x + self.forward[idx(-(k - delta))] as isize >= n {
                    return Some((ar.start + (n - x) as usize, br.start + (m - y) as usize));
                }
            }
        }
        None
    }
}

/// The unified diff text of `ops`, as `similar`'s `UnifiedDiff` writes it
/// (3 lines of context, `\ No newline at end of file` after a last line
/// without one), or `""` when nothing changed.
fn render(old: &[&str], new: &[&str], ops: Vec<DiffOp>, from: &str, to: &str) -> String {
    let groups = similar::group_diff_ops(ops, 3);
    if groups.is_empty() {
        return String::new();
    }
    let mut out = format!("--- {from}\n+++ {to}\n");
    for group in groups {
        let (first, last) = (&group[0], &group[group.len() - 1]);
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let _ = writeln!(out, "@@ -{} +{} @@", hunk_range(&old_range), hunk_range(&new_range));
        for op in &group {
            let (tag, old_lines, new_lines) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => push_lines(&mut out, ' ', &old[old_lines]),
                DiffTag::Delete => push_lines(&mut out, '-', &old[old_lines]),
                DiffTag::Insert => push_lines(&mut out, '+', &new[new_lines]),
                DiffTag::Replace => {
                    push_lines(&mut out, '-', &old[old_lines]);
                    push_lines(&mut out, '+', &new[new_lines]);
                }
            }
        }
    }
    out
}

fn push_lines(out: &mut String, tag: char, lines: &[&str]) {
    for line in lines {
        out.push(tag);
        out.push_str(line);
        if !line.ends_with(['\n', '\r']) {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

/// A hunk's range: `start,len`, `start` alone for one line, and the line
/// before for an empty range (`0,0` at the top).
fn hunk_range(range: &Range<usize>) -> String {
    match range.len() {
        1 => format!("{}", range.start + 1),
        0 => format!("{},0", range.start),
        len => format!("{},{len}", range.start + 1),
    }
}

#[cfg(test)]
mod tests;
