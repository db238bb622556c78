//! Leases and eviction: each build holds a **lease** (`leases/<pid>-<n>`, a file it keeps locked
//! while it runs) naming every object it uses; eviction removes the least recently used objects
//! until the cache fits its size, never one a live lease names. A lease whose file is no longer
//! locked belonged to a build that ended and is removed.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::compile::cache::layer::Layer;

/// A build's lease, held locked while it runs; removed when dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    file: File,
    path: PathBuf,
    name: String,
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
        Ok(Lease {
            file,
            path,
            name: format!("{}-{n}", std::process::id()),
        })
    }

    /// The lease's name (`<pid>-<n>`): its build's scratch directory is named after it.
    pub(crate) fn id(&self) -> &str {
        &self.name
    }

    /// Names `key` in the lease: from now on no eviction removes its object. Written at once (a
    /// file write, no buffer), so an eviction that runs after this returns sees it.
    pub(crate) fn name(&mut self, key: &str) -> std::io::Result<()> {
        writeln!(self.file, "{key}")
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

/// The names of the leases under `dir` whose builds still run; leases of ended builds are
/// removed.
pub(crate) fn live(dir: &Path) -> BTreeSet<String> {
    let mut live = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return live;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if is_live(&path) {
            live.insert(entry.file_name().to_string_lossy().into_owned());
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    live
}

/// The keys named by the leases `live` under `dir`.
pub(crate) fn held(dir: &Path, live: &BTreeSet<String>) -> BTreeSet<String> {
    live.iter()
        .filter_map(|name| std::fs::read_to_string(dir.join(name)).ok())
        .flat_map(|text| text.lines().map(String::from).collect::<Vec<_>>())
        .collect()
}

/// One object of the cache.
pub(crate) struct Object {
    pub key: String,
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

/// Removes the least recently used objects of `layer` until the cache fits in `max` bytes with
/// `other` bytes besides the objects, sparing every key in `held`. The caller holds the cache's
/// lock.
pub(crate) fn evict(layer: &Layer, held: &BTreeSet<String>, max: u64, other: u64) -> Evicted {
    let mut objects = objects(&layer.root.join("objects"));
    let mut bytes: u64 = objects.iter().map(|o| o.bytes).sum::<u64>() + other;
    let mut evicted = Evicted::default();
    objects.sort_by_key(|o| o.used);
    for object in objects {
        if bytes <= max {
            break;
        }
        if held.contains(&object.key) {
            continue;
        }
        if layer.remove(&object.key) {
            bytes -= object.bytes;
            evicted.objects += 1;
            evicted.bytes += object.bytes;
        }
    }
    evicted
}
