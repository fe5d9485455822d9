//! Build tools and package managers: `npm --script-shell`, node options that load code,
//! `cargo --config` program keys, `go -exec`/`-toolexec`, `make SHELL=`.

use crate::argv::{part, split_long};
use crate::expand::clip;
use crate::words::Field;

use super::*;

/// `npm`/`pnpm`/`yarn`: `--script-shell PROG` runs every script through PROG; node options
/// that load code (`--require`, `--import`, `--loader`) and other configuration files
/// (which can set either) are opaque. The script itself is the rule's business.
pub(super) fn package_manager(argv: &[Field], out: &mut Vec<Carried>) {
    let mut i = 1;
    while i < argv.len() {
        if argv[i].text == "--" {
            break;
        }
        if let Some((name, value)) = long_value(
            argv,
            &mut i,
            &[
                "--script-shell",
                "--config.script-shell",
                "--node-options",
                "--config.node-options",
                "--userconfig",
                "--globalconfig",
            ],
        ) {
            match name.as_str() {
                "--script-shell" | "--config.script-shell" => {
                    if !is_plain_shell(&value) {
                        out.push(Carried::Argv(vec![value]));
                    }
                }
                "--node-options" | "--config.node-options" => {
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
                _ => out.push(Carried::Opaque(format!(
                    "`{name}` reads another configuration file, which can set the script shell"
                ))),
            }
        }
        i += 1;
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
    let mut i = 1;
    while i < argv.len() {
        if argv[i].text == "--" {
            break;
        }
        if let Some((_, value)) = long_value(argv, &mut i, &["--config"]) {
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
                                "`--config {}` passes compiler flags, which can name a linker \
                                 or plugin",
                                clip(&value.text)
                            ))
                        } else {
                            Carried::Shell(part(&value, v))
                        });
                    }
                }
                None => out.push(Carried::Opaque(format!(
                    "`cargo --config {}` reads a configuration file, which can name programs \
                     to run",
                    clip(&value.text)
                ))),
            }
        }
        i += 1;
    }
}

/// `go build/test/run -exec PROG`, `-toolexec PROG`: go runs PROG around every test binary or
/// tool it starts. Go takes `-flag value` and `-flag=value`, with one dash or two.
pub(super) fn go(argv: &[Field], out: &mut Vec<Carried>) {
    let mut i = 1;
    while i < argv.len() {
        let w = &argv[i];
        if w.text == "--" {
            break;
        }
        let bare = w.text.trim_start_matches('-');
        if w.text.starts_with('-') {
            let (name, inline) = split_long(bare);
            if matches!(name, "exec" | "toolexec") {
                let value = match inline {
                    Some(v) => Some(part(w, v)),
                    None => {
                        i += 1;
                        argv.get(i).cloned()
                    }
                };
                if let Some(v) = value {
                    out.push(Carried::Shell(v));
                }
            }
        }
        i += 1;
    }
}

/// `make SHELL=PROG`: every recipe line runs through PROG (a plain system shell is what make
/// does anyway). `--eval` text is make syntax with recipes, like the Makefile itself.
pub(super) fn make(argv: &[Field], out: &mut Vec<Carried>) {
    for w in argv.iter().skip(1).take_while(|w| w.text != "--") {
        if let Some(v) = w.text.strip_prefix("SHELL=") {
            let value = part(w, v);
            if !is_plain_shell(&value) {
                out.push(Carried::Argv(vec![value]));
            }
        }
    }
}
