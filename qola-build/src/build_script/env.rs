//! The one place qola reads the environment: every read is recorded and, inside a build
//! script, announced to Cargo with `cargo:rerun-if-env-changed`, except `PATH` (as `cc` does: a
//! shell and an IDE with different `PATH`s would rerun the script back and forth; a compiler
//! found through `PATH` is covered by its identity in every cache key). Reading the
//! environment anywhere else is a lint error (`clippy.toml`, `disallowed-methods`).

use std::ffi::OsString;

use crate::build_script::directives::Directives;
use crate::common::failure::EnvError;

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
        read(name)
    }

    /// The directives the reads are announced through: an entry point's context, handed down
    /// with this `Env`.
    pub(crate) fn directives(&self) -> &'a Directives {
        self.directives
    }

    /// `PATH`, not announced to Cargo (see the module docs).
    pub(crate) fn path(&self) -> Option<OsString> {
        read("PATH")
    }

    /// The variable as UTF-8; unset and empty are both `None`.
    pub(crate) fn var(&self, name: &str) -> Result<Option<String>, EnvError> {
        match self.var_os(name) {
            None => Ok(None),
            Some(v) => v.into_string().map(Some).map_err(|v| EnvError {
                name: name.to_string(),
                value: v.to_string_lossy().into_owned(),
                expected: "UTF-8 text".to_string(),
            }),
        }
    }

    /// The variable parsed as a `T` (surrounding spaces ignored); a value that does not parse
    /// is an error saying what was `expected`.
    pub(crate) fn parsed<T: std::str::FromStr>(
        &self,
        name: &str,
        expected: &str,
    ) -> Result<Option<T>, EnvError> {
        let Some(value) = self.var(name)? else {
            return Ok(None);
        };
        value.trim().parse().map(Some).map_err(|_| EnvError {
            name: name.to_string(),
            value,
            expected: expected.to_string(),
        })
    }

    /// A boolean switch: `1`, `true`, `yes`, `on` set it; `0`, `false`, `no`, `off` or unset
    /// clear it; anything else is an error.
    pub(crate) fn flag(&self, name: &str) -> Result<bool, EnvError> {
        let Some(value) = self.var(name)? else {
            return Ok(false);
        };
        match value.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(EnvError {
                name: name.to_string(),
                value,
                expected: "1/true/yes/on or 0/false/no/off".to_string(),
            }),
        }
    }
}

impl Env<'_> {
    /// The names of the set variables that start with `prefix` (each then read, and announced,
    /// through [`Env::var_os`] by the caller).
    pub(crate) fn names_starting_with(&self, prefix: &str) -> Vec<String> {
        #[allow(clippy::disallowed_methods)]
        let mut names: Vec<String> = std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .filter(|name| name.starts_with(prefix))
            .collect();
        names.sort();
        names
    }
}

/// The one read of the process environment.
#[allow(clippy::disallowed_methods)]
fn read(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_that_does_not_parse_names_the_variable_and_what_was_expected() {
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        // SAFETY: a name no other test reads.
        unsafe { std::env::set_var("QOLA_TEST_PARSED_NUMBER", " 0 ") };
        assert_eq!(
            env.parsed::<u64>("QOLA_TEST_PARSED_NUMBER", "seconds")
                .unwrap(),
            Some(0)
        );
        let e = env
            .parsed::<std::num::NonZeroU64>("QOLA_TEST_PARSED_NUMBER", "a number above 0")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "environment variable QOLA_TEST_PARSED_NUMBER=\" 0 \" is not valid: expected a number above 0; unset it or fix its value"
        );
        assert_eq!(
            env.parsed::<u64>("QOLA_SURELY_UNSET_NUMBER", "x").unwrap(),
            None
        );
    }

    #[test]
    fn every_read_is_announced_to_cargo_but_path() {
        let directives = Directives::new(true);
        let env = Env::new(&directives);
        env.var_os("QOLA_SOME_SETTING");
        env.path();
        assert_eq!(
            directives.emitted(),
            ["cargo:rerun-if-env-changed=QOLA_SOME_SETTING"]
        );
    }
}
