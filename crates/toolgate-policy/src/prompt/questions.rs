//! Questions for the user, as every prompter reads answers to them: a label must be one of
//! the question's options, a single-choice question takes one, and free text is kept apart
//! as the user's own answer. An answer that fits none of this is refused — the model is
//! told the question failed, never handed a guess.

use serde_json::Value;
use toolgate_core::asking::{Question, QuestionAnswer, QuestionForm, Unanswered};

/// Longest free-text answer kept; the rest is cut (a person's answer, not a document).
pub const MAX_OTHER_CHARS: usize = 4_000;

/// Checks one answer against its question.
pub fn check(
    question: &Question,
    selected: Vec<String>,
    other: Option<String>,
) -> Result<QuestionAnswer, Unanswered> {
    let other = other
        .map(|o| o.trim().chars().take(MAX_OTHER_CHARS).collect::<String>())
        .filter(|o| !o.is_empty());
    if let Some(bad) = selected
        .iter()
        .find(|s| !question.options.iter().any(|o| &o.label == *s))
    {
        return Err(Unanswered::Failed(format!(
            "the answer `{bad}` to \"{}\" is not one of its options",
            question.question
        )));
    }
    if selected.len() > 1 && !question.multi_select {
        return Err(Unanswered::Failed(format!(
            "\"{}\" takes one choice and the answer picked {}",
            question.question,
            selected.len()
        )));
    }
    if selected.is_empty() && other.is_none() {
        return Err(Unanswered::Failed(format!(
            "no choice was made for \"{}\"",
            question.question
        )));
    }
    Ok(QuestionAnswer {
        question: question.question.clone(),
        selected,
        other,
    })
}

/// The answers in a JSON-lines reply (`answers: [{selected, other}]`, or `decision:
/// decline`), checked against the form.
pub fn from_reply(form: &QuestionForm, reply: &Value) -> Result<Vec<QuestionAnswer>, Unanswered> {
    match reply.get("decision").and_then(Value::as_str) {
        Some("decline" | "deny") => return Err(Unanswered::Declined),
        Some("cancel" | "dismiss") => return Err(Unanswered::Dismissed),
        _ => {}
    }
    let Some(answers) = reply.get("answers").and_then(Value::as_array) else {
        return Err(Unanswered::Failed(
            "the prompt UI's answer had no `answers`".into(),
        ));
    };
    if answers.len() != form.questions.len() {
        return Err(Unanswered::Failed(format!(
            "the prompt UI answered {} of {} questions",
            answers.len(),
            form.questions.len()
        )));
    }
    form.questions
        .iter()
        .zip(answers)
        .map(|(q, a)| {
            let selected = a
                .get("selected")
                .and_then(Value::as_array)
                .map(|s| {
                    s.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let other = a.get("other").and_then(Value::as_str).map(str::to_owned);
            check(q, selected, other)
        })
        .collect()
}

/// A question as a terminal shows it: numbered options.
pub fn render(index: usize, total: usize, q: &Question) -> String {
    let mut t = String::new();
    let tag = if q.header.is_empty() {
        String::new()
    } else {
        format!("[{}] ", q.header)
    };
    t.push_str(&format!(
        "\n  ({}/{total}) {tag}{}\n",
        index + 1,
        q.question
    ));
    for (i, o) in q.options.iter().enumerate() {
        if o.description.is_empty() {
            t.push_str(&format!("    {}. {}\n", i + 1, o.label));
        } else {
            t.push_str(&format!("    {}. {} — {}\n", i + 1, o.label, o.description));
        }
    }
    if q.multi_select {
        t.push_str("  numbers separated by commas, or type your own answer; q to skip\n> ");
    } else {
        t.push_str("  a number, or type your own answer; q to skip\n> ");
    }
    t
}

/// What a typed line means for a question: the options it names by number, or the user's
/// own words; `None` to skip.
pub fn parse_typed(q: &Question, line: &str) -> Option<(Vec<String>, Option<String>)> {
    let line = line.trim();
    if line.is_empty() || line.eq_ignore_ascii_case("q") {
        return None;
    }
    let picks: Option<Vec<String>> = line
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| q.options.get(i))
                .map(|o| o.label.clone())
        })
        .collect();
    match picks {
        Some(p) if !p.is_empty() => Some((p, None)),
        _ => Some((Vec::new(), Some(line.to_owned()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolgate_core::asking::QuestionOption;

    fn q(multi: bool) -> Question {
        Question {
            question: "Which DB?".into(),
            header: "DB".into(),
            options: vec![
                QuestionOption {
                    label: "Postgres".into(),
                    description: String::new(),
                },
                QuestionOption {
                    label: "SQLite".into(),
                    description: String::new(),
                },
            ],
            multi_select: multi,
        }
    }

    fn form(multi: bool) -> QuestionForm {
        QuestionForm {
            title: "t".into(),
            questions: vec![q(multi)],
        }
    }

    #[test]
    fn replies_must_fit_the_form() {
        let ok = from_reply(
            &form(false),
            &json!({"answers": [{"selected": ["SQLite"]}]}),
        );
        assert_eq!(ok.unwrap()[0].selected, vec!["SQLite"]);
        let other = from_reply(&form(false), &json!({"answers": [{"other": " MySQL "}]}));
        assert_eq!(other.unwrap()[0].other.as_deref(), Some("MySQL"));
        for bad in [
            json!({"answers": [{"selected": ["Oracle"]}]}),
            json!({"answers": [{"selected": ["Postgres", "SQLite"]}]}),
            json!({"answers": []}),
            json!({"answers": [{}]}),
            json!({}),
        ] {
            assert!(
                matches!(from_reply(&form(false), &bad), Err(Unanswered::Failed(_))),
                "{bad}"
            );
        }
        let two = from_reply(
            &form(true),
            &json!({"answers": [{"selected": ["Postgres", "SQLite"]}]}),
        );
        assert_eq!(two.unwrap()[0].selected.len(), 2);
        assert_eq!(
            from_reply(&form(false), &json!({"decision": "decline"})),
            Err(Unanswered::Declined)
        );
    }

    #[test]
    fn typed_answers() {
        let q = q(true);
        assert_eq!(
            parse_typed(&q, "1, 2"),
            Some((vec!["Postgres".into(), "SQLite".into()], None))
        );
        assert_eq!(parse_typed(&q, "3"), Some((Vec::new(), Some("3".into()))));
        assert_eq!(parse_typed(&q, "q"), None);
        assert_eq!(
            parse_typed(&q, "use MySQL"),
            Some((Vec::new(), Some("use MySQL".into())))
        );
    }
}
