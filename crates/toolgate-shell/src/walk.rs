//! The walker: visits every command of a parsed program — lists, pipelines, subshells, brace
//! groups, `if`/`while`/`until`/`for`/`case` bodies, functions, `coproc` — keeping the state
//! a shell would (variables, functions, working directory) and recording leaf commands.

use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use brush_parser::ast;
use toolgate_protocol::{Finding, Risk};

use crate::limits::Limits;
use crate::normalize::{MAX_UNCLOSED_PARENS, nesting_depth, unclosed_parens};
use crate::parse::parse_program;
use crate::types::{Context, Origin, Redirect};
use crate::words::{Field, Vars};

/// Most values a `for` loop's body is walked with, one walk per value (`for f in a b c`);
/// with more, the body is walked once with the variable unknown. Each walk costs a body's
/// analysis, so this bounds the work of a loop at a few times its size.
const MAX_LOOP_VALUES: usize = 8;

/// Where a command gets code to run from (a shell or interpreter reading a script).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CodeInput {
    /// Not a code runner.
    None,
    /// Reads its program from standard input.
    Stdin(Lang),
    /// Reads its program from a process substitution argument.
    ProcSub(Lang, usize),
    /// Runs a script file written earlier in the command, whose text is known.
    Written(Lang, String),
}

/// The language of code fed to a runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    /// A POSIX shell or bash.
    Shell,
    /// An interpreter (`python`, `perl`, …) identified by program basename.
    Interp(crate::interp::Interp),
    /// A database client reading SQL.
    Sql,
    /// A crontab: each entry's command runs later.
    Cron,
    /// A makefile (`make -f -`): its recipes are shell code.
    Make,
}

/// A redirect with its resolved target.
#[derive(Debug, Clone)]
pub(crate) struct RedirectRec {
    /// The public form.
    pub public: Redirect,
    /// The expanded target.
    pub target: Field,
    /// Opens the target for writing.
    pub write: bool,
    /// Opens the target for reading.
    pub read: bool,
}

/// One recorded leaf command with what the classifier needs.
#[derive(Debug, Clone)]
pub(crate) struct Rec {
    /// Final argv after unwrapping.
    pub argv: Vec<Field>,
    /// Basename of argv[0].
    pub program: String,
    /// Stripped wrappers.
    pub wrappers: Vec<String>,
    /// Leading assignments.
    pub env: Vec<(String, String)>,
    /// Redirects (own and inherited).
    pub redirects: Vec<RedirectRec>,
    /// How it was reached.
    pub origin: Origin,
    /// The working directory it runs in, when known.
    pub cwd: Option<PathBuf>,
    /// Pipeline id and stage.
    pub pipeline: usize,
    /// Stage within the pipeline.
    pub stage: usize,
    /// Text fed on stdin by a here-document or here-string (text, fully static).
    pub stdin: Option<(String, bool)>,
    /// Whether it reads code.
    pub code: CodeInput,
    /// Sent to the background with `&`.
    pub background: bool,
    /// Paths written by an interpreter one-liner (`open(p, 'w')`).
    pub extra_writes: Vec<String>,
    /// Files read by interpreter code (`open('x')`).
    pub extra_reads: Vec<String>,
    /// Text known to arrive on stdin from a literal producer upstream in the pipeline.
    pub fed: Option<String>,
    /// Why the data this command handles holds secret material (it read a credentials
    /// file, printed credentials, got secret data as an argument or on its input), if it
    /// does; see [`crate::flow`].
    pub secret: Option<String>,
    /// The paths it reads that held secret material when it ran (credentials files, and
    /// files an earlier command filled with them).
    pub secret_reads: Vec<PathBuf>,
    /// Part of an environment set-up idiom (see [`crate::idioms`]): the `source` of a
    /// virtualenv's `bin/activate`, a command inside it, or `eval "$(pyenv init -)"`.
    pub env_setup: bool,
    /// Runs after an environment set-up changed `PATH`: a bare program name may now name
    /// a program of the environment rather than the system's.
    pub after_env: bool,
}

/// A producer of data: the records of a process substitution's last pipeline.
#[derive(Debug, Clone, Default)]
pub(crate) struct Producer {
    /// Record indices of the stages, in order.
    pub stages: Vec<Option<usize>>,
}

/// A function defined in the script.
#[derive(Debug)]
pub(crate) struct FuncDef {
    pub body: ast::FunctionBody,
}

/// Walk state.
pub(crate) struct Walker<'c> {
    pub ctx: &'c Context,
    pub limits: Limits,
    pub vars: Vars,
    pub funcs: HashMap<String, Rc<FuncDef>>,
    pub call_stack: Vec<String>,
    pub func_calls: usize,
    pub cwd: Option<PathBuf>,
    pub recs: Vec<Rec>,
    pub opaque: Vec<String>,
    pub findings: Vec<Finding>,
    pub producers: Vec<Producer>,
    pub depth: usize,
    pub origin: Origin,
    pub cond: usize,
    pub pipeline_counter: usize,
    /// The current pipeline: id and record of each stage so far.
    pub pipe: (usize, Vec<Option<usize>>),
    /// Redirects of enclosing compound commands.
    pub inherited: Vec<RedirectRec>,
    pub background: bool,
    /// Files a downloader wrote (`curl -o x`, `wget URL`).
    pub downloads: Vec<PathBuf>,
    /// Files written earlier in the command (`echo … > x.sh`, `cat > x.sh <<EOF`), with
    /// their text when it is known: running one walks that text.
    pub written: Vec<(PathBuf, Option<String>)>,
    /// What `exec` redirected the shell's input to (`exec 0<<<TEXT`, `exec < <(…)`): a
    /// shell reading stdin afterwards reads that.
    pub stdin_replaced: Option<crate::feed::Output>,
    pub cd: Option<crate::types::CdTarget>,
    pub exhausted: bool,
    /// Stages of the most recently completed pipeline (for substitution output).
    pub last_pipe: Option<Vec<Option<usize>>>,
    /// Set when a parameter expansion read a variable that carries secret material.
    pub secret_read: bool,
    /// Set by an assignment whose value carries secret material.
    pub value_secret: bool,
    /// Names and files made to stand for another program earlier in the command.
    pub renamed: Vec<(crate::renames::Alias, String)>,
    /// Trap actions set so far (walked again when a variable they read changes).
    pub traps: Vec<String>,
    /// A trap action is being walked again.
    pub in_trap: bool,
    /// Loop bodies and trap actions walked again so far (see [`crate::limits::MAX_REWALKS`]).
    pub rewalks: usize,
    /// For a compound command that is a later stage of a pipeline (`… | while read f; do
    /// …`), the record of the stage feeding it.
    pub compound_input: Option<usize>,
    /// Files written earlier in the command with secret material in them (`cp ~/.aws/credentials
    /// /tmp/c`, `tar czf k.tgz ~/.ssh`, `cat .env > x`): reading one reads the secret.
    pub secret_files: Vec<PathBuf>,
    /// A sourced environment set-up script is being walked.
    pub in_env_script: bool,
    /// The next record is the `source` of an environment set-up script.
    pub env_source_pending: bool,
    /// An environment set-up ran earlier in the command (PATH may have changed).
    pub env_changed: bool,
}

impl<'c> Walker<'c> {
    pub fn new(ctx: &'c Context) -> Self {
        let mut limits = ctx.limits;
        // Hard ceilings: larger values would let input overflow the stack.
        limits.max_nesting = limits.max_nesting.min(crate::limits::MAX_NESTING * 2);
        limits.max_depth = limits.max_depth.min(crate::limits::MAX_DEPTH * 2);
        Self {
            ctx,
            limits,
            vars: Vars::default(),
            funcs: HashMap::new(),
            call_stack: Vec::new(),
            func_calls: 0,
            cwd: Some(ctx.cwd.clone()),
            recs: Vec::new(),
            opaque: Vec::new(),
            findings: Vec::new(),
            producers: Vec::new(),
            depth: 0,
            origin: Origin::Top,
            cond: 0,
            pipeline_counter: 0,
            pipe: (0, Vec::new()),
            inherited: Vec::new(),
            background: false,
            downloads: Vec::new(),
            written: Vec::new(),
            stdin_replaced: None,
            cd: None,
            exhausted: false,
            last_pipe: None,
            secret_read: false,
            value_secret: false,
            renamed: Vec::new(),
            traps: Vec::new(),
            in_trap: false,
            rewalks: 0,
            compound_input: None,
            secret_files: Vec::new(),
            in_env_script: false,
            env_source_pending: false,
            env_changed: false,
        }
    }

    /// Adds an opaque reason once.
    pub fn opaque(&mut self, reason: impl Into<String>) {
        let r = reason.into();
        if !self.opaque.contains(&r) && self.opaque.len() < 64 {
            self.opaque.push(r);
        }
    }

    /// Adds a finding once.
    pub fn finding(&mut self, risk: Risk, category: &str, reason: String) {
        if !self.findings.iter().any(|f| f.reason == reason) {
            self.findings.push(Finding {
                risk,
                category: category.to_owned(),
                reason,
            });
        }
    }

    /// Whether another nested level may be entered; records why not otherwise.
    pub fn enter(&mut self) -> bool {
        if self.depth >= self.limits.max_depth {
            let m = self.limits.max_depth;
            self.opaque(format!(
                "nesting deeper than {m} levels (limit MAX_DEPTH) was not analysed"
            ));
            return false;
        }
        if self.recs.len() >= self.limits.max_commands {
            if !self.exhausted {
                self.exhausted = true;
                let m = self.limits.max_commands;
                self.opaque(format!(
                    "more than {m} commands (limit MAX_COMMANDS); the rest was not analysed"
                ));
            }
            return false;
        }
        true
    }

    /// Parses and walks `text` as shell code reached through `origin`.
    pub fn walk_code(&mut self, text: &str, origin: Origin) {
        if !self.enter() {
            return;
        }
        if text.len() > self.limits.max_bytes {
            let m = self.limits.max_bytes;
            self.opaque(format!(
                "{origin:?} code longer than {m} bytes (limit MAX_BYTES) was not analysed"
            ));
            return;
        }
        let nest = nesting_depth(text, self.limits.max_nesting);
        if nest > self.limits.max_nesting {
            let m = self.limits.max_nesting;
            self.opaque(format!(
                "nesting deeper than {m} levels (limit MAX_NESTING) was not analysed"
            ));
            return;
        }
        let open = unclosed_parens(text, self.limits.max_nesting);
        if open > MAX_UNCLOSED_PARENS {
            self.opaque(format!(
                "could not parse: {open} unclosed `(` (the parser is not run on such input)"
            ));
            return;
        }
        match parse_program(text) {
            Ok(prog) => {
                let saved = std::mem::replace(&mut self.origin, origin);
                self.depth += 1;
                for cc in &prog.complete_commands {
                    self.walk_list(cc);
                }
                self.depth -= 1;
                self.origin = saved;
            }
            Err(e) => {
                let what = if origin == Origin::Top {
                    String::new()
                } else {
                    format!(" ({origin:?} code)")
                };
                self.opaque(format!("could not parse{what}: {e}"));
            }
        }
    }

    pub fn walk_list(&mut self, list: &ast::CompoundList) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let bg = matches!(sep, ast::SeparatorOperator::Async);
            let new_bg = self.background || bg;
            let saved_bg = std::mem::replace(&mut self.background, new_bg);
            self.walk_pipeline(&and_or.first);
            self.cond += 1;
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.walk_pipeline(p),
                }
            }
            self.cond -= 1;
            self.background = saved_bg;
        }
    }

    pub fn walk_pipeline(&mut self, p: &ast::Pipeline) {
        self.pipeline_counter += 1;
        let saved = std::mem::replace(&mut self.pipe, (self.pipeline_counter, Vec::new()));
        let multi = p.seq.len() > 1;
        for cmd in &p.seq {
            // Every stage of a multi-stage pipeline runs in a subshell.
            let snapshot = multi.then(|| (self.vars.clone(), self.cwd.clone()));
            let before = self.recs.len();
            let feeding = self.pipe.1.last().copied().flatten();
            let saved_input = std::mem::replace(&mut self.compound_input, feeding);
            let main = self.walk_command(cmd);
            self.compound_input = saved_input;
            let stage_rec =
                main.or_else(|| (self.recs.len() > before).then(|| self.recs.len() - 1));
            let single = matches!(cmd, ast::Command::Simple(_));
            self.pipe.1.push(if single { stage_rec } else { None });
            if let Some((v, c)) = snapshot {
                self.vars = v;
                self.cwd = c;
            }
        }
        self.after_pipeline();
        let done = std::mem::replace(&mut self.pipe, saved);
        self.last_pipe = Some(done.1);
    }

    /// Walks one command; returns the record of a simple command.
    pub fn walk_command(&mut self, cmd: &ast::Command) -> Option<usize> {
        match cmd {
            ast::Command::Simple(s) => self.walk_simple(s),
            ast::Command::Compound(c, redirs) => {
                let n = self.push_redirects(redirs.as_ref());
                self.walk_compound(c);
                self.inherited.truncate(n);
                None
            }
            ast::Command::Function(f) => {
                self.define_function(f);
                None
            }
            ast::Command::ExtendedTest(t, redirs) => {
                let n = self.push_redirects(redirs.as_ref());
                self.walk_ext_test(&t.expr);
                self.inherited.truncate(n);
                None
            }
        }
    }

    fn push_redirects(&mut self, redirs: Option<&ast::RedirectList>) -> usize {
        let n = self.inherited.len();
        if let Some(list) = redirs {
            for r in &list.0 {
                let (rec, _stdin) = self.redirect(r);
                if let Some(rec) = rec {
                    self.inherited.push(rec);
                }
            }
        }
        n
    }

    fn walk_ext_test(&mut self, e: &ast::ExtendedTestExpr) {
        if !self.enter() {
            return;
        }
        self.depth += 1;
        match e {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.walk_ext_test(a);
                self.walk_ext_test(b);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.walk_ext_test(a);
            }
            ast::ExtendedTestExpr::UnaryTest(_, w) => {
                let _ = self.expand_word(&w.value);
            }
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                let _ = self.expand_word(&a.value);
                let _ = self.expand_word(&b.value);
            }
        }
        self.depth -= 1;
    }

    fn scoped<F: FnOnce(&mut Self)>(&mut self, f: F) {
        let vars = self.vars.clone();
        let cwd = self.cwd.clone();
        f(self);
        self.vars = vars;
        self.cwd = cwd;
    }

    fn walk_compound(&mut self, c: &ast::CompoundCommand) {
        if !self.enter() {
            return;
        }
        self.depth += 1;
        match c {
            ast::CompoundCommand::BraceGroup(b) => self.walk_list(&b.list),
            ast::CompoundCommand::Subshell(s) => self.scoped(|w| w.walk_list(&s.list)),
            ast::CompoundCommand::Arithmetic(a) => self.scan_arith(&a.expr.value),
            ast::CompoundCommand::ArithmeticForClause(a) => {
                for e in [&a.initializer, &a.condition, &a.updater]
                    .into_iter()
                    .flatten()
                {
                    self.scan_arith(&e.value);
                }
                self.cond += 1;
                self.walk_list(&a.body.list);
                self.cond -= 1;
            }
            ast::CompoundCommand::ForClause(f) => {
                let mut values = Vec::new();
                if let Some(ws) = &f.values {
                    for w in ws {
                        values.extend(self.expand_word(&w.value));
                    }
                }
                self.cond += 1;
                // A few static values: the body once per value; otherwise once, with the
                // variable unknown.
                if !values.is_empty()
                    && values.len() <= MAX_LOOP_VALUES
                    && values.iter().all(|v| !v.dynamic)
                    && self.rewalks + values.len() <= self.limits.max_rewalks
                {
                    self.rewalks += values.len();
                    for v in &values {
                        self.vars.map.insert(
                            f.variable_name.clone(),
                            crate::words::Val::Scalar(v.text.clone()),
                        );
                        self.rewalk_traps(&f.variable_name);
                        self.walk_list(&f.body.list);
                    }
                } else {
                    self.vars
                        .map
                        .insert(f.variable_name.clone(), crate::words::Val::Unknown);
                    self.rewalk_traps(&f.variable_name);
                    self.walk_list(&f.body.list);
                }
                self.cond -= 1;
            }
            ast::CompoundCommand::CaseClause(c) => {
                let _ = self.expand_word(&c.value.value);
                self.cond += 1;
                for item in &c.cases {
                    for p in &item.patterns {
                        let _ = self.expand_word(&p.value);
                    }
                    if let Some(cmd) = &item.cmd {
                        self.walk_list(cmd);
                    }
                }
                self.cond -= 1;
            }
            ast::CompoundCommand::IfClause(i) => {
                self.walk_list(&i.condition);
                self.cond += 1;
                self.walk_list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.walk_list(c);
                    }
                    self.walk_list(&e.body);
                }
                self.cond -= 1;
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.cond += 1;
                self.walk_list(&w.0);
                self.walk_list(&w.1.list);
                self.cond -= 1;
            }
            ast::CompoundCommand::Coprocess(c) => {
                let saved = std::mem::replace(&mut self.origin, Origin::Coproc);
                self.scoped(|w| {
                    w.walk_command(&c.body);
                });
                self.origin = saved;
            }
        }
        self.depth -= 1;
    }

    /// Looks for substitutions inside an arithmetic expression.
    pub fn scan_arith(&mut self, expr: &str) {
        if expr.contains("$(") || expr.contains('`') {
            let _ = self.expand_word(expr);
        }
        let names = arith_names(expr);
        for name in &names {
            // Arithmetic evaluates a variable's value as an expression, and an array
            // subscript in it is expanded: `x='a[$(cmd)]'; echo $((x))` runs `cmd`.
            if let Some(crate::words::Val::Scalar(v)) = self.vars.get(&name.0).cloned()
                && (v.contains("$(") || v.contains('`'))
            {
                let _ = self.expand_word(&v);
            }
        }
        for (name, assigned) in names {
            if assigned {
                let cond = self.cond > 0;
                self.vars.assign(&name, crate::words::Val::Unknown, cond);
            }
        }
    }

    fn define_function(&mut self, f: &ast::FunctionDefinition) {
        let name = crate::parse::parse_word(&f.fname.value)
            .ok()
            .map(|_| f.fname.value.clone())
            .unwrap_or_default();
        // Analyse the body at its definition with unknown arguments.
        let before = self.recs.len();
        let saved_origin = std::mem::replace(&mut self.origin, Origin::Function);
        self.scoped(|w| {
            w.vars.positional = None;
            w.cond += 1;
            if w.enter() {
                w.depth += 1;
                w.walk_function_body(&f.body);
                w.depth -= 1;
            }
            w.cond -= 1;
        });
        self.origin = saved_origin;
        let self_calls = self.recs[before..]
            .iter()
            .filter(|r| r.program == name)
            .count();
        let bg_self = self.recs[before..]
            .iter()
            .any(|r| r.program == name && (r.background || r.pipeline_stage_count() > 1));
        if !name.is_empty() && (self_calls >= 2 || bg_self) {
            self.finding(
                Risk::Catastrophic,
                "fork_bomb",
                format!("`{name}()` (rule fork_bomb): the function calls itself {self_calls} times in a pipeline or in the background, a fork bomb"),
            );
        }
        self.funcs.insert(
            name,
            Rc::new(FuncDef {
                body: f.body.clone(),
            }),
        );
    }

    pub fn walk_function_body(&mut self, body: &ast::FunctionBody) {
        let n = self.push_redirects(body.1.as_ref());
        self.walk_compound(&body.0);
        self.inherited.truncate(n);
    }

    /// Re-analyses a function body at a call site with known arguments.
    pub fn call_function(&mut self, name: &str, args: &[Field]) {
        let Some(def) = self.funcs.get(name).cloned() else {
            return;
        };
        if self.call_stack.iter().any(|n| n == name)
            || self.func_calls >= self.limits.max_function_calls
        {
            return;
        }
        self.func_calls += 1;
        self.call_stack.push(name.to_owned());
        let saved_pos = self.vars.positional.take();
        self.vars.positional = Some(args.iter().map(|a| a.text.clone()).collect());
        let saved_origin = std::mem::replace(&mut self.origin, Origin::Function);
        if self.enter() {
            self.depth += 1;
            self.walk_function_body(&def.body);
            self.depth -= 1;
        }
        self.origin = saved_origin;
        self.vars.positional = saved_pos;
        self.call_stack.pop();
    }
}

impl Rec {
    /// Placeholder used by the fork-bomb check: records in a multi-stage pipeline have
    /// `stage > 0` or share their pipeline with a later stage.
    pub fn pipeline_stage_count(&self) -> usize {
        self.stage + 1
    }
}

/// The variable names in an arithmetic expression, each with whether the expression assigns
/// it (`x=1`, `x+=2`, `x++`, `--x`). Names after `$` are included (as reads).
fn arith_names(expr: &str) -> Vec<(String, bool)> {
    let b = expr.as_bytes();
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let name = &expr[start..i];
            // Skip a subscript so `a[i]=1` assigns `a`.
            let mut j = i;
            if b.get(j) == Some(&b'[') {
                let mut depth = 0usize;
                while j < b.len() {
                    match b[j] {
                        b'[' => depth += 1,
                        b']' => {
                            depth -= 1;
                            if depth == 0 {
                                j += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
            }
            let rest = expr[j..].trim_start();
            let before = expr[..start].trim_end();
            let assigned = rest.starts_with("++")
                || rest.starts_with("--")
                || before.ends_with("++")
                || before.ends_with("--")
                || (rest.starts_with('=') && !rest.starts_with("=="))
                || ["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]
                    .iter()
                    .any(|op| rest.starts_with(op));
            // Digits glued to letters (`0x1f`, `16#ff`) are numbers, not names.
            let in_number = start > 0 && (b[start - 1].is_ascii_digit() || b[start - 1] == b'#');
            if !in_number {
                match out.iter_mut().find(|(n, _)| n == name) {
                    Some(e) => e.1 |= assigned,
                    None => out.push((name.to_owned(), assigned)),
                }
            }
        } else {
            i += 1;
        }
    }
    out
}
