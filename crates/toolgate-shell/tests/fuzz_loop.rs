//! A deterministic fuzz loop that runs under plain `cargo test`: pseudo-random byte strings and
//! mutated seed commands (built-in seeds plus the peers corpus when it is present) must never
//! make `analyze` panic, overflow the stack or take long. The cargo-fuzz target in `fuzz/`
//! explores the same property with coverage guidance.
//!
//! `TOOLGATE_FUZZ_ITERS` overrides the number of iterations (default 100,000).

use std::time::{Duration, Instant};

use toolgate_shell::{Context, analyze};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const SEEDS: &[&str] = &[
    "rm -rf /",
    "x=rm; $x -rf /",
    "echo $(whoami) `id`",
    "bash -c 'sh -c \"eval ls\"'",
    "cat <<EOF | sh\nrm -rf /\nEOF",
    "f(){ rm -rf \"$1\"; }; f /",
    ":(){ :|:& };:",
    "find . -exec sh -c 'echo {}' \\;",
    "echo a | xargs -I{} rm {}",
    "parallel echo ::: a b ::: c",
    "a=(1 2 3); echo ${a[@]:1} ${#a[@]} ${a[0]//1/x}",
    "case $x in a) ls;; *) pwd;; esac",
    "for i in {1..3}; do echo $i; done",
    "while read l; do echo \"$l\"; done < f",
    "coproc cat",
    "[[ -f x && $y =~ ^a ]]",
    "(( i++ )); echo $((i*2))",
    "diff <(ls) >(cat)",
    "echo $'\\x41\\101\\u0041'",
    "sudo -u x env -S 'a b' timeout 5 ls",
    "python3 -c 'import os; os.system(\"ls\")'",
    "echo cm0= | base64 -d | sh",
    "git -C x -c a=b push -f",
    "exec 3<>/dev/tcp/h/1",
];

const TOKENS: &[&str] = &[
    "$(", ")", "`", "'", "\"", "${", "}", "{", "<<", "<<<", "<(", ">(", "|", "||", "&&", ";", "&",
    "\n", "\\", "$'", "((", "))", "[[", "]]", "if ", "then ", "fi", "do ", "done", "case ", "esac",
    "eval ", "bash -c ", "sudo ", "xargs ", "-exec ", "{}", "${IFS}", "*", "?", "~", "=", "$x",
    "$1", "$@", "{a,b}", "{1..9}", "EOF", "#", "\u{ff52}", "\u{200b}", "\0", "\u{1b}[",
];

fn mutate(rng: &mut Rng, s: &str, seeds: &[String]) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    for _ in 0..=rng.below(4) {
        match rng.below(5) {
            0 if !chars.is_empty() => {
                let i = rng.below(chars.len());
                chars.remove(i);
            }
            1 => {
                let i = rng.below(chars.len() + 1);
                let t = TOKENS[rng.below(TOKENS.len())];
                for (k, c) in t.chars().enumerate() {
                    chars.insert(i + k, c);
                }
            }
            2 if !seeds.is_empty() => {
                let other: Vec<char> = seeds[rng.below(seeds.len())].chars().collect();
                let cut = rng.below(chars.len() + 1);
                let from = rng.below(other.len() + 1);
                chars.truncate(cut);
                chars.extend(&other[from..]);
            }
            3 if !chars.is_empty() => {
                let i = rng.below(chars.len());
                let j = (i + rng.below(8)).min(chars.len());
                let seg: Vec<char> = chars[i..j].to_vec();
                for _ in 0..rng.below(4) {
                    chars.splice(i..i, seg.iter().copied());
                }
            }
            _ => {
                let i = rng.below(chars.len() + 1);
                chars.insert(i, char::from(u8::try_from(rng.below(128)).unwrap_or(b'x')));
            }
        }
    }
    chars.into_iter().collect()
}

#[test]
fn analyze_survives_random_and_mutated_input() {
    let iters: usize = std::env::var("TOOLGATE_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let mut seeds: Vec<String> = SEEDS.iter().map(|s| (*s).to_owned()).collect();
    if let Ok(text) = std::fs::read_to_string("/work/shared/corpora/peers.jsonl") {
        for line in text.lines().step_by(7) {
            if let Some(v) = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v["command"].as_str().map(str::to_owned))
            {
                seeds.push(v);
            }
        }
    }
    let ctx = Context::new("/home/u/proj").with_home("/home/u");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut slowest = Duration::ZERO;
    let mut slowest_input = String::new();
    for i in 0..iters {
        let input = if i % 4 == 0 {
            let n = rng.below(64);
            let bytes: Vec<u8> = (0..n)
                .map(|_| u8::try_from(rng.below(256)).unwrap_or(0))
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            let s = seeds[rng.below(seeds.len())].clone();
            mutate(&mut rng, &s, &seeds)
        };
        let t = Instant::now();
        let a = analyze(&input, &ctx);
        let el = t.elapsed();
        if el > slowest {
            slowest = el;
            slowest_input = input.clone();
        }
        // Basic invariants.
        assert!(a.commands.len() <= ctx.limits.max_commands, "{input:?}");
        assert!(a.findings.iter().all(|f| f.risk <= a.risk), "{input:?}");
    }
    assert!(
        slowest < Duration::from_secs(2),
        "slowest input took {slowest:?}: {slowest_input:?}"
    );
}
