//! Rough per-stage timing: `cargo run --release -p toolgate-shell --example timing -- 'cmd'`.
use std::time::Instant;

use brush_parser::{ParserOptions, parse_tokens, uncached_tokenize_str};
use toolgate_shell::{Context, analyze};

fn main() {
    let ctx = Context::new("/home/u/proj").with_home("/home/u");
    let n = 20_000;
    for cmd in std::env::args().skip(1) {
        let opts = ParserOptions::default();
        let t = Instant::now();
        for _ in 0..n {
            let toks = uncached_tokenize_str(&cmd, &opts.tokenizer_options());
            if let Ok(toks) = toks {
                let _ = std::hint::black_box(parse_tokens(&toks, &opts));
            }
        }
        let parse = t.elapsed().as_secs_f64() * 1e6 / f64::from(n);
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(analyze(&cmd, &ctx));
        }
        let full = t.elapsed().as_secs_f64() * 1e6 / f64::from(n);
        println!("parse {parse:>7.1} µs  analyze {full:>7.1} µs  {cmd}");
    }
}
