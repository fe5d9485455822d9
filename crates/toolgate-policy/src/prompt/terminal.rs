//! The terminal prompter: allow once / allow always (showing the rules it would save) /
//! deny, read from the controlling terminal.

use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use toolgate_protocol::Verdict;

use toolgate_core::asking::{QuestionAnswer, QuestionForm, Unanswered};

use super::{Answer, Offer, PolicyPrompter, questions, resolve, summary};
use crate::engine::{Engine, PolicyRequest};

/// Invalid answers tolerated before the prompt counts as a refusal.
const MAX_TRIES: usize = 3;

type Io = (Box<dyn BufRead + Send>, Box<dyn Write + Send>);

/// Asks on a terminal (by default `/dev/tty`, so it works while stdin and stdout carry
/// protocol).
pub struct TerminalPrompter {
    engine: Arc<Engine>,
    io: Arc<Mutex<Io>>,
}

impl std::fmt::Debug for TerminalPrompter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalPrompter").finish_non_exhaustive()
    }
}

impl TerminalPrompter {
    /// Opens `/dev/tty`.
    pub fn open(engine: Arc<Engine>) -> std::io::Result<Self> {
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")?;
        let reader = BufReader::new(tty.try_clone()?);
        Ok(Self::with_io(engine, Box::new(reader), Box::new(tty)))
    }

    /// Uses the given reader and writer (tests, other terminals).
    pub fn with_io(
        engine: Arc<Engine>,
        reader: Box<dyn BufRead + Send>,
        writer: Box<dyn Write + Send>,
    ) -> Self {
        Self {
            engine,
            io: Arc::new(Mutex::new((reader, writer))),
        }
    }

    /// The prompt text for a call.
    pub fn render(req: &PolicyRequest<'_>, verdict: &Verdict, offer: &Offer) -> String {
        let mut t = format!(
            "\ntoolgate: {} wants to run\n  {}\n  why it asks: {} [{}",
            req.tool,
            summary(req),
            verdict.reason,
            crate::trace::layer_name(verdict.layer)
        );
        if let (Some(rule), Some(src)) = (&verdict.rule, &verdict.source) {
            t.push_str(&format!(", rule {rule} from {src}"));
        }
        t.push_str("]\n  [y] allow once\n");
        match &offer.rules {
            Ok(rules) => t.push_str(&format!(
                "  [a] allow always: saves {} {}\n",
                rules.join(", "),
                offer.where_saved()
            )),
            Err(why) => t.push_str(&format!("  (allow always is not offered: {why})\n")),
        }
        t.push_str(
            "  [n] deny (add a message for the agent after it: n use the test script instead)\n> ",
        );
        t
    }
}

/// Reads one answer.
fn read_answer(io: &mut Io, text: &str, always_offered: bool) -> Answer {
    let (reader, writer) = io;
    for _ in 0..MAX_TRIES {
        if writer
            .write_all(text.as_bytes())
            .and_then(|()| writer.flush())
            .is_err()
        {
            return Answer::Deny(None);
        }
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return Answer::Deny(None),
            Ok(_) => {}
        }
        let line = line.trim();
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word.to_ascii_lowercase().as_str() {
            "y" | "yes" | "once" => return Answer::AllowOnce,
            "a" | "always" if always_offered => return Answer::AllowAlways,
            "n" | "no" | "deny" => {
                return Answer::Deny(Some(rest.trim().to_owned()).filter(|m| !m.is_empty()));
            }
            _ => {
                let _ = writer.write_all(b"  please answer y, a or n\n");
            }
        }
    }
    Answer::Deny(None)
}

#[async_trait]
impl PolicyPrompter for TerminalPrompter {
    async fn ask(&self, req: &PolicyRequest<'_>, verdict: &Verdict) -> Verdict {
        let offer = Offer::for_call(&self.engine, req);
        let text = Self::render(req, verdict, &offer);
        let always = offer.rules.is_ok();
        let io = Arc::clone(&self.io);
        let answer = tokio::task::spawn_blocking(move || {
            let mut guard = io.lock().unwrap_or_else(PoisonError::into_inner);
            read_answer(&mut guard, &text, always)
        })
        .await
        .unwrap_or(Answer::Deny(None));
        resolve(&self.engine, &offer, answer, verdict)
    }

    async fn ask_user(&self, form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
        let io = Arc::clone(&self.io);
        let form = form.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = io.lock().unwrap_or_else(PoisonError::into_inner);
            read_questions(&mut guard, &form)
        })
        .await
        .unwrap_or_else(|e| Err(Unanswered::Failed(e.to_string())))
    }
}

/// Asks each question in turn; a skipped question or end of input dismisses the form.
fn read_questions(io: &mut Io, form: &QuestionForm) -> Result<Vec<QuestionAnswer>, Unanswered> {
    let (reader, writer) = io;
    let failed = |e: std::io::Error| Unanswered::Failed(format!("the terminal failed: {e}"));
    writer
        .write_all(format!("\ntoolgate: {}\n", form.title).as_bytes())
        .map_err(failed)?;
    let mut answers = Vec::new();
    for (i, q) in form.questions.iter().enumerate() {
        let text = questions::render(i, form.questions.len(), q);
        let mut answer = None;
        for _ in 0..MAX_TRIES {
            writer
                .write_all(text.as_bytes())
                .and_then(|()| writer.flush())
                .map_err(failed)?;
            let mut line = String::new();
            if reader.read_line(&mut line).map_err(failed)? == 0 {
                return Err(Unanswered::Dismissed);
            }
            let Some((selected, other)) = questions::parse_typed(q, &line) else {
                return Err(Unanswered::Dismissed);
            };
            match questions::check(q, selected, other) {
                Ok(a) => {
                    answer = Some(a);
                    break;
                }
                Err(e) => {
                    let _ = writer.write_all(format!("  {e}\n").as_bytes());
                }
            }
        }
        answers.push(answer.ok_or(Unanswered::Dismissed)?);
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_core::asking::{Question, QuestionOption};

    fn form() -> QuestionForm {
        let q = |text: &str, multi: bool| Question {
            question: text.into(),
            header: String::new(),
            options: vec![
                QuestionOption {
                    label: "Postgres".into(),
                    description: "server".into(),
                },
                QuestionOption {
                    label: "SQLite".into(),
                    description: String::new(),
                },
            ],
            multi_select: multi,
        };
        QuestionForm {
            title: "The agent asks".into(),
            questions: vec![q("Which DB?", false), q("Which caches?", true)],
        }
    }

    fn ask(typed: &str) -> Result<Vec<QuestionAnswer>, Unanswered> {
        let mut io: Io = (
            Box::new(std::io::Cursor::new(typed.as_bytes().to_vec())),
            Box::new(Vec::new()),
        );
        read_questions(&mut io, &form())
    }

    #[test]
    fn the_terminal_reads_numbers_words_and_refusals() {
        let got = ask("2\n1, 2\n").unwrap();
        assert_eq!(got[0].selected, vec!["SQLite"]);
        assert_eq!(got[1].selected, vec!["Postgres", "SQLite"]);
        let got = ask("use MySQL\n1\n").unwrap();
        assert_eq!(got[0].other.as_deref(), Some("use MySQL"));
        // Two picks on a single-choice question are asked again, then the answer counts.
        let got = ask("1,2\n2\n1\n").unwrap();
        assert_eq!(got[0].selected, vec!["SQLite"]);
        assert_eq!(ask("q\n"), Err(Unanswered::Dismissed));
        assert_eq!(ask(""), Err(Unanswered::Dismissed));
    }
}
