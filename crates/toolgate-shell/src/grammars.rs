//! Program option grammars shared by every part of the analysis that reads the program's
//! command line (see [`crate::argv`]): one constant per program, so that the rules, the
//! carriers, the normaliser and the effects agree on which option takes a value.

use crate::argv::{Grammar, Word};

/// ssh: the options that take a value; the host ends the options.
pub(crate) const SSH: Grammar<'static> = Grammar {
    short_val: "BbcDEeFIiJLlmOopQRSWw",
    permute: false,
    ..Grammar::EMPTY
};

/// autossh: ssh's options and its own `-M PORT`.
pub(crate) const AUTOSSH: Grammar<'static> = Grammar {
    short_val: "BbcDEeFIiJLlmOopQRSWwM",
    permute: false,
    ..Grammar::EMPTY
};

/// git's global options (before the subcommand) that take a value.
pub(crate) const GIT: Grammar<'static> = Grammar {
    short_val: "Cc",
    long_val: &[
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--config-env",
        "--super-prefix",
        "--list-cmds",
        "--attr-source",
        "--exec-path",
    ],
    permute: false,
    ..Grammar::EMPTY
};

/// The index of git's subcommand in `words` (git's arguments without `git`), after its
/// global options.
pub(crate) fn git_subcommand_index<W: Word>(words: &[W]) -> Option<usize> {
    let rest = GIT.parse(words, 0).rest;
    (rest < words.len()).then_some(rest)
}
