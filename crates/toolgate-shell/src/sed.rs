//! `sed` scripts: what they run (`e COMMAND`, `e`, the `e` flag of `s`), write (`w`, `W`,
//! the `w` flag of `s`) and read (`r`, `R`), found by reading GNU sed's script syntax far
//! enough. Anything the reader does not know makes the script opaque: it never guesses
//! "harmless".

use crate::carriers::{Carried, long_is, option_value, part, split_long};
use crate::words::Field;

/// Scripts from `-e`/`--expression` or the first operand; a script file is opaque.
/// The scripts' `e` commands are carried; `w`/`r` files are in [`sed_files`].
pub(crate) fn carried(argv: &[Field], out: &mut Vec<Carried>) {
    let scripts = sed_scripts(argv);
    if scripts.sandbox {
        return;
    }
    for f in &scripts.files {
        out.push(Carried::Opaque(format!(
            "`sed -f {}` runs a script from a file, which can run commands (`e`) and write files (`w`)",
            f.text
        )));
    }
    for s in &scripts.scripts {
        if s.dynamic {
            out.push(Carried::Opaque(format!(
                "`sed` script `{}` is not static",
                s.text
            )));
            continue;
        }
        let fx = sed_effects(&s.text);
        if fx.unparsed {
            out.push(Carried::Opaque(format!(
                "`sed` script `{}` could not be read (it may run commands or write files)",
                s.text
            )));
        }
        for e in fx.exec {
            match e {
                Some(cmd) => out.push(Carried::Shell(part(s, &cmd))),
                None => out.push(Carried::Opaque(format!(
                    "`sed` script `{}` runs text it builds as a command (`e`)",
                    s.text
                ))),
            }
        }
    }
}

/// What a `sed` command line runs.
#[derive(Debug, Default)]
pub(crate) struct SedScripts {
    /// Script texts (`-e`, `--expression`, or the first operand).
    pub scripts: Vec<Field>,
    /// Script files (`-f`, `--file`).
    pub files: Vec<Field>,
    /// `--sandbox`: `e`, `r` and `w` are refused by sed itself.
    pub sandbox: bool,
}

/// Finds a `sed` command line's scripts (`argv[0]` is `sed`).
pub(crate) fn sed_scripts(argv: &[Field]) -> SedScripts {
    let mut s = SedScripts::default();
    let mut operands = Vec::new();
    let mut i = 1;
    let mut options_done = false;
    while i < argv.len() {
        let w = &argv[i];
        let a = w.text.as_str();
        if options_done || a == "-" || !a.starts_with('-') {
            operands.push(w.clone());
            i += 1;
            continue;
        }
        if a == "--" {
            options_done = true;
            i += 1;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = split_long(long);
            if long_is(name, "--expression") {
                s.scripts.extend(option_value(argv, &mut i, inline));
            } else if long_is(name, "--file") {
                s.files.extend(option_value(argv, &mut i, inline));
            } else if long_is(name, "--sandbox") {
                s.sandbox = true;
            } else if long_is(name, "--line-length") {
                let _ = option_value(argv, &mut i, inline);
            }
            i += 1;
            continue;
        }
        let flags = &a[1..];
        for (pos, c) in flags.char_indices() {
            let rest = &flags[pos + c.len_utf8()..];
            match c {
                // `-i[SUFFIX]`: the rest of the word is the suffix.
                'i' => break,
                'e' | 'f' | 'l' => {
                    let v = option_value(argv, &mut i, Some(rest).filter(|r| !r.is_empty()));
                    match c {
                        'e' => s.scripts.extend(v),
                        'f' => s.files.extend(v),
                        _ => {}
                    }
                    break;
                }
                _ => {}
            }
        }
        i += 1;
    }
    if s.scripts.is_empty() && s.files.is_empty() && !operands.is_empty() {
        s.scripts.push(operands.remove(0));
    }
    s
}

/// What one `sed` script does besides editing the stream.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SedEffects {
    /// `e COMMAND` (`Some`), or `e` / `s///e` running the pattern space (`None`).
    pub exec: Vec<Option<String>>,
    /// Files written by `w`, `W` and `s///w`.
    pub writes: Vec<String>,
    /// Files read by `r` and `R`.
    pub reads: Vec<String>,
    /// The script uses something this reader does not know; treat it as able to do anything.
    pub unparsed: bool,
}

/// Reads a GNU `sed` script far enough to find its `e`, `w`, `W`, `r`, `R` commands and the
/// `e`/`w` flags of `s`.
pub(crate) fn sed_effects(script: &str) -> SedEffects {
    let b: Vec<char> = script.chars().collect();
    let mut fx = SedEffects::default();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i].is_whitespace() || b[i] == ';') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] == '#' {
            rest_of_line(&b, &mut i);
            continue;
        }
        // Addresses: `N`, `$`, `first~step`, `/re/I`, `\cREc`, then `,ADDR`, `,+N`, `,~N`.
        if !skip_addresses(&b, &mut i) {
            fx.unparsed = true;
            return fx;
        }
        while i < b.len() && (b[i] == '!' || b[i] == ' ' || b[i] == '\t') {
            i += 1;
        }
        let Some(&c) = b.get(i) else {
            fx.unparsed = true;
            break;
        };
        i += 1;
        match c {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            'l' | 'q' | 'Q' | 'L' => {
                skip_ws(&b, &mut i);
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while i < b.len() && !matches!(b[i], '\n' | ';' | '}') {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line, continued by a trailing backslash.
                loop {
                    let line = rest_of_line(&b, &mut i);
                    if line.ends_with('\\') && i < b.len() {
                        i += 1;
                        continue;
                    }
                    break;
                }
            }
            'r' | 'R' | 'w' | 'W' => {
                skip_ws(&b, &mut i);
                let file = rest_of_line(&b, &mut i);
                if matches!(c, 'r' | 'R') {
                    fx.reads.push(file);
                } else {
                    fx.writes.push(file);
                }
            }
            'e' => {
                skip_ws(&b, &mut i);
                let cmd = rest_of_line(&b, &mut i);
                fx.exec.push(if cmd.trim().is_empty() {
                    None
                } else {
                    Some(cmd)
                });
            }
            's' | 'y' => {
                let Some(&delim) = b.get(i) else {
                    fx.unparsed = true;
                    break;
                };
                if delim == '\n' || delim == '\\' {
                    fx.unparsed = true;
                    break;
                }
                i += 1;
                if !skip_delimited(&b, &mut i, delim) || !skip_delimited(&b, &mut i, delim) {
                    fx.unparsed = true;
                    break;
                }
                if c == 'y' {
                    continue;
                }
                while i < b.len() {
                    match b[i] {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        'e' => {
                            fx.exec.push(None);
                            i += 1;
                        }
                        'w' => {
                            i += 1;
                            skip_ws(&b, &mut i);
                            fx.writes.push(rest_of_line(&b, &mut i));
                        }
                        ';' | '\n' | '}' | ' ' | '\t' | '#' => break,
                        _ => {
                            fx.unparsed = true;
                            return fx;
                        }
                    }
                }
            }
            _ => {
                fx.unparsed = true;
                break;
            }
        }
    }
    fx
}

/// Skips spaces and tabs.
fn skip_ws(b: &[char], i: &mut usize) {
    while *i < b.len() && (b[*i] == ' ' || b[*i] == '\t') {
        *i += 1;
    }
}

/// The text to the end of the line (filenames, `e` commands, `a`/`i`/`c` one-liners).
fn rest_of_line(b: &[char], i: &mut usize) -> String {
    let start = *i;
    while *i < b.len() && b[*i] != '\n' {
        *i += 1;
    }
    b[start..*i].iter().collect()
}

/// Moves past a command's addresses (`N`, `$`, `first~step`, `/re/I`, `\cREc`, then
/// `,ADDR`, `,+N`, `,~N`); false when they do not parse.
fn skip_addresses(b: &[char], i: &mut usize) -> bool {
    for n in 0..2 {
        if n == 1 {
            if *i < b.len() && b[*i] == ',' {
                *i += 1;
                skip_ws(b, i);
                if *i < b.len() && (b[*i] == '+' || b[*i] == '~') {
                    *i += 1;
                }
            } else {
                break;
            }
        }
        if *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == '$') {
            while *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == '$' || b[*i] == '~') {
                *i += 1;
            }
        } else if *i < b.len() && (b[*i] == '/' || b[*i] == '\\') {
            let delim = if b[*i] == '\\' {
                *i += 1;
                match b.get(*i) {
                    Some(d) => *d,
                    None => return false,
                }
            } else {
                '/'
            };
            *i += 1;
            if !skip_delimited(b, i, delim) {
                return false;
            }
            while *i < b.len() && (b[*i] == 'I' || b[*i] == 'M') {
                *i += 1;
            }
        }
        skip_ws(b, i);
    }
    true
}

/// Moves past `…DELIM` (backslash escapes the next character); false when it never closes.
fn skip_delimited(b: &[char], i: &mut usize, delim: char) -> bool {
    while *i < b.len() {
        match b[*i] {
            '\\' => *i += 2,
            c if c == delim => {
                *i += 1;
                return true;
            }
            _ => *i += 1,
        }
    }
    false
}

/// Files a `sed` command line writes and reads through its scripts (not `-i`).
pub(crate) fn sed_files(argv: &[Field]) -> (Vec<String>, Vec<String>) {
    let scripts = sed_scripts(argv);
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    if scripts.sandbox {
        return (writes, reads);
    }
    for s in scripts.scripts.iter().filter(|s| !s.dynamic) {
        let fx = sed_effects(&s.text);
        writes.extend(
            fx.writes
                .into_iter()
                .filter(|w| !matches!(w.as_str(), "" | "/dev/stdout" | "/dev/stderr")),
        );
        reads.extend(
            fx.reads
                .into_iter()
                .filter(|r| !matches!(r.as_str(), "" | "/dev/stdin")),
        );
    }
    (writes, reads)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(cmd: &str) -> Vec<String> {
        let argv: Vec<Field> = crate::carriers::tests::fields(cmd);
        let mut out = Vec::new();
        carried(&argv, &mut out);
        out.into_iter()
            .map(|c| match c {
                Carried::Shell(f) => f.text,
                _ => "?".into(),
            })
            .collect()
    }

    #[test]
    fn sed_scripts_are_read() {
        assert_eq!(texts("sed -n '1e id' f"), ["id"]);
        assert_eq!(texts("sed 's/.*/id/e' f"), ["?"]);
        assert_eq!(texts("sed -e '1e id' f"), ["id"]);
        assert_eq!(texts("sed --expression='1e id' f"), ["id"]);
        assert_eq!(texts("sed -ne '1e id' f"), ["id"]);
        assert_eq!(texts("sed -f script.sed f"), ["?"]);
        assert_eq!(texts("sed --sandbox -n '1e id' f"), Vec::<String>::new());
        // `-ie` is `-i` with the suffix `e`: the script is the next operand.
        assert_eq!(texts("sed -ie 's/a/b/' f"), Vec::<String>::new());
        for benign in [
            "s/a/b/g",
            "1!G;h;$!d",
            "/^#/d",
            "s|x|y|",
            "/start/,/end/p",
            "$a\\\nlast",
            "1i header",
            "s/\\(.*\\)/\\1/",
            "y/abc/xyz/",
            ":a;N;$!ba;s/\\n/ /g",
            "/x/{s/a/b/;p}",
            "0,/re/s//x/",
            "s/x/y/2g",
            "s/x/y/I",
            "s/a/b/;s/c/d/",
            "=",
            "10q",
            "$!N",
            "1~3d",
            "2,+3d",
            "\\,x,d",
            "/a/I,/b/Mp",
            "# comment\np",
        ] {
            assert_eq!(sed_effects(benign), SedEffects::default(), "{benign:?}");
        }
        let fx = sed_effects("s/a/b/w out.txt");
        assert_eq!(fx.writes, ["out.txt"]);
        let fx = sed_effects("/x/w /root/.bashrc\n1r /etc/shadow\nW log");
        assert_eq!(fx.writes, ["/root/.bashrc", "log"]);
        assert_eq!(fx.reads, ["/etc/shadow"]);
        let fx = sed_effects("s/a/b/ge");
        assert_eq!(fx.exec, [None]);
        // What it cannot read is reported, never skipped.
        assert!(sed_effects("s/a/b").unparsed);
        assert!(sed_effects("s/a/b/gX").unparsed);
        assert!(sed_effects("k").unparsed);
        assert!(sed_effects("1").unparsed);
    }
}
