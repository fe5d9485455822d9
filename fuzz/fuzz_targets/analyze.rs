//! Fuzz target: `analyze` must never panic, overflow the stack or hang on any input, and
//! its answer is either parsed or opaque: text with something to run yields commands or an
//! opacity reason, never an empty "nothing here" that policy would take as read-only.
//!
//! Run with `cargo +nightly fuzz run analyze fuzz/corpus/analyze -- -max_total_time=600`
//! from the repository root (docs/fuzzing.md).
//!
//! `analyze` contains panics of brush-parser with `catch_unwind` (known ones are avoided before
//! parsing); libFuzzer's panic hook would abort on those anyway, so this target installs a hook
//! that lets panics located in brush-parser unwind to that `catch_unwind` (and counts them on
//! stderr) while any panic in toolgate-shell itself still aborts and is reported as a crash.
#![no_main]

use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;
use toolgate_shell::{Context, analyze};

static HOOK: Once = Once::new();
static CONTAINED: AtomicUsize = AtomicUsize::new(0);

fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_parser = info.location().is_some_and(|l| l.file().contains("brush-parser"));
            if in_parser {
                let n = CONTAINED.fetch_add(1, Ordering::Relaxed) + 1;
                eprintln!("contained brush-parser panic #{n}: {info}");
                return;
            }
            previous(info);
        }));
    });
}

fuzz_target!(|data: &[u8]| {
    install_hook();
    let text = String::from_utf8_lossy(data);
    let ctx = Context::new("/home/u/proj").with_home("/home/u");
    let a = analyze(&text, &ctx);
    // Invariants the rest of toolgate relies on.
    assert!(a.commands.len() <= ctx.limits.max_commands);
    assert!(a.findings.iter().all(|f| f.risk <= a.risk));
    let _ = a.facts();
    if a.commands.is_empty() && a.opaque.is_empty() {
        assert!(
            nothing_to_run(&text),
            "neither commands nor an opacity reason for {text:?}"
        );
    }
});

/// Whether `text` holds nothing but blanks and comments.
fn nothing_to_run(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim_start();
        t.is_empty() || t.starts_with('#')
    })
}
