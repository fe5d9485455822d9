//! The JSON-lines prompter, for embedding UIs: one request line out, one answer line in,
//! over a pair of file descriptors, a spawned command's stdin/stdout, or any async stream.
//!
//! Request (one line):
//!
//! ```json
//! {"type":"permission_request","id":"1","tool":"Bash","input":{"command":"npm test"},
//!  "mode":"default","reason":"no allow rule covers …","layer":"default","rule":null,
//!  "source":null,"suggestions":["Bash(npm test)"],"persist":true,"suggestions_unavailable":null}
//! ```
//!
//! Answer (one line): `{"id":"1","decision":"allow"|"allow_always"|"deny","message":"…"}`.
//! Lines with another id are skipped; a malformed answer, end of stream or a timeout is a
//! refusal (fail closed).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::Mutex;
use toolgate_protocol::Verdict;

use super::{Answer, Offer, PolicyPrompter, resolve};
use crate::engine::{Engine, PolicyRequest};

/// How long an embedding UI has to answer before the call is refused.
pub const DEFAULT_PROMPT_TIMEOUT: Duration = Duration::from_secs(600);

/// Request ids, unique within the process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Longest answer line accepted; more is a refusal.
const MAX_LINE_BYTES: usize = 64 * 1024;

struct Io {
    reader: Box<dyn AsyncBufRead + Unpin + Send>,
    writer: Box<dyn AsyncWrite + Unpin + Send>,
}

/// Asks over JSON lines.
pub struct JsonLinesPrompter {
    engine: Arc<Engine>,
    io: Mutex<Io>,
    timeout: Duration,
    _child: Option<tokio::process::Child>,
}

impl std::fmt::Debug for JsonLinesPrompter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonLinesPrompter")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Reply {
    id: String,
    decision: String,
    #[serde(default)]
    message: Option<String>,
}

impl JsonLinesPrompter {
    /// Over any async reader and writer.
    pub fn new(
        engine: Arc<Engine>,
        reader: impl AsyncBufRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Self {
        Self {
            engine,
            io: Mutex::new(Io {
                reader: Box::new(reader),
                writer: Box::new(writer),
            }),
            timeout: DEFAULT_PROMPT_TIMEOUT,
            _child: None,
        }
    }

    /// Over two inherited file descriptors (requests written to `out_fd`, answers read
    /// from `in_fd`), opened through `/dev/fd`.
    pub async fn from_fds(engine: Arc<Engine>, in_fd: u32, out_fd: u32) -> std::io::Result<Self> {
        let r = tokio::fs::File::open(format!("/dev/fd/{in_fd}")).await?;
        let w = tokio::fs::OpenOptions::new()
            .write(true)
            .open(format!("/dev/fd/{out_fd}"))
            .await?;
        Ok(Self::new(engine, BufReader::new(r), w))
    }

    /// Spawns `program args…` and talks to its stdin and stdout (killed when dropped).
    pub fn spawn(engine: Arc<Engine>, program: &str, args: &[String]) -> std::io::Result<Self> {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let missing = || std::io::Error::other("the prompt command has no stdin/stdout pipe");
        let w = child.stdin.take().ok_or_else(missing)?;
        let r = child.stdout.take().ok_or_else(missing)?;
        let mut p = Self::new(engine, BufReader::new(r), w);
        p._child = Some(child);
        Ok(p)
    }

    /// Sets the answer timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn exchange(&self, line: String, id: &str) -> Answer {
        let mut io = self.io.lock().await;
        if io.writer.write_all(line.as_bytes()).await.is_err() || io.writer.flush().await.is_err() {
            return Answer::Deny(None);
        }
        loop {
            let mut buf = String::new();
            match (&mut io.reader)
                .take(MAX_LINE_BYTES as u64)
                .read_line(&mut buf)
                .await
            {
                Ok(0) | Err(_) => return Answer::Deny(None),
                Ok(_) => {}
            }
            if !buf.ends_with('\n') && buf.len() >= MAX_LINE_BYTES {
                return Answer::Deny(Some("the UI's answer was too long".into()));
            }
            let Ok(reply) = serde_json::from_str::<Reply>(buf.trim()) else {
                return Answer::Deny(Some("the UI's answer was not understood".into()));
            };
            if reply.id != id {
                continue;
            }
            return match reply.decision.as_str() {
                "allow" => Answer::AllowOnce,
                "allow_always" => Answer::AllowAlways,
                _ => Answer::Deny(reply.message),
            };
        }
    }
}

#[async_trait]
impl PolicyPrompter for JsonLinesPrompter {
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        let offer = Offer::for_call(&self.engine, req);
        // Process-wide, so a UI serving several sessions (one `serve --http` process) never
        // sees two requests with the same id.
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed).to_string();
        let msg = json!({
            "type": "permission_request",
            "id": id,
            "tool": req.tool,
            "input": req.input,
            "mode": req.mode,
            "reason": verdict.reason,
            "layer": verdict.layer,
            "rule": verdict.rule,
            "source": verdict.source,
            "suggestions": offer.rules.as_ref().ok(),
            "persist": offer.persist,
            "suggestions_unavailable": offer.rules.as_ref().err(),
        });
        let mut line = msg.to_string();
        line.push('\n');
        let answer = match tokio::time::timeout(self.timeout, self.exchange(line, &id)).await {
            Ok(a) => a,
            Err(_) => Answer::Deny(Some(format!(
                "no answer within {} s",
                self.timeout.as_secs()
            ))),
        };
        let answer = match answer {
            Answer::AllowAlways if offer.rules.is_err() => Answer::AllowOnce,
            a => a,
        };
        resolve(&self.engine, &offer, answer, verdict)
    }
}

/// Where a [`LazyJsonLinesPrompter`] finds its UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonLinesSource {
    /// A command run with `sh -c`, spoken to over its stdin and stdout.
    Command(String),
    /// Two inherited file descriptors: answers are read from `input`, requests written to
    /// `output`.
    Fds {
        /// The descriptor answers arrive on.
        input: u32,
        /// The descriptor requests are written to.
        output: u32,
    },
}

/// A [`JsonLinesPrompter`] that connects on the first ask. Front doors build their gate
/// before an async runtime runs, and most sessions never ask; starting the UI lazily also
/// means a UI that cannot start costs nothing until it is needed — and then every ask is
/// denied with the reason (fail closed), never allowed.
pub struct LazyJsonLinesPrompter {
    engine: Arc<Engine>,
    source: JsonLinesSource,
    prompter: tokio::sync::OnceCell<Result<JsonLinesPrompter, String>>,
}

impl std::fmt::Debug for LazyJsonLinesPrompter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyJsonLinesPrompter")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl LazyJsonLinesPrompter {
    /// A prompter that will connect to `source` when first asked.
    pub fn new(engine: Arc<Engine>, source: JsonLinesSource) -> Self {
        Self {
            engine,
            source,
            prompter: tokio::sync::OnceCell::new(),
        }
    }

    async fn connect(&self) -> Result<JsonLinesPrompter, String> {
        let engine = Arc::clone(&self.engine);
        match &self.source {
            JsonLinesSource::Command(cmd) => {
                JsonLinesPrompter::spawn(engine, "sh", &["-c".to_owned(), cmd.clone()])
                    .map_err(|e| format!("the prompt command `{cmd}` could not be started: {e}"))
            }
            JsonLinesSource::Fds { input, output } => {
                JsonLinesPrompter::from_fds(engine, *input, *output)
                    .await
                    .map_err(|e| format!("prompt descriptors {input},{output}: {e}"))
            }
        }
    }
}

/// One lock per descriptor pair. Every session of a process (each `serve --http` session
/// has its own prompter) opens the same pair; with one exchange at a time on it, an answer
/// can only be read by the prompter that asked.
fn pair_lock(input: u32, output: u32) -> Arc<Mutex<()>> {
    type Locks = std::sync::Mutex<std::collections::HashMap<(u32, u32), Arc<Mutex<()>>>>;
    static LOCKS: std::sync::OnceLock<Locks> = std::sync::OnceLock::new();
    let mut map = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(map.entry((input, output)).or_default())
}

#[async_trait]
impl PolicyPrompter for LazyJsonLinesPrompter {
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        match self.prompter.get_or_init(|| self.connect()).await {
            Ok(p) => match &self.source {
                JsonLinesSource::Fds { input, output } => {
                    let lock = pair_lock(*input, *output);
                    let _turn = lock.lock().await;
                    p.ask(req, verdict).await
                }
                JsonLinesSource::Command(_) => p.ask(req, verdict).await,
            },
            Err(why) => {
                let mut v = Verdict::new(
                    toolgate_protocol::Decision::Deny,
                    toolgate_protocol::Layer::User,
                    format!(
                        "this call needs approval ({}) but the prompt UI is unavailable: {why}",
                        verdict.reason
                    ),
                );
                v.rule = verdict.rule.clone();
                v.source = verdict.source.clone();
                v
            }
        }
    }
}
