//! The content-addressed object cache, `<cache>/hip`.
//!
//! # The model
//!
//! Every path a unit's compile reads is known by its **name** (see `roots`): `<root>/<path>`
//! under one of the build's roots (the crate, the output directory, qola's cache, AITER's tree,
//! its generated code), the absolute path otherwise (system and ROCm headers). Nothing below
//! uses a location. What goes into a unit's id, its key and its record is one value,
//! [`key::ObjectKey`], whose docs carry the table; the layout on disk is in `layer`.
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
//! Each build holds a **lease** (see `lease`) naming every object it reuses or stores, named
//! there *before* the unit is decided reusable: an eviction that runs later spares it, one that
//! ran before removed it and the unit compiles. Using an object renews its modification time.
//! After a build stores objects, and on `qola cache --clear`, the least recently used objects
//! are evicted under the cache's lock until everything (objects, records, scratch) fits
//! `QOLA_CACHE_MAX_SIZE`; objects a live lease names are never evicted. A build's scratch
//! (`tmp/<its lease>/`: objects being compiled, depfiles, the compilers' `TMPDIR` except on a
//! farm, whose servers have their own) goes when
//! it ends; what a killed build left is removed by the next build that compiles and by `qola
//! cache --clear`. Each build's hits and compiles are kept in `builds.json` (the last 50) for
//! `qola cache` (see `usage`).
//!
//! # One compile per unit
//!
//! A build claims each unit it is about to compile (see `claims`); another build that needs the
//! same unit meanwhile compiles its own units first, then waits for the claim (saying whose it
//! is) and reuses the object. A killed holder's claim is released at once. Claims are as wide as
//! the cache directory: builds on one machine (or one shared file system) compile a unit once;
//! two machines sharing only a remote cache (ccache's Redis or HTTP storage) do not see each
//! other's claims, and compile a unit both need at the same moment twice (the remote storage
//! answers the one that comes later), as an sccache-dist farm's scheduler runs each job it is
//! given.
//!
//! # Failure
//!
//! | fault | what qola does | what the user sees |
//! |---|---|---|
//! | an object whose bytes are not the ones stored (flipped, truncated, replaced) or whose hash is missing | found when the object is about to be linked (each is checked against the hash stored with it, `layer`): the entry is removed, the unit compiled again | one warning naming the entry and what differs |
//! | the cache cannot be written (read-only, permission denied, full) | the build goes on with a cache of its own under its output directory (`<out>/qola-cache/hip`): hits from the shared cache are checked and copied there, what must compile is compiled and kept there; nothing goes to `HOME` or `TMPDIR` | one warning: which cache, why, and `QOLA_CACHE_DIR` / `QOLA_CACHE_MAX_SIZE` as the fix |
//! | a build killed (`kill -9`) | its lease is no longer locked: its objects may be evicted, its scratch and half-written entries are removed by the next build that compiles | nothing |
//! | another build holds the cache's lock (storing, evicting; stopped, say) | a build that must store waits, after saying for what and who holds it (pid, command); recording statistics never waits (skipped) | `waiting for qola's object cache ... (held by pid N: ...)` |
//! | an object evicted by another build after this one planned to reuse it | cannot happen: the lease names it first (see above) | nothing |
//!
//! Entries are written whole: the object's hash first, then the object, each through a
//! temporary name renamed into place under the lock, so a killed build leaves at most a
//! temporary file, never an entry that verifies and is wrong.

mod claims;
pub(crate) mod key;
mod layer;
mod lease;
mod records;
mod roots;
mod usage;

pub(crate) use key::unit_id;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::build_script::Directives;
use crate::common::hooks::Hooks;
use crate::common::lock;
use crate::compile::{CompileError, Result};
pub(crate) use claims::{Busy, Claims};
pub(crate) use key::Changed;
pub(crate) use key::Invocation;
use key::{Input, ObjectKey};
use layer::{Layer, Unusable};
pub(crate) use lease::Evicted;
pub use records::Cleared;
pub(crate) use records::{Compiled, Measured, Origin, Recorded, UnitFacts};
pub(crate) use roots::Roots;
pub use usage::{BuildStats, CacheUsage, GroupUsage};
pub(crate) use usage::{default_max_size, parse_size, usage_of};

/// Where a build writes (see the module docs: Failure).
#[derive(Debug)]
struct Store {
    layer: Layer,
    lease: lease::Lease,
    /// `tmp/<lease>/` of `layer`.
    scratch: PathBuf,
}

/// The cache under `<cache>/hip`, as one build uses it.
pub(crate) struct ObjectCache<'a> {
    /// The shared cache, always looked up.
    shared: Layer,
    /// Where this build writes: the shared cache, or its own under the output directory.
    store: Option<Store>,
    /// The build's own cache (`<out>/qola-cache/hip`), used when the shared one cannot be
    /// written; looked up first when it is.
    own: Layer,
    /// Why the shared cache is not written (said once).
    unwritable: Option<String>,
    hashes: HashMap<PathBuf, Option<blake3::Hash>>,
    hooks: Hooks,
    /// Where it tells the user at once: a warning, or what the build waits for.
    directives: &'a Directives,
}

impl<'a> ObjectCache<'a> {
    /// The shared cache at `root` for a build whose output directory is `out_dir` (`None`:
    /// only the shared cache, as `qola cache` uses it), telling the user what happens through
    /// `directives`.
    pub(crate) fn open(
        root: PathBuf,
        out_dir: Option<&Path>,
        hooks: Hooks,
        directives: &'a Directives,
    ) -> ObjectCache<'a> {
        let own = Layer::new(match out_dir {
            Some(dir) => dir.join("qola-cache").join(crate::cache_dir::OBJECTS),
            None => root.clone(),
        });
        let mut cache = ObjectCache {
            shared: Layer::new(root),
            store: None,
            own,
            unwritable: None,
            hashes: HashMap::new(),
            hooks,
            directives,
        };
        match Store::open(&cache.shared) {
            Ok(store) => cache.store = Some(store),
            Err(why) => cache.fall_back(why),
        }
        cache
    }

    /// From now on the build writes to its own cache: the shared one cannot be written
    /// (`why`). Says so once.
    pub(crate) fn fall_back(&mut self, why: String) {
        if self.unwritable.is_some() || self.own.root == self.shared.root {
            return;
        }
        self.directives.warning(&format!(
            "qola's object cache {} cannot be written ({why}); this build keeps what it compiles in {} instead. To share objects between builds again, make room (QOLA_CACHE_MAX_SIZE) or point QOLA_CACHE_DIR at a cache this build can write",
            self.shared.root.display(),
            self.own.root.display()
        ));
        self.unwritable = Some(why);
        let own_dirs = self.own.root.parent().map(|dir| {
            crate::common::io::own_dir(dir)
                .and_then(|()| crate::common::io::own_dir(&self.own.root))
        });
        self.store = match own_dirs {
            Some(Err(_)) => None,
            _ => Store::open(&self.own).ok(),
        };
    }

    /// The layers looked up, in order.
    fn layers(&self) -> Vec<&Layer> {
        match &self.unwritable {
            Some(_) => vec![&self.own, &self.shared],
            None => vec![&self.shared],
        }
    }

    fn store(&self) -> Result<&Store> {
        self.store
            .as_ref()
            .ok_or_else(|| CompileError::CacheUnwritable {
                dir: self.own.root.clone(),
                why: self.unwritable.clone().unwrap_or_default(),
            })
    }

    /// Where the object of `key` is: the first layer that has it, else where this build would
    /// store it.
    pub(crate) fn object_path(&self, key: &str) -> PathBuf {
        let layers = self.layers();
        match layers.iter().find(|l| l.has(key)) {
            Some(layer) => layer.object(key),
            None => self
                .store
                .as_ref()
                .map_or(&self.shared, |s| &s.layer)
                .object(key),
        }
    }

    /// A private scratch path for a compile in progress: `<unit_id>.<ext>` in this build's
    /// scratch directory.
    pub(crate) fn scratch(&self, unit_id: &str, ext: &str) -> Result<PathBuf> {
        Ok(self.store()?.scratch.join(format!("{unit_id}.{ext}")))
    }

    /// The `TMPDIR` of this build's compiles, inside its scratch (made here).
    pub(crate) fn compile_tmpdir(&self) -> Result<PathBuf> {
        let dir = self.store()?.scratch.join("tmp");
        std::fs::create_dir_all(&dir)
            .map_err(crate::common::io::io_error("create the directory", &dir))?;
        Ok(dir)
    }

    /// Whether a compile that failed saying `said` failed because the cache cannot be written
    /// (its scratch is there): the reason, when it did.
    pub(crate) fn write_failure(&self, said: &str) -> Option<String> {
        let store = self.store.as_ref()?;
        if self.unwritable.is_some() {
            return None;
        }
        const WORDS: [&str; 4] = [
            "No space left on device",
            "Read-only file system",
            "Permission denied",
            "Disk quota exceeded",
        ];
        let word = WORDS.iter().find(|w| said.contains(*w))?;
        let probe = store.scratch.join(".qola-room");
        let room = std::fs::write(&probe, vec![0u8; 1 << 20]);
        let _ = std::fs::remove_file(&probe);
        let id = store.lease.id();
        (said.contains(id) || room.is_err())
            .then(|| format!("{word} in {}", store.scratch.display()))
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

    /// How long the unit's last compile took, if it was measured.
    pub(crate) fn seconds(&self, unit_id: &str) -> Option<f64> {
        self.layers()
            .iter()
            .find_map(|l| l.record(unit_id))?
            .seconds
    }

    /// The largest peak memory measured compiling the unit, if any.
    pub(crate) fn peak(&self, unit_id: &str) -> Option<u64> {
        self.layers()
            .iter()
            .find_map(|l| l.record(unit_id))?
            .peak_memory
    }

    /// Everything the plan needs about the unit `unit_id` of `library`, compiled from `source`
    /// (a name) with `settings` (one lookup). An object found is named in this build's lease
    /// before it is said to be cached.
    pub(crate) fn facts(
        &mut self,
        unit_id: &str,
        library: &str,
        source: &str,
        settings: &Invocation,
        roots: &Roots,
    ) -> UnitFacts {
        let record = self.layers().iter().find_map(|l| l.record(unit_id));
        let Some(record) = record else {
            let last = self.layers().iter().find_map(|l| l.last(library, source));
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
        let cached = match &now {
            Some(k) => {
                self.hold(k);
                self.hooks.step("cache:held");
                self.layers().iter().any(|l| l.has(k))
            }
            None => false,
        };
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
    fn hold(&mut self, key: &str) {
        if let Some(store) = &mut self.store {
            let _ = store.lease.name(key);
        }
        for layer in self.layers() {
            if let Ok(file) = File::options().write(true).open(layer.object(key)) {
                let _ = file.set_modified(SystemTime::now());
            }
        }
    }

    /// The object of `key`, checked against the hash stored with it, for linking; `Err` says
    /// what is wrong with the entry, which is removed when this build can (a warning names it).
    /// An object of a shared cache this build cannot write is copied into its own first.
    pub(crate) fn take(&mut self, key: &str) -> std::result::Result<PathBuf, String> {
        let mut why = "its object is gone".to_string();
        for (index, layer) in self.layers().into_iter().enumerate() {
            match layer.verify(key) {
                Ok(()) if index == 0 && self.unwritable.is_some() => {
                    return Ok(self.own.object(key));
                }
                Ok(()) if self.unwritable.is_none() => return Ok(layer.object(key)),
                Ok(()) => {
                    // A shared object this build cannot lease: a copy of its own.
                    let store = self.store().map_err(|e| e.to_string())?;
                    let copy = store.scratch.join(format!("{key}.o"));
                    let copied = std::fs::copy(layer.object(key), &copy)
                        .and_then(|_| {
                            let _held = lock::acquire(&self.own.lock(), |_| {})?;
                            self.own.store(key, &copy)
                        })
                        .and_then(|()| {
                            self.own
                                .verify(key)
                                .map_err(|_| std::io::Error::other("changed while copied"))
                        });
                    return match copied {
                        Ok(()) => Ok(self.own.object(key)),
                        Err(e) => Err(format!("cannot copy it from {}: {e}", layer.root.display())),
                    };
                }
                Err(Unusable::Missing) => continue,
                Err(Unusable::Corrupt(what)) => {
                    let object = layer.object(key);
                    let writable = self.unwritable.is_none() || index == 0;
                    let removed = writable && {
                        let _held = self.lock("remove a corrupt entry");
                        layer.remove(key)
                    };
                    why = format!(
                        "{} {what}{}",
                        object.display(),
                        if removed { "; removed" } else { "" }
                    );
                    self.directives.warning(&format!(
                        "qola's object cache: {why}; the unit is compiled again"
                    ));
                    return Err(why);
                }
            }
        }
        Err(why)
    }

    /// Stores the freshly compiled object `c` (see [`Compiled`]), raises the unit's recorded
    /// peak memory to its measured peak and records how long it took; returns its key. When the
    /// shared cache cannot take it, the build's own does (see the module docs: Failure).
    pub(crate) fn install(
        &mut self,
        c: &Compiled,
        roots: &Roots,
        origin: &Origin,
    ) -> Result<String> {
        let Compiled {
            library,
            source,
            settings,
            headers,
            object: compiled,
            measured,
        } = *c;
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
        let object_key = key.key().expect("every input of a stored key was read");
        let written = self.write_entry(&key, &object_key, library, compiled, measured, origin);
        if let Err(e) = written {
            if self.unwritable.is_some() {
                return Err(CompileError::CacheUnwritable {
                    dir: self.own.root.clone(),
                    why: e.to_string(),
                });
            }
            self.fall_back(e.to_string());
            self.write_entry(&key, &object_key, library, compiled, measured, origin)
                .map_err(|e| CompileError::CacheUnwritable {
                    dir: self.own.root.clone(),
                    why: e.to_string(),
                })?;
        }
        self.hold(&object_key);
        Ok(object_key)
    }

    /// Writes the entry of `key` (object, hash, record, last compile) to the store, under its
    /// lock.
    fn write_entry(
        &self,
        key: &ObjectKey,
        object_key: &str,
        library: &str,
        compiled: &Path,
        measured: Measured,
        origin: &Origin,
    ) -> std::io::Result<()> {
        let store = self
            .store
            .as_ref()
            .ok_or_else(|| std::io::Error::other("no cache can be written"))?;
        let layer = &store.layer;
        let unit_id = key.unit_id();
        let _held = self.lock("store an object");
        self.hooks.step("cache:locked");
        layer.store(object_key, compiled)?;
        let peak = self.peak(&unit_id).max(measured.peak);
        let mut record = key.record(peak, Some(measured.seconds), &origin.out_dir);
        record.library = library.to_string();
        record.compiler = origin.compiler.clone();
        record.key = object_key.to_string();
        let json = serde_json::to_vec_pretty(&record).expect("a unit record serializes");
        crate::common::io::write_atomic(&layer.record_path(&unit_id), &json)
            .map_err(|e| e.source)?;
        let last = serde_json::to_vec_pretty(&key.settings).expect("a last compile serializes");
        crate::common::io::write_atomic(&layer.last_path(library, &key.source.name), &last)
            .map_err(|e| e.source)?;
        Ok(())
    }

    /// The store's lock, taken to write: says what it waits for when another process holds
    /// it (`what`: why this build needs it).
    fn lock(&self, what: &str) -> Option<lock::Held> {
        let layer = &self.store.as_ref()?.layer;
        lock::acquire(&layer.lock(), |who| {
            self.directives.info(&format!(
                "waiting for qola's object cache {} to {what} (its lock {} is held by {who})",
                layer.root.display(),
                layer.lock().display()
            ))
        })
        .ok()
    }

    /// Removes what builds that are gone left in the store (scratch, half-written entries,
    /// claims no build holds).
    pub(crate) fn remove_leftovers(&self) {
        if let Some(store) = &self.store {
            let live = lease::live(&store.layer.leases());
            store.layer.remove_leftovers(&live);
            claims::remove_unheld(&self.claims_dir());
        }
    }

    /// Where builds claim the units they compile (see `claims`): the shared cache's, which
    /// every build on this cache looks up.
    fn claims_dir(&self) -> PathBuf {
        self.shared.root.join("claims")
    }

    /// This build's claims (see `claims`).
    pub(crate) fn claims(&self) -> Claims {
        Claims::new(self.claims_dir())
    }

    /// Evicts the least recently used objects of the store until it fits in `max` bytes, under
    /// the lock, sparing every object a live lease names (this build's included) and removing
    /// what builds that are gone left.
    pub(crate) fn evict(&self, max: u64) -> Result<Evicted> {
        let Some(store) = &self.store else {
            return Ok(Evicted::default());
        };
        let _held = self.lock("evict objects");
        let layer = &store.layer;
        let live = lease::live(&layer.leases());
        layer.remove_leftovers(&live);
        let held = lease::held(&layer.leases(), &live);
        Ok(lease::evict(layer, &held, max, layer.other_bytes()))
    }

    /// Empties the cache (`qola cache --clear`): every object no running build holds, every
    /// unit record and source's last settings, the build history, and what builds that are gone
    /// left. Objects a running build holds stay, so that build links what it planned.
    pub(crate) fn clear(&self) -> Result<Cleared> {
        let Some(store) = &self.store else {
            return Ok(Cleared::default());
        };
        let _held = self.lock("clear the cache");
        let layer = &store.layer;
        let live = lease::live(&layer.leases());
        layer.remove_leftovers(&live);
        let held = lease::held(&layer.leases(), &live);
        let evicted = lease::evict(layer, &held, 0, 0);
        let builds = usage::builds(&layer.builds()).len();
        let _ = std::fs::remove_file(layer.builds());
        Ok(Cleared {
            objects: evicted.objects,
            bytes: evicted.bytes,
            records: layer.remove_records(),
            builds,
        })
    }

    /// Adds a build to the store's `builds.json` (the last 50 are kept); skipped when another
    /// process holds the lock (statistics never hold a build up).
    pub(crate) fn record_build(&self, build: BuildStats) {
        let Some(store) = &self.store else {
            return;
        };
        let layer = &store.layer;
        let Ok(Some(_held)) = lock::try_acquire(&layer.lock()) else {
            return;
        };
        let path = layer.builds();
        let mut builds = usage::builds(&path);
        builds.push(build);
        let excess = builds.len().saturating_sub(usage::KEPT_BUILDS);
        builds.drain(..excess);
        let json = serde_json::to_vec_pretty(&builds).expect("build statistics serialize");
        let _ = crate::common::io::write_atomic(&path, &json);
    }
}

impl Store {
    /// A lease and a scratch directory in `layer`, or why they cannot be made.
    fn open(layer: &Layer) -> std::result::Result<Store, String> {
        let lease = lease::Lease::take(&layer.leases())
            .map_err(|e| format!("{}: {e}", layer.leases().display()))?;
        let scratch = layer.tmp().join(lease.id());
        std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        Ok(Store {
            layer: layer.clone(),
            lease,
            scratch,
        })
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // The build's scratch ends with it (its lease file goes with the lease).
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

#[cfg(test)]
mod tests;
