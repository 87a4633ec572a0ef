//! The write deadline of a connection: a client that stops reading fills
//! the socket's send buffer, and the server's writes stop making progress;
//! once a write has waited that long, the connection fails, which drops the
//! response (a stream, a call's answer) and frees its slot. A client that
//! reads, however slowly, or a stream with nothing to send, is not touched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `io` whose writes fail once one has waited `timeout` for room.
pub(crate) struct WriteDeadline<IO> {
    io: IO,
    timeout: Duration,
    /// Started when a write found no room; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<IO> WriteDeadline<IO> {
    pub(crate) fn new(io: IO, timeout: Duration) -> Self {
        Self { io, timeout, stalled: None }
    }

    /// After the inner write answered `polled`: progress clears the clock; no
    /// room starts it, and past the deadline is an error.
    fn account<T>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let timeout = self.timeout;
        let clock = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        ready!(clock.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client read nothing for {timeout:?} while the server had a response to send"),
        )))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for WriteDeadline<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.account(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.account(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.account(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_shutdown(cx);
        self.account(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt as _;

    #[tokio::test]
    async fn a_write_that_finds_no_room_fails_after_the_deadline_and_progress_resets_it() {
        // A pipe of 64 bytes whose far end reads only when it wants.
        let (near, mut far) = tokio::io::duplex(64);
        let mut near = WriteDeadline::new(near, Duration::from_secs(1));
        // A slow reader (a little every 50 ms, 1.5 s in all) keeps the
        // writes going past the deadline: each bit of progress resets it.
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 64];
            for _ in 0..30 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                tokio::io::AsyncReadExt::read_exact(&mut far, &mut buf).await.unwrap();
            }
            far
        });
        for _ in 0..31 {
            near.write_all(&[b'x'; 64]).await.unwrap();
        }
        let _far = reader.await.unwrap();
        // Now nobody reads: the next write fails once the deadline passes.
        let e = near.write_all(&[b'z'; 64]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("read nothing"), "{e}");
    }
}
