//! A minimal reader of git's index file (versions 2, 3 and 4, SHA-1): the entries' paths, modes,
//! object ids and stages, nothing else. It exists for the no-op check only: libgit2 re-hashes the
//! whole index with its collision-detecting SHA-1 on every read, which costs more than the rest of
//! the check. Anything unexpected makes it return `None`, and the full libgit2 scan decides.

use std::path::Path;

/// What the no-op check needs of the index: a digest of every entry's path, mode, id and stage
/// (stat data and the checksum trailer are left out, so an index refreshed by `git status` has
/// the same digest).
pub(crate) fn content_digest(index: &Path) -> Option<[u8; 32]> {
    content_digest_of(&std::fs::read(index).ok()?)
}

/// The index's file entries (submodule entries left out): paths and their digest, in one read.
pub(crate) fn file_paths_and_digest(index: &Path) -> Option<(Vec<String>, [u8; 32])> {
    let data = std::fs::read(index).ok()?;
    let mut paths = Vec::new();
    for_each_entry(&data, |path, mode, _, _| {
        if mode != crate::prepare::git::state::MODE_GITLINK {
            paths.push(crate::common::tree_path::key(path));
        }
    })?;
    Some((paths, content_digest_of(&data)?))
}

/// [`content_digest`] of index bytes already read.
fn content_digest_of(data: &[u8]) -> Option<[u8; 32]> {
    let mut hasher = blake3::Hasher::new();
    for_each_entry(data, |path, mode, id, stage| {
        hasher.update(&(path.len() as u32).to_le_bytes());
        hasher.update(path);
        hasher.update(&mode.to_le_bytes());
        hasher.update(id);
        hasher.update(&[stage]);
    })?;
    Some(*hasher.finalize().as_bytes())
}

fn be32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// Calls `f(path, mode, id, stage)` for each entry; `None` when the file is not an index this
/// reader understands.
fn for_each_entry(data: &[u8], mut f: impl FnMut(&[u8], u32, &[u8], u8)) -> Option<()> {
    const FIXED: usize = 62; // stat fields (40) + id (20) + flags (2)
    if data.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(data, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(data, 8)? as usize;
    let mut at = 12;
    let mut path: Vec<u8> = Vec::new();
    for _ in 0..count {
        let entry = at;
        let mode = be32(data, entry + 24)?;
        let id = data.get(entry + 40..entry + 60)?;
        let flags = u16::from_be_bytes(data.get(entry + 60..entry + 62)?.try_into().ok()?);
        let stage = ((flags >> 12) & 0x3) as u8;
        let mut name = entry + FIXED;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            name += 2;
        }
        if version == 4 {
            // Prefix compression: drop N bytes of the previous path, then a NUL-terminated suffix.
            let (strip, used) = offset_varint(data.get(name..)?)?;
            let keep = path.len().checked_sub(strip)?;
            path.truncate(keep);
            let suffix_start = name + used;
            let end = suffix_start + data.get(suffix_start..)?.iter().position(|b| *b == 0)?;
            path.extend_from_slice(&data[suffix_start..end]);
            at = end + 1;
        } else {
            let end = name + data.get(name..)?.iter().position(|b| *b == 0)?;
            path.clear();
            path.extend_from_slice(&data[name..end]);
            // NUL padding to a multiple of 8 bytes from the entry's start.
            let length = end - entry;
            at = entry + (length + 8) / 8 * 8;
        }
        f(&path, mode, id, stage);
    }
    Some(())
}

/// git's "offset" varint (as in OFS_DELTA): returns the value and the bytes used.
fn offset_varint(data: &[u8]) -> Option<(usize, usize)> {
    let mut used = 0;
    let mut byte = *data.first()?;
    let mut value = (byte & 0x7f) as usize;
    while byte & 0x80 != 0 {
        used += 1;
        byte = *data.get(used)?;
        value = value.checked_add(1)?.checked_shl(7)? | (byte & 0x7f) as usize;
    }
    Some((value, used + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(index: &Path) -> Vec<(String, u32, String, u8)> {
        let data = std::fs::read(index).unwrap();
        let mut out = Vec::new();
        for_each_entry(&data, |p, m, id, s| {
            let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
            out.push((String::from_utf8_lossy(p).into_owned(), m, id, s));
        })
        .expect("a readable index");
        out
    }

    fn libgit2_entries(repo: &Path) -> Vec<(String, u32, String, u8)> {
        let repo = git2::Repository::open(repo).unwrap();
        let index = repo.index().unwrap();
        index
            .iter()
            .map(|e| {
                let stage = ((e.flags >> 12) & 0x3) as u8;
                (
                    String::from_utf8_lossy(&e.path).into_owned(),
                    e.mode,
                    e.id.to_string(),
                    stage,
                )
            })
            .collect()
    }

    #[test]
    fn every_index_version_reads_like_libgit2_reads_it() {
        let tmp = tempfile::tempdir().unwrap();
        let demo = qola_tests::Demo::create(tmp.path());
        let repo = &demo.aiter;
        // Long and similar names exercise padding and v4's prefix compression.
        for i in 0..20 {
            let name = format!(
                "deep/dir/with/a/long/name/file_{i:03}_{}.txt",
                "x".repeat(i)
            );
            qola_tests::write(repo, &name, format!("{i}\n"));
        }
        qola_tests::git(repo, &["add", "-A", "deep"]);
        qola_tests::write(repo, "intent.txt", "later\n");
        qola_tests::git(repo, &["add", "-N", "intent.txt"]);
        for version in ["2", "3", "4"] {
            qola_tests::git(repo, &["update-index", "--index-version", version]);
            let index = repo.join(".git/index");
            assert_eq!(
                entries(&index),
                libgit2_entries(repo),
                "index version {version}"
            );
            assert!(content_digest(&index).is_some());
        }
    }

    #[test]
    fn refreshing_stat_data_keeps_the_digest_and_staging_changes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let demo = qola_tests::Demo::create(tmp.path());
        let index = demo.aiter.join(".git/index");
        let before = content_digest(&index).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(demo.aiter.join("README.md"), "# AITER (qola demo)\n").unwrap();
        qola_tests::git(&demo.aiter, &["status", "--porcelain"]);
        assert_eq!(content_digest(&index).unwrap(), before);
        std::fs::write(demo.aiter.join("README.md"), "changed\n").unwrap();
        qola_tests::git(&demo.aiter, &["add", "README.md"]);
        assert_ne!(content_digest(&index).unwrap(), before);
    }

    #[test]
    fn garbage_is_not_an_index() {
        assert!(for_each_entry(b"DIRC\0\0\0\x09\0\0\0\x01", |_, _, _, _| {}).is_none());
        assert!(for_each_entry(b"not an index", |_, _, _, _| {}).is_none());
    }
}
