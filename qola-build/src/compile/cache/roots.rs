//! The roots of a build: the directories whose location must not matter, each under a name.
//!
//! A build's files live under a few directories that move between builds of the same content:
//! the crate's own directory (`crate`), the output directory (`out`, Cargo's `OUT_DIR` or `qola
//! build`'s), qola's cache (`cache`), and whatever a caller names (AITER's tree as `aiter`, its
//! generated code as `gen`). A path under a root is **named** relative to it,
//! `<root name>/<path in the root>`; a path under no root (system and ROCm headers) keeps its
//! absolute name. Names, not locations, go into everything that must not depend on where the
//! build is: the compile command, the unit ids and cache keys, the recorded header lists.
//!
//! Compiles run in a directory of links, `<out>/qola-roots/`, one per root (`crate ->
//! /home/me/ws/qola-sys`), with every path under a root given by its name. The compiler then
//! sees, and embeds in objects (`__FILE__`, the HIP unit id, debug line tables with
//! `-fdebug-compilation-dir=.`), only names: the same unit compiled in two places gives the
//! same command line and byte-identical objects, which launchers (ccache, sccache) hash alike
//! too. The links are made only by a build that compiles, so a no-op build writes nothing.

use std::path::{Component, Path, PathBuf};

use crate::common::io::io_error;
use crate::compile::Result;

/// The directory of root links under the output directory.
const LINKS: &str = "qola-roots";

/// A build's roots (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Roots {
    /// Where the links live and compiles run.
    dir: PathBuf,
    /// Name and canonical directory of each root, longest directory first.
    roots: Vec<(String, PathBuf)>,
}

impl Roots {
    /// The roots `named` (name, directory), with the links under `out_dir`. A later entry with
    /// an earlier one's name replaces it; a directory that does not exist is left out.
    pub(crate) fn new(out_dir: &Path, named: &[(String, PathBuf)]) -> Roots {
        let mut roots: Vec<(String, PathBuf)> = Vec::new();
        for (name, dir) in named {
            let Ok(dir) = dir.canonicalize() else {
                continue;
            };
            roots.retain(|(n, _)| n != name);
            roots.push((name.clone(), dir));
        }
        roots.sort_by_key(|(_, dir)| std::cmp::Reverse(dir.as_os_str().len()));
        Roots {
            dir: out_dir.join(LINKS),
            roots,
        }
    }

    /// Where compiles run (the links' directory).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The name of `path` (absolute): `<root>/<rest>` under the innermost root, else the path.
    pub(crate) fn name(&self, path: &Path) -> String {
        if let Ok(rest) = path.strip_prefix(&self.dir) {
            return normalize(rest).to_string_lossy().into_owned();
        }
        for (name, dir) in &self.roots {
            if let Ok(rest) = path.strip_prefix(dir) {
                return if rest.as_os_str().is_empty() {
                    name.clone()
                } else {
                    format!("{name}/{}", rest.display())
                };
            }
        }
        path.to_string_lossy().into_owned()
    }

    /// The file a name stands for on this machine (a name under no root is its own path). A
    /// name whose root this build does not have resolves to nothing.
    pub(crate) fn resolve(&self, name: &str) -> Option<PathBuf> {
        let path = Path::new(name);
        if path.is_absolute() {
            return Some(normalize(path));
        }
        let mut parts = path.components();
        let first = parts.next()?.as_os_str().to_string_lossy().into_owned();
        let (_, dir) = self.roots.iter().find(|(n, _)| *n == first)?;
        Some(normalize(&dir.join(parts.as_path())))
    }

    /// A name as the compiler wrote it (relative to the links' directory, maybe through `..`,
    /// or absolute, maybe through the links' directory) in its canonical form.
    pub(crate) fn rename(&self, written: &Path) -> String {
        let absolute = if written.is_absolute() {
            written.to_path_buf()
        } else {
            match self.resolve(&written.to_string_lossy()) {
                Some(path) => path,
                None => self.dir.join(written),
            }
        };
        self.name(&normalize(&absolute))
    }

    /// `arg` with every root directory in it replaced by the root's name: a whole path, the
    /// value of `-I`, `-isystem`-like flags and of `--name=value` options.
    pub(crate) fn rewrite_arg(&self, arg: &str) -> String {
        if Path::new(arg).is_absolute() {
            return self.name(Path::new(arg));
        }
        for prefix in ["-I", "-iquote", "-isystem", "-idirafter", "-include"] {
            if let Some(rest) = arg.strip_prefix(prefix)
                && Path::new(rest).is_absolute()
            {
                return format!("{prefix}{}", self.name(Path::new(rest)));
            }
        }
        if let Some((option, value)) = arg.split_once('=')
            && Path::new(value).is_absolute()
        {
            return format!("{option}={}", self.name(Path::new(value)));
        }
        arg.to_string()
    }

    /// Makes (or repairs) the links; only a build that compiles calls this. What is at the
    /// links' place and is not qola's directory is never followed (see `own_dir`).
    pub(crate) fn link(&self) -> Result<()> {
        crate::common::io::own_dir(&self.dir)?;
        for (name, dir) in &self.roots {
            let link = self.dir.join(name);
            if std::fs::read_link(&link).is_ok_and(|to| to == *dir) {
                continue;
            }
            let partial = self.dir.join(format!(".{name}.{}", std::process::id()));
            let _ = std::fs::remove_file(&partial);
            std::os::unix::fs::symlink(dir, &partial)
                .map_err(io_error("link the root", &partial))?;
            std::fs::rename(&partial, &link).map_err(io_error("link the root", &link))?;
        }
        Ok(())
    }
}

/// `path` with `.` removed and `..` applied lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(tmp: &Path) -> Roots {
        for dir in [
            "ws/crate/kernels",
            "cache/checkouts/aiter/csrc",
            "target/out/gen",
        ] {
            std::fs::create_dir_all(tmp.join(dir)).unwrap();
        }
        Roots::new(
            &tmp.join("target/out"),
            &[
                ("crate".to_string(), tmp.join("ws/crate")),
                ("out".to_string(), tmp.join("target/out")),
                ("gen".to_string(), tmp.join("target/out/gen")),
                ("cache".to_string(), tmp.join("cache")),
                ("aiter".to_string(), tmp.join("cache/checkouts/aiter")),
            ],
        )
    }

    #[test]
    fn a_path_is_named_after_its_innermost_root() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().canonicalize().unwrap();
        let r = roots(&tmp);
        assert_eq!(
            r.name(&tmp.join("ws/crate/kernels/a.hip")),
            "crate/kernels/a.hip"
        );
        assert_eq!(r.name(&tmp.join("target/out/gen/x.cpp")), "gen/x.cpp");
        assert_eq!(r.name(&tmp.join("target/out/lib.a")), "out/lib.a");
        assert_eq!(
            r.name(&tmp.join("cache/checkouts/aiter/csrc/h.h")),
            "aiter/csrc/h.h"
        );
        assert_eq!(r.name(&tmp.join("cache/probes/p")), "cache/probes/p");
        assert_eq!(
            r.name(Path::new("/usr/include/stdio.h")),
            "/usr/include/stdio.h"
        );
    }

    #[test]
    fn names_resolve_back_and_compiler_spellings_are_renamed() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().canonicalize().unwrap();
        let r = roots(&tmp);
        assert_eq!(
            r.resolve("crate/kernels/a.hip").unwrap(),
            tmp.join("ws/crate/kernels/a.hip")
        );
        assert_eq!(r.resolve("nosuchroot/a.hip"), None);
        // `..` inside a root, `..` out of a root, and an absolute path through the links.
        assert_eq!(
            r.rename(Path::new("crate/kernels/../inc/k.h")),
            "crate/inc/k.h"
        );
        assert_eq!(
            r.rename(Path::new("aiter/../../../ws/crate/x.h")),
            "crate/x.h"
        );
        assert_eq!(
            r.rename(&tmp.join("target/out/qola-roots/gen/a.h")),
            "gen/a.h"
        );
    }

    #[test]
    fn arguments_name_roots_wherever_a_path_is_spelled() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().canonicalize().unwrap();
        let r = roots(&tmp);
        let inc = tmp.join("ws/crate/kernels");
        assert_eq!(r.rewrite_arg(&inc.to_string_lossy()), "crate/kernels");
        assert_eq!(
            r.rewrite_arg(&format!("-I{}", inc.display())),
            "-Icrate/kernels"
        );
        assert_eq!(
            r.rewrite_arg(&format!("-DDIR={}", inc.display())),
            "-DDIR=crate/kernels"
        );
        assert_eq!(r.rewrite_arg("-O3"), "-O3");
        assert_eq!(r.rewrite_arg("-I/usr/include"), "-I/usr/include");
    }

    #[test]
    fn links_are_made_once_and_point_at_the_roots() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().canonicalize().unwrap();
        let r = roots(&tmp);
        r.link().unwrap();
        r.link().unwrap();
        assert_eq!(
            std::fs::read_link(r.dir().join("crate")).unwrap(),
            tmp.join("ws/crate")
        );
        assert!(r.dir().join("aiter/csrc").is_dir());
    }
}
