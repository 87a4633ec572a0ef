//! Where background compiles run: a rayon pool of low-priority threads.
//!
//! wasmtime compiles a component's functions in parallel on rayon, and a
//! parallel compile started inside a pool's [`rayon::ThreadPool::install`]
//! runs on that pool's threads. A plugin compiled in the background (tens
//! of seconds for a 19 MB Python component) therefore runs here, on as many
//! threads as there are cores, each [`NICE`] steps nicer than the thread
//! that started the pool (Linux; elsewhere at normal priority): an idle machine compiles at full speed, and the calls
//! a host serves meanwhile (its tokio threads, at normal priority) take the
//! cores first instead of waiting behind the compile.

use std::sync::OnceLock;

/// How much nicer the pool's threads are than the host's: a compile gets
/// about a tenth of a core that a call wants (the kernel's weights for nice
/// 10 against 0), and every idle cycle.
pub const NICE: i32 = 10;

/// Runs `f` on the low-priority pool (its parallel work too) and returns
/// its result; blocks the calling thread meanwhile. Falls back to running
/// `f` here when the pool cannot be started.
pub fn run_low_priority<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    match pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("toolhost-compile-{i}"))
            .start_handler(|_| lower_priority())
            .build();
        match built {
            Ok(pool) => Some(pool),
            Err(e) => {
                tracing::warn!("could not start the background compile threads ({e}); compiling at normal priority");
                None
            }
        }
    })
    .as_ref()
}

/// Makes the calling thread [`NICE`] steps nicer (at most 19; on Linux a
/// nice value belongs to a thread, and a new thread starts with its
/// creator's).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let nice = (current_nice() + NICE).min(19);
        // SAFETY: setpriority with who = 0 changes only the calling thread.
        let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
        if done != 0 {
            tracing::debug!("could not lower a compile thread's priority: {}", std::io::Error::last_os_error());
        }
    }
}

/// The nice value of the calling thread (Linux).
#[cfg(target_os = "linux")]
fn current_nice() -> i32 {
    // SAFETY: getpriority reads the calling thread's nice value.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn work_in_the_pool_runs_at_the_lower_priority_and_the_caller_keeps_its_own() {
        let before = current_nice();
        let (outer, inner) = run_low_priority(|| {
            // A nested parallel job (as wasmtime's compile makes) stays in the pool.
            let (a, b) = rayon::join(current_nice, current_nice);
            (current_nice(), a.max(b))
        });
        let want = (before + NICE).min(19);
        assert!(outer == want && inner == want, "pool threads at nice {outer}/{inner}, not {want}");
        assert_eq!(current_nice(), before, "the calling thread's priority is unchanged");
    }
}
