//! Where MCP connections get their gate sessions from, and who a connection is.
//!
//! A connection's *profile* comes only from something the client proved: the bearer token
//! it presented over HTTP (one token per profile, [`HttpOptions::profile_tokens`]), or how
//! the server was launched (`--profile` for a stdio server, whose one client is whoever
//! started it). The client's `clientInfo.name` is a label: recorded in the audit log,
//! never consulted for permissions — any client can call itself anything.
//!
//! [`HttpOptions::profile_tokens`]: crate::HttpOptions::profile_tokens

use toolgate_core::{Gate, SessionOptions, View};

use crate::error::SessionError;

/// Longest client name recorded; a longer `clientInfo.name` is cut. A client chooses its
/// name freely, and the name lands in every audit record of its session.
pub const MAX_CLIENT_NAME_CHARS: usize = 64;

/// Who is on the other end of a connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ClientIdentity {
    /// The profile the client authenticated as (its bearer token's profile); `None`: the
    /// server's own session settings (stdio, the plain `--token`, or no token).
    pub profile: Option<String>,
    /// The client's self-declared name (`clientInfo.name`), made safe to record: at most
    /// [`MAX_CLIENT_NAME_CHARS`] characters, control characters and `@` replaced by `_`.
    pub name: Option<String>,
}

impl ClientIdentity {
    /// An identity with the authenticated `profile` and the client's claimed `name`.
    pub fn new(profile: Option<&str>, name: Option<&str>) -> Self {
        Self {
            profile: profile.map(str::to_owned),
            name: name.map(label),
        }
    }

    /// What the audit log records as the session's `client`: `NAME@PROFILE` when a
    /// profile was authenticated, else `NAME` ([`crate::UNNAMED_CLIENT`] without a name).
    /// `@` cannot occur in a name, so a client cannot pose as a profile.
    pub fn audit_label(&self) -> String {
        let name = self.name.as_deref().unwrap_or(crate::UNNAMED_CLIENT);
        match &self.profile {
            Some(profile) => format!("{name}@{profile}"),
            None => name.to_owned(),
        }
    }
}

fn label(name: &str) -> String {
    name.chars()
        .take(MAX_CLIENT_NAME_CHARS)
        .map(|c| if c.is_control() || c == '@' { '_' } else { c })
        .collect()
}

/// Opens one gate session per MCP connection (stdio process, HTTP session).
///
/// The front door that builds gates from settings implements this: it picks the profile
/// the client authenticated as and records [`ClientIdentity::audit_label`] as the session's
/// `client`.
pub trait SessionSource: Send + Sync + 'static {
    /// A new session for `client`. Must refuse a profile it does not know.
    fn open(&self, client: &ClientIdentity) -> Result<Gate, SessionError>;

    /// The view of a session whose client is not known yet. Used only to look a tool's input
    /// schema up for HTTP header validation, never to decide a call.
    fn default_view(&self) -> View;

    /// Which tools `tools/list` offers: the whole view (the default), or
    /// `search_tools` / `call_tool` (`toolgate serve --tools=search`).
    fn tools_mode(&self) -> crate::ToolsMode {
        crate::ToolsMode::All
    }
}

/// A gate is a source of sessions over its own registry, stages and view: each connection
/// gets [`Gate::new_session`] with the gate's mode and the client's label. It has no
/// profiles, so a client authenticated as one is refused.
impl SessionSource for Gate {
    fn open(&self, client: &ClientIdentity) -> Result<Gate, SessionError> {
        if let Some(profile) = &client.profile {
            return Err(SessionError(format!(
                "this server has no profile `{profile}`"
            )));
        }
        open_labelled(self, client)
    }

    fn default_view(&self) -> View {
        self.view().clone()
    }
}

/// A new session of `gate` whose audit records name `client`.
pub fn open_labelled(gate: &Gate, client: &ClientIdentity) -> Result<Gate, SessionError> {
    gate.new_session(
        SessionOptions {
            id: None,
            mode: gate.session().mode(),
            client: Some(client.audit_label()),
        },
        None,
    )
    .map_err(|e| SessionError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_labels_that_cannot_pose_as_profiles() {
        let c = ClientIdentity::new(None, Some("x@trusted-ci"));
        assert_eq!(c.audit_label(), "x_trusted-ci");
        let c = ClientIdentity::new(Some("reviewer"), Some("claude\n"));
        assert_eq!(c.audit_label(), "claude_@reviewer");
        let long = "n".repeat(1000);
        let c = ClientIdentity::new(None, Some(&long));
        assert_eq!(c.audit_label().chars().count(), MAX_CLIENT_NAME_CHARS);
        assert_eq!(
            ClientIdentity::default().audit_label(),
            crate::UNNAMED_CLIENT
        );
    }
}
