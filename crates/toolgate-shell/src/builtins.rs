//! Builtins that change the shell's own state (`cd`, `unset`, `set`, `read`, `printf -v`,
//! `source`, `trap`, `let`, `alias`, …), tracked so that later commands are analysed in the
//! state the shell will be in.

use crate::exec::Pending;
use crate::expand::clip;
use crate::types::Origin;
use crate::walk::Walker;
use crate::words::{Field, Val};

/// What a name read from a list file stands for (`while read f; do …; done < list.txt`):
/// a file below the working directory for reading; for writing or deleting, any file (the
/// list could name `../../.bashrc`), which the effects treat as unresolved.
pub(crate) const LIST_FILE_NAME: &str = "./*\u{22ef}";

impl Walker<'_> {
    /// Applies what the builtin `prog` does to the shell's state.
    pub(crate) fn builtin(&mut self, prog: &str, argv: &[Field], p: &Pending) {
        match prog {
            "cd" | "pushd" | "popd" | "chdir" => {
                // With `CDPATH` set, `cd name` may go to a directory under any of its entries.
                let cdpath = p.env.iter().any(|(n, v)| n == "CDPATH" && !v.is_empty())
                    || self
                        .vars
                        .get("CDPATH")
                        .is_some_and(|v| *v != Val::Scalar(String::new()));
                self.change_dir(prog, argv, cdpath);
            }
            "unset" => {
                for a in argv.iter().skip(1).filter(|a| !a.text.starts_with('-')) {
                    self.subscript_code(&a.text);
                    self.vars
                        .map
                        .insert(a.text.clone(), Val::Scalar(String::new()));
                }
            }
            "set" => {
                // `set -k`: `NAME=value` anywhere on a later command line goes into its
                // environment (`ls LD_PRELOAD=./x.so`), which the analysis does not model.
                let keyword = argv.iter().skip(1).any(|a| {
                    a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('k')
                }) || argv.windows(2).any(|w| {
                    w[0].text.starts_with('-') && w[0].text.ends_with('o') && w[1].text == "keyword"
                });
                if keyword {
                    self.opaque("`set -k` turns later `NAME=value` arguments into environment");
                }
                // `set -- ARGS` / `set ARGS`: the positional parameters.
                let ops = match argv.iter().position(|a| a.text == "--") {
                    Some(dd) => Some(&argv[dd + 1..]),
                    None => argv
                        .get(1)
                        .filter(|a| !a.text.starts_with(['-', '+']))
                        .map(|_| &argv[1..]),
                };
                if let Some(ops) = ops {
                    self.vars.positional = (!ops.iter().any(|a| a.dynamic))
                        .then(|| ops.iter().map(|a| a.text.clone()).collect());
                }
            }
            "wait" => {
                // `wait -p NAME` assigns the finished job's pid.
                for w in argv
                    .windows(2)
                    .filter(|w| w[0].text == "-p" || w[0].text == "-np")
                {
                    self.subscript_code(&w[1].text);
                    let base = w[1].text.split('[').next().unwrap_or_default().to_owned();
                    self.set_var(&base, Val::Unknown);
                }
            }
            "test" | "[" => {
                // `test -v NAME`: a subscript in NAME is evaluated.
                for w in argv.windows(2).filter(|w| w[0].text == "-v") {
                    self.subscript_code(&w[1].text);
                }
            }
            "read" | "mapfile" | "readarray" | "getopts" => {
                // Names read from a list file in the workspace or from a listing program
                // (`… | while read -r f`) are files below where they were listed.
                let listed = (prog == "read")
                    .then(|| self.read_source(p))
                    .flatten()
                    .map_or(Val::Unknown, |f| Val::Scalar(f.text));
                for a in argv.iter().skip(1).filter(|a| !a.text.starts_with('-')) {
                    self.subscript_code(&a.text);
                    if a.dynamic {
                        self.poison_vars(format!("`{prog}` assigns a computed variable name"));
                    }
                    self.vars.map.insert(a.text.clone(), listed.clone());
                    self.rewalk_traps(&a.text);
                }
            }
            "printf" => {
                // `printf -v NAME FORMAT …` assigns instead of printing.
                let mut i = 1;
                while let Some(a) = argv.get(i) {
                    let t = a.text.as_str();
                    let target = match t {
                        "--" => break,
                        "-v" => argv.get(i + 1),
                        _ if t.starts_with("-v") => Some(a),
                        _ => break,
                    };
                    if let Some(target) = target {
                        let name = if t == "-v" {
                            target.text.clone()
                        } else {
                            t[2..].to_owned()
                        };
                        self.subscript_code(&name);
                        if target.dynamic {
                            self.poison_vars("`printf -v` assigns a computed variable name");
                        } else {
                            let base = name.split('[').next().unwrap_or(&name).to_owned();
                            self.set_var(&base, Val::Unknown);
                        }
                        break;
                    }
                    i += 1;
                }
            }
            "source" | "." => self.source(prog, argv),
            "trap" => self.trap_action(argv),
            "let" => {
                for a in argv.iter().skip(1) {
                    self.scan_arith(&a.text);
                }
            }
            "alias" => {
                for a in argv.iter().skip(1) {
                    if let Some((name, body)) = a.text.split_once('=') {
                        self.opaque(format!(
                            "alias `{name}` is defined; aliases are not expanded by the analyzer"
                        ));
                        let body = body.to_owned();
                        self.nested_code(&body, Origin::Eval, None, None);
                    }
                }
            }
            _ => {}
        }
    }

    /// `trap ACTION SIGNAL…`: the action is shell code run later, at a time the analysis
    /// cannot place (a `DEBUG` trap runs before every command), so it is walked as a
    /// subcommand and nothing it may assign is trusted afterwards.
    pub(crate) fn trap_action(&mut self, argv: &[Field]) {
        let operands: Vec<&Field> = argv
            .iter()
            .skip(1)
            .skip_while(|a| a.text.starts_with('-') && a.text != "-")
            .collect();
        let [action, _signal, ..] = operands.as_slice() else {
            return; // `trap -p`, `trap -l`, `trap SIG` (a reset)
        };
        if action.text == "-" || action.text.is_empty() {
            return;
        }
        if action.dynamic {
            self.opaque(format!(
                "the trap action `{}` is computed",
                clip(&action.text)
            ));
            self.poison_vars("a trap action may assign variables at any point");
            return;
        }
        let code = action.text.clone();
        // Walked now with the values the variables have; again whenever one it reads is
        // assigned later (an `EXIT` trap sees the last value). An action that assigns
        // variables itself makes them untrusted from here on.
        let before = self.vars.map.clone();
        let saved = self.vars.clone();
        let cwd = self.cwd.clone();
        self.walk_code(&code, Origin::Eval);
        let assigns = self.vars.map != before || self.vars.poisoned;
        self.vars = saved;
        self.cwd = cwd;
        if assigns {
            self.vars.untrusted = Some("a trap action assigns variables at any point".into());
        }
        if self.traps.len() < crate::limits::MAX_FUNCTION_CALLS {
            self.traps.push(code);
        }
    }

    /// A trap action that reads `name` is walked again with its new value.
    pub(crate) fn rewalk_traps(&mut self, name: &str) {
        if self.in_trap || self.traps.is_empty() || self.rewalks >= self.limits.max_rewalks {
            return;
        }
        let reads = |t: &str| {
            t.match_indices('$').any(|(i, _)| {
                let rest = t[i + 1..].trim_start_matches('{');
                rest.strip_prefix(name).is_some_and(|r| {
                    !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                })
            })
        };
        let actions: Vec<String> = self.traps.iter().filter(|t| reads(t)).cloned().collect();
        self.in_trap = true;
        self.rewalks += actions.len();
        for a in actions {
            self.nested_code(&a, Origin::Eval, None, None);
        }
        self.in_trap = false;
    }

    /// `source FILE` / `. FILE`: a known environment setup script is trusted; a file the
    /// caller lets the analyzer read (in the workspace, see `Context::with_sources`) is
    /// walked in this shell; a process substitution is fed as code where it runs; anything
    /// else makes the variables untrusted.
    pub(crate) fn source(&mut self, prog: &str, argv: &[Field]) {
        let Some(f) = argv.get(1) else {
            return;
        };
        if f.procsub.is_some() {
            return;
        }
        let env_script = !f.dynamic && crate::idioms::env_script(&f.text);
        // What the file says when it can be read: a cloned repository's own
        // `venv/bin/activate` is walked like any script, so whatever else it does is seen;
        // its shell-state commands (`export PATH`, `hash -r`) are the set-up itself.
        if let Some(text) = self.workspace_source(f) {
            let outer = self.in_env_script;
            self.in_env_script = env_script || outer;
            self.walk_code(&text, Origin::Eval);
            self.in_env_script = outer;
            self.env_source_pending = env_script;
            return;
        }
        // A script written earlier in this command is walked where it runs (code input).
        let home = self.ctx.home.clone();
        let written = (!f.dynamic)
            .then(|| crate::paths::resolve_word(&f.text, self.cwd.as_deref(), home.as_deref()))
            .flatten()
            .is_some_and(|p| self.written.iter().any(|(w, _)| *w == p));
        if written {
            return;
        }
        if env_script {
            self.env_source_pending = true;
            return;
        }
        self.vars.untrusted = Some(format!(
            "`{prog} {}` runs a script the analyzer did not read in this shell",
            clip(&f.text)
        ));
    }

    /// What a line `read` gets stands for, when it is a file name from a list: the input is
    /// a file inside the workspace (names relative to it) or a listing program upstream.
    pub(crate) fn read_source(&self, p: &Pending) -> Option<Field> {
        let redirect =
            p.redirects.iter().rev().find(|r| {
                r.read && r.public.fd.is_none_or(|fd| fd == 0) && r.target.procsub.is_none()
            });
        if let Some(r) = redirect {
            let home = self.ctx.home.clone();
            let path = (!r.target.dynamic)
                .then(|| {
                    crate::paths::resolve_word(&r.target.text, self.cwd.as_deref(), home.as_deref())
                })
                .flatten()?;
            let inside = crate::paths::inside_roots(&path, &self.ctx.roots, &self.ctx.cwd);
            return (inside && crate::paths::secret_kind(&path, self.ctx).is_none())
                .then(|| Field::lit(LIST_FILE_NAME));
        }
        if p.stdin.is_some() {
            return None;
        }
        let producer = match self.pipe.1.last() {
            Some(Some(r)) => Some(*r),
            _ => self.compound_input,
        }?;
        let rec = self.recs.get(producer)?;
        crate::nested::lister_placeholder(&rec.program, &rec.argv)
    }

    /// The text of a sourced file inside the roots, read through the caller's reader.
    pub(crate) fn workspace_source(&self, f: &Field) -> Option<String> {
        if f.dynamic {
            return None;
        }
        let reader = self.ctx.sources?;
        let home = self.ctx.home.clone();
        let path = crate::paths::resolve_word(&f.text, self.cwd.as_deref(), home.as_deref())?;
        if !crate::paths::inside_roots(&path, &self.ctx.roots, &self.ctx.cwd) {
            return None;
        }
        reader(&path).filter(|t| t.len() <= self.limits.max_value_bytes)
    }
}

impl Walker<'_> {
    /// Whether `prog ARGV` is an environment set-up tool printing its code for `eval` or
    /// `source` (`$(pyenv init - bash)`): only inside a substitution, and only the installed
    /// tool itself — not a function or a file of that name made earlier in the command.
    pub(crate) fn env_init_here(&self, prog: &str, argv: &[Field]) -> bool {
        matches!(
            self.origin,
            Origin::Substitution | Origin::ProcessSubstitution
        ) && crate::idioms::env_init(prog, argv.get(1..).unwrap_or(&[]))
            && !self.funcs.contains_key(prog)
            && argv.first().is_some_and(|w| {
                !w.text.contains('/') || crate::renames::installed_program(&w.text)
            })
    }
}
