//! Messages between the processes of a deployment ([`EventBus`]): what one
//! replica must tell the listeners held by every other — its tool set
//! changed, a watched file failed to reload. Only a wake-up: nothing a
//! later request depends on travels here (that stays in the store's keys).

/// The most bytes one message may have; a larger one is not sent, and one
/// received is dropped.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// What a subscriber of an [`EventBus`] receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusMessage {
    /// A message another process published (its text, as sent).
    Message(std::sync::Arc<str>),
    /// The link to the bus was lost and is back: messages may have been
    /// missed meanwhile, so a listener assumes everything changed.
    Reconnected,
}

/// Publish/subscribe among the processes of a deployment. A message goes to
/// every other process subscribed at the time, never back to its sender,
/// at most once, with no history: a process that was not listening misses
/// it (and is told [`BusMessage::Reconnected`] when that was a lost link).
#[async_trait::async_trait]
pub trait EventBus: Send + Sync + std::fmt::Debug + 'static {
    /// Sends `message` (at most [`MAX_MESSAGE_BYTES`]) to the other processes.
    async fn publish(&self, message: &str) -> Result<(), crate::state::StateError>;
    /// The messages of the other processes from now on. A receiver that
    /// falls behind by more than the bus keeps loses the oldest (and is told
    /// so by `Lagged`).
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<BusMessage>;
}
