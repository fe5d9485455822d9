//! One getopt-style reader for every program's command line.
//!
//! Deciding what a command does starts with telling its options, their values and its
//! operands apart, in every spelling the program accepts: `-o FILE`, `-oFILE`, a bundle
//! `-xvo FILE` whose last valued letter takes the rest or the next word, `--output FILE`,
//! `--output=FILE`, an abbreviation getopt_long accepts (`--compress-prog`), single-dash long
//! options (`find -name X`, `go -exec X`, `sqlite3 -cmd X`), `--` ending the options, and
//! options after operands (GNU) or not (POSIX, `sudo cmd -x`, `ssh host cmd -o`). Each
//! program's knowledge is a [`Grammar`] (data); this module is the only code that reads an
//! argv with it, so a spelling trick works against every rule or against none.
//!
//! The reader never guesses a value: an option it does not know is a flag, so an unknown
//! valued option can only make the next word look like an operand (which the rules then
//! judge), never hide an option behind a skipped word.

use crate::words::Field;

/// How one program spells its options.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Grammar<'g> {
    /// Short option letters that take a value (`o` for `-o FILE` / `-oFILE` / `-xo FILE`).
    pub short_val: &'g str,
    /// Short option letters whose value is optional and only ever attached (`man -Hfirefox`;
    /// `man -H` alone takes none).
    pub short_opt: &'g str,
    /// Short option letters whose optional value is the digits attached to them (perl's
    /// `-l[OCTAL]` and `-0[OCTAL]`): `-lane` is `-l -a -n -e`.
    pub short_num: &'g str,
    /// Long options that take a value: `--name VALUE` and `--name=VALUE`. Written with their
    /// dashes; matched exactly.
    pub long_val: &'g [&'g str],
    /// Long options that take a value and are also recognised by an unambiguous abbreviation
    /// of at least [`MIN_ABBREV`] letters, as getopt_long accepts (`--compress-prog` for
    /// `--compress-program`): the options that run code or write, whose every spelling must
    /// be seen.
    pub long_val_abbrev: &'g [&'g str],
    /// Options written with one dash and a long name that take a value (`-name` for
    /// `find -name X`, `go -exec X`, `sqlite3 -cmd X`); also `-name=VALUE`.
    pub word_val: &'g [&'g str],
    /// Single-dash long names that are flags (`-delete`, `-batch`): never read as a bundle
    /// of letters.
    pub word_flags: &'g [&'g str],
    /// Options may follow operands (GNU getopt permutes the argv). `false`: the first operand
    /// ends the options (POSIX, and every program whose operands are a command).
    pub permute: bool,
}

/// Shortest abbreviation of a long option that getopt_long-style matching accepts here.
/// getopt_long accepts any unambiguous prefix; three letters keeps `--to` (tar:
/// `--to-command`, `--totals`, `--touch`) from being read as one of them by a list that does
/// not know the others.
pub(crate) const MIN_ABBREV: usize = 3;

/// One item of a parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// A short option letter (one per letter of a bundle), with its value when it takes one.
    Short {
        /// The letter.
        letter: char,
        /// Its value (the rest of the bundle, or the next word).
        value: Option<Field>,
        /// Index of the word the option is in.
        at: usize,
    },
    /// A long option (`--name`, or a single-dash long name), named in full when an
    /// abbreviation was recognised, with its value when it takes one.
    Long {
        /// The name without dashes.
        name: &'a str,
        /// Its value (`=VALUE` or the next word).
        value: Option<Field>,
        /// Index of the word the option is in.
        at: usize,
        /// Written with one dash (`-name`).
        single_dash: bool,
    },
    /// An operand.
    Operand {
        /// Its index in the argv.
        at: usize,
    },
}

/// A command line read with a [`Grammar`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed<'a> {
    /// The items in order.
    pub items: Vec<Item<'a>>,
    /// Index of the first word after the options (the first operand without `permute`, or
    /// the word after `--`); `argv.len()` when there is none.
    pub rest: usize,
}

/// Whether `word` (without dashes) names the long option `full` exactly or by an
/// abbreviation of at least [`MIN_ABBREV`] letters.
pub(crate) fn long_is(word: &str, full: &str) -> bool {
    let full = full.trim_start_matches('-');
    word == full || (word.len() >= MIN_ABBREV && full.starts_with(word))
}

/// Splits `name=value` into the name and the inline value.
pub(crate) fn split_long(long: &str) -> (&str, Option<&str>) {
    match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    }
}

/// A piece of a word as a field of its own ([`part`] for any [`Word`]).
fn part_w<W: Word>(of: &W, text: &str) -> Field {
    let mut f = of.field();
    f.text = text.to_owned();
    f.glob = false;
    f.procsub = None;
    f
}

/// A piece of a word as a field of its own, keeping what is known about the word.
pub(crate) fn part(of: &Field, text: &str) -> Field {
    Field {
        text: text.to_owned(),
        dynamic: of.dynamic,
        glob: false,
        procsub: None,
        net: of.net,
        secret: of.secret,
    }
}

impl Grammar<'static> {
    /// A grammar with no valued options (every option a flag) that permutes: the base for
    /// `..Grammar::EMPTY` in constant tables.
    pub(crate) const EMPTY: Grammar<'static> = Grammar {
        short_val: "",
        short_opt: "",
        short_num: "",
        long_val: &[],
        long_val_abbrev: &[],
        word_val: &[],
        word_flags: &[],
        permute: true,
    };
}

/// A word of a command line: an expanded [`Field`] or plain text.
pub(crate) trait Word {
    /// The word's text.
    fn text(&self) -> &str;
    /// The word as a field (a value taken from it keeps what is known about it).
    fn field(&self) -> Field;
}

impl Word for Field {
    fn text(&self) -> &str {
        &self.text
    }
    fn field(&self) -> Field {
        self.clone()
    }
}

impl Word for &str {
    fn text(&self) -> &str {
        self
    }
    fn field(&self) -> Field {
        Field::lit(*self)
    }
}

/// Indices (into `words`) of the operands when the options in `valued` take a value:
/// `-n` (also inside a bundle, `-vn 5`, `-n5`), `--lines` (also `--lines=5`), or a
/// single-dash long name (`-chdir`). Options after operands count (GNU); `--` ends them.
pub(crate) fn operand_indices<W: Word>(words: &[W], valued: &[&str]) -> Vec<usize> {
    with_valued(valued, true, |g| g.parse(words, 0).operands().collect())
}

/// Index of the first operand from `from` on when the options in `valued` (spelled as for
/// [`operand_indices`]) take a value and the first operand ends the options: where the
/// command of `watchexec -e rs cargo test` or `kitty -T t vim` starts.
pub(crate) fn command_start<W: Word>(words: &[W], from: usize, valued: &[&str]) -> usize {
    with_valued(valued, false, |g| g.parse(words, from).rest)
}

/// The values of `options` (spelled as for [`operand_indices`]) in every spelling: `-f FILE`,
/// `-fFILE`, inside a bundle (`grep -rif FILE`), `--file=FILE`, `--file FILE`, `-execute X`.
pub(crate) fn values_of<W: Word>(words: &[W], options: &[&str]) -> Vec<Field> {
    with_valued(options, true, |g| {
        g.parse(words, 0)
            .items
            .into_iter()
            .filter_map(|item| match item {
                Item::Short { value, .. } => value,
                Item::Long { name, value, .. }
                    if options.iter().any(|o| o.trim_start_matches('-') == name) =>
                {
                    value
                }
                _ => None,
            })
            .collect()
    })
}

/// Runs `f` with the grammar whose valued options are `valued` (`-n`, `--lines`, `-chdir`).
fn with_valued<R>(valued: &[&str], permute: bool, f: impl FnOnce(&Grammar<'_>) -> R) -> R {
    let short: String = valued
        .iter()
        .filter_map(|v| v.strip_prefix('-'))
        .filter(|v| v.len() == 1)
        .collect();
    let long: Vec<&str> = valued
        .iter()
        .copied()
        .filter(|v| v.starts_with("--"))
        .collect();
    let single: Vec<&str> = valued
        .iter()
        .copied()
        .filter(|v| !v.starts_with("--") && v.len() > 2)
        .collect();
    f(&Grammar {
        short_val: &short,
        long_val: &long,
        word_val: &single,
        permute,
        ..Grammar::EMPTY
    })
}

/// A long option's name without its dashes.
fn bare(name: &str) -> &str {
    name.trim_start_matches('-')
}

impl<'g> Grammar<'g> {
    /// The full name (without dashes) of a valued long option `name` (exact, or an
    /// abbreviation of one of [`Grammar::long_val_abbrev`]).
    fn valued_long(&self, name: &str) -> Option<&'g str> {
        if let Some(n) = self
            .long_val
            .iter()
            .chain(self.long_val_abbrev)
            .find(|n| bare(n) == name)
        {
            return Some(bare(n));
        }
        if name.len() < MIN_ABBREV {
            return None;
        }
        let mut hits = self
            .long_val_abbrev
            .iter()
            .filter(|n| bare(n).starts_with(name));
        match (hits.next(), hits.next()) {
            (Some(n), None) => Some(bare(n)),
            _ => None,
        }
    }

    /// Reads `argv[from..]`.
    pub(crate) fn parse<'a, W: Word>(&self, argv: &'a [W], from: usize) -> Parsed<'a>
    where
        'g: 'a,
    {
        let mut items = Vec::new();
        let mut i = from.min(argv.len());
        let mut rest = None;
        while i < argv.len() {
            let w = &argv[i];
            let a = w.text();
            if a == "--" {
                rest = Some(i + 1);
                items.extend((i + 1..argv.len()).map(|at| Item::Operand { at }));
                break;
            }
            if a.len() < 2 || !a.starts_with('-') {
                if !self.permute {
                    rest = Some(i);
                    items.extend((i..argv.len()).map(|at| Item::Operand { at }));
                    break;
                }
                items.push(Item::Operand { at: i });
                i += 1;
                continue;
            }
            if let Some(long) = a.strip_prefix("--") {
                let at = i;
                let (given, inline) = split_long(long);
                let (name, valued): (&'a str, bool) = match self.valued_long(given) {
                    Some(full) => (full, true),
                    None => (given, false),
                };
                let value = if valued {
                    match inline {
                        Some(v) => Some(part_w(w, v)),
                        None => {
                            i += 1;
                            argv.get(i).map(Word::field)
                        }
                    }
                } else {
                    inline.map(|v| part_w(w, v))
                };
                items.push(Item::Long {
                    name,
                    value,
                    at,
                    single_dash: false,
                });
                i += 1;
                continue;
            }
            let body = &a[1..];
            let (word_name, word_inline) = split_long(body);
            if let Some(full) = self.word_val.iter().find(|n| bare(n) == word_name) {
                let at = i;
                let value = match word_inline {
                    Some(v) => Some(part_w(w, v)),
                    None => {
                        i += 1;
                        argv.get(i).map(Word::field)
                    }
                };
                items.push(Item::Long {
                    name: bare(full),
                    value,
                    at,
                    single_dash: true,
                });
                i += 1;
                continue;
            }
            if let Some(full) = self.word_flags.iter().find(|n| bare(n) == body) {
                items.push(Item::Long {
                    name: bare(full),
                    value: None,
                    at: i,
                    single_dash: true,
                });
                i += 1;
                continue;
            }
            let at = i;
            let mut skip_to = 0;
            for (pos, c) in body.char_indices() {
                if pos < skip_to {
                    continue;
                }
                if self.short_num.contains(c) {
                    let tail = &body[pos + c.len_utf8()..];
                    let n = tail.bytes().take_while(u8::is_ascii_digit).count();
                    items.push(Item::Short {
                        letter: c,
                        value: (n > 0).then(|| part_w(w, &tail[..n])),
                        at,
                    });
                    skip_to = pos + c.len_utf8() + n;
                    continue;
                }
                if self.short_opt.contains(c) {
                    let tail = &body[pos + c.len_utf8()..];
                    items.push(Item::Short {
                        letter: c,
                        value: (!tail.is_empty()).then(|| part_w(w, tail)),
                        at,
                    });
                    break;
                }
                if self.short_val.contains(c) {
                    let tail = &body[pos + c.len_utf8()..];
                    let value = if tail.is_empty() {
                        i += 1;
                        argv.get(i).map(Word::field)
                    } else {
                        Some(part_w(w, tail))
                    };
                    items.push(Item::Short {
                        letter: c,
                        value,
                        at,
                    });
                    break;
                }
                items.push(Item::Short {
                    letter: c,
                    value: None,
                    at,
                });
            }
            i += 1;
        }
        Parsed {
            items,
            rest: rest.unwrap_or(argv.len()),
        }
    }
}

impl<'a> Parsed<'a> {
    /// Indices of the operands, in order.
    pub(crate) fn operands(&self) -> impl Iterator<Item = usize> + '_ {
        self.items.iter().filter_map(|it| match it {
            Item::Operand { at } => Some(*at),
            _ => None,
        })
    }

    /// The values of the short letter `c` or the long option `long` (`'\0'` / `""` for none).
    pub(crate) fn values<'s>(
        &'s self,
        c: char,
        long: &'s str,
    ) -> impl Iterator<Item = &'s Field> + 's {
        self.items.iter().filter_map(move |it| match it {
            Item::Short {
                letter,
                value: Some(v),
                ..
            } if *letter == c => Some(v),
            Item::Long {
                name,
                value: Some(v),
                ..
            } if !long.is_empty() && long_is(name, long) => Some(v),
            _ => None,
        })
    }

    /// The first value of the short letter `c` or the long option `long`.
    pub(crate) fn value<'s>(&'s self, c: char, long: &'s str) -> Option<&'s Field> {
        self.values(c, long).next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(s: &str) -> Vec<Field> {
        s.split_whitespace().map(Field::lit).collect()
    }

    const G: Grammar<'static> = Grammar {
        short_val: "oI",
        short_opt: "H",
        short_num: "l",
        long_val: &["--exclude"],
        long_val_abbrev: &["--compress-program", "--output"],
        word_val: &["-name"],
        word_flags: &["-delete"],
        permute: true,
    };

    #[test]
    fn attached_digits_end_at_the_first_letter() {
        // `-l` takes only the digits attached to it: `-lao out` is `-l -a -o out`.
        let argv = fields("p -l012ao out f");
        let p = G.parse(&argv, 1);
        assert_eq!(p.value('l', "").map(|f| f.text.as_str()), Some("012"));
        assert_eq!(p.value('o', "").map(|f| f.text.as_str()), Some("out"));
        assert_eq!(ops(&G, "p -lao out f"), ["f"]);
        // A command line that ends the options at the first operand, and `command_start`.
        assert_eq!(
            command_start(&fields("w -e rs cargo test -e"), 1, &["-e"]),
            3
        );
        assert_eq!(
            command_start(&fields("w --exts=rs -- -x"), 1, &["--exts"]),
            3
        );
    }

    fn ops(g: &Grammar<'_>, cmd: &str) -> Vec<String> {
        let argv = fields(cmd);
        let p = g.parse(&argv, 1);
        p.operands().map(|i| argv[i].text.clone()).collect()
    }

    #[test]
    fn every_spelling_of_a_value_is_one_option() {
        for cmd in [
            "sort -o out f",
            "sort -oout f",
            "sort -uo out f",
            "sort --output out f",
            "sort --output=out f",
            "sort --out out f",
            "sort f --output=out",
        ] {
            let argv = fields(cmd);
            let p = G.parse(&argv, 1);
            assert_eq!(
                p.value('o', "output").map(|f| f.text.as_str()),
                Some("out"),
                "{cmd}"
            );
            assert_eq!(ops(&G, cmd), ["f"], "{cmd}");
        }
        assert!(
            G.parse(&fields("x --compress-prog=gz f"), 1)
                .items
                .iter()
                .any(|it| matches!(
                    it,
                    Item::Long {
                        name: "compress-program",
                        ..
                    }
                ))
        );
        // Too short to be an abbreviation: a flag, and the next word is an operand.
        assert_eq!(ops(&G, "x --ou out f"), ["out", "f"]);
        // Exact only.
        assert_eq!(ops(&G, "x --excl a f"), ["a", "f"]);
        assert_eq!(ops(&G, "x --exclude a f"), ["f"]);
        // An optional value is only ever attached.
        let argv = fields("man -Hfirefox -H ls");
        let p = G.parse(&argv, 1);
        assert_eq!(
            p.values('H', "")
                .map(|f| f.text.as_str())
                .collect::<Vec<_>>(),
            ["firefox"]
        );
        assert_eq!(ops(&G, "man -H ls"), ["ls"]);
    }

    #[test]
    fn dashes_operands_and_single_dash_names() {
        assert_eq!(ops(&G, "x -- -o f"), ["-o", "f"]);
        assert_eq!(ops(&G, "x - f"), ["-", "f"]);
        assert_eq!(ops(&G, "find . -name -delete -delete"), ["."]);
        let argv = fields("find . -name=x -delete");
        let p = G.parse(&argv, 1);
        assert!(
            p.items
                .iter()
                .any(|it| matches!(it, Item::Long { name: "delete", .. }))
        );
        assert_eq!(p.value('\0', "name").map(|f| f.text.as_str()), Some("x"));
        let posix = Grammar {
            permute: false,
            ..G
        };
        let argv = fields("sudo -o x cmd -o y");
        let p = posix.parse(&argv, 1);
        assert_eq!(p.rest, 3);
        assert_eq!(ops(&posix, "sudo -o x cmd -o y"), ["cmd", "-o", "y"]);
        assert_eq!(posix.parse(&fields("sudo -v"), 1).rest, 2);
    }
}
