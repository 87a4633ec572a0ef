//! `toolhost`: run AI-agent tools as sandboxed WebAssembly components.
//!
//! The command line is a thin front end over the library crate
//! [`toolhost`]: it parses flags, prints, prompts on the terminal, and
//! maps outcomes to exit codes. Everything that needs authority lives in
//! the library.

mod args;
mod ask_user;
mod audit;
mod call;
mod check;
mod first_run;
mod guest;
mod inspect;
mod list;
mod lock;
mod out;
mod prompt;
mod registry;
mod run;
mod serve;
mod shown;
mod state_store;
mod status;
mod wit;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

/// mimalloc rather than the system's allocator: a call allocates and frees
/// many small objects on several threads (the pipeline's, the audit
/// writer's, the span exporter's), and glibc's `malloc`, `free` and
/// `malloc_consolidate` topped a trivial call's profile
/// (`docs/benchmarks.md`, Telemetry, 2026-12-06).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit codes, documented in `toolhost --help`.
pub mod exit {
    /// The call succeeded.
    pub const OK: u8 = 0;
    /// The tool reported an error, or toolhost failed.
    pub const ERROR: u8 = 1;
    /// The permission engine or the user denied the call.
    pub const DENIED: u8 = 3;
    /// The tool is external: the event was printed; finish with `toolhost resume`.
    pub const EXTERNAL: u8 = 4;
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.global.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    let outcome = runtime.block_on(run(cli));
    first_run::close_audit_log();
    first_run::optimise_in_background();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {}", shown::block(&format!("{e:#}")));
            ExitCode::from(exit::ERROR)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::List(a) => list::list(&cli.global, a).await,
        Command::Describe(a) => list::describe(&cli.global, a).await,
        Command::Call(a) => call::call(&cli.global, a).await,
        Command::Resume(a) => call::resume(&cli.global, a).await,
        Command::Run(a) => run::run(&cli.global, a).await,
        Command::Check(a) => check::check(&cli.global, a).await,
        Command::Inspect(a) => inspect::inspect(&cli.global, a).await,
        Command::Serve(a) => serve::serve(&cli.global, *a).await,
        Command::Lock(a) => lock::lock(&cli.global, a).await,
        Command::Push(a) => registry::push(&cli.global, a).await,
        Command::Pull(a) => registry::pull(&cli.global, a).await,
        Command::Sign(a) => registry::sign(&cli.global, a).await,
        Command::Status(a) => status::status(&cli.global, a).await,
        Command::Wit(a) => wit::wit(a),
        Command::New(a) => guest::new::new(a),
        Command::Build(a) => guest::build::build(a),
        Command::Audit(args::AuditCommand::Replay(a)) => audit::replay(&cli.global, a).await,
        Command::Keyring(args::KeyringCommand::New(a)) => state_store::new_key(a),
        Command::Rules(a) => state_store::rules(&cli.global, a).await,
        Command::OptimiseBuiltins(a) => first_run::optimise_builtins(a),
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "toolhost=warn",
        1 => "toolhost=info",
        _ => "toolhost=debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
}
