//! Commands that take code or other commands from their arguments: shells (`bash -c`, script
//! files, stdin), `env` (incl. `-S`), `flock -c`, `watch`, `ssh host cmd`, `cd`, and the
//! download-then-run check.

use std::path::PathBuf;

use toolgate_protocol::Risk;

use crate::exec::{DB_CLIENTS, Pending, SHELLS, flag_value};
use crate::expand::clip;
use crate::feed::Output;
use crate::interp;
use crate::paths::resolve_word;
use crate::types::{CdTarget, Origin};
use crate::walk::{CodeInput, Lang, Walker};
use crate::words::Field;

impl Walker<'_> {
    pub(crate) fn run_shell_args(&mut self, argv: &[Field]) {
        let mut i = 1;
        let mut cflag = false;
        while i < argv.len() {
            let a = argv[i].text.as_str();
            if a == "--" {
                i += 1;
                break;
            }
            if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
                if !a.starts_with("--") && a.contains('c') {
                    cflag = true;
                }
                if matches!(a, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                    i += 1;
                }
                i += 1;
                continue;
            }
            break;
        }
        if cflag && let Some(body) = argv.get(i) {
            let body = body.text.clone();
            let arg0 = argv.get(i + 1).map(|f| f.text.clone());
            let args = argv
                .get(i + 2..)
                .map(|r| r.iter().map(|f| f.text.clone()).collect());
            if argv[i].net {
                self.finding(
                    crate::feed::INTERNET_CODE,
                    "remote_code_execution",
                    format!(
                        "`{} -c …` (rule rce.shell_download): runs downloaded text",
                        argv[0].text
                    ),
                );
            }
            self.nested_code(&body, Origin::ShellC, arg0, args);
        }
    }

    pub(crate) fn change_dir(&mut self, prog: &str, argv: &[Field], cdpath: bool) {
        if prog == "popd" {
            self.cwd = None;
            return;
        }
        let target = argv
            .iter()
            .skip(1)
            .find(|a| !a.text.starts_with('-') || a.text == "-");
        let home = self.ctx.home.clone();
        let resolved = match target {
            None => home.clone(),
            Some(t) if t.text == "-" || t.dynamic => None,
            Some(t) if cdpath && searches_cdpath(&t.text) => {
                self.opaque(format!(
                    "`{prog} {}` searches CDPATH, so the directory it enters is unknown",
                    clip(&t.text)
                ));
                None
            }
            Some(t) => resolve_word(&t.text, self.cwd.as_deref(), home.as_deref()),
        };
        let inside = resolved
            .as_deref()
            .is_some_and(|r| crate::paths::inside_roots(r, &self.ctx.roots, &self.ctx.cwd));
        self.cd = Some(CdTarget {
            path: resolved.clone(),
            inside_roots: inside,
        });
        self.cwd = resolved;
    }

    pub(crate) fn strip_env(&mut self, argv: &[Field], p: &mut Pending) -> Option<usize> {
        let mut i = 1;
        while i < argv.len() {
            let a = argv[i].text.as_str();
            if a == "--" {
                i += 1;
                continue;
            }
            if a == "-S"
                || a == "--split-string"
                || a.starts_with("-S")
                || a.starts_with("--split-string=")
            {
                // `env -S "rm -rf /"`: split the string into words and continue with them.
                let (s, next) = if a == "-S" || a == "--split-string" {
                    (
                        argv.get(i + 1).map(|f| f.text.clone()).unwrap_or_default(),
                        i + 2,
                    )
                } else {
                    (
                        a.trim_start_matches("--split-string=")
                            .trim_start_matches("-S")
                            .to_owned(),
                        i + 1,
                    )
                };
                let mut new: Vec<Field> = vec![Field::lit("env")];
                new.extend(s.split_whitespace().map(Field::lit));
                new.extend(argv[next.min(argv.len())..].iter().cloned());
                let idx = self.strip_env(&new, p)?;
                let inner = new[idx..].to_vec();
                self.run_argv(
                    inner,
                    vec!["env".into()],
                    Pending {
                        env: std::mem::take(&mut p.env),
                        redirects: std::mem::take(&mut p.redirects),
                        stdin: p.stdin.take(),
                    },
                );
                return None;
            }
            if matches!(a, "-u" | "-C" | "--unset" | "--chdir") {
                i += 2;
                continue;
            }
            if a.starts_with('-') {
                i += 1;
                continue;
            }
            if let Some((k, v)) = a.split_once('=')
                && !k.is_empty()
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                p.env.push((k.to_owned(), v.to_owned()));
                i += 1;
                continue;
            }
            break;
        }
        (i < argv.len()).then_some(i)
    }

    /// `flock FILE -c BODY` and `watch CMD…` (without `-x`) run shell code: walk it and
    /// return `true`; otherwise `false` and the caller strips them as plain wrappers.
    pub(crate) fn run_flock_watch(&mut self, prog: &str, argv: &[Field], at: usize) -> bool {
        if prog == "flock" {
            let Some(body) = flag_value(argv, &["-c", "--command"]).map(|f| f.text.clone()) else {
                return false;
            };
            self.nested_code(&body, Origin::ShellC, None, None);
            return true;
        }
        // watch without -x runs its words through `sh -c`.
        let exec = argv[1..at]
            .iter()
            .any(|a| a.text == "-x" || a.text == "--exec");
        if exec {
            return false;
        }
        let body = argv[at..]
            .iter()
            .map(|f| f.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        self.nested_code(&body, Origin::ShellC, None, None);
        true
    }

    pub(crate) fn run_ssh(&mut self, argv: &[Field]) -> Option<()> {
        // The host ends ssh's options; the words after it are the remote command.
        let i = crate::grammars::SSH.parse(argv, 1).rest;
        let rest = argv.get(i + 1..)?;
        if rest.is_empty() {
            return None;
        }
        let body = rest
            .iter()
            .map(|f| f.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        // The remote side has its own working directory.
        let cwd = self.cwd.take();
        self.nested_code(&body, Origin::Remote, None, None);
        self.cwd = cwd;
        Some(())
    }

    /// What code, if any, the command reads.
    pub(crate) fn code_input(&mut self, prog: &str, argv: &[Field]) -> CodeInput {
        if SHELLS.contains(&prog) {
            let mut i = 1;
            while i < argv.len() {
                let a = argv[i].text.as_str();
                if a == "--" {
                    i += 1;
                    break;
                }
                if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
                    if !a.starts_with("--") && a.contains('c') {
                        return CodeInput::None;
                    }
                    // `-s`: commands come from stdin, the operands are `$1…`.
                    if a.starts_with('-') && !a.starts_with("--") && a.contains('s') {
                        return CodeInput::Stdin(Lang::Shell);
                    }
                    if matches!(a, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                break;
            }
            return match argv.get(i) {
                None => CodeInput::Stdin(Lang::Shell),
                Some(f) if f.text == "-" || f.text == "/dev/stdin" => CodeInput::Stdin(Lang::Shell),
                Some(f) => match f.procsub {
                    Some(p) => CodeInput::ProcSub(Lang::Shell, p),
                    None => {
                        let f = f.clone();
                        self.script_file(prog, &f, Some(Lang::Shell))
                    }
                },
            };
        }
        if prog == "source" || prog == "." {
            return match argv.get(1) {
                Some(f) if f.procsub.is_some() => {
                    CodeInput::ProcSub(Lang::Shell, f.procsub.unwrap_or(0))
                }
                Some(f) if f.text == "/dev/stdin" || f.text == "-" => CodeInput::Stdin(Lang::Shell),
                Some(f) => {
                    let f = f.clone();
                    self.script_file(prog, &f, Some(Lang::Shell))
                }
                None => CodeInput::None,
            };
        }
        if DB_CLIENTS.contains(&prog) {
            return CodeInput::Stdin(Lang::Sql);
        }
        if prog == "make" || prog == "gmake" {
            // `make -f -` / `-f /dev/stdin` reads the makefile from stdin; a makefile the
            // command wrote earlier is walked like a script.
            let parsed = crate::carriers::MAKE.parse(argv, 1);
            for f in parsed
                .values('f', "file")
                .chain(parsed.values('\0', "makefile"))
            {
                if f.text == "-" || f.text == "/dev/stdin" {
                    return CodeInput::Stdin(Lang::Make);
                }
                let f = f.clone();
                if let code @ CodeInput::Written(..) = self.script_file(prog, &f, Some(Lang::Make))
                {
                    return code;
                }
            }
            return CodeInput::None;
        }
        if prog == "crontab" {
            // `crontab FILE` / `crontab -` installs entries; listing, removing and editing
            // the current table do not take new text.
            // `-u USER` takes a value.
            let mut operands = argv
                .iter()
                .enumerate()
                .skip(1)
                .filter(|(i, a)| {
                    (!a.text.starts_with('-') || a.text == "-")
                        && argv.get(i - 1).is_none_or(|p| p.text != "-u")
                })
                .map(|(_, a)| a);
            if argv.iter().skip(1).any(|a| {
                a.text.starts_with('-') && a.text.len() > 1 && a.text[1..].contains(['l', 'r', 'e'])
            }) {
                return CodeInput::None;
            }
            return match operands.next() {
                None => CodeInput::Stdin(Lang::Cron),
                Some(f) if f.text == "-" => CodeInput::Stdin(Lang::Cron),
                Some(f) => {
                    let f = f.clone();
                    match self.script_file(prog, &f, Some(Lang::Cron)) {
                        CodeInput::None => {
                            self.opaque(format!(
                                "`crontab {}` installs entries from a file the analyzer cannot read",
                                clip(&f.text)
                            ));
                            CodeInput::None
                        }
                        code => code,
                    }
                }
            };
        }
        if prog == "at" || prog == "batch" {
            // `at TIME` and `batch` read the job's shell commands from stdin or `-f FILE`.
            let listing = argv
                .iter()
                .skip(1)
                .any(|a| matches!(a.text.as_str(), "-l" | "-r" | "-d" | "-c" | "-V" | "--help"));
            if listing {
                return CodeInput::None;
            }
            if argv.iter().skip(1).any(|a| a.text.starts_with("-f")) {
                self.opaque(format!("`{prog} -f` schedules commands from a file"));
                return CodeInput::None;
            }
            return CodeInput::Stdin(Lang::Shell);
        }
        if let Some(lang) = interp::interp_of(prog) {
            return match interp::script_arg(lang, argv) {
                interp::Script::Stdin => CodeInput::Stdin(Lang::Interp(lang)),
                interp::Script::File(f) => match f.procsub {
                    Some(p) => CodeInput::ProcSub(Lang::Interp(lang), p),
                    None => {
                        let f = f.clone();
                        self.script_file(prog, &f, Some(Lang::Interp(lang)))
                    }
                },
                interp::Script::None => CodeInput::None,
            };
        }
        if let Some(f) = argv.first() {
            let f = f.clone();
            // Only a path runs a file from here; a bare name is looked up in PATH.
            if f.text.contains('/') {
                return self.script_file(prog, &f, None);
            }
            self.check_downloaded_exec(prog, &f);
        }
        CodeInput::None
    }

    /// A script file `prog` runs: downloaded earlier in the command is remote code
    /// execution; written earlier with known text, the text is what runs (`lang`, or the
    /// `#!` line when the file itself is executed); written with unknown text, opaque.
    fn script_file(&mut self, prog: &str, f: &Field, lang: Option<Lang>) -> CodeInput {
        self.check_downloaded_exec(prog, f);
        if f.dynamic || self.written.is_empty() {
            return CodeInput::None;
        }
        let home = self.ctx.home.clone();
        let Some(path) = resolve_word(&f.text, self.cwd.as_deref(), home.as_deref()) else {
            return CodeInput::None;
        };
        let Some((_, text)) = self.written.iter().rev().find(|(p, _)| *p == path) else {
            return CodeInput::None;
        };
        let Some(text) = text.clone() else {
            self.opaque(format!(
                "`{prog}` runs {}, which the command wrote with text the analyzer cannot see",
                path.display()
            ));
            return CodeInput::None;
        };
        match lang.or_else(|| shebang_lang(&text)) {
            Some(lang) => CodeInput::Written(lang, text),
            None => {
                self.opaque(format!(
                    "`{prog}` runs {}, written earlier in the command for an interpreter the \
                     analyzer does not read",
                    path.display()
                ));
                CodeInput::None
            }
        }
    }

    /// Remembers what a command writes to files through `>`/`>>` (or `tee FILE`), with the
    /// text when its output is known (`echo`, `printf`, `cat <<EOF`).
    pub(crate) fn note_written(&mut self, r: usize) {
        let Some(rec) = self.recs.get(r) else {
            return;
        };
        let home = self.ctx.home.clone();
        let resolve = |w: &Field| {
            (!w.dynamic)
                .then(|| resolve_word(&w.text, rec.cwd.as_deref(), home.as_deref()))
                .flatten()
        };
        let inherited = self.inherited.len();
        let mut targets: Vec<(PathBuf, bool)> = rec
            .redirects
            .iter()
            .enumerate()
            .filter(|(_, rr)| {
                rr.write
                    && matches!(rr.public.fd, None | Some(1))
                    && matches!(rr.public.op.as_str(), ">" | ">>" | ">|" | "&>" | "&>>")
            })
            .filter_map(|(i, rr)| {
                // An enclosing group's redirect collects every inner command's output.
                let append = rr.public.op.ends_with(">>") || i < inherited;
                resolve(&rr.target).map(|p| (p, append))
            })
            .collect();
        if rec.program == "tee" {
            let append = rec
                .argv
                .iter()
                .any(|a| a.text == "-a" || a.text == "--append");
            targets.extend(
                rec.argv
                    .iter()
                    .skip(1)
                    .filter(|a| !a.text.starts_with('-'))
                    .filter_map(|a| resolve(a).map(|p| (p, append))),
            );
        }
        if targets.is_empty() {
            return;
        }
        let input = match &rec.stdin {
            Some((t, true)) => Output::Text(t.clone()),
            Some((_, false)) => {
                Output::Unknown("a here-document with unresolved expansions".into())
            }
            None if rec.stage == 0 => Output::Unknown("the terminal".into()),
            None => {
                let before = self.pipe.1.get(..rec.stage).unwrap_or(&[]).to_vec();
                self.pipeline_output(&before)
            }
        };
        let text = match self.rec_output(r, input) {
            Output::Text(t) => Some(t),
            _ => None,
        };
        // Text stored where a shell runs it later is code of this call: the floor sees
        // `echo 'rm -rf ~' >> ~/.bashrc` as it sees `rm -rf ~`.
        if let Some(t) = &text
            && targets
                .iter()
                .any(|(p, _)| crate::paths::runs_later_as_shell(p))
        {
            let t = t.clone();
            self.nested_code(&t, Origin::Persisted, None, None);
        }
        for (path, append) in targets {
            let earlier = self
                .written
                .iter()
                .rposition(|(p, _)| *p == path)
                .map(|i| self.written.remove(i).1);
            let text = match (append, earlier, &text) {
                (true, Some(Some(before)), Some(t)) => Some(before + t),
                (true, Some(None), _) => None,
                _ => text.clone(),
            };
            self.written.push((path, text));
        }
    }

    pub(crate) fn check_downloaded_exec(&mut self, prog: &str, f: &Field) {
        if self.downloads.is_empty() || f.dynamic {
            return;
        }
        let home = self.ctx.home.clone();
        if let Some(path) = resolve_word(&f.text, self.cwd.as_deref(), home.as_deref())
            && self.downloads.contains(&path)
        {
            self.finding(
                    Risk::High,
                    "remote_code_execution",
                    format!("`{prog} {}` (rule rce.download_then_run): runs a file downloaded earlier in the command", clip(&f.text)),
                );
        }
    }

    /// Remembers files a downloader writes, to flag running them later.
    pub(crate) fn note_downloads(&mut self, prog: &str, argv: &[Field]) {
        if prog != "curl" && prog != "wget" {
            return;
        }
        let url = argv
            .iter()
            .find(|a| a.text.contains("://"))
            .map(|a| a.text.clone());
        let url_name = url
            .as_deref()
            .and_then(|u| u.split(['?', '#']).next())
            .and_then(|u| u.rsplit('/').next())
            .filter(|n| !n.is_empty())
            .map(str::to_owned);
        let explicit = if prog == "curl" {
            flag_value(argv, &["-o", "--output"])
        } else {
            flag_value(argv, &["-O", "--output-document"])
        };
        let name = match explicit {
            Some(f) => Some(f.text.clone()),
            None if prog == "wget"
                || argv
                    .iter()
                    .any(|a| a.text == "-O" || a.text == "--remote-name") =>
            {
                url_name
            }
            None => None,
        };
        let home = self.ctx.home.clone();
        if let Some(p) = name.and_then(|n| resolve_word(&n, self.cwd.as_deref(), home.as_deref())) {
            self.downloads.push(p);
        }
    }
}

/// The language a script runs in by its `#!` line: a shell without one (the kernel refuses
/// it and the shell runs it itself), `None` for an interpreter the analyzer does not read.
fn shebang_lang(text: &str) -> Option<Lang> {
    let Some(line) = text.lines().next().and_then(|l| l.strip_prefix("#!")) else {
        return Some(Lang::Shell);
    };
    let mut words = line.split_whitespace();
    let mut prog = words.next().map(crate::exec::basename)?;
    if prog == "env" {
        prog = words
            .find(|w| !w.starts_with('-') && !w.contains('='))
            .map(crate::exec::basename)?;
    }
    if SHELLS.contains(&prog.as_str()) {
        return Some(Lang::Shell);
    }
    interp::interp_of(&prog).map(Lang::Interp)
}

/// Whether `cd DIR` looks `DIR` up in `CDPATH`: a relative name whose first component is
/// not `.` or `..` (and not `~`, which is expanded first).
fn searches_cdpath(dir: &str) -> bool {
    let first = dir.split('/').next().unwrap_or("");
    !dir.starts_with('/') && !dir.starts_with('~') && !matches!(first, "." | "..")
}
