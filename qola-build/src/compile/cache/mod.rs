//! The content-addressed object cache, `<cache>/hip`.
//!
//! # The model
//!
//! Every path a unit's compile reads is known by its **name** (see `roots`): `<root>/<path>`
//! under one of the build's roots (the crate, the output directory, qola's cache, AITER's tree,
//! its generated code), the absolute path otherwise (system and ROCm headers). Nothing below
//! uses a location. What goes into a unit's id, its key and its record is one value,
//! [`key::ObjectKey`], whose docs carry the table.
//!
//! Before compiling, each unit's key is computed from its record with today's content: if the
//! object for it exists, the unit is reused, whoever compiled it and wherever (another profile,
//! target directory, output directory, checkout path). Otherwise the record says what changed
//! (the first input whose content differs) and the unit is compiled; its depfile gives the
//! header list its object is stored under. This is decided by the pure function in `plan`, from
//! the [`UnitFacts`] gathered here in one lookup per unit.
//!
//! Consequences: touching a file changes nothing (content, not mtime); editing a header
//! recompiles exactly the units whose last depfile listed it; rewriting files with identical
//! content (a resync) recompiles nothing; a change undone finds its old object again; the same
//! content at another path compiles nothing. Headers the depfile lists but this machine does not
//! have (a compiler running in a sandbox with its own root) are left out: the compiler's identity
//! stands for them.
//!
//! # Staying a size
//!
//! Each build holds a **lease** (see `lease`) naming every object it reuses or stores. Using an
//! object renews its modification time. After a build stores objects, and on `qola cache
//! --clear`, the least recently used objects are evicted under the cache's lock until the
//! objects fit `QOLA_CACHE_MAX_SIZE`; objects a live lease names are never evicted. Each build's
//! hits and compiles are kept in `builds.json` (the last 50) for `qola cache` (see `usage`).
//!
//! Objects are written to a temporary name and renamed into place under the lock, so a killed
//! build leaves at most a temporary file, never a corrupt entry.

pub(crate) mod key;
mod lease;
mod usage;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::common::io::write_atomic;
use crate::compile::error::{Result, io_error};
use crate::compile::roots::Roots;
pub(crate) use key::Changed;
use key::{Input, ObjectKey, Settings, UnitRecord};
pub(crate) use lease::Evicted;
pub use usage::{BuildStats, CacheUsage};
pub(crate) use usage::{default_max_size, parse_size, usage};

/// What a unit's record says today.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// The key from the recorded header list and today's content (`None`: an input is gone).
    pub key: Option<String>,
    /// The object for that key is in the cache.
    pub cached: bool,
    /// Inputs whose content differs from the record's, in the order the compiler read them.
    pub changed: Vec<Changed>,
    /// Where the recorded compile ran.
    pub compiled_for: String,
    /// The headers its depfile listed, by name.
    pub headers: Vec<String>,
}

/// Everything the plan needs to know about one unit, from one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnitFacts {
    /// The source's name.
    pub source: String,
    /// The unit id's record, compared with today's files.
    pub recorded: Option<Recorded>,
    /// The last compile of this source for this library, when the unit id has no record.
    pub last: Option<Settings>,
}

/// The cache under `<cache>/hip`, as one build uses it.
#[derive(Debug)]
pub(crate) struct ObjectCache {
    root: PathBuf,
    hashes: HashMap<PathBuf, Option<blake3::Hash>>,
    /// This build's lease: held locked while the build runs.
    lease: Option<lease::Lease>,
}

impl ObjectCache {
    /// The cache at `root`, with a lease for this build (without one when the cache cannot be
    /// written: objects it reuses may then be evicted by another build meanwhile, and are
    /// compiled again if so).
    pub(crate) fn open(root: PathBuf) -> ObjectCache {
        let lease = lease::Lease::take(&root.join("leases")).ok();
        ObjectCache {
            root,
            hashes: HashMap::new(),
            lease,
        }
    }

    fn record_path(&self, unit_id: &str) -> PathBuf {
        self.root.join("units").join(format!("{unit_id}.json"))
    }

    fn last_path(&self, library: &str, source: &str) -> PathBuf {
        let digest = blake3::hash(format!("{library}\0{source}").as_bytes()).to_hex();
        self.root
            .join("sources")
            .join(format!("{}.json", &digest[..32]))
    }

    /// Where the object for `key` lives.
    pub(crate) fn object_path(&self, key: &str) -> PathBuf {
        self.root.join("objects").join(format!("{key}.o"))
    }

    /// A private scratch path for a compile in progress.
    pub(crate) fn scratch(&self, unit_id: &str, ext: &str) -> Result<PathBuf> {
        let dir = self.root.join("tmp");
        std::fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        Ok(dir.join(format!("{unit_id}-{}.{ext}", std::process::id())))
    }

    /// The content hash of a file, read once per build (`None` when it cannot be read).
    fn content(&mut self, path: &Path) -> Option<blake3::Hash> {
        if let Some(hash) = self.hashes.get(path) {
            return *hash;
        }
        let hash = std::fs::read(path).ok().map(|bytes| blake3::hash(&bytes));
        self.hashes.insert(path.to_path_buf(), hash);
        hash
    }

    /// The input `name` with today's content.
    fn input(&mut self, name: &str, roots: &Roots) -> Input {
        Input {
            name: name.to_string(),
            content: roots.resolve(name).and_then(|path| self.content(&path)),
        }
    }

    fn record(&self, unit_id: &str) -> Option<UnitRecord> {
        let bytes = std::fs::read(self.record_path(unit_id)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The largest peak memory measured compiling the unit, if any.
    pub(crate) fn peak(&self, unit_id: &str) -> Option<u64> {
        self.record(unit_id)?.peak_memory
    }

    /// Everything the plan needs about the unit `unit_id` of `library`, compiled from `source`
    /// (a name) with `settings` (one lookup).
    pub(crate) fn facts(
        &mut self,
        unit_id: &str,
        library: &str,
        source: &str,
        settings: &Settings,
        roots: &Roots,
    ) -> UnitFacts {
        let Some(record) = self.record(unit_id) else {
            let last = std::fs::read(self.last_path(library, source))
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok());
            return UnitFacts {
                source: source.to_string(),
                recorded: None,
                last,
            };
        };
        let key = ObjectKey {
            settings: settings.clone(),
            source: self.input(&record.source, roots),
            headers: record
                .headers
                .iter()
                .map(|(name, _)| self.input(name, roots))
                .collect(),
        };
        let now = key.key();
        let cached = now.as_ref().is_some_and(|k| self.object_path(k).is_file());
        UnitFacts {
            source: source.to_string(),
            recorded: Some(Recorded {
                changed: key.changes_from(&record),
                key: now,
                cached,
                compiled_for: record.compiled_for,
                headers: record.headers.into_iter().map(|(name, _)| name).collect(),
            }),
            last: None,
        }
    }

    /// Marks the object of `key` as used by this build: named in its lease (never evicted while
    /// it runs), its time renewed (least recently used goes first).
    pub(crate) fn hold(&mut self, key: &str) {
        if let Some(lease) = &mut self.lease {
            lease.name(key);
        }
        let object = self.object_path(key);
        if let Ok(file) = File::options().write(true).open(&object) {
            let _ = file.set_modified(SystemTime::now());
        }
    }

    /// Stores a freshly compiled object of `source` (a name) of `library`, compiled with
    /// `settings`, keyed by its depfile's `headers` (names), and raises the unit's recorded peak
    /// memory to `peak`; returns its key.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn install(
        &mut self,
        library: &str,
        source: &str,
        settings: &Settings,
        headers: &[String],
        roots: &Roots,
        compiled: &Path,
        peak: Option<u64>,
        compiled_for: &str,
    ) -> Result<String> {
        // Contents may have been read before the compile: read them again.
        for name in std::iter::once(source).chain(headers.iter().map(String::as_str)) {
            if let Some(path) = roots.resolve(name) {
                self.hashes.remove(&path);
            }
        }
        let mut source = self.input(source, roots);
        source.content.get_or_insert_with(|| blake3::hash(b""));
        let key = ObjectKey {
            settings: settings.clone(),
            source,
            headers: headers
                .iter()
                .map(|name| self.input(name, roots))
                .filter(|input| input.content.is_some())
                .collect(),
        };
        let unit_id = key.unit_id();
        let object_key = key.key().expect("every input of a stored key was read");
        let _lock = self.lock()?;
        let object = self.object_path(&object_key);
        if let Some(dir) = object.parent() {
            std::fs::create_dir_all(dir).map_err(io_error("create", dir))?;
        }
        std::fs::rename(compiled, &object).map_err(io_error("store the object as", &object))?;
        let record = key.record(self.peak(&unit_id).max(peak), compiled_for);
        let json = serde_json::to_vec_pretty(&record).expect("a unit record serializes");
        write_atomic(&self.record_path(&unit_id), &json)?;
        let last = serde_json::to_vec_pretty(settings).expect("a last compile serializes");
        write_atomic(&self.last_path(library, &key.source.name), &last)?;
        drop(_lock);
        self.hold(&object_key);
        Ok(object_key)
    }

    /// The cache's lock, held while an entry is installed or objects are evicted.
    fn lock(&self) -> Result<File> {
        std::fs::create_dir_all(&self.root).map_err(io_error("create", &self.root))?;
        let path = self.root.join("lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_error("open the lock", &path))?;
        file.lock().map_err(io_error("lock", &path))?;
        Ok(file)
    }

    /// Evicts the least recently used objects until they fit in `max` bytes, under the lock,
    /// sparing every object a live lease names (this build's included).
    pub(crate) fn evict(&self, max: u64) -> Result<Evicted> {
        let _lock = self.lock()?;
        let held = lease::held(&self.root.join("leases"));
        Ok(lease::evict(&self.root.join("objects"), &held, max))
    }

    /// Adds a build to `builds.json` (the last 50 are kept).
    pub(crate) fn record_build(&self, build: BuildStats) -> Result<()> {
        let _lock = self.lock()?;
        let path = self.root.join("builds.json");
        let mut builds = usage::builds(&path);
        builds.push(build);
        let excess = builds.len().saturating_sub(usage::KEPT_BUILDS);
        builds.drain(..excess);
        let json = serde_json::to_vec_pretty(&builds).expect("build statistics serialize");
        Ok(write_atomic(&path, &json)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn write_object(cache: &ObjectCache, key: &str, bytes: usize, age_s: u64) {
        let path = cache.object_path(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, vec![0u8; bytes]).unwrap();
        let when = SystemTime::now() - std::time::Duration::from_secs(age_s);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    #[test]
    fn eviction_removes_the_least_recently_used_and_spares_held_objects() {
        let tmp = tempfile::tempdir().unwrap();
        let mut cache = ObjectCache::open(tmp.path().join("hip"));
        write_object(&cache, "oldest", 100, 300);
        write_object(&cache, "older", 100, 200);
        write_object(&cache, "old", 100, 100);
        write_object(&cache, "new", 100, 0);
        // This build holds the oldest: it stays, the next oldest go.
        cache.hold("oldest");
        let evicted = cache.evict(250).unwrap();
        assert_eq!(
            evicted,
            Evicted {
                objects: 2,
                bytes: 200
            }
        );
        let left: BTreeSet<String> = lease::objects(&tmp.path().join("hip/objects"))
            .into_iter()
            .map(|o| o.key)
            .collect();
        assert_eq!(left, ["new", "oldest"].map(String::from).into());
    }

    #[test]
    fn a_lease_of_an_ended_build_protects_nothing_and_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("hip");
        {
            let mut ended = ObjectCache::open(root.clone());
            write_object(&ended, "a", 100, 100);
            ended.hold("a");
        }
        // A lease left by a build killed before it could remove it: not locked by anyone.
        std::fs::write(root.join("leases/999999-0"), "a\n").unwrap();
        let cache = ObjectCache::open(root.clone());
        assert_eq!(cache.evict(0).unwrap().objects, 1);
        assert!(!root.join("leases/999999-0").exists());
    }
}
