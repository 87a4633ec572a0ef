//! Helpers for the end-to-end tests: where the test components are, the
//! `toolhost` binary, and a host with a scratch working directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};

use toolhost::response::ToolResponse;
use toolhost::settings::Settings;
use toolhost::state::AgentState;
use toolhost::{CallRequest, PermissionAnswer, Toolhost};

/// The allocator the `toolhost` binary uses (`cli/src/main.rs`), so the
/// tests and benches that run the library in their own process measure
/// what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod fixtures;
pub mod load;
pub mod mcp;
pub mod proxy;
pub mod redis;
pub mod shown;

/// The `p` quantile (0.0–1.0, nearest rank) of `samples`, which it sorts:
/// the one definition every bench reports its p50 / p99 with.
pub fn percentile(samples: &mut [std::time::Duration], p: f64) -> std::time::Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

/// The number in the environment variable `name` (a bench's `ITERATIONS`,
/// `CALLS`, …), or `default` when it is unset or not a number.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The `rg` flags AgentScope's Grep builds (spec §6.6) before its mode
/// flags and the search path: the peer the Grep tool is compared with, in
/// the conformance tests and the file-tools bench.
pub const RG_REFERENCE_FLAGS: &[&str] = &[
    "--hidden",
    "--glob",
    "!.git",
    "--glob",
    "!.svn",
    "--glob",
    "!.hg",
    "--glob",
    "!.bzr",
    "--glob",
    "!.jj",
    "--glob",
    "!.sl",
    "--max-columns",
    "500",
];

/// A component built from `examples/components/<crate>` (crate name with `_`).
pub fn example(name: &str) -> PathBuf {
    wasm(env!("EXAMPLE_COMPONENTS"), name)
}

/// A hostile or special-purpose guest built from `tests/guests/<crate>`.
pub fn guest(name: &str) -> PathBuf {
    wasm(env!("TEST_GUESTS"), name)
}

fn wasm(dir: &str, name: &str) -> PathBuf {
    let mut path = Path::new(dir).join(format!("{}.wasm", name.replace('-', "_")));
    if !path.exists() {
        // Binary crates keep their dashes.
        path = Path::new(dir).join(format!("{name}.wasm"));
    }
    assert!(path.exists(), "test component {} was not built (tests/build.rs builds it)", path.display());
    path
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("TOOLHOST_ROOT"))
}

/// The target folder the calling test or bench was built into, wherever
/// `CARGO_TARGET_DIR` put it (`<target>/<profile>/deps/<exe>`).
fn caller_target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.ancestors().nth(3).expect("<target>/<profile>/deps/<exe>").to_path_buf()
}

/// A built-in tool's component as `host/build.rs` built it for this build
/// (`<target>/guest-tools/wasm32-wasip2/release/tool_<name>.wasm`), to load
/// it the way a plugin is loaded.
pub fn builtin_wasm(crate_name: &str) -> PathBuf {
    let path = caller_target_dir()
        .join("guest-tools/wasm32-wasip2/release")
        .join(format!("{}.wasm", crate_name.replace('-', "_")));
    assert!(path.exists(), "host/build.rs builds the built-ins into {}", path.display());
    path
}

/// The `toolhost` binary of the profile the caller was built with, built
/// once per process (a no-op when fresh).
///
/// Cargo builds a package's binaries together with its integration tests
/// and benches, with the features of that same build. So for tests this
/// asks for the workspace's test build limited to the CLI's integration
/// test `cli/tests/cli_binary.rs`, and for benches (`cargo bench
/// --workspace --bench …`) for the workspace's bench build limited to the
/// CLI's `startup` bench: the same feature resolution as the caller's own
/// build, so never a second, differently-featured host.
pub fn toolhost_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        // target/<profile>/deps/test-xxxx -> target/<profile>/toolhost
        let dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
        let build: &[&str] = if dir.ends_with("release") {
            &["bench", "--quiet", "--workspace", "--no-run", "--bench", "startup"]
        } else {
            &["test", "--quiet", "--workspace", "--no-run", "--test", "cli_binary"]
        };
        let cargo = option_env!("CARGO").unwrap_or("cargo");
        // Into the caller's own target folder (else a bench built elsewhere
        // builds the host once more).
        let status = Command::new(cargo)
            .current_dir(root())
            .env("CARGO_TARGET_DIR", caller_target_dir())
            .args(build)
            .status()
            .expect("running cargo to build the toolhost binary");
        assert!(status.success(), "building the toolhost binary failed (cargo {})", build.join(" "));
        dir.join("toolhost")
    })
}

/// A scratch directory with its own compile cache and working dir.
pub struct Scratch {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
}

impl Scratch {
    /// A new scratch directory with a `work/` working directory.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("work")).expect("mkdir work");
        Self { dir }
    }

    /// The working directory (canonical).
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work").canonicalize().expect("canonical work dir")
    }

    /// A path inside the scratch directory but outside `work/`.
    pub fn outside(&self, name: &str) -> PathBuf {
        self.dir.path().canonicalize().expect("canonical").join(name)
    }

    /// Settings rooted here: `work/` as the only working dir, a shared
    /// compile cache (compiling is the slow part; sharing it across tests is safe).
    /// With `TOOLHOST_TEST_SANDBOX=on` (or `auto`) in the environment, the
    /// local sandbox is on, so a whole suite runs sandboxed.
    pub fn settings(&self) -> Settings {
        let mut s = Settings::default();
        if let Some(mode) = test_sandbox() {
            s.backend.set_option("local", "sandbox", mode.as_str());
        }
        if let Some(image) = test_docker_image() {
            s.backend.kind = "docker".into();
            s.backend.set_option("docker", "image", image.as_str());
        }
        s.permissions.working_dirs = vec![self.work().display().to_string()];
        s.cache_dir = Some(root().join("target/test-cache"));
        s.state_dir = Some(self.dir.path().join("sessions"));
        s
    }

    /// Settings read from a `toolhost.toml` with `text`, written in the
    /// working directory (so relative paths resolve as a user's do), over
    /// this scratch's working directory, cache and state folders.
    pub fn settings_file(&self, text: &str) -> Settings {
        let file = self.work().join("toolhost.toml");
        std::fs::write(&file, text).expect("writing toolhost.toml");
        let mut s = Settings::load(&file).expect("reading toolhost.toml");
        let base = self.settings();
        (s.permissions.working_dirs, s.cache_dir, s.state_dir) =
            (base.permissions.working_dirs, base.cache_dir, base.state_dir);
        s
    }

    /// A host over these settings, its plugins loaded (those not in the
    /// compile cache load after `build()` returns: waited for here).
    pub async fn host(&self, settings: Settings) -> Toolhost {
        let host = Toolhost::builder().settings(settings, None).build().await.expect("building the host");
        host.ready().await.expect("loading the plugins");
        host
    }

    /// Runs the CLI with `args` in this scratch dir (cache shared), stdin closed.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.cli_command(args).output().expect("running toolhost")
    }

    /// [`Scratch::cli`], killed if it has not ended within `limit`: `None`
    /// then (a test of something that used to hang fails instead of
    /// hanging).
    pub fn cli_within(&self, args: &[&str], limit: std::time::Duration) -> Option<Output> {
        let child = self
            .cli_command(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("running toolhost");
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(limit) {
            Ok(out) => Some(out.expect("waiting for toolhost")),
            Err(_) => {
                // SAFETY: a signal to the child this call started.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                None
            }
        }
    }

    fn cli_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(toolhost_bin());
        command
            .current_dir(self.work())
            .arg("--cache-dir")
            .arg(root().join("target/test-cache"))
            .args(test_sandbox().map(|mode| ["--sandbox".to_string(), mode]).into_iter().flatten())
            .args(
                test_docker_image()
                    .map(|i| ["--backend".into(), "docker".into(), "--docker-image".into(), i])
                    .into_iter()
                    .flatten(),
            )
            .args(args)
            .env("HOME", self.dir.path())
            .env_remove("XDG_STATE_HOME")
            .stdin(std::process::Stdio::null());
        command
    }

    /// Where [`Scratch::cli`] keeps sessions: the default state folder under
    /// the scratch `HOME`.
    pub fn cli_sessions(&self) -> PathBuf {
        self.dir.path().join(".local/state/toolhost/sessions")
    }
}

/// The sandbox mode `TOOLHOST_TEST_SANDBOX` asks the suites to run under.
pub fn test_sandbox() -> Option<String> {
    std::env::var("TOOLHOST_TEST_SANDBOX").ok().filter(|m| !m.is_empty())
}

/// With `TOOLHOST_TEST_BACKEND=docker`, the image the suites run their
/// commands in ([`docker_image`]).
pub fn test_docker_image() -> Option<String> {
    match std::env::var("TOOLHOST_TEST_BACKEND").ok().filter(|b| !b.is_empty()).as_deref() {
        None | Some("local") => None,
        Some("docker") => Some(docker_image()),
        Some(other) => panic!("TOOLHOST_TEST_BACKEND={other}: the suites run on `local` or `docker`"),
    }
}

/// The image the Docker tests run their commands in (`TOOLHOST_DOCKER_IMAGE`,
/// default `toolhost-busybox`, the image `.ci/docker.sh` imports).
pub fn docker_image() -> String {
    std::env::var("TOOLHOST_DOCKER_IMAGE").unwrap_or_else(|_| "toolhost-busybox".into())
}

/// Whether a Docker engine with [`docker_image`] answers. Under `CI=true`
/// its absence fails the test (`.ci/docker.sh` starts one); otherwise the
/// caller skips, saying why.
pub fn docker_engine() -> bool {
    let out =
        Command::new("docker").args(["image", "inspect", &docker_image()]).stdout(std::process::Stdio::null()).output();
    let ok = out.as_ref().is_ok_and(|o| o.status.success());
    if !ok {
        let why = match &out {
            Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
            Err(e) => format!("no docker CLI: {e}"),
        };
        assert!(
            std::env::var("CI").is_err(),
            "no Docker engine with image {} (DOCKER_HOST={:?}): {why}; run `source .ci/docker.sh`",
            docker_image(),
            std::env::var("DOCKER_HOST").ok()
        );
        eprintln!("skipped: no Docker engine with image {}: {why}", docker_image());
    }
    ok
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

/// Calls `tool` with `input` and drains the stream, answering any ask with `answer`.
pub async fn call(host: &Toolhost, tool: &str, input: serde_json::Value, answer: PermissionAnswer) -> ToolResponse {
    host.call(CallRequest::new(tool, input.to_string())).finish(answer).await.into_response()
}

/// The text a call of `tool` with `input` (JSON text) answers on the agent
/// state `state`, asks denied: one call as an agent makes it, for the
/// per-call benchmarks.
pub async fn session_call(host: &Toolhost, state: &Arc<AgentState>, tool: &str, input: &str) -> String {
    host.call(CallRequest::new(tool, input).session(state.clone()))
        .finish(PermissionAnswer::Deny)
        .await
        .into_response()
        .text()
}

/// The next event of a call, failing (not hanging) when none comes within
/// two minutes; `what` names the call in the failure.
pub async fn next_event(stream: &mut toolhost::CallStream, what: &str) -> toolhost::CallEvent {
    tokio::time::timeout(std::time::Duration::from_secs(120), stream.next())
        .await
        .unwrap_or_else(|_| panic!("{what}: no event within 120 s"))
        .unwrap_or_else(|| panic!("{what}: the stream ended"))
}

/// Whether `script` (util-linux), which the terminal tests run toolhost
/// under to give it a pseudo-terminal, is installed. Under `CI=true` its
/// absence fails the test instead of skipping it.
pub fn have_script() -> bool {
    if Command::new("script").arg("--version").output().is_ok() {
        return true;
    }
    assert!(std::env::var("CI").is_err(), "`script` (util-linux) is missing; CI must have it");
    eprintln!("skipped: `script` is not installed");
    false
}

/// stdout and stderr of a CLI run as text.
pub fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The Python of `target/mcp-venv`, a virtual environment with the MCP
/// Python SDK (`mcp` 2.3.0) for the `toolhost serve` tests, created with
/// pip the first time. `None` (the test skips) when Python, venv or PyPI
/// is missing, except under `CI=true`, where that fails the test.
pub fn mcp_python() -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON.get_or_init(|| python_venv("mcp-venv", "mcp", "2.3.0")).as_deref()
}

/// The Python of `target/<venv>`, a virtual environment with `package`
/// `version` installed by pip the first time. `None` (the test skips) when
/// Python, venv or PyPI is missing, except under `CI=true`, where that
/// fails the test.
pub fn python_venv(venv: &str, package: &str, version: &str) -> Option<PathBuf> {
    let venv = root().join("target").join(venv);
    let python = venv.join("bin/python");
    let ready = venv.join(format!(".{package}-{version}"));
    if ready.exists() {
        return Some(python);
    }
    let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).status().is_ok_and(|s| s.success())
        && Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", &format!("{package}=={version}")])
            .status()
            .is_ok_and(|s| s.success());
    if made {
        std::fs::write(&ready, "").expect("marking the venv ready");
        return Some(python);
    }
    assert!(
        std::env::var("CI").is_err(),
        "could not create {} with the Python package {package}=={version} (python3-venv and pip, and PyPI, are needed)",
        venv.display()
    );
    eprintln!("skipped: no Python venv with {package}=={version} (python3 -m venv, pip and PyPI are needed)");
    None
}

/// Waits until `done` says so, checking every 50 ms; fails the test naming
/// `what` after `limit`.
pub fn wait_for(what: &str, limit: std::time::Duration, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
