//! Paths of a tree as qola's maps key them: git paths are bytes, qola's keys are strings.
//!
//! A path that is UTF-8 is its own key. Any other is written with each byte that is not part of
//! valid UTF-8 as `\xNN` (and each `\` as `\\`), followed by a NUL: no real path contains a NUL,
//! so keys never collide, and the directories before the odd name keep their spelling (a key
//! still starts with its submodule's path). [`on_disk`] and [`as_path`] turn a key back into the
//! exact bytes; [`shown`] is the key for people (without the NUL).

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Marks a key that escapes bytes.
const ESCAPED: char = '\0';

/// The key of a path given as bytes.
pub(crate) fn key(bytes: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(bytes)
        && !text.contains(ESCAPED)
    {
        return text.to_string();
    }
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push(ESCAPED);
    out
}

/// The bytes a key names.
pub(crate) fn bytes(key: &str) -> Cow<'_, [u8]> {
    let Some(escaped) = key.strip_suffix(ESCAPED) else {
        return Cow::Borrowed(key.as_bytes());
    };
    let raw = escaped.as_bytes();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match (raw[i], raw.get(i + 1)) {
            (b'\\', Some(b'\\')) => {
                out.push(b'\\');
                i += 2;
            }
            (b'\\', Some(b'x')) => {
                let hex = std::str::from_utf8(&raw[i + 2..(i + 4).min(raw.len())]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    Cow::Owned(out)
}

/// The key as a relative path (for git2 lookups).
pub(crate) fn as_path(key: &str) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(&bytes(key)))
}

/// Where the key's path is under `root`.
pub(crate) fn on_disk(root: &Path, key: &str) -> PathBuf {
    root.join(as_path(key))
}

/// The key for messages and reports: without its NUL.
pub(crate) fn shown(key: &str) -> String {
    key.strip_suffix(ESCAPED).unwrap_or(key).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_keep_their_directories() {
        for raw in [
            b"csrc/a.h".as_slice(),
            b"3rdparty/ck/caf\xe9.txt",
            b"x\\y\xff",
            b"\xc3",
        ] {
            let k = key(raw);
            assert_eq!(&*bytes(&k), raw, "{k:?}");
        }
        assert_eq!(key(b"csrc/a.h"), "csrc/a.h");
        let odd = key(b"3rdparty/ck/caf\xe9.txt");
        assert!(odd.starts_with("3rdparty/ck/"));
        assert_eq!(shown(&odd), "3rdparty/ck/caf\\xe9.txt");
        assert_ne!(key(b"caf\\xe9.txt"), key(b"caf\xe9.txt"));
    }
}
