//! Claims: one compile per unit, however many builds run at once. A build about to compile a
//! unit claims it (`claims/<unit id>` in the shared cache, an `flock` held until the unit's object
//! is in the cache); a build that finds a unit claimed compiles its own units first, then waits
//! for the claim, saying whose it is (the holder's process id and command, as the cache lock
//! says), and takes the object the holder stored. A claim whose holder died (killed, OOM) is
//! released by the kernel, so it is taken over at once, never waited out; a holder that failed
//! stored nothing, and the waiter compiles the unit itself.
//!
//! A claim is by unit id (the compile, by name: source, compiler, arguments), not by object key:
//! the key also holds the content of every header the compile reads, known only once it ran.
//! A claim file no build holds is removed with the cache's leftovers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::lock::{self, Held};

/// The claims of one build, under a cache's `claims/`.
#[derive(Debug)]
pub(crate) struct Claims {
    dir: PathBuf,
    held: BTreeMap<String, Held>,
}

/// A unit another live build is compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Busy {
    /// Its id.
    pub id: String,
    /// Who holds it, as the holder wrote it (`pid 1234: qola build ...`).
    pub holder: String,
}

impl Claims {
    /// The claims under `dir` (`<cache>/hip/claims`).
    pub(crate) fn new(dir: PathBuf) -> Claims {
        Claims {
            dir,
            held: BTreeMap::new(),
        }
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    /// Claims each unit of `ids` this build does not hold yet; returns those another live build
    /// holds. A claim that cannot be taken for another reason (a read-only cache) is no claim:
    /// the build compiles as before claims existed.
    pub(crate) fn claim<'i>(&mut self, ids: impl IntoIterator<Item = &'i str>) -> Vec<Busy> {
        let mut busy = Vec::new();
        if std::fs::create_dir_all(&self.dir).is_err() {
            return busy;
        }
        for id in ids {
            if self.held.contains_key(id) {
                continue;
            }
            let path = self.path(id);
            match lock::try_acquire(&path) {
                Ok(Some(held)) => {
                    self.held.insert(id.to_string(), held);
                }
                Ok(None) => busy.push(Busy {
                    id: id.to_string(),
                    holder: lock::holder(&path),
                }),
                Err(_) => {}
            }
        }
        busy
    }

    /// Lets the claims of `ids` go (their objects are in the cache, or this build will not
    /// compile them).
    pub(crate) fn release<'i>(&mut self, ids: impl IntoIterator<Item = &'i str>) {
        for id in ids {
            self.held.remove(id);
        }
    }

    /// Waits until no other build holds the claim of `id` (its holder stored the object, failed
    /// or died), calling `waiting` once with who holds it when it must wait; holds it afterwards.
    pub(crate) fn wait(&mut self, id: &str, waiting: impl FnOnce(&str)) {
        if self.held.contains_key(id) {
            return;
        }
        if let Ok(held) = lock::acquire(&self.path(id), waiting) {
            self.held.insert(id.to_string(), held);
        }
    }
}

/// Removes the claim files under `dir` no build holds (best effort: one taken meanwhile stays).
pub(crate) fn remove_unheld(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if let Ok(Some(held)) = lock::try_acquire(&path) {
            let _ = std::fs::remove_file(&path);
            drop(held);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_claimed_by_another_holder_is_busy_until_it_lets_go_and_then_it_is_this_build_s() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("claims");
        let mut first = Claims::new(dir.clone());
        assert_eq!(first.claim(["a", "b"]), Vec::new());
        // Another build (its own open file, as another process has) finds both busy, named.
        let mut second = Claims::new(dir.clone());
        let busy = second.claim(["a", "b", "c"]);
        assert_eq!(
            busy.iter().map(|b| b.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(
            busy[0]
                .holder
                .starts_with(&format!("pid {}:", std::process::id())),
            "{busy:?}"
        );
        first.release(["a"]);
        let mut said = None;
        second.wait("a", |who| said = Some(who.to_string()));
        assert_eq!(said, None, "a released claim is taken at once");
        assert!(second.claim(["a"]).is_empty(), "held now");
        // A claim no one holds is a leftover.
        drop(first);
        drop(second);
        remove_unheld(&dir);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }
}
