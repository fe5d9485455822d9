//! Environment idioms: commands that set up the shell for a tool and are trusted to do only
//! that — `source venv/bin/activate`, `eval "$(pyenv init - bash)"`, `eval "$(direnv export
//! bash)"`, `eval $(minikube -p dev docker-env)`, `source <(helm completion bash)`. Their
//! code defines variables and functions; running it does not make the call opaque, so the
//! everyday `source .venv/bin/activate && pytest -q` needs no prompt.
//!
//! Anything else sourced is walked when the caller lets the analyzer read the workspace's
//! files ([`crate::Context::with_sources`]), and otherwise makes the shell's variables
//! untrusted from then on.

use crate::walk::Rec;
use crate::words::Field;

/// A tool whose output is shell code setting up its environment.
pub(crate) struct EnvInit {
    /// Program basename.
    pub program: &'static str,
    /// The first operand that prints the code (empty: any invocation, such as `ssh-agent -s`).
    pub subcommands: &'static [&'static str],
    /// Commands that print environment code.
    pub matches: &'static [&'static str],
    /// Commands that do not.
    pub not_matches: &'static [&'static str],
}

/// Tools that print their own environment setup.
#[rustfmt::skip]
pub(crate) const ENV_INIT: &[EnvInit] = &[
    EnvInit { program: "pyenv", subcommands: &["init", "virtualenv-init", "sh-activate", "sh-shell"], matches: &["pyenv init - bash", "pyenv virtualenv-init -"], not_matches: &["pyenv install 3.12"]},
    EnvInit { program: "rbenv", subcommands: &["init"], matches: &["rbenv init - bash"], not_matches: &["rbenv install 3.3"]},
    EnvInit { program: "nodenv", subcommands: &["init"], matches: &["nodenv init -"], not_matches: &["nodenv install 20"]},
    EnvInit { program: "goenv", subcommands: &["init"], matches: &["goenv init -"], not_matches: &[]},
    EnvInit { program: "jenv", subcommands: &["init"], matches: &["jenv init -"], not_matches: &[]},
    EnvInit { program: "direnv", subcommands: &["export", "hook"], matches: &["direnv export bash", "direnv hook bash"], not_matches: &["direnv allow"]},
    EnvInit { program: "minikube", subcommands: &["docker-env", "podman-env"], matches: &["minikube -p dev docker-env"], not_matches: &["minikube delete"]},
    EnvInit { program: "docker-machine", subcommands: &["env"], matches: &["docker-machine env dev"], not_matches: &["docker-machine rm dev"]},
    EnvInit { program: "ssh-agent", subcommands: &[], matches: &["ssh-agent -s"], not_matches: &[]},
    EnvInit { program: "brew", subcommands: &["shellenv"], matches: &["brew shellenv"], not_matches: &["brew install x"]},
    EnvInit { program: "conda", subcommands: &["shell.bash", "shell.zsh", "shell.posix"], matches: &["conda shell.bash hook"], not_matches: &["conda install x"]},
    EnvInit { program: "mise", subcommands: &["activate", "env", "hook-env"], matches: &["mise activate bash"], not_matches: &["mise install"]},
    EnvInit { program: "fnm", subcommands: &["env"], matches: &["fnm env --use-on-cd"], not_matches: &["fnm install 20"]},
    EnvInit { program: "zoxide", subcommands: &["init"], matches: &["zoxide init bash"], not_matches: &[]},
    EnvInit { program: "starship", subcommands: &["init"], matches: &["starship init bash"], not_matches: &[]},
    EnvInit { program: "opam", subcommands: &["env", "config"], matches: &["opam env"], not_matches: &["opam install x"]},
    EnvInit { program: "luarocks", subcommands: &["path"], matches: &["luarocks path --bin"], not_matches: &["luarocks install x"]},
    EnvInit { program: "dircolors", subcommands: &[], matches: &["dircolors -b"], not_matches: &[]},
    EnvInit { program: "rustup", subcommands: &["completions"], matches: &["rustup completions bash"], not_matches: &["rustup update"]},
    EnvInit { program: "helm", subcommands: &["completion"], matches: &["helm completion bash"], not_matches: &["helm install x"]},
    EnvInit { program: "kubectl", subcommands: &["completion"], matches: &["kubectl completion bash"], not_matches: &["kubectl delete pod x"]},
    EnvInit { program: "gh", subcommands: &["completion"], matches: &["gh completion -s bash"], not_matches: &[]},
    EnvInit { program: "npm", subcommands: &["completion"], matches: &["npm completion"], not_matches: &[]},
    EnvInit { program: "pip", subcommands: &["completion"], matches: &["pip completion --bash"], not_matches: &[]},
    EnvInit { program: "docker", subcommands: &["completion"], matches: &["docker completion bash"], not_matches: &[]},
    EnvInit { program: "poetry", subcommands: &["completions"], matches: &["poetry completions bash"], not_matches: &[]},
    EnvInit { program: "terraform", subcommands: &["-install-autocomplete"], matches: &[], not_matches: &[]},
];

/// Scripts that set up an environment when sourced, by where they live: a virtualenv's
/// `bin/activate`, rustup's `~/.cargo/env`, nvm, sdkman, conda's profile script.
#[rustfmt::skip]
pub(crate) const ENV_SCRIPTS: &[(&str, &[&str], &[&str])] = &[
    ("bin/activate", &["source venv/bin/activate", ". .venv/bin/activate", "source ~/envs/x/bin/activate"], &["source bin/activate.sh"]),
    (".cargo/env", &[". \"$HOME/.cargo/env\""], &[]),
    ("nvm.sh", &["source ~/.nvm/nvm.sh"], &[]),
    ("sdkman-init.sh", &["source ~/.sdkman/bin/sdkman-init.sh"], &[]),
    ("profile.d/conda.sh", &[". /opt/conda/etc/profile.d/conda.sh"], &[]),
    ("asdf.sh", &[". ~/.asdf/asdf.sh"], &[]),
    ("emsdk_env.sh", &["source ./emsdk_env.sh"], &[]),
];

/// Shell builtins that change only the shell's own state (variables, functions, the
/// command hash) or test something: inside an environment set-up script they are the set-up
/// itself. What they set is what matters, and it is accounted for: later commands are
/// marked `after_env` (see [`Rec::after_env`]).
const STATE_BUILTINS: &[&str] = &[
    "export",
    "unset",
    "hash",
    "declare",
    "typeset",
    "readonly",
    "local",
    "alias",
    "unalias",
    "set",
    "source",
    ".",
    "[",
    "test",
    "true",
    "false",
    ":",
    "return",
    "deactivate",
];

/// Shell builtins that bash runs itself whatever `PATH` says: an environment set-up that
/// changed `PATH` cannot put another program in their place.
const PATH_FREE_BUILTINS: &[&str] = &[
    "cd", "echo", "printf", "pwd", "test", "[", "true", "false", ":", "type", "hash",
];

/// Set-up tools that do more than print: `ssh-agent -s` starts a daemon that outlives the
/// command, so it keeps its own risk (and needs a rule) though its output is trusted.
const SETUP_STARTS_PROCESS: &[&str] = &["ssh-agent"];

/// Whether `rec` is part of an environment set-up and does nothing else: a shell-state
/// builtin inside a sourced set-up script (or the `source` itself), or the set-up tool of
/// `eval "$(pyenv init -)"`, with no redirect that writes anywhere but `/dev/null`.
pub(crate) fn setup_only(rec: &Rec) -> bool {
    let prog = rec.program.as_str();
    let args = rec.argv.get(1..).unwrap_or(&[]);
    rec.env_setup
        && (STATE_BUILTINS.contains(&prog)
            || (env_init(prog, args) && !SETUP_STARTS_PROCESS.contains(&prog)))
        && rec
            .redirects
            .iter()
            .all(|r| !r.write || r.target.text == "/dev/null")
}

/// Whether `rec` is an `eval` of nothing (the empty code an environment set-up tool stands
/// for): it runs nothing.
pub(crate) fn empty_eval(rec: &Rec) -> bool {
    rec.program == "eval"
        && rec.redirects.is_empty()
        && rec
            .argv
            .iter()
            .skip(1)
            .all(|a| !a.dynamic && a.text.trim().is_empty())
}

/// Whether `rec` runs a program found through a `PATH` that an earlier environment set-up
/// may have changed (a virtualenv's `bin/`, pyenv's shims): it is then not the system's
/// read-only program of that name, whatever the table says.
pub(crate) fn path_changed(rec: &Rec) -> bool {
    rec.after_env && !PATH_FREE_BUILTINS.contains(&rec.program.as_str())
}

/// Whether `prog ARGS` prints environment setup code.
pub(crate) fn env_init(prog: &str, args: &[Field]) -> bool {
    ENV_INIT.iter().any(|e| {
        e.program == prog
            && (e.subcommands.is_empty()
                // Anywhere: `minikube -p dev docker-env` has it after an option's value.
                || args.iter().any(|a| e.subcommands.contains(&a.text.as_str())))
    })
}

/// Whether sourcing `word` runs a known environment setup script.
pub(crate) fn env_script(word: &str) -> bool {
    ENV_SCRIPTS
        .iter()
        .any(|(suffix, _, _)| word == *suffix || word.ends_with(&format!("/{suffix}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Context, analyze};

    #[test]
    fn idioms_walk_their_examples() {
        let ctx = Context::new("/home/u/proj").with_home("/home/u");
        for e in ENV_INIT {
            for m in e.matches {
                let cmd = format!("eval \"$({m})\"; ls");
                let a = analyze(&cmd, &ctx);
                assert!(a.opaque.is_empty(), "{cmd}: {:?}", a.opaque);
            }
            for m in e.not_matches {
                let cmd = format!("eval \"$({m})\"");
                assert!(!analyze(&cmd, &ctx).opaque.is_empty(), "{cmd}");
            }
        }
        // Not a function or a file of the tool's name made earlier in the command.
        for cmd in [
            "pyenv() { echo 'rm -rf ~'; }; eval \"$(pyenv init -)\"",
            "printf 'echo rm -rf ~' > pyenv; chmod +x pyenv; eval \"$(./pyenv init -)\"",
        ] {
            let a = analyze(cmd, &ctx);
            assert!(
                !a.opaque.is_empty() || a.risk >= toolgate_protocol::Risk::High,
                "{cmd}"
            );
        }
        // A setup script written in the same command is what runs.
        let a = analyze(
            "echo 'rm -rf ~' > venv/bin/activate; source venv/bin/activate",
            &ctx,
        );
        assert_eq!(a.risk, toolgate_protocol::Risk::Catastrophic);
        for (_, ok, not) in ENV_SCRIPTS {
            for m in *ok {
                let cmd = format!("{m} && pytest -q");
                let a = analyze(&cmd, &ctx);
                assert!(a.opaque.is_empty(), "{cmd}: {:?}", a.opaque);
            }
            for m in *not {
                let cmd = format!("{m}; $X");
                assert!(!analyze(&cmd, &ctx).opaque.is_empty(), "{cmd}");
            }
        }
    }
}
