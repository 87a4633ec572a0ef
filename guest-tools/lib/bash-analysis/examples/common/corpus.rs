//! The commands the examples run over: the analysis corpus
//! (`tests/corpus.tsv`, second column) or a file of one command a line,
//! both encoded as in corpus.tsv (`⏎` a newline, `\t` a tab).

/// The corpus's commands, or those of `file` when one is named.
pub fn commands(file: Option<&str>) -> Vec<String> {
    let text;
    let lines: Vec<&str> = match file {
        Some(path) => {
            text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
            text.lines().filter(|l| !l.trim().is_empty()).collect()
        }
        None => include_str!("../../tests/corpus.tsv")
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.split('\t').nth(1))
            .collect(),
    };
    lines.iter().map(|c| c.replace('⏎', "\n").replace("\\t", "\t")).collect()
}

/// The context the measurements use: default mode, one working directory.
#[allow(dead_code)] // corpus_dump sets its own, one per mode
pub fn context() -> bash_analysis::Context {
    bash_analysis::Context {
        mode: bash_analysis::Mode::Default,
        working_dirs: vec!["/work/p".into()],
        cwd: "/work/p".into(),
        home: "/home/u".into(),
    }
}
