//! Read, through the Gate.

mod common;

use std::io::Write as _;

use common::*;
use serde_json::json;
use toolgate_protocol::{Content, ErrorCode};
use toolgate_tools::{FileToolsConfig, read_record};

#[tokio::test]
async fn cat_n_format_one_based_right_aligned() {
    let env = Env::new();
    env.write("a.txt", "alpha\n\tbeta\r\ngamma");
    let out = env
        .ok("Read", json!({"file_path": env.path("a.txt")}))
        .await;
    assert_eq!(out, "     1\talpha\n     2\t\tbeta\n     3\tgamma\n");
}

#[tokio::test]
async fn default_limit_offset_and_limit() {
    let env = Env::new();
    let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    env.write("big.txt", &text);
    let r = env.call("Read", json!({"file_path": "big.txt"})).await;
    let out = output(&r).joined_text();
    assert!(out.starts_with("     1\tline 1\n"));
    assert!(out.contains("  2000\tline 2000\n"));
    assert!(!out.contains("line 2001"));
    assert!(
        out.contains("Showing lines 1–2000 of 2500. Use offset=2001"),
        "{out}"
    );
    assert_eq!(
        output(&r).structured.as_ref().unwrap()["partial"],
        json!(true)
    );
    let out = env
        .ok(
            "Read",
            json!({"file_path": "big.txt", "offset": 2499, "limit": 5}),
        )
        .await;
    assert_eq!(out, "  2499\tline 2499\n  2500\tline 2500\n");
    let out = env
        .ok(
            "Read",
            json!({"file_path": "big.txt", "offset": 10, "limit": 2}),
        )
        .await;
    assert!(out.starts_with("    10\tline 10\n    11\tline 11\n"));
    assert!(out.contains("Use offset=12"));
}

#[tokio::test]
async fn offset_past_the_end_and_empty_files_give_notices() {
    let env = Env::new();
    env.write("three.txt", "a\nb\nc\n");
    env.write("empty.txt", "");
    let out = env
        .ok("Read", json!({"file_path": "three.txt", "offset": 10}))
        .await;
    assert!(
        out.contains("has only 3 lines, so offset 10 is past its end"),
        "{out}"
    );
    let out = env.ok("Read", json!({"file_path": "empty.txt"})).await;
    assert!(out.contains("exists but is empty"), "{out}");
}

#[tokio::test]
async fn long_lines_are_cut_with_a_marker() {
    let env = Env::new();
    env.write("min.js", &format!("{}\nshort\n", "x".repeat(5000)));
    let out = env.ok("Read", json!({"file_path": "min.js"})).await;
    let first = out.lines().next().unwrap();
    assert_eq!(first.chars().filter(|c| *c == 'x').count(), 2000);
    assert!(first.contains("[line cut at 2000 characters; it is 5000 bytes long]"));
    assert!(out.contains("     2\tshort"));
}

#[tokio::test]
async fn directories_binaries_and_missing_files_are_refused() {
    let env = Env::new();
    std::fs::create_dir(env.path("dir")).unwrap();
    std::fs::write(env.path("bin.dat"), b"ELF\0\x01\x02binary").unwrap();
    let e = env.err("Read", json!({"file_path": "dir"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "use Glob");
    let e = env.err("Read", json!({"file_path": "bin.dat"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "binary file");
    let e = env.err("Read", json!({"file_path": "nope.txt"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "does not exist");
    let e = env
        .err("Read", json!({"file_path": "dir", "bogus": 1}))
        .await;
    assert_eq!(e.code, ErrorCode::InvalidInput);
    let e = env
        .err("Read", json!({"file_path": "bin.dat", "pages": "1"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "PDF files only");
}

#[tokio::test]
async fn whole_file_over_the_cap_returns_a_partial_view() {
    let config = FileToolsConfig {
        read_max_output_bytes: 1000,
        ..FileToolsConfig::default()
    };
    let env = Env::with(config, |b| b);
    let text: String = (1..=500).map(|i| format!("row {i:04}\n")).collect();
    env.write("wide.txt", &text);
    let r = env.call("Read", json!({"file_path": "wide.txt"})).await;
    let out = output(&r).joined_text();
    assert!(out.contains("Partial view"), "{out}");
    assert!(
        out.contains("use offset") || out.contains("Use offset="),
        "{out}"
    );
    let body: Vec<&str> = out.lines().filter(|l| l.contains("\trow ")).collect();
    assert!(body.len() > 10 && body.len() < 100, "{}", body.len());
    let rec = read_record(env.gate.session(), &env.path("wide.txt")).unwrap();
    assert!(rec.partial);
}

#[tokio::test]
async fn full_reads_are_recorded_as_not_partial() {
    let env = Env::new();
    env.write("small.txt", "one\n");
    env.ok("Read", json!({"file_path": "small.txt"})).await;
    let rec = read_record(env.gate.session(), &env.path("small.txt")).unwrap();
    assert!(!rec.partial);
}

#[tokio::test]
async fn large_files_stream_with_bounded_memory() {
    // Above hash_max_bytes the file is streamed, never held whole.
    let config = FileToolsConfig {
        hash_max_bytes: 64 * 1024,
        ..FileToolsConfig::default()
    };
    let env = Env::with(config, |b| b);
    let mut f = std::fs::File::create(env.path("huge.log")).unwrap();
    for i in 1..=200_000u32 {
        writeln!(f, "entry {i}").unwrap();
    }
    drop(f);
    let out = env
        .ok(
            "Read",
            json!({"file_path": "huge.log", "offset": 150_000, "limit": 2}),
        )
        .await;
    assert_eq!(out.lines().next().unwrap(), "150000\tentry 150000");
    assert!(out.contains("Use offset=150002"), "{out}");
    let out = env.ok("Read", json!({"file_path": "huge.log"})).await;
    assert!(out.contains("Showing lines 1–2000."), "{out}");
    // Such files cannot be edited (they are not hashed).
    let e = env
        .err(
            "Edit",
            json!({"file_path": "huge.log", "old_string": "entry 1\n", "new_string": "x\n"}),
        )
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "offset and limit only");
}

const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

#[tokio::test]
async fn images_come_back_as_image_blocks() {
    let env = Env::new();
    std::fs::write(env.path("dot.png"), PNG_1X1).unwrap();
    let r = env.call("Read", json!({"file_path": "dot.png"})).await;
    let out = output(&r);
    match &out.content[0] {
        Content::Image { media_type, data } => {
            assert_eq!(media_type, "image/png");
            use base64::Engine as _;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap();
            assert_eq!(raw, PNG_1X1);
        }
        other => panic!("expected an image, got {other:?}"),
    }
}

#[tokio::test]
async fn notebooks_are_rendered_cell_by_cell() {
    let env = Env::new();
    let nb = json!({
        "cells": [
            {"cell_type": "code", "id": "abc", "execution_count": 1, "metadata": {},
             "source": ["x = 1\n", "print(x)"],
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]},
            {"cell_type": "markdown", "id": "def", "metadata": {}, "source": "# Done"}
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5
    });
    env.write("nb.ipynb", &nb.to_string());
    let out = env.ok("Read", json!({"file_path": "nb.ipynb"})).await;
    assert!(out.contains("<cell id=\"abc\" index=\"0\" type=\"code\" execution_count=\"1\">\nx = 1\nprint(x)\n</cell>"), "{out}");
    assert!(out.contains("<output type=\"stream\">\n1\n</output>"));
    assert!(out.contains("<cell id=\"def\" index=\"1\" type=\"markdown\">\n# Done\n</cell>"));
}

/// A file system not known to be local (sysfs stands in for NFS or FUSE, which a test cannot
/// mount) is read on the blocking pool, first bytes included; the answer is the same.
#[tokio::test]
async fn files_on_other_file_systems_are_read_through_the_pool() {
    let dir = "/sys/devices/system/cpu";
    let file = format!("{dir}/online");
    let expected = std::fs::read_to_string(&file).unwrap();
    let env = Env::with(FileToolsConfig::default(), |b| b.add_dir(dir));
    let out = env.ok("Read", json!({"file_path": file})).await;
    assert_eq!(out, format!("     1\t{}", expected));
}

#[tokio::test]
async fn files_around_the_sniff_size_are_read_whole_and_hashed_whole() {
    // Files smaller than the 8,000 bytes looked at to tell text from binary are taken from
    // that first read; larger ones are read again. Either way the whole content is shown
    // and the ledger holds the hash of exactly that content.
    use sha2::Digest as _;
    use toolgate_tools::Fingerprint;
    let env = Env::new();
    for size in [1usize, 7_999, 8_000, 8_001, 16_001] {
        let mut text = String::new();
        let mut n = 0;
        while text.len() < size {
            n += 1;
            text.push_str(&format!("{n:09}\n"));
        }
        text.truncate(size - 1);
        text.push('$');
        let name = format!("f{size}.txt");
        env.write(&name, &text);
        let out = env.ok("Read", json!({"file_path": name})).await;
        let last = text.rsplit('\n').next().unwrap();
        assert!(out.ends_with(&format!("\t{last}\n")), "size {size}: {out}");
        assert_eq!(out.lines().count(), text.lines().count(), "size {size}");
        let rec = read_record(env.gate.session(), &env.path(&name)).unwrap();
        let want: [u8; 32] = sha2::Sha256::digest(text.as_bytes()).into();
        assert_eq!(rec.fingerprint, Fingerprint::Content(want), "size {size}");
        assert!(!rec.partial, "size {size}");
    }
    // The hash limit still applies to content taken from the first read.
    let config = FileToolsConfig {
        hash_max_bytes: 100,
        ..FileToolsConfig::default()
    };
    let env = Env::with(config, |b| b);
    env.write(
        "nb.ipynb",
        &format!("{{\"cells\": [], \"x\": \"{}\"}}", "a".repeat(200)),
    );
    let e = env.err("Read", json!({"file_path": "nb.ipynb"})).await;
    assert_code(
        &e,
        ErrorCode::InvalidRequest,
        "is 222 bytes, over the 100-byte limit",
    );
}
