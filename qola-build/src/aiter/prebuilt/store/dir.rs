//! A shared directory as a store (`file:///<dir>`): a publish writes a temporary file, then
//! renames it into place.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{Backend, NoArchive, temporary};

/// A store in a directory.
#[derive(Debug)]
struct Dir(PathBuf);

/// The store of a `file://` URL (an absolute directory).
pub(super) fn open(url: &str, _timeout: Duration) -> Option<Result<Arc<dyn Backend>, String>> {
    let path = url.strip_prefix("file://")?;
    if !path.starts_with('/') {
        return Some(Err(format!(
            "{url}: a file:// URL names an absolute directory (file:///shared/qola)"
        )));
    }
    Some(Ok(Arc::new(Dir(PathBuf::from(path)))))
}

/// A failure of the file system as a store's answer.
fn io(e: std::io::Error) -> NoArchive {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => NoArchive::Refused(e.to_string()),
        _ => NoArchive::Error(e.to_string()),
    }
}

impl Backend for Dir {
    fn locate(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, NoArchive> {
        std::fs::read(self.0.join(name)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => NoArchive::Missing,
            _ => io(e),
        })
    }

    fn holds(&self, name: &str) -> Result<bool, NoArchive> {
        Ok(self.0.join(name).is_file())
    }

    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), NoArchive> {
        let path = self.0.join(name);
        let tmp = self.0.join(temporary(name));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&tmp, bytes).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })
    }
}
