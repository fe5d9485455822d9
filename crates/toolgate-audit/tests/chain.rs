//! The hash chain: good, edited, deleted, reordered, torn and recovered logs.

mod common;

use common::{lines, make_log, write_lines};
use serde_json::json;
use toolgate_audit::{
    AuditError, AuditLog, AuditOptions, FsyncPolicy, GENESIS_HASH, Redactor, TamperKind,
    VerifyStatus, verify, verify_reader,
};

fn tampered_at(status: &VerifyStatus) -> (u64, TamperKind) {
    match status {
        VerifyStatus::Tampered { line, kind, .. } => (*line, *kind),
        other => panic!("expected tampered, got {other:?}"),
    }
}

#[test]
fn good_chain_verifies_and_reports_head() {
    let (_d, path) = make_log(5);
    let log = AuditLog::open(&path, FsyncPolicy::Always).unwrap();
    let head = log.head();
    assert_eq!(head.seq, 5);
    let r = verify(&path).unwrap();
    assert_eq!(r.status, VerifyStatus::Ok);
    assert_eq!((r.records, r.lines, r.head_seq), (5, 5, 5));
    assert_eq!(r.head_hash, head.hash);
    assert!(r.warnings.is_empty());
    assert_eq!(r.exit_code(), toolgate_audit::EXIT_OK);
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["records"], 5);
    // Line shape: seq, prev first; hash last; genesis prev.
    let first: serde_json::Value = serde_json::from_slice(&lines(&path)[0]).unwrap();
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["seq", "prev", "kind", "tool", "i", "hash"]);
    assert_eq!(first["prev"], GENESIS_HASH);
}

#[test]
fn empty_file_is_ok() {
    let r = verify_reader(&b""[..]).unwrap();
    assert_eq!(
        (r.status, r.records, r.head_hash.as_str()),
        (VerifyStatus::Ok, 0, GENESIS_HASH)
    );
}

#[test]
fn edited_field_is_bad_hash_at_that_line() {
    let (_d, path) = make_log(5);
    let mut l = lines(&path);
    l[2] = String::from_utf8(l[2].clone())
        .unwrap()
        .replace("Bash", "Read")
        .into_bytes();
    write_lines(&path, &l);
    let r = verify(&path).unwrap();
    assert_eq!(tampered_at(&r.status), (3, TamperKind::BadHash));
    assert_eq!(r.records, 2);
    assert_eq!(r.exit_code(), toolgate_audit::EXIT_TAMPERED);
    assert!(r.render(&path).contains("TAMPERED at line 3"));
}

#[test]
fn edit_with_recomputed_hash_is_caught_on_the_next_line() {
    let (_d, path) = make_log(4);
    let mut l = lines(&path);
    // Rebuild line 2 with a different record but a correct own hash.
    let mut v: serde_json::Value = serde_json::from_slice(&l[1]).unwrap();
    let prev = v["prev"].as_str().unwrap().to_owned();
    let obj = v.as_object_mut().unwrap();
    obj.remove("hash");
    let body = format!(r#"{{"seq":2,"prev":"{prev}","kind":"call","tool":"Read","i":2}}"#);
    let hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(body.as_bytes()))
    };
    l[1] = format!("{},\"hash\":\"{hash}\"}}\n", &body[..body.len() - 1]).into_bytes();
    write_lines(&path, &l);
    assert_eq!(
        tampered_at(&verify(&path).unwrap().status),
        (3, TamperKind::PrevMismatch)
    );
}

#[test]
fn deleted_line_is_prev_mismatch_at_its_place() {
    for k in [1usize, 3] {
        let (_d, path) = make_log(5);
        let mut l = lines(&path);
        l.remove(k - 1);
        write_lines(&path, &l);
        let r = verify(&path).unwrap();
        assert_eq!(
            tampered_at(&r.status),
            (k as u64, TamperKind::PrevMismatch),
            "k={k}"
        );
    }
}

#[test]
fn reordered_lines_are_caught_at_the_first_swapped() {
    let (_d, path) = make_log(5);
    let mut l = lines(&path);
    l.swap(1, 3);
    write_lines(&path, &l);
    assert_eq!(
        tampered_at(&verify(&path).unwrap().status),
        (2, TamperKind::PrevMismatch)
    );
}

#[test]
fn duplicated_line_is_caught() {
    let (_d, path) = make_log(3);
    let mut l = lines(&path);
    l.insert(2, l[1].clone());
    write_lines(&path, &l);
    assert_eq!(
        tampered_at(&verify(&path).unwrap().status),
        (3, TamperKind::PrevMismatch)
    );
}

#[test]
fn torn_last_line_is_distinct_from_tampering() {
    let (_d, path) = make_log(5);
    let bytes = std::fs::read(&path).unwrap();
    let cut = bytes.len() - 40;
    std::fs::write(&path, &bytes[..cut]).unwrap();
    let r = verify(&path).unwrap();
    let VerifyStatus::TornTail { line, bytes: torn } = r.status else {
        panic!("{r:?}")
    };
    assert_eq!(line, 5);
    assert_eq!(r.records, 4);
    assert_eq!(torn as usize, lines(&path)[4].len());
    assert_eq!(r.exit_code(), toolgate_audit::EXIT_TORN_TAIL);
    assert!(r.render(&path).contains("TORN TAIL at line 5"));
}

#[test]
fn torn_line_then_reopen_recovers_with_a_warning() {
    let (_d, path) = make_log(5);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    let log = AuditLog::open(&path, FsyncPolicy::Batch).unwrap();
    // The recovery record took seq 5 (the torn record never made it).
    assert_eq!(log.head().seq, 5);
    let next = log
        .append(&json!({"kind": "call", "tool": "Read"}))
        .unwrap();
    assert_eq!(next.seq, 6);
    drop(log);
    let r = verify(&path).unwrap();
    assert_eq!(r.status, VerifyStatus::Ok, "{r:?}");
    assert_eq!((r.records, r.lines), (6, 7));
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].line, 5);
    let l = lines(&path);
    let rec: serde_json::Value = serde_json::from_slice(&l[5]).unwrap();
    assert_eq!(rec["kind"], "recovery");
    assert_eq!(rec["torn_bytes"].as_u64().unwrap() as usize, l[4].len() - 1);

    // Removing the torn fragment afterwards is caught: the recovery names bytes not there.
    let mut l2 = l.clone();
    l2.remove(4);
    write_lines(&path, &l2);
    assert_eq!(
        tampered_at(&verify(&path).unwrap().status),
        (5, TamperKind::RecoveryMismatch)
    );
    // Editing the fragment is caught too (its sha256 is in the recovery record).
    let mut l3 = l.clone();
    l3[4][10] ^= 1;
    write_lines(&path, &l3);
    assert_eq!(tampered_at(&verify(&path).unwrap().status).0, 5);
}

#[test]
fn torn_first_record_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    std::fs::write(&path, br#"{"seq":1,"prev":"000"#).unwrap();
    assert!(matches!(
        verify(&path).unwrap().status,
        VerifyStatus::TornTail { line: 1, .. }
    ));
    let log = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    log.append(&json!({"kind": "call"})).unwrap();
    let r = verify(&path).unwrap();
    assert_eq!(
        (r.status, r.records, r.warnings.len()),
        (VerifyStatus::Ok, 2, 1)
    );
}

#[test]
fn complete_record_missing_only_its_newline_is_kept() {
    let (_d, path) = make_log(3);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    assert!(matches!(
        verify(&path).unwrap().status,
        VerifyStatus::TornTail { line: 3, .. }
    ));
    let log = AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    assert_eq!(log.head().seq, 3);
    log.append(&json!({"kind": "call"})).unwrap();
    let r = verify(&path).unwrap();
    assert_eq!(
        (r.status, r.records, r.warnings.len()),
        (VerifyStatus::Ok, 4, 0)
    );
}

#[test]
fn garbage_and_invalid_utf8_are_tampered_at_line_1_without_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.jsonl");
    let cases: Vec<Vec<u8>> = vec![
        b"\xff\xfe\x00garbage\n".to_vec(),
        b"\xff\xfe\x00garbage".to_vec(),
        b"hello world\nmore\n".to_vec(),
        b"\n".to_vec(),
        b"{\"seq\":1}\n".to_vec(),
        [b"{\"seq\":1,".as_slice(), &[0xc3, 0x28], b"\n"].concat(),
        (0..=255u8).cycle().take(100_000).collect(),
    ];
    for bytes in cases {
        std::fs::write(&path, &bytes).unwrap();
        let r = verify(&path).unwrap();
        assert_eq!(
            tampered_at(&r.status).0,
            1,
            "{:?}",
            String::from_utf8_lossy(&bytes[..20.min(bytes.len())])
        );
        assert!(matches!(
            AuditLog::open(&path, FsyncPolicy::Never),
            Err(AuditError::CorruptTail { .. })
        ));
        // Reading does not verify; it only must not panic.
        assert!(toolgate_audit::read_records(&path).unwrap().count() >= 1);
        assert!(toolgate_audit::tail(&path, 3).is_ok());
        assert!(toolgate_audit::stats(&path).is_ok());
    }
}

#[test]
fn garbage_after_good_records_is_tampered_and_the_writer_refuses() {
    let (_d, path) = make_log(3);
    let mut l = lines(&path);
    l.push(b"not a record\n".to_vec());
    write_lines(&path, &l);
    assert_eq!(
        tampered_at(&verify(&path).unwrap().status),
        (4, TamperKind::Unparseable)
    );
    let err = AuditLog::open(&path, FsyncPolicy::Never).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("audit.jsonl") && msg.contains("toolgate audit verify"),
        "{msg}"
    );
}

#[test]
fn huge_lines_are_reported_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.jsonl");
    let mut big = vec![b'a'; toolgate_audit::MAX_LINE_BYTES + 10];
    big.push(b'\n');
    std::fs::write(&path, &big).unwrap();
    assert_eq!(
        tampered_at(&verify(&path).unwrap().status),
        (1, TamperKind::TooLong)
    );
    let items: Vec<_> = toolgate_audit::read_records(&path).unwrap().collect();
    assert_eq!(items.len(), 1);
    assert!(
        items[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("over the")
    );
    big.pop();
    std::fs::write(&path, &big).unwrap();
    assert_eq!(
        tampered_at(&verify(&path).unwrap().status),
        (1, TamperKind::TooLong)
    );
    assert!(AuditLog::open(&path, FsyncPolicy::Never).is_err());
}

#[test]
fn records_must_be_objects_without_reserved_fields_and_not_too_large() {
    let (_d, path) = make_log(0);
    let options = AuditOptions {
        fsync: FsyncPolicy::Never,
        redactor: Redactor::disabled(),
        ..AuditOptions::default()
    };
    let log = AuditLog::open_with(&path, options).unwrap();
    assert!(matches!(
        log.append(&json!([1])),
        Err(AuditError::NotAnObject { .. })
    ));
    assert!(matches!(
        log.append("s"),
        Err(AuditError::NotAnObject { .. })
    ));
    for f in ["seq", "prev", "hash"] {
        let e = log.append(&json!({ f: 1 })).unwrap_err();
        assert!(matches!(e, AuditError::ReservedField { .. }), "{e}");
    }
    let big = "x".repeat(toolgate_audit::MAX_LINE_BYTES);
    assert!(matches!(
        log.append(&json!({"b": big})),
        Err(AuditError::TooLarge { .. })
    ));
    assert_eq!(log.append(&json!({})).unwrap().seq, 1);
    assert_eq!(verify(&path).unwrap().records, 1);
}

#[test]
fn unwritable_paths_give_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("regular");
    std::fs::write(&file, b"x").unwrap();
    for path in [
        file.join("audit.jsonl"),
        file.join("sub/audit.jsonl"),
        dir.path().to_owned(),
    ] {
        let err = AuditLog::open(&path, FsyncPolicy::Always).unwrap_err();
        assert!(matches!(err, AuditError::Open { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains(&*path.to_string_lossy()) && msg.contains("writable"),
            "{msg}"
        );
    }
    let missing = verify(dir.path().join("nope")).unwrap_err();
    assert!(matches!(missing, AuditError::Read { .. }));
}

#[test]
fn creates_parent_dirs_and_private_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/audit.jsonl");
    AuditLog::open(&path, FsyncPolicy::Never).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn fsync_policy_parses_prints_and_serializes() {
    for (s, p) in [
        ("always", FsyncPolicy::Always),
        ("batch", FsyncPolicy::Batch),
        ("never", FsyncPolicy::Never),
    ] {
        assert_eq!(s.parse::<FsyncPolicy>().unwrap(), p);
        assert_eq!(p.to_string(), s);
        assert_eq!(serde_json::to_value(p).unwrap(), s);
        assert_eq!(serde_json::from_value::<FsyncPolicy>(json!(s)).unwrap(), p);
    }
    assert_eq!(
        "ALWAYS".parse::<FsyncPolicy>().unwrap(),
        FsyncPolicy::Always
    );
    let e = "sometimes".parse::<FsyncPolicy>().unwrap_err().to_string();
    assert!(e.contains("sometimes") && e.contains("always"), "{e}");
    assert_eq!(FsyncPolicy::default(), FsyncPolicy::Batch);
}

#[test]
fn every_policy_writes_a_valid_chain() {
    for p in [FsyncPolicy::Always, FsyncPolicy::Batch, FsyncPolicy::Never] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let log = AuditLog::open(&path, p).unwrap();
        for i in 0..67 {
            log.append(&json!({"i": i})).unwrap();
        }
        log.flush().unwrap();
        assert_eq!(log.fsync_policy(), p);
        drop(log);
        assert_eq!(verify(&path).unwrap().status, VerifyStatus::Ok);
    }
}

#[test]
fn a_crash_at_any_byte_of_the_last_write_is_never_tampering() {
    // What `kill -9` mid-write can leave: every prefix of the last line.
    let (_d, path) = make_log(3);
    let full = std::fs::read(&path).unwrap();
    let last_start = full.len() - lines(&path)[2].len();
    // Compile the redaction patterns once, not per open.
    let options = AuditOptions {
        fsync: FsyncPolicy::Never,
        redactor: Redactor::default(),
        ..AuditOptions::default()
    };
    for cut in last_start..=full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let r = verify(&path).unwrap();
        let expected_records = if cut == full.len() { 3 } else { 2 };
        assert!(
            matches!(
                r.status,
                VerifyStatus::Ok | VerifyStatus::TornTail { line: 3, .. }
            ),
            "cut {cut}: {r:?}"
        );
        assert_eq!(r.records, expected_records, "cut {cut}");
        let log = AuditLog::open_with(&path, options.clone()).unwrap();
        log.append(&json!({"after": cut})).unwrap();
        drop(log);
        assert_eq!(verify(&path).unwrap().status, VerifyStatus::Ok, "cut {cut}");
    }
}
