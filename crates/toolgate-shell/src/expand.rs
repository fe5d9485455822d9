//! Word expansion as bash performs it, as far as it can be done statically: brace expansion,
//! quote removal, ANSI-C decoding, parameter expansion from tracked assignments, command
//! substitution (recursing into the inner code and evaluating constant output), arithmetic
//! scanning and field splitting on `IFS`.

use brush_parser::word::{WordPiece, WordPieceWithSource};

use crate::feed::Output;
use crate::types::Origin;
use crate::walk::{Producer, Walker};
use crate::words::{
    DEFAULT_IFS, Field, Val, decode_ansi_c, expand_braces, has_glob, unescape_backquoted,
    unescape_piece,
};

/// A piece of a word before field splitting.
#[derive(Debug)]
enum Seg {
    /// Text with its properties.
    Text {
        s: String,
        quoted: bool,
        split: bool,
        dynamic: bool,
        net: bool,
        secret: bool,
    },
    /// A forced field boundary (`"${a[@]}"`).
    Break,
}

/// A parameter's value.
pub(crate) enum PVal {
    /// Known values (one per element).
    Known(Vec<String>),
    /// Not statically known.
    Unknown,
    /// Not statically known, but the same as this spelling (`${HOME:-/}` is `${HOME}`, which
    /// path resolution knows).
    UnknownAs(String),
}

impl Walker<'_> {
    /// Expands one raw word into fields.
    pub fn expand_word(&mut self, raw: &str) -> Vec<Field> {
        let limit = self.limits.max_brace_words;
        let words = match expand_braces(raw, limit) {
            None => vec![raw.to_owned()],
            Some(Ok(v)) => v,
            Some(Err(())) => {
                self.opaque(format!(
                    "brace expansion of `{}` is not done: over {limit} words (MAX_BRACE_WORDS), a number out of range or unbalanced braces",
                    clip(raw)
                ));
                return vec![Field {
                    text: raw.to_owned(),
                    dynamic: true,
                    ..Field::default()
                }];
            }
        };
        let mut out = Vec::new();
        for w in words {
            out.extend(self.expand_one(&w));
        }
        out
    }

    fn expand_one(&mut self, raw: &str) -> Vec<Field> {
        // Fast path: plain words.
        if raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
        {
            return vec![Field::lit(raw)];
        }
        let pieces = match crate::parse::parse_word(raw) {
            Ok(p) => p,
            Err(e) => {
                self.opaque(format!("could not parse word `{}`: {e}", clip(raw)));
                return vec![Field {
                    text: raw.to_owned(),
                    dynamic: true,
                    ..Field::default()
                }];
            }
        };
        let mut segs = Vec::new();
        self.pieces_to_segs(raw, &pieces, false, &mut segs);
        self.join_segs(segs)
    }

    /// Expands a here-document body (quotes literal); returns the text and whether it is static.
    pub fn expand_heredoc(&mut self, body: &str) -> (String, bool) {
        if !body.contains('$') && !body.contains('`') && !body.contains('\\') {
            return (body.to_owned(), true);
        }
        match crate::parse::parse_heredoc(body) {
            Ok(pieces) => {
                let mut segs = Vec::new();
                self.pieces_to_segs(body, &pieces, true, &mut segs);
                let mut s = String::new();
                let mut dynamic = false;
                for seg in segs {
                    if let Seg::Text {
                        s: t, dynamic: d, ..
                    } = seg
                    {
                        s.push_str(&t);
                        dynamic |= d;
                    } else {
                        s.push(' ');
                    }
                }
                (s, !dynamic)
            }
            Err(e) => {
                self.opaque(format!("could not parse here-document body: {e}"));
                (body.to_owned(), false)
            }
        }
    }

    fn pieces_to_segs(
        &mut self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        in_dq: bool,
        segs: &mut Vec<Seg>,
    ) {
        for p in pieces {
            let src = raw.get(p.start_index..p.end_index).unwrap_or("").to_owned();
            match &p.piece {
                WordPiece::Text(s) => segs.push(Seg::Text {
                    s: s.clone(),
                    quoted: in_dq,
                    split: false,
                    dynamic: false,
                    net: false,
                    secret: false,
                }),
                WordPiece::SingleQuotedText(s) => segs.push(Seg::Text {
                    s: s.clone(),
                    quoted: true,
                    split: false,
                    dynamic: false,
                    net: false,
                    secret: false,
                }),
                WordPiece::AnsiCQuotedText(s) => segs.push(Seg::Text {
                    s: decode_ansi_c(s),
                    quoted: true,
                    split: false,
                    dynamic: false,
                    net: false,
                    secret: false,
                }),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    // An empty "" still makes a field.
                    segs.push(Seg::Text {
                        s: String::new(),
                        quoted: true,
                        split: false,
                        dynamic: false,
                        net: false,
                        secret: false,
                    });
                    self.pieces_to_segs(raw, inner, true, segs);
                }
                WordPiece::EscapeSequence(s) => segs.push(Seg::Text {
                    s: unescape_piece(s, in_dq),
                    quoted: true,
                    split: false,
                    dynamic: false,
                    net: false,
                    secret: false,
                }),
                WordPiece::TildeExpansion(_) => segs.push(Seg::Text {
                    s: src,
                    quoted: true,
                    split: false,
                    dynamic: false,
                    net: false,
                    secret: false,
                }),
                WordPiece::ParameterExpansion(expr) => {
                    let before = std::mem::take(&mut self.secret_read);
                    let pval = self.param(expr, in_dq);
                    let secret = std::mem::replace(&mut self.secret_read, before);
                    let start = segs.len();
                    match pval {
                        PVal::Known(vals) => {
                            let separate = vals.len() > 1 && in_dq;
                            for (i, v) in vals.into_iter().enumerate() {
                                if i > 0 {
                                    segs.push(if separate {
                                        Seg::Break
                                    } else {
                                        Seg::Text {
                                            s: " ".into(),
                                            quoted: in_dq,
                                            split: !in_dq,
                                            dynamic: false,
                                            net: false,
                                            secret: false,
                                        }
                                    });
                                }
                                segs.push(Seg::Text {
                                    s: v,
                                    quoted: in_dq,
                                    split: !in_dq,
                                    dynamic: false,
                                    net: false,
                                    secret: false,
                                });
                            }
                        }
                        PVal::Unknown => segs.push(Seg::Text {
                            s: src,
                            quoted: true,
                            split: false,
                            dynamic: true,
                            net: false,
                            secret: false,
                        }),
                        PVal::UnknownAs(spelled) => segs.push(Seg::Text {
                            s: spelled,
                            quoted: true,
                            split: false,
                            dynamic: true,
                            net: false,
                            secret: false,
                        }),
                    }
                    if secret {
                        for seg in &mut segs[start..] {
                            if let Seg::Text { secret, .. } = seg {
                                *secret = true;
                            }
                        }
                    }
                }
                WordPiece::CommandSubstitution(code) => self.subst_seg(code, &src, in_dq, segs),
                WordPiece::BackquotedCommandSubstitution(code) => {
                    let code = unescape_backquoted(code);
                    self.subst_seg(&code, &src, in_dq, segs);
                }
                WordPiece::ArithmeticExpression(e) => {
                    self.scan_arith(&e.value);
                    segs.push(Seg::Text {
                        s: src,
                        quoted: true,
                        split: false,
                        dynamic: true,
                        net: false,
                        secret: false,
                    });
                }
            }
        }
    }

    fn subst_seg(&mut self, code: &str, src: &str, in_dq: bool, segs: &mut Vec<Seg>) {
        let (out, secret) = self.substitution_tainted(code);
        let start = segs.len();
        self.output_seg(out, src, in_dq, segs);
        if secret {
            for seg in &mut segs[start..] {
                if let Seg::Text { secret, .. } = seg {
                    *secret = true;
                }
            }
        }
    }

    fn output_seg(&mut self, out: Output, src: &str, in_dq: bool, segs: &mut Vec<Seg>) {
        match out {
            Output::Text(t) => {
                let t = t.trim_end_matches('\n').to_owned();
                segs.push(Seg::Text {
                    s: t,
                    quoted: in_dq,
                    split: !in_dq,
                    dynamic: false,
                    net: false,
                    secret: false,
                });
            }
            Output::Download(_) => segs.push(Seg::Text {
                s: src.to_owned(),
                quoted: true,
                split: false,
                dynamic: true,
                net: true,
                secret: false,
            }),
            Output::Unknown(_) => segs.push(Seg::Text {
                s: src.to_owned(),
                quoted: true,
                split: false,
                dynamic: true,
                net: false,
                secret: false,
            }),
        }
    }

    /// Walks `$(code)` as a subshell and evaluates its output if it is constant; also says
    /// whether the output carries secret material (a command inside read a credentials
    /// file, printed credentials or was given secret data).
    pub fn substitution_tainted(&mut self, code: &str) -> (Output, bool) {
        let first = self.recs.len();
        let saved_pipe = self.last_pipe.take();
        let vars = self.vars.clone();
        let cwd = self.cwd.clone();
        self.walk_code(code, Origin::Substitution);
        self.vars = vars;
        self.cwd = cwd;
        let out = match self.last_pipe.take() {
            Some(stages) => self.pipeline_output(&stages),
            None => Output::Text(String::new()),
        };
        self.last_pipe = saved_pipe;
        let secret = self.recs[first.min(self.recs.len())..]
            .iter()
            .any(|r| r.secret.is_some());
        (out, secret)
    }

    /// Walks `<(code)` / `>(code)` and registers its producer.
    pub fn process_substitution(&mut self, list: &brush_parser::ast::CompoundList) -> usize {
        let saved_pipe = self.last_pipe.take();
        let saved_origin = std::mem::replace(&mut self.origin, Origin::ProcessSubstitution);
        let vars = self.vars.clone();
        let cwd = self.cwd.clone();
        if self.enter() {
            self.depth += 1;
            self.walk_list(list);
            self.depth -= 1;
        }
        self.vars = vars;
        self.cwd = cwd;
        self.origin = saved_origin;
        let stages = self.last_pipe.take().unwrap_or_default();
        self.last_pipe = saved_pipe;
        self.producers.push(Producer { stages });
        self.producers.len() - 1
    }

    fn ifs(&mut self) -> String {
        match self.vars.get("IFS") {
            Some(Val::Scalar(s)) => s.clone(),
            Some(_) => {
                self.opaque(
                    "IFS is assigned a value the analyzer cannot see; word splitting is unknown",
                );
                DEFAULT_IFS.to_owned()
            }
            None => DEFAULT_IFS.to_owned(),
        }
    }

    fn join_segs(&mut self, segs: Vec<Seg>) -> Vec<Field> {
        let needs_ifs = segs
            .iter()
            .any(|s| matches!(s, Seg::Text { split: true, .. }));
        let ifs = if needs_ifs { self.ifs() } else { String::new() };
        let mut fields: Vec<Field> = Vec::new();
        let mut cur: Option<Field> = None;
        for seg in segs {
            match seg {
                Seg::Break => {
                    if let Some(f) = cur.take() {
                        fields.push(f);
                    }
                    cur = Some(Field::default());
                }
                Seg::Text {
                    s,
                    quoted,
                    split,
                    dynamic,
                    net,
                    secret,
                } => {
                    if split && !ifs.is_empty() {
                        let mut first = true;
                        let starts_sep = s.starts_with(|c| ifs.contains(c));
                        let parts: Vec<&str> = s
                            .split(|c| ifs.contains(c))
                            .filter(|p| !p.is_empty())
                            .collect();
                        if starts_sep && let Some(f) = cur.take() {
                            fields.push(f);
                        }
                        let ends_sep = s.ends_with(|c| ifs.contains(c));
                        for p in &parts {
                            if !first && let Some(f) = cur.take() {
                                fields.push(f);
                            }
                            first = false;
                            let f = cur.get_or_insert_with(Field::default);
                            f.text.push_str(p);
                            f.glob |= has_glob(p);
                            f.dynamic |= dynamic;
                            f.net |= net;
                            f.secret |= secret;
                        }
                        if ends_sep
                            && !parts.is_empty()
                            && let Some(f) = cur.take()
                        {
                            fields.push(f);
                        }
                    } else {
                        let f = cur.get_or_insert_with(Field::default);
                        f.text.push_str(&s);
                        f.dynamic |= dynamic;
                        f.net |= net;
                        f.secret |= secret;
                        // `D/*…` stands for listed files wherever it is expanded.
                        if (!quoted && has_glob(&s))
                            || s.ends_with("*…")
                            || s.ends_with("*\u{22ef}")
                        {
                            f.glob = true;
                        }
                    }
                }
            }
        }
        if let Some(f) = cur {
            fields.push(f);
        }
        fields
    }
}

/// Shortens text for messages.
pub(crate) fn clip(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(MAX).collect();
        t.push('…');
        t
    }
}
