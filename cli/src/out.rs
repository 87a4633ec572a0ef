//! Everything the CLI prints to stdout goes through here, so a reader that
//! stops reading (`toolhost list | head`) ends toolhost quietly instead of
//! with a panic (`println!` panics when stdout is a closed pipe).

use std::io::Write;

use super::exit;

/// Prints a line to stdout through [`print`]; the same arguments as
/// `println!`.
macro_rules! outln {
    () => {
        $crate::out::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// Writes `args` to stdout. A closed pipe ends the process quietly with
/// exit code 0 (nobody reads what comes next); any other write error ends
/// it with a message and [`exit::ERROR`].
pub fn print(args: std::fmt::Arguments<'_>) {
    if let Err(e) = stdout().write_fmt(args) {
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(exit::ERROR.into());
    }
}

/// stdout, for code that writes to it directly (`write!`, a batch): a
/// closed pipe ends the process quietly, like [`print`].
pub fn stdout() -> Stdout {
    Stdout(std::io::stdout())
}

/// stdout that treats a closed pipe as the end of the run (see [`stdout`]).
pub struct Stdout(std::io::Stdout);

impl Stdout {
    /// Whether stdout is a terminal.
    pub fn is_terminal(&self) -> bool {
        std::io::IsTerminal::is_terminal(&self.0)
    }
}

/// Exits quietly when `result` is a closed pipe; otherwise passes it on.
fn quiet_on_closed_pipe<T>(result: std::io::Result<T>) -> std::io::Result<T> {
    if let Err(e) = &result
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(exit::OK.into());
    }
    result
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        quiet_on_closed_pipe(self.0.write(buf))
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        quiet_on_closed_pipe(self.0.write_all(buf))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        quiet_on_closed_pipe(self.0.flush())
    }
}
