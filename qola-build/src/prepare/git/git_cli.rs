//! The `git` command line, used for network access only (clone and fetch), so that credential
//! helpers, proxies and URL rewrites work as the user configured them. Its output is shown on
//! failure and never parsed: everything qola inspects locally goes through git2.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build_script::Env;
use crate::common::io::io_error;
use crate::common::text::shell_quote;
use crate::prepare::report::{PrepareError, Result};

/// Variables that would point git at another repository than the one qola names.
const REPOSITORY_VARIABLES: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
];

/// The `git` executable.
#[derive(Debug, Clone)]
pub(crate) struct GitCli {
    exe: PathBuf,
}

impl GitCli {
    /// Finds git: `QOLA_GIT`, then `git` on `PATH`.
    pub(crate) fn find(env: &Env, what: &str) -> Result<GitCli> {
        let exe = match env.var_os("QOLA_GIT") {
            Some(path) => PathBuf::from(path),
            None => which::which("git").map_err(|_| PrepareError::GitNotFound {
                what: what.to_string(),
            })?,
        };
        Ok(GitCli { exe })
    }

    /// Runs `git <args>` in `cwd`; `what` and `hint` go into the error.
    pub(crate) fn run<S: AsRef<OsStr>>(
        &self,
        cwd: &Path,
        args: &[S],
        what: &str,
        hint: &str,
    ) -> Result<()> {
        let mut command = Command::new(&self.exe);
        command
            .current_dir(cwd)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0");
        for name in REPOSITORY_VARIABLES {
            command.env_remove(name);
        }
        let shown = format!(
            "cd {} && {} {}",
            shell_quote(&cwd.to_string_lossy()),
            shell_quote(&self.exe.to_string_lossy()),
            args.iter()
                .map(|a| shell_quote(&a.as_ref().to_string_lossy()))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let output = command
            .output()
            .map_err(io_error(&format!("run `{shown}` to {what}"), &self.exe))?;
        if output.status.success() {
            return Ok(());
        }
        Err(PrepareError::GitCommand {
            command: shown,
            status: output.status.code(),
            what: what.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr)
                .trim_end()
                .to_string(),
            hint: hint.to_string(),
        })
    }
}
