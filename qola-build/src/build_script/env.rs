//! The one place qola reads the environment: every read is recorded and, inside a build
//! script, announced to Cargo with `cargo:rerun-if-env-changed`.

use std::ffi::OsString;

use crate::build_script::Directives;
use crate::error::{Error, Result};

/// Reads environment variables and tells Cargo about each one.
#[derive(Debug)]
pub(crate) struct Env<'a> {
    directives: &'a Directives,
}

impl<'a> Env<'a> {
    pub(crate) fn new(directives: &'a Directives) -> Self {
        Env { directives }
    }

    /// The variable as an OS string; unset and empty are both `None`.
    pub(crate) fn var_os(&self, name: &str) -> Option<OsString> {
        self.directives.rerun_if_env_changed(name);
        std::env::var_os(name).filter(|v| !v.is_empty())
    }

    /// The variable as UTF-8; unset and empty are both `None`.
    pub(crate) fn var(&self, name: &str) -> Result<Option<String>> {
        match self.var_os(name) {
            None => Ok(None),
            Some(v) => v.into_string().map(Some).map_err(|v| Error::InvalidEnv {
                name: name.to_string(),
                value: v.to_string_lossy().into_owned(),
                expected: "UTF-8 text".to_string(),
            }),
        }
    }

    /// A boolean switch: `1`, `true`, `yes`, `on` set it; `0`, `false`, `no`, `off` or unset
    /// clear it; anything else is an error.
    pub(crate) fn flag(&self, name: &str) -> Result<bool> {
        let Some(value) = self.var(name)? else {
            return Ok(false);
        };
        match value.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(Error::InvalidEnv {
                name: name.to_string(),
                value,
                expected: "1/true/yes/on or 0/false/no/off".to_string(),
            }),
        }
    }
}
