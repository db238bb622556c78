//! The exit statuses of `qola`, one table (docs/command-line.md gives it too).
//!
//! | status | meaning | QoLA's |
//! |---|---|---|
//! | 0 | success (help and `--version` included) | 0 |
//! | 1 | an error: a module failed, a preparation or a compile failed, a file could not be read, an input qola checks and refuses (manifest, environment, an option's value) | 1 |
//! | 2 | a usage error: an unknown option, a missing value, options that do not go together; nothing ran | 2 (argparse's) |
//! | 3 | refused: the AITER checkout holds local edits (`--force`, `--skip-checkout` or `qola diff` are the ways on); `switch-te`: TE's QoLA submodule holds local edits git will not drop | (QoLA resets instead) |
//!
//! QoLA's CMake and TransformerEngine's test only "not 0", so these keep QoLA's where it has one.

use std::process::ExitCode;

/// An error: something failed.
pub(crate) const ERROR: u8 = 1;
/// A usage error: the command line is wrong; nothing ran.
pub(crate) const USAGE: u8 = 2;
/// Local edits made qola refuse.
pub(crate) const REFUSED: u8 = 3;

/// The status `code`.
pub(crate) fn status(code: u8) -> ExitCode {
    ExitCode::from(code)
}
