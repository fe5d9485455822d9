//! Data flowing into code runners: what a pipeline stage prints (`echo`, `printf`, `base64 -d`,
//! `xxd -r -p`, `rev`, `tr`, downloads) and what happens when that output, a here-document or a
//! here-string is fed to a shell, an interpreter or a database client.

use base64::Engine as _;
use toolgate_protocol::Risk;

use crate::expand::clip;
use crate::paths::resolve_word;
use crate::types::Origin;
use crate::walk::{CodeInput, Lang, Walker};
use crate::words::{decode_ansi_c, decode_echo_escapes};

/// What a command prints, as far as the analyzer can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Output {
    /// Exactly this text.
    Text(String),
    /// Data fetched from the network (the URL or host).
    Download(String),
    /// Something the analyzer cannot evaluate (why).
    Unknown(String),
}

/// Programs whose output is fetched from the network.
pub(crate) const DOWNLOADERS: &[&str] = &[
    "curl",
    "wget",
    "fetch",
    "aria2c",
    "http",
    "https",
    "httpie",
    "xh",
    "lynx",
    "links",
    "w3m",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "telnet",
    "openssl",
    "ftp",
    "tftp",
    "ssh",
    "invoke-webrequest",
    "iwr",
];

/// Clients that send their input to a server as it is, so what they are fed is what the
/// server gets (`printf 'FLUSHALL\r\n' | nc cache 6379`).
const RAW_CLIENTS: &[&str] = &["nc", "ncat", "netcat", "socat", "telnet", "openssl"];

/// Programs that transform data in ways the analyzer does not evaluate.
const OPAQUE_DECODERS: &[&str] = &[
    "gunzip",
    "gzip",
    "zcat",
    "bzip2",
    "bunzip2",
    "bzcat",
    "xz",
    "unxz",
    "xzcat",
    "zstd",
    "unzstd",
    "lz4",
    "gpg",
    "uudecode",
    "base32",
    "basenc",
    "openssl",
    "perl",
    "python",
    "python3",
    "ruby",
    "node",
    "awk",
    "sed",
    "od",
    "iconv",
    "rot13",
    "caesar",
    "uncompress",
];

/// The risk of code downloaded and run in the same breath (`curl … | sh`, `bash <(curl …)`,
/// `sh -c "$(curl …)"`, `eval "$(curl …)"`): nobody has read it, it can change between
/// the review and the run, and a broad allow rule (`Bash(*)`) or a permissive mode must not
/// let it through, so it is denied in every mode. Downloading a file and running it later in
/// the command (`curl -o x && ./x`) only asks: the file can be inspected.
pub(crate) const INTERNET_CODE: Risk = Risk::Catastrophic;

/// The host of a URL or `[user@]host[:port]` word, lower-cased (`https://u@X.example:8/p`
/// → `x.example`).
pub(crate) fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let hostport = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = hostport.rsplit_once('@').map_or(hostport, |(_, h)| h);
    let host = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    host.to_ascii_lowercase()
}

/// Whether a URL or host names this machine (`localhost`, `127.0.0.1`, `[::1]`).
pub(crate) fn is_loopback_url(url: &str) -> bool {
    let host = host_of(url);
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "::1"
        || host.starts_with("127.")
        || host == "0.0.0.0"
}

/// Quotes a word for re-parsing.
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn first_url(args: &[crate::words::Field]) -> Option<String> {
    args.iter()
        .find(|a| a.text.contains("://"))
        .map(|a| a.text.clone())
        .or_else(|| {
            args.iter()
                .find(|a| {
                    !a.text.starts_with('-')
                        && (a.text.contains('.') || host_of(&a.text) == "localhost")
                })
                .map(|a| a.text.clone())
        })
}

impl Walker<'_> {
    /// Output of a pipeline made of the given stage records.
    pub fn pipeline_output(&self, stages: &[Option<usize>]) -> Output {
        let mut cur = Output::Unknown("the terminal".into());
        for (k, st) in stages.iter().enumerate() {
            let Some(r) = *st else {
                cur = Output::Unknown("a compound command".into());
                continue;
            };
            let Some(rec) = self.recs.get(r) else {
                return Output::Unknown("an unanalysed command".into());
            };
            let input = match &rec.stdin {
                Some((t, true)) => Output::Text(t.clone()),
                Some((_, false)) => {
                    Output::Unknown("a here-document with unresolved expansions".into())
                }
                None if k == 0 => Output::Unknown("the terminal".into()),
                None => cur,
            };
            cur = self.rec_output(r, input);
        }
        cur
    }

    /// The output of the commands whose output is known from the analysis' own state:
    /// `mktemp`, `git rev-parse --show-toplevel`, and the tools that print environment setup.
    fn state_output(
        &self,
        rec: &crate::walk::Rec,
        prog: &str,
        args: &[crate::words::Field],
    ) -> Option<Output> {
        let dynamic = args.iter().any(|a| a.dynamic);
        Some(match prog {
            // `$(mktemp [-d] [TEMPLATE])`: a new name in the temporary directory, made for
            // this command (the random part stays `X`s).
            "mktemp" if !dynamic => Output::Text(format!("{}\n", mktemp_path(args))),
            // `$(git rev-parse --show-toplevel)`: the top of the repository the working
            // directory is in, taken to be the workspace root that holds it.
            "git"
                if args.len() == 2
                    && args[0].text == "rev-parse"
                    && args[1].text == "--show-toplevel" =>
            {
                match rec
                    .cwd
                    .as_deref()
                    .and_then(|c| self.ctx.roots.iter().find(|r| c.starts_with(r.as_path())))
                {
                    Some(root) => Output::Text(format!("{}\n", root.display())),
                    None => Output::Unknown("the top of a repository outside the workspace".into()),
                }
            }
            // Tools that print shell code setting up their own environment (`pyenv init -`,
            // `direnv export bash`, `ssh-agent -s`, `helm completion bash`): trusted to set
            // variables and define functions only, so `eval "$(pyenv init -)"` runs nothing
            // the analysis needs to see.
            // Only the installed tool itself: not a function or a file of that name made
            // earlier in the command (`pyenv() { echo 'rm -rf ~'; }`, `./pyenv`).
            p if crate::idioms::env_init(p, args)
                && !self.funcs.contains_key(p)
                && rec.argv.first().is_some_and(|w| {
                    !w.text.contains('/') || crate::renames::installed_program(&w.text)
                }) =>
            {
                Output::Text(String::new())
            }
            _ => return None,
        })
    }

    pub(crate) fn rec_output(&self, r: usize, input: Output) -> Output {
        let rec = &self.recs[r];
        let prog = rec.program.as_str();
        let args = rec.argv.get(1..).unwrap_or(&[]);
        let max = self.limits.max_value_bytes;
        let pass = |o: Output| -> Output {
            match o {
                Output::Text(t) if t.len() > max => {
                    Output::Unknown("data over the size limit".into())
                }
                o => o,
            }
        };
        if DOWNLOADERS.contains(&prog) {
            return Output::Download(first_url(args).unwrap_or_else(|| prog.to_owned()));
        }
        if let Some(out) = self.state_output(rec, prog, args) {
            return out;
        }
        let dynamic = args.iter().any(|a| a.dynamic);
        match prog {
            "echo" if !dynamic => pass(Output::Text(echo_output(args))),
            // `$(command -v X)`, `$(which X)`, `$(type -P X)`: where the program X is. Its
            // directory is not known, its identity is: `$(command -v python3) -m pip` runs
            // python3, `cp $(which rm) ./x` copies rm.
            "command" | "which" | "type" if !dynamic => match program_lookup(prog, args) {
                Some(name) => Output::Text(format!("/usr/bin/{name}\n")),
                None => Output::Unknown(format!("the output of `{prog}`")),
            },
            // `$(pwd)` is the working directory the analysis tracks (`cd` included).
            "pwd" if args.iter().all(|a| matches!(a.text.as_str(), "-L" | "-P")) => {
                match (&rec.cwd, rec.cwd.as_ref().and_then(|c| c.to_str())) {
                    (Some(_), Some(c)) => Output::Text(format!("{c}\n")),
                    _ => Output::Unknown("the working directory after an unknown `cd`".into()),
                }
            }
            "printf" if !dynamic => match printf(args.iter().map(|a| a.text.as_str()).collect()) {
                Some(s) => pass(Output::Text(s)),
                None => Output::Unknown("a printf format the analyzer does not evaluate".into()),
            },
            "cat" | "tac" | "head" | "tail" | "tee" | "sort" | "uniq"
                if args
                    .iter()
                    .all(|a| a.text.starts_with('-') || prog == "tee") =>
            {
                match input {
                    Output::Text(t) if prog == "tac" => {
                        Output::Text(t.lines().rev().collect::<Vec<_>>().join("\n") + "\n")
                    }
                    o => o,
                }
            }
            "cat" | "tac" | "head" | "tail" => Output::Unknown(format!(
                "the contents of {}",
                args.iter()
                    .map(|a| a.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
            "base64" | "gbase64"
                if args.iter().any(|a| {
                    matches!(a.text.as_str(), "-d" | "--decode" | "-D" | "-di" | "-id")
                }) =>
            {
                match input {
                    Output::Text(t) => {
                        let clean: String = t.chars().filter(|c| !c.is_whitespace()).collect();
                        let eng = base64::engine::general_purpose::STANDARD;
                        let alt = base64::engine::general_purpose::URL_SAFE;
                        match eng
                            .decode(clean.as_bytes())
                            .or_else(|_| alt.decode(clean.as_bytes()))
                        {
                            Ok(b) => pass(Output::Text(String::from_utf8_lossy(&b).into_owned())),
                            Err(_) => Output::Unknown("invalid base64 data".into()),
                        }
                    }
                    o => decoded_unknown(o, "base64 -d"),
                }
            }
            "xxd" if args.iter().any(|a| a.text.starts_with("-r")) => match input {
                Output::Text(t) => {
                    let hex: Vec<u8> = t.bytes().filter(u8::is_ascii_hexdigit).collect();
                    let bytes: Vec<u8> = hex
                        .chunks(2)
                        .filter_map(|c| {
                            std::str::from_utf8(c)
                                .ok()
                                .and_then(|s| u8::from_str_radix(s, 16).ok())
                        })
                        .collect();
                    pass(Output::Text(String::from_utf8_lossy(&bytes).into_owned()))
                }
                o => decoded_unknown(o, "xxd -r"),
            },
            "rev" => match input {
                Output::Text(t) => Output::Text(
                    t.lines()
                        .map(|l| l.chars().rev().collect::<String>())
                        .collect::<Vec<_>>()
                        .join("\n")
                        + "\n",
                ),
                o => decoded_unknown(o, "rev"),
            },
            "tr" if !dynamic => match (input, tr(args.iter().map(|a| a.text.as_str()).collect())) {
                (Output::Text(t), Some(map)) => Output::Text(map(&t)),
                (o, _) => decoded_unknown(o, "tr"),
            },
            p if OPAQUE_DECODERS.contains(&p) => Output::Unknown(format!(
                "the output of the decoder `{p}`, which the analyzer does not evaluate"
            )),
            _ => Output::Unknown(format!("the output of `{prog}`")),
        }
    }

    /// After a pipeline: feed each code runner the text that reaches its stdin, and tell
    /// the clients of raw protocols what they send.
    pub fn after_pipeline(&mut self) {
        let stages = self.pipe.1.clone();
        for (k, st) in stages.iter().enumerate() {
            let Some(r) = *st else { continue };
            let Some(rec) = self.recs.get(r) else {
                continue;
            };
            if k > 0
                && rec.fed.is_none()
                && RAW_CLIENTS.contains(&rec.program.as_str())
                && let Output::Text(t) = self.pipeline_output(&stages[..k])
                && let Some(rec) = self.recs.get_mut(r)
            {
                rec.fed = Some(t);
            }
            let Some(rec) = self.recs.get(r) else {
                continue;
            };
            let CodeInput::Stdin(lang) = rec.code else {
                continue;
            };
            let prog = rec.program.clone();
            let (out, origin) = match &rec.stdin {
                Some((t, true)) => (Output::Text(t.clone()), Origin::Heredoc),
                Some((_, false)) => (
                    Output::Unknown("a here-document with unresolved expansions".into()),
                    Origin::Heredoc,
                ),
                None if k == 0 => match self.stdin_redirect(r) {
                    Some(out) => (out, Origin::PipeToShell),
                    None => continue,
                },
                None => (self.pipeline_output(&stages[..k]), Origin::PipeToShell),
            };
            self.feed(lang, out, &prog, origin, Some(r));
        }
    }

    /// What reaches a code runner's stdin through a redirect: a process substitution's
    /// output (`sh < <(echo …)`), a file written earlier in the command, or something the
    /// analysis cannot follow (`bash <&3`, stdin replaced by `exec`). `None` for the
    /// terminal, a closed stdin or a file from before the command.
    pub(crate) fn stdin_redirect(&self, r: usize) -> Option<Output> {
        let rec = self.recs.get(r)?;
        let redirect = rec.redirects.iter().rev().find(|rr| {
            matches!(rr.public.fd, None | Some(0))
                && matches!(rr.public.op.as_str(), "<" | "<>" | "<&")
        });
        let Some(rr) = redirect else {
            return self.stdin_replaced.clone();
        };
        if rr.public.op == "<&" {
            return match rr.target.text.as_str() {
                "-" | "0" => None,
                fd => Some(Output::Unknown(format!("file descriptor {fd}"))),
            };
        }
        if let Some(p) = rr.target.procsub {
            let stages = self
                .producers
                .get(p)
                .map(|p| p.stages.clone())
                .unwrap_or_default();
            return Some(self.pipeline_output(&stages));
        }
        let home = self.ctx.home.clone();
        let path = (!rr.target.dynamic)
            .then(|| resolve_word(&rr.target.text, rec.cwd.as_deref(), home.as_deref()))
            .flatten()?;
        let (_, text) = self.written.iter().rev().find(|(p, _)| *p == path)?;
        Some(match text {
            Some(t) => Output::Text(t.clone()),
            None => Output::Unknown(format!(
                "{}, written earlier in the command with text the analyzer cannot see",
                path.display()
            )),
        })
    }

    /// Feeds `out` as code to a runner of `lang`.
    pub fn feed(
        &mut self,
        lang: Lang,
        out: Output,
        prog: &str,
        origin: Origin,
        rec: Option<usize>,
    ) {
        match (lang, out) {
            (Lang::Sql, Output::Text(t)) => {
                // Meta-commands in the fed text (`.shell`, `\!`, `system`) run commands.
                let meta = crate::carriers::db_meta(prog, &crate::words::Field::lit(t.clone()));
                self.run_carried_list(prog, meta);
                if let Some(r) = rec.and_then(|r| self.recs.get_mut(r)) {
                    r.fed = Some(t);
                }
            }
            (Lang::Sql, _) => {}
            (Lang::Cron, Output::Text(t)) => {
                for line in t.lines().map(str::trim) {
                    if let Some(cmd) = cron_command(line) {
                        self.nested_code(cmd, Origin::Persisted, None, None);
                    }
                }
            }
            (Lang::Shell, Output::Text(t)) => self.nested_code(&t, origin, None, None),
            (Lang::Make, Output::Text(t)) => {
                let code = crate::carriers::make_to_shell(&t);
                self.nested_code(&code, origin, None, None);
            }
            (Lang::Interp(i), Output::Text(t)) => self.scan_interp(i, &t, prog),
            // Internet code run straight by a shell or interpreter is denied in every mode
            // (see `INTERNET_CODE`); code from this machine's own server only asks.
            (_, Output::Download(url)) => self.finding(
                if is_loopback_url(&url) {
                    Risk::High
                } else {
                    INTERNET_CODE
                },
                "remote_code_execution",
                format!(
                    "`{prog}` (rule rce.pipe_download): runs code downloaded from {}",
                    clip(&url)
                ),
            ),
            (_, Output::Unknown(why)) => {
                if why.contains("decoder") || why.contains("decoded") {
                    self.finding(
                        Risk::High,
                        "obfuscated_execution",
                        format!("`{prog}` (rule rce.decoded_code): runs {why}"),
                    );
                }
                self.opaque(format!("`{prog}` runs code from {why}"));
            }
        }
    }
}

/// What `echo ARGS` prints (`-n`, `-e`, `-E` as bash's builtin reads them).
fn echo_output(args: &[crate::words::Field]) -> String {
    let mut newline = true;
    let mut escapes = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if t.len() > 1 && t.starts_with('-') && t[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'))
        {
            newline &= !t.contains('n');
            if t.contains('e') {
                escapes = true;
            }
            if t.contains('E') {
                escapes = false;
            }
            i += 1;
        } else {
            break;
        }
    }
    let mut s = args[i..]
        .iter()
        .map(|a| a.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    if escapes {
        s = decode_echo_escapes(&s);
    }
    if newline {
        s.push('\n');
    }
    s
}

/// The path `mktemp` prints: its template (`mktemp -d /tmp/x.XXXX`, `mktemp -p DIR`, `-t
/// NAME` in the temporary directory) or `/tmp/tmp.XXXXXXXXXX`.
fn mktemp_path(args: &[crate::words::Field]) -> String {
    let mut dir: Option<&str> = None;
    let mut template: Option<&str> = None;
    let mut in_tmp = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.text.as_str() {
            "-p" | "--tmpdir" => {
                dir = args.get(i + 1).map(|f| f.text.as_str());
                i += 1;
            }
            "-t" => in_tmp = true,
            t if t.starts_with("--tmpdir=") => dir = Some(&t["--tmpdir=".len()..]),
            t if t.starts_with('-') => {}
            t => template = Some(t),
        }
        i += 1;
    }
    let name = template.unwrap_or("tmp.XXXXXXXXXX");
    match (dir, in_tmp || template.is_none()) {
        (Some(d), _) => format!("{}/{name}", d.trim_end_matches('/')),
        (None, _) if name.starts_with('/') => name.to_owned(),
        (None, true) => format!("/tmp/{name}"),
        (None, false) => name.to_owned(),
    }
}

/// The program a lookup prints the path of: `command -v X`, `which X`, `type -P X`.
fn program_lookup(prog: &str, args: &[crate::words::Field]) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    let name = match (prog, texts.as_slice()) {
        ("command", ["-v", name]) | ("which", [name]) | ("type", ["-P" | "-p", name]) => *name,
        _ => return None,
    };
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
        .then(|| name.to_owned())
}

/// The command of a crontab line: after five schedule fields or an `@reboot`-style
/// nickname. Comments, blank lines and `NAME=value` settings have none.
fn cron_command(line: &str) -> Option<&str> {
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let first = line.split_whitespace().next()?;
    if first.contains('=') && !first.starts_with('@') {
        return None;
    }
    let skip = if first.starts_with('@') { 1 } else { 5 };
    let mut rest = line;
    for _ in 0..skip {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace)?;
        rest = &rest[end..];
    }
    Some(rest.trim()).filter(|r| !r.is_empty())
}

fn decoded_unknown(input: Output, what: &str) -> Output {
    match input {
        Output::Download(u) => Output::Download(u),
        _ => Output::Unknown(format!(
            "data decoded by `{what}` from a source the analyzer cannot see"
        )),
    }
}

/// Evaluates `printf FORMAT ARGS…` for `%s %b %d %i %c %%`; `None` for anything else.
pub(crate) fn printf(args: Vec<&str>) -> Option<String> {
    let (fmt, rest) = args.split_first()?;
    let fmt = if *fmt == "--" {
        rest.first().copied()?
    } else {
        *fmt
    };
    let rest: &[&str] = if args.first() == Some(&"--") {
        rest.get(1..).unwrap_or(&[])
    } else {
        rest
    };
    let mut out = String::new();
    let mut ai = 0;
    loop {
        let mut chars = fmt.chars().peekable();
        let mut lit = String::new();
        while let Some(c) = chars.next() {
            if c != '%' {
                lit.push(c);
                continue;
            }
            out.push_str(&decode_ansi_c(&std::mem::take(&mut lit)));
            // Skip flags and width.
            while chars.peek().is_some_and(|c| "-+ #0123456789.".contains(*c)) {
                chars.next();
            }
            let spec = chars.next()?;
            let arg = rest.get(ai).copied().unwrap_or("");
            match spec {
                '%' => out.push('%'),
                's' => {
                    out.push_str(arg);
                    ai += 1;
                }
                'b' => {
                    out.push_str(&decode_echo_escapes(arg));
                    ai += 1;
                }
                'c' => {
                    out.extend(arg.chars().next());
                    ai += 1;
                }
                'd' | 'i' => {
                    out.push_str(&arg.parse::<i64>().unwrap_or(0).to_string());
                    ai += 1;
                }
                _ => return None,
            }
        }
        out.push_str(&decode_ansi_c(&lit));
        if ai == 0 || ai >= rest.len() {
            break;
        }
        if out.len() > crate::limits::MAX_VALUE_BYTES {
            return None;
        }
    }
    Some(out)
}

fn tr_set(s: &str) -> Option<Vec<char>> {
    if s.contains("[:") || s.contains("[=") {
        return None;
    }
    let chars: Vec<char> = decode_ansi_c(s).chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if i + 2 < chars.len() && chars[i + 1] == '-' {
            let (a, b) = (chars[i] as u32, chars[i + 2] as u32);
            if a > b || b - a > 1024 {
                return None;
            }
            out.extend((a..=b).filter_map(char::from_u32));
            i += 3;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Builds the mapping of `tr SET1 SET2` or `tr -d SET1`; `None` for other forms.
#[allow(clippy::type_complexity)]
fn tr(args: Vec<&str>) -> Option<Box<dyn Fn(&str) -> String>> {
    match args.as_slice() {
        ["-d", set] => {
            let set = tr_set(set)?;
            Some(Box::new(move |t: &str| {
                t.chars().filter(|c| !set.contains(c)).collect()
            }))
        }
        [a, b] if !a.starts_with('-') => {
            let from = tr_set(a)?;
            let to = tr_set(b)?;
            let last = *to.last()?;
            Some(Box::new(move |t: &str| {
                t.chars()
                    .map(|c| match from.iter().position(|f| *f == c) {
                        Some(i) => to.get(i).copied().unwrap_or(last),
                        None => c,
                    })
                    .collect()
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_printf_and_tr() {
        assert_eq!(printf(vec!["%s -rf /", "rm"]).as_deref(), Some("rm -rf /"));
        assert_eq!(printf(vec![r"\x72\x6d"]).as_deref(), Some("rm"));
        assert_eq!(printf(vec!["%s\n", "a", "b"]).as_deref(), Some("a\nb\n"));
        let rot13 = tr(vec!["A-Za-z", "N-ZA-Mn-za-m"]).map(|f| f("ez"));
        assert_eq!(rot13.as_deref(), Some("rm"));
    }
}
