//! A bound on the number of live HTTP sessions.
//!
//! Every `initialize` over HTTP opens a session that lives until the client ends it
//! (`DELETE`) or it has been idle for [`SESSION_IDLE_TIMEOUT`](crate::SESSION_IDLE_TIMEOUT).
//! Without a bound, a client that keeps initializing (≈2,000 sessions a second from one
//! Python loop, ≈57 KiB each) grows the server by gigabytes before the first one expires.
//! [`BoundedSessions`] is rmcp's in-memory session manager with a ceiling: at
//! [`MAX_HTTP_SESSIONS`] live sessions a new one is refused (the client gets a `503` naming
//! the limit, with `Retry-After`) and the sessions that exist carry on. A session ends — and
//! frees its place — when rmcp closes it, which it does for `DELETE`, idle expiry and server
//! shutdown.

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, SessionId, SessionManager};
use rmcp::transport::worker::WorkerTransport;

/// Live HTTP sessions one server keeps by default (≈57 MiB of session state at most).
pub const MAX_HTTP_SESSIONS: usize = 1024;

/// The words that say the session table is full; [`crate::http`] looks for them in rmcp's
/// answer to a refused `initialize` to turn it into a `503`.
pub(crate) const SESSIONS_FULL: &str = "MCP sessions are open, the most this server keeps: \
     end one (HTTP DELETE) or wait until idle ones expire";

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionLimitError {
    /// The server has as many sessions as it keeps.
    #[error("{limit} {SESSIONS_FULL}")]
    Full {
        /// The limit.
        limit: usize,
    },
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's [`LocalSessionManager`] with at most `limit` live sessions.
#[derive(Debug)]
pub(crate) struct BoundedSessions {
    inner: LocalSessionManager,
    limit: usize,
}

impl BoundedSessions {
    pub(crate) fn new(inner: LocalSessionManager, limit: usize) -> Self {
        Self { inner, limit }
    }

    /// Refuses when the limit is reached. The count can run over by the number of
    /// sessions being created at the same moment (the check and the insert are separate
    /// steps inside rmcp), which the limit's headroom absorbs.
    async fn check_room(&self) -> Result<(), SessionLimitError> {
        if self.inner.sessions.read().await.len() >= self.limit {
            tracing::warn!(limit = self.limit, "MCP session refused: limit reached");
            return Err(SessionLimitError::Full { limit: self.limit });
        }
        Ok(())
    }
}

impl SessionManager for BoundedSessions {
    type Error = SessionLimitError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.check_room().await?;
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.check_room().await?;
        Ok(self.inner.restore_session(id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_beyond_the_limit_are_refused_until_one_closes() {
        let sessions = BoundedSessions::new(LocalSessionManager::default(), 2);
        let (a, _ta) = sessions.create_session().await.unwrap();
        let (_b, _tb) = sessions.create_session().await.unwrap();
        let refused = sessions.create_session().await;
        assert!(
            matches!(refused, Err(SessionLimitError::Full { limit: 2 })),
            "{:?}",
            refused.err()
        );
        assert!(
            matches!(
                sessions.restore_session(SessionId::from("x")).await,
                Err(SessionLimitError::Full { .. })
            ),
            "restoring also opens a session"
        );
        sessions.close_session(&a).await.unwrap();
        assert!(!sessions.has_session(&a).await.unwrap());
        assert!(sessions.create_session().await.is_ok());
    }
}
