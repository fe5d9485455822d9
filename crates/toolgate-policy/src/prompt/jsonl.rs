//! The JSON-lines prompter, for embedding UIs: one request line out, one answer line in,
//! over a spawned command's stdin/stdout (a socket pair), two inherited file descriptors,
//! or any async stream.
//!
//! Request (one line):
//!
//! ```json
//! {"type":"permission_request","id":"1","nonce":"9f0c…(32 hex digits)","tool":"Bash",
//!  "input":{"command":"npm test"},"mode":"default","reason":"no allow rule covers …",
//!  "layer":"default","rule":null,"source":null,"suggestions":["Bash(npm test)"],
//!  "persist":true,"suggestions_unavailable":null}
//! ```
//!
//! Answer (one line): `{"id":"1","nonce":"9f0c…","decision":"allow"|"allow_always"|"deny",
//! "message":"…"}`.
//!
//! Questions for the user (AskUserQuestion, plan approval) use the same channel and rules:
//!
//! ```json
//! {"type":"question_request","id":"2","nonce":"…","title":"The agent asks",
//!  "questions":[{"question":"Which database?","header":"DB","multiSelect":false,
//!                "options":[{"label":"Postgres","description":"…"},{"label":"SQLite","description":"…"}]}]}
//! ```
//!
//! answered with one entry per question, `{"id":"2","nonce":"…","answers":[{"selected":
//! ["Postgres"]}]}` (or `{"other": "my own answer"}` in place of `selected`), or
//! `{"id":"2","nonce":"…","decision":"decline"}`. A label that is not one of the options, a
//! missing answer or several picks on a single-choice question is refused, not guessed at.
//!
//! The channel is a security boundary (docs/permissions.md): a process that can write into
//! it must not be able to approve anything. So each request carries a fresh 128-bit
//! `nonce` from the OS, and the only line that can answer it is the first one read after
//! the request was written, echoing both its `id` and its `nonce`. Anything else is a
//! protocol error that refuses the call: an answer for another or an unknown id, a wrong
//! or missing nonce, a malformed or oversize line, end of stream, a timeout. Lines that
//! arrive while nothing is asked are discarded before the next request is written (they
//! could only be stale or forged), and a late answer to a request given up on (it carries
//! that request's id and nonce) is skipped, so one slow answer does not refuse the next
//! call too. Nothing is queued for later.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use toolgate_core::asking::{QuestionAnswer, QuestionForm, Unanswered};
use toolgate_protocol::Verdict;

use super::channel::{self, ABANDONED_KEPT, Io, Shared};
use super::{Answer, Offer, PolicyPrompter, resolve};
use crate::engine::{Engine, PolicyRequest};

/// How long an embedding UI has to answer before the call is refused.
pub const DEFAULT_PROMPT_TIMEOUT: Duration = Duration::from_secs(600);

/// Request ids, unique within the process (for people reading logs; the nonce is what
/// authenticates an answer).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Longest answer line accepted; more is a refusal.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// Bytes of OS randomness in a request's nonce: 128 bits, beyond guessing.
const NONCE_BYTES: usize = 16;

/// Asks over JSON lines.
pub struct JsonLinesPrompter {
    engine: Arc<Engine>,
    io: Shared,
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
    decision: String,
    #[serde(default)]
    message: Option<String>,
}

/// One request in flight: what its answer must echo.
struct Asked<'a> {
    id: &'a str,
    nonce: &'a str,
}

impl JsonLinesPrompter {
    /// Over any async reader and writer.
    pub fn new(
        engine: Arc<Engine>,
        reader: impl AsyncBufRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Self {
        Self::over(engine, Arc::new(Mutex::new(Io::new(reader, writer))), None)
    }

    fn over(engine: Arc<Engine>, io: Shared, child: Option<tokio::process::Child>) -> Self {
        Self {
            engine,
            io,
            timeout: DEFAULT_PROMPT_TIMEOUT,
            _child: child,
        }
    }

    /// Over two inherited file descriptors (requests written to `out_fd`, answers read
    /// from `in_fd`): pipes or sockets. They are taken once per process — marked
    /// close-on-exec, so no child inherits them — and shared by every prompter over the
    /// same pair. Must be called within a tokio runtime.
    pub async fn from_fds(engine: Arc<Engine>, in_fd: u32, out_fd: u32) -> std::io::Result<Self> {
        Ok(Self::over(engine, channel::fds(in_fd, out_fd)?, None))
    }

    /// Spawns `program args…` and talks to its stdin and stdout, one socket pair (killed
    /// when dropped).
    pub fn spawn(engine: Arc<Engine>, program: &str, args: &[String]) -> std::io::Result<Self> {
        let (child, io) = channel::spawn(program, args)?;
        Ok(Self::over(engine, Arc::new(Mutex::new(io)), Some(child)))
    }

    /// Sets the answer timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Writes the request and reads its answer: the UI's answer line, or why there is none
    /// (a protocol error). Runs under the channel's lock; cancelled by the answer timeout.
    async fn exchange(io: &mut Io, line: &str, asked: &Asked<'_>) -> Result<Value, String> {
        discard_stray_lines(io)?;
        if io.writer.write_all(line.as_bytes()).await.is_err() || io.writer.flush().await.is_err() {
            return Err("the prompt UI's channel is closed".into());
        }
        loop {
            let line = read_line(io).await?;
            let Ok(reply) = serde_json::from_slice::<Value>(line.trim_ascii()) else {
                return Err("the prompt UI's answer was not understood".into());
            };
            let id = reply.get("id").and_then(Value::as_str).unwrap_or_default();
            let nonce = reply
                .get("nonce")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if id == asked.id && nonce == asked.nonce {
                return Ok(reply);
            }
            if is_late(io, id, nonce) {
                tracing::debug!(id, "late answer to an abandoned prompt skipped");
                continue;
            }
            tracing::warn!(
                id,
                "prompt channel: an answer that is not for the pending request; refusing it"
            );
            return Err(format!(
                "refused: the prompt channel carried an answer that does not match request {} \
                 (wrong id or nonce: stale, or written by someone other than the prompt UI)",
                asked.id
            ));
        }
    }

    /// Sends `msg` (given a fresh `id` and `nonce`) and waits for its answer under the
    /// channel's lock and the answer timeout; a request given up on is remembered so its
    /// late answer is skipped.
    async fn round_trip(&self, mut msg: Value) -> Result<Value, String> {
        // Process-wide, so a UI serving several sessions (one `serve --http` process) never
        // sees two requests with the same id.
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed).to_string();
        let nonce = nonce().map_err(|e| format!("no randomness for the prompt's nonce: {e}"))?;
        if let Value::Object(map) = &mut msg {
            map.insert("id".into(), json!(id));
            map.insert("nonce".into(), json!(nonce));
        }
        let mut line = msg.to_string();
        line.push('\n');
        let asked = Asked {
            id: &id,
            nonce: &nonce,
        };
        let mut io = self.io.lock().await;
        let exchanged = match tokio::time::timeout(
            self.timeout,
            Self::exchange(&mut io, &line, &asked),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {} s", self.timeout.as_secs())),
        };
        if exchanged.is_err() {
            // Given up on without the UI's answer: whatever answer the UI still sends for
            // it is late, not forged.
            if io.abandoned.len() >= ABANDONED_KEPT {
                io.abandoned.remove(0);
            }
            io.abandoned.push((id, nonce));
        }
        exchanged
    }
}

/// A late answer to a request this channel gave up on: its exact id and nonce.
fn is_late(io: &Io, id: &str, nonce: &str) -> bool {
    !nonce.is_empty() && io.abandoned.iter().any(|(i, n)| i == id && n == nonce)
}

/// Reads complete lines that are already waiting, without waiting for more, and drops them:
/// nothing was asked, so they are stale or forged. Late answers to abandoned requests are
/// expected here and dropped quietly.
fn discard_stray_lines(io: &mut Io) -> Result<(), String> {
    loop {
        let limit = line_budget(io)?;
        let Io {
            reader, pending, ..
        } = io;
        match reader.take(limit).read_until(b'\n', pending).now_or_never() {
            None => return Ok(()),
            Some(Err(_)) => return Err("the prompt UI's channel failed".into()),
            // End of stream: the next read reports it.
            Some(Ok(0)) => return Ok(()),
            Some(Ok(_)) if io.pending.ends_with(b"\n") => {
                let line = std::mem::take(&mut io.pending);
                let late = serde_json::from_slice::<Value>(line.trim_ascii()).is_ok_and(|r| {
                    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
                    is_late(io, field("id"), field("nonce"))
                });
                if !late {
                    tracing::warn!("prompt channel: discarded a line that arrived unasked");
                }
            }
            Some(Ok(_)) => {}
        }
    }
}

/// How many more bytes the line being read may take.
fn line_budget(io: &mut Io) -> Result<u64, String> {
    if io.pending.len() >= MAX_LINE_BYTES {
        io.pending.clear();
        return Err("the prompt UI's answer was too long".into());
    }
    Ok((MAX_LINE_BYTES - io.pending.len()) as u64)
}

/// The next complete line (cancel-safe: a partial line stays in `pending`).
async fn read_line(io: &mut Io) -> Result<Vec<u8>, String> {
    loop {
        let limit = line_budget(io)?;
        let Io {
            reader, pending, ..
        } = io;
        match reader.take(limit).read_until(b'\n', pending).await {
            Err(_) => return Err("the prompt UI's channel failed".into()),
            Ok(0) => return Err("the prompt UI closed its channel without answering".into()),
            Ok(_) if io.pending.ends_with(b"\n") => return Ok(std::mem::take(&mut io.pending)),
            Ok(_) => {}
        }
    }
}

/// A fresh nonce: 128 bits from the OS, as hex.
fn nonce() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; NONCE_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(hex::encode(bytes))
}

#[async_trait]
impl PolicyPrompter for JsonLinesPrompter {
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        let offer = Offer::for_call(&self.engine, req);
        let msg = json!({
            "type": "permission_request",
            "tool": req.tool,
            "input": req.input,
            "mode": req.mode,
            "reason": verdict.reason,
            "layer": verdict.layer,
            "rule": verdict.rule,
            "source": verdict.source,
            "suggestions": offer.rules.as_ref().ok(),
            "persist": offer.persist,
            "waits_for_trust": offer.waits_for_trust,
            "saves": offer.where_saved(),
            "suggestions_unavailable": offer.rules.as_ref().err(),
        });
        let answer = match self.round_trip(msg).await {
            Ok(reply) => match serde_json::from_value::<Reply>(reply) {
                Ok(reply) => match reply.decision.as_str() {
                    "allow" => Answer::AllowOnce,
                    "allow_always" => Answer::AllowAlways,
                    _ => Answer::Deny(reply.message),
                },
                Err(_) => Answer::Deny(Some("the prompt UI's answer was not understood".into())),
            },
            Err(why) => Answer::Deny(Some(why)),
        };
        let answer = match answer {
            Answer::AllowAlways if offer.rules.is_err() => Answer::AllowOnce,
            a => a,
        };
        resolve(&self.engine, &offer, answer, verdict)
    }

    async fn ask_user(&self, form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
        let msg = json!({
            "type": "question_request",
            "title": form.title,
            "questions": form.questions,
        });
        let reply = self.round_trip(msg).await.map_err(Unanswered::Failed)?;
        super::questions::from_reply(form, &reply)
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

#[async_trait]
impl PolicyPrompter for LazyJsonLinesPrompter {
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        match self.prompter.get_or_init(|| self.connect()).await {
            Ok(p) => p.ask(req, verdict).await,
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

    async fn ask_user(&self, form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
        match self.prompter.get_or_init(|| self.connect()).await {
            Ok(p) => p.ask_user(form).await,
            Err(why) => Err(Unanswered::Failed(format!(
                "the prompt UI is unavailable: {why}"
            ))),
        }
    }
}
