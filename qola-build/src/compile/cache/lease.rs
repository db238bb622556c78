//! Leases and eviction: each build holds a **lease** (`leases/<pid>-<n>`, a file it keeps locked
//! while it runs) naming every object it uses; eviction removes the least recently used objects
//! until the cache fits its size, never one a live lease names. A lease whose file is no longer
//! locked belonged to a build that ended and is removed.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A build's lease, held locked while it runs; removed when dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    file: File,
    path: PathBuf,
}

impl Lease {
    /// A new lease under `dir`, locked.
    pub(crate) fn take(dir: &Path) -> std::io::Result<Lease> {
        static LEASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        std::fs::create_dir_all(dir)?;
        let n = LEASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("{}-{n}", std::process::id()));
        let file = File::options()
            .create(true)
            .truncate(true)
            .write(true)
            .read(true)
            .open(&path)?;
        file.lock()?;
        Ok(Lease { file, path })
    }

    /// Names `key` in the lease.
    pub(crate) fn name(&mut self, key: &str) {
        let _ = writeln!(self.file, "{key}");
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // The lease ends with the build: its file goes (another build would also remove it
        // once it is no longer locked).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the lease at `path` belongs to a build that still runs: its owner holds the lock
/// (this process's own leases too: `flock` locks of two opens of one file exclude each other
/// within a process as well).
pub(crate) fn is_live(path: &Path) -> bool {
    File::options()
        .read(true)
        .write(true)
        .open(path)
        .is_ok_and(|f| matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
}

/// The keys named by leases whose builds still run; leases of ended builds are removed.
pub(crate) fn held(dir: &Path) -> BTreeSet<String> {
    let mut held = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return held;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if is_live(&path) {
            if let Ok(text) = std::fs::read_to_string(&path) {
                held.extend(text.lines().map(String::from));
            }
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    held
}

/// One object of the cache.
pub(crate) struct Object {
    pub key: String,
    pub path: PathBuf,
    pub bytes: u64,
    pub used: SystemTime,
}

/// The objects under `dir`.
pub(crate) fn objects(dir: &Path) -> Vec<Object> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let key = name.strip_suffix(".o")?.to_string();
            let meta = entry.metadata().ok()?;
            Some(Object {
                key,
                path: entry.path(),
                bytes: meta.len(),
                used: meta.modified().ok()?,
            })
        })
        .collect()
}

/// What an eviction removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Evicted {
    pub objects: usize,
    pub bytes: u64,
}

/// Removes the least recently used objects under `objects_dir` until they fit in `max` bytes,
/// sparing every key in `held`. The caller holds the cache's lock.
pub(crate) fn evict(objects_dir: &Path, held: &BTreeSet<String>, max: u64) -> Evicted {
    let mut objects = objects(objects_dir);
    let mut bytes: u64 = objects.iter().map(|o| o.bytes).sum();
    let mut evicted = Evicted::default();
    objects.sort_by_key(|o| o.used);
    for object in objects {
        if bytes <= max {
            break;
        }
        if held.contains(&object.key) {
            continue;
        }
        if std::fs::remove_file(&object.path).is_ok() {
            bytes -= object.bytes;
            evicted.objects += 1;
            evicted.bytes += object.bytes;
        }
    }
    evicted
}
