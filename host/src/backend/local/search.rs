//! Native walk and search: `ignore`'s walkers with ripgrep's defaults, and
//! ripgrep's search engine (`grep-searcher`, `grep-regex`). A walk starts in
//! the calling thread and goes parallel only when the tree proves large
//! ([`run_walk`]).
//!
//! Callers have already checked that the start path resolves inside the
//! scope; this module keeps the walk inside it (`real_roots`) when symlinks
//! are followed, and leaves toolhost's own files (`protected`) out.

use crate::sync::MutexExt;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::{WalkBuilder, WalkState};

use crate::backend::{
    BackendError, DirEntry, EntryKind, SearchFile, SearchLine, SearchMode, SearchRequest, WalkOptions,
};
use crate::protected::ProtectedPaths;

/// Version-control directories that are never walked (as the Grep tool's
/// `--glob !.git ...` in the reference).
pub(super) const VCS_DIRS: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// Builds the regex matcher as ripgrep does: `^`/`$` match at line
/// boundaries; line-oriented (no match crosses `\n`) unless `multiline`, in
/// which case `.` also matches `\n`.
pub(super) fn build_matcher(req: &SearchRequest) -> Result<RegexMatcher, BackendError> {
    let mut b = RegexMatcherBuilder::new();
    b.case_insensitive(req.case_insensitive).multi_line(true).unicode(true).octal(false);
    if req.multiline {
        b.dot_matches_new_line(true);
    } else {
        b.line_terminator(Some(b'\n'));
    }
    b.build(&req.pattern).map_err(|e| {
        BackendError::Invalid(format!(
            "invalid regular expression {:?}: {e}; the pattern uses Rust regex syntax \
             (escape metacharacters such as ( [ {{ . * + ? with a backslash)",
            req.pattern
        ))
    })
}

/// A configured walker over `start`.
fn walker(
    start: &Path,
    opts: &WalkOptions,
    real_roots: &[PathBuf],
    protected: &ProtectedPaths,
) -> Result<WalkBuilder, BackendError> {
    let mut b = WalkBuilder::new(start);
    let r = opts.respect_ignore_files;
    b.hidden(!opts.hidden)
        .ignore(r)
        .git_ignore(r)
        .git_global(r)
        .git_exclude(r)
        .parents(r)
        .follow_links(opts.follow_symlinks)
        .threads(threads());
    if r {
        b.add_custom_ignore_filename(".rgignore");
    }
    if !opts.globs.is_empty() {
        let mut ob = OverrideBuilder::new(start);
        for g in &opts.globs {
            ob.add(g).map_err(|e| {
                BackendError::Invalid(format!(
                    "invalid glob {g:?}: {e}; globs use gitignore syntax (`*.rs`, `src/**`, `!target/**`)"
                ))
            })?;
        }
        let ov = ob.build().map_err(|e| BackendError::Invalid(format!("invalid globs {:?}: {e}", opts.globs)))?;
        b.overrides(ov);
    }
    if let Some(name) = opts.file_type.as_deref().filter(|t| !t.is_empty()) {
        let mut tb = TypesBuilder::new();
        tb.add_defaults();
        if !tb.definitions().iter().any(|d| d.name() == name) {
            let mut known: Vec<String> = tb.definitions().iter().map(|d| d.name().to_string()).collect();
            known.sort();
            let sample: Vec<&str> = ["c", "cpp", "go", "java", "js", "json", "md", "py", "rust", "sh", "ts", "toml"]
                .into_iter()
                .filter(|k| known.iter().any(|n| n == k))
                .collect();
            return Err(BackendError::Invalid(format!(
                "unknown file type {name:?}; use one of ripgrep's type names, e.g. {} ({} known: `rg --type-list`)",
                sample.join(", "),
                known.len()
            )));
        }
        tb.select(name);
        let types = tb.build().map_err(|e| BackendError::Invalid(format!("file type {name:?}: {e}")))?;
        b.types(types);
    }
    let follow = opts.follow_symlinks;
    let roots = real_roots.to_vec();
    let protected = protected.clone();
    b.filter_entry(move |e| {
        if e.depth() > 0 && e.file_name().to_str().is_some_and(|n| VCS_DIRS.contains(&n)) {
            return false;
        }
        // toolhost's own files are left out silently, as if absent.
        if protected.covering(e.path()).is_some() {
            return false;
        }
        if follow && e.path_is_symlink() {
            return inside(e.path(), &roots, &protected);
        }
        true
    });
    Ok(b)
}

/// What a walk calls for each entry it finds. It answers `Continue` or
/// `Quit` (`Skip` cannot be honoured by the in-thread walker).
type Visitor<'s> = Box<dyn FnMut(Result<ignore::DirEntry, ignore::Error>) -> WalkState + Send + 's>;

/// A walk visits at most this many entries in the calling thread before it
/// starts over in parallel ([`run_walk`]).
pub(super) const SEQUENTIAL_ENTRIES: usize = 2_000;

/// ... or spends at most this long there.
const SEQUENTIAL_TIME: Duration = Duration::from_millis(4);

/// Runs a walk with the visitors `visitor` makes. A small tree is walked in
/// the calling thread: `ignore`'s parallel walker starts a thread per core,
/// and an idle worker sleeps a millisecond before it looks for work again,
/// which costs more than a whole walk of a few folders (a Glob of five files
/// took 1.5 ms, all of it waiting). Once the walk has visited
/// [`SEQUENTIAL_ENTRIES`] entries or taken [`SEQUENTIAL_TIME`], the tree is
/// large enough for threads to pay: `restart` discards what the visitor
/// gathered and the walk runs again from the start in parallel.
fn run_walk<'s>(builder: &WalkBuilder, visitor: impl Fn() -> Visitor<'s>, restart: impl FnOnce()) {
    let started = Instant::now();
    let mut visit = visitor();
    let mut walk = builder.build();
    let mut visited = 0usize;
    loop {
        let Some(entry) = walk.next() else { return };
        visited += 1;
        if visited > SEQUENTIAL_ENTRIES || (visited.is_multiple_of(64) && started.elapsed() > SEQUENTIAL_TIME) {
            break;
        }
        if matches!(visit(entry), WalkState::Quit) {
            return;
        }
    }
    drop(visit);
    restart();
    builder.build_parallel().run(visitor);
}

/// The parallel walker's thread count, found once: `available_parallelism`
/// reads the process's cgroup files (a dozen system calls) every time.
fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(12))
}

/// Whether the real path of `p` is under one of `roots` and not one of
/// toolhost's own files.
fn inside(p: &Path, roots: &[PathBuf], protected: &ProtectedPaths) -> bool {
    match std::fs::canonicalize(p) {
        Ok(real) => roots.iter().any(|r| real.starts_with(r)) && protected.covering(&real).is_none(),
        Err(_) => false,
    }
}

/// Whether `file` is another hard link to one of toolhost's own files.
fn is_protected_link(file: &File, protected: &ProtectedPaths) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    if protected.is_empty() {
        return false;
    }
    let Ok(meta) = file.metadata() else { return true };
    meta.nlink() > 1
        && protected
            .entries()
            .iter()
            .any(|e| std::fs::metadata(&e.path).is_ok_and(|p| p.dev() == meta.dev() && p.ino() == meta.ino()))
}

fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    let secs = meta.mtime();
    if secs < 0 {
        0
    } else {
        (secs as u64).saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec().max(0) as u64)
    }
}

/// Walks from `start`, returning files (and, when symlinks are not followed,
/// symlinks whose real target is a file inside the roots), sorted by path.
pub(super) fn walk(
    start: &Path,
    opts: &WalkOptions,
    real_roots: &[PathBuf],
    protected: &ProtectedPaths,
) -> Result<Vec<DirEntry>, BackendError> {
    let builder = walker(start, opts, real_roots, protected)?;
    let names = name_filter(&opts.match_names)?;
    let found = Mutex::new(Vec::new());
    let seen = AtomicUsize::new(0);
    let max = opts.max_entries as usize;
    let follow = opts.follow_symlinks;
    let visitor = || -> Visitor<'_> {
        let found = &found;
        let seen = &seen;
        let names = &names;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            let Some(ft) = entry.file_type() else {
                return WalkState::Continue;
            };
            // Filter by name before anything is stat'ed: on a large tree
            // the stat of every non-matching file is most of the cost.
            if let Some(set) = names
                && !ft.is_dir()
                && !set.is_match(entry.file_name())
            {
                return WalkState::Continue;
            }
            let kind = if ft.is_file() {
                if entry.path_is_symlink() { EntryKind::Symlink } else { EntryKind::File }
            } else if ft.is_symlink() && !follow {
                let target_is_file = std::fs::metadata(entry.path()).map(|m| m.is_file()).unwrap_or(false);
                if !target_is_file || !inside(entry.path(), real_roots, protected) {
                    return WalkState::Continue;
                }
                EntryKind::Symlink
            } else {
                return WalkState::Continue;
            };
            if max > 0 && seen.fetch_add(1, Ordering::Relaxed) >= max {
                return WalkState::Quit;
            }
            let (size, mtime) = match entry.metadata() {
                Ok(m) => (m.len(), mtime_ns(&m)),
                Err(_) => (0, 0),
            };
            let item = DirEntry { path: entry.path().to_string_lossy().into_owned(), kind, size, mtime_ns: mtime };
            found.lock_unpoisoned().push(item);
            WalkState::Continue
        })
    };
    run_walk(&builder, visitor, || {
        found.lock_unpoisoned().clear();
        seen.store(0, Ordering::Relaxed);
    });
    let mut out = found.into_inner_unpoisoned();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// How many compiled `match_names` filters are kept ([`name_filter`]).
const NAME_FILTERS_KEPT: usize = 64;

/// The most text (all globs together) a kept filter may have: a guest
/// chooses `match_names`, and what is kept outlives its call. A larger set
/// is compiled for its walk and dropped with it.
const NAME_FILTER_KEPT_BYTES: usize = 4096;

/// The `match_names` filter, or `None` when every name is wanted. Compiled
/// sets are kept by their globs (at most [`NAME_FILTERS_KEPT`], all dropped
/// when full): an agent globs the same patterns again and again, and
/// compiling one (a regex per extension group) was a sixth of a small Glob.
fn name_filter(globs: &[String]) -> Result<Option<Arc<globset::GlobSet>>, BackendError> {
    static KEPT: LazyLock<Mutex<HashMap<Vec<String>, Arc<globset::GlobSet>>>> = LazyLock::new(Default::default);
    if globs.is_empty() {
        return Ok(None);
    }
    if let Some(set) = KEPT.lock_unpoisoned().get(globs) {
        return Ok(Some(set.clone()));
    }
    let mut builder = globset::GlobSetBuilder::new();
    for g in globs {
        let glob =
            globset::GlobBuilder::new(g).literal_separator(true).backslash_escape(true).build().map_err(|e| {
                BackendError::Invalid(format!(
                    "invalid name glob {g:?}: {e}; name globs match file names (`*.rs`, `Cargo.{{toml,lock}}`)"
                ))
            })?;
        builder.add(glob);
    }
    let set =
        Arc::new(builder.build().map_err(|e| BackendError::Invalid(format!("invalid name globs {globs:?}: {e}")))?);
    if globs.iter().map(String::len).sum::<usize>() > NAME_FILTER_KEPT_BYTES {
        return Ok(Some(set));
    }
    let mut kept = KEPT.lock_unpoisoned();
    if kept.len() >= NAME_FILTERS_KEPT {
        kept.clear();
    }
    kept.insert(globs.to_vec(), set.clone());
    Ok(Some(set))
}

/// Searches the files under `start` (in parallel when the tree is large);
/// results sorted by path.
pub(super) fn search(
    start: &Path,
    req: &SearchRequest,
    real_roots: &[PathBuf],
    protected: &ProtectedPaths,
    matcher: RegexMatcher,
) -> Result<Vec<SearchFile>, BackendError> {
    let builder = walker(start, &req.files, real_roots, protected)?;
    let names = name_filter(&req.files.match_names)?;
    let results = Mutex::new(Vec::new());
    let seen = AtomicUsize::new(0);
    let max = req.files.max_entries as usize;
    let follow = req.files.follow_symlinks;
    let content = req.mode == SearchMode::Content;
    let mut sb = SearcherBuilder::new();
    sb.line_number(content).binary_detection(BinaryDetection::quit(b'\x00')).multi_line(req.multiline);
    if content {
        sb.before_context(req.before_context as usize).after_context(req.after_context as usize);
    }
    let visitor = || -> Visitor<'_> {
        let results = &results;
        let seen = &seen;
        let names = &names;
        let matcher = matcher.clone();
        let mut searcher = sb.build();
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            // Only regular files (the target's type when following links).
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            if names.as_ref().is_some_and(|set| !set.is_match(entry.file_name())) {
                return WalkState::Continue;
            }
            if max > 0 && seen.fetch_add(1, Ordering::Relaxed) >= max {
                return WalkState::Quit;
            }
            let mut open = std::fs::OpenOptions::new();
            open.read(true);
            if !follow {
                open.custom_flags(libc::O_NOFOLLOW);
            }
            let Ok(file) = open.open(entry.path()) else {
                return WalkState::Continue;
            };
            if is_protected_link(&file, protected) {
                return WalkState::Continue;
            }
            if let Some(found) = search_file(&mut searcher, &matcher, &file, entry.path(), req) {
                results.lock_unpoisoned().push(found);
            }
            WalkState::Continue
        })
    };
    run_walk(&builder, visitor, || {
        results.lock_unpoisoned().clear();
        seen.store(0, Ordering::Relaxed);
    });
    let mut out = results.into_inner_unpoisoned();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: &File,
    path: &Path,
    req: &SearchRequest,
) -> Option<SearchFile> {
    let mut sink = Collect {
        mode: req.mode,
        multiline: req.multiline,
        max_columns: req.max_columns as usize,
        count: 0,
        lines: Vec::new(),
        gap: false,
    };
    // Read errors (a file vanishing, an unreadable file) skip the file, as rg.
    searcher.search_file(matcher, file, &mut sink).ok()?;
    if sink.count == 0 {
        return None;
    }
    Some(SearchFile { path: path.to_string_lossy().into_owned(), count: sink.count, lines: sink.lines })
}

/// Collects one file's results in the shape of the request's mode.
struct Collect {
    mode: SearchMode,
    multiline: bool,
    max_columns: usize,
    count: u64,
    lines: Vec<SearchLine>,
    gap: bool,
}

impl Collect {
    fn push(&mut self, line_number: u64, raw: &[u8], is_context: bool) {
        // rg's --max-columns measures the line with its terminator.
        let text = if self.max_columns > 0 && raw.len() > self.max_columns {
            if is_context { "[Omitted long context line]" } else { "[Omitted long matching line]" }.to_string()
        } else {
            let mut t = raw.strip_suffix(b"\n").unwrap_or(raw);
            t = t.strip_suffix(b"\r").unwrap_or(t);
            String::from_utf8_lossy(t).into_owned()
        };
        let gap_before = std::mem::take(&mut self.gap);
        self.lines.push(SearchLine { line_number, text, is_context, gap_before });
    }
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        match self.mode {
            SearchMode::FilesWithMatches => {
                self.count = 1;
                Ok(false)
            }
            SearchMode::Count => {
                // As rg -c: matching lines; in multiline mode, matches.
                self.count += if self.multiline { 1 } else { m.lines().count() as u64 };
                Ok(true)
            }
            SearchMode::Content => {
                let first = m.line_number().unwrap_or(0);
                for (i, line) in m.lines().enumerate() {
                    self.push(first + i as u64, line, false);
                    self.count += 1;
                }
                Ok(true)
            }
        }
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.mode == SearchMode::Content {
            self.push(c.line_number().unwrap_or(0), c.bytes(), true);
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        self.gap = true;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(list: &[&str]) -> Vec<String> {
        list.iter().map(|g| g.to_string()).collect()
    }

    #[test]
    fn a_kept_name_filter_is_the_one_its_globs_compile_to() {
        let rust = name_filter(&globs(&["*.rs"])).unwrap().unwrap();
        assert!(Arc::ptr_eq(&rust, &name_filter(&globs(&["*.rs"])).unwrap().unwrap()), "compiled once");
        let toml = name_filter(&globs(&["*.toml"])).unwrap().unwrap();
        assert!(rust.is_match("a.rs") && !rust.is_match("a.toml"));
        assert!(toml.is_match("a.toml") && !toml.is_match("a.rs"));
        // Past the bound the kept sets are dropped, never mixed up.
        for i in 0..NAME_FILTERS_KEPT * 2 {
            let set = name_filter(&globs(&[&format!("*.x{i}")])).unwrap().unwrap();
            assert!(set.is_match(format!("f.x{i}")) && !set.is_match("a.rs"));
        }
        let again = name_filter(&globs(&["*.rs"])).unwrap().unwrap();
        assert!(again.is_match("a.rs") && !again.is_match("a.toml"));
        // A guest's large set is compiled for its walk, never kept.
        let many: Vec<String> = (0..2_000).map(|i| format!("*.y{i}")).collect();
        let big = name_filter(&many).unwrap().unwrap();
        assert!(big.is_match("f.y1999") && !big.is_match("a.rs"));
        assert!(!Arc::ptr_eq(&big, &name_filter(&many).unwrap().unwrap()), "a large set is not kept");
        assert!(name_filter(&[]).unwrap().is_none());
        assert!(matches!(name_filter(&globs(&["a[b"])), Err(BackendError::Invalid(_))));
    }
}
