//! The journal's own tests: rollbacks after any number of writes, rescued changes, killed runs.

use super::*;

fn file(mode: u32, data: &str) -> FileContent {
    FileContent {
        mode,
        data: data.as_bytes().to_vec(),
    }
}

/// Every file, symlink and directory under `dir`, with content and mode.
fn listing(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                out.push(format!("{rel}/"));
                stack.push(p);
            } else if meta.file_type().is_symlink() {
                out.push(format!(
                    "{rel} -> {}",
                    std::fs::read_link(&p).unwrap().display()
                ));
            } else {
                out.push(format!(
                    "{rel} {:o} {}",
                    meta.permissions().mode() & 0o777,
                    std::fs::read_to_string(&p).unwrap()
                ));
            }
        }
    }
    out.sort();
    out
}

/// A tree, and every kind of change to it through a journal.
fn changes(tree: &Path, journal: &mut Journal) -> Result<()> {
    journal.write_file(&tree.join("a.txt"), &file(0o100755, "new a"))?;
    journal.write_file(&tree.join("new/deep/b.txt"), &file(0o100644, "b"))?;
    journal.write_file(&tree.join("link"), &file(MODE_SYMLINK, "a.txt"))?;
    journal.remove_file(&tree.join("gone.txt"))?;
    journal.remove_empty_dir(&tree.join("empty"))?;
    journal.move_path(&tree.join("aside"), &tree.join("backup/aside"))?;
    journal.save_git_file(&tree.join("index"))?;
    std::fs::write(tree.join("index"), "new index").unwrap();
    Ok(())
}

fn old_tree(tree: &Path) {
    std::fs::create_dir_all(tree.join("empty")).unwrap();
    std::fs::create_dir_all(tree.join("aside")).unwrap();
    std::fs::write(tree.join("a.txt"), "old a").unwrap();
    std::fs::write(tree.join("gone.txt"), "gone").unwrap();
    std::fs::write(tree.join("aside/mine.txt"), "mine").unwrap();
    std::fs::write(tree.join("index"), "old index").unwrap();
    std::fs::write(tree.join("link"), "was a file").unwrap();
}

#[test]
fn a_rollback_after_any_number_of_writes_leaves_the_tree_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    old_tree(&tree);
    let before = listing(&tree);
    for n in 0..20 {
        let git = tmp.path().join(format!("git-{n}"));
        let hooks = Hooks {
            fail_after_writes: Some(n),
            ..Hooks::default()
        };
        let mut journal = Journal::begin(&git, Kind::Prepare, "k", hooks).unwrap();
        let result = changes(&tree, &mut journal);
        journal.roll_back().unwrap();
        assert_eq!(listing(&tree), before, "after {n} writes");
        if result.is_ok() {
            return;
        }
    }
    panic!("the changes never completed");
}

#[test]
fn a_rollback_saves_what_someone_changed_after_qola_wrote_it_before_putting_the_old_file_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (tree, git) = (tmp.path().join("tree"), tmp.path().join("git"));
    old_tree(&tree);
    let before = listing(&tree);
    let mut journal = Journal::begin(&git, Kind::Prepare, "k", Hooks::default()).unwrap();
    changes(&tree, &mut journal).unwrap();
    // An editor saves a.txt after qola wrote it, and recreates a file qola removed.
    std::fs::write(tree.join("a.txt"), "the editor's a").unwrap();
    std::fs::write(tree.join("gone.txt"), "the editor's gone").unwrap();
    let undone = journal.roll_back().unwrap();
    assert_eq!(listing(&tree), before, "the tree is as it was");
    let backup = undone.backup.expect("a backup");
    // Undone last change first: the removal of gone.txt, then the write of a.txt.
    assert_eq!(undone.rescued, ["tree/gone.txt", "tree/a.txt"]);
    for (path, text) in [
        ("a.txt", "the editor's a"),
        ("gone.txt", "the editor's gone"),
    ] {
        let saved = std::fs::read_to_string(backup.join("tree").join(path)).unwrap();
        assert_eq!(saved, text);
    }
}

#[test]
fn a_journal_left_by_a_killed_run_is_rolled_back_by_the_next_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (tree, git) = (tmp.path().join("tree"), tmp.path().join("git"));
    old_tree(&tree);
    let before = listing(&tree);
    let mut journal = Journal::begin(&git, Kind::Prepare, "new key", Hooks::default()).unwrap();
    changes(&tree, &mut journal).unwrap();
    let n = journal.changes();
    drop(journal); // killed: never committed
    assert_ne!(listing(&tree), before);
    assert_eq!(pending(&git), Some((Kind::Prepare, n)));
    let found = recover(&git, Some("old key")).unwrap();
    assert_eq!(
        found,
        Some(Interrupted::RolledBack(Undone {
            changes: n,
            ..Undone::default()
        }))
    );
    assert_eq!(listing(&tree), before);
    assert_eq!(recover(&git, None).unwrap(), None, "the journal is gone");
}

#[test]
fn a_journal_whose_stamp_was_written_is_complete_and_a_clone_is_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let (tree, git) = (tmp.path().join("tree"), tmp.path().join("git"));
    old_tree(&tree);
    let mut journal = Journal::begin(&git, Kind::Prepare, "new key", Hooks::default()).unwrap();
    changes(&tree, &mut journal).unwrap();
    drop(journal);
    let after = listing(&tree);
    assert_eq!(
        recover(&git, Some("new key")).unwrap(),
        Some(Interrupted::Completed)
    );
    assert_eq!(listing(&tree), after, "a complete preparation is kept");
    Journal::begin(&git, Kind::Clone, "k", Hooks::default()).unwrap();
    assert_eq!(recover(&git, None).unwrap(), Some(Interrupted::Clone));
}
