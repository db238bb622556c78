//! What a guarded source's include prefix means for each architecture (see `guard`), found by
//! the compiler itself, once per build for each distinct prefix:
//!
//! * **Which names are defined** where the guard is read, per architecture: the prefix
//!   preprocessed for that architecture's device pass (`-E -dM`). composable_kernel's headers
//!   define `__gfx9__` from clang's `__gfx942__`; only the compiler knows.
//! * **Whether an empty translation unit stands for a dead pass**: where the guard does not
//!   hold, the device pass compiles the prefix alone. qola compiles the prefix and an empty
//!   translation unit for that architecture with one `-cuid` and compares the code objects;
//!   only when they are the same bytes (no kernel, no variable from the headers) does every unit
//!   of that prefix get the empty one instead of its own dead pass. The answer is kept in qola's
//!   cache (`probes/`), keyed by the compiler, the arguments, the architecture, the prefix and
//!   the content of every header it read, so the proof runs once per content.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::compile::run::{self as jobs, Job};

/// The preprocessor's `-dM` output: the names it defines.
pub(crate) fn defined_names(dump: &str) -> BTreeSet<String> {
    dump.lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// A command that asks the compiler something, and the files it answers in.
pub(crate) struct Question {
    /// The job that runs it (in the links' directory).
    pub job: Job,
    /// Its output file.
    pub output: PathBuf,
}

/// Runs `questions` (at most `limit` at once); each one's output, `None` where it failed.
pub(crate) fn ask(questions: Vec<Question>, limit: usize) -> Vec<Option<Vec<u8>>> {
    let outputs: Vec<PathBuf> = questions.iter().map(|q| q.output.clone()).collect();
    let outcomes = jobs::run_all(
        questions.into_iter().map(|q| q.job).collect(),
        limit,
        jobs::Mode {
            local: true,
            keep_going: true,
        },
        &|_| {},
        &|_| {},
    );
    outputs
        .iter()
        .enumerate()
        .map(|(index, output)| {
            let ok = outcomes
                .iter()
                .any(|o| o.job == index && o.failure.is_none());
            ok.then(|| std::fs::read(output).ok()).flatten()
        })
        .collect()
}

/// The key of a proof that an empty unit stands for the dead pass of a prefix: the compiler,
/// the arguments, the architecture, the prefix's text and where it is read from, and the
/// content of every file its macro dump's depfile listed (`headers`, name and content hash).
pub(crate) fn proof_key(
    identity: &str,
    args: &[String],
    arch: &str,
    prefix: &str,
    dir: &str,
    headers: &[(String, Option<blake3::Hash>)],
) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in [identity, arch, prefix, dir] {
        hasher.update(part.as_bytes());
        hasher.update(b"\0");
    }
    for arg in args {
        hasher.update(arg.as_bytes());
        hasher.update(b"\0");
    }
    for (name, content) in headers {
        hasher.update(name.as_bytes());
        hasher.update(&content.map_or([0u8; 32], |c| *c.as_bytes()));
    }
    hasher.finalize().to_hex().to_string()
}

/// Where a proof's answer is kept in qola's cache.
pub(crate) fn proof_path(cache: &Path, key: &str) -> PathBuf {
    cache
        .join(crate::cache_dir::PROBES)
        .join(format!("empty-device-pass-{}", &key[..32]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_macro_dump_gives_the_defined_names() {
        let dump = "#define __gfx942__ 1\n#define __GFX9__ 1\n#define F(x) x\n#define __gfx9__\n";
        assert_eq!(
            defined_names(dump),
            ["F", "__GFX9__", "__gfx942__", "__gfx9__"]
                .map(String::from)
                .into()
        );
    }
}
