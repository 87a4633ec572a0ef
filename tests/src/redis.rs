//! Real Redis servers for the tests: each test starts its own
//! `redis-server` on a free loopback port, in a scratch folder, with a
//! password, and stops it by pid (`.ci/redis.sh` installs the package).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use toolhost_redis::RedisOptions;

/// One `redis-server` of a test's own; stopped when dropped.
pub struct RedisServer {
    /// Whether it keeps an append-only file (every write synced).
    persistent: bool,
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The password it requires.
    pub password: String,
    dir: tempfile::TempDir,
}

/// Whether `redis-server` is installed. Under `CI=true` its absence fails
/// the test; otherwise the caller skips, saying why.
pub fn have_redis() -> bool {
    let ok = Command::new("redis-server").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        assert!(std::env::var("CI").is_err(), "redis-server is missing; CI must have it (`source .ci/redis.sh`)");
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server, or source .ci/redis.sh)");
    }
    ok
}

impl RedisServer {
    /// A server on a free port, without persistence; `None` when
    /// `redis-server` is missing (see [`have_redis`]).
    pub fn start() -> Option<Self> {
        Self::start_with(false)
    }

    /// [`RedisServer::start`] with an append-only file, each write synced
    /// (`appendfsync always`): what it acknowledged outlives a crash.
    pub fn start_persistent() -> Option<Self> {
        Self::start_with(true)
    }

    fn start_with(persistent: bool) -> Option<Self> {
        if !have_redis() {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut server = Self {
            persistent,
            child: None,
            port,
            password: format!("pw-{}-{port}", std::process::id()),
            dir: tempfile::tempdir().unwrap(),
        };
        server.restart();
        Some(server)
    }

    /// Starts it again on the same port (after [`RedisServer::stop`]).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the server is running");
        let log = std::fs::File::create(self.dir.path().join("redis.log")).unwrap();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--requirepass", &self.password])
            .args(["--save", "", "--protected-mode", "yes"])
            .args(if self.persistent {
                ["--appendonly", "yes", "--appendfsync", "always"]
            } else {
                ["--appendonly", "no", "--appendfsync", "everysec"]
            })
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.answers() {
            assert!(Instant::now() < deadline, "redis-server did not answer: {}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops it (SIGKILL, as a crash) and waits for the end.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether it answers `PING` after `AUTH`.
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let auth = format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{}\r\n*1\r\n$4\r\nPING\r\n", self.password.len(), self.password);
        if stream.write_all(auth.as_bytes()).is_err() {
            return false;
        }
        let mut reply = Vec::new();
        let mut buf = [0u8; 64];
        while !reply.ends_with(b"+PONG\r\n") {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return false,
                Ok(n) => reply.extend_from_slice(&buf[..n]),
            }
        }
        true
    }

    /// Its URL, without the password.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Options for it under `prefix`, the password set.
    pub fn options(&self, prefix: &str) -> RedisOptions {
        let mut options = RedisOptions::new(self.url(), prefix);
        options.password = Some(self.password.clone());
        options
    }

    /// What `redis-cli ARGS…` prints against it (authenticated).
    pub fn cli(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "--no-auth-warning"])
            .args(args)
            .env("REDISCLI_AUTH", &self.password)
            .output()
            .expect("running redis-cli");
        assert!(out.status.success(), "redis-cli: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The keys matching `pattern` (`redis-cli --scan`), sorted.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let mut keys: Vec<String> = self.cli(&["--scan", "--pattern", pattern]).lines().map(str::to_string).collect();
        keys.sort();
        keys
    }

    /// A settings file (outside the working directory of `scratch`) naming
    /// this server under `prefix`, its password in a file beside it, plus
    /// `extra` TOML in `[state]`.
    pub fn settings_file(&self, scratch: &crate::Scratch, prefix: &str, extra: &str) -> PathBuf {
        let password = scratch.outside("redis-password");
        std::fs::write(&password, format!("{}\n", self.password)).unwrap();
        let file = scratch.outside(&format!("{prefix}.toml"));
        let text = format!(
            "[state]\nstore = \"redis\"\nallow_unconfined = true\n{extra}\n[state.redis]\nurl = \"{}\"\nkey_prefix = \
             \"{prefix}\"\npassword_file = \"{}\"\n",
            self.url(),
            password.display()
        );
        std::fs::write(&file, text).unwrap();
        file
    }

    /// [`RedisServer::settings_file`] of a deployment: with a keyring of its
    /// own ([`keyring_file`]), as `serve` with Redis needs.
    pub fn deployment_settings(&self, scratch: &crate::Scratch, prefix: &str) -> PathBuf {
        let extra = format!("keyring_file = \"{}\"", keyring_file(scratch).display());
        self.settings_file(scratch, prefix, &extra)
    }

    /// What it logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// Its scratch folder.
    pub fn dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A keyring file made by `toolhost keyring new`, outside the working
/// directory of `scratch`.
pub fn keyring_file(scratch: &crate::Scratch) -> PathBuf {
    let out = scratch.cli(&["keyring", "new", "--id", "k1"]);
    let (line, stderr) = crate::text(&out);
    assert!(out.status.success() && line.starts_with("k1 "), "{line}\n{stderr}");
    let file = scratch.outside("state-keyring");
    std::fs::write(&file, format!("# the deployment's keys\n{line}")).unwrap();
    file
}
