//! Unit tests of the security core; the same properties are tested through the Gate in
//! `tests/paths.rs`.

use std::os::unix::fs::symlink;
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use sha2::{Digest, Sha256};
use toolgate_core::{Session, SessionOptions, Workspace};

use super::*;

fn session(dir: &Path) -> Session {
    Session::new(Workspace::new(dir).unwrap(), SessionOptions::default())
}

#[test]
fn resolves_relative_missing_and_dotdot_paths() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    let s = session(&root);
    let r = resolve(&s, "sub/../new/file.txt").unwrap();
    assert_eq!(r.display, root.join("new/file.txt"));
    assert_eq!(r.real, root.join("new/file.txt"));
    assert_eq!(r.rel, Path::new("new/file.txt"));
    assert!(!r.exists);
    let r = resolve(&s, "sub").unwrap();
    assert!(r.exists && r.is_dir);
    assert!(matches!(
        resolve(&s, "../x"),
        Err(Error::OutsideRoots { .. })
    ));
    assert!(matches!(
        resolve(&s, "/proc/self/root/etc"),
        Err(Error::Proc(_))
    ));
    assert!(matches!(resolve(&s, ""), Err(Error::BadPath { .. })));
    assert!(matches!(resolve(&s, "a\0b"), Err(Error::BadPath { .. })));
}

#[test]
fn symlinks_resolve_to_their_real_path() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("real.txt"), "x").unwrap();
    symlink(root.join("real.txt"), root.join("link.txt")).unwrap();
    symlink(out.path(), root.join("out")).unwrap();
    symlink(root.join("missing"), root.join("dangling")).unwrap();
    let s = session(&root);
    let r = resolve(&s, "link.txt").unwrap();
    assert_eq!(r.real, root.join("real.txt"));
    assert_eq!(r.display, root.join("link.txt"));
    assert!(matches!(
        resolve(&s, "out/x"),
        Err(Error::OutsideRoots { .. })
    ));
    assert!(matches!(resolve(&s, "dangling"), Err(Error::Dangling(_))));
    assert!(matches!(resolve(&s, "dangling/x"), Err(Error::Dangling(_))));
}

fn both_ways(root: &Path) -> [RootDir; 2] {
    [
        RootDir::open(root).unwrap(),
        RootDir::open(root).unwrap().forcing_walk(),
    ]
}

#[test]
fn opening_beneath_refuses_symlinks_dotdot_and_absolute_paths() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/f.txt"), "ok").unwrap();
    std::fs::write(out.path().join("f.txt"), "secret").unwrap();
    symlink(out.path(), root.join("swapped")).unwrap();
    symlink(out.path().join("f.txt"), root.join("d/link.txt")).unwrap();
    for rd in both_ways(&root) {
        let read = |rel: &str| rd.open_beneath(Path::new(rel), OFlags::RDONLY, Mode::empty());
        assert!(read("d/f.txt").is_ok());
        assert!(read("").is_ok(), "the root itself");
        assert!(read("swapped/f.txt").is_err());
        assert!(read("d/link.txt").is_err());
        assert!(read("../f.txt").is_err());
        assert!(read("d/../../f.txt").is_err());
        assert!(read("/etc/passwd").is_err());
        let opened = open_file(&rd, Path::new("d/f.txt"), &root.join("d/f.txt"), false).unwrap();
        assert_eq!(opened.size(), 2);
        assert!(matches!(
            open_file(&rd, Path::new("d"), &root.join("d"), false),
            Err(Error::IsDirectory(_))
        ));
        assert!(matches!(
            open_file(
                &rd,
                Path::new("swapped/f.txt"),
                &root.join("swapped/f.txt"),
                false
            ),
            Err(Error::Escaped(_))
        ));
        assert!(matches!(
            open_file(&rd, Path::new("nope"), &root.join("nope"), false),
            Err(Error::NotFound(_))
        ));
    }
}

#[test]
fn atomic_writes_check_what_they_replace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (i, rd) in both_ways(&root).into_iter().enumerate() {
        let name = format!("f{i}.txt");
        let rel = Path::new(&name);
        let real = root.join(rel);
        let opts = |expect| WriteOptions {
            create_parents: true,
            expect,
            allow_hard_links: false,
        };
        write_atomic(&rd, rel, &real, b"one", opts(Expect::Absent)).unwrap();
        assert!(matches!(
            write_atomic(&rd, rel, &real, b"two", opts(Expect::Absent)),
            Err(Error::NotRead(_))
        ));
        let wrong: [u8; 32] = Sha256::digest(b"other").into();
        assert!(matches!(
            write_atomic(&rd, rel, &real, b"two", opts(Expect::Content(wrong))),
            Err(Error::Stale(_))
        ));
        let right: [u8; 32] = Sha256::digest(b"one").into();
        write_atomic(&rd, rel, &real, b"two", opts(Expect::Content(right))).unwrap();
        assert_eq!(std::fs::read(&real).unwrap(), b"two");
        let nested = Path::new("a/b/c.txt");
        write_atomic(&rd, nested, &root.join(nested), b"n", opts(Expect::Absent)).unwrap_or(());
    }
    assert_eq!(std::fs::read(root.join("a/b/c.txt")).unwrap(), b"n");
    let leftovers: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("toolgate-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn protected_paths_are_judged_relative_to_their_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let s = session(&root);
    assert!(is_protected_in(&s, &root.join(".git/config")));
    assert!(is_protected_in(&s, &root.join(".bashrc")));
    assert!(!is_protected_in(&s, &root.join("src/lib.rs")));
}

#[test]
fn tilde_expands_to_home() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path());
    if let Some(home) = std::env::var_os("HOME") {
        let home = std::path::PathBuf::from(home);
        assert_eq!(
            absolute(&s, "~/x/../y").unwrap(),
            normalize_lexically(&home.join("y"))
        );
        assert_eq!(absolute(&s, "~").unwrap(), normalize_lexically(&home));
    }
    assert!(matches!(
        absolute(&s, "~other/x"),
        Err(Error::BadPath { .. })
    ));
}

#[test]
fn real_paths_agree_with_realpath_on_odd_names_chains_and_special_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let deep = root.join("a/b/c/d");
    std::fs::create_dir_all(&deep).unwrap();
    // A name the kernel's answer for a deleted file would look like, and names with a
    // newline and non-UTF-8 bytes: the real path must be the name itself.
    let odd = [
        OsString::from("kept (deleted)"),
        OsString::from("line\nbreak"),
        OsString::from_vec(b"bytes\xff\xfe".to_vec()),
    ];
    for name in &odd {
        std::fs::write(deep.join(name), "x").unwrap();
    }
    // A chain of relative and absolute symlinks, through a directory link.
    symlink("a/b", root.join("to_b")).unwrap();
    symlink(root.join("to_b/c"), root.join("to_c")).unwrap();
    symlink("d/kept (deleted)", root.join("a/b/c/hop")).unwrap();
    symlink("../to_c/hop", root.join("a/back")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        deep.join("fifo"),
        rustix::fs::FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let mut cases: Vec<PathBuf> = odd.iter().map(|n| deep.join(n)).collect();
    cases.extend(
        [
            "to_b",
            "to_c/d",
            "to_c/hop",
            "a/back",
            "a/b/c/d/fifo",
            "to_b/c/d/line\nbreak",
        ]
        .map(|p| root.join(p)),
    );
    let s = session(&root);
    for abs in cases {
        let want = std::fs::canonicalize(&abs).unwrap();
        let (real, is_dir) = real_path(&abs).unwrap();
        assert_eq!(real, want, "{abs:?}");
        assert_eq!(is_dir, Some(want.is_dir()), "{abs:?}");
        // Non-UTF-8 names cannot come from a model; the others go through `resolve` too.
        if let Some(raw) = abs.to_str() {
            let r = resolve(&s, raw).unwrap();
            assert_eq!((r.real, r.exists), (want, true), "{abs:?}");
        }
    }
    // Missing tails under a link and a dangling link keep their old answers.
    let (real, is_dir) = real_path(&root.join("to_c/new/file")).unwrap();
    assert_eq!((real, is_dir), (root.join("a/b/c/new/file"), None));
    symlink("nowhere", root.join("dangling")).unwrap();
    assert!(matches!(
        real_path(&root.join("dangling")),
        Err(Error::Dangling(_))
    ));
    std::fs::write(root.join("file"), "x").unwrap();
    assert!(matches!(
        real_path(&root.join("file/x")),
        Err(Error::BadPath { .. })
    ));
    symlink("loop2", root.join("loop1")).unwrap();
    symlink("loop1", root.join("loop2")).unwrap();
    assert!(real_path(&root.join("loop1")).is_err());
}
