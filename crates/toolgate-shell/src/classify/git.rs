//! git rules: history and work-tree destruction, and configuration that runs code.
//! Global options (`-C dir`, `-c k=v`, `--git-dir`, …) are skipped to find the subcommand.

use toolgate_protocol::Risk;

use super::{Rule, View};

/// The git subcommand and its arguments, after global options (read with
/// [`crate::grammars::GIT`]).
pub(crate) fn git_sub<'a>(v: &View<'a>) -> Option<(&'a str, Vec<&'a str>)> {
    let i = crate::grammars::git_subcommand_index(&v.args)?;
    Some((v.args[i], v.args[i + 1..].to_vec()))
}

fn flag(args: &[&str], short: char, long: &[&str]) -> bool {
    args.iter().take_while(|a| **a != "--").any(|a| {
        long.iter()
            .any(|l| a == l || a.strip_prefix(l).is_some_and(|r| r.starts_with('=')))
            || (a.len() > 1 && a.starts_with('-') && !a.starts_with("--") && a[1..].contains(short))
    })
}

fn reset_hard(v: &View<'_>) -> Option<String> {
    let (sub, args) = git_sub(v)?;
    (sub == "reset"
        && args
            .iter()
            .any(|a| matches!(*a, "--hard" | "--merge" | "--keep")))
    .then(|| "discards uncommitted changes (`reset --hard`)".into())
}

/// Branch names that are a repository's default (or release) branch.
const DEFAULT_BRANCHES: &[&str] = &[
    "main",
    "master",
    "trunk",
    "develop",
    "production",
    "release",
];

/// `--force-with-lease` (or `--force-if-includes`) pushing to a default branch, or to a branch
/// the command does not name: a force push all the same where it matters most.
fn lease_to_default(args: &[&str]) -> bool {
    let lease = args
        .iter()
        .any(|a| a.starts_with("--force-with-lease") || *a == "--force-if-includes");
    if !lease {
        return false;
    }
    let refspecs: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .skip(1)
        .copied()
        .collect();
    refspecs.is_empty()
        || refspecs.iter().any(|r| {
            let dst = r.rsplit(':').next().unwrap_or(r);
            let dst = dst
                .trim_start_matches('+')
                .trim_start_matches("refs/heads/");
            DEFAULT_BRANCHES.contains(&dst) || dst == "HEAD"
        })
}

fn push_force(v: &View<'_>) -> Option<String> {
    let (sub, args) = git_sub(v)?;
    if sub != "push" {
        return None;
    }
    if lease_to_default(&args) {
        return Some("force-pushes (with a lease) over a default branch".into());
    }
    let force = args.iter().any(|a| {
        *a == "--force"
            || a.starts_with("--force=")
            || *a == "--mirror"
            || *a == "--prune"
            || *a == "--delete"
            || (a.starts_with('-') && !a.starts_with("--") && (a.contains('f') || a.contains('d')))
    });
    let plus_ref = args.iter().any(|a| a.starts_with('+') && a.len() > 1);
    let delete_ref = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .skip(1)
        .any(|a| a.starts_with(':') && a.len() > 1);
    (force || plus_ref || delete_ref)
        .then(|| "rewrites or deletes remote history (force push / delete)".into())
}

fn clean_force(v: &View<'_>) -> Option<String> {
    let (sub, args) = git_sub(v)?;
    if sub != "clean" {
        return None;
    }
    let dry = flag(&args, 'n', &["--dry-run"]);
    let force = flag(&args, 'f', &["--force"]);
    (force && !dry).then(|| "deletes untracked files (`clean -f`)".into())
}

fn branch_delete(v: &View<'_>) -> Option<String> {
    let (sub, args) = git_sub(v)?;
    match sub {
        "branch" => {
            let force_del = args
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('D'))
                || (flag(&args, 'd', &["--delete"]) && flag(&args, 'f', &["--force"]));
            let force_move = args.iter().any(|a| *a == "-M" || *a == "-C")
                || (args.iter().any(|a| *a == "-f" || *a == "--force")
                    && args.iter().filter(|a| !a.starts_with('-')).count() >= 1);
            (force_del || force_move).then(|| "force-deletes or overwrites a branch".into())
        }
        "tag" => flag(&args, 'd', &["--delete"]).then(|| "deletes a tag".into()),
        _ => None,
    }
}

fn stash_drop(v: &View<'_>) -> Option<String> {
    let (sub, args) = git_sub(v)?;
    (sub == "stash" && args.first().is_some_and(|a| matches!(*a, "drop" | "clear")))
        .then(|| "destroys stashed changes".into())
}

fn checkout_discard(v: &View<'_>) -> Option<String> {
    let (sub, args) = git_sub(v)?;
    match sub {
        "checkout" => {
            let force = flag(&args, 'f', &["--force"]);
            let paths_after_dd = args
                .iter()
                .position(|a| *a == "--")
                .is_some_and(|i| i + 1 < args.len());
            let dot = args.iter().any(|a| *a == "." || *a == ":/");
            let ours_theirs = args.iter().any(|a| {
                matches!(*a, "--ours" | "--theirs") || a.starts_with("--pathspec-from-file")
            });
            let creates = args
                .iter()
                .any(|a| matches!(*a, "-b" | "-B" | "--orphan" | "-c" | "--detach"));
            let positional = args
                .iter()
                .take_while(|a| **a != "--")
                .filter(|a| !a.starts_with('-'))
                .count();
            // `git checkout REF PATH…` overwrites PATH from REF. `--recurse-submodules` takes
            // no separate value (only `=VALUE`), so it does not shift the positionals.
            let ref_and_paths = !creates && positional >= 2;
            (force || paths_after_dd || dot || ours_theirs || ref_and_paths).then(|| {
                "overwrites uncommitted changes in the work tree (`checkout` of paths)".into()
            })
        }
        "restore" => {
            let staged_only = args.iter().any(|a| *a == "--staged" || *a == "-S")
                && !args.iter().any(|a| *a == "--worktree" || *a == "-W");
            (!staged_only && args.iter().any(|a| !a.starts_with('-')))
                .then(|| "discards work-tree changes (`restore`)".into())
        }
        "switch" => (flag(
            &args,
            'f',
            &["--discard-changes", "--force", "--force-create"],
        ) || args.contains(&"-C"))
        .then(|| "discards changes or overwrites a branch (`switch`)".into()),
        _ => None,
    }
}

fn history_rewrite(v: &View<'_>) -> Option<String> {
    let (sub, args) = git_sub(v)?;
    match sub {
        "filter-branch" | "filter-repo" => Some("rewrites the whole history".into()),
        "reflog"
            if args
                .first()
                .is_some_and(|a| matches!(*a, "expire" | "delete")) =>
        {
            Some("expires reflog entries (unrecoverable)".into())
        }
        "gc" if args
            .iter()
            .any(|a| a.starts_with("--prune=now") || *a == "--prune=all") =>
        {
            Some("prunes unreachable objects now".into())
        }
        "update-ref" if args.iter().any(|a| *a == "-d" || *a == "--delete") => {
            Some("deletes a ref".into())
        }
        "worktree" if args.first() == Some(&"remove") && flag(&args, 'f', &["--force"]) => {
            Some("force-removes a worktree with its changes".into())
        }
        "rm" if flag(&args, 'f', &["--force"]) && !args.contains(&"--cached") => {
            Some("force-removes files, discarding their changes".into())
        }
        _ => None,
    }
}

fn config_exec(v: &View<'_>) -> Option<String> {
    const EXEC_KEYS: &[&str] = &[
        "core.pager",
        "core.sshcommand",
        "core.fsmonitor",
        "core.hookspath",
        "core.editor",
        "core.gitproxy",
        "diff.external",
        "uploadpack.packobjectshook",
        "credential.helper",
        "protocol.ext.allow",
        "sequence.editor",
        "gpg.program",
    ];
    for (i, a) in v.args.iter().enumerate() {
        // `-c k=v`, `-ck=v`, and the glued form of the global options (`-c=k=v`).
        let kv = if *a == "-c" {
            v.args.get(i + 1).copied()
        } else {
            a.strip_prefix("-c=")
                .or_else(|| a.strip_prefix("-c"))
                .filter(|r| r.contains('='))
        };
        if let Some(kv) = kv {
            let key = kv.split('=').next().unwrap_or("").to_ascii_lowercase();
            // The pagers agents set to get plain output run nothing else (the value is also
            // walked as a subcommand); any other program stays a finding, because the hook
            // front door relies on findings where Claude Code's own rules do the allowing.
            let value = kv.split_once('=').map_or("", |(_, v)| v.trim());
            if (key == "core.pager" || key.starts_with("pager."))
                && matches!(
                    value,
                    "cat" | "less" | "more" | "less -R" | "less -FR" | "less -FRX"
                )
            {
                continue;
            }
            if EXEC_KEYS.contains(&key.as_str())
                || (key.starts_with("alias.") && kv.contains("=!"))
                || key.starts_with("filter.")
            {
                return Some(format!("sets `{kv}`, which runs a program"));
            }
        }
        if *a == "--exec-path" || a.starts_with("--exec-path=") || *a == "--config-env" {
            return Some(format!("`{a}` changes which programs git runs"));
        }
    }
    let (sub, args) = git_sub(v)?;
    if sub == "config" {
        let key = args
            .iter()
            .find(|a| !a.starts_with('-'))?
            .to_ascii_lowercase();
        let setting = args.iter().filter(|a| !a.starts_with('-')).count() >= 2;
        if setting
            && (EXEC_KEYS.contains(&key.as_str())
                || key.starts_with("alias.")
                || key.starts_with("filter."))
        {
            return Some(format!("sets `{key}`, which runs a program"));
        }
    }
    None
}

/// git rules.
#[rustfmt::skip]
pub(crate) const RULES: &[Rule] = &[
    Rule { id: "git.reset_hard", category: "git_destruction", risk: Risk::High, programs: &["git"], test: reset_hard, matches: &["git reset --hard", "git reset --hard HEAD~3", "git -C repo reset --hard", "git -c x=y reset -q --hard", "git -c alias.nuke='reset --hard' nuke", "\\git reset --hard", "git --git-dir=.git reset --merge", "bash -c 'git reset --hard'", "echo $(git reset --hard)"], not_matches: &["git reset", "git reset --soft HEAD~1", "git commit -m 'git reset --hard'", "echo git reset --hard"]},
    Rule { id: "git.push_force", category: "git_destruction", risk: Risk::High, programs: &["git"], test: push_force, matches: &["git push --force", "git push -f origin main", "git push origin +main", "git push origin :old-branch", "git push --delete origin x", "git push --mirror", "git push --force-with-lease origin main", "git push --force-with-lease", "git push --force-if-includes origin HEAD:master", "git -c alias.p='push --force' p origin", "git --no-pager push -f"], not_matches: &["git push origin main", "git push --force-with-lease origin feature/x", "git push -u origin feature"]},
    Rule { id: "git.clean_force", category: "git_destruction", risk: Risk::High, programs: &["git"], test: clean_force, matches: &["git clean -fd", "git clean -f", "git clean -d -f", "git clean -xdf", "git clean --force"], not_matches: &["git clean -n", "git clean -nd", "git clean -fdn"]},
    Rule { id: "git.branch_delete", category: "git_destruction", risk: Risk::High, programs: &["git"], test: branch_delete, matches: &["git branch -D feature", "git branch -d --force feature", "git branch -f main HEAD~3", "git tag -d v1"], not_matches: &["git branch", "git branch -d merged", "git branch feature", "git tag v1"]},
    Rule { id: "git.stash_drop", category: "git_destruction", risk: Risk::High, programs: &["git"], test: stash_drop, matches: &["git stash drop", "git stash clear"], not_matches: &["git stash", "git stash list", "git stash pop"]},
    Rule { id: "git.checkout_discard", category: "git_destruction", risk: Risk::High, programs: &["git"], test: checkout_discard, matches: &["git checkout -- file.txt", "git checkout .", "git checkout --recurse-submodules main file.txt", "git checkout --no-recurse-submodules main file.txt", "git checkout -f main", "git checkout HEAD -- src", "git restore a.txt", "git restore --worktree x", "git switch --discard-changes main"], not_matches: &["git checkout main", "git checkout --recurse-submodules main", "git checkout --recurse-submodules=on-demand main", "git checkout -b feature", "git restore --staged a.txt", "git switch -c feature"]},
    Rule { id: "git.history_rewrite", category: "git_destruction", risk: Risk::High, programs: &["git"], test: history_rewrite, matches: &["git filter-branch --tree-filter x HEAD", "git reflog expire --expire=now --all", "git gc --prune=now", "git update-ref -d refs/heads/x", "git worktree remove --force ../wt", "git rm -rf src"], not_matches: &["git gc", "git reflog", "git rm --cached -r x", "git worktree list"]},
    Rule { id: "git.config_exec", category: "code_execution", risk: Risk::High, programs: &["git"], test: config_exec, matches: &["git -c core.pager='sh -c id' log", "git -c core.sshCommand='x' fetch", "git --exec-path=/tmp status", "git config core.hooksPath /tmp/h", "git config alias.x '!rm -rf /'"], not_matches: &["git -c user.name=x commit -m y", "git config user.email a@b", "git config --get core.pager", "git -c core.pager=cat log", "git -c core.pager='less -R' log"]},
];
