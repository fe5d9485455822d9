//! git: `-c` values that name a program, `git config KEY VALUE` for those keys, and the
//! subcommands' command options (`rebase --exec`, `fetch --upload-pack`, `bisect run`, …).

use crate::argv::part;
use crate::words::Field;

use super::*;

/// git: `-c` values that name a program, and the subcommands' command options.
pub(super) fn git(argv: &[Field], out: &mut Vec<Carried>) {
    let words = &argv[1..];
    let sub = crate::classify::git_subcommand(words);
    let global = match sub {
        Some((_, rest)) => &words[..words.len() - rest.len() - 1],
        None => words,
    };
    // `-c KEY=VALUE` / `-cKEY=VALUE` among the global options.
    for (i, w) in global.iter().enumerate() {
        let a = w.text.as_str();
        if a == "-c" {
            if let Some(v) = global.get(i + 1) {
                git_config_value(&v.text, v, out);
            }
        } else if let Some(kv) = a.strip_prefix("-c").filter(|kv| !kv.is_empty())
            && i.checked_sub(1).is_none_or(|p| global[p].text != "-c")
        {
            git_config_value(kv, w, out);
        }
    }
    let Some((sub, args)) = sub else { return };
    // The values of the subcommand's options that name a program (`-x CMD`, `--exec=CMD`,
    // an abbreviation, a bundle `-ix CMD`).
    let opt_values = |short_val: &str, longs: &[&str], out: &mut Vec<Carried>| {
        let grammar = Grammar {
            short_val,
            long_val_abbrev: longs,
            ..Grammar::EMPTY
        };
        for item in grammar.parse(args, 0).items {
            match item {
                Item::Short { value: Some(v), .. } => out.push(Carried::Shell(v)),
                Item::Long {
                    name,
                    value: Some(v),
                    ..
                } if longs.iter().any(|l| l.trim_start_matches('-') == name) => {
                    out.push(Carried::Shell(v));
                }
                _ => {}
            }
        }
    };
    if matches!(sub, "clone" | "init") {
        for (j, w) in args.iter().enumerate() {
            let a = w.text.as_str();
            if a.starts_with("--template") || a.starts_with("--separate-git-dir") {
                out.push(Carried::Opaque(format!(
                    "`git {sub} {a}` takes hooks or a repository from another directory"
                )));
            }
            // `git clone -c KEY=VALUE` writes the new repository's configuration.
            let kv = match a {
                "-c" | "--config" => args.get(j + 1),
                _ => None,
            };
            if let Some(kv) = kv {
                git_config_value(&kv.text, kv, out);
            } else if let Some(kv) = a.strip_prefix("--config=") {
                git_config_value(kv, w, out);
            }
        }
    }
    match sub {
        "fetch" | "pull" | "ls-remote" => opt_values("", &["--upload-pack"], out),
        "clone" => opt_values("u", &["--upload-pack"], out),
        "push" | "send-pack" => opt_values("", &["--receive-pack", "--exec"], out),
        "archive" => opt_values("", &["--exec"], out),
        "rebase" => opt_values("x", &["--exec"], out),
        "difftool" => opt_values("x", &["--extcmd"], out),
        "filter-branch" => opt_values(
            "",
            &[
                "--env-filter",
                "--tree-filter",
                "--index-filter",
                "--parent-filter",
                "--msg-filter",
                "--commit-filter",
                "--tag-name-filter",
            ],
            out,
        ),
        "send-email" => opt_values(
            "",
            &["--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd"],
            out,
        ),
        "instaweb" => opt_values("db", &["--httpd", "--browser"], out),
        // `git config KEY VALUE`, `git config set KEY VALUE`: the value is persisted and run
        // by a later git command; it is judged now.
        "config" => {
            let words: Vec<&Field> = args
                .iter()
                .filter(|w| !w.text.starts_with('-'))
                .skip_while(|w| w.text == "set")
                .collect();
            let reading = args.iter().any(|w| {
                w.text.starts_with("--get") || matches!(w.text.as_str(), "-l" | "--list" | "get")
            });
            if let [key, value, ..] = words.as_slice()
                && !reading
            {
                let src = Field {
                    dynamic: key.dynamic || value.dynamic,
                    ..(*value).clone()
                };
                git_config_value(&format!("{}={}", key.text, value.text), &src, out);
            }
        }
        "grep" => {
            for w in args {
                let a = w.text.as_str();
                if let Some(p) = a
                    .strip_prefix("--open-files-in-pager=")
                    .or_else(|| a.strip_prefix("-O").filter(|p| !p.is_empty()))
                {
                    out.push(Carried::Shell(part(w, p)));
                }
            }
        }
        "submodule" => {
            if let Some(k) = args.iter().position(|w| w.text == "foreach") {
                let at = args[k + 1..]
                    .iter()
                    .position(|w| !w.text.starts_with('-'))
                    .map(|p| k + 1 + p);
                if let Some(at) = at {
                    out.push(Carried::Shell(joined(&args[at..])));
                }
            }
        }
        "bisect" if args.first().is_some_and(|w| w.text == "run") && args.len() > 1 => {
            out.push(Carried::Argv(args[1..].to_vec()));
        }
        _ => {}
    }
}

/// A `git -c KEY=VALUE` whose value is a command git runs.
pub(super) fn git_config_value(kv: &str, src: &Field, out: &mut Vec<Carried>) {
    let Some((key, value)) = kv.split_once('=').filter(|(k, _)| !not_static(k)) else {
        if src.dynamic {
            out.push(Carried::Opaque(format!(
                "`git -c {kv}` is not static (it may set a program such as core.pager)"
            )));
        }
        return;
    };
    let key = key.to_ascii_lowercase();
    if key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path")) {
        out.push(Carried::Opaque(format!(
            "`git -c {kv}` includes a configuration file, which can name programs to run"
        )));
        return;
    }
    let Some(cmd) = git_config_command(&key, value) else {
        return;
    };
    out.push(if key == "core.sshcommand" {
        Carried::Transport(part(src, cmd))
    } else {
        Carried::Shell(part(src, cmd))
    });
}

/// The command a git configuration value runs, for a lower-case `key` whose value names a
/// program (`core.pager`, `alias.*` starting with `!`, `filter.*.smudge`, …).
pub(super) fn git_config_command<'v>(key: &str, value: &'v str) -> Option<&'v str> {
    let is_bool = matches!(
        value.to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "0" | "1"
    );
    let command = match key {
        "core.pager"
        | "core.editor"
        | "core.sshcommand"
        | "core.askpass"
        | "core.gitproxy"
        | "sequence.editor"
        | "diff.external"
        | "gpg.program"
        | "uploadpack.packobjectshook"
        | "web.browser" => Some(value),
        "core.fsmonitor" if !is_bool => Some(value),
        "credential.helper" => value.strip_prefix('!'),
        k if k.starts_with("alias.") => value.strip_prefix('!'),
        k if k.starts_with("pager.") && !is_bool => Some(value),
        k if (k.starts_with("filter.")
            && (k.ends_with(".clean") || k.ends_with(".smudge") || k.ends_with(".process")))
            || (k.starts_with("diff.")
                && (k.ends_with(".textconv") || k.ends_with(".command")))
            || (k.starts_with("merge.") && k.ends_with(".driver"))
            || (k.starts_with("gpg.") && k.ends_with(".program"))
            || (k.starts_with("remote.")
                && (k.ends_with(".uploadpack") || k.ends_with(".receivepack"))) =>
        {
            Some(value)
        }
        _ => None,
    };
    command.filter(|c| !c.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::super::tests::texts;

    #[test]
    fn git_options_carry_commands() {
        assert_eq!(texts("git -c core.pager='rm -rf /' log"), ["rm -rf /"]);
        assert_eq!(texts("git -c core.pager=cat log"), ["cat"]);
        assert_eq!(texts("git -c include.path=./x.cfg log"), ["?"]);
        assert_eq!(texts("git clone -c core.fsmonitor=id u d"), ["id"]);
        assert_eq!(texts("git clone --config=core.pager=id u d"), ["id"]);
        assert_eq!(texts("git clone --template=./t u d"), ["?"]);
        assert_eq!(texts("git init --template ./t"), ["?"]);
        assert_eq!(texts("git config core.pager id"), ["id"]);
        assert_eq!(texts("git config set core.pager id"), ["id"]);
        assert_eq!(texts("git config --global alias.x '!id'"), ["id"]);
        assert_eq!(texts("git config --get core.pager"), Vec::<String>::new());
        assert_eq!(texts("git config user.name 'A B'"), Vec::<String>::new());
        assert_eq!(texts("git -c alias.x='!id' x"), ["id"]);
        assert_eq!(texts("git -c alias.st=status st"), Vec::<String>::new());
        assert_eq!(
            texts("git -c core.fsmonitor=true status"),
            Vec::<String>::new()
        );
        assert_eq!(texts("git -c pager.log=false log"), Vec::<String>::new());
        assert_eq!(texts("git -c filter.x.smudge=id checkout ."), ["id"]);
        assert_eq!(
            texts("git -c user.name=x commit -m y"),
            Vec::<String>::new()
        );
        assert_eq!(texts("git fetch --upload-pack='id' origin"), ["id"]);
        assert_eq!(texts("git ls-remote --upload-pack=id x"), ["id"]);
        assert_eq!(texts("git clone -u id x y"), ["id"]);
        assert_eq!(texts("git fetch -u origin"), Vec::<String>::new());
        assert_eq!(texts("git push --receive-pack=id origin"), ["id"]);
        assert_eq!(texts("git rebase --exec 'make test' HEAD~1"), ["make test"]);
        assert_eq!(texts("git rebase -x id HEAD~1"), ["id"]);
        assert_eq!(texts("git rebase -xid HEAD~1"), ["id"]);
        assert_eq!(texts("git rebase --exe=id HEAD~1"), ["id"]);
        assert_eq!(texts("git difftool -x 'diff -u' HEAD"), ["diff -u"]);
        assert_eq!(
            texts("git submodule foreach --recursive 'git pull'"),
            ["git pull"]
        );
        assert_eq!(texts("git bisect run make test"), ["make test"]);
        assert_eq!(texts("git bisect start"), Vec::<String>::new());
        assert_eq!(
            texts("git filter-branch --tree-filter 'rm x' HEAD"),
            ["rm x"]
        );
        assert_eq!(texts("git grep -Ovim foo"), ["vim"]);
        assert_eq!(texts("git -C repo log --exec x"), Vec::<String>::new());
        assert_eq!(
            texts("git commit -m 'rebase --exec id'"),
            Vec::<String>::new()
        );
    }
}
