//! One object cache on disk (`<cache>/hip`, or a build's own under its output directory): its
//! layout, its entries and their verification, and the leftovers of builds that are gone.
//!
//! | path | what |
//! |---|---|
//! | `objects/<key>.o` | an object |
//! | `objects/<key>.sum` | its content hash and size, written before the object is renamed into place |
//! | `units/<unit id>.json` | a unit's record (see `key`) |
//! | `sources/<hash>.json` | the last compile of a source for a library |
//! | `leases/<pid>-<n>` | a running build's lease, locked while it runs (see `lease`) |
//! | `tmp/<pid>-<n>/` | that build's scratch: objects being compiled, depfiles, the compilers' `TMPDIR` |
//! | `lock` | taken to store an entry, evict, or record a build; names its holder |
//! | `builds.json` | the last builds' hits and compiles |

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::io::write_atomic;
use crate::compile::cache::key::{Invocation, UnitRecord};

/// One cache directory.
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    pub root: PathBuf,
}

/// Why an entry cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// No object under the key.
    Missing,
    /// The object is not what was stored (its hash or size differs, or its hash was never
    /// written): what is wrong, in words.
    Corrupt(String),
}

impl Layer {
    pub(crate) fn new(root: PathBuf) -> Layer {
        Layer { root }
    }

    pub(crate) fn object(&self, key: &str) -> PathBuf {
        self.root.join("objects").join(format!("{key}.o"))
    }

    fn sum(&self, key: &str) -> PathBuf {
        self.root.join("objects").join(format!("{key}.sum"))
    }

    pub(crate) fn record_path(&self, unit_id: &str) -> PathBuf {
        self.root.join("units").join(format!("{unit_id}.json"))
    }

    pub(crate) fn last_path(&self, library: &str, source: &str) -> PathBuf {
        let digest = blake3::hash(format!("{library}\0{source}").as_bytes()).to_hex();
        self.root
            .join("sources")
            .join(format!("{}.json", &digest[..32]))
    }

    pub(crate) fn leases(&self) -> PathBuf {
        self.root.join("leases")
    }

    pub(crate) fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    pub(crate) fn lock(&self) -> PathBuf {
        self.root.join("lock")
    }

    pub(crate) fn builds(&self) -> PathBuf {
        self.root.join("builds.json")
    }

    /// A unit's record.
    pub(crate) fn record(&self, unit_id: &str) -> Option<UnitRecord> {
        let bytes = std::fs::read(self.record_path(unit_id)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The last compile of `source` for `library`.
    pub(crate) fn last(&self, library: &str, source: &str) -> Option<Invocation> {
        let bytes = std::fs::read(self.last_path(library, source)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Whether an object is stored under `key` (not yet verified).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.object(key).is_file()
    }

    /// Checks the object under `key` against the hash stored with it.
    pub(crate) fn verify(&self, key: &str) -> Result<(), Unusable> {
        let object = self.object(key);
        let bytes = match std::fs::read(&object) {
            Ok(bytes) => bytes,
            Err(e) if crate::common::io::is_absent(&e) => return Err(Unusable::Missing),
            Err(e) => return Err(Unusable::Corrupt(format!("cannot read it: {e}"))),
        };
        let Ok(sum) = std::fs::read_to_string(self.sum(key)) else {
            return Err(Unusable::Corrupt("its content hash is missing".to_string()));
        };
        let expected = sum.trim();
        let found = sum_line(&bytes);
        if found == expected {
            Ok(())
        } else {
            Err(Unusable::Corrupt(format!(
                "its content is not what was stored (stored {expected}, found {found})"
            )))
        }
    }

    /// Stores `object` (a file in this layer's `tmp/`, renamed; elsewhere, copied) under `key`:
    /// its hash first, then the object, each written whole. The caller holds the lock.
    pub(crate) fn store(&self, key: &str, object: &Path) -> std::io::Result<()> {
        let bytes = std::fs::read(object)?;
        let dir = self.root.join("objects");
        std::fs::create_dir_all(&dir)?;
        write_atomic(&self.sum(key), sum_line(&bytes).as_bytes()).map_err(|e| e.source)?;
        let target = self.object(key);
        if std::fs::rename(object, &target).is_err() {
            write_atomic(&target, &bytes).map_err(|e| e.source)?;
            let _ = std::fs::remove_file(object);
        }
        Ok(())
    }

    /// Removes the entry under `key` (object and hash).
    pub(crate) fn remove(&self, key: &str) -> bool {
        let removed = std::fs::remove_file(self.object(key)).is_ok();
        let _ = std::fs::remove_file(self.sum(key));
        removed
    }

    /// Removes every unit's record and every source's last settings (written whole, so a
    /// record being written by a running build is a temporary file, left alone); returns how
    /// many unit records it removed.
    pub(crate) fn remove_records(&self) -> usize {
        let mut units = 0;
        for dir in ["units", "sources"] {
            for entry in read_dir(&self.root.join(dir)) {
                let name = entry.file_name();
                let record = name.to_string_lossy().ends_with(".json");
                if record && std::fs::remove_file(entry.path()).is_ok() && dir == "units" {
                    units += 1;
                }
            }
        }
        units
    }

    /// Removes what builds that are gone left (their scratch directories, temporary files of
    /// entries being written, hashes without an object); returns the bytes removed. `live`: the
    /// names of the leases still held.
    pub(crate) fn remove_leftovers(&self, live: &BTreeSet<String>) -> u64 {
        let mut freed = 0;
        for (path, bytes) in self.leftovers(live) {
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            if removed.is_ok() {
                freed += bytes;
            }
        }
        freed
    }

    /// The leftovers [`Layer::remove_leftovers`] removes, with their sizes.
    fn leftovers(&self, live: &BTreeSet<String>) -> Vec<(PathBuf, u64)> {
        let mut found = Vec::new();
        for entry in read_dir(&self.tmp()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !live.contains(&name) {
                found.push((entry.path(), size_of(&entry.path())));
            }
        }
        let owner_gone = |name: &str| {
            // `write_atomic`'s temporary names end in `.tmp-<pid>-<n>`.
            let Some((_, tail)) = name.rsplit_once(".tmp-") else {
                return false;
            };
            let pid = tail.split('-').next().unwrap_or_default();
            !live.iter().any(|l| l.split('-').next() == Some(pid))
        };
        for dir in ["units", "sources", "objects"] {
            for entry in read_dir(&self.root.join(dir)) {
                let name = entry.file_name().to_string_lossy().into_owned();
                let orphan_sum = name
                    .strip_suffix(".sum")
                    .is_some_and(|key| dir == "objects" && !self.object(key).exists());
                if (name.starts_with('.') && owner_gone(&name)) || orphan_sum {
                    found.push((entry.path(), size_of(&entry.path())));
                }
            }
        }
        found
    }

    /// Bytes of everything but the objects: hashes, records, scratch, leftovers.
    pub(crate) fn other_bytes(&self) -> u64 {
        ["units", "sources", "tmp", "leases"]
            .iter()
            .map(|d| size_of(&self.root.join(d)))
            .sum::<u64>()
            + read_dir(&self.root.join("objects"))
                .into_iter()
                .filter(|e| !e.file_name().to_string_lossy().ends_with(".o"))
                .map(|e| size_of(&e.path()))
                .sum::<u64>()
    }

    /// The scratch directories and temporary files of builds that are gone: how many, and
    /// their bytes.
    pub(crate) fn leftover_count(&self, live: &BTreeSet<String>) -> (usize, u64) {
        let found = self.leftovers(live);
        (found.len(), found.iter().map(|(_, b)| b).sum())
    }
}

/// `<blake3 hex> <size>` of an object's bytes: what its `.sum` holds.
fn sum_line(bytes: &[u8]) -> String {
    format!("{} {}", blake3::hash(bytes).to_hex(), bytes.len())
}

fn read_dir(dir: &Path) -> Vec<std::fs::DirEntry> {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().collect())
        .unwrap_or_default()
}

/// The bytes of a file, or of everything under a directory (symlinks not followed).
fn size_of(path: &Path) -> u64 {
    let Ok(meta) = path.symlink_metadata() else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    read_dir(path).iter().map(|e| size_of(&e.path())).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(layer: &Layer, key: &str, bytes: &[u8]) {
        std::fs::create_dir_all(layer.tmp()).unwrap();
        let scratch = layer.tmp().join("x.o");
        std::fs::write(&scratch, bytes).unwrap();
        layer.store(key, &scratch).unwrap();
    }

    #[test]
    fn an_object_is_verified_against_the_hash_stored_with_it() {
        let tmp = tempfile::tempdir().unwrap();
        let layer = Layer::new(tmp.path().join("hip"));
        assert_eq!(layer.verify("k"), Err(Unusable::Missing));
        stored(&layer, "k", &[7u8; 4096]);
        assert_eq!(layer.verify("k"), Ok(()));
        // 64 bytes flipped, same size.
        let mut bytes = std::fs::read(layer.object("k")).unwrap();
        for b in &mut bytes[100..164] {
            *b ^= 0xff;
        }
        std::fs::write(layer.object("k"), &bytes).unwrap();
        assert!(
            matches!(layer.verify("k"), Err(Unusable::Corrupt(why)) if why.contains("not what was stored"))
        );
        // Truncated.
        stored(&layer, "k", &[7u8; 4096]);
        std::fs::write(layer.object("k"), &bytes[..1000]).unwrap();
        assert!(matches!(layer.verify("k"), Err(Unusable::Corrupt(_))));
        // No hash.
        std::fs::remove_file(layer.sum("k")).unwrap();
        assert!(
            matches!(layer.verify("k"), Err(Unusable::Corrupt(why)) if why.contains("hash is missing"))
        );
    }

    #[test]
    fn leftovers_of_gone_builds_are_found_and_removed_and_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let layer = Layer::new(tmp.path().join("hip"));
        for dir in ["tmp/111-0", "tmp/222-0", "units", "objects"] {
            std::fs::create_dir_all(layer.root.join(dir)).unwrap();
        }
        std::fs::write(layer.root.join("tmp/111-0/a.o"), [0u8; 10]).unwrap();
        std::fs::write(layer.root.join("tmp/222-0/b.o"), [0u8; 20]).unwrap();
        std::fs::write(layer.root.join("units/.u.json.tmp-111-3"), [0u8; 5]).unwrap();
        std::fs::write(layer.root.join("units/.v.json.tmp-222-1"), [0u8; 5]).unwrap();
        std::fs::write(layer.root.join("objects/gone.sum"), "x 1").unwrap();
        let live: BTreeSet<String> = ["222-0".to_string()].into();
        assert_eq!(layer.leftover_count(&live), (3, 18));
        assert_eq!(layer.remove_leftovers(&live), 18);
        assert!(layer.root.join("tmp/222-0/b.o").exists());
        assert!(layer.root.join("units/.v.json.tmp-222-1").exists());
        assert_eq!(layer.leftover_count(&live), (0, 0));
    }
}
