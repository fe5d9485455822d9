//! Global options: the options before a subcommand that only choose where or how a program
//! runs (`git -C dir`, `git -c k=v`, `git --no-pager`, `docker --context x`, `kubectl -n
//! ns`, `terraform -chdir=d`, `npm --prefix d`, `cargo --manifest-path f`), and git aliases
//! defined on the command line (`git -c alias.p='push --force' p`).
//!
//! They must not hide the subcommand, neither from the rules nor from permission rules:
//! `git -C . push origin main` is `git push origin main` to a `Bash(git push *)` deny rule.
//! [`normalized`] is that form (for [`crate::SimpleCommand::normalized`]); [`glued`] keeps
//! each global option as one word (`-C=.`, `--context=prod`) so that a rule looking for the
//! subcommand never takes an option's value for it, while a rule about the options (`git
//! -c core.pager=…`, `docker -H tcp://…`) still sees them.

use crate::argv::{Grammar, Item};
use crate::words::Field;

/// One program's global options.
pub(crate) struct Globals {
    /// Program basenames.
    pub programs: &'static [&'static str],
    /// The options' grammar (the valued ones; every other option is a flag).
    pub grammar: Grammar<'static>,
    /// `(command, normalised form)` pairs.
    pub examples: &'static [(&'static str, &'static str)],
}

/// Programs with global options before their subcommand.
#[rustfmt::skip]
pub(crate) const GLOBALS: &[Globals] = &[
    Globals { programs: &["git"], grammar: crate::grammars::GIT, examples: &[("git -C . push origin main", "git push origin main"), ("git --no-pager -c x=y push -f", "git push -f"), ("git --git-dir=.git --work-tree=. reset --hard", "git reset --hard"), ("git -c alias.p='push --force' p origin", "git push --force origin"), ("git status", "")]},
    Globals { programs: &["docker", "podman", "nerdctl"], grammar: Grammar { short_val: "cHl", long_val: &["--context", "--host", "--config", "--log-level", "--tlscacert", "--tlscert", "--tlskey", "--connection", "--url", "--identity", "--root", "--runroot", "--namespace", "--address"], permute: false, ..Grammar::EMPTY }, examples: &[("docker --context prod rm -f db", "docker rm -f db"), ("docker -H tcp://h:2376 volume rm data", "docker volume rm data")]},
    Globals { programs: &["kubectl", "k", "oc", "kubecolor"], grammar: Grammar { short_val: "ns", long_val: &["--context", "--namespace", "--kubeconfig", "--cluster", "--user", "--server", "--token", "--as", "--as-group", "--as-uid", "--certificate-authority", "--client-certificate", "--client-key", "--request-timeout", "--tls-server-name", "--cache-dir", "-v"], permute: false, ..Grammar::EMPTY }, examples: &[("kubectl --context prod -n kube-system delete pod x", "kubectl delete pod x"), ("kubectl -n=prod get pods", "kubectl get pods")]},
    Globals { programs: &["helm"], grammar: Grammar { short_val: "n", long_val: &["--kube-context", "--namespace", "--kubeconfig", "--kube-apiserver", "--kube-token", "--kube-as-user", "--registry-config", "--repository-config", "--repository-cache"], permute: false, ..Grammar::EMPTY }, examples: &[("helm --kube-context prod uninstall api", "helm uninstall api")]},
    Globals { programs: &["terraform", "tofu", "terragrunt"], grammar: Grammar { permute: false, ..Grammar::EMPTY }, examples: &[("terraform -chdir=infra destroy", "terraform destroy")]},
    Globals { programs: &["npm", "pnpm", "yarn"], grammar: Grammar { short_val: "wCF", long_val: &["--prefix", "--workspace", "--registry", "--userconfig", "--globalconfig", "--cache", "--loglevel", "--dir", "--filter", "--cwd"], permute: false, ..Grammar::EMPTY }, examples: &[("npm --prefix ./pkg publish", "npm publish"), ("pnpm -C pkg publish", "pnpm publish")]},
    Globals { programs: &["cargo"], grammar: Grammar { short_val: "CZ", long_val: &["--manifest-path", "--config", "--color", "--target-dir"], permute: false, ..Grammar::EMPTY }, examples: &[("cargo --manifest-path crates/x/Cargo.toml publish", "cargo publish"), ("cargo +nightly -Z unstable-options publish", "cargo publish")]},
    Globals { programs: &["go", "make", "gmake"], grammar: Grammar { short_val: "C", long_val: &["--directory"], permute: false, ..Grammar::EMPTY }, examples: &[("go -C sub test ./...", "go test ./...")]},
    Globals { programs: &["gh", "glab"], grammar: Grammar { short_val: "R", long_val: &["--repo", "--hostname"], permute: false, ..Grammar::EMPTY }, examples: &[("gh -R org/app repo delete --yes", "gh repo delete --yes")]},
];

/// The parts of a command line: the global options (each as the argv indices it spans) and
/// where the subcommand starts. `None` when the program has no global options or none are
/// given.
fn split(spec: &Globals, argv: &[Field]) -> Option<(Vec<(usize, usize)>, usize)> {
    // `cargo +toolchain …`.
    let from = if argv.get(1).is_some_and(|w| w.text.starts_with('+')) {
        2
    } else {
        1
    };
    let parsed = spec.grammar.parse(argv, from);
    let sub = parsed.rest;
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for item in &parsed.items {
        let (at, valued) = match item {
            Item::Short { at, value, .. } | Item::Long { at, value, .. } => (*at, value.is_some()),
            Item::Operand { .. } => continue,
        };
        // A value in the next word extends the span.
        let end = if valued && argv.get(at).is_some_and(|w| !w.text.contains('=')) && at + 1 < sub {
            // A bundle `-Cdir` holds its value; a lone `-C` takes the next word.
            if argv[at].text.len() == 2 || argv[at].text.starts_with("--") {
                at + 1
            } else {
                at
            }
        } else {
            at
        };
        match spans.last_mut() {
            Some(last) if last.0 == at => last.1 = last.1.max(end),
            _ => spans.push((at, end)),
        }
    }
    (from == 2 || !spans.is_empty()).then_some((spans, sub))
}

/// The words of an inline alias for `sub` (`-c alias.p='push --force'`): what git runs.
/// Shell aliases (`!cmd`) are carried commands, not a subcommand.
fn git_alias(argv: &[Field], spans: &[(usize, usize)], sub: &str) -> Option<Vec<Field>> {
    let key = format!("alias.{sub}=");
    spans.iter().rev().find_map(|&(a, b)| {
        let kv = if argv[a].text == "-c" {
            argv.get(b)?.text.as_str()
        } else {
            argv[a].text.strip_prefix("-c")?
        };
        let value = kv
            .get(..key.len())
            .filter(|k| k.eq_ignore_ascii_case(&key))
            .map(|_| &kv[key.len()..])?;
        (!value.starts_with('!')).then(|| {
            value
                .split_whitespace()
                .map(|w| crate::argv::part(&argv[a], w))
                .collect()
        })
    })
}

/// The subcommand and its arguments with an inline git alias expanded.
fn tail(spec: &Globals, argv: &[Field], spans: &[(usize, usize)], sub: usize) -> Vec<Field> {
    let rest = argv.get(sub..).unwrap_or(&[]);
    if spec.programs.contains(&"git")
        && let Some(first) = rest.first()
        && let Some(expanded) = git_alias(argv, spans, &first.text)
    {
        return expanded
            .into_iter()
            .chain(rest[1..].iter().cloned())
            .collect();
    }
    rest.to_vec()
}

/// The index of the subcommand of `argv` (after the program's global options), for a program
/// with global options.
pub(crate) fn subcommand_index(program: &str, argv: &[Field]) -> Option<usize> {
    let spec = spec(crate::exec::basename(program).as_str())?;
    let from = if argv.get(1).is_some_and(|w| w.text.starts_with('+')) {
        2
    } else {
        1
    };
    let rest = spec.grammar.parse(argv, from).rest;
    (rest < argv.len()).then_some(rest)
}

/// The spec for `program`, if it has global options.
fn spec(program: &str) -> Option<&'static Globals> {
    GLOBALS.iter().find(|g| g.programs.contains(&program))
}

/// `argv` without its global options, with an inline alias expanded; `None` when that is
/// `argv` itself.
pub(crate) fn normalized(program: &str, argv: &[Field]) -> Option<Vec<Field>> {
    let spec = spec(program)?;
    let (spans, sub) = split(spec, argv)?;
    let mut out = vec![argv[0].clone()];
    out.extend(tail(spec, argv, &spans, sub));
    Some(out)
}

/// `argv` with each global option and its value glued into one word (`-C=.`,
/// `--context=prod`), and an inline alias expanded: the form the risk rules read.
pub(crate) fn glued(program: &str, argv: &[Field]) -> Option<Vec<String>> {
    let spec = spec(program)?;
    let (spans, sub) = split(spec, argv)?;
    let mut out = vec![argv[0].text.clone()];
    if sub > 1 && argv[1].text.starts_with('+') {
        out.push(argv[1].text.clone());
    }
    for &(a, b) in &spans {
        if a == b {
            out.push(argv[a].text.clone());
        } else {
            out.push(format!("{}={}", argv[a].text, argv[b].text));
        }
    }
    out.extend(tail(spec, argv, &spans, sub).into_iter().map(|f| f.text));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globals_walk_their_examples() {
        for g in GLOBALS {
            for (cmd, want) in g.examples {
                let argv = crate::carriers::tests::fields(cmd);
                let got = normalized(&argv[0].text, &argv)
                    .map(|v| {
                        v.iter()
                            .map(|f| f.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default();
                assert_eq!(&got, want, "{cmd}");
            }
        }
        let argv = crate::carriers::tests::fields("git -C . -c core.pager=cat log");
        assert_eq!(
            glued("git", &argv),
            Some(vec![
                "git".into(),
                "-C=.".into(),
                "-c=core.pager=cat".into(),
                "log".into()
            ])
        );
        let argv = crate::carriers::tests::fields("kubectl -nprod delete pod x");
        assert_eq!(
            glued("kubectl", &argv),
            Some(vec![
                "kubectl".into(),
                "-nprod".into(),
                "delete".into(),
                "pod".into(),
                "x".into()
            ])
        );
    }
}
