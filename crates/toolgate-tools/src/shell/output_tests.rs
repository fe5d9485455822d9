use super::*;

use toolgate_core::{Session, SessionOptions, Workspace};

/// The output files of a throwaway session, under `dir`.
fn outputs(dir: &Path) -> Arc<SessionOutputs> {
    let session = Session::new(Workspace::new(dir).unwrap(), SessionOptions::default());
    SessionOutputs::of(&session)
}

fn buffer(dir: &Path, max_chars: usize) -> OutputBuffer {
    OutputBuffer::new(
        max_chars,
        u64::MAX,
        outputs(dir),
        Some(dir.to_path_buf()),
        "t-",
    )
}

#[test]
fn short_output_is_inline_and_needs_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = buffer(dir.path(), 100);
    b.push(b"hello\n");
    b.push(b"world\n");
    let r = b.render();
    assert_eq!(r.text, "hello\nworld");
    assert!(!r.truncated);
    assert!(b.path().is_none());
}

#[test]
fn long_output_keeps_head_and_tail_and_spills_everything() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = buffer(dir.path(), 100);
    let mut all = Vec::new();
    for i in 0..10_000 {
        let line = format!("line {i}\n");
        all.extend_from_slice(line.as_bytes());
        b.push(line.as_bytes());
    }
    let r = b.render();
    assert!(r.truncated);
    assert!(r.text.starts_with("line 0\nline 1\n"), "{}", r.text);
    assert!(r.text.ends_with("line 9999"), "{}", r.text);
    let path = b.path().unwrap().to_path_buf();
    assert!(r.text.contains(&path.display().to_string()));
    assert!(r.text.contains("characters omitted"));
    assert_eq!(std::fs::read(&path).unwrap(), all);
    assert_eq!(b.total(), all.len() as u64);
    // Memory is bounded by the budget, not by the output.
    assert!(b.head.len() <= 400 && b.tail.buf.len() <= 400);
    assert!(b.head.capacity() <= 800 && b.tail.buf.capacity() <= 800);
    let mut b2 = b;
    b2.discard_file_if_unneeded(&r);
    assert!(path.exists(), "a truncated output keeps its file");
}

#[test]
fn output_between_budget_bytes_and_chars_is_inline() {
    // 60 two-byte characters: over the 100-byte spill mark, under 100 characters.
    let dir = tempfile::tempdir().unwrap();
    let mut b = buffer(dir.path(), 100);
    b.push("é".repeat(60).as_bytes());
    let r = b.render();
    assert!(!r.truncated);
    assert_eq!(r.text, "é".repeat(60));
    let path = b.path().unwrap().to_path_buf();
    b.discard_file_if_unneeded(&r);
    assert!(!path.exists());
}

#[test]
fn multibyte_characters_survive_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = buffer(dir.path(), 10);
    for _ in 0..100 {
        b.push("日本".as_bytes());
    }
    let r = b.render();
    assert!(r.text.starts_with("日本日本日"), "{}", r.text);
    assert!(r.text.ends_with("本日本日本"), "{}", r.text);
    assert!(!r.text.contains('\u{FFFD}'));
}

#[test]
fn passing_the_byte_limit_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = OutputBuffer::new(
        10,
        50,
        outputs(dir.path()),
        Some(dir.path().to_path_buf()),
        "t-",
    );
    assert_eq!(b.push(&[b'a'; 40]), Pushed::Ok);
    assert_eq!(b.push(&[b'a'; 40]), Pushed::OverLimit);
    assert!(b.over_limit);
    assert_eq!(b.written(), 50, "the file stops at the limit");
}

#[test]
fn ensure_file_writes_what_came_before() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = buffer(dir.path(), 100);
    b.push(b"early\n");
    let path = b.ensure_file().unwrap();
    b.push(b"late\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "early\nlate\n");
    assert_eq!(b.written(), 11);
}

#[test]
fn ranges_of_a_file_read_as_inline_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let text: String = (0..1000).map(|i| format!("row {i}\n")).collect();
    std::fs::write(&path, &text).unwrap();
    let (small, cut) = read_range(&path, 0, 12, 100).unwrap();
    assert_eq!((small.as_str(), cut), ("row 0\nrow 1", false));
    let (big, cut) = read_range(&path, 0, text.len() as u64, 100).unwrap();
    assert!(cut);
    assert!(
        big.starts_with("row 0\n") && big.ends_with("row 999"),
        "{big}"
    );
    assert!(big.contains("bytes omitted"));
    let (none, _) = read_range(&path, 50, 50, 100).unwrap();
    assert!(none.is_empty());
}

#[test]
fn filter_keeps_matching_lines_within_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let text: String = (0..100)
        .map(|i| format!("{} {i}\n", if i % 10 == 0 { "ERROR" } else { "ok" }))
        .collect();
    std::fs::write(&path, &text).unwrap();
    let re = regex::Regex::new("^ERROR").unwrap();
    let (got, cut) = filter_range(&path, 0, text.len() as u64, &re, 1000, 1000).unwrap();
    assert!(!cut);
    assert_eq!(got.lines().count(), 10);
    assert!(got.lines().all(|l| l.starts_with("ERROR")));
    let (got, cut) = filter_range(&path, 0, text.len() as u64, &re, 20, 1000).unwrap();
    assert!(cut);
    assert!(got.starts_with("ERROR 0\nERROR 10\n"), "{got}");
    assert!(got.contains("more matching lines omitted"));
    // A line without a newline at the end still counts; long lines are cut.
    std::fs::write(&path, format!("ERROR {}", "x".repeat(100))).unwrap();
    let (got, _) = filter_range(&path, 0, 106, &re, 1000, 10).unwrap();
    assert_eq!(got, "ERROR xxxx…");
}

#[test]
fn the_ring_keeps_the_last_bytes() {
    let mut r = Ring::new(5);
    r.push(b"ab");
    assert_eq!(r.contents(), b"ab");
    r.push(b"cdef");
    assert_eq!(r.contents(), b"bcdef");
    r.push(b"g");
    r.push(b"hi");
    assert_eq!(r.contents(), b"efghi");
    r.push(b"0123456789");
    assert_eq!(r.contents(), b"56789");
    r.push(b"xyz");
    assert_eq!(r.contents(), b"89xyz");
}

#[test]
fn characters_are_counted_word_by_word() {
    for text in [
        "",
        "a",
        "héllo wörld",
        "日本語のテキスト and ascii",
        &"é".repeat(33),
    ] {
        assert_eq!(
            count_chars(text.as_bytes()),
            text.chars().count() as u64,
            "{text}"
        );
    }
}

#[test]
fn the_session_budget_stops_the_file_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = outputs(dir.path());
    out.set_cap(30);
    let mut b = OutputBuffer::new(
        10,
        u64::MAX,
        Arc::clone(&out),
        Some(dir.path().to_path_buf()),
        "t-",
    );
    b.push(&[b'a'; 25]);
    b.push(&[b'b'; 25]);
    assert_eq!(b.written(), 25, "the second chunk did not fit");
    assert!(b.file_notice().unwrap().contains("limit of 30 bytes"));
    assert_eq!(out.used(), 25);
}
