//! The content-addressed object cache.
//!
//! A translation unit is named by its **unit id**: blake3 over the compiler's identity, the full
//! argument list and the source's path. Its **key** adds the source's content and the content of
//! every header its last depfile listed. The cache keeps, per unit id, a record of that header
//! list and, per key, the object. Before compiling, the key is computed from the recorded header
//! list: if an object exists under it, the unit is cached. After compiling, the new depfile's
//! header list gives the key the object is stored under.
//!
//! Headers the depfile lists but this machine does not have (a compiler running in a sandbox
//! with its own root) are left out: the compiler's identity stands for them.
//!
//! Consequences: touching a file changes nothing (content, not mtime); editing a header
//! recompiles exactly the units whose last depfile listed it; rewriting files with identical
//! content (a resync) recompiles nothing; a change undone finds its old object again. Objects are
//! written to a temporary name and renamed into place under a lock, so a killed build leaves at
//! most a temporary file, never a corrupt entry.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::common::io::write_atomic;
use crate::compile::error::Result;
use crate::compile::error::io_error;

/// What the cache remembers about a unit between builds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct UnitRecord {
    /// The source, for people reading the cache.
    source: PathBuf,
    /// Every header the last depfile listed.
    headers: Vec<PathBuf>,
    /// The largest peak memory (bytes) measured compiling it: the per-unit estimate that caps
    /// parallel compiles (see `memory`).
    #[serde(default)]
    peak_memory: Option<u64>,
}

/// The cache under `<cache>/hip`.
#[derive(Debug)]
pub(crate) struct ObjectCache {
    root: PathBuf,
    hashes: HashMap<PathBuf, Option<blake3::Hash>>,
}

impl ObjectCache {
    pub(crate) fn new(root: PathBuf) -> ObjectCache {
        ObjectCache {
            root,
            hashes: HashMap::new(),
        }
    }

    fn record_path(&self, unit_id: &str) -> PathBuf {
        self.root.join("units").join(format!("{unit_id}.json"))
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

    /// The key of a unit whose header list is `headers`; `None` when a file is missing.
    fn key_with(&mut self, unit_id: &str, source: &Path, headers: &[PathBuf]) -> Option<String> {
        let mut hasher = blake3::Hasher::new();
        hasher.update(unit_id.as_bytes());
        hasher.update(self.content(source)?.as_bytes());
        for header in headers {
            hasher.update(header.as_os_str().as_encoded_bytes());
            hasher.update(b"\0");
            hasher.update(self.content(header)?.as_bytes());
        }
        Some(hasher.finalize().to_hex().to_string())
    }

    fn record(&self, unit_id: &str) -> Option<UnitRecord> {
        let bytes = std::fs::read(self.record_path(unit_id)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The largest peak memory measured compiling the unit, if any.
    pub(crate) fn peak(&self, unit_id: &str) -> Option<u64> {
        self.record(unit_id)?.peak_memory
    }

    /// The key and headers of a unit from its record, when the object for that key exists.
    pub(crate) fn lookup(
        &mut self,
        unit_id: &str,
        source: &Path,
    ) -> Option<(String, Vec<PathBuf>)> {
        let record = self.record(unit_id)?;
        let key = self.key_with(unit_id, source, &record.headers)?;
        self.object_path(&key)
            .is_file()
            .then_some((key, record.headers))
    }

    /// Stores a freshly compiled object and the header list of its depfile, and raises the
    /// unit's recorded peak memory to `peak`; returns its key.
    pub(crate) fn install(
        &mut self,
        unit_id: &str,
        source: &Path,
        headers: Vec<PathBuf>,
        compiled: &Path,
        peak: Option<u64>,
    ) -> Result<String> {
        // Contents may have been read before the compile: read them again.
        self.hashes.remove(source);
        for header in &headers {
            self.hashes.remove(header);
        }
        let key = self
            .key_with(unit_id, source, &headers)
            .unwrap_or_else(|| format!("unkeyed-{unit_id}"));
        let _lock = self.lock()?;
        let object = self.object_path(&key);
        if let Some(dir) = object.parent() {
            std::fs::create_dir_all(dir).map_err(io_error("create", dir))?;
        }
        std::fs::rename(compiled, &object).map_err(io_error("store the object as", &object))?;
        let peak_memory = self.peak(unit_id).max(peak);
        let record = UnitRecord {
            source: source.to_path_buf(),
            headers,
            peak_memory,
        };
        let json = serde_json::to_vec_pretty(&record).expect("a unit record serializes");
        write_atomic(&self.record_path(unit_id), &json)?;
        Ok(key)
    }

    /// The cache's lock, held while an entry is installed.
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
}

/// The unit id: compiler identity, argument list and source path.
pub(crate) fn unit_id(identity: &str, args: &[String], source: &Path) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(identity.as_bytes());
    for arg in args {
        hasher.update(b"\0");
        hasher.update(arg.as_bytes());
    }
    hasher.update(b"\0source\0");
    hasher.update(source.as_os_str().as_encoded_bytes());
    hasher.finalize().to_hex().to_string()
}
