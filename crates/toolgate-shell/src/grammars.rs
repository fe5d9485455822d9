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

/// xargs (GNU and BSD): `-I R`, `-a FILE`, `-n N`, …; `-i[R]`, `-e[EOF]`, `-l[N]` take an
/// attached value only; the command ends the options.
pub(crate) const XARGS: Grammar<'static> = Grammar {
    short_val: "adEILnPsJR",
    short_opt: "eil",
    long_val: &[
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
    ],
    permute: false,
    ..Grammar::EMPTY
};

/// GNU parallel: the options that take a value; the command (or `:::`) ends the options.
pub(crate) const PARALLEL: Grammar<'static> = Grammar {
    short_val: "adEIjLlNnSX",
    long_val: &[
        "--arg-file",
        "--basefile",
        "--colsep",
        "--delay",
        "--delimiter",
        "--env",
        "--halt",
        "--jobs",
        "--joblog",
        "--load",
        "--max-args",
        "--max-lines",
        "--max-replace-args",
        "--memfree",
        "--results",
        "--retries",
        "--return",
        "--sshlogin",
        "--sshloginfile",
        "--tagstring",
        "--timeout",
        "--tmpdir",
        "--transferfile",
        "--workdir",
    ],
    permute: false,
    ..Grammar::EMPTY
};

/// curl: the options that take a value (`-d DATA`, `-dDATA`, `--data=DATA`, in a bundle
/// `-sT FILE`); options may follow the URL.
pub(crate) const CURL: Grammar<'static> = Grammar {
    short_val: "AbcCdDEeFHKmoPQrtTuUwxXyYz",
    long_val: &[
        "--abstract-unix-socket",
        "--aws-sigv4",
        "--cacert",
        "--capath",
        "--cert",
        "--connect-timeout",
        "--connect-to",
        "--continue-at",
        "--cookie",
        "--cookie-jar",
        "--data",
        "--data-ascii",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "--dump-header",
        "--form",
        "--form-string",
        "--header",
        "--interface",
        "--json",
        "--key",
        "--limit-rate",
        "--max-time",
        "--netrc-file",
        "--oauth2-bearer",
        "--output",
        "--output-dir",
        "--proxy",
        "--proxy-user",
        "--range",
        "--referer",
        "--request",
        "--resolve",
        "--retry",
        "--retry-delay",
        "--retry-max-time",
        "--stderr",
        "--trace",
        "--trace-ascii",
        "--unix-socket",
        "--upload-file",
        "--url",
        "--user",
        "--user-agent",
        "--variable",
        "--write-out",
    ],
    long_val_abbrev: &["--config"],
    ..Grammar::EMPTY
};

/// wget: the options that take a value; `-e`/`--execute` runs a wgetrc command.
pub(crate) const WGET: Grammar<'static> = Grammar {
    short_val: "aABDeiIlOoPQRtTUwX",
    long_val: &[
        "--output-file",
        "--append-output",
        "--input-file",
        "--base",
        "--config",
        "--tries",
        "--output-document",
        "--timeout",
        "--wait",
        "--quota",
        "--directory-prefix",
        "--user-agent",
        "--level",
        "--accept",
        "--reject",
        "--domains",
        "--include-directories",
        "--exclude-directories",
        "--header",
        "--post-data",
        "--post-file",
        "--body-file",
        "--user",
        "--password",
        "--load-cookies",
        "--save-cookies",
        "--certificate",
        "--private-key",
        "--ca-certificate",
        "--method",
    ],
    long_val_abbrev: &["--execute"],
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

/// How an interpreter takes its program: its option grammar, and which options carry code,
/// name a module, or name the script file (letters and long names, without dashes).
pub(crate) struct InterpArgs {
    /// The options.
    pub grammar: Grammar<'static>,
    /// Options whose value is code (`python -c`, `perl -e`, `php -R`, `gawk --source`).
    pub code: &'static [&'static str],
    /// Options whose value is a module to run (`python -m`): no script to read.
    pub module: &'static [&'static str],
    /// Options whose value is the script file (`php -f`, `awk -f`).
    pub file: &'static [&'static str],
}

/// An [`InterpArgs`] in one line.
const fn args(
    grammar: Grammar<'static>,
    code: &'static [&'static str],
    module: &'static [&'static str],
    file: &'static [&'static str],
) -> InterpArgs {
    InterpArgs {
        grammar,
        code,
        module,
        file,
    }
}

/// Interpreters stop reading options at the script (or the program text).
const G: Grammar<'static> = Grammar {
    permute: false,
    ..Grammar::EMPTY
};
const PYTHON: InterpArgs = args(
    Grammar {
        short_val: "cmWX",
        ..G
    },
    &["c"],
    &["m"],
    &[],
);
// `-lane`: `-l` and `-0` take only attached digits; `-i.bak`, `-MFile::Find` attached.
const PERL: InterpArgs = args(
    Grammar {
        short_val: "eEI",
        short_opt: "MmxCdDFi",
        short_num: "l0",
        ..G
    },
    &["e", "E"],
    &[],
    &[],
);
const RUBY: InterpArgs = args(
    Grammar {
        short_val: "eIrCE",
        short_opt: "FKxiWT",
        short_num: "0",
        long_val: &["--encoding", "--external-encoding", "--internal-encoding"],
        ..G
    },
    &["e"],
    &[],
    &[],
);
const NODE: InterpArgs = args(
    Grammar {
        short_val: "eprC",
        long_val: &[
            "--eval",
            "--print",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "--conditions",
            "--input-type",
            "--env-file",
            "--title",
            "--redirect-warnings",
            "--diagnostic-dir",
            "--report-dir",
            "--report-filename",
            "--icu-data-dir",
            "--openssl-config",
        ],
        ..G
    },
    &["e", "p", "eval", "print"],
    &[],
    &[],
);
// `-r CODE`, and `-B`/`-R`/`-E` run code before, for and after each input line.
const PHP: InterpArgs = args(
    Grammar {
        short_val: "rfdczBRFEtS",
        ..G
    },
    &["r", "B", "R", "E"],
    &[],
    &["f", "F"],
);
const LUA: InterpArgs = args(
    Grammar {
        short_val: "el",
        ..G
    },
    &["e"],
    &[],
    &[],
);
const R: InterpArgs = args(
    Grammar {
        short_val: "e",
        ..G
    },
    &["e"],
    &[],
    &[],
);
const OSASCRIPT: InterpArgs = args(
    Grammar {
        short_val: "els",
        ..G
    },
    &["e"],
    &[],
    &[],
);
// gawk: `-e`/`--source` program text, `-f`/`-E`/`-i` program files.
const AWK: InterpArgs = args(
    Grammar {
        short_val: "vFfeilEW",
        short_opt: "dLop",
        long_val: &[
            "--file",
            "--assign",
            "--field-separator",
            "--source",
            "--include",
            "--load",
            "--exec",
        ],
        ..G
    },
    &["e", "source"],
    &[],
    &["f", "file", "E", "exec", "i", "include"],
);
const TCL: InterpArgs = args(
    Grammar {
        word_val: &["-encoding"],
        ..G
    },
    &[],
    &[],
    &[],
);
const NONE: InterpArgs = args(G, &[], &[], &[]);

/// Each interpreter's command line (PowerShell's case-insensitive parameters are read in
/// `interp.rs`).
pub(crate) fn interp_args(lang: crate::interp::Interp) -> &'static InterpArgs {
    use crate::interp::Interp;
    match lang {
        Interp::Python => &PYTHON,
        Interp::Perl => &PERL,
        Interp::Ruby => &RUBY,
        Interp::Node => &NODE,
        Interp::Php => &PHP,
        Interp::Lua => &LUA,
        Interp::R => &R,
        Interp::Osascript => &OSASCRIPT,
        Interp::Awk => &AWK,
        Interp::Tcl => &TCL,
        Interp::PowerShell => &NONE,
    }
}
