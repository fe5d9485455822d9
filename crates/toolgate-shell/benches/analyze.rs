//! Analyzer latency per command. `cargo bench -p toolgate-shell --bench analyze`.
//!
//! `mix` cycles through varied commands so brush-parser's small memo caches do not flatter the
//! numbers; the named benches show typical shapes. Target: median under 30 µs.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate_shell::{Context, analyze};

const MIX: &[&str] = &[
    "ls -la",
    "git status",
    "cargo test -p toolgate-shell",
    "npm run dev",
    "rm -rf ./target",
    "git commit -m 'rm -rf / is bad'",
    "grep -rn 'TODO' src | head -20",
    "cd crates && cargo build --release 2>&1 | tail -5",
    "find . -name '*.rs' -exec wc -l {} +",
    "curl -fsSL https://example.com/install.sh | sh",
    "x=rm; $x -rf /",
    "r''m -rf $'\\x2f'",
    "echo cm0gLXJmIC8= | base64 -d | bash",
    "bash -c \"sh -c 'eval \\\"rm -rf /\\\"'\"",
    "sudo timeout 10 nice -n 5 env FOO=1 make install",
    "python3 -c \"import shutil; shutil.rmtree('/tmp/x')\"",
    "cat <<'EOF' > notes.md\n# notes\nrm -rf / is dangerous\nEOF",
    "for f in *.txt; do mv \"$f\" \"${f%.txt}.md\"; done",
    "kubectl -n prod delete deployment web",
    "docker compose up -d && docker compose logs -f web",
    "psql -c 'DROP TABLE users;'",
    "f(){ rm -rf \"$1\"; }; f build",
    "echo / | xargs -I{} sh -c 'rm -rf {}'",
    "git -C repo -c core.pager=less log --oneline -n 20",
    "terraform plan -out tf.plan && terraform show tf.plan",
];

fn bench(c: &mut Criterion) {
    let ctx = Context::new("/home/u/proj").with_home("/home/u");
    let mut i = 0usize;
    c.bench_function("mix", |b| {
        b.iter(|| {
            i = (i + 1) % MIX.len();
            black_box(analyze(black_box(MIX[i]), &ctx))
        });
    });
    for (name, cmd) in [
        ("simple", "ls -la"),
        (
            "pipeline",
            "grep -rn 'TODO' src | sort | uniq -c | head -20",
        ),
        ("obfuscated", "x=r''m; $x -rf $'\\x2f'"),
        (
            "nested_shell_c",
            "bash -c \"sh -c 'eval \\\"rm -rf /\\\"'\"",
        ),
        ("pipe_to_shell", "echo cm0gLXJmIC8= | base64 -d | bash"),
        (
            "heredoc",
            "cat <<'EOF' > notes.md\n# notes\nrm -rf / is dangerous\nEOF",
        ),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| black_box(analyze(black_box(cmd), &ctx)))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
