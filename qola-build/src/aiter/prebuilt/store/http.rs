//! An HTTP(S) server as a store (`http://`, `https://`): `GET`, `HEAD`, and a publish that
//! `PUT`s a temporary name and moves it into place with WebDAV's `MOVE` (a plain `PUT` of the
//! name where the server has no `MOVE`).

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use super::{Backend, NoArchive, temporary};

/// An HTTP(S) base URL, without a trailing `/`, and the client with the timeout.
#[derive(Debug)]
struct Http {
    base: String,
    agent: ureq::Agent,
}

/// The store of an `http://` or `https://` URL, each answer awaited at most `timeout`.
pub(super) fn open(url: &str, timeout: Duration) -> Option<Result<Arc<dyn Backend>, String>> {
    if !url.starts_with("http://") && !url.starts_with("https://") {
        return None;
    }
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .allow_non_standard_methods(true)
        .build()
        .into();
    Some(Ok(Arc::new(Http {
        base: url.trim_end_matches('/').to_string(),
        agent,
    })))
}

impl Backend for Http {
    fn locate(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, NoArchive> {
        let response = self
            .agent
            .get(self.locate(name))
            .call()
            .map_err(no_answer)?;
        match response.status().as_u16() {
            200 => {
                let mut bytes = Vec::new();
                response
                    .into_body()
                    .into_reader()
                    .read_to_end(&mut bytes)
                    .map_err(|e| NoArchive::NoAnswer(format!("reading the answer: {e}")))?;
                Ok(bytes)
            }
            404 | 410 => Err(NoArchive::Missing),
            status => Err(status_failure("GET", status)),
        }
    }

    fn holds(&self, name: &str) -> Result<bool, NoArchive> {
        let response = self
            .agent
            .head(self.locate(name))
            .call()
            .map_err(no_answer)?;
        match response.status().as_u16() {
            200 => Ok(true),
            404 | 410 => Ok(false),
            status => Err(status_failure("HEAD", status)),
        }
    }

    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), NoArchive> {
        let agent = &self.agent;
        let tmp_url = self.locate(&temporary(name));
        let response = agent.put(&tmp_url).send(bytes).map_err(no_answer)?;
        match response.status().as_u16() {
            200..=299 => {}
            status => return Err(status_failure("PUT", status)),
        }
        let request = ureq::http::Request::builder()
            .method("MOVE")
            .uri(&tmp_url)
            .header("Destination", self.locate(name))
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
                    .put(self.locate(name))
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

/// A transport error: nothing answered (refused connection, unknown host, timeout).
fn no_answer(e: ureq::Error) -> NoArchive {
    NoArchive::NoAnswer(match e {
        ureq::Error::Timeout(what) => format!("no answer within the timeout ({what})"),
        other => other.to_string(),
    })
}

/// An HTTP status that is not a success or a miss.
fn status_failure(method: &str, status: u16) -> NoArchive {
    let what = format!("{method} answered HTTP {status}");
    match status {
        401 | 403 | 405 => NoArchive::Refused(what),
        _ => NoArchive::Error(what),
    }
}
