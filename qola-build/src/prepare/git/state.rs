//! The state of one path of a work tree as git sees it: a mode and a full blob id, or absent.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::common::io::io_error;
use crate::common::io::is_absent;
use crate::prepare::report::{Result, git_error};

/// A file's content and git mode (0o100644, 0o100755 or 0o120000 for a symlink).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileContent {
    /// Git file mode.
    pub mode: u32,
    /// Bytes (a symlink's target for mode 0o120000).
    pub data: Vec<u8>,
}

/// Git's mode of a symbolic link.
pub(crate) const MODE_SYMLINK: u32 = 0o120000;
/// Git's mode of a submodule entry.
pub(crate) const MODE_GITLINK: u32 = 0o160000;
/// Git's mode of a regular file.
pub(crate) const MODE_FILE: u32 = 0o100644;
/// Git's mode of an executable file.
pub(crate) const MODE_EXEC: u32 = 0o100755;

/// A path's content: git mode (octal 100644, 100755, 120000) and blob id (hex).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// Git mode.
    pub mode: u32,
    /// Full blob id, hex.
    pub id: String,
}

/// A path's state: `None` when absent.
pub(crate) type PathState = Option<Entry>;

impl Entry {
    /// The entry of `content`, hashing it as a blob.
    pub(crate) fn of(content: &FileContent) -> Entry {
        Entry {
            mode: content.mode,
            id: blob_id(&content.data),
        }
    }
}

/// The git blob id of `data`.
pub(crate) fn blob_id(data: &[u8]) -> String {
    git2::Oid::hash_object(git2::ObjectType::Blob, data)
        .expect("hashing bytes in memory cannot fail")
        .to_string()
}

/// Reads what git would record for `path` in the work tree (no filters: qola pins
/// `core.autocrlf=false`). A directory or a missing file is absent.
pub(crate) fn workdir_entry(path: &Path) -> Result<PathState> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => return Err(io_error("inspect", path)(e).into()),
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).map_err(io_error("read the link", path))?;
        return Ok(Some(Entry {
            mode: MODE_SYMLINK,
            id: blob_id(target.as_os_str().as_encoded_bytes()),
        }));
    }
    if !meta.is_file() {
        return Ok(None);
    }
    let id = git2::Oid::hash_file(git2::ObjectType::Blob, path)
        .map_err(git_error("hash the file", path))?;
    let mode = if meta.permissions().mode() & 0o111 != 0 {
        MODE_EXEC
    } else {
        MODE_FILE
    };
    Ok(Some(Entry {
        mode,
        id: id.to_string(),
    }))
}

/// Reads a work-tree file as content (`None` when absent).
pub(crate) fn workdir_content(path: &Path) -> Result<Option<FileContent>> {
    let Some(entry) = workdir_entry(path)? else {
        return Ok(None);
    };
    let data = if entry.mode == MODE_SYMLINK {
        std::fs::read_link(path)
            .map_err(io_error("read the link", path))?
            .into_os_string()
            .into_encoded_bytes()
    } else {
        std::fs::read(path).map_err(io_error("read", path))?
    };
    Ok(Some(FileContent {
        mode: entry.mode,
        data,
    }))
}
