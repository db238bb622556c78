//! The AITER headers QoLA's public headers include: `qola_mha_fwd.h` includes AITER's
//! `mha_fwd.h`, which includes composable_kernel's `fmha_fwd.hpp` and `ck_tile/...`. A consumer
//! compiles against them (TransformerEngine's `ck_fused_attn` does), so `qola build` copies them
//! into `<out>/aiter-headers/` at their paths in the tree: a header-only AITER tree, enough to
//! compile against the libraries where there is no checkout (a prebuilt library).
//!
//! The set is every header reachable by `#include` from the public headers through AITER's
//! include directories, read as text: an include under a condition counts whether or not the
//! condition holds, so the set is never smaller than what a compile reads. System headers (not
//! found under the tree) are not part of it.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::aiter::Result;
use crate::common::io::{io_error, write_if_changed};

/// Where the copy goes under the output directory.
pub(crate) const DIR: &str = "aiter-headers";

/// AITER's include directories for its API headers, relative to the tree (`core.py`'s order).
const INCLUDE_DIRS: &[&str] = &[
    "3rdparty/ck_helper",
    "3rdparty/composable_kernel/include",
    "3rdparty/composable_kernel/library/include",
    "csrc/include",
    "3rdparty/composable_kernel/example/ck_tile/01_fmha",
];

/// Copies the tree's headers `public` reaches (see the module docs) into `<out_dir>/aiter-headers`
/// (each file written only when its content differs). Returns their paths under `out_dir`.
pub(crate) fn copy(public: &[PathBuf], root: &Path, out_dir: &Path) -> Result<Vec<String>> {
    let dirs: Vec<PathBuf> = INCLUDE_DIRS.iter().map(|d| root.join(d)).collect();
    let mut found: BTreeSet<PathBuf> = BTreeSet::new();
    let mut stack: Vec<PathBuf> = public.to_vec();
    while let Some(file) = stack.pop() {
        let text = std::fs::read(&file).map_err(io_error("read", &file))?;
        for (name, quoted) in includes(&String::from_utf8_lossy(&text)) {
            let here = quoted
                .then(|| file.parent().map(Path::to_path_buf))
                .flatten();
            let Some(header) = here
                .iter()
                .chain(&dirs)
                .map(|dir| lexical(&dir.join(&name)))
                .find(|candidate| candidate.is_file())
            else {
                continue;
            };
            if header.starts_with(root) && found.insert(header.clone()) {
                stack.push(header);
            }
        }
    }
    let mut copied = Vec::new();
    for header in found {
        let relative = header.strip_prefix(root).expect("under the tree");
        let bytes = std::fs::read(&header).map_err(io_error("read", &header))?;
        write_if_changed(&out_dir.join(DIR).join(relative), &bytes)?;
        copied.push(format!("{DIR}/{}", relative.to_string_lossy()));
    }
    Ok(copied)
}

/// The `#include` directives of `text`: each name, and whether it is quoted (`"..."`, searched
/// beside the including file first) rather than `<...>`.
fn includes(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let (close, quoted) = match rest.chars().next()? {
                '"' => ('"', true),
                '<' => ('>', false),
                _ => return None,
            };
            let name = &rest[1..];
            Some((name[..name.find(close)?].to_string(), quoted))
        })
        .collect()
}

/// `path` with `.` and `..` resolved as text (the tree's headers name each other so).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_and_angled_includes_are_read_and_anything_else_is_not() {
        let text = "#include \"mha_fwd.h\"\n  #  include <ck_tile/core.hpp>\n// #include \"no.h\"\n#include MACRO\n#define X\n";
        assert_eq!(
            includes(text),
            [
                ("mha_fwd.h".to_string(), true),
                ("ck_tile/core.hpp".to_string(), false)
            ]
        );
        assert_eq!(lexical(Path::new("/t/a/../b/./c.h")), Path::new("/t/b/c.h"));
    }
}
