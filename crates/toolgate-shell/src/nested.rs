//! Commands that build and run other commands from arguments and input: `xargs`, `parallel`
//! and `find -exec/-execdir/-ok/-okdir`.

use crate::argv::{Item, long_is};
use crate::exec::Pending;
use crate::feed::Output;
use crate::types::Origin;
use crate::walk::Walker;
use crate::words::Field;

/// Most command lines built from one `xargs`/`parallel`/`find -exec` (one per input item).
const MAX_EXPANSIONS: usize = 8;

/// A parsed `find` command line.
#[derive(Debug, Default)]
pub(crate) struct FindInfo {
    /// Starting points (`.` when none).
    pub starts: Vec<Field>,
    /// Whether any test narrows the matches (so the start directory itself may not match).
    pub filtered: bool,
    /// `-delete` is present.
    pub delete: bool,
    /// The name globs of `-name`/`-iname` when they are the only tests and all must hold
    /// (no `-o`, `!`, `-not` or parentheses): only files with such a name match. Empty when
    /// the matches are narrowed some other way, or not at all.
    pub names: Vec<String>,
    /// `-exec` & co. command lines, `{}` still in place.
    pub execs: Vec<Vec<Field>>,
    /// Files written by `-fprint`, `-fprint0`, `-fprintf`, `-fls`.
    pub writes: Vec<Field>,
}

/// Options of `find` that do not narrow which files match. `-type f` does not either: the
/// start directory is left, but every file below it goes (`find . -type f -delete` empties
/// the workspace as `find . -delete` does).
const FIND_NEUTRAL: &[&str] = &[
    "-maxdepth",
    "-depth",
    "-d",
    "-xdev",
    "-mount",
    "-follow",
    "-noleaf",
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-daystart",
    "-ignore_readdir_race",
    "-regextype",
    "-warn",
    "-nowarn",
    "-printf",
    "-true",
    "-o",
    "-or",
    "-a",
    "-and",
    "-not",
    "!",
    "(",
    ")",
    ",",
];

/// Parses `find` arguments (`argv[0]` is `find`).
pub(crate) fn parse_find(argv: &[Field]) -> FindInfo {
    let mut info = FindInfo::default();
    let mut i = 1;
    while i < argv.len()
        && matches!(
            argv[i].text.as_str(),
            "-H" | "-L" | "-P" | "-O0" | "-O1" | "-O2" | "-O3"
        )
    {
        i += 1;
    }
    while i < argv.len() {
        let t = argv[i].text.as_str();
        if t.starts_with('-') || t == "(" || t == "!" {
            break;
        }
        info.starts.push(argv[i].clone());
        i += 1;
    }
    if info.starts.is_empty() {
        info.starts.push(Field::lit("."));
    }
    let mut names = Vec::new();
    let mut other_tests = false;
    while i < argv.len() {
        let t = argv[i].text.as_str();
        match t {
            "-delete" => info.delete = true,
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let mut cmd = Vec::new();
                i += 1;
                while i < argv.len() && argv[i].text != ";" && argv[i].text != "+" {
                    cmd.push(argv[i].clone());
                    i += 1;
                }
                info.execs.push(cmd);
            }
            "-fprint" | "-fprint0" | "-fls" => {
                if let Some(f) = argv.get(i + 1) {
                    info.writes.push(f.clone());
                }
                i += 1;
            }
            "-fprintf" => {
                if let Some(f) = argv.get(i + 1) {
                    info.writes.push(f.clone());
                }
                i += 2;
            }
            "-maxdepth" | "-regextype" | "-printf" | "-type" | "-xtype" => i += 1,
            t if FIND_NEUTRAL.contains(&t) => {
                // Alternatives, negation and pruning make a name no longer a bound.
                other_tests |=
                    matches!(t, "-o" | "-or" | "-not" | "!" | "(" | ")" | "," | "-prune");
            }
            "-name" | "-iname" if !other_tests => {
                info.filtered = true;
                if let Some(v) = argv.get(i + 1) {
                    names.push(v.text.clone());
                }
                i += 1;
            }
            t if t.starts_with('-') => {
                // A test such as -name, -type, -mtime, -mindepth: it takes a value (except a few).
                info.filtered = true;
                other_tests = true;
                if !matches!(
                    t,
                    "-empty" | "-readable" | "-writable" | "-executable" | "-nouser" | "-nogroup"
                ) {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if !other_tests {
        info.names = names;
    }
    info
}

/// What `{}` stands for in `-exec` when starting from `start`.
pub(crate) fn find_placeholder(start: &Field, filtered: bool) -> Field {
    if filtered {
        let base = start.text.trim_end_matches('/');
        Field {
            text: format!("{base}/*…"),
            glob: true,
            dynamic: start.dynamic,
            ..Field::default()
        }
    } else {
        start.clone()
    }
}

/// What one name printed by a listing program stands for: a file below the directory it
/// lists (`D/*…`, read by [`crate::classify::effects`] as everything below `D`), or the
/// start itself for an unfiltered `find` (which prints it first).
pub(crate) fn lister_placeholder(prog: &str, argv: &[Field]) -> Option<Field> {
    let under = |dir: Option<&Field>| {
        let d = dir.cloned().unwrap_or_else(|| Field::lit("."));
        Some(find_placeholder(&d, true))
    };
    let ops = || {
        argv.iter()
            .skip(1)
            .filter(|a| !a.text.starts_with('-'))
            .collect::<Vec<_>>()
    };
    match prog {
        "find" => {
            let info = parse_find(argv);
            let start = info.starts.first()?;
            Some(find_placeholder(start, info.filtered))
        }
        "git"
            if argv.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "ls-files" | "--name-only" | "--name-status"
                )
            }) =>
        {
            under(None)
        }
        "ls" | "fd" | "fdfind" => under(ops().last().copied()),
        "rg" | "grep" | "ag"
            if argv.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "--files" | "-l" | "--files-with-matches" | "-L" | "-rl" | "-lr" | "-Rl"
                )
            }) =>
        {
            let o = ops();
            under(
                if prog == "rg" && argv.iter().any(|a| a.text == "--files") {
                    o.last().copied()
                } else {
                    o.get(1).copied()
                },
            )
        }
        _ => None,
    }
}

fn substitute(word: &Field, pat: &str, with: &Field) -> Field {
    if word.text.contains(pat) {
        Field {
            text: word.text.replace(pat, &with.text),
            dynamic: word.dynamic || with.dynamic,
            glob: word.glob || with.glob,
            ..Field::default()
        }
    } else {
        word.clone()
    }
}

impl Walker<'_> {
    pub fn run_find_exec(&mut self, argv: &[Field]) {
        let info = parse_find(argv);
        for cmd in &info.execs {
            if cmd.is_empty() {
                continue;
            }
            for start in info.starts.iter().take(MAX_EXPANSIONS) {
                let ph = find_placeholder(start, info.filtered);
                let inner: Vec<Field> = cmd.iter().map(|w| substitute(w, "{}", &ph)).collect();
                self.run_nested_argv(inner, Origin::FindExec, Vec::new(), None);
            }
        }
    }

    pub(crate) fn run_nested_argv(
        &mut self,
        argv: Vec<Field>,
        origin: Origin,
        wrappers: Vec<String>,
        stdin: Option<(String, bool)>,
    ) {
        if !self.enter() {
            return;
        }
        self.depth += 1;
        let saved = std::mem::replace(&mut self.origin, origin);
        // Re-enter through the normal path so wrappers, shells and functions are handled.
        let p = Pending {
            env: Vec::new(),
            redirects: Vec::new(),
            stdin,
        };
        let idx = self.run_argv(argv, wrappers, p);
        if origin == Origin::FindExec
            && let Some(r) = idx.and_then(|i| self.recs.get(i))
            && matches!(r.code, crate::walk::CodeInput::Stdin(_))
            && r.stdin.is_none()
        {
            let prog = r.program.clone();
            self.finding(
                        toolgate_protocol::Risk::High,
                        "interactive_shell",
                        format!("`find -exec {prog}` (rule exec.interactive_shell): spawns a shell or interpreter reading the terminal"),
                    );
        }
        self.origin = saved;
        self.depth -= 1;
    }

    /// When the input comes straight from a program that lists files (`find D …`, `fd`,
    /// `git ls-files`, `ls D`, `rg --files D`, `grep -l`), a field standing for one of them:
    /// a file below the listed directory (see [`find_placeholder`]).
    pub(crate) fn listed_items(&self, stdin: Option<&(String, bool)>) -> Option<Field> {
        if stdin.is_some() {
            return None;
        }
        let producer = self.pipe.1.last().copied().flatten()?;
        let rec = self.recs.get(producer)?;
        lister_placeholder(&rec.program, &rec.argv)
    }

    /// Input items available on stdin from earlier pipeline stages or a here-string.
    fn stdin_items(&mut self, stdin: Option<&(String, bool)>, lines: bool) -> Option<Vec<String>> {
        let out = match stdin {
            Some((t, true)) => Output::Text(t.clone()),
            Some((_, false)) => return None,
            None => {
                let stages = self.pipe.1.clone();
                if stages.is_empty() {
                    return Some(Vec::new());
                }
                self.pipeline_output(&stages)
            }
        };
        match out {
            Output::Text(t) if lines => Some(
                t.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ),
            Output::Text(t) => Some(t.split_whitespace().map(str::to_owned).collect()),
            _ => None,
        }
    }

    /// `xargs [opts] [cmd [args]]` and `parallel [opts] [cmd] [::: args …]`.
    pub fn run_xargs(
        &mut self,
        argv: Vec<Field>,
        wrappers: Vec<String>,
        p: Pending,
    ) -> Option<usize> {
        let prog = crate::exec::basename(&argv[0].text);
        if prog == "parallel" {
            let rec = self.record(argv.clone(), wrappers, p, crate::walk::CodeInput::None);
            self.run_parallel(&argv);
            return rec;
        }
        let parsed = crate::grammars::XARGS.parse(&argv, 1);
        let mut replace: Option<String> = None;
        let mut from_file = false;
        for item in &parsed.items {
            match item {
                Item::Short {
                    letter: 'I', value, ..
                } => {
                    replace = value.as_ref().map(|f| f.text.clone());
                }
                Item::Short {
                    letter: 'i', value, ..
                } => {
                    replace = Some(value.as_ref().map_or("{}", |f| f.text.as_str()).to_owned());
                }
                Item::Long { name, value, .. } if long_is(name, "--replace") => {
                    let r = value.as_ref().map_or("", |f| f.text.as_str());
                    replace = Some(if r.is_empty() { "{}" } else { r }.to_owned());
                }
                Item::Short { letter: 'a', .. } => from_file = true,
                Item::Long {
                    name: "arg-file", ..
                } => from_file = true,
                _ => {}
            }
        }
        let i = parsed.rest;
        let cmd: Vec<Field> = if i < argv.len() {
            argv[i..].to_vec()
        } else {
            vec![Field::lit("echo")]
        };
        let items = if from_file {
            None
        } else {
            self.stdin_items(p.stdin.as_ref(), replace.is_some())
        };
        let mut w = wrappers;
        w.push(prog);
        match (items, replace) {
            (Some(items), Some(r)) if !items.is_empty() => {
                for it in items.iter().take(MAX_EXPANSIONS) {
                    let f = Field::lit(it.clone());
                    let inner = cmd.iter().map(|c| substitute(c, &r, &f)).collect();
                    self.run_nested_argv(inner, Origin::Xargs, w.clone(), None);
                }
            }
            (Some(items), None) => {
                let mut inner = cmd;
                inner.extend(items.into_iter().take(64).map(Field::lit));
                self.run_nested_argv(inner, Origin::Xargs, w, None);
            }
            (_, r) => {
                // Names listed by an earlier stage (`find D …`, `git ls-files`, `ls D`) are
                // files below that directory; anything else could be any word.
                let unknown = self
                    .listed_items(p.stdin.as_ref())
                    .unwrap_or_else(|| Field {
                        text: "…".into(),
                        dynamic: true,
                        ..Field::default()
                    });
                let inner = match r {
                    Some(r) => cmd.iter().map(|c| substitute(c, &r, &unknown)).collect(),
                    None => {
                        let mut v = cmd;
                        v.push(unknown);
                        v
                    }
                };
                self.run_nested_argv(inner, Origin::Xargs, w, None);
            }
        }
        None
    }

    fn run_parallel(&mut self, argv: &[Field]) {
        let mut i = crate::grammars::PARALLEL.parse(argv, 1).rest;
        let mut cmd = Vec::new();
        while i < argv.len() && !argv[i].text.starts_with(":::") {
            cmd.push(argv[i].clone());
            i += 1;
        }
        let mut groups: Vec<Vec<Field>> = Vec::new();
        while i < argv.len() {
            if argv[i].text.starts_with(":::") {
                groups.push(Vec::new());
            } else if let Some(g) = groups.last_mut() {
                g.push(argv[i].clone());
            }
            i += 1;
        }
        if groups.is_empty() {
            let stdin = self.stdin_items(None, true);
            groups.push(match stdin {
                Some(items) if !items.is_empty() => items.into_iter().map(Field::lit).collect(),
                _ => vec![Field {
                    text: "…".into(),
                    dynamic: true,
                    ..Field::default()
                }],
            });
        }
        // Cartesian product of the groups, capped.
        let mut combos: Vec<Vec<Field>> = vec![Vec::new()];
        for g in &groups {
            let mut next = Vec::new();
            for c in &combos {
                for item in g.iter().take(MAX_EXPANSIONS) {
                    if next.len() < MAX_EXPANSIONS {
                        let mut c2 = c.clone();
                        c2.push(item.clone());
                        next.push(c2);
                    }
                }
            }
            combos = next;
        }
        for combo in combos {
            let line = if cmd.is_empty() {
                combo
                    .iter()
                    .map(|f| f.text.clone())
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                let mut used = false;
                let mut words: Vec<String> = cmd
                    .iter()
                    .map(|w| {
                        let mut t = w.text.clone();
                        for (n, item) in combo.iter().enumerate() {
                            let pat = format!("{{{}}}", n + 1);
                            if t.contains(&pat) {
                                used = true;
                                t = t.replace(&pat, &item.text);
                            }
                        }
                        if t.contains("{}") {
                            used = true;
                            let all = combo
                                .iter()
                                .map(|f| f.text.clone())
                                .collect::<Vec<_>>()
                                .join(" ");
                            t = t.replace("{}", &all);
                        }
                        crate::feed::shell_quote(&t)
                    })
                    .collect();
                if !used {
                    words.extend(combo.iter().map(|f| crate::feed::shell_quote(&f.text)));
                }
                words.join(" ")
            };
            let dynamic = combo.iter().any(|f| f.dynamic);
            if dynamic {
                self.opaque("`parallel` runs commands built from input the analyzer cannot see");
            }
            self.nested_code(&line, Origin::Xargs, None, None);
        }
    }
}
