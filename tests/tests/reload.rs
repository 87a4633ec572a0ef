//! Hot reload through the library (`Toolhost::watch`): real component files
//! in a real watched folder, written the ways editors and copies write
//! them, and calls that must never fail or see "tool not found" while the
//! files change under them.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::capability::{Declared, Policy};
use toolhost::lockfile::{LOCK_VERSION, LockFile, LockedPlugin};
use toolhost::permission::Mode;
use toolhost::reload::{FileStatus, WatchOptions, Watcher};
use toolhost::response::ResultState;
use toolhost::settings::Settings;
use toolhost::tool::Origin;
use toolhost::{PermissionAnswer, Toolhost};
use toolhost_e2e::{Scratch, call, guest};

/// A host watching `plugins/` (and whatever `configure` adds).
struct Watched {
    scratch: Scratch,
    host: Toolhost,
    watcher: Watcher,
}

impl Watched {
    /// `files` are (file name in `plugins/`, guest) pairs present before
    /// the host starts; `Swap` may read the working directories.
    async fn start(files: &[(&str, &str)], configure: impl FnOnce(&Scratch, &mut Settings)) -> Self {
        Self::start_with(files, configure, Duration::from_millis(1500)).await
    }

    async fn start_with(
        files: &[(&str, &str)],
        configure: impl FnOnce(&Scratch, &mut Settings),
        settle: Duration,
    ) -> Self {
        let scratch = Scratch::new();
        let plugins = scratch.dir.path().join("plugins");
        std::fs::create_dir(&plugins).unwrap();
        for (file, component) in files {
            std::fs::copy(guest(component), plugins.join(file)).unwrap();
        }
        let mut s = scratch.settings();
        s.builtins = false;
        s.plugin_dirs.push(plugins);
        s.grants.insert("Swap".into(), Policy { fs_read: vec!["$WORKDIRS".into()], ..Policy::default() });
        s.lock_file = Some(scratch.dir.path().join("toolhost.lock"));
        configure(&scratch, &mut s);
        let host = scratch.host(s).await;
        let options = WatchOptions { debounce: Duration::from_millis(50), settle, status_file: None };
        let watcher = host.watch(options).await.expect("starting the watch");
        Watched { scratch, host, watcher }
    }

    fn plugins(&self) -> PathBuf {
        self.scratch.dir.path().join("plugins")
    }

    /// Puts `component`'s bytes at `plugins/<file>` the way cargo and
    /// careful copies do: written beside, then renamed in.
    fn put(&self, file: &str, component: &str) {
        self.put_bytes(file, &std::fs::read(guest(component)).unwrap());
    }

    fn put_bytes(&self, file: &str, bytes: &[u8]) {
        let tmp = self.scratch.dir.path().join(format!(".{file}.part"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, self.plugins().join(file)).unwrap();
    }

    fn status(&self, file: &str) -> Option<FileStatus> {
        let path = self.plugins().join(file);
        self.watcher.status().into_iter().find(|s| s.file == path)
    }

    /// Waits (up to 60 s: a first compile of a debug build is slow) until
    /// `ready` holds.
    async fn until<F: std::future::Future<Output = bool>>(&self, what: &str, ready: impl Fn() -> F) {
        let start = Instant::now();
        while !ready().await {
            assert!(start.elapsed() < Duration::from_secs(60), "timed out waiting until {what}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn swap_text(&self) -> String {
        call(&self.host, "Swap", json!({}), PermissionAnswer::AllowOnce).await.text()
    }
}

fn sha256(component: &str) -> String {
    use std::process::Command;
    let out = Command::new("sha256sum").arg(guest(component)).output().expect("sha256sum");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_string()
}

/// Calls `Swap` on `workers` tasks until `stop`; every response's text.
fn swap_loop(host: &Toolhost, workers: usize, stop: &Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<Vec<String>>> {
    (0..workers)
        .map(|_| {
            let (host, stop) = (host.clone(), stop.clone());
            tokio::spawn(async move {
                let mut texts = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let r = call(&host, "Swap", json!({}), PermissionAnswer::AllowOnce).await;
                    assert_eq!(r.state, ResultState::Success, "a call failed during a reload: {r:?}");
                    texts.push(r.text());
                }
                texts
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_file_is_loaded_a_changed_one_swapped_a_moved_one_kept_and_a_removed_one_unloaded() {
    let w = Watched::start(&[("swap.wasm", "swap-v2")], |_, _| {}).await;
    assert_eq!(w.swap_text().await, "v2 v2 v2 ");
    let grants = w.status("swap.wasm").unwrap().grants;
    assert_eq!(grants, format!("read {}", w.scratch.work().display()), "its declaration ∩ [grants.Swap]");

    w.put("echo.wasm", "echo");
    w.until("Echo is loaded", || async { w.host.is_registered("Echo") }).await;
    let r = call(&w.host, "Echo", json!({"text": "hi"}), PermissionAnswer::AllowOnce).await;
    assert_eq!(r.text(), "hi");

    // Changed and moved under running calls: none fails, none sees a mix.
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = swap_loop(&w.host, 2, &stop);
    w.put("swap.wasm", "swap-v1");
    w.until("v1 serves", || async { w.swap_text().await == "v1 v1 v1 " }).await;
    std::fs::rename(w.plugins().join("swap.wasm"), w.plugins().join("moved.wasm")).unwrap();
    let moved = w.plugins().join("moved.wasm");
    w.until("Swap moved", || async { w.host.origin("Swap") == Some(Origin::File(moved.clone())) }).await;
    stop.store(true, Ordering::Relaxed);
    let mut texts = Vec::new();
    for task in tasks {
        texts.extend(task.await.unwrap());
    }
    assert!(texts.iter().all(|t| t == "v1 v1 v1 " || t == "v2 v2 v2 "), "{texts:?}");
    assert!(texts.iter().any(|t| t == "v1 v1 v1 "), "the new version served");

    let status = w.status("moved.wasm").expect("moved.wasm is watched");
    assert_eq!((status.name.as_deref(), status.sha256.as_str()), (Some("Swap"), sha256("swap-v1").as_str()));
    assert_eq!(status.last_error, None);
    assert_eq!(status.grants, "nothing", "v1 declares nothing, so it is granted nothing");
    assert!(w.status("swap.wasm").is_none(), "the old file is no longer listed");

    std::fs::remove_file(w.plugins().join("echo.wasm")).unwrap();
    w.until("Echo is unloaded", || async { !w.host.is_registered("Echo") }).await;
    let r = call(&w.host, "Echo", json!({"text": "hi"}), PermissionAnswer::AllowOnce).await;
    assert!(r.text().contains("ToolNotFoundError"), "{}", r.text());
    assert_eq!(w.swap_text().await, "v1 v1 v1 ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_update_never_takes_the_tool_away() {
    let w = Watched::start(&[("swap.wasm", "swap-v1"), ("echo.wasm", "echo")], |_, _| {}).await;
    let mut errors = w.watcher.reload_errors();
    let v1 = sha256("swap-v1");
    let garbage = [b"\0asm\x0d\0\x01\0".as_slice(), &[0xff; 64]].concat();
    let broken: [(&str, Vec<u8>, &str); 5] = [
        ("does not compile", garbage, "could not be compiled"),
        ("exports the wrong world", std::fs::read(guest("wrong-world")).unwrap(), "does not export"),
        ("is a middleware", std::fs::read(guest("mw-pass")).unwrap(), "is a middleware component"),
        ("fails validation", std::fs::read(guest("bad-schema")).unwrap(), "invalid metadata"),
        ("renames onto another tool's name", std::fs::read(guest("echo")).unwrap(), "the name of another loaded"),
    ];
    for (what, bytes, expected) in broken {
        w.put_bytes("swap.wasm", &bytes);
        w.until(what, || async { w.status("swap.wasm").and_then(|s| s.last_error).is_some() }).await;
        let status = w.status("swap.wasm").unwrap();
        let error = status.last_error.unwrap();
        assert!(error.contains(expected), "{what}: {error}");
        let told = errors.recv().await.unwrap();
        assert_eq!((told.file, told.last_error.as_deref()), (w.plugins().join("swap.wasm"), Some(error.as_str())));
        assert_eq!(status.sha256, v1, "{what}: the loaded version is still v1");
        assert_eq!(w.swap_text().await, "v1 v1 v1 ", "{what}: the old version keeps serving");
        assert_eq!(w.host.origin("Echo"), Some(Origin::File(w.plugins().join("echo.wasm"))), "{what}");
        // Mended: the error clears.
        w.put("swap.wasm", "swap-v1");
        w.until("the error clears", || async { w.status("swap.wasm").is_some_and(|s| s.last_error.is_none()) }).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_written_file_is_retried_not_reported() {
    let w = Watched::start_with(&[("swap.wasm", "swap-v2")], |_, _| {}, Duration::from_secs(4)).await;
    let whole = std::fs::read(guest("swap-v1")).unwrap();
    let file = w.plugins().join("swap.wasm");
    // Written in place, in pieces, as a slow copy does.
    std::fs::write(&file, &whole[..whole.len() / 3]).unwrap();
    let passes = *w.watcher.passes().borrow();
    w.until("a pass saw the first piece", || async { *w.watcher.passes().borrow() > passes }).await;
    std::fs::write(&file, &whole[..whole.len() * 2 / 3]).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(w.status("swap.wasm").unwrap().last_error, None, "a file still being written is not reported");
    assert_eq!(w.swap_text().await, "v2 v2 v2 ", "the old version serves meanwhile");
    std::fs::write(&file, &whole).unwrap();
    w.until("v1 serves", || async { w.swap_text().await == "v1 v1 v1 " }).await;
    assert_eq!(w.status("swap.wasm").unwrap().last_error, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn middleware_files_reload_and_the_chains_pick_up_the_new_version() {
    let w = Watched::start(&[("echo.wasm", "echo")], |scratch, s| {
        let mw = scratch.dir.path().join("mw");
        std::fs::create_dir(&mw).unwrap();
        std::fs::copy(guest("mw-mark-a"), mw.join("mark.wasm")).unwrap();
        s.middleware.files.push(mw.join("mark.wasm"));
        s.middleware.attach.insert("Echo".into(), vec!["mw-mark-a".into()]);
    })
    .await;
    let mark = w.scratch.dir.path().join("mw/mark.wasm");
    let echo = || async { call(&w.host, "Echo", json!({"text": "hi"}), PermissionAnswer::AllowOnce).await };
    assert_eq!(echo().await.text(), "<a>hi</a>");
    let replace = |component: &str| {
        let tmp = w.scratch.dir.path().join("mark.part");
        std::fs::copy(guest(component), &tmp).unwrap();
        std::fs::rename(&tmp, &mark).unwrap();
    };
    replace("mw-mark-a2");
    w.until("the chain runs v2", || async { echo().await.text() == "<a2>hi</a2>" }).await;

    // A middleware of another name in its place is refused; v2 stays.
    replace("mw-mark-b");
    let status = || w.watcher.status().into_iter().find(|s| s.file == mark);
    w.until("the rename is refused", || async { status().and_then(|s| s.last_error).is_some() }).await;
    assert!(status().unwrap().last_error.unwrap().contains("now reports the name 'mw-mark-b'"));
    assert_eq!(echo().await.text(), "<a2>hi</a2>");

    // Removed: unloaded, and the tool it wraps fails naming it (a removed
    // policy is not lifted silently).
    std::fs::remove_file(&mark).unwrap();
    w.until("the middleware is unloaded", || async { w.host.middleware().is_empty() }).await;
    let r = echo().await;
    assert_eq!(r.state, ResultState::Error, "{r:?}");
    assert!(r.text().contains("mw-mark-a"), "{}", r.text());
}

/// `Swap` v1 declares nothing; v2 declares reading and writing everywhere.
/// The settings would grant writing the canary's folder, so only holding
/// v2 back keeps the canary: v2 never serves, the canary keeps its content,
/// and the held-back error shows the diff and how to grant it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_that_declares_more_is_held_back_and_gets_nothing() {
    let w = Watched::start(&[("swap.wasm", "swap-v1")], |scratch, s| {
        let outside = scratch.outside("canaries");
        std::fs::create_dir(&outside).unwrap();
        s.grants.get_mut("Swap").unwrap().fs_write = vec![outside.display().to_string()];
    })
    .await;
    let canary = w.scratch.outside("canaries").join("canary.txt");
    std::fs::write(&canary, "canary").unwrap();
    w.put("swap.wasm", "swap-v2");
    w.until("v2 is held back", || async { w.status("swap.wasm").and_then(|s| s.last_error).is_some() }).await;
    let error = w.status("swap.wasm").unwrap().last_error.unwrap();
    assert!(error.contains("is held back") && error.contains("declares more"), "{error}");
    assert!(error.contains("+ read /") && error.contains("+ write /"), "the diff is shown: {error}");
    assert!(error.contains("--grant Swap=fs-write:/") && error.contains("[grants.Swap]"), "{error}");
    let input = json!({"canary": canary.display().to_string()});
    for _ in 0..3 {
        let r = call(&w.host, "Swap", input.clone(), PermissionAnswer::AllowOnce).await;
        assert_eq!(r.text(), "v1 v1 v1 ", "the old version keeps serving");
    }
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "canary", "the held-back version got nothing");
    assert_eq!(w.status("swap.wasm").unwrap().sha256, sha256("swap-v1"));

    // A version that needs no more than was approved is swapped in (and
    // held-back bytes are not retried until the file changes).
    w.put("swap.wasm", "swap-v1");
    w.until("v1 again, no error", || async { w.status("swap.wasm").is_some_and(|s| s.last_error.is_none()) }).await;
}

/// A new plugin file sets its name's approved declaration; a later version
/// of it that declares less is swapped in, and going back up to what was
/// first approved is too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn less_than_approved_is_swapped_in_and_back() {
    let w = Watched::start(&[], |_, _| {}).await;
    w.put("swap.wasm", "swap-v2");
    w.until("v2 serves", || async { w.host.is_registered("Swap") }).await;
    w.put("swap.wasm", "swap-v1");
    w.until("v1 serves", || async { w.swap_text().await == "v1 v1 v1 " }).await;
    w.put("swap.wasm", "swap-v2");
    w.until("v2 serves again", || async { w.swap_text().await == "v2 v2 v2 " }).await;
    assert_eq!(w.status("swap.wasm").unwrap().last_error, None);
}

/// A lock file pinning `Swap` v1 only.
fn lock_pinning_v1(path: &std::path::Path) {
    let swap = LockedPlugin {
        name: "Swap".into(),
        kind: "tool".into(),
        file: "/anywhere/swap.wasm".into(),
        sha256: sha256("swap-v1"),
        declared: Declared::default(),
        signature: None,
        reference: None,
        digest: None,
        signed_by: None,
    };
    LockFile { version: LOCK_VERSION, plugins: vec![swap] }.save(path).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_host_refuses_what_is_not_pinned_on_load_and_on_reload() {
    let w = Watched::start(&[("swap.wasm", "swap-v1")], |scratch, s| {
        lock_pinning_v1(&scratch.dir.path().join("toolhost.lock"));
        s.locked = true;
    })
    .await;
    assert_eq!(w.swap_text().await, "v1 v1 v1 ");
    // An unknown plugin dropped in, and an unpinned version of a pinned one.
    w.put("echo.wasm", "echo");
    w.put("swap.wasm", "swap-v2");
    for file in ["echo.wasm", "swap.wasm"] {
        w.until(file, || async { w.status(file).and_then(|s| s.last_error).is_some() }).await;
        let error = w.status(file).unwrap().last_error.unwrap();
        assert!(error.contains("is not in the lock file") && error.contains("toolhost lock"), "{error}");
    }
    assert!(!w.host.is_registered("Echo"), "the unknown plugin is not loaded");
    assert_eq!(w.swap_text().await, "v1 v1 v1 ", "the pinned version keeps serving");

    // At start: an unpinned plugin fails the build, and so does a missing lock.
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.builtins = false;
    s.plugins.push(guest("echo"));
    s.locked = true;
    s.lock_file = Some(scratch.dir.path().join("toolhost.lock"));
    let err = Toolhost::builder().settings(s.clone(), None).build().await.err().expect("no lock file");
    assert!(format!("{err:#}").contains("there is no lock file"), "{err:#}");
    lock_pinning_v1(s.lock_file.as_ref().unwrap());
    let err = Toolhost::builder().settings(s, None).build().await.err().expect("echo is not pinned");
    assert!(format!("{err:#}").contains("is not in the lock file"), "{err:#}");
}

/// `toolhost lock` is how a held-back version is approved: it records what
/// each plugin now declares, the watching host re-reads the lock and swaps
/// the version in, with what the settings grant it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolhost_lock_approves_a_held_back_version() {
    let w = Watched::start(&[("swap.wasm", "swap-v1")], |scratch, s| {
        s.lock_file = Some(scratch.work().join("toolhost.lock"));
    })
    .await;
    w.put("swap.wasm", "swap-v2");
    w.until("v2 is held back", || async { w.status("swap.wasm").and_then(|s| s.last_error).is_some() }).await;
    let out = w.scratch.cli(&["--plugins", &w.plugins().display().to_string(), "lock"]);
    let (stdout, stderr) = toolhost_e2e::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("locked 1 component(s)"), "{stdout}");
    // The swap and the status update are two steps: wait for both.
    w.until("v2 serves and its status is clear", || async {
        w.swap_text().await == "v2 v2 v2 " && w.status("swap.wasm").is_some_and(|s| s.last_error.is_none())
    })
    .await;
    let lock = LockFile::load(&w.scratch.work().join("toolhost.lock")).unwrap().unwrap();
    assert_eq!(lock.plugins.len(), 1);
    assert_eq!((lock.plugins[0].name.as_str(), lock.plugins[0].sha256.as_str()), ("Swap", sha256("swap-v2").as_str()));
    assert_eq!(lock.plugins[0].declared.fs_write, ["/"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_file_is_off_limits_to_every_tool() {
    let scratch = Scratch::new();
    let mut s = scratch.settings();
    s.permissions.mode = Mode::Bypass;
    let lock = scratch.work().join("toolhost.lock");
    s.lock_file = Some(lock.clone());
    let host = scratch.host(s).await;
    let input = json!({"file_path": lock.display().to_string(), "content": "version = 1"});
    let r = call(&host, "Write", input, PermissionAnswer::AllowOnce).await;
    assert_eq!(r.state, ResultState::Denied, "{r:?}");
    assert!(r.text().contains("lock file"), "{}", r.text());
    assert!(!lock.exists());
}
