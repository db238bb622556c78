//! The content-addressed object cache, `<cache>/hip`.
//!
//! # The model
//!
//! Every path a unit's compile reads is known by its **name** (see `roots`): `<root>/<path>`
//! under one of the build's roots (the crate, the output directory, qola's cache, AITER's tree,
//! its generated code), the absolute path otherwise (system and ROCm headers). Nothing below
//! uses a location.
//!
//! * A unit's **id** is blake3 over the compiler's identity (its `--version` and its file's
//!   content, not its path), the compile arguments as names (`-I crate/kernels/include`), and
//!   the source's name.
//! * Its **key** adds the content of the source and, for each header its last depfile listed,
//!   the header's name and content. The object is stored under the key.
//! * The **record** of a unit id keeps that header list with each input's content hash at the
//!   compile that wrote it, the compile's peak memory, and where it was compiled.
//! * The **last compile** of each source of each library (`sources/`) keeps the compiler
//!   identity and arguments it was compiled with, so a new unit id can say why it is new
//!   (`flags changed`, `compiler changed`) instead of only `first build`.
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
//! Each build holds a **lease** (`leases/`, a file it keeps locked while it runs) naming every
//! object it reuses or stores. Using an object renews its modification time. After a build
//! stores objects, and on `qola cache --clear`, the least recently used objects are evicted under
//! the cache's lock until the objects fit `QOLA_CACHE_MAX_SIZE`; objects a live lease names are
//! never evicted (a lease whose file is no longer locked belonged to a build that ended and is
//! removed). Each build's hits and compiles are kept in `builds.json` (the last 50) for `qola
//! cache`.
//!
//! Objects are written to a temporary name and renamed into place under the lock, so a killed
//! build leaves at most a temporary file, never a corrupt entry.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::common::io::write_atomic;
use crate::compile::error::{Result, io_error};
use crate::compile::roots::Roots;

/// What the cache remembers about a unit id between builds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct UnitRecord {
    /// The source's name.
    source: String,
    /// The source's content hash at the compile that wrote the record.
    source_hash: String,
    /// Every header the last depfile listed, by name, with its content hash then.
    headers: Vec<(String, String)>,
    /// The largest peak memory (bytes) measured compiling it: the per-unit estimate that caps
    /// parallel compiles (see `memory`).
    #[serde(default)]
    peak_memory: Option<u64>,
    /// Where it was compiled (the output directory), for people.
    #[serde(default)]
    compiled_for: String,
}

/// The last compile of a source for a library: what a new unit id is compared with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LastCompile {
    /// The compiler identity.
    pub identity: String,
    /// The compile arguments, as names.
    pub args: Vec<String>,
}

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

/// An input of a unit whose content is not what its record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Changed {
    /// The source's content.
    Source,
    /// A header's content.
    Header(String),
    /// An input that is gone (or, for a name of a root this build does not have, elsewhere).
    Gone(String),
}

/// Everything the plan needs to know about one unit, from one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnitFacts {
    /// The source's name.
    pub source: String,
    /// The unit id's record, compared with today's files.
    pub recorded: Option<Recorded>,
    /// The last compile of this source for this library, when the unit id has no record.
    pub last: Option<LastCompile>,
}

/// The cache under `<cache>/hip`, as one build uses it.
#[derive(Debug)]
pub(crate) struct ObjectCache {
    root: PathBuf,
    hashes: HashMap<PathBuf, Option<blake3::Hash>>,
    /// This build's lease and its path: held locked while the build runs.
    lease: Option<(File, PathBuf)>,
}

impl ObjectCache {
    /// The cache at `root`, with a lease for this build (without one when the cache cannot be
    /// written: objects it reuses may then be evicted by another build meanwhile, and are
    /// compiled again if so).
    pub(crate) fn open(root: PathBuf) -> ObjectCache {
        let lease = new_lease(&root.join("leases")).ok();
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

    fn record(&self, unit_id: &str) -> Option<UnitRecord> {
        let bytes = std::fs::read(self.record_path(unit_id)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The largest peak memory measured compiling the unit, if any.
    pub(crate) fn peak(&self, unit_id: &str) -> Option<u64> {
        self.record(unit_id)?.peak_memory
    }

    /// Everything the plan needs about the unit `unit_id` of `library` (one lookup).
    pub(crate) fn facts(
        &mut self,
        unit_id: &str,
        library: &str,
        source: &str,
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
        let mut changed = Vec::new();
        let mut hasher = blake3::Hasher::new();
        hasher.update(unit_id.as_bytes());
        let inputs = std::iter::once((&record.source, &record.source_hash))
            .chain(record.headers.iter().map(|(n, h)| (n, h)));
        let mut complete = true;
        for (index, (name, then)) in inputs.enumerate() {
            let now = roots.resolve(name).and_then(|path| self.content(&path));
            let Some(now) = now else {
                changed.push(Changed::Gone(name.clone()));
                complete = false;
                continue;
            };
            if index > 0 {
                hasher.update(name.as_bytes());
                hasher.update(b"\0");
            }
            hasher.update(now.as_bytes());
            if now.to_hex().as_str() != then.as_str() {
                changed.push(if index == 0 {
                    Changed::Source
                } else {
                    Changed::Header(name.clone())
                });
            }
        }
        let key = complete.then(|| hasher.finalize().to_hex().to_string());
        let cached = key.as_ref().is_some_and(|k| self.object_path(k).is_file());
        UnitFacts {
            source: source.to_string(),
            recorded: Some(Recorded {
                key,
                cached,
                changed,
                compiled_for: record.compiled_for,
                headers: record.headers.into_iter().map(|(name, _)| name).collect(),
            }),
            last: None,
        }
    }

    /// Marks the object of `key` as used by this build: named in its lease (never evicted while
    /// it runs), its time renewed (least recently used goes first).
    pub(crate) fn hold(&mut self, key: &str) {
        if let Some((lease, _)) = &mut self.lease {
            let _ = writeln!(lease, "{key}");
        }
        let object = self.object_path(key);
        if let Ok(file) = File::options().write(true).open(&object) {
            let _ = file.set_modified(SystemTime::now());
        }
    }

    /// Stores a freshly compiled object of the unit `unit_id` (source `source` of `library`,
    /// compiled with `last`), keyed by its depfile's `headers` (names), and raises the unit's
    /// recorded peak memory to `peak`; returns its key.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn install(
        &mut self,
        unit_id: &str,
        library: &str,
        source: &str,
        headers: &[String],
        roots: &Roots,
        compiled: &Path,
        peak: Option<u64>,
        last: &LastCompile,
        compiled_for: &str,
    ) -> Result<String> {
        // Contents may have been read before the compile: read them again.
        let mut inputs = Vec::new();
        for name in std::iter::once(source).chain(headers.iter().map(String::as_str)) {
            if let Some(path) = roots.resolve(name) {
                self.hashes.remove(&path);
                if let Some(hash) = self.content(&path) {
                    inputs.push((name.to_string(), hash));
                    continue;
                }
            }
            if name == source {
                inputs.push((name.to_string(), blake3::hash(b"")));
            }
        }
        let mut hasher = blake3::Hasher::new();
        hasher.update(unit_id.as_bytes());
        for (index, (name, hash)) in inputs.iter().enumerate() {
            if index > 0 {
                hasher.update(name.as_bytes());
                hasher.update(b"\0");
            }
            hasher.update(hash.as_bytes());
        }
        let key = hasher.finalize().to_hex().to_string();
        let _lock = self.lock()?;
        let object = self.object_path(&key);
        if let Some(dir) = object.parent() {
            std::fs::create_dir_all(dir).map_err(io_error("create", dir))?;
        }
        std::fs::rename(compiled, &object).map_err(io_error("store the object as", &object))?;
        let peak_memory = self.peak(unit_id).max(peak);
        let record = UnitRecord {
            source: source.to_string(),
            source_hash: inputs[0].1.to_hex().to_string(),
            headers: inputs[1..]
                .iter()
                .map(|(n, h)| (n.clone(), h.to_hex().to_string()))
                .collect(),
            peak_memory,
            compiled_for: compiled_for.to_string(),
        };
        let json = serde_json::to_vec_pretty(&record).expect("a unit record serializes");
        write_atomic(&self.record_path(unit_id), &json)?;
        let last = serde_json::to_vec_pretty(last).expect("a last compile serializes");
        write_atomic(&self.last_path(library, source), &last)?;
        drop(_lock);
        self.hold(&key);
        Ok(key)
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
        let held = live_leases(&self.root.join("leases"));
        let mut objects = objects(&self.root.join("objects"));
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
        Ok(evicted)
    }

    /// Adds a build to `builds.json` (the last 50 are kept).
    pub(crate) fn record_build(&self, build: BuildStats) -> Result<()> {
        let _lock = self.lock()?;
        let path = self.root.join("builds.json");
        let mut builds: Vec<BuildStats> = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        builds.push(build);
        let excess = builds.len().saturating_sub(KEPT_BUILDS);
        builds.drain(..excess);
        let json = serde_json::to_vec_pretty(&builds).expect("build statistics serialize");
        Ok(write_atomic(&path, &json)?)
    }
}

impl Drop for ObjectCache {
    fn drop(&mut self) {
        // The lease ends with the build: its file goes (another build would also remove it
        // once it is no longer locked).
        if let Some((lease, path)) = self.lease.take() {
            drop(lease);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// How many builds `builds.json` keeps.
const KEPT_BUILDS: usize = 50;

/// One build's use of the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BuildStats {
    /// When it ended (`2026-12-03T01:39:33Z`).
    pub at: String,
    /// The library built.
    pub library: String,
    /// Where (the output directory).
    pub out_dir: String,
    /// Units reused from the cache.
    pub hits: usize,
    /// Units compiled.
    pub misses: usize,
}

/// What an eviction removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Evicted {
    pub objects: usize,
    pub bytes: u64,
}

/// One object of the cache.
struct Object {
    key: String,
    path: PathBuf,
    bytes: u64,
    used: SystemTime,
}

fn objects(dir: &Path) -> Vec<Object> {
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

/// A new lease file under `dir`, locked, and its path.
fn new_lease(dir: &Path) -> std::io::Result<(File, PathBuf)> {
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
    Ok((file, path))
}

/// Whether the lease at `path` belongs to a build that still runs: its owner holds the lock
/// (this process's own leases too: `flock` locks of two opens of one file exclude each other
/// within a process as well).
fn lease_is_live(path: &Path) -> bool {
    File::options()
        .read(true)
        .write(true)
        .open(path)
        .is_ok_and(|f| matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
}

/// The keys named by leases whose builds still run; leases of ended builds are removed.
fn live_leases(dir: &Path) -> BTreeSet<String> {
    let mut held = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return held;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if lease_is_live(&path) {
            if let Ok(text) = std::fs::read_to_string(&path) {
                held.extend(text.lines().map(String::from));
            }
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    held
}

/// What the cache holds, for `qola cache`.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct CacheUsage {
    /// The object cache's directory.
    pub dir: PathBuf,
    /// Objects.
    pub objects: usize,
    /// Their size in bytes.
    pub bytes: u64,
    /// The size the cache is kept within (`QOLA_CACHE_MAX_SIZE`, else the default).
    pub max_bytes: u64,
    /// Units with a record.
    pub units: usize,
    /// Running builds (live leases).
    pub running_builds: usize,
    /// The last builds, oldest first.
    pub builds: Vec<BuildStats>,
}

/// What the object cache at `root` holds; it is kept within `max_bytes`.
pub(crate) fn usage(root: &Path, max_bytes: u64) -> CacheUsage {
    let objects = objects(&root.join("objects"));
    let count = |dir: &str| std::fs::read_dir(root.join(dir)).map_or(0, |e| e.count());
    CacheUsage {
        dir: root.to_path_buf(),
        objects: objects.len(),
        bytes: objects.iter().map(|o| o.bytes).sum(),
        max_bytes,
        units: count("units"),
        running_builds: std::fs::read_dir(root.join("leases")).map_or(0, |entries| {
            entries
                .flatten()
                .filter(|e| lease_is_live(&e.path()))
                .count()
        }),
        builds: std::fs::read(root.join("builds.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default(),
    }
}

/// The unit id: compiler identity, arguments (as names) and the source's name.
pub(crate) fn unit_id(identity: &str, args: &[String], source: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(identity.as_bytes());
    for arg in args {
        hasher.update(b"\0");
        hasher.update(arg.as_bytes());
    }
    hasher.update(b"\0source\0");
    hasher.update(source.as_bytes());
    hasher.finalize().to_hex().to_string()
}

/// `QOLA_CACHE_MAX_SIZE`: a number of bytes with an optional unit (`20G`, `500MB`, `1.5TiB`).
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    (number >= 0.0).then_some((number * scale as f64) as u64)
}

/// The default size of the object cache: 20 GiB, or a quarter of the file system holding
/// `dir` when that is smaller.
pub(crate) fn default_max_size(dir: &Path) -> u64 {
    const DEFAULT: u64 = 20 << 30;
    let mut probe = dir.to_path_buf();
    while !probe.exists() && probe.pop() {}
    let Ok(c) = std::ffi::CString::new(probe.as_os_str().as_encoded_bytes()) else {
        return DEFAULT;
    };
    // SAFETY: statvfs fills the zeroed struct; `c` is a valid NUL-terminated path.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } != 0 {
        return DEFAULT;
    }
    let total = (stat.f_blocks as u64).saturating_mul(stat.f_frsize as u64);
    if total == 0 {
        DEFAULT
    } else {
        DEFAULT.min(total / 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_or_without_a_unit() {
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("20G"), Some(20 << 30));
        assert_eq!(parse_size("500 MB"), Some(500 << 20));
        assert_eq!(parse_size("1.5KiB"), Some(1536));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("3 parsecs"), None);
    }

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
        let left: BTreeSet<String> = objects(&tmp.path().join("hip/objects"))
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
