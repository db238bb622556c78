//! Where archives are kept: a directory (`file://`) or an HTTP server that takes `GET` and `PUT`
//! (WebDAV as nginx serves it, an object store's endpoint). A publish writes a temporary name,
//! then moves it into place (a rename; WebDAV's `MOVE`), so a reader sees a whole archive or
//! none, and two publishers of one key leave one of their (valid) archives.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

/// A store of archives.
#[derive(Debug, Clone)]
pub(crate) enum Store {
    /// A shared directory.
    Dir(PathBuf),
    /// An HTTP(S) base URL, without a trailing `/`.
    Http {
        /// The base.
        base: String,
        /// The client, with the timeout.
        agent: ureq::Agent,
    },
}

/// Why a request got no archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The store answered that there is none (`404`, no such file).
    Missing,
    /// The store refused (`401`, `403`, `405`): a permission, not a fault.
    Refused(String),
    /// The store answered with another error.
    Error(String),
    /// Nothing answered in time, or at all.
    NoAnswer(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Missing => write!(
                f,
                "none was published for this key (the store answered: a miss, not a fault; CI publishes with --publish, and `qola plan` shows the key's inputs to compare with CI's)"
            ),
            Failure::Refused(why) => write!(
                f,
                "{why}: the store refused (check its permissions, and the credentials or allow list that reach it)"
            ),
            Failure::Error(why) => write!(
                f,
                "{why} (an error, not a miss: check the server's error log, or the directory of a file:// store)"
            ),
            Failure::NoAnswer(why) => write!(
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
        if let Some(path) = url.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(format!(
                    "{url}: a file:// URL names an absolute directory (file:///shared/qola)"
                ));
            }
            return Ok(Store::Dir(PathBuf::from(path)));
        }
        if url.starts_with("http://") || url.starts_with("https://") {
            let agent = ureq::Agent::config_builder()
                .timeout_global(Some(timeout))
                .http_status_as_error(false)
                .allow_non_standard_methods(true)
                .build()
                .into();
            return Ok(Store::Http {
                base: url.trim_end_matches('/').to_string(),
                agent,
            });
        }
        Err(format!(
            "{url}: not a store qola knows; give file:///<dir> or http(s)://<host>/<path>"
        ))
    }

    /// Where `name` is, for messages.
    pub(crate) fn locate(&self, name: &str) -> String {
        match self {
            Store::Dir(dir) => dir.join(name).display().to_string(),
            Store::Http { base, .. } => format!("{base}/{name}"),
        }
    }

    /// The bytes of `name`.
    pub(crate) fn get(&self, name: &str) -> Result<Vec<u8>, Failure> {
        match self {
            Store::Dir(dir) => std::fs::read(dir.join(name)).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Failure::Missing,
                std::io::ErrorKind::PermissionDenied => Failure::Refused(e.to_string()),
                _ => Failure::Error(e.to_string()),
            }),
            Store::Http { base, agent } => {
                let url = format!("{base}/{name}");
                let response = agent.get(&url).call().map_err(no_answer)?;
                match response.status().as_u16() {
                    200 => {
                        let mut bytes = Vec::new();
                        response
                            .into_body()
                            .into_reader()
                            .read_to_end(&mut bytes)
                            .map_err(|e| Failure::NoAnswer(format!("reading the answer: {e}")))?;
                        Ok(bytes)
                    }
                    404 | 410 => Err(Failure::Missing),
                    status => Err(status_failure("GET", status)),
                }
            }
        }
    }

    /// Whether the store holds `name` (`HEAD`, or the file); `Err` when it cannot tell.
    pub(crate) fn holds(&self, name: &str) -> Result<bool, Failure> {
        match self {
            Store::Dir(dir) => Ok(dir.join(name).is_file()),
            Store::Http { base, agent } => {
                let response = agent
                    .head(format!("{base}/{name}"))
                    .call()
                    .map_err(no_answer)?;
                match response.status().as_u16() {
                    200 => Ok(true),
                    404 | 410 => Ok(false),
                    status => Err(status_failure("HEAD", status)),
                }
            }
        }
    }

    /// Stores `bytes` as `name`: a temporary name, then a move (see the module docs).
    pub(crate) fn put(&self, name: &str, bytes: &[u8]) -> Result<(), Failure> {
        let temporary = format!(
            "{name}.tmp-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        match self {
            Store::Dir(dir) => {
                let path = dir.join(name);
                let tmp = dir.join(&temporary);
                let io = |e: std::io::Error| match e.kind() {
                    std::io::ErrorKind::PermissionDenied => Failure::Refused(e.to_string()),
                    _ => Failure::Error(e.to_string()),
                };
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(io)?;
                }
                std::fs::write(&tmp, bytes).map_err(io)?;
                std::fs::rename(&tmp, &path).map_err(|e| {
                    let _ = std::fs::remove_file(&tmp);
                    io(e)
                })
            }
            Store::Http { base, agent } => {
                let tmp_url = format!("{base}/{temporary}");
                let response = agent.put(&tmp_url).send(bytes).map_err(no_answer)?;
                match response.status().as_u16() {
                    200..=299 => {}
                    status => return Err(status_failure("PUT", status)),
                }
                let request = ureq::http::Request::builder()
                    .method("MOVE")
                    .uri(&tmp_url)
                    .header("Destination", format!("{base}/{name}"))
                    .header("Overwrite", "T")
                    .body(())
                    .expect("a MOVE request builds");
                let moved = agent.run(request).map_err(no_answer)?;
                match moved.status().as_u16() {
                    200..=299 => Ok(()),
                    // No WebDAV: the server's own PUT is the atomic step.
                    405 | 501 => {
                        let _ = agent.delete(&tmp_url).call();
                        let response = agent
                            .put(format!("{base}/{name}"))
                            .send(bytes)
                            .map_err(no_answer)?;
                        match response.status().as_u16() {
                            200..=299 => Ok(()),
                            status => Err(status_failure("PUT", status)),
                        }
                    }
                    status => {
                        let _ = agent.delete(&tmp_url).call();
                        Err(status_failure("MOVE", status))
                    }
                }
            }
        }
    }
}

/// A transport error: nothing answered (refused connection, unknown host, timeout).
fn no_answer(e: ureq::Error) -> Failure {
    Failure::NoAnswer(match e {
        ureq::Error::Timeout(what) => format!("no answer within the timeout ({what})"),
        other => other.to_string(),
    })
}

/// An HTTP status that is not a success or a miss.
fn status_failure(method: &str, status: u16) -> Failure {
    let what = format!("{method} answered HTTP {status}");
    match status {
        401 | 403 | 405 => Failure::Refused(what),
        _ => Failure::Error(what),
    }
}
