//! What the host's background threads (the audit writer, the trace
//! exporter) share: they do work that can wait, beside calls that cannot.

/// Makes the calling thread yield to the calls on a busy machine: the
/// writer's work can wait, a call's cannot (Linux: a thread's own nice
/// value; elsewhere nothing).
pub(crate) fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority take no pointers; a failure leaves the
    // priority as it was.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}
