//! Build tools and package managers: `npm --script-shell`, node options that load code,
//! `cargo --config` program keys, `go -exec`/`-toolexec`, `make SHELL=`.

use crate::argv::{Grammar, Item, part};
use crate::expand::clip;
use crate::words::Field;

use super::*;

/// `npm`/`pnpm`/`yarn`/`npx`: `--script-shell PROG` runs every script through PROG; node
/// options that load code (`--require`, `--import`, `--loader`) and other configuration files
/// (which can set either) are opaque; `npx -c CMD`, `npm exec -c CMD` / `--call CMD` run CMD
/// through a shell. The script itself is the rule's business.
pub(super) fn package_manager(prog: &str, argv: &[Field], out: &mut Vec<Carried>) {
    const GRAMMAR: Grammar<'static> = Grammar {
        short_val: "cpwC",
        long_val: &[
            "--script-shell",
            "--config.script-shell",
            "--node-options",
            "--config.node-options",
            "--userconfig",
            "--globalconfig",
            "--package",
            "--workspace",
            "--prefix",
            "--dir",
            "--filter",
        ],
        long_val_abbrev: &["--call"],
        permute: true,
        ..Grammar::EMPTY
    };
    let parsed = GRAMMAR.parse(argv, 1);
    let exec_like = prog == "npx"
        || parsed
            .operands()
            .next()
            .is_some_and(|i| matches!(argv[i].text.as_str(), "exec" | "x" | "dlx"));
    for item in &parsed.items {
        let Item::Long {
            name,
            value: Some(value),
            ..
        } = item
        else {
            if let Item::Short {
                letter: 'c',
                value: Some(value),
                ..
            } = item
                && exec_like
            {
                out.push(Carried::Shell(value.clone()));
            }
            continue;
        };
        match *name {
            "call" if exec_like => out.push(Carried::Shell(value.clone())),
            "script-shell" | "config.script-shell" if !is_plain_shell(value) => {
                out.push(Carried::Argv(vec![value.clone()]));
            }
            "node-options" | "config.node-options" => {
                let t = value.text.as_str();
                if value.dynamic
                    || [
                        "--require",
                        "-r",
                        "--import",
                        "--loader",
                        "--experimental-loader",
                    ]
                    .iter()
                    .any(|o| t.split([' ', '=']).any(|w| w == *o))
                {
                    out.push(Carried::Opaque(format!(
                        "`--node-options={}` makes node load code before every script",
                        clip(t)
                    )));
                }
            }
            "userconfig" | "globalconfig" => out.push(Carried::Opaque(format!(
                "`--{name}` reads another configuration file, which can set the script shell"
            ))),
            _ => {}
        }
    }
}

/// Whether a program value is a plain system shell (`/bin/bash`, `sh`): running scripts
/// through it is what the tool does anyway.
pub(super) fn is_plain_shell(value: &Field) -> bool {
    !value.dynamic
        && !value.text.contains(char::is_whitespace)
        && (!value.text.contains('/')
            || ["/bin/", "/usr/bin/", "/usr/local/bin/"]
                .iter()
                .any(|d| value.text.starts_with(d)))
        && crate::exec::SHELLS.contains(&crate::exec::basename(&value.text).as_str())
}

/// `cargo --config KEY=VALUE` for keys that name a program (`build.rustc-wrapper`,
/// `target.<triple>.runner`, `…linker`, `build.rustc`, `build.rustdoc`); a configuration
/// file (`--config path.toml`) is opaque.
pub(super) fn cargo(argv: &[Field], out: &mut Vec<Carried>) {
    const PROGRAM_KEYS: &[&str] = &[
        "build.rustc-wrapper",
        "build.rustc-workspace-wrapper",
        "build.rustc",
        "build.rustdoc",
    ];
    const CARGO: Grammar = Grammar {
        short_val: "CZjp",
        long_val: &[
            "--config",
            "--manifest-path",
            "--color",
            "--package",
            "--jobs",
            "--target",
        ],
        ..Grammar::EMPTY
    };
    for value in CARGO.parse(argv, 1).values('\0', "--config") {
        match value.text.split_once('=') {
            Some((key, v)) => {
                let key = key.trim();
                let program = PROGRAM_KEYS.contains(&key)
                    || ((key.starts_with("target.") || key.starts_with("host."))
                        && (key.ends_with(".runner") || key.ends_with(".linker")))
                    || key == "host.linker"
                    || key.ends_with("rustflags");
                if program {
                    let v = v.trim().trim_matches(['"', '\'', '[', ']']);
                    out.push(if key.ends_with("rustflags") {
                        Carried::Opaque(format!(
                            "`--config {}` passes compiler flags, which can name a linker or \
                             plugin",
                            clip(&value.text)
                        ))
                    } else {
                        Carried::Shell(part(value, v))
                    });
                }
            }
            None => out.push(Carried::Opaque(format!(
                "`cargo --config {}` reads a configuration file, which can name programs to run",
                clip(&value.text)
            ))),
        }
    }
}

/// `go build/test/run -exec PROG`, `-toolexec PROG`: go runs PROG around every test binary or
/// tool it starts. Go takes `-flag value` and `-flag=value`, with one dash or two.
pub(super) fn go(argv: &[Field], out: &mut Vec<Carried>) {
    const GO: Grammar = Grammar {
        long_val: &["--exec", "--toolexec", "--o", "--tags", "--run", "--C"],
        word_val: &["-exec", "-toolexec", "-o", "-tags", "-run", "-C"],
        ..Grammar::EMPTY
    };
    let parsed = GO.parse(argv, 1);
    for v in parsed
        .values('\0', "exec")
        .chain(parsed.values('\0', "toolexec"))
    {
        out.push(Carried::Shell(v.clone()));
    }
}

/// `make`'s option grammar (GNU make): the options that take a value.
pub(crate) const MAKE: Grammar<'static> = Grammar {
    short_val: "CfIjlWoE",
    long_val: &[
        "--directory",
        "--file",
        "--makefile",
        "--include-dir",
        "--jobs",
        "--load-average",
        "--what-if",
        "--new-file",
        "--assume-new",
        "--old-file",
        "--assume-old",
        "--output-sync",
        "--debug",
        "--jobserver-style",
        "--shuffle",
    ],
    long_val_abbrev: &["--eval"],
    permute: true,
    ..Grammar::EMPTY
};

/// `make SHELL=PROG`: every recipe line runs through PROG (a plain system shell is what make
/// does anyway). `--eval TEXT` / `-E TEXT` is make syntax whose recipes run like the
/// Makefile's: they are walked as shell code.
pub(super) fn make(argv: &[Field], out: &mut Vec<Carried>) {
    let parsed = MAKE.parse(argv, 1);
    for item in &parsed.items {
        match item {
            Item::Operand { at } => {
                let w = &argv[*at];
                if let Some(v) = w.text.strip_prefix("SHELL=") {
                    let value = part(w, v);
                    if !is_plain_shell(&value) {
                        out.push(Carried::Argv(vec![value]));
                    }
                }
            }
            Item::Short {
                letter: 'E',
                value: Some(v),
                ..
            }
            | Item::Long {
                name: "eval",
                value: Some(v),
                ..
            } => out.push(Carried::Shell(part(v, &make_to_shell(&v.text)))),
            _ => {}
        }
    }
}

/// The shell code in make syntax: every recipe line (a line starting with a tab, or the
/// part after `;` on a rule line) and every `$(shell …)`, with make's own references turned
/// into shell variables the analyzer cannot resolve (`$(CC)` → `${CC}`, `$$` → `$`), so
/// that no make function is mistaken for a command substitution. Every recipe is walked,
/// not only the default target's: which targets run depends on the command line and the
/// files present.
pub(crate) fn make_to_shell(text: &str) -> String {
    let mut lines = Vec::new();
    for line in text.lines() {
        if let Some(recipe) = line.strip_prefix('\t') {
            lines.push(
                recipe
                    .trim_start_matches(['@', '-', '+', ' ', '\t'])
                    .to_owned(),
            );
        } else if !line.trim_start().starts_with('#')
            && let Some((head, recipe)) = line.split_once(';')
            && head.contains(':')
        {
            lines.push(
                recipe
                    .trim_start_matches(['@', '-', '+', ' ', '\t'])
                    .to_owned(),
            );
        }
        // `$(shell CMD)` runs when the line is expanded, wherever it is.
        let mut rest = line;
        while let Some(at) = rest.find("$(shell ") {
            let cmd = &rest[at + "$(shell ".len()..];
            let end = cmd.find(')').unwrap_or(cmd.len());
            lines.push(cmd[..end].to_owned());
            rest = &cmd[end..];
        }
    }
    lines
        .iter()
        .map(|l| make_refs(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Make references in a recipe line as shell: `$$` → `$`, `$(NAME)`/`${NAME}` → `${NAME}`,
/// other make functions and automatic variables → an unknown variable.
fn make_refs(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        match chars.peek().map(|(_, n)| *n) {
            Some('$') => {
                chars.next();
                out.push('$');
            }
            Some(open @ ('(' | '{')) => {
                let close = if open == '(' { ')' } else { '}' };
                let body_start = i + 2;
                let mut depth = 0usize;
                let mut end = line.len();
                for (j, ch) in line[body_start..].char_indices() {
                    if ch == open {
                        depth += 1;
                    } else if ch == close {
                        if depth == 0 {
                            end = body_start + j;
                            break;
                        }
                        depth -= 1;
                    }
                }
                let body = &line[body_start..end];
                let plain =
                    !body.is_empty() && body.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if plain {
                    out.push_str(&format!("${{{body}}}"));
                } else if let Some(cmd) = body.strip_prefix("shell ") {
                    out.push_str(&format!("$({cmd})"));
                } else {
                    out.push_str("${__make_expression}");
                }
                while chars.peek().is_some_and(|(j, _)| *j <= end) {
                    chars.next();
                }
            }
            Some(_) => {
                // `$@`, `$<`, `$X`: one character names a make variable.
                chars.next();
                out.push_str("${__make_variable}");
            }
            None => out.push('$'),
        }
    }
    out
}

/// `cmake -E rm [-r] [-f] PATHS`, `remove`, `remove_directory`: cmake's portable file
/// commands, analysed as the `rm` they are.
pub(super) fn cmake(argv: &[Field], out: &mut Vec<Carried>) {
    let Some(e) = argv.iter().position(|w| w.text == "-E") else {
        return;
    };
    let Some(cmd) = argv.get(e + 1) else {
        return;
    };
    let rest = argv.get(e + 2..).unwrap_or(&[]);
    let flags: &[&str] = match cmd.text.as_str() {
        "rm" => &[],
        "remove" => &["-f"],
        "remove_directory" | "rm_rf" => &["-rf"],
        _ => return,
    };
    let mut inner = vec![Field::lit("rm")];
    inner.extend(flags.iter().map(|f| Field::lit(*f)));
    inner.extend(
        rest.iter()
            .filter(|w| cmd.text != "remove" || w.text != "-f")
            .cloned(),
    );
    out.push(Carried::Argv(inner));
}

#[cfg(test)]
mod tests {
    use super::super::tests::texts;
    use super::make_to_shell;

    #[test]
    fn make_text_is_read_as_its_recipes() {
        assert_eq!(
            make_to_shell("all:\n\t@rm -rf $(OUT) $$HOME\n"),
            "rm -rf ${OUT} $HOME"
        );
        assert_eq!(make_to_shell("x: ; rm -rf /"), "rm -rf /");
        assert_eq!(make_to_shell("V := $(shell id)\n"), "id");
        assert_eq!(make_to_shell("CC = gcc\n# a: ; rm x\n"), "");
        assert_eq!(
            make_to_shell("a:\n\techo $@ $(patsubst %.c,%.o,$(SRC))"),
            "echo ${__make_variable} ${__make_expression}"
        );
        assert_eq!(texts("make --eval='x:; rm -rf /' x"), ["rm -rf /"]);
        assert_eq!(texts("make -E 'x:; id' x"), ["id"]);
        assert_eq!(texts("make -j4 test"), Vec::<String>::new());
        assert_eq!(texts("npx -c 'rm -rf ~'"), ["rm -rf ~"]);
        assert_eq!(texts("npm exec --call='make test'"), ["make test"]);
        assert_eq!(texts("npm run build -- -c x"), Vec::<String>::new());
        assert_eq!(texts("npm install -c"), Vec::<String>::new());
        assert_eq!(texts("cmake -E rm -rf out"), ["rm -rf out"]);
        assert_eq!(texts("cmake -E remove_directory /"), ["rm -rf /"]);
        assert_eq!(texts("cmake -E copy a b"), Vec::<String>::new());
    }
}
