//! Risk classification: every recorded command is matched against the rule tables
//! ([`fs`], [`git`], [`ops`], [`system`]); each rule is data with positive and near-miss
//! examples, walked by one test.

pub(crate) mod db;
pub(crate) mod effects;
mod exposure;
pub(crate) mod fs;
pub(crate) mod git;
pub(crate) mod ops;
pub(crate) mod readonly;
mod reads;
pub(crate) use reads::{git_subcommand, option_values};
pub(crate) mod remote;
mod shared;
pub(crate) mod system;
pub(crate) mod unattended;
mod writes;

use std::path::PathBuf;

use toolgate_protocol::{Finding, Risk};

use crate::expand::clip;
use crate::types::Context;
use crate::walk::Rec;
use effects::Effects;

/// A risk category (the `category` string of a finding).
pub(crate) type Category = &'static str;

/// What a rule looks at.
pub(crate) struct View<'a> {
    /// The command.
    pub rec: &'a Rec,
    /// The analysis context.
    pub ctx: &'a Context,
    /// Argument texts (`argv[1..]`).
    pub args: Vec<&'a str>,
    /// Its file and network effects.
    pub fx: &'a Effects,
    /// All records of the analysis (for pipeline rules).
    pub all: &'a [Rec],
}

impl<'a> View<'a> {
    /// The program basename.
    pub fn program(&self) -> &str {
        &self.rec.program
    }

    /// Whether a short flag letter is set (`-rf` sets `r` and `f`), before any `--`.
    pub fn short(&self, c: char) -> bool {
        self.args.iter().take_while(|a| **a != "--").any(|a| {
            a.len() > 1 && a.starts_with('-') && !a.starts_with("--") && a[1..].contains(c)
        })
    }

    /// Whether a long flag is present (`--force`, or `--force=…`).
    pub fn long(&self, name: &str) -> bool {
        self.args
            .iter()
            .take_while(|a| **a != "--")
            .any(|a| *a == name || a.strip_prefix(name).is_some_and(|r| r.starts_with('=')))
    }

    /// Whether any of the exact arguments is present.
    pub fn any_arg(&self, names: &[&str]) -> bool {
        self.args.iter().any(|a| names.contains(a))
    }

    /// Positional arguments, skipping the values of `value_flags` (read with the one
    /// getopt reader, [`crate::argv::operand_indices`]).
    pub fn positionals(&self, value_flags: &[&str]) -> Vec<&'a str> {
        crate::argv::operand_indices(&self.args, value_flags)
            .into_iter()
            .map(|i| self.args[i])
            .collect()
    }

    /// A value given as `--flag=value`, `--flag value` or `-f value`.
    pub fn value(&self, names: &[&str]) -> Option<&'a str> {
        for (i, a) in self.args.iter().enumerate() {
            for n in names {
                if a == n {
                    return self.args.get(i + 1).copied();
                }
                if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                    return Some(v);
                }
            }
        }
        None
    }

    /// Whether the command only simulates (`--dry-run`, `--what-if`, …).
    pub fn dry_run(&self) -> bool {
        self.args.iter().any(|a| {
            let a = a.to_ascii_lowercase();
            a == "--dry-run"
                || a.starts_with("--dry-run=")
                || a == "--dryrun"
                || a == "-whatif"
                || a == "--what-if"
                || a == "--noop"
                || a == "--simulate"
        })
    }

    /// Text of the command for messages.
    pub fn text(&self) -> String {
        clip(
            &self
                .rec
                .argv
                .iter()
                .map(|f| f.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        )
    }
}

/// A condition over a [`View`]: returns a detail for the message when it holds.
pub(crate) type Test = fn(&View<'_>) -> Option<String>;

/// One risk rule.
pub(crate) struct Rule {
    /// Stable id, named in every finding.
    pub id: &'static str,
    /// Category of the finding.
    pub category: Category,
    /// Risk when it matches.
    pub risk: Risk,
    /// Program basenames it applies to (empty: any).
    pub programs: &'static [&'static str],
    /// The condition.
    pub test: Test,
    /// Commands it must match (analysed with the test context: cwd `/home/u/proj`,
    /// home `/home/u`, one root `/home/u/proj`).
    pub matches: &'static [&'static str],
    /// Look-alikes it must not match.
    pub not_matches: &'static [&'static str],
}

/// Every rule table.
pub(crate) fn all_rules() -> impl Iterator<Item = &'static Rule> {
    fs::RULES
        .iter()
        .chain(git::RULES)
        .chain(ops::RULES)
        .chain(system::RULES)
        .chain(remote::RULES)
        .chain(db::RULES)
        .chain(shared::RULES)
        .chain(exposure::RULES)
}

/// Programs that are data sinks: their arguments are text, never commands or targets.
pub(crate) const DATA_PROGRAMS: &[&str] = &[
    "echo",
    "printf",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "cat",
    "true",
    "false",
    ":",
    "test",
    "[",
    "logger",
    "notify-send",
    "say",
    "cowsay",
    "figlet",
    "banner",
    "man",
    "help",
    "tldr",
    "whatis",
    "apropos",
    "which",
    "type",
    "command",
    "hash",
    "read",
    "jq",
    "yq",
    "sleep",
    "wc",
    "cut",
    "sort",
    "uniq",
    "head",
    "tail",
    "less",
    "more",
];

/// Result of classifying one record.
pub(crate) struct Classified {
    /// Findings with rule ids in their reasons.
    pub findings: Vec<(Finding, &'static str)>,
    /// Baseline risk without findings.
    pub baseline: Risk,
    /// The program only reads, apart from what its redirections write
    /// ([`readonly::program_baseline`]), and no rule found a risk.
    pub program_read_only: bool,
    /// Effects.
    pub fx: Effects,
}

/// Classifies every record.
pub(crate) fn classify(
    recs: &[Rec],
    ctx: &Context,
    downloads_tmp: Option<&PathBuf>,
) -> Vec<Classified> {
    let _ = downloads_tmp;
    let fxs: Vec<Effects> = recs.iter().map(|r| effects::effects(r, ctx)).collect();
    recs.iter()
        .zip(fxs.iter())
        .map(|(rec, fx)| {
            // Global options glued to their values, so that no rule takes a value for the
            // subcommand (`npm --prefix ./pkg publish`); inline git aliases expanded.
            let glued = crate::globals::glued(&rec.program, &rec.argv);
            let args = match &glued {
                Some(words) => words.iter().skip(1).map(String::as_str).collect(),
                None => rec.argv.iter().skip(1).map(|f| f.text.as_str()).collect(),
            };
            let view = View {
                rec,
                ctx,
                args,
                fx,
                all: recs,
            };
            let mut findings = Vec::new();
            // `X sub --help`, `terraform destroy -help`: prints help, runs nothing.
            let help = help_only(&view.args);
            for rule in all_rules().filter(|_| !help) {
                if !rule.programs.is_empty() && !rule.programs.contains(&rec.program.as_str()) {
                    continue;
                }
                if let Some(detail) = (rule.test)(&view) {
                    let what = view.text();
                    let what = if what.is_empty() {
                        "(redirection)".to_owned()
                    } else {
                        what
                    };
                    findings.push((
                        Finding {
                            risk: rule.risk,
                            category: rule.category.to_owned(),
                            reason: format!("`{what}` (rule {}): {detail}", rule.id),
                        },
                        rule.id,
                    ));
                }
            }
            if findings.iter().all(|(f, _)| f.risk < Risk::Catastrophic)
                && let Some(f) = computed_program_floor(rec, ctx, recs)
            {
                findings.push(f);
            }
            if let Some(f) = unattended::unattended(&view, &findings) {
                findings.push((f, "destroy.unattended"));
            }
            let baseline = readonly::baseline(&view);
            let program_read_only = findings.iter().all(|(f, _)| f.risk == Risk::ReadOnly)
                && readonly::program_baseline(&view) == Risk::ReadOnly;
            Classified {
                findings,
                baseline,
                program_read_only,
                fx: fx.clone(),
            }
        })
        .collect()
}

/// Whether the command only asks for help: `--help` or `-help` right after the program's
/// subcommand words (`kubectl delete -help`), never after an option that could take it as
/// its value (`find / -delete -name --help` deletes).
fn help_only(args: &[&str]) -> bool {
    args.iter()
        .position(|a| matches!(*a, "--help" | "-help"))
        .is_some_and(|i| args[..i].iter().all(|a| !a.starts_with('-')))
}

/// Programs a computed program name (`$x -rf /`, `${0/*/rm} -rf ~`) is tried as: where
/// their catastrophic rules would fire on these arguments, the command is treated as if it
/// were that program.
const STAND_INS: [&str; 7] = ["rm", "mv", "chmod", "chown", "dd", "shred", "mkfs"];

/// A command whose program name the analysis cannot know runs whatever the name turns out
/// to be at run time. When its arguments would make any of [`STAND_INS`] catastrophic, so
/// is the command: otherwise hiding `rm` behind `read`, `printf -v` or a pattern
/// substitution would slip past the floor that `rm -rf /` meets.
fn computed_program_floor(
    rec: &Rec,
    ctx: &Context,
    recs: &[Rec],
) -> Option<(Finding, &'static str)> {
    let first = rec.argv.first().filter(|f| f.dynamic)?;
    STAND_INS.into_iter().find_map(|prog| {
        let mut stand_in = rec.clone();
        stand_in.argv[0] = crate::words::Field::lit(prog);
        stand_in.program = prog.to_owned();
        let fx = effects::effects(&stand_in, ctx);
        let view = View {
            rec: &stand_in,
            ctx,
            args: stand_in
                .argv
                .iter()
                .skip(1)
                .map(|f| f.text.as_str())
                .collect(),
            fx: &fx,
            all: recs,
        };
        all_rules()
            .filter(|r| r.risk == Risk::Catastrophic || r.id == "fs.delete_workspace")
            .filter(|r| r.programs.is_empty() || r.programs.contains(&prog))
            .find_map(|rule| {
                let detail = (rule.test)(&view)?;
                let reason = format!(
                    "`{}` (rule {}, with the computed program `{}` as `{prog}`): the program \
                     name is only known at run time, and as `{prog}` this {detail}",
                    clip(
                        &rec.argv
                            .iter()
                            .map(|f| f.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                    rule.id,
                    clip(&first.text),
                );
                Some((
                    Finding {
                        risk: Risk::Catastrophic,
                        category: rule.category.to_owned(),
                        reason,
                    },
                    rule.id,
                ))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Context, analyze};

    fn test_ctx() -> Context {
        Context::new("/home/u/proj").with_home("/home/u")
    }

    fn fired(cmd: &str, id: &str) -> bool {
        let a = analyze(cmd, &test_ctx());
        a.findings
            .iter()
            .any(|f| f.reason.contains(&format!("(rule {id})")))
    }

    #[test]
    fn rules_walk_their_examples() {
        let mut failures = Vec::new();
        let mut ids = std::collections::HashSet::new();
        for rule in all_rules() {
            assert!(ids.insert(rule.id), "duplicate rule id {}", rule.id);
            assert!(!rule.matches.is_empty(), "rule {} has no examples", rule.id);
            for m in rule.matches {
                if !fired(m, rule.id) {
                    failures.push(format!("{} should match: {m}", rule.id));
                }
            }
            for m in rule.not_matches {
                if fired(m, rule.id) {
                    failures.push(format!("{} should not match: {m}", rule.id));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
