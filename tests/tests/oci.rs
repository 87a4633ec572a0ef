//! Plugins through a real OCI registry (Debian's `docker-registry`, the CNCF
//! distribution registry, started on loopback by `.ci/registry.sh`): push,
//! pull by tag and digest, `oci://` plugins pinned by `toolhost lock`, a
//! moved tag, a registry that tampers, signs or goes down, and bounds. Each
//! test drives the `toolhost` binary with a compile cache (and so a content
//! store) of its own, so nothing one test pulled serves another.
//!
//! Without `TOOLHOST_REGISTRY` (`source .ci/registry.sh`) the tests skip
//! saying so, except under `CI=true`, where they fail.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use toolhost_e2e::{Scratch, guest, text, toolhost_bin, wait_for};

/// The registry without authentication (`host:port`), or `None` (skip).
fn registry() -> Option<String> {
    match std::env::var("TOOLHOST_REGISTRY") {
        Ok(r) if !r.is_empty() => Some(r),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "TOOLHOST_REGISTRY is not set: `source .ci/registry.sh` starts the registries these tests need"
            );
            eprintln!("skipped: no OCI registry (source .ci/registry.sh)");
            None
        }
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: `source .ci/registry.sh` sets it"))
}

/// A repository name no other test (or run) uses.
fn repo(registry: &str, name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{registry}/toolhost-tests/{name}-{}-{nanos}", std::process::id())
}

/// A scratch folder with a compile cache of its own, and the CLI run in it.
struct Env {
    scratch: Scratch,
}

impl Env {
    fn new() -> Self {
        Self { scratch: Scratch::new() }
    }

    fn cache(&self) -> PathBuf {
        self.scratch.outside("cache")
    }

    fn work(&self) -> PathBuf {
        self.scratch.work()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(toolhost_bin());
        command
            .current_dir(self.work())
            .arg("--cache-dir")
            .arg(self.cache())
            .args(args)
            .env("HOME", self.scratch.dir.path())
            .env_remove("DOCKER_CONFIG")
            .stdin(Stdio::null());
        command
    }

    fn cli(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("running toolhost")
    }

    /// The CLI with `input` on its standard input.
    fn cli_with_stdin(&self, args: &[&str], input: &str) -> Output {
        use std::io::Write as _;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running toolhost");
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        child.wait_with_output().expect("waiting for toolhost")
    }

    /// Runs `args`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "toolhost {args:?} failed:\n{stdout}\n{stderr}");
        stdout
    }

    /// Runs `args`, which must fail; its stderr.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "toolhost {args:?} succeeded:\n{stdout}\n{stderr}");
        stderr
    }

    /// Pushes the guest `component` to `reference`; its manifest digest.
    fn push(&self, component: &str, reference: &str) -> String {
        let file = guest(component);
        let out = self.ok(&["push", file.to_str().unwrap(), reference]);
        field(&out, "digest")
    }

    /// Writes `toolhost.toml` in the working directory.
    fn settings(&self, text: &str) {
        std::fs::write(self.work().join("toolhost.toml"), text).unwrap();
    }

    /// A P-256 key pair made by openssl: (private, public).
    fn key_pair(&self, name: &str) -> (PathBuf, PathBuf) {
        let private = self.scratch.outside(&format!("{name}.pem"));
        let public = self.work().join(format!("{name}.pub"));
        let make = format!(
            "openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out '{}' && openssl ec -in '{}' -pubout -out '{}'",
            private.display(),
            private.display(),
            public.display()
        );
        let status = Command::new("sh").arg("-c").arg(&make).stderr(Stdio::null()).status().expect("running openssl");
        assert!(status.success(), "openssl could not make a P-256 key pair");
        (private, public)
    }
}

/// The value of the line `name VALUE` of `out`.
fn field(out: &str, name: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no '{name}' line in:\n{out}"))
        .trim()
        .to_string()
}

/// SHA-256 hex of a file.
fn sha256_of(path: &Path) -> String {
    use sha2::Digest as _;
    hex_encode(&sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The file of blob `digest` in the test registry's storage.
fn stored_blob(digest: &str) -> PathBuf {
    let hex = digest.strip_prefix("sha256:").unwrap();
    Path::new(&env("TOOLHOST_REGISTRY_STORAGE"))
        .join(format!("docker/registry/v2/blobs/sha256/{}/{hex}/data", &hex[..2]))
}

/// The manifest of `reference` as the registry stores it (JSON).
fn manifest_of(env: &Env, reference: &str) -> serde_json::Value {
    let out = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false", &format!("docker://{reference}")])
        .env("HOME", env.scratch.dir.path())
        .output()
        .expect("running skopeo");
    assert!(out.status.success(), "skopeo inspect {reference}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("a JSON manifest")
}

#[test]
fn push_and_pull_by_tag_and_by_digest_give_the_bytes_pushed_in_the_wasm_layout() {
    let Some(registry) = registry() else { return };
    let env = Env::new();
    let reference = format!("{}:1.0", repo(&registry, "swap"));
    let digest = env.push("swap-v1", &reference);
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "{digest}");

    // The layout `wkg` writes (oci-wasm): the WIT world in the config.
    let manifest = manifest_of(&env, &reference);
    assert_eq!(manifest["config"]["mediaType"], "application/vnd.wasm.config.v0+json", "{manifest}");
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 1);
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
    assert_eq!(manifest["layers"][0]["digest"], format!("sha256:{}", sha256_of(&guest("swap-v1"))));

    let by_tag = env.scratch.outside("by-tag.wasm");
    let out = env.ok(&["pull", &reference, "--out", by_tag.to_str().unwrap()]);
    assert_eq!(field(&out, "digest"), digest);
    assert_eq!(std::fs::read(&by_tag).unwrap(), std::fs::read(guest("swap-v1")).unwrap());

    let by_digest = format!("{}@{digest}", reference.rsplit_once(':').unwrap().0);
    let out =
        env.ok(&["pull", &format!("oci://{by_digest}"), "--out", env.scratch.outside("d.wasm").to_str().unwrap()]);
    assert_eq!(field(&out, "sha256"), sha256_of(&guest("swap-v1")));
    // Plain HTTP to a loopback registry is said on stderr (a tag is always
    // asked of the registry; a digest in the store is not).
    let stderr = text(&env.cli(&["pull", &reference])).1;
    assert!(stderr.contains("plain HTTP") && stderr.contains(&registry), "{stderr}");

    let missing = env.fails(&["pull", &format!("{}:nope", repo(&registry, "swap"))]);
    assert!(missing.contains("has no such tag"), "{missing}");
}

#[test]
fn a_locked_reference_is_pulled_by_its_digest_and_a_moved_tag_moves_nothing() {
    let Some(registry) = registry() else { return };
    let env = Env::new();
    let name = repo(&registry, "moving");
    let tag = format!("{name}:stable");
    let v1 = env.push("swap-v1", &tag);
    env.settings(&format!("builtins = false\nplugins = [\"oci://{tag}\"]\n"));

    // On first use it is pulled into the content store and runs.
    let out = env.ok(&["call", "Swap", "{}"]);
    assert!(out.contains("v1"), "{out}");
    let locked = env.ok(&["lock"]);
    assert!(locked.contains(&v1) && locked.contains(&format!("oci://{tag}")), "{locked}");
    let lock = std::fs::read_to_string(env.work().join("toolhost.lock")).unwrap();
    assert!(lock.contains(&format!("digest = \"{v1}\"")) && lock.contains("reference = \"oci://"), "{lock}");

    // The tag moves to v2 (which declares more and asks before every call).
    let v2 = env.push("swap-v2", &tag);
    assert_ne!(v1, v2);
    for args in [&["call", "Swap", "{}"][..], &["--locked", "call", "Swap", "{}"][..]] {
        let out = env.ok(args);
        assert!(out.contains("v1") && !out.contains("v2"), "{args:?} followed the tag: {out}");
    }

    // --locked refuses a reference the lock does not hold.
    let other = format!("{name}:other");
    env.push("swap-v1", &other);
    env.settings(&format!("builtins = false\nplugins = [\"oci://{tag}\", \"oci://{other}\"]\n"));
    let refused = env.fails(&["--locked", "list"]);
    assert!(
        refused.contains(&format!("oci://{other} is refused")) && refused.contains("not in the lock file"),
        "{refused}"
    );

    // `toolhost lock` again follows the tag: v2 is pinned now.
    env.settings(&format!("builtins = false\nplugins = [\"oci://{tag}\"]\n"));
    let relocked = env.ok(&["lock"]);
    assert!(relocked.contains(&v2), "{relocked}");
}

#[test]
fn a_registry_with_basic_auth_takes_credentials_from_stdin_or_the_docker_config() {
    let Some(_) = registry() else { return };
    let (registry, user, password) =
        (env("TOOLHOST_REGISTRY_AUTH"), env("TOOLHOST_REGISTRY_USER"), env("TOOLHOST_REGISTRY_PASSWORD"));
    let env = Env::new();
    let reference = format!("{}:1", repo(&registry, "private"));
    let file = guest("swap-v1");
    let refused = env.fails(&["push", file.to_str().unwrap(), &reference]);
    assert!(refused.contains("401") && refused.contains("--password-stdin"), "{refused}");

    let out = env.cli_with_stdin(
        &["push", file.to_str().unwrap(), &reference, "--username", &user, "--password-stdin"],
        &password,
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let pull = env.fails(&["pull", &reference]);
    assert!(pull.contains("401") && pull.contains("docker login"), "{pull}");

    // As `docker login` leaves it.
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let docker = env.scratch.dir.path().join(".docker");
    std::fs::create_dir_all(&docker).unwrap();
    std::fs::write(docker.join("config.json"), format!(r#"{{"auths":{{"{registry}":{{"auth":"{auth}"}}}}}}"#)).unwrap();
    let out = env.ok(&["pull", &reference]);
    assert_eq!(field(&out, "sha256"), sha256_of(&file));
}

#[test]
fn a_layer_or_manifest_changed_in_the_registrys_storage_is_refused() {
    let Some(registry) = registry() else { return };
    let pusher = Env::new();
    // A component of its own (an extra custom section): no other test
    // shares its layer in the registry's storage.
    let own = own_component(&pusher, "swap-v1", "tamper-layer");
    let reference = format!("{}:1", repo(&registry, "tampered-layer"));
    let out = pusher.ok(&["push", own.to_str().unwrap(), &reference]);
    let digest = field(&out, "digest");
    let layer = format!("sha256:{}", sha256_of(&own));
    let mut bytes = std::fs::read(stored_blob(&layer)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(stored_blob(&layer), &bytes).unwrap();
    let env = Env::new();
    let refused = env.fails(&["pull", &reference]);
    assert!(refused.contains("digest mismatch"), "{refused}");
    assert!(!env.cache().join("oci/blobs/sha256").join(format!("{}.wasm", &layer[7..])).exists(), "nothing stored");

    // The manifest: a reference by digest gets other bytes.
    let reference = format!("{}:1", repo(&registry, "tampered-manifest"));
    let digest2 = pusher.push("swap-v1", &reference);
    assert_ne!(digest, digest2);
    let mut manifest = std::fs::read(stored_blob(&digest2)).unwrap();
    manifest.extend_from_slice(b" ");
    std::fs::write(stored_blob(&digest2), &manifest).unwrap();
    let by_digest = format!("{}@{digest2}", reference.rsplit_once(':').unwrap().0);
    let refused = env.fails(&["pull", &by_digest]);
    assert!(refused.contains("digest mismatch"), "{refused}");
}

/// A copy of the guest `component` with a custom section named `tag`: a
/// valid component whose bytes no other test pushes.
fn own_component(env: &Env, component: &str, tag: &str) -> PathBuf {
    let mut bytes = std::fs::read(guest(component)).unwrap();
    let name = format!("{tag}-{}", std::process::id());
    let mut payload = vec![name.len() as u8];
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(b"x");
    bytes.push(0); // custom section
    bytes.push(payload.len() as u8);
    bytes.extend_from_slice(&payload);
    let path = env.scratch.outside(&format!("{tag}.wasm"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn signatures_by_a_trusted_key_pass_and_others_or_none_are_refused_when_required() {
    let Some(registry) = registry() else { return };
    let env = Env::new();
    let (team_key, team_pub) = env.key_pair("team");
    let (other_key, _) = env.key_pair("other");
    let signed = format!("{}:1", repo(&registry, "signed"));
    let by_other = format!("{}:1", repo(&registry, "signed-by-other"));
    let unsigned = format!("{}:1", repo(&registry, "unsigned"));
    env.push("swap-v1", &signed);
    env.push("swap-v1", &by_other);
    env.push("swap-v1", &unsigned);
    let out = env.ok(&["sign", &signed, "--key", team_key.to_str().unwrap()]);
    assert!(out.contains("cosign signature"), "{out}");
    env.ok(&["sign", &format!("oci://{by_other}"), "--key", other_key.to_str().unwrap()]);
    // Cosign's layout: the signature manifest beside the signed one.
    let digest = field(&env.ok(&["pull", &signed]), "digest");
    let sig = manifest_of(&env, &format!("{}:{}.sig", signed.rsplit_once(':').unwrap().0, digest.replace(':', "-")));
    assert_eq!(sig["layers"][0]["mediaType"], "application/vnd.dev.cosign.simplesigning.v1+json", "{sig}");
    assert!(sig["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"].is_string(), "{sig}");

    env.settings("[trust]\nkeys = [\"team.pub\"]\nrequire_signature = true\n");
    let out = env.ok(&["pull", &signed]);
    assert_eq!(field(&out, "signed by"), team_pub.display().to_string());
    let untrusted = env.fails(&["pull", &by_other]);
    assert!(untrusted.contains("signed, but by no key of [trust] keys"), "{untrusted}");
    let missing = env.fails(&["pull", &unsigned]);
    assert!(missing.contains("carries no signature") && missing.contains("require_signature"), "{missing}");

    // As a plugin: refused before anything is compiled or run; the lock
    // records the key that signed the one that passes.
    env.settings(&format!(
        "builtins = false\nplugins = [\"oci://{unsigned}\"]\n[trust]\nkeys = [\"team.pub\"]\nrequire_signature = true\n"
    ));
    let refused = env.fails(&["list"]);
    assert!(refused.contains("carries no signature"), "{refused}");
    env.settings(&format!(
        "builtins = false\nplugins = [\"oci://{signed}\"]\n[trust]\nkeys = [\"team.pub\"]\nrequire_signature = true\n"
    ));
    assert!(env.ok(&["call", "Swap", "{}"]).contains("v1"));
    env.ok(&["lock"]);
    let lock = std::fs::read_to_string(env.work().join("toolhost.lock")).unwrap();
    assert!(lock.contains(&format!("signed_by = \"{}\"", team_pub.display())), "{lock}");
}

#[test]
fn a_plugin_file_needs_a_detached_signature_by_a_trusted_key_when_required() {
    let Some(_) = registry() else { return };
    let env = Env::new();
    let (team_key, _) = env.key_pair("team");
    let (other_key, _) = env.key_pair("other");
    let plugins = env.scratch.outside("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let file = plugins.join("swap.wasm");
    std::fs::copy(guest("swap-v1"), &file).unwrap();
    env.settings(&format!(
        "builtins = false\nplugins = [\"{}\"]\n[trust]\nkeys = [\"team.pub\"]\nrequire_signature = true\n",
        file.display()
    ));
    let refused = env.fails(&["call", "Swap", "{}"]);
    assert!(refused.contains("carries no signature"), "{refused}");
    env.ok(&["sign", file.to_str().unwrap(), "--key", other_key.to_str().unwrap()]);
    let refused = env.fails(&["call", "Swap", "{}"]);
    assert!(refused.contains("by no key of [trust] keys"), "{refused}");
    let out = env.ok(&["sign", file.to_str().unwrap(), "--key", team_key.to_str().unwrap()]);
    assert!(out.contains("swap.wasm.sig"), "{out}");
    assert!(env.ok(&["call", "Swap", "{}"]).contains("v1"));
    // The signature covers the bytes: other bytes under it are refused.
    std::fs::copy(guest("swap-v2"), &file).unwrap();
    let refused = env.fails(&["call", "Swap", "{}"]);
    assert!(refused.contains("by no key of [trust] keys"), "{refused}");
}

/// A registry of this test's own on a free loopback port (stopped on drop).
struct OwnRegistry {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl OwnRegistry {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog: {{level: warn}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\nhttp: {{addr: {addr}}}\n",
                dir.path().join("storage").display()
            ),
        )
        .unwrap();
        let child = Command::new(env("TOOLHOST_REGISTRY_BIN"))
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting docker-registry");
        wait_for("the registry to listen", Duration::from_secs(20), || std::net::TcpStream::connect(&addr).is_ok());
        Self { child, addr, _dir: dir }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OwnRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn a_registry_that_is_down_still_starts_what_the_cache_holds_and_names_the_cause_otherwise() {
    let Some(_) = registry() else { return };
    let mut own = OwnRegistry::start();
    let env = Env::new();
    let tag = format!("{}/ns/swap:1", own.addr);
    let digest = env.push("swap-v1", &tag);
    let by_digest = format!("{}/ns/swap@{digest}", own.addr);
    env.settings(&format!("builtins = false\nplugins = [\"oci://{tag}\", \"oci://{by_digest}\"]\n"));
    env.ok(&["lock"]);
    env.settings(&format!("builtins = false\nplugins = [\"oci://{tag}\"]\n"));
    assert!(env.ok(&["call", "Swap", "{}"]).contains("v1"));
    own.stop();

    // Locked by digest, in the cache: starts without the registry.
    assert!(env.ok(&["--locked", "call", "Swap", "{}"]).contains("v1"));
    // A reference by digest in the cache needs no lock either.
    env.settings(&format!("builtins = false\nplugins = [\"oci://{by_digest}\"]\n"));
    std::fs::remove_file(env.work().join("toolhost.lock")).unwrap();
    assert!(env.ok(&["call", "Swap", "{}"]).contains("v1"));
    // A tag not locked cannot be resolved: the cause is named.
    env.settings(&format!("builtins = false\nplugins = [\"oci://{}/ns/swap:2\"]\n", own.addr));
    let refused = env.fails(&["list"]);
    assert!(refused.contains("unreachable") && refused.contains(&own.addr), "{refused}");
}

#[test]
fn a_layer_larger_than_the_component_bound_is_refused_without_reading_it_whole() {
    let Some(registry) = registry() else { return };
    let env = Env::new();
    let name = repo(&registry, "huge");
    let reference = format!("{name}:1");
    env.push("swap-v1", &reference);
    let size = std::fs::metadata(guest("swap-v1")).unwrap().len();
    let bound = (size / 2).to_string();
    let refused = env.fails(&["--max-component-bytes", &bound, "pull", &reference]);
    assert!(refused.contains("max_component_bytes") && refused.contains(&size.to_string()), "{refused}");

    // A manifest that understates its layer: the read stops at the bound.
    let big = vec![b'a'; 8 << 20];
    let layer = upload_blob(&name, &big);
    let config = upload_blob(&name, b"{}");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": config, "size": 2},
        "layers": [{"mediaType": "application/wasm", "digest": layer, "size": 100}],
    });
    put_manifest(&name, "liar", &manifest.to_string());
    let refused = env.fails(&["--max-component-bytes", "1048576", "pull", &format!("{name}:liar")]);
    assert!(refused.contains("1048576") && refused.contains("more than"), "{refused}");
}

/// Uploads `bytes` as a blob of repository `name` (`host:port/path`) with
/// curl; its digest.
fn upload_blob(name: &str, bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let digest = format!("sha256:{}", hex_encode(&sha2::Sha256::digest(bytes)));
    let (host, path) = name.split_once('/').unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    let location = Command::new("curl")
        .args(["-sS", "-X", "POST", "-D", "-", "-o", "/dev/null", &format!("http://{host}/v2/{path}/blobs/uploads/")])
        .output()
        .unwrap();
    let headers = String::from_utf8_lossy(&location.stdout);
    let url = headers
        .lines()
        .find_map(|l| l.strip_prefix("Location: ").or_else(|| l.strip_prefix("location: ")))
        .expect("an upload location")
        .trim()
        .to_string();
    let url = if url.starts_with("http") { url } else { format!("http://{host}{url}") };
    let sep = if url.contains('?') { '&' } else { '?' };
    let put = Command::new("curl")
        .args(["-sSf", "-X", "PUT", "-H", "Content-Type: application/octet-stream", "--data-binary"])
        .arg(format!("@{}", file.path().display()))
        .arg(format!("{url}{sep}digest={digest}"))
        .status()
        .unwrap();
    assert!(put.success(), "uploading a blob");
    digest
}

fn put_manifest(name: &str, tag: &str, manifest: &str) {
    let (host, path) = name.split_once('/').unwrap();
    let status = Command::new("curl")
        .args(["-sSf", "-X", "PUT", "-H", "Content-Type: application/vnd.oci.image.manifest.v1+json", "--data-binary"])
        .arg(manifest)
        .arg(format!("http://{host}/v2/{path}/manifests/{tag}"))
        .status()
        .unwrap();
    assert!(status.success(), "putting a manifest");
}

/// Waits (up to 60 s) until `ready` holds.
async fn until(what: &str, ready: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !ready() {
        assert!(start.elapsed() < Duration::from_secs(60), "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `serve --watch`'s reload of a reference: the watching host polls the
/// tag, pulls a new digest beside the running version, and swaps it in when
/// it declares no more than the running one; one that declares more is
/// held back and the running version keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_tag_that_moves_is_swapped_in_or_held_back_by_the_capability_rule() {
    use toolhost::reload::WatchOptions;
    let Some(registry) = registry() else { return };
    let env = Env::new();
    let tag = format!("{}:live", repo(&registry, "watched"));
    env.push("swap-v1", &tag);
    let mut s = env.scratch.settings();
    s.builtins = false;
    s.cache_dir = Some(env.cache());
    s.plugins.push(PathBuf::from(format!("oci://{tag}")));
    s.registry.poll_ms = 200;
    s.lock_file = Some(env.scratch.outside("toolhost.lock"));
    let host = toolhost::Toolhost::builder().settings(s, None).build().await.expect("building the host");
    host.ready().await.expect("loading the plugin");
    let options =
        WatchOptions { debounce: Duration::from_millis(50), settle: Duration::from_millis(1500), status_file: None };
    let watcher = host.watch(options).await.expect("watching");
    let serving = || watcher.status().into_iter().find(|s| s.name.as_deref() == Some("Swap")).expect("Swap is watched");
    assert_eq!(serving().sha256, sha256_of(&guest("swap-v1")));

    // Declares no more: pulled, verified and swapped in.
    let newer = own_component(&env, "swap-v1", "watched-newer");
    env.ok(&["push", newer.to_str().unwrap(), &tag]);
    let newer_sha = sha256_of(&newer);
    until("the new digest is swapped in", || serving().sha256 == newer_sha).await;
    assert_eq!(serving().last_error, None);
    let reply = toolhost_e2e::call(&host, "Swap", serde_json::json!({}), toolhost::PermissionAnswer::Deny).await;
    assert!(reply.text().contains("v1"), "{}", reply.text());

    // Declares more: held back, the running version keeps serving.
    env.push("swap-v2", &tag);
    until("v2 is held back", || serving().last_error.is_some()).await;
    let error = serving().last_error.unwrap();
    assert!(error.contains("is held back") && error.contains("declares more"), "{error}");
    assert_eq!(serving().sha256, newer_sha);
    let reply = toolhost_e2e::call(&host, "Swap", serde_json::json!({}), toolhost::PermissionAnswer::Deny).await;
    assert!(reply.text().contains("v1") && !reply.text().contains("v2"), "{}", reply.text());
}

/// Runs the ORAS SDK: `push FILE REF` (as `oras push REF FILE:application/wasm`)
/// or `pull REF DIR`.
fn oras(python: &Path, args: &[&str]) -> String {
    const SCRIPT: &str = r#"
import os, sys, oras.client
mode, ref, path = sys.argv[1:4]
client = oras.client.OrasClient(hostname=ref.split("/")[0], insecure=True)
if mode == "push":
    os.chdir(os.path.dirname(path))
    client.push(files=[os.path.basename(path) + ":application/wasm"], target=ref)
else:
    for f in client.pull(target=ref, outdir=path):
        print(f)
"#;
    let out = Command::new(python).arg("-c").arg(SCRIPT).args(args).output().expect("running python");
    assert!(out.status.success(), "oras {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_artifact_pushed_by_oras_is_read_by_toolhost_and_ours_by_oras() {
    let Some(registry) = registry() else { return };
    let Some(python) = toolhost_e2e::python_venv("oras-venv", "oras", "0.2.43") else { return };
    let env = Env::new();
    let file = env.scratch.outside("swap.wasm");
    std::fs::copy(guest("swap-v1"), &file).unwrap();
    let theirs = format!("{}:1", repo(&registry, "by-oras"));
    oras(&python, &["push", &theirs, file.to_str().unwrap()]);
    let manifest = manifest_of(&env, &theirs);
    assert_ne!(manifest["config"]["mediaType"], "application/vnd.wasm.config.v0+json", "ORAS's own config: {manifest}");
    let out = env.ok(&["pull", &theirs]);
    assert_eq!(field(&out, "sha256"), sha256_of(&file));

    let ours = format!("{}:1", repo(&registry, "for-oras"));
    env.push("swap-v1", &ours);
    let dir = env.scratch.outside("oras-out");
    std::fs::create_dir(&dir).unwrap();
    let pulled = oras(&python, &["pull", &ours, dir.to_str().unwrap()]);
    let pulled = pulled.lines().next().expect("ORAS pulled a file");
    assert_eq!(sha256_of(Path::new(pulled)), sha256_of(&guest("swap-v1")));
}

/// A registry that answers `/v2/` at once and every other request with
/// headers, then one byte every 100 ms (at most 20 s, until the reader
/// goes): an answer that never finishes in reasonable time.
fn dripping_registry() -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut byte = [0u8; 1];
                while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    request.push(byte[0]);
                }
                if request.starts_with(b"GET /v2/ ") {
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
                    return;
                }
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 1000\r\n\r\n";
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for _ in 0..200 {
                    std::thread::sleep(Duration::from_millis(100));
                    if stream.write_all(b" ").is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Each registry answer has a total time limit, body included: a registry
/// that sends a byte now and then (so no read ever times out) is given up
/// on, naming the limit.
#[test]
fn a_registry_answer_that_never_finishes_is_given_up_on_at_the_time_limit() {
    let Some(_) = registry() else { return };
    let env = Env::new();
    let addr = dripping_registry();
    env.settings("[registry]\ntimeout_ms = 1500\n");
    let start = std::time::Instant::now();
    let refused = env.fails(&["pull", &format!("{addr}/ns/slow:1")]);
    assert!(refused.contains("did not finish answering") && refused.contains("1.5s"), "{refused}");
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
}

/// A manifest larger than `[registry] max_manifest_bytes` is refused.
#[test]
fn a_manifest_larger_than_its_bound_is_refused() {
    let Some(registry) = registry() else { return };
    let env = Env::new();
    let reference = format!("{}:1", repo(&registry, "big-manifest"));
    env.push("swap-v1", &reference);
    env.settings("[registry]\nmax_manifest_bytes = 100\n");
    let refused = env.fails(&["pull", &reference]);
    assert!(refused.contains("more than the 100 allowed") || refused.contains("more than 100 bytes"), "{refused}");
}
