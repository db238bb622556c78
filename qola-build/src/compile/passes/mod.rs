//! How one unit is compiled: one hipcc call, or its passes as separate jobs.
//!
//! # The model
//!
//! A HIP compile is a device pass per architecture (each parses every header again; nothing is
//! shared), a bundle of their code objects (the fat binary) and a host pass that embeds it. One
//! hipcc call runs them one after the other. qola runs them as jobs of their own:
//!
//! | job | command | output |
//! |---|---|---|
//! | device pass, per live architecture | `hipcc <args> --offload-arch=X --cuda-device-only --no-gpu-bundle-output -cuid=C` | its code object, its depfile |
//! | empty device pass, per dead architecture | the same on an empty translation unit | a code object with no kernel |
//! | bundle | written by qola (see `bundle`) | the fat binary |
//! | host pass | `hipcc <args> --cuda-host-only -Xclang -fcuda-include-gpubinary <fat binary> -cuid=C` (with a precompiled header of the unit's includes when several units share them) | the object |
//!
//! Every part gets the unit's explicit `-cuid=C` (from its unit id): the driver would otherwise
//! hash every argument, scratch names included, into the CUID, and two builds of the same
//! content would differ. With it the object is the **same bytes** as one hipcc call gives
//! (tests compare them for composable_kernel units with the sid toolchain and for Debian's
//! hipcc):
//!
//! * The device passes of several architectures run in parallel, each counted by the jobserver
//!   and the memory cap; the host pass follows the bundle.
//! * **Dead passes**: a source whose whole body is guarded by a condition on the architecture
//!   (composable_kernel's `_gfx9.cpp` / `_gfx950.cpp` instances, see `guard`) compiles, for an
//!   architecture where the condition does not hold, to a code object with no kernel. What the
//!   HIP runtime needs of it is that it is there: `__hipRegisterFatBinary` looks for a code
//!   object for every device, and a fat binary without one for a GPU in the machine fails the
//!   program at start (`hipErrorNoBinaryForGpu`). qola gives that architecture the code object
//!   of an empty translation unit instead of a full parse of the unit, where the compiler has
//!   shown, once per include prefix and content, that the two are the same bytes (see `prefix`).
//! * **One parse of the host side**: units whose includes before their body are the same text
//!   (a module's instances) share one precompiled header of them for their host passes, built
//!   once per build. The precompiled header names its headers by absolute path; the host pass
//!   maps the links' directory away (`-fmacro-prefix-map`), so `__FILE__` is what the plain
//!   compile gives and the object the same bytes. Its headers are the unit's inputs (the host
//!   depfile lists them); the precompiled header itself is not (it lives in the build's
//!   scratch). Device passes keep compiling without one: a backward unit's device code was
//!   shown to change with one.
//!
//! A build splits its units only when qola runs every part itself: with no launcher (ccache,
//! sccache and a compile farm would hash a host pass without the fat binary it embeds, which
//! is not among its inputs, and could answer with another unit's), and with a compiler whose
//! driver says how it bundles (`-###`). Otherwise, and for a unit with one live architecture
//! and no shared includes, a unit is one hipcc call, with its `-cuid`.

mod analysis;
pub(crate) mod bundle;
mod guard;
pub(crate) mod prefix;

pub(crate) use analysis::{Context, ToCompile, analyze};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) use bundle::{Layout, LayoutProbe, probe_layout};
pub(crate) use guard::Guard;
pub(crate) use guard::read as read_guard;

/// The `-cuid=` of the unit `unit_id`: from its unit id, so the same unit gets the same one
/// everywhere.
pub(crate) fn cuid(unit_id: &str) -> String {
    format!("-cuid={}", &blake3::hash(unit_id.as_bytes()).to_hex()[..16])
}

/// How one unit compiles when it is split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Split {
    /// Architectures whose device pass compiles the unit.
    pub live: Vec<String>,
    /// Architectures given the empty translation unit's code object.
    pub dead: Vec<String>,
    /// The precompiled header its host pass uses (an index into [`Prepared::pchs`]).
    pub pch: Option<usize>,
}

/// A precompiled header of an include prefix, for host passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pch {
    /// The prefix as a header (in the build's scratch).
    pub header: PathBuf,
    /// The precompiled header.
    pub pch: PathBuf,
    /// The directory of the units' sources (their `#include "..."` are found there).
    pub dir: PathBuf,
}

/// How the units to compile compile, worked out before the first job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Prepared {
    /// Per unit index: its split, or `None` (one call).
    pub splits: BTreeMap<usize, Split>,
    /// The precompiled headers to build.
    pub pchs: Vec<Pch>,
}

/// The include prefix of a source: its guard's prefix, else the directives and comments before
/// its first line of code (`None`: it has none).
pub(crate) fn include_prefix(text: &str, guard: Option<&Guard>) -> Option<String> {
    if let Some(guard) = guard {
        return Some(guard.prefix.clone());
    }
    let mut end = 0;
    let mut in_block = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        let directive_or_comment = in_block
            || trimmed.is_empty()
            || trimmed.starts_with("#include")
            || trimmed.starts_with("#pragma")
            || trimmed.starts_with("//")
            || trimmed.starts_with("/*");
        if !directive_or_comment {
            break;
        }
        in_block = (in_block || trimmed.starts_with("/*")) && !trimmed.ends_with("*/");
        end += line.len();
    }
    let prefix = &text[..end];
    prefix.contains("#include").then(|| prefix.to_string())
}

/// The arguments of a device pass for `arch`: `args` (with every `--offload-arch=`) less the
/// other architectures.
pub(crate) fn device_args(args: &[String], arch: &str) -> Vec<String> {
    args.iter()
        .filter(|a| {
            a.strip_prefix("--offload-arch=")
                .is_none_or(|this| this == arch)
        })
        .cloned()
        .collect()
}

/// Where an empty translation unit's name points, under the output directory (a stable name:
/// `out/qola-empty.hip`).
pub(crate) fn empty_unit(out_dir: &Path) -> PathBuf {
    out_dir.join("qola-empty.hip")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cuid_comes_from_the_unit_id() {
        assert_eq!(cuid("abc"), cuid("abc"));
        assert_ne!(cuid("abc"), cuid("abd"));
        assert_eq!(cuid("abc").len(), "-cuid=".len() + 16);
    }

    #[test]
    fn a_device_pass_keeps_only_its_architecture() {
        let args: Vec<String> = [
            "-O3",
            "--offload-arch=gfx942",
            "--offload-arch=gfx950",
            "-x",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            device_args(&args, "gfx950"),
            ["-O3", "--offload-arch=gfx950", "-x"]
        );
    }

    #[test]
    fn the_include_prefix_is_the_directives_before_the_first_code() {
        let text =
            "// c\n/* a\n b */\n#include \"a.h\"\n#pragma once\n\nint x;\n#include \"b.h\"\n";
        assert_eq!(
            include_prefix(text, None).unwrap(),
            "// c\n/* a\n b */\n#include \"a.h\"\n#pragma once\n\n"
        );
        assert_eq!(include_prefix("int x;\n", None), None);
    }
}
