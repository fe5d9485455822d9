//! Simple commands: assignments, redirections, wrapper stripping, and the commands that run
//! other code (`bash -c`, `eval`, `source`, `xargs`, `parallel`, `find -exec`, `watch`,
//! `flock -c`, `su -c`, `ssh`, interpreters, functions).

use brush_parser::ast;

use crate::expand::clip;
use crate::feed::Output;
use crate::interp;
use crate::types::Origin;
use crate::unwrap::{Stripped, WrapKind, find_wrapper, strip};
use crate::vars::{declaring, is_nameref};
use crate::walk::{CodeInput, Rec, RedirectRec, Walker};
use crate::words::{Field, Val};

/// Shells whose `-c` body, script argument or stdin is shell code.
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "rbash", "tcsh", "csh",
];

/// Programs that read SQL (or a database command language) from stdin.
pub(crate) const DB_CLIENTS: &[&str] = &[
    "psql",
    "mysql",
    "mariadb",
    "sqlite3",
    "mongo",
    "mongosh",
    "redis-cli",
    "cqlsh",
    "clickhouse-client",
    "sqlcmd",
    "duckdb",
];

/// Basename of a program word, without a Windows `.exe`.
pub(crate) fn basename(word: &str) -> String {
    let b = word.rsplit('/').next().unwrap_or(word);
    b.strip_suffix(".exe").unwrap_or(b).to_owned()
}

/// Pieces of a simple command collected before it runs.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// Leading assignments.
    pub env: Vec<(String, String)>,
    /// Redirects.
    pub redirects: Vec<RedirectRec>,
    /// Here-doc or here-string text and whether it is static.
    pub stdin: Option<(String, bool)>,
}

impl Walker<'_> {
    pub fn walk_simple(&mut self, s: &ast::SimpleCommand) -> Option<usize> {
        let mut words: Vec<Field> = Vec::new();
        let mut assigns: Vec<(String, Val, String, bool)> = Vec::new();
        let mut p = Pending {
            env: Vec::new(),
            redirects: self.inherited.clone(),
            stdin: None,
        };
        let items = s
            .prefix
            .iter()
            .flat_map(|x| x.0.iter())
            .map(Some)
            .chain(std::iter::once(None))
            .chain(s.suffix.iter().flat_map(|x| x.0.iter()).map(Some));
        for item in items {
            let Some(item) = item else {
                if let Some(w) = &s.word_or_name {
                    words.extend(self.expand_word(&w.value));
                }
                continue;
            };
            match item {
                ast::CommandPrefixOrSuffixItem::IoRedirect(r) => {
                    let (rec, stdin) = self.redirect(r);
                    if let Some(rec) = rec {
                        p.redirects.push(rec);
                    }
                    if stdin.is_some() {
                        p.stdin = stdin;
                    }
                }
                ast::CommandPrefixOrSuffixItem::Word(w) => {
                    let fields = self.expand_word(&w.value);
                    if let Some(decl) = declaring(&words) {
                        self.declare_operands(decl, &words, &fields);
                    }
                    words.extend(fields);
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    if words.is_empty() {
                        let (val, text) = self.assignment_value(a);
                        let secret = std::mem::take(&mut self.value_secret);
                        let name = match &a.name {
                            ast::AssignmentName::VariableName(n) => n.clone(),
                            ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
                        };
                        let val = if matches!(a.name, ast::AssignmentName::ArrayElementName(..)) {
                            Val::Unknown
                        } else {
                            val
                        };
                        assigns.push((name, val, text, secret));
                    } else {
                        // `export A=b`, `declare -x A=b`, `local A=b`.
                        let (val, _) = self.assignment_value(a);
                        let secret = std::mem::take(&mut self.value_secret);
                        if declaring(&words).is_some_and(|d| is_nameref(d, &words)) {
                            if let Val::Scalar(target) = &val {
                                let target = target.clone();
                                self.subscript_code(&target);
                            }
                            self.poison_vars("`declare -n` makes a name refer to another variable");
                        } else if let ast::AssignmentName::VariableName(n) = &a.name {
                            self.set_var(n, val);
                            self.taint_var(n, secret);
                        }
                        words.extend(self.expand_word(&w.value));
                    }
                }
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(kind, sub) => {
                    let idx = self.process_substitution(&sub.list);
                    let text = match kind {
                        ast::ProcessSubstitutionKind::Read => "<(…)",
                        ast::ProcessSubstitutionKind::Write => ">(…)",
                    };
                    words.push(Field {
                        text: text.into(),
                        procsub: Some(idx),
                        ..Field::default()
                    });
                }
            }
        }
        if words.is_empty() {
            for (name, val, _, secret) in assigns {
                self.set_var(&name, val);
                self.taint_var(&name, secret);
            }
            if p.redirects.len() > self.inherited.len() {
                return self.record(Vec::new(), Vec::new(), p, CodeInput::None);
            }
            return None;
        }
        p.env = assigns.into_iter().map(|(n, _, t, _)| (n, t)).collect();
        self.walk_env_code(&p.env);
        self.run_argv(words, Vec::new(), p)
    }

    /// Strips wrappers and handles commands that run other code; records the leaf.
    pub(crate) fn run_argv(
        &mut self,
        mut argv: Vec<Field>,
        mut wrappers: Vec<String>,
        mut p: Pending,
    ) -> Option<usize> {
        loop {
            if !self.check_command_name(&mut argv) {
                return self.record(argv, wrappers, p, CodeInput::None);
            }
            let Some(first) = argv.first() else {
                return self.record(argv, wrappers, p, CodeInput::None);
            };
            let prog = basename(&first.text);
            if prog == "env" {
                match self.strip_env(&argv, &mut p) {
                    Some(i) => {
                        wrappers.push("env".into());
                        argv.drain(..i);
                        continue;
                    }
                    None => return self.record(argv, wrappers, p, CodeInput::None),
                }
            }
            // `runuser -c CMD` is `su -c CMD`, not a wrapper around the next word.
            if prog == "runuser"
                && let Some(body) = flag_value(&argv, &["-c", "--command"])
            {
                let code = body.text.clone();
                let out = self.record(argv, wrappers, p, CodeInput::None);
                self.nested_code(&code, Origin::ShellC, None, None);
                return out;
            }
            if prog == "xargs" || prog == "parallel" {
                return self.run_xargs(argv, wrappers, p);
            }
            if let Some(spec) = find_wrapper(&prog, &argv[1..]) {
                match strip(spec, &argv) {
                    Stripped::NoCommand => {
                        // No command after the wrapper's options, but an option may carry
                        // one (`npx -c 'CMD'`).
                        let out = self.record(argv.clone(), wrappers, p, CodeInput::None);
                        self.run_carried(&prog, &argv);
                        return out;
                    }
                    Stripped::At(i) => {
                        if (prog == "flock" || prog == "watch")
                            && self.run_flock_watch(&prog, &argv, i)
                        {
                            return self.record(argv, wrappers, p, CodeInput::None);
                        }
                        // The wrapper's own options may carry a command (`strace -o '|CMD'`).
                        self.run_carried(&prog, &argv[..i]);
                        match spec.kind {
                            WrapKind::Transparent | WrapKind::Privilege => {
                                wrappers.push(prog);
                                argv.drain(..i);
                                continue;
                            }
                            WrapKind::Runner => {
                                let inner = argv[i..].to_vec();
                                let outer = self.record(
                                    argv,
                                    wrappers,
                                    Pending {
                                        env: p.env.clone(),
                                        redirects: p.redirects.clone(),
                                        stdin: p.stdin.clone(),
                                    },
                                    CodeInput::None,
                                );
                                if self.enter() {
                                    self.depth += 1;
                                    let saved = std::mem::replace(&mut self.origin, Origin::Runner);
                                    self.run_argv(
                                        inner,
                                        Vec::new(),
                                        Pending {
                                            env: Vec::new(),
                                            redirects: Vec::new(),
                                            stdin: p.stdin,
                                        },
                                    );
                                    self.origin = saved;
                                    self.depth -= 1;
                                }
                                return outer;
                            }
                        }
                    }
                }
            }
            if prog == "ssh" {
                let rec = self.run_ssh(&argv);
                let out = self.record(argv.clone(), wrappers, p, CodeInput::None);
                self.run_carried(&prog, &argv);
                let _ = rec;
                return out;
            }
            if prog == "su" {
                if let Some(body) = flag_value(&argv, &["-c", "--command"]) {
                    let code = body.text.clone();
                    let out = self.record(argv, wrappers, p, CodeInput::None);
                    self.nested_code(&code, Origin::ShellC, None, None);
                    return out;
                }
                return self.record(argv, wrappers, p, CodeInput::None);
            }
            break;
        }
        let prog = basename(&argv[0].text);
        // Builtins that change state.
        self.builtin(&prog, &argv, &p);
        let code = self.code_input(&prog, &argv);
        let idx = self.record(argv.clone(), wrappers, p, code.clone());
        self.run_carried(&prog, &argv);
        self.run_code_args(&prog, &argv);
        self.remote_module(&prog, &argv);
        if let CodeInput::Written(lang, text) = code.clone() {
            self.feed(lang, Output::Text(text), &prog, Origin::PipeToShell, idx);
        }
        if let CodeInput::ProcSub(lang, pidx) = code {
            let stages = self
                .producers
                .get(pidx)
                .map(|p| p.stages.clone())
                .unwrap_or_default();
            let out = self.pipeline_output(&stages);
            self.feed(lang, out, &prog, Origin::PipeToShell, idx);
        }
        idx
    }

    /// Checks the command name (not static, a glob, look-alike letters) and applies a rename
    /// made earlier in the command; `false` when the name is not known at all.
    fn check_command_name(&mut self, argv: &mut [Field]) -> bool {
        let Some(first) = argv.first() else {
            return false;
        };
        if first.dynamic {
            let why = if first.net {
                " (it comes from a download)"
            } else {
                ""
            };
            self.opaque(format!(
                "command name `{}` is not static{why}",
                clip(&first.text)
            ));
            if first.net {
                self.finding(
                    crate::feed::INTERNET_CODE,
                    "remote_code_execution",
                    format!(
                        "`{}` (rule rce.command_from_download): the command to run is downloaded",
                        clip(&first.text)
                    ),
                );
            }
            return false;
        }
        if first.glob {
            self.opaque(format!(
                "command name `{}` is a glob pattern",
                clip(&first.text)
            ));
        }
        if !first.text.is_ascii() {
            self.opaque(format!(
                "command name `{}` contains non-ASCII characters",
                clip(&first.text)
            ));
        }
        // A name made to mean another program earlier in the command runs that program.
        if let Some(real) = self.renamed_program(&first.text) {
            argv[0] = Field {
                text: real,
                ..argv[0].clone()
            };
        }
        true
    }

    /// Runs what a command's arguments hold as code: a function call, `eval`, a shell's
    /// `-c`, `find -exec`, interpreter one-liners.
    fn run_code_args(&mut self, prog: &str, argv: &[Field]) {
        if self.funcs.contains_key(prog) && argv[0].text == prog {
            self.call_function(prog, &argv[1..]);
        } else if prog == "eval" {
            let body = argv[1..]
                .iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if argv[1..].iter().any(|a| a.net) {
                self.finding(
                    crate::feed::INTERNET_CODE,
                    "remote_code_execution",
                    format!(
                        "`eval {}` (rule rce.eval_download): evaluates downloaded text",
                        clip(&body)
                    ),
                );
            }
            if argv[1..].iter().any(|a| a.dynamic) {
                self.poison_vars("`eval` runs computed code");
            }
            // `eval` runs in this shell: what it assigns or `cd`s to stays.
            self.walk_code(&body, Origin::Eval);
        } else if SHELLS.contains(&prog) {
            self.run_shell_args(argv);
        } else if prog == "find" {
            self.run_find_exec(argv);
        } else if let Some(lang) = interp::interp_of(prog)
            && let Some(code) = interp::inline_code(lang, argv)
        {
            self.scan_interp(lang, &code, prog);
        } else if let Some(flag) = interp::unread_inline(prog, argv) {
            self.opaque(format!(
                "`{prog} {flag}` runs code in a language the analyzer does not read"
            ));
        }
    }

    /// Runs nested shell code with optional positional parameters.
    pub fn nested_code(
        &mut self,
        code: &str,
        origin: Origin,
        arg0: Option<String>,
        args: Option<Vec<String>>,
    ) {
        let saved_vars = self.vars.clone();
        let saved_cwd = self.cwd.clone();
        if args.is_some() || arg0.is_some() {
            self.vars.positional = args;
            self.vars.arg0 = arg0;
        }
        self.walk_code(code, origin);
        self.vars = saved_vars;
        self.cwd = saved_cwd;
    }

    /// Records a leaf command.
    pub(crate) fn record(
        &mut self,
        argv: Vec<Field>,
        wrappers: Vec<String>,
        p: Pending,
        code: CodeInput,
    ) -> Option<usize> {
        if self.recs.len() >= self.limits.max_commands {
            let _ = self.enter();
            return None;
        }
        let program = argv.first().map(|f| basename(&f.text)).unwrap_or_default();
        let stage = self.pipe.1.len();
        let env_setup = self.in_env_script
            || std::mem::take(&mut self.env_source_pending)
            || self.env_init_here(&program, &argv);
        let after_env = self.env_changed && !env_setup;
        if env_setup {
            self.env_changed = true;
        }
        self.note_downloads(&program, &argv);
        self.note_renames(&program, &argv);
        self.recs.push(Rec {
            argv,
            program,
            wrappers,
            env: p.env,
            redirects: p.redirects,
            origin: self.origin,
            cwd: self.cwd.clone(),
            pipeline: self.pipe.0,
            stage,
            stdin: p.stdin,
            code,
            background: self.background,
            extra_writes: Vec::new(),
            extra_reads: Vec::new(),
            fed: None,
            secret: None,
            secret_reads: Vec::new(),
            env_setup,
            after_env,
        });
        let idx = self.recs.len() - 1;
        self.note_written(idx);
        self.note_secret(idx);
        let rec = &self.recs[idx];
        if rec.program == "exec" && rec.argv.len() == 1 {
            let replaced = match &rec.stdin {
                Some((t, true)) => Some(Output::Text(t.clone())),
                Some((_, false)) => Some(Output::Unknown(
                    "a here-document with unresolved expansions".into(),
                )),
                None => self.stdin_redirect(idx),
            };
            if replaced.is_some() {
                self.stdin_replaced = replaced;
            }
        }
        Some(idx)
    }
}

/// The value of the first of `names` in `argv` (`-c BODY`, `--command=BODY`).
pub(crate) fn flag_value<'a>(argv: &'a [Field], names: &[&str]) -> Option<&'a Field> {
    argv.iter().enumerate().find_map(|(i, a)| {
        names
            .contains(&a.text.as_str())
            .then(|| argv.get(i + 1))
            .flatten()
    })
}
