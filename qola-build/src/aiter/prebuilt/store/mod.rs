//! Where archives are kept: a directory (`file://`, `dir`) or an HTTP server that takes `GET`
//! and `PUT` (WebDAV as nginx serves it, an object store's endpoint; `http`). A publish writes a
//! temporary name, then moves it into place (a rename; WebDAV's `MOVE`), so a reader sees a
//! whole archive or none, and two publishers of one key leave one of their (valid) archives.
//!
//! # Adding a store
//!
//! A store is a file here with a [`Backend`] and a line in [`BACKENDS`]: its `open` takes the
//! URLs of its scheme (`None` for any other) and the rest of qola is unchanged. What a backend
//! must answer, with S3 as the example (not built):
//!
//! | method | answers | S3 |
//! |---|---|---|
//! | `open(url, timeout)` | its scheme's URLs, else `None`; a malformed one is `Some(Err)` | `s3://bucket/prefix`, credentials from the environment |
//! | `locate(name)` | where `name` is, for messages | `s3://bucket/prefix/<name>` |
//! | `get(name)` | the bytes; [`NoArchive::Missing`] for none (a miss, not a fault), `Refused` for a permission, `NoAnswer` within the timeout | `GetObject`; `NoSuchKey` is `Missing`, `AccessDenied` `Refused` |
//! | `holds(name)` | whether it is there (publishing skips a key the store holds) | `HeadObject` |
//! | `put(name, bytes)` | stored so that a reader sees all of it or none: a temporary name then a move, or one atomic write | `PutObject` (atomic per object) |

mod dir;
mod http;

use std::sync::Arc;
use std::time::Duration;

/// What a store answers (see the module docs).
pub(crate) trait Backend: std::fmt::Debug + Send + Sync {
    /// Where `name` is, for messages.
    fn locate(&self, name: &str) -> String;
    /// The bytes of `name`.
    fn get(&self, name: &str) -> Result<Vec<u8>, NoArchive>;
    /// Whether the store holds `name`; `Err` when it cannot tell.
    fn holds(&self, name: &str) -> Result<bool, NoArchive>;
    /// Stores `bytes` as `name`, whole or not at all for readers.
    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), NoArchive>;
}

/// Opens the backend of a URL: `None` when the URL is not of its scheme.
type Open = fn(url: &str, timeout: Duration) -> Option<Result<Arc<dyn Backend>, String>>;

/// Every store qola knows, asked in turn for a URL.
const BACKENDS: &[Open] = &[dir::open, http::open];

/// A store of archives: the backend its URL names.
#[derive(Debug, Clone)]
pub(crate) struct Store(Arc<dyn Backend>);

/// Why a request got no archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoArchive {
    /// The store answered that there is none (`404`, no such file).
    Missing,
    /// The store refused (`401`, `403`, `405`): a permission, not a fault.
    Refused(String),
    /// The store answered with another error.
    Error(String),
    /// Nothing answered in time, or at all.
    NoAnswer(String),
}

impl std::fmt::Display for NoArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoArchive::Missing => write!(
                f,
                "none was published for this key (the store answered: a miss, not a fault; CI publishes with --publish, and `qola plan` shows the key's inputs to compare with CI's)"
            ),
            NoArchive::Refused(why) => write!(
                f,
                "{why}: the store refused (check its permissions, and the credentials or allow list that reach it)"
            ),
            NoArchive::Error(why) => write!(
                f,
                "{why} (an error, not a miss: check the server's error log, or the directory of a file:// store)"
            ),
            NoArchive::NoAnswer(why) => write!(
                f,
                "{why} (check that the server is up and reachable; QOLA_PREBUILT_TIMEOUT sets how long to wait)"
            ),
        }
    }
}

impl Store {
    /// The store at `url` (`file:///dir`, `http://host/path`, `https://...`); anything else is
    /// `Err` with what is accepted.
    pub(crate) fn open(url: &str, timeout: Duration) -> Result<Store, String> {
        BACKENDS
            .iter()
            .find_map(|open| open(url, timeout))
            .unwrap_or_else(|| {
                Err(format!(
                    "{url}: not a store qola knows; give file:///<dir> or http(s)://<host>/<path>"
                ))
            })
            .map(Store)
    }

    /// Where `name` is, for messages.
    pub(crate) fn locate(&self, name: &str) -> String {
        self.0.locate(name)
    }

    /// The bytes of `name`.
    pub(crate) fn get(&self, name: &str) -> Result<Vec<u8>, NoArchive> {
        self.0.get(name)
    }

    /// Whether the store holds `name`; `Err` when it cannot tell.
    pub(crate) fn holds(&self, name: &str) -> Result<bool, NoArchive> {
        self.0.holds(name)
    }

    /// Stores `bytes` as `name` (see the module docs).
    pub(crate) fn put(&self, name: &str, bytes: &[u8]) -> Result<(), NoArchive> {
        self.0.put(name, bytes)
    }
}

/// The temporary name a publish of `name` writes before moving it into place: this process's,
/// and this moment's.
fn temporary(name: &str) -> String {
    format!(
        "{name}.tmp-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
}
