//! Where MCP connections get their gate sessions from.

use toolgate_core::{Gate, SessionOptions, View};

use crate::error::SessionError;

/// Opens one gate session per MCP connection (stdio process, HTTP session).
///
/// The front door that builds gates from settings implements this: it picks the profile for
/// the client's name (`clientInfo.name`) and records the name as the session's `client`, so
/// it reaches the audit log.
pub trait SessionSource: Send + Sync + 'static {
    /// A new session for the client called `client`, if it told its name.
    fn open(&self, client: Option<&str>) -> Result<Gate, SessionError>;

    /// The view of a session whose client is not known yet. Used only to look a tool's input
    /// schema up for HTTP header validation, never to decide a call.
    fn default_view(&self) -> View;
}

/// A gate is a source of sessions over its own registry, stages and view: each connection
/// gets [`Gate::new_session`] with the gate's mode and the client's name.
impl SessionSource for Gate {
    fn open(&self, client: Option<&str>) -> Result<Gate, SessionError> {
        self.new_session(
            SessionOptions {
                id: None,
                mode: self.session().mode(),
                client: Some(client.unwrap_or(crate::UNNAMED_CLIENT).to_owned()),
            },
            None,
        )
        .map_err(|e| SessionError(e.to_string()))
    }

    fn default_view(&self) -> View {
        self.view().clone()
    }
}
