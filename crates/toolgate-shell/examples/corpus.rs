//! Scores the analyzer on a labelled corpus (`/work/shared/corpora/peers.jsonl`).
//!
//! ```text
//! cargo run --release -p toolgate-shell --example corpus -- /work/shared/corpora/peers.jsonl [--show N] [--source S]
//! ```
//!
//! Decision mapping: catastrophic → deny; high or opaque → ask; anything else → none.
//! Rows labelled `block` must be guarded (deny or ask); rows labelled `allow` must not be
//! denied. Commands that two sources label both ways are dropped, as `score.py` does.
//! `server` / `not-server` rows score server detection.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use toolgate_protocol::Risk;
use toolgate_shell::{Analysis, Context, analyze};

#[derive(Default)]
struct Tally {
    block: usize,
    guarded: usize,
    denied: usize,
    allow: usize,
    false_deny: usize,
    ask: usize,
}

fn decision(a: &Analysis) -> &'static str {
    if a.risk == Risk::Catastrophic {
        "deny"
    } else if a.risk == Risk::High || !a.opaque.is_empty() {
        "ask"
    } else {
        "none"
    }
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

fn why(a: &Analysis) -> String {
    let f = a
        .findings
        .iter()
        .filter(|f| f.risk >= Risk::High)
        .map(|f| f.reason.clone())
        .next();
    f.or_else(|| a.opaque.first().map(|o| format!("opaque: {o}")))
        .unwrap_or_default()
}

/// Why an allow row was asked about: the category of its first high finding, or that part of
/// it could not be seen.
fn ask_bucket(a: &Analysis) -> String {
    a.findings
        .iter()
        .find(|f| f.risk >= Risk::High)
        .map(|f| f.category.clone())
        .unwrap_or_else(|| "opaque".to_owned())
}

/// Why a block row was left alone, from our own analysis (not from the row's text): these are
/// the policy differences listed in docs/shell.md.
fn bucket(a: &Analysis) -> &'static str {
    use toolgate_protocol::Access;
    let progs: Vec<&str> = a.commands.iter().map(|c| c.program.as_str()).collect();
    let deletes: Vec<_> = a
        .commands
        .iter()
        .flat_map(|c| c.paths.iter())
        .filter(|p| p.access == Access::Delete)
        .collect();
    let writes: Vec<_> = a
        .commands
        .iter()
        .flat_map(|c| c.paths.iter())
        .filter(|p| p.access == Access::Write)
        .collect();
    if a.commands
        .iter()
        .any(|c| c.program == "rm" && c.argv.iter().skip(1).all(|w| w.starts_with('-')))
    {
        return "no-op for the shell (rm without operands, corrupted row)";
    }
    if !deletes.is_empty() && deletes.iter().all(|p| p.inside_roots) {
        return "deletion inside the workspace (moderate by policy)";
    }
    let temp = |p: &std::path::Path| {
        ["/tmp/", "/var/tmp/"]
            .iter()
            .any(|t| p.to_string_lossy().starts_with(t))
    };
    if !deletes.is_empty() && deletes.iter().all(|p| p.inside_roots || temp(&p.path)) {
        return "deletion of a named entry of the temporary directory (allowed, #22)";
    }
    if progs.iter().any(|p| p.eq_ignore_ascii_case("git")) {
        return "git operation we do not treat as destructive";
    }
    if a.risk == Risk::ReadOnly {
        return "read-only by our analysis";
    }
    if !writes.is_empty() && writes.iter().all(|p| p.inside_roots) {
        return "write or permission change inside the workspace";
    }
    if progs
        .iter()
        .any(|p| matches!(*p, "kill" | "pip" | "pip3" | "poetry" | "npm" | "yarn"))
    {
        return "process signal or package change in the workspace";
    }
    "other (see list)"
}

/// Everything the run counts, printed at the end.
#[derive(Default)]
struct Report {
    per: BTreeMap<String, Tally>,
    total: Tally,
    misses: Vec<(String, String, &'static str)>,
    buckets: BTreeMap<&'static str, usize>,
    false_denies: Vec<(String, String, String)>,
    asks: Vec<(String, String, String)>,
    ask_buckets: BTreeMap<String, usize>,
    /// Servers found, servers missed, non-servers left alone, non-servers flagged.
    server: (usize, usize, usize, usize),
    times: Vec<f64>,
    slowest: Vec<(f64, String)>,
}

impl Report {
    fn timed(&mut self, cmd: &str, us: f64) {
        self.times.push(us);
        self.slowest.push((us, cmd.to_owned()));
        if self.slowest.len() > 64 {
            self.slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
            self.slowest.truncate(3);
        }
    }

    fn server_row(&mut self, exp: &str, a: &Analysis) {
        match (exp, a.server.is_some()) {
            ("server", true) => self.server.0 += 1,
            ("server", false) => self.server.1 += 1,
            (_, false) => self.server.2 += 1,
            _ => self.server.3 += 1,
        }
    }

    fn labelled_row(&mut self, src: &str, cmd: &str, exp: &str, a: &Analysis) {
        let d = decision(a);
        let t = self.per.entry(src.to_owned()).or_default();
        for t in [t, &mut self.total] {
            if exp == "block" {
                t.block += 1;
                t.guarded += usize::from(d != "none");
                t.denied += usize::from(d == "deny");
            } else {
                t.allow += 1;
                t.false_deny += usize::from(d == "deny");
                t.ask += usize::from(d == "ask");
            }
        }
        if exp == "block" && d == "none" {
            let b = bucket(a);
            *self.buckets.entry(b).or_default() += 1;
            self.misses.push((src.to_owned(), cmd.to_owned(), b));
        }
        if exp == "allow" && d == "deny" {
            self.false_denies
                .push((src.to_owned(), cmd.to_owned(), why(a)));
        }
        if exp == "allow" && d == "ask" {
            *self.ask_buckets.entry(ask_bucket(a)).or_default() += 1;
            self.asks.push((src.to_owned(), cmd.to_owned(), why(a)));
        }
    }

    fn print_table(&self, conflicted: usize) {
        println!(
            "{:<14} {:>6} {:>9} {:>9} {:>6} {:>10} {:>9}",
            "source", "block", "guarded", "denied", "allow", "false_deny", "ask"
        );
        let total = "TOTAL".to_owned();
        for (src, t) in self
            .per
            .iter()
            .chain(std::iter::once((&total, &self.total)))
        {
            println!(
                "{:<14} {:>6} {:>9} {:>9} {:>6} {:>10} {:>9}",
                src,
                t.block,
                pct(t.guarded, t.block),
                pct(t.denied, t.block),
                t.allow,
                pct(t.false_deny, t.allow),
                pct(t.ask, t.allow)
            );
        }
        println!("dropped {conflicted} commands labelled both block and allow");
        let s = self.server;
        if s.0 + s.1 + s.2 + s.3 > 0 {
            println!(
                "server detection: {}/{} servers found, {}/{} non-servers left alone",
                s.0,
                s.0 + s.1,
                s.2,
                s.2 + s.3
            );
        }
    }

    fn print_times(&mut self) {
        self.times.sort_by(f64::total_cmp);
        let times = &self.times;
        if times.is_empty() {
            return;
        }
        println!(
            "analyze time per command: median {:.1} µs, p95 {:.1} µs, max {:.0} µs",
            times[times.len() / 2],
            times[times.len() * 95 / 100],
            times[times.len() - 1]
        );
        self.slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (us, cmd) in self.slowest.iter().take(3) {
            let short: String = cmd.chars().take(80).collect();
            println!("  slowest: {us:.0} µs  {short:?}");
        }
    }

    fn print_lists(&self, show: usize) {
        println!(
            "\n-- misses (block rows decided none): {}",
            self.misses.len()
        );
        for (b, n) in &self.buckets {
            println!("  {n:>5}  {b}");
        }
        for (s, c, b) in self.misses.iter().take(show) {
            println!("  [{s}] ({b}) {c}");
        }
        println!(
            "\n-- false denies (allow rows decided deny): {}",
            self.false_denies.len()
        );
        for (s, c, w) in self.false_denies.iter().take(show) {
            println!("  [{s}] {c}\n      {w}");
        }
        println!("\n-- asks on allow rows: {}", self.asks.len());
        for (b, n) in &self.ask_buckets {
            println!("  {n:>5}  {b}");
        }
        for (s, c, w) in self.asks.iter().take(show) {
            println!("  [{s}] {c}\n      {w}");
        }
    }
}

/// Commands labelled both block and allow (by different peers): left out of the tally.
fn conflicted(rows: &[serde_json::Value]) -> HashSet<String> {
    let mut labels: HashMap<String, HashSet<String>> = HashMap::new();
    for r in rows {
        let (Some(c), Some(e)) = (r["command"].as_str(), r["expected"].as_str()) else {
            continue;
        };
        if e == "block" || e == "allow" {
            labels.entry(c.to_owned()).or_default().insert(e.to_owned());
        }
    }
    labels
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, _)| k)
        .collect()
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: corpus PEERS.jsonl [--show N] [--source S]");
        std::process::exit(2);
    };
    let show: usize = flag(&args, "--show")
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let only = flag(&args, "--source");
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let rows: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let conflicted = conflicted(&rows);
    let ctx = Context::new("/home/user/project").with_home("/home/user");
    let mut report = Report::default();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for r in &rows {
        let (Some(src), Some(cmd), Some(exp)) = (
            r["source"].as_str(),
            r["command"].as_str(),
            r["expected"].as_str(),
        ) else {
            continue;
        };
        if only.is_some_and(|o| o != src) {
            continue;
        }
        let t0 = Instant::now();
        let a = analyze(cmd, &ctx);
        report.timed(cmd, t0.elapsed().as_secs_f64() * 1e6);
        match exp {
            "server" | "not-server" => report.server_row(exp, &a),
            "block" | "allow"
                if !conflicted.contains(cmd) && seen.insert((src.to_owned(), cmd.to_owned())) =>
            {
                report.labelled_row(src, cmd, exp, &a);
            }
            _ => {}
        }
    }
    report.print_table(conflicted.len());
    report.print_times();
    report.print_lists(show);
}
