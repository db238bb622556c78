//! Failures say what is true and leave nothing behind: after each, the directory that would
//! hold the checkout lists exactly what it listed before (the lock file beside a checkout is
//! kept: removing a lock others may wait on is not safe).

mod common;

use std::path::Path;

use common::*;
use qola_build::{ErrorKind, PrepareError};

/// The entries of `dir`, recursively, relative to it; the lock files left out.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if name.ends_with(".qola-lock") {
                continue;
            }
            if path.symlink_metadata().unwrap().is_dir() {
                stack.push(path);
            }
            out.push(name);
        }
    }
    out.sort();
    out
}

#[test]
fn a_first_prepare_whose_patch_fails_leaves_no_checkout() {
    let s = setup();
    s.add_patch(
        "0004-does-not-apply.patch",
        "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# not what is there\n+# mine\n",
    );
    let work = s.root.parent().unwrap();
    std::fs::create_dir_all(work).unwrap();
    let before = listing(work);
    let e = s.options().try_prepare().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Patch, "{e}");
    assert!(e.to_string().contains("nothing was written"), "{e}");
    assert_eq!(listing(work), before, "{e}");
    // An empty directory given as the root stays, empty.
    std::fs::create_dir(&s.root).unwrap();
    let before = listing(work);
    s.options().try_prepare().unwrap_err();
    assert_eq!(listing(work), before);
}

#[test]
fn a_root_that_is_a_file_is_named_as_such_and_nothing_is_left() {
    let s = setup();
    let work = s.root.parent().unwrap();
    write(work, "aiter", "a file, not a checkout\n");
    let before = listing(work);
    let e = s.options().try_prepare().unwrap_err();
    assert!(matches!(e, PrepareError::NotACheckout { .. }), "{e}");
    assert!(e.to_string().contains("is a file"), "{e}");
    assert_eq!(listing(work), before);
}

#[test]
fn a_clone_that_fails_leaves_no_temporary_directory() {
    let s = setup();
    let work = s.root.parent().unwrap();
    std::fs::create_dir_all(work).unwrap();
    let before = listing(work);
    let e = s
        .options()
        .url(s.tmp.path().join("no-such-upstream").to_string_lossy())
        .try_prepare()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Fetch, "{e}");
    assert_eq!(listing(work), before, "{e}");
}
