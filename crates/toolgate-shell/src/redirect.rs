//! Redirections: every target resolved (a file, a descriptor, a process substitution),
//! here-documents and here-strings expanded into the text fed on stdin.

use brush_parser::ast;

use crate::expand::clip;
use crate::types::Redirect;
use crate::walk::{RedirectRec, Walker};
use crate::words::Field;

impl Walker<'_> {
    /// Resolves one redirection. Returns the record and, for here-docs and here-strings, the
    /// text fed on stdin with whether it is static.
    pub fn redirect(
        &mut self,
        r: &ast::IoRedirect,
    ) -> (Option<RedirectRec>, Option<(String, bool)>) {
        let one = |w: &mut Self, raw: &str| -> Field {
            let mut fs = w.expand_word(raw);
            match fs.len() {
                1 => fs.remove(0),
                _ => Field {
                    text: raw.to_owned(),
                    dynamic: true,
                    ..Field::default()
                },
            }
        };
        let fdnum = |fd: &Option<ast::IoFd>| fd.as_ref().and_then(|f| u32::try_from(*f).ok());
        match r {
            ast::IoRedirect::File(fd, kind, target) => {
                use ast::IoFileRedirectKind as K;
                let (op, write, read) = match kind {
                    K::Read => ("<", false, true),
                    K::Write => (">", true, false),
                    K::Append => (">>", true, false),
                    K::ReadAndWrite => ("<>", true, true),
                    K::Clobber => (">|", true, false),
                    K::DuplicateInput => ("<&", false, false),
                    K::DuplicateOutput => (">&", false, false),
                };
                let field = match target {
                    ast::IoFileRedirectTarget::Filename(w) => one(self, &w.value),
                    ast::IoFileRedirectTarget::Fd(n) => Field::lit(n.to_string()),
                    ast::IoFileRedirectTarget::Duplicate(w) => {
                        let f = one(self, &w.value);
                        // `>&file` (not a number or `-`) writes the file.
                        if !f.text.chars().all(|c| c.is_ascii_digit() || c == '-') {
                            let rec = RedirectRec {
                                public: Redirect {
                                    fd: fdnum(fd),
                                    op: op.into(),
                                    target: f.text.clone(),
                                    dynamic: f.dynamic,
                                },
                                target: f,
                                write: true,
                                read: false,
                            };
                            return (Some(rec), None);
                        }
                        f
                    }
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                        let idx = self.process_substitution(&sub.list);
                        Field {
                            text: "(…)".into(),
                            procsub: Some(idx),
                            ..Field::default()
                        }
                    }
                };
                let write = write && field.procsub.is_none();
                let rec = RedirectRec {
                    public: Redirect {
                        fd: fdnum(fd),
                        op: op.into(),
                        target: field.text.clone(),
                        dynamic: field.dynamic,
                    },
                    target: field,
                    write,
                    read,
                };
                (Some(rec), None)
            }
            ast::IoRedirect::OutputAndError(w, append) => {
                let f = one(self, &w.value);
                let op = if *append { "&>>" } else { "&>" };
                let rec = RedirectRec {
                    public: Redirect {
                        fd: None,
                        op: op.into(),
                        target: f.text.clone(),
                        dynamic: f.dynamic,
                    },
                    target: f,
                    write: true,
                    read: false,
                };
                (Some(rec), None)
            }
            ast::IoRedirect::HereDocument(fd, doc) => {
                let (text, ok) = if doc.requires_expansion {
                    self.expand_heredoc(&doc.doc.value)
                } else {
                    (doc.doc.value.clone(), true)
                };
                let text = if doc.remove_tabs {
                    text.lines()
                        .map(|l| l.trim_start_matches('\t'))
                        .collect::<Vec<_>>()
                        .join("\n")
                } else {
                    text
                };
                let rec = RedirectRec {
                    public: Redirect {
                        fd: fdnum(fd),
                        op: "<<".into(),
                        target: doc.here_end.value.clone(),
                        dynamic: false,
                    },
                    target: Field::lit(&doc.here_end.value),
                    write: false,
                    read: false,
                };
                let stdin = matches!(fdnum(fd), None | Some(0)).then_some((text, ok));
                (Some(rec), stdin)
            }
            ast::IoRedirect::HereString(fd, w) => {
                let fields = self.expand_word(&w.value);
                let dynamic = fields.iter().any(|f| f.dynamic);
                let text = fields
                    .into_iter()
                    .map(|f| f.text)
                    .collect::<Vec<_>>()
                    .join(" ")
                    + "\n";
                let rec = RedirectRec {
                    public: Redirect {
                        fd: fdnum(fd),
                        op: "<<<".into(),
                        target: clip(&text),
                        dynamic,
                    },
                    target: Field::lit(""),
                    write: false,
                    read: false,
                };
                let stdin = matches!(fdnum(fd), None | Some(0)).then_some((text, !dynamic));
                (Some(rec), stdin)
            }
        }
    }
}
