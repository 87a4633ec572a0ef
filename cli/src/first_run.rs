//! The first run on a machine: what a terminal is told while a compile
//! takes long, and the optimising compile that finishes after the command.
//!
//! A built-in's first use runs baseline (Winch) code when its optimised code
//! is not cached (see `toolhost::engine::Tier`), and a plugin whose code is
//! not cached compiles in the background while the command runs (see
//! `toolhost::loading`). So that the next process starts on optimised code
//! without this one making anybody wait, the command ends by starting
//! `toolhost __optimise-builtins` in the background: a detached process, no
//! terminal, output discarded, that compiles those built-ins and the plugins
//! still compiling into the cache and exits.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use toolhost::sync::MutexExt;

use anyhow::{Context as _, Result, bail};
use toolhost::Toolhost;
use toolhost::engine::{CompileEvent, CompileObserver, Phase, Runtime, RuntimeOptions, Tier};

use super::args::OptimiseArgs;
use super::exit;

/// A compile quicker than this is not worth a word.
const QUIET_FOR: Duration = Duration::from_secs(1);

/// The host the command built, looked at once the command is done.
static HOST: OnceLock<Toolhost> = OnceLock::new();

/// Compiles under way: label → (its number, whether it was announced).
static RUNNING: Mutex<Option<HashMap<String, (u64, bool)>>> = Mutex::new(None);

/// The progress observer: on a terminal, a compile still running after a
/// second is announced on stderr, and its end too; elsewhere, nothing.
pub fn observer() -> Option<CompileObserver> {
    std::io::stderr().is_terminal().then(|| CompileObserver::new(on_compile))
}

fn on_compile(event: &CompileEvent) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut running = RUNNING.lock_unpoisoned();
    let running = running.get_or_insert_with(HashMap::new);
    match event.phase {
        Phase::Started => {
            let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            running.insert(event.label.clone(), (id, false));
            let (label, tier) = (event.label.clone(), event.tier);
            std::thread::spawn(move || {
                std::thread::sleep(QUIET_FOR);
                announce(&label, id, tier);
            });
        }
        Phase::Finished(took) => {
            if let Some((_, true)) = running.remove(&event.label) {
                eprintln!("toolhost: compiled {} in {:.1} s", event.label, took.as_secs_f64());
            }
        }
    }
}

/// Announces compile `id` of `label` if it is still running.
fn announce(label: &str, id: u64, tier: Tier) {
    let mut running = RUNNING.lock_unpoisoned();
    if let Some((running_id, announced)) = running.as_mut().and_then(|r| r.get_mut(label))
        && *running_id == id
    {
        *announced = true;
        let what = match tier {
            Tier::Baseline => "first run: quick code now, optimised code in the background",
            Tier::Optimised => "first run: later runs use the compile cache",
        };
        eprintln!("toolhost: compiling {label} ({what})…");
    }
}

/// Keeps the command's host, for [`optimise_in_background`].
pub fn remember(host: &Toolhost) {
    let _ = HOST.set(host.clone());
}

/// Writes what the audit log has queued and stops its writer: the host is
/// kept here until the process ends, so it is never dropped (which would
/// do the same).
pub fn close_audit_log() {
    if let Some(log) = HOST.get().and_then(Toolhost::audit_log) {
        log.close();
    }
}

/// Waits for the plugins loading in the background (a listing shows every
/// tool); one that failed is an error, as it was when every plugin loaded
/// before the command ran. On a terminal the compile progress above says
/// what it waits for.
pub async fn wait_for_plugins(host: &Toolhost) -> Result<()> {
    host.ready().await?;
    crate::args::warn_unknown_rules(host);
    Ok(())
}

/// Starts the background compile of what this command leaves unoptimised:
/// the built-ins and plugins it ran on baseline code and the plugins still
/// loading in the background when it ends (a one-shot `call` does not wait
/// for a plugin it does not use), if any. Never fails the command: a failure to
/// start it costs the next process a compile, nothing else.
pub fn optimise_in_background() {
    let Some(host) = HOST.get() else { return };
    let names = host.builtins_to_optimise();
    let plugins: Vec<String> =
        host.plugins_to_optimise().iter().map(|(file, sha256)| format!("{sha256}={}", file.display())).collect();
    if names.is_empty() && plugins.is_empty() {
        return;
    }
    let cache = host.settings().cache_dir();
    if let Err(e) = spawn_optimiser(cache, &names, &plugins) {
        tracing::warn!(
            "could not start the background compile of {}: {e:#}",
            [names.join(", "), plugins.join(", ")].join(" ")
        );
    }
}

fn spawn_optimiser(cache: PathBuf, names: &[&str], plugins: &[String]) -> Result<()> {
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe().context("finding the toolhost binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("__optimise-builtins")
        .arg("--cache")
        .arg(cache)
        .args(names)
        .args(plugins.iter().flat_map(|p| ["--wasm", p.as_str()]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: `detach_child` makes only async-signal-safe system calls.
    // Its own session: a Ctrl-C meant for the terminal's next command does
    // not stop it half-way (a half-written entry is never used: entries are
    // renamed into place when complete), and it holds none of the
    // descriptors this process inherited.
    unsafe {
        cmd.pre_exec(toolhost::backend::local::detach_child);
    }
    cmd.spawn().context("starting `toolhost __optimise-builtins`")?;
    Ok(())
}

/// `toolhost __optimise-builtins --cache DIR NAME… [--wasm SHA256=FILE]…`:
/// compiles the named built-ins' optimised code into the cache, then each
/// plugin file that still has the SHA-256 its command checked (pinned,
/// when locked), on low-priority threads. Compiling runs no guest code.
pub fn optimise_builtins(args: OptimiseArgs) -> Result<u8> {
    let runtime = Runtime::new(&RuntimeOptions {
        cache_dir: Some(args.cache),
        always_optimise: true,
        disable_pooling: true,
        ..Default::default()
    })?;
    for name in &args.names {
        let Some(builtin) = toolhost::builtin::named(name) else {
            bail!("'{name}' is not a built-in tool");
        };
        toolhost::builtin::optimise(&runtime, builtin)?;
    }
    for plugin in &args.wasm_files {
        let Some((sha256, file)) = plugin.split_once('=') else {
            bail!("--wasm takes SHA256=FILE, not '{plugin}'");
        };
        // The host read it within its bound; the default bound here is a
        // second line only (a file grown past it is not optimised).
        let bound = toolhost::engine::Limits::default().component_bound();
        let bytes = toolhost::own_file::read(std::path::Path::new(file), bound)
            .with_context(|| format!("reading plugin {file}"))?
            .bytes;
        // A file changed since: the next command checks and compiles it.
        if toolhost::lockfile::sha256_hex(&bytes) == sha256 {
            runtime.precompile(&bytes, file, Tier::Optimised)?;
        }
    }
    Ok(exit::OK)
}
