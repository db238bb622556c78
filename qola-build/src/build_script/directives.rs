//! Cargo build-script directives and user-facing warnings.
//!
//! Inside a build script (the default; [`crate::Prepare::cargo_metadata`] turns it off) qola
//! prints `cargo:rerun-if-env-changed` for every variable it read and `cargo:rerun-if-changed`
//! for its inputs only (the manifest, the patch directory and each patch): never for the AITER
//! tree, the stamp or anything qola writes, because Cargo compares mtimes and a watched file the
//! script writes makes it rerun on every build. Warnings, and information such as a build's summary, become
//! `cargo:warning` lines there (Cargo shows a build script nothing else) and go to standard error
//! elsewhere, information without the word "warning".

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

/// Where directives and warnings go.
#[derive(Debug)]
pub(crate) struct Directives {
    cargo: bool,
    emitted: RefCell<BTreeSet<String>>,
}

impl Directives {
    /// `cargo`: print Cargo directives on standard output (inside a build script).
    pub(crate) fn new(cargo: bool) -> Self {
        Directives {
            cargo,
            emitted: RefCell::new(BTreeSet::new()),
        }
    }

    fn emit_once(&self, line: String) {
        if self.cargo && self.emitted.borrow_mut().insert(line.clone()) {
            println!("{line}");
        }
    }

    /// Every directive printed so far.
    #[cfg(test)]
    pub(crate) fn emitted(&self) -> Vec<String> {
        self.emitted.borrow().iter().cloned().collect()
    }

    /// `cargo:rerun-if-env-changed=NAME`, once per name.
    pub(crate) fn rerun_if_env_changed(&self, name: &str) {
        self.emit_once(format!("cargo:rerun-if-env-changed={name}"));
    }

    /// `cargo:rerun-if-changed=PATH` for an input that exists (a missing path would make Cargo
    /// rerun the script on every build, so it is skipped).
    pub(crate) fn rerun_if_changed(&self, path: &Path) {
        if path.exists() {
            self.emit_once(format!("cargo:rerun-if-changed={}", path.display()));
        }
    }

    /// A warning a report carries too: `cargo:warning` lines in a build script, nothing
    /// otherwise (the command line prints the report's warnings once).
    pub(crate) fn cargo_warning(&self, message: &str) {
        if self.cargo {
            self.warning(message);
        }
    }

    /// Information for the user (a summary, what qola waits for): `cargo:warning` lines in a
    /// build script, where Cargo shows nothing else, and `qola: <message>` on standard error
    /// otherwise: no warning outside a build script.
    pub(crate) fn info(&self, message: &str) {
        match self.cargo {
            true => self.warning(message),
            false => eprintln!("qola: {message}"),
        }
    }

    /// A warning for the user: `cargo:warning` lines in a build script, standard error otherwise.
    pub(crate) fn warning(&self, message: &str) {
        if self.cargo {
            for line in message.lines() {
                println!("cargo:warning={line}");
            }
        } else {
            eprintln!("qola: warning: {message}");
        }
    }
}
