//! Terminal multiplexers, emulators and session tools whose arguments are a command: `tmux`,
//! `screen`, `xterm -e`, `watchexec`, `capsh --`, `sg GROUP CMD`.

use crate::words::Field;

use super::*;

/// `tmux [-c CMD] COMMAND [ARGS…] [SHELL-COMMAND]`.
pub(super) fn tmux(argv: &[Field], out: &mut Vec<Carried>) {
    #[rustfmt::skip]
    const WITH_SHELL: &[&str] = &[
        "new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane",
        "respawnp", "respawn-window", "respawnw", "run-shell", "run", "display-popup", "popup",
        "pipe-pane", "pipep", "if-shell", "if",
    ];
    #[rustfmt::skip]
    const KEYS: &[&str] = &["send-keys", "send", "paste-buffer", "pasteb", "source-file", "source"];
    const OUTER: Grammar = Grammar {
        short_val: "LSfTc",
        permute: false,
        ..Grammar::EMPTY
    };
    let outer = OUTER.parse(argv, 1);
    // `tmux -c CMD` runs CMD through the default shell, like `sh -c`.
    if let Some(cmd) = outer.value('c', "") {
        out.push(Carried::Shell(cmd.clone()));
        return;
    }
    let i = outer.rest;
    let Some(sub) = argv.get(i) else { return };
    if KEYS.contains(&sub.text.as_str()) {
        out.push(Carried::Opaque(format!(
            "`tmux {}` types into or runs commands in another pane",
            sub.text
        )));
        return;
    }
    if !WITH_SHELL.contains(&sub.text.as_str()) {
        return;
    }
    // Options of these commands that take a value; everything after them is the command.
    let short_val = if matches!(
        sub.text.as_str(),
        "run-shell" | "run" | "display-popup" | "popup"
    ) {
        "bcdehsStTwxy"
    } else {
        "ceFflnstxy"
    };
    let inner = Grammar {
        short_val,
        permute: false,
        ..Grammar::EMPTY
    };
    let j = inner.parse(argv, i + 1).rest;
    if j < argv.len() {
        out.push(Carried::Shell(joined(&argv[j..])));
    }
}

/// `screen [OPTIONS] CMD ARGS…`; `-X`/`-Q` send commands to a running session.
pub(super) fn screen(argv: &[Field], out: &mut Vec<Carried>) {
    // `-dmS NAME`: a bundle whose last letter takes the value.
    const SCREEN: Grammar = Grammar {
        short_val: "cehpsStT",
        word_val: &["-Logfile"],
        word_flags: &["-ls", "-list", "-wipe", "-version"],
        permute: false,
        ..Grammar::EMPTY
    };
    let parsed = SCREEN.parse(argv, 1);
    for item in &parsed.items {
        match item {
            Item::Short {
                letter: l @ ('X' | 'Q'),
                ..
            } => {
                out.push(Carried::Opaque(format!(
                    "`screen -{l}` sends commands to a running session"
                )));
                return;
            }
            // Listing, reattaching, wiping: no command of its own.
            Item::Short {
                letter: 'r' | 'R' | 'x' | 'v',
                ..
            }
            | Item::Long {
                name: "ls" | "list" | "wipe" | "version",
                ..
            } => return,
            _ => {}
        }
    }
    if parsed.rest < argv.len() {
        out.push(Carried::Argv(argv[parsed.rest..].to_vec()));
    }
}

/// Terminal emulators: `-e CMD ARGS…` (`-e STRING` for gnome-terminal and xfce4-terminal),
/// `-x ARGS…`, `-- ARGS…`, or the trailing arguments (`kitty CMD`).
pub(super) fn terminal(prog: &str, argv: &[Field], out: &mut Vec<Carried>) {
    let string_e = matches!(prog, "gnome-terminal" | "xfce4-terminal" | "terminator");
    for (i, w) in argv.iter().enumerate().skip(1) {
        let a = w.text.as_str();
        if (a == "-e" || a == "--command") && string_e {
            if let Some(v) = argv.get(i + 1) {
                out.push(Carried::Shell(v.clone()));
            }
            continue;
        }
        if a == "-e" || a == "--command" || a == "-x" || a == "--execute" || a == "--" {
            if i + 1 < argv.len() {
                out.push(Carried::Argv(argv[i + 1..].to_vec()));
            }
            return;
        }
    }
    if prog == "kitty" {
        #[rustfmt::skip]
        const VALUED: &[&str] = &[
            "-c", "--config", "-o", "--override", "--class", "--name", "--title", "-T",
            "--session", "-d", "--directory", "--listen-on", "--start-as", "--instance-group",
            "--watcher", "--app-id",
        ];
        let i = first_operand(argv, 1, VALUED);
        if i < argv.len() {
            out.push(Carried::Argv(argv[i..].to_vec()));
        }
    }
}

/// `watchexec [OPTIONS] [--] COMMAND…`: the command goes through a shell by default.
pub(super) fn watchexec(argv: &[Field], out: &mut Vec<Carried>) {
    #[rustfmt::skip]
    const VALUED: &[&str] = &[
        "-e", "--exts", "-w", "--watch", "-W", "--watch-non-recursive", "-i", "--ignore",
        "-d", "--debounce", "-s", "--signal", "--stop-signal", "--stop-timeout", "-E", "--env",
        "-f", "--filter", "--filter-file", "--ignore-file", "--project-origin", "--workdir",
        "--on-busy-update", "--delay-run", "--poll", "--emit-events-to", "--shell", "-o",
        "--timeout", "--wrap-process",
    ];
    let i = first_operand(argv, 1, VALUED);
    if i < argv.len() {
        out.push(Carried::Shell(joined(&argv[i..])));
    }
}

/// `capsh … -- ARGS`: the arguments go to `/bin/bash`.
pub(super) fn capsh(argv: &[Field], out: &mut Vec<Carried>) {
    if let Some(dd) = argv.iter().position(|w| w.text == "--") {
        let mut inner = vec![Field::lit("bash")];
        inner.extend(argv[dd + 1..].iter().cloned());
        out.push(Carried::Argv(inner));
    }
    if argv.iter().any(|w| w.text.starts_with("--shell=")) {
        out.push(Carried::Opaque(
            "`capsh --shell=…` picks the shell that runs the arguments".into(),
        ));
    }
}

/// `sg GROUP CMD` (the command without `-c`).
pub(super) fn sg(argv: &[Field], out: &mut Vec<Carried>) {
    let ops: Vec<&Field> = argv
        .iter()
        .skip(1)
        .filter(|w| !w.text.starts_with('-'))
        .collect();
    if !argv.iter().any(|w| w.text == "-c")
        && let Some(cmd) = ops.get(1)
    {
        out.push(Carried::Shell((*cmd).clone()));
    }
}
