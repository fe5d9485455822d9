//! Variables: assignments (plain, `declare`/`export` operands, `${x:=v}`), the code some
//! variables hold (`PROMPT_COMMAND`, `GIT_SSH_COMMAND`, `PS4`), subscripts evaluated as
//! arithmetic, and secret material a variable carries.

use brush_parser::ast;

use crate::types::Origin;
use crate::walk::Walker;
use crate::words::{Field, Val};

impl Walker<'_> {
    /// Environment variables whose value a program runs as a shell command
    /// (`PROMPT_COMMAND`, `GIT_SSH_COMMAND`, `EDITOR`, `LESSOPEN`'s `|cmd %s`, …), and the
    /// prompts, whose `$(…)` run when they are shown (`PS4` under `set -x`).
    pub(crate) fn walk_env_code(&mut self, env: &[(String, String)]) {
        const COMMAND_VARS: &[&str] = &[
            "PROMPT_COMMAND",
            "GIT_SSH_COMMAND",
            "GIT_EXTERNAL_DIFF",
            "GIT_PAGER",
            "GIT_EDITOR",
            "GIT_SEQUENCE_EDITOR",
            "GIT_PROXY_COMMAND",
            "GIT_ASKPASS",
            "SSH_ASKPASS",
            "PAGER",
            "MANPAGER",
            "EDITOR",
            "VISUAL",
            "LESSOPEN",
            "LESSCLOSE",
        ];
        for (name, value) in env {
            if COMMAND_VARS.contains(&name.as_str()) {
                let code = value.trim_start_matches(['|', '-']).replace("%s", "FILE");
                self.nested_code(&code, Origin::Eval, None, None);
            } else if matches!(name.as_str(), "PS0" | "PS1" | "PS2" | "PS4")
                && (value.contains("$(") || value.contains('`'))
            {
                let _ = self.expand_word(value);
            }
        }
    }

    /// Operands of `declare`/`typeset`/`local`/`export`/`readonly` that the parser did not
    /// take as assignments (`declare "f=x"`, `export "$n=v"`): they assign all the same.
    pub(crate) fn declare_operands(&mut self, decl: &str, words: &[Field], fields: &[Field]) {
        let nameref = is_nameref(decl, words);
        for f in fields {
            if f.dynamic {
                self.poison_vars(format!("`{decl}` is given a computed operand"));
                continue;
            }
            if f.text.starts_with(['-', '+']) {
                continue;
            }
            // The value of `name=value` is walked by `set_var`; a nameref's target is a name.
            let name_part = match f.text.split_once('=') {
                Some((name, _)) if !nameref => name,
                _ => f.text.as_str(),
            };
            self.subscript_code(name_part);
            if nameref {
                self.poison_vars("`declare -n` makes a name refer to another variable");
                continue;
            }
            let Some((name, value)) = f.text.split_once('=') else {
                continue;
            };
            let (base, plain) = match name.split_once('[') {
                Some((base, _)) => (base, false),
                None => match name.strip_suffix('+') {
                    Some(base) => (base, false),
                    None => (name, true),
                },
            };
            if !is_name(base) {
                continue;
            }
            let val = if plain {
                Val::Scalar(value.to_owned())
            } else {
                Val::Unknown
            };
            self.set_var(base, val);
        }
    }

    /// Bash evaluates an array subscript as arithmetic wherever a name may carry one
    /// (`test -v`, `printf -v`, `read`, `unset`, `declare`, `${!x}`, `$((x))`), and a `$(…)`
    /// in it runs: `test -v 'a[$(rm -rf ~)]'` runs `rm`. Walks the substitutions in such a
    /// subscript as commands of the call.
    pub(crate) fn subscript_code(&mut self, text: &str) {
        let Some(open) = text.find('[') else {
            return;
        };
        let inner = &text[open + 1..];
        if inner.contains("$(") || inner.contains('`') {
            let _ = self.expand_word(inner);
        }
    }

    /// Forgets every variable for the rest of this shell; see [`crate::words::Vars::poisoned`].
    pub(crate) fn poison_vars(&mut self, why: impl Into<String>) {
        if !self.vars.poisoned {
            self.opaque(format!(
                "{}; variables are not tracked past this point",
                why.into()
            ));
        }
        self.vars.poison();
    }

    pub(crate) fn set_var(&mut self, name: &str, val: Val) {
        if name == "IFS" {
            self.opaque("the command assigns IFS, which changes how words split");
        }
        // `PS4='$(…)'; set -x`, `EDITOR=…; git commit` (EDITOR is usually exported already).
        if let Val::Scalar(v) = &val {
            self.walk_env_code(&[(name.to_owned(), v.clone())]);
            // A value that is a subscripted name runs its `$(…)` wherever arithmetic or an
            // indirection reads it (`$((x))`, `${!x}`, `${s:x}`, `declare -i`).
            self.subscript_code(v);
        }
        let cond = self.cond > 0;
        self.vars.assign(name, val, cond);
        self.rewalk_traps(name);
    }

    /// Records whether a variable now holds secret material (see [`Field::secret`]).
    pub(crate) fn taint_var(&mut self, name: &str, secret: bool) {
        if secret {
            self.vars.secret.insert(name.to_owned());
        } else if self.cond == 0 {
            self.vars.secret.remove(name);
        }
    }

    /// The value of an assignment; sets [`Walker::value_secret`] when it carries secret
    /// material.
    pub(crate) fn assignment_value(&mut self, a: &ast::Assignment) -> (Val, String) {
        match &a.value {
            ast::AssignmentValue::Scalar(w) => {
                let fields = self.expand_word(&w.value);
                self.value_secret = fields.iter().any(|f| f.secret);
                let text = fields
                    .iter()
                    .map(|f| f.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                let dynamic = fields.iter().any(|f| f.dynamic);
                let mut val = if dynamic {
                    Val::Unknown
                } else {
                    Val::Scalar(text.clone())
                };
                if a.append
                    && let (ast::AssignmentName::VariableName(n), Val::Scalar(new)) =
                        (&a.name, &val)
                {
                    val = match self.vars.get(n) {
                        Some(Val::Scalar(old)) => Val::Scalar(format!("{old}{new}")),
                        _ => Val::Unknown,
                    };
                }
                if text.len() > self.limits.max_value_bytes {
                    val = Val::Unknown;
                }
                (val, text)
            }
            ast::AssignmentValue::Array(items) => {
                let mut vals = Vec::new();
                let mut dynamic = false;
                for (_, w) in items {
                    for f in self.expand_word(&w.value) {
                        dynamic |= f.dynamic;
                        vals.push(f.text);
                    }
                }
                let text = format!("({})", vals.join(" "));
                (
                    if dynamic || a.append {
                        Val::Unknown
                    } else {
                        Val::Array(vals)
                    },
                    text,
                )
            }
        }
    }
}

/// The declaring builtin (`declare`, `typeset`, `local`, `export`, `readonly`) a command
/// being collected starts with, past `builtin` / `command`.
pub(crate) fn declaring(words: &[Field]) -> Option<&'static str> {
    const DECLARE: [&str; 5] = ["declare", "typeset", "local", "export", "readonly"];
    let first = words
        .iter()
        .find(|w| !matches!(w.text.as_str(), "builtin" | "command"))?;
    DECLARE.into_iter().find(|d| first.text == *d)
}

/// Whether `declare`/`typeset`/`local` got `-n` (in any bundle of options): a nameref.
pub(crate) fn is_nameref(decl: &str, words: &[Field]) -> bool {
    matches!(decl, "declare" | "typeset" | "local")
        && words.iter().any(|w| {
            w.text.len() > 1
                && w.text.starts_with('-')
                && !w.text.starts_with("--")
                && w.text.contains('n')
        })
}

/// A shell variable name.
pub(crate) fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
