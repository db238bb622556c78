//! The cache's size and what it holds: `QOLA_CACHE_MAX_SIZE` and its default, each build's
//! statistics (`builds.json`), and [`CacheUsage`] for `qola cache`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compile::cache::key::UnitRecord;
use crate::compile::cache::layer::Layer;
use crate::compile::cache::lease;

/// How many builds `builds.json` keeps.
pub(crate) const KEPT_BUILDS: usize = 50;

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
    /// Bytes of everything else the cache holds (hashes, records, running builds' scratch,
    /// leftovers); they count toward the size too.
    pub other_bytes: u64,
    /// Scratch directories and half-written entries of builds that are gone (removed by the
    /// next build that compiles and by `qola cache --clear`).
    pub leftovers: usize,
    /// The size the cache is kept within (`QOLA_CACHE_MAX_SIZE`, else the default).
    pub max_bytes: u64,
    /// Units with a record.
    pub units: usize,
    /// Running builds (live leases).
    pub running_builds: usize,
    /// The last builds, oldest first.
    pub builds: Vec<BuildStats>,
    /// What the objects are for, per library (objects whose unit was recorded before qola
    /// kept it are under `(not recorded)`).
    pub libraries: Vec<GroupUsage>,
    /// What the objects are for, per compiler.
    pub compilers: Vec<GroupUsage>,
}

/// The objects of one library or one compiler.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GroupUsage {
    /// The library (`te_libmha_fwd`) or the compiler (`HIP 6.4.43484, Debian clang 21.1.8`).
    pub name: String,
    /// Objects.
    pub objects: usize,
    /// Their size in bytes.
    pub bytes: u64,
    /// When one of them was last used (`2026-12-03T20:41:07Z`).
    pub last_used: String,
}

/// The objects of `objects` per library and per compiler, by the records of `units` (each
/// naming its last object's key); an object several records name counts once per group.
fn groups(units: &Path, objects: &[lease::Object]) -> (Vec<GroupUsage>, Vec<GroupUsage>) {
    use std::collections::{BTreeMap, BTreeSet};
    let by_key: BTreeMap<&str, &lease::Object> =
        objects.iter().map(|o| (o.key.as_str(), o)).collect();
    let mut libraries: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    let mut compilers: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for entry in std::fs::read_dir(units).into_iter().flatten().flatten() {
        let Some(record) = std::fs::read(entry.path())
            .ok()
            .and_then(|b| serde_json::from_slice::<UnitRecord>(&b).ok())
        else {
            continue;
        };
        let Some((key, _)) = by_key.get_key_value(record.key.as_str()) else {
            continue;
        };
        let name = |s: &str| match s {
            "" => "(not recorded)".to_string(),
            s => s.to_string(),
        };
        libraries
            .entry(name(&record.library))
            .or_default()
            .insert(key);
        compilers
            .entry(name(&record.compiler))
            .or_default()
            .insert(key);
    }
    let usage = |groups: BTreeMap<String, BTreeSet<&str>>| -> Vec<GroupUsage> {
        groups
            .into_iter()
            .map(|(name, keys)| {
                let members: Vec<&lease::Object> = keys.iter().map(|k| by_key[k]).collect();
                let last = members.iter().map(|o| o.used).max();
                GroupUsage {
                    name,
                    objects: members.len(),
                    bytes: members.iter().map(|o| o.bytes).sum(),
                    last_used: last
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map(|d| crate::common::time::utc_timestamp(d.as_secs()))
                        .unwrap_or_default(),
                }
            })
            .collect()
    };
    (usage(libraries), usage(compilers))
}

/// The builds recorded in `path` (`builds.json`), oldest first.
pub(crate) fn builds(path: &Path) -> Vec<BuildStats> {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// What the object cache at `root` holds; it is kept within `max_bytes`.
pub(crate) fn usage_of(root: &Path, max_bytes: u64) -> CacheUsage {
    let layer = Layer::new(root.to_path_buf());
    let objects = lease::objects(&root.join("objects"));
    let count = |dir: &str| std::fs::read_dir(root.join(dir)).map_or(0, |e| e.count());
    let live = lease::live(&layer.leases());
    let (libraries, compilers) = groups(&root.join("units"), &objects);
    CacheUsage {
        dir: root.to_path_buf(),
        objects: objects.len(),
        bytes: objects.iter().map(|o| o.bytes).sum(),
        other_bytes: layer.other_bytes(),
        leftovers: layer.leftover_count(&live).0,
        max_bytes,
        units: count("units"),
        running_builds: live.len(),
        builds: builds(&layer.builds()),
        libraries,
        compilers,
    }
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
}
