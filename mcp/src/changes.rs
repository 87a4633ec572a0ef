//! `notifications/tools/list_changed`: every change of the host's tool set
//! ([`toolhost::Toolhost::tool_list_changes`], bumped by each register,
//! replace and unload) is forwarded to each listening client: a
//! `subscriptions/listen` sink on 2026-07-28, the session's peer on
//! 2025-11-25 and earlier. A 2026-07-28 listener also follows the group
//! changes (`reset_tools`) of the agent state its requests share, which
//! change what it is offered as much as a new tool does; and every listener
//! follows the tool-set changes of the deployment's other replicas
//! (`fanout.rs`).

use std::future::Future;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Calls `notify` once for each change seen on `changes` or on one of
/// `others` (changes that come faster than a notification is sent fold
/// into one: the client lists again anyway), until either token of `until`
/// fires, the host is gone, or `notify` says the listener is closed
/// (returns `false`). One of `others` that closes (its state ended) is
/// followed no more; the tool set still is.
pub(crate) async fn forward<F, Fut>(
    mut changes: watch::Receiver<u64>,
    mut others: Vec<watch::Receiver<u64>>,
    until: [&CancellationToken; 2],
    mut notify: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    // Only changes after the listener started count.
    changes.mark_unchanged();
    for other in &mut others {
        other.mark_unchanged();
    }
    loop {
        let other_change = async {
            if others.is_empty() {
                return std::future::pending().await;
            }
            let (changed, index, _) =
                futures::future::select_all(others.iter_mut().map(|o| Box::pin(o.changed()))).await;
            (index, changed.is_ok())
        };
        let closed_other = tokio::select! {
            () = until[0].cancelled() => return,
            () = until[1].cancelled() => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                None
            }
            (index, alive) = other_change => (!alive).then_some(index),
        };
        if let Some(index) = closed_other {
            others.remove(index);
            continue;
        }
        if !notify().await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn each_change_notifies_until_the_listener_closes() {
        let (tx, rx) = watch::channel(0u64);
        tx.send_replace(1); // before the listener: not a change for it
        let sent = Arc::new(AtomicU32::new(0));
        let counted = sent.clone();
        let task = tokio::spawn(async move {
            let never = CancellationToken::new();
            forward(rx, Vec::new(), [&never, &never], move || {
                let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
                async move { n < 2 } // the second send finds the listener closed
            })
            .await
        });
        tokio::task::yield_now().await;
        assert_eq!(sent.load(Ordering::SeqCst), 0, "a change before listening was forwarded");
        for generation in 2..=3 {
            tx.send_replace(generation);
            while sent.load(Ordering::SeqCst) < generation as u32 - 1 {
                tokio::task::yield_now().await;
            }
        }
        task.await.unwrap();
        assert_eq!(sent.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_stop_ends_the_listener() {
        let (_tx, rx) = watch::channel(0u64);
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            forward(rx, Vec::new(), [&CancellationToken::new(), &stopped], || async { true }).await
        });
        stop.cancel();
        task.await.unwrap();
    }
}
