//! A module's archive: a zstd-compressed tar whose first member, `qola-prebuilt.json`
//! ([`Index`]), names the key and each file with its size and blake3; then the files, at their
//! paths under the output directory (`lib/<md_name>.so`, `include/...`, `configs/...`).
//!
//! Unpacking checks everything before anything reaches the output directory: the index's key
//! is the one asked for, every member is a plain file at a relative path inside the output
//! directory (no `..`, no absolute path, no link), listed once in the index, with the size and
//! hash the index gives; every listed file is there. Only then does each file move into place
//! (a rename, atomic per file; a file already holding those bytes is left as it is).

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The index member's name.
pub(crate) const INDEX: &str = "qola-prebuilt.json";

/// `qola-prebuilt.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Index {
    /// [`super::key::FORMAT`].
    pub format: u32,
    /// The library key the files were built for.
    pub key: String,
    /// The library's name.
    pub md_name: String,
    /// Every file, in archive order.
    pub files: Vec<IndexedFile>,
}

/// One file of an [`Index`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IndexedFile {
    /// Its path under the output directory, `/`-separated.
    pub path: String,
    /// Its size.
    pub size: u64,
    /// blake3 of its bytes.
    pub blake3: String,
}

impl Index {
    /// The index of `files` (paths relative to `out_dir`) as the files of `key`, with their
    /// bytes.
    pub(crate) fn of(
        out_dir: &Path,
        files: &[String],
        key: &str,
        md_name: &str,
    ) -> std::io::Result<(Index, Vec<Vec<u8>>)> {
        let mut contents = Vec::new();
        let mut index = Index {
            format: super::key::FORMAT,
            key: key.to_string(),
            md_name: md_name.to_string(),
            files: Vec::new(),
        };
        for path in files {
            let bytes = std::fs::read(out_dir.join(path))?;
            index.files.push(IndexedFile {
                path: path.clone(),
                size: bytes.len() as u64,
                blake3: blake3::hash(&bytes).to_hex().to_string(),
            });
            contents.push(bytes);
        }
        Ok((index, contents))
    }
}

impl IndexedFile {
    /// Whether `out_dir` holds this file with these bytes.
    pub(crate) fn is_in(&self, out_dir: &Path) -> bool {
        std::fs::read(out_dir.join(&self.path))
            .is_ok_and(|bytes| blake3::hash(&bytes).to_hex().as_str() == self.blake3)
    }
}

impl Index {
    /// The index as its archive holds it (the statement a publisher signs, see `signing`).
    pub(crate) fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("an index serializes")
    }
}

/// The bytes of `archive`'s first member, its index (nothing is written): what its signature
/// is checked against before anything is unpacked. `Err` says what is wrong with the archive.
pub(crate) fn index_member(archive: &[u8]) -> Result<Vec<u8>, String> {
    let mut first = None;
    each_member(archive, |name, bytes| {
        if name != INDEX {
            return Err(format!("its first member is {name}, not {INDEX}"));
        }
        first = Some(bytes);
        Ok(false)
    })?;
    first.ok_or_else(|| format!("it is empty (no {INDEX})"))
}

/// Reads `archive`'s members in order, each a plain file (anything else is refused), giving
/// `visit` its name and bytes until it returns `Ok(false)`. `Err` says what is wrong.
fn each_member(
    archive: &[u8],
    mut visit: impl FnMut(&str, Vec<u8>) -> Result<bool, String>,
) -> Result<(), String> {
    let decoder = zstd::Decoder::new(archive).map_err(|e| format!("not a zstd stream: {e}"))?;
    let mut tar = tar::Archive::new(decoder);
    let corrupt = |e: std::io::Error| format!("corrupt or truncated: {e}");
    for entry in tar.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        let name = entry
            .path()
            .map_err(corrupt)?
            .to_string_lossy()
            .into_owned();
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(format!(
                "member {name} is a {:?}, not a plain file (links and devices are refused)",
                entry.header().entry_type()
            ));
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(corrupt)?;
        if !visit(&name, bytes)? {
            break;
        }
    }
    Ok(())
}

/// Packs the files of `index`, with their `contents` ([`Index::of`]), as its archive.
pub(crate) fn pack(index: &Index, contents: &[Vec<u8>]) -> std::io::Result<Vec<u8>> {
    let encoder = zstd::Encoder::new(Vec::new(), 3)?;
    let mut tar = tar::Builder::new(encoder);
    let json = index.bytes();
    let mut append = |name: &str, bytes: &[u8], mode: u32| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, name, bytes)
    };
    append(INDEX, &json, 0o644)?;
    for (file, bytes) in index.files.iter().zip(contents) {
        let mode = if file.path.ends_with(".so") {
            0o755
        } else {
            0o644
        };
        append(&file.path, bytes, mode)?;
    }
    tar.into_inner()?.finish()
}

/// Checks `archive` against `key` and writes its files under `staging` (see the module docs).
/// `Err` says what is wrong with it.
pub(crate) fn unpack(archive: &[u8], key: &str, staging: &Path) -> Result<Index, String> {
    let mut index: Option<Index> = None;
    let mut seen = std::collections::BTreeSet::new();
    each_member(archive, |name, bytes| {
        let Some(relative) = inside(name) else {
            return Err(format!(
                "member {name} leaves the output directory (an absolute path or `..`)"
            ));
        };
        let Some(index) = &index else {
            if name != INDEX {
                return Err(format!("its first member is {name}, not {INDEX}"));
            }
            let read: Index = serde_json::from_slice(&bytes)
                .map_err(|e| format!("{INDEX} is not an index: {e}"))?;
            if read.format != super::key::FORMAT || read.key != key {
                return Err(format!(
                    "it holds the library of key {} (format {}), not of {key}",
                    read.key, read.format
                ));
            }
            index = Some(read);
            return Ok(true);
        };
        let Some(listed) = index.files.iter().find(|f| f.path == name) else {
            return Err(format!("member {name} is not in its index"));
        };
        if !seen.insert(name.to_string()) {
            return Err(format!("member {name} is there twice"));
        }
        let digest = blake3::hash(&bytes).to_hex().to_string();
        if bytes.len() as u64 != listed.size || digest != listed.blake3 {
            return Err(format!(
                "member {name} does not match its index ({} bytes, blake3 {}; the index says {} bytes, {})",
                bytes.len(),
                &digest[..16],
                listed.size,
                &listed.blake3[..listed.blake3.len().min(16)]
            ));
        }
        let path = staging.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let mut file =
            std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        file.write_all(&bytes)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(true)
    })?;
    let Some(index) = index else {
        return Err(format!("it is empty (no {INDEX})"));
    };
    if let Some(missing) = index.files.iter().find(|f| !seen.contains(&f.path)) {
        return Err(format!(
            "truncated: {} is in its index but not in the archive",
            missing.path
        ));
    }
    Ok(index)
}

/// `name` as a path inside the output directory: relative, plain components only.
fn inside(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_outside_the_output_directory_is_named() {
        assert_eq!(inside("lib/a.so"), Some(PathBuf::from("lib/a.so")));
        assert_eq!(inside("../a.so"), None);
        assert_eq!(inside("/etc/passwd"), None);
        assert_eq!(inside("lib/../../a"), None);
    }

    #[test]
    fn a_packed_library_unpacks_to_the_same_bytes_and_only_for_its_key() {
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(out.path().join("lib")).unwrap();
        std::fs::write(out.path().join("lib/x.so"), b"library").unwrap();
        let (index, contents) =
            Index::of(out.path(), &["lib/x.so".to_string()], "k1", "x").unwrap();
        let archive = pack(&index, &contents).unwrap();
        let staging = tempfile::tempdir().unwrap();
        let index = unpack(&archive, "k1", staging.path()).unwrap();
        assert_eq!(index.files.len(), 1);
        assert_eq!(
            std::fs::read(staging.path().join("lib/x.so")).unwrap(),
            b"library"
        );
        let other = unpack(&archive, "k2", tempfile::tempdir().unwrap().path()).unwrap_err();
        assert!(other.contains("not of k2"), "{other}");
        let cut = unpack(
            &archive[..archive.len() / 2],
            "k1",
            tempfile::tempdir().unwrap().path(),
        )
        .unwrap_err();
        assert!(cut.contains("corrupt or truncated"), "{cut}");
    }
}
