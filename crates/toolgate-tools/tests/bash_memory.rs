//! A command printing 1 GB: memory stays bounded, and the output file holds all of it.
//! Alone in its test binary, so the process's peak RSS measures only this test.

mod bash_support;

use bash_support::*;

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn a_gigabyte_of_output_keeps_memory_bounded() {
    const GIGABYTE: u64 = 1_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let g = gate(dir.path());
    // Warm up (runtime, gate, first spawn), then reset the peak RSS.
    bash(&g, "echo warm").await;
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status_kb("VmRSS:");

    let r = bash(
        &g,
        &format!("head -c {GIGABYTE} /dev/zero | tr '\\0' a; echo; echo end"),
    )
    .await;

    let peak = status_kb("VmHWM:");
    let t = text(&r);
    let s = structured(&r);
    assert_eq!(s["exit_code"], 0);
    assert_eq!(s["truncated"], true);
    assert!(
        t.starts_with("aaaa") && t.ends_with("aaaa\nend"),
        "{}",
        &t[t.len() - 20..]
    );
    assert!(
        t.contains(&format!("full output ({} bytes)", GIGABYTE + 5)),
        "{}",
        &t[14_990..15_300]
    );
    let path = s["stdout_path"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), GIGABYTE + 5);
    std::fs::remove_file(&path).unwrap();
    // The budget is 30,000 characters, about 240 KB of buffers; allow generous slack for
    // the allocator and the runtime, far below the gigabyte that went through.
    let grew_kb = peak.saturating_sub(before);
    assert!(
        grew_kb < 32 * 1024,
        "RSS grew by {grew_kb} kB (before {before} kB, peak {peak} kB)"
    );
}
