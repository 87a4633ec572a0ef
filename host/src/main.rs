//! `toolhost`: run AI-agent tools as sandboxed WebAssembly components.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
