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
    let i = first_operand(argv, 1, &["-L", "-S", "-f", "-T", "-c"]);
    // `tmux -c CMD` runs CMD through the default shell, like `sh -c`.
    if let Some(c) = argv[1..i.min(argv.len())]
        .iter()
        .position(|w| w.text == "-c")
    {
        if let Some(v) = argv.get(c + 2) {
            out.push(Carried::Shell(v.clone()));
        }
        return;
    }
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
    let valued = if matches!(
        sub.text.as_str(),
        "run-shell" | "run" | "display-popup" | "popup"
    ) {
        "bcdehsStTwxy"
    } else {
        "ceFflnstxy"
    };
    let mut j = i + 1;
    while j < argv.len() {
        let a = argv[j].text.as_str();
        if a == "--" {
            j += 1;
            break;
        }
        if a.len() > 1 && a.starts_with('-') {
            let last = a.chars().last().unwrap_or(' ');
            j += if a.len() == 2 && valued.contains(last) {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if j < argv.len() {
        out.push(Carried::Shell(joined(&argv[j..])));
    }
}

/// `screen [OPTIONS] CMD ARGS…`; `-X`/`-Q` send commands to a running session.
pub(super) fn screen(argv: &[Field], out: &mut Vec<Carried>) {
    const VALUED: &[&str] = &["-S", "-c", "-e", "-h", "-p", "-s", "-T", "-t", "-Logfile"];
    const NO_COMMAND: &[&str] = &["-ls", "-list", "-r", "-R", "-x", "-wipe", "-v", "-version"];
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].text.as_str();
        if a == "-X" || a == "-Q" {
            out.push(Carried::Opaque(format!(
                "`screen {a}` sends commands to a running session"
            )));
            return;
        }
        if NO_COMMAND.contains(&a) {
            return;
        }
        // `-dmS NAME`: a bundle whose last letter takes the value.
        let last = a.chars().last().unwrap_or(' ');
        if VALUED.contains(&a) || (a.len() > 2 && a.starts_with('-') && "cehpsStT".contains(last)) {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    if i < argv.len() {
        out.push(Carried::Argv(argv[i..].to_vec()));
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
