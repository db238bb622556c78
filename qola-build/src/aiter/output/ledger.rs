//! The output directory's memory: what each file under `--output-dir` held, and since when, kept
//! in qola's cache (`outputs/`), outside the directory, so that a directory removed and built
//! again (ck-jit removes its tmp dir, TransformerEngine's `--qola-output` inside it, at every
//! run) gets its files back with the mtimes a consumer last saw, and make or ninja rebuild
//! nothing that did not change.
//!
//! | recorded, per path under the output directory | why |
//! |---|---|
//! | the content's hash (BLAKE3) | the same bytes at the same path are the same input to a consumer |
//! | the mtime it had when that content was first there | what a consumer's build compared its outputs with |
//! | size, ctime and inode | a file not touched since it was recorded is not read again (a no-op build hashes nothing) |
//! | `manifest.json`'s text | the record a build would write again, apart from its time stamp and durations |
//!
//! A build settles the directory twice ([`Ledger::settle`]): before it writes anything, to learn
//! what is there (a file changed since, by anyone, is recorded as it is now, so a content put back
//! later is never given a time older than what a consumer may have built against), and after, to
//! act. What to do with one file is a value ([`verdict`]), decided from the record and the file:
//!
//! | the file now | the record for its path | verdict |
//! |---|---|---|
//! | size, ctime and inode as recorded | any | as it was: nothing read, nothing written |
//! | the recorded content, another mtime (written again) | after the build | its recorded mtime put back |
//! | the recorded content, another mtime | before the build | its mtime now recorded |
//! | other content, or no record | any | its content and mtime now recorded |
//!
//! A path the record has and the directory does not is kept before the build (ck-jit removed it;
//! the build may write it again) and dropped after it. Losing the record (another cache, `qola
//! cache --clear`) costs a consumer a rebuild, never a wrong build. The record is one small file
//! per output directory (named by a hash of its canonical path: it is this directory's memory,
//! not a cache of work); writing it is the only write a settle makes outside the directory, and
//! only when something changed.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::aiter::Result;
use crate::common::io::{io_error, write_atomic};

/// The record's format; a record of another format is ignored (every file is then new).
const FORMAT: u32 = 1;

/// Records kept at most; the oldest beyond it are removed (a lost record costs a rebuild).
const RECORDS_KEPT: usize = 500;

/// One file as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Recorded {
    /// BLAKE3 of its content, in hex.
    hash: String,
    /// Its mtime, in nanoseconds since the epoch.
    mtime_ns: u64,
    /// What identifies the file as not touched since.
    stat: Stat,
}

/// What identifies a file as not touched since it was recorded: any write, rename or
/// `utimensat` changes its ctime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stat {
    size: u64,
    ctime_ns: i128,
    ino: u64,
}

impl Stat {
    fn of(meta: &std::fs::Metadata) -> Stat {
        Stat {
            size: meta.len(),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }
}

/// The record file.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    format: u32,
    /// The output directory it is for (canonical).
    output_dir: PathBuf,
    /// Per path under it (`/`-separated).
    files: BTreeMap<String, Recorded>,
    /// `manifest.json`'s text when the record was last settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    manifest_json: Option<String>,
}

/// When a settle runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Moment {
    /// Before the build writes anything: learn what is there.
    Before,
    /// After the build: put back the mtimes of what it wrote again.
    After,
}

/// What to do with one file (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Untouched since recorded.
    AsItWas,
    /// The recorded content written again: its recorded mtime goes back.
    PutBack(u64),
    /// New or changed content (or, before a build, a new mtime): recorded as it is.
    Record,
}

/// The verdict for a file whose `stat` and `mtime_ns` are these, with `hash` giving its
/// content's hash when asked (read only when the stat does not settle it).
fn verdict(
    recorded: Option<&Recorded>,
    stat: Stat,
    mtime_ns: u64,
    moment: Moment,
    hash: impl FnOnce() -> std::io::Result<String>,
) -> std::io::Result<Verdict> {
    let Some(recorded) = recorded else {
        return Ok(Verdict::Record);
    };
    if recorded.stat == stat && recorded.mtime_ns == mtime_ns {
        return Ok(Verdict::AsItWas);
    }
    if hash()? != recorded.hash {
        return Ok(Verdict::Record);
    }
    Ok(match moment {
        Moment::After if recorded.mtime_ns != mtime_ns => Verdict::PutBack(recorded.mtime_ns),
        _ => Verdict::Record,
    })
}

/// What a settle did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Settled {
    /// Files written again with the content they had, their mtimes put back.
    pub put_back: usize,
    /// Files recorded anew (new or changed content).
    pub recorded: usize,
}

impl Settled {
    /// What `qola build` says of a settle after it, when it put mtimes back.
    pub fn notice(&self) -> Option<String> {
        (self.put_back > 0).then(|| {
            format!(
                "qola build: {} output file(s) written again with the content they had: their mtimes are put back, so nothing that uses them rebuilds",
                self.put_back
            )
        })
    }
}

/// An output directory's record (see the module docs).
#[derive(Debug)]
pub(super) struct Ledger {
    file: PathBuf,
    output_dir: PathBuf,
    record: Record,
    /// The record differs from the file.
    dirty: bool,
}

impl Ledger {
    /// The record of `output_dir` (which exists) in `cache`: empty when there is none, or it is
    /// unreadable or of another format.
    pub(super) fn open(cache: &Path, output_dir: &Path) -> Result<Ledger> {
        let output_dir = std::fs::canonicalize(output_dir)
            .map_err(io_error("find the canonical path of", output_dir))?;
        let name = blake3::hash(output_dir.as_os_str().as_encoded_bytes()).to_hex();
        let file = cache
            .join(crate::cache_dir::OUTPUTS)
            .join(format!("{}.json", &name[..32]));
        let record = std::fs::read(&file)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
            .filter(|r| r.format == FORMAT && r.output_dir == output_dir)
            .unwrap_or_else(|| Record {
                format: FORMAT,
                output_dir: output_dir.clone(),
                ..Record::default()
            });
        Ok(Ledger {
            file,
            output_dir,
            record,
            dirty: false,
        })
    }

    /// `manifest.json`'s text as last recorded.
    pub(super) fn manifest_json(&self) -> Option<&str> {
        self.record.manifest_json.as_deref()
    }

    /// Settles the directory at `moment` (see the module docs) and keeps the record when it
    /// changed.
    pub(super) fn settle(&mut self, moment: Moment) -> Result<Settled> {
        let mut settled = Settled::default();
        let mut present = Vec::new();
        let mut files = Vec::new();
        walk(&self.output_dir, "", &mut files)?;
        for (rel, path) in files {
            let meta = std::fs::symlink_metadata(&path).map_err(io_error("read", &path))?;
            let mtime_ns = nanos(
                meta.modified()
                    .map_err(io_error("read the mtime of", &path))?,
            );
            let recorded = self.record.files.get(&rel);
            let mut hashed = None;
            let verdict = verdict(recorded, Stat::of(&meta), mtime_ns, moment, || {
                let hash = hash_file(&path)?;
                hashed = Some(hash.clone());
                Ok(hash)
            })
            .map_err(io_error("read", &path))?;
            match verdict {
                Verdict::AsItWas => {}
                Verdict::PutBack(mtime_ns) => {
                    let file = std::fs::File::open(&path).map_err(io_error("open", &path))?;
                    file.set_modified(UNIX_EPOCH + Duration::from_nanos(mtime_ns))
                        .map_err(io_error("put back the mtime of", &path))?;
                    let meta = std::fs::symlink_metadata(&path).map_err(io_error("read", &path))?;
                    if let Some(entry) = self.record.files.get_mut(&rel) {
                        entry.stat = Stat::of(&meta);
                    }
                    self.dirty = true;
                    settled.put_back += 1;
                }
                Verdict::Record => {
                    let hash = match hashed {
                        Some(hash) => hash,
                        None => hash_file(&path).map_err(io_error("read", &path))?,
                    };
                    let entry = Recorded {
                        hash,
                        mtime_ns,
                        stat: Stat::of(&meta),
                    };
                    self.record.files.insert(rel.clone(), entry);
                    self.dirty = true;
                    settled.recorded += 1;
                }
            }
            present.push(rel);
        }
        if moment == Moment::After {
            let before = self.record.files.len();
            let present: std::collections::BTreeSet<String> = present.into_iter().collect();
            self.record.files.retain(|rel, _| present.contains(rel));
            self.dirty |= self.record.files.len() != before;
            let text = std::fs::read_to_string(self.output_dir.join("manifest.json")).ok();
            if text != self.record.manifest_json {
                self.record.manifest_json = text;
                self.dirty = true;
            }
        }
        self.keep()?;
        Ok(settled)
    }

    /// Writes the record when it changed; beyond [`RECORDS_KEPT`] records, the oldest go.
    fn keep(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let bytes = serde_json::to_vec(&self.record).expect("a record always serializes");
        write_atomic(&self.file, &bytes)?;
        self.dirty = false;
        if let Some(dir) = self.file.parent() {
            forget_oldest(dir, &self.file);
        }
        Ok(())
    }
}

/// Removes the oldest records of `dir` beyond [`RECORDS_KEPT`], never `keep` (best effort: a
/// record that cannot be removed stays).
fn forget_oldest(dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut records: Vec<(SystemTime, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p != keep)
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    if records.len() < RECORDS_KEPT {
        return;
    }
    records.sort();
    for (_, path) in &records[..records.len() + 1 - RECORDS_KEPT] {
        let _ = std::fs::remove_file(path);
    }
}

/// Every regular file under `dir` (symbolic links are not followed), as (`/`-separated path
/// under the output directory, path).
fn walk(dir: &Path, prefix: &str, files: &mut Vec<(String, PathBuf)>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(io_error("read the directory", dir))?;
    for entry in entries {
        let entry = entry.map_err(io_error("read the directory", dir))?;
        let kind = entry.file_type().map_err(io_error("read", entry.path()))?;
        let rel = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if kind.is_dir() {
            walk(&entry.path(), &format!("{rel}/"), files)?;
        } else if kind.is_file() {
            files.push((rel, entry.path()));
        }
    }
    Ok(())
}

fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(std::fs::File::open(path)?)?;
    Ok(hasher.finalize().to_hex().to_string())
}

fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(hash: &str, mtime_ns: u64, ino: u64) -> Recorded {
        Recorded {
            hash: hash.to_string(),
            mtime_ns,
            stat: Stat {
                size: 1,
                ctime_ns: 5,
                ino,
            },
        }
    }

    fn never() -> std::io::Result<String> {
        panic!("a file the stat settles is not read")
    }

    #[test]
    fn a_file_untouched_since_recorded_is_not_read() {
        let r = recorded("h", 7, 1);
        for moment in [Moment::Before, Moment::After] {
            assert_eq!(
                verdict(Some(&r), r.stat, 7, moment, never).unwrap(),
                Verdict::AsItWas
            );
        }
    }

    #[test]
    fn the_recorded_content_written_again_gets_its_mtime_back_after_the_build_only() {
        let r = recorded("h", 7, 1);
        let again = Stat { ino: 2, ..r.stat };
        let same = || Ok("h".to_string());
        assert_eq!(
            verdict(Some(&r), again, 9, Moment::After, same).unwrap(),
            Verdict::PutBack(7)
        );
        // Before the build it is what a consumer may have seen since: recorded as it is.
        assert_eq!(
            verdict(Some(&r), again, 9, Moment::Before, same).unwrap(),
            Verdict::Record
        );
    }

    #[test]
    fn changed_or_new_content_is_recorded_with_its_own_mtime() {
        let r = recorded("h", 7, 1);
        let again = Stat { ino: 2, ..r.stat };
        for moment in [Moment::Before, Moment::After] {
            assert_eq!(
                verdict(Some(&r), again, 9, moment, || Ok("other".to_string())).unwrap(),
                Verdict::Record
            );
            assert_eq!(
                verdict(None, again, 9, moment, never).unwrap(),
                Verdict::Record
            );
        }
    }

    /// A file's bytes and mtime.
    fn file_state(path: &Path) -> (Vec<u8>, SystemTime) {
        (
            std::fs::read(path).unwrap(),
            std::fs::metadata(path).unwrap().modified().unwrap(),
        )
    }

    fn set_mtime(path: &Path, secs: u64) {
        std::fs::File::open(path)
            .unwrap()
            .set_modified(UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn a_removed_directory_built_again_has_every_file_as_it_was_and_a_changed_one_is_new() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
        let write = |rel: &str, text: &str| {
            let path = out.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            set_mtime(&path, 1_000_000);
            path
        };
        let header = write("include/a.h", "a");
        let other = write("lib/b.so", "b");
        std::fs::write(out.join("manifest.json"), "{}").unwrap();
        let mut ledger = Ledger::open(&cache, &out).unwrap();
        ledger.settle(Moment::Before).unwrap();
        ledger.settle(Moment::After).unwrap();
        let (header_was, other_was) = (file_state(&header), file_state(&other));

        std::fs::remove_dir_all(&out).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        let mut ledger = Ledger::open(&cache, &out).unwrap();
        assert_eq!(ledger.manifest_json(), Some("{}"));
        assert_eq!(
            ledger.settle(Moment::Before).unwrap(),
            Settled::default(),
            "nothing there yet, and nothing forgotten"
        );
        std::fs::create_dir_all(header.parent().unwrap()).unwrap();
        std::fs::write(&header, "a").unwrap();
        std::fs::create_dir_all(other.parent().unwrap()).unwrap();
        std::fs::write(&other, "b, changed").unwrap();
        let settled = ledger.settle(Moment::After).unwrap();
        assert_eq!(
            settled,
            Settled {
                put_back: 1,
                recorded: 1
            }
        );
        assert_eq!(
            file_state(&header),
            header_was,
            "bytes and mtime as they were"
        );
        assert_ne!(
            file_state(&other).1,
            other_was.1,
            "changed content: a new mtime"
        );

        // Nothing changed since: the record is neither read for content nor written.
        let record = ledger.file.clone();
        let recorded_at = std::fs::metadata(&record).unwrap().modified().unwrap();
        let mut ledger = Ledger::open(&cache, &out).unwrap();
        ledger.settle(Moment::Before).unwrap();
        assert_eq!(ledger.settle(Moment::After).unwrap(), Settled::default());
        assert_eq!(
            std::fs::metadata(&record).unwrap().modified().unwrap(),
            recorded_at
        );
    }

    #[test]
    fn content_changed_between_builds_and_put_back_later_gets_a_new_mtime() {
        // A run killed after writing other content (never settled), a consumer built against it,
        // then the old content again: the time a consumer last saw is newer than the record's.
        let tmp = tempfile::tempdir().unwrap();
        let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
        std::fs::create_dir_all(&out).unwrap();
        let header = out.join("a.h");
        std::fs::write(&header, "x").unwrap();
        set_mtime(&header, 1_000_000);
        let mut ledger = Ledger::open(&cache, &out).unwrap();
        ledger.settle(Moment::After).unwrap();
        std::fs::write(&header, "y").unwrap();
        set_mtime(&header, 2_000_000);

        let mut ledger = Ledger::open(&cache, &out).unwrap();
        ledger.settle(Moment::Before).unwrap();
        std::fs::write(&header, "x").unwrap();
        set_mtime(&header, 3_000_000);
        ledger.settle(Moment::After).unwrap();
        assert_eq!(
            file_state(&header).1,
            UNIX_EPOCH + Duration::from_secs(3_000_000),
            "not the first time x was there"
        );
    }
}
