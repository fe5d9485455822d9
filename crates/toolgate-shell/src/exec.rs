//! Simple commands: assignments, redirections, wrapper stripping, and the commands that run
//! other code (`bash -c`, `eval`, `source`, `xargs`, `parallel`, `find -exec`, `watch`,
//! `flock -c`, `su -c`, `ssh`, interpreters, functions).

use brush_parser::ast;

use crate::expand::clip;
use crate::feed::Output;
use crate::interp;
use crate::types::{Origin, Redirect};
use crate::unwrap::{Stripped, WrapKind, find_wrapper, strip};
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

    /// Environment variables whose value a program runs as a shell command
    /// (`PROMPT_COMMAND`, `GIT_SSH_COMMAND`, `EDITOR`, `LESSOPEN`'s `|cmd %s`, …), and the
    /// prompts, whose `$(…)` run when they are shown (`PS4` under `set -x`).
    fn walk_env_code(&mut self, env: &[(String, String)]) {
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
    fn declare_operands(&mut self, decl: &str, words: &[Field], fields: &[Field]) {
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

    fn set_var(&mut self, name: &str, val: Val) {
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
    fn assignment_value(&mut self, a: &ast::Assignment) -> (Val, String) {
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

    /// Strips wrappers and handles commands that run other code; records the leaf.
    pub(crate) fn run_argv(
        &mut self,
        mut argv: Vec<Field>,
        mut wrappers: Vec<String>,
        mut p: Pending,
    ) -> Option<usize> {
        loop {
            let Some(first) = argv.first() else {
                return self.record(argv, wrappers, p, CodeInput::None);
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
                    self.finding(crate::feed::INTERNET_CODE, "remote_code_execution", format!("`{}` (rule rce.command_from_download): the command to run is downloaded", clip(&first.text)));
                }
                return self.record(argv, wrappers, p, CodeInput::None);
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
        match prog.as_str() {
            "cd" | "pushd" | "popd" | "chdir" => {
                // With `CDPATH` set, `cd name` may go to a directory under any of its entries.
                let cdpath = p.env.iter().any(|(n, v)| n == "CDPATH" && !v.is_empty())
                    || self
                        .vars
                        .get("CDPATH")
                        .is_some_and(|v| *v != Val::Scalar(String::new()));
                self.change_dir(&prog, &argv, cdpath);
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
                    .then(|| self.read_source(&p))
                    .flatten()
                    .map_or(Val::Unknown, |f| Val::Scalar(f.text));
                for a in argv.iter().skip(1).filter(|a| !a.text.starts_with('-')) {
                    self.subscript_code(&a.text);
                    if a.dynamic {
                        self.poison_vars(format!("`{prog}` assigns a computed variable name"));
                    }
                    self.vars.map.insert(a.text.clone(), listed.clone());
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
            "source" | "." => self.source(&prog, &argv),
            "trap" => self.trap_action(&argv),
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
        let code = self.code_input(&prog, &argv);
        let idx = self.record(argv.clone(), wrappers, p, code.clone());
        self.run_carried(&prog, &argv);
        // Commands that run code given as arguments.
        if self.funcs.contains_key(&prog) && argv[0].text == prog {
            self.call_function(&prog, &argv[1..]);
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
        } else if SHELLS.contains(&prog.as_str()) {
            self.run_shell_args(&argv);
        } else if prog == "find" {
            self.run_find_exec(&argv);
        } else if let Some(lang) = interp::interp_of(&prog)
            && let Some(code) = interp::inline_code(lang, &argv)
        {
            self.scan_interp(lang, &code, &prog);
        } else if let Some(flag) = interp::unread_inline(&prog, &argv) {
            self.opaque(format!(
                "`{prog} {flag}` runs code in a language the analyzer does not read"
            ));
        }
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

    /// `trap ACTION SIGNAL…`: the action is shell code run later, at a time the analysis
    /// cannot place (a `DEBUG` trap runs before every command), so it is walked as a
    /// subcommand and nothing it may assign is trusted afterwards.
    fn trap_action(&mut self, argv: &[Field]) {
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
    fn rewalk_traps(&mut self, name: &str) {
        if self.in_trap || self.traps.is_empty() {
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
        for a in actions {
            self.nested_code(&a, Origin::Eval, None, None);
        }
        self.in_trap = false;
    }

    /// `source FILE` / `. FILE`: a known environment setup script is trusted; a file the
    /// caller lets the analyzer read (in the workspace, see `Context::with_sources`) is
    /// walked in this shell; a process substitution is fed as code where it runs; anything
    /// else makes the variables untrusted.
    fn source(&mut self, prog: &str, argv: &[Field]) {
        let Some(f) = argv.get(1) else {
            return;
        };
        if f.procsub.is_some() || (!f.dynamic && crate::idioms::env_script(&f.text)) {
            return;
        }
        if let Some(text) = self.workspace_source(f) {
            self.walk_code(&text, Origin::Eval);
            return;
        }
        // A script written earlier in this command is walked where it runs (code input).
        let home = self.ctx.home.clone();
        let written = (!f.dynamic)
            .then(|| crate::paths::resolve_word(&f.text, self.cwd.as_deref(), home.as_deref()))
            .flatten()
            .is_some_and(|p| self.written.iter().any(|(w, t)| *w == p && t.is_some()));
        if !written {
            self.vars.untrusted = Some(format!(
                "`{prog} {}` runs a script the analyzer did not read in this shell",
                clip(&f.text)
            ));
        }
    }

    /// What a line `read` gets stands for, when it is a file name from a list: the input is
    /// a file inside the workspace (names relative to it) or a listing program upstream.
    fn read_source(&self, p: &Pending) -> Option<Field> {
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
            return (inside && crate::paths::secret_kind(&path).is_none())
                .then(|| crate::nested::find_placeholder(&Field::lit("."), true));
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
    fn workspace_source(&self, f: &Field) -> Option<String> {
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

/// The declaring builtin (`declare`, `typeset`, `local`, `export`, `readonly`) a command
/// being collected starts with, past `builtin` / `command`.
fn declaring(words: &[Field]) -> Option<&'static str> {
    const DECLARE: [&str; 5] = ["declare", "typeset", "local", "export", "readonly"];
    let first = words
        .iter()
        .find(|w| !matches!(w.text.as_str(), "builtin" | "command"))?;
    DECLARE.into_iter().find(|d| first.text == *d)
}

/// Whether `declare`/`typeset`/`local` got `-n` (in any bundle of options): a nameref.
fn is_nameref(decl: &str, words: &[Field]) -> bool {
    matches!(decl, "declare" | "typeset" | "local")
        && words.iter().any(|w| {
            w.text.len() > 1
                && w.text.starts_with('-')
                && !w.text.starts_with("--")
                && w.text.contains('n')
        })
}

/// A shell variable name.
fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
