//! GPU architectures: which ones to compile for, and whether the compiler supports them.
//!
//! The list comes, with the one precedence (argument > environment > manifest > default; see
//! `common::precedence`), from an explicit list (`qola build --arch`, the builder's `.arch()`),
//! then `QOLA_GPU_ARCHS` (`;` or `,` separated; in a build script it plays `--arch`), then the
//! manifest's `[build] architectures`, then the default: `GPU_ARCHS` (AITER's convention, `;`
//! separated), else `native`: the GPUs of this machine as `rocm_agent_enumerator` or
//! `rocminfo` report them. Each architecture is probed once per compiler (a tiny kernel compiled
//! for it); the answer is kept in qola's cache, keyed by the compiler's identity.

use std::path::Path;
use std::process::Command;

use crate::build_script::Env;
use crate::compile::toolchain::HipToolchain;
use crate::compile::toolchain::probe::{EMPTY_KERNEL, ProbeAnswer, probe};
use crate::compile::{CompileError, Result};

use crate::common::precedence::Setting;
use crate::common::text::split_list as split;

/// The architectures to compile for, in the order given (each once; `native` anywhere in a list
/// is replaced by this machine's): AITER's gfx-conditional flags follow the last one, as its
/// `get_gfx()` takes the last entry of `GPU_ARCHS`. A compile's `--offload-arch` words are sorted
/// ([`sorted`]).
pub(crate) fn resolve(env: &Env, explicit: &[String], manifest: &[String]) -> Result<Vec<String>> {
    let given = |list: &[String]| (!list.is_empty()).then(|| list.to_vec());
    let chosen = Setting::argument(given(explicit))
        .environment(|| Ok::<_, CompileError>(env.var("QOLA_GPU_ARCHS")?.map(|v| split(&v))))?
        .manifest(|| given(manifest))
        .value();
    // The default: AITER's `GPU_ARCHS` when set (read only when nothing above gave a list),
    // else this machine's GPUs.
    let mut list = match chosen {
        Some(list) => list,
        None => match env.var("GPU_ARCHS")? {
            Some(v) => split(&v),
            None => vec!["native".to_string()],
        },
    };
    if let Some(at) = list.iter().position(|a| a == "native") {
        let found = native()?;
        list.retain(|a| a != "native");
        for (i, arch) in found.into_iter().enumerate() {
            list.insert((at + i).min(list.len()), arch);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    list.retain(|a| seen.insert(a.clone()));
    Ok(list)
}

/// `archs` sorted: what a compile's `--offload-arch` words follow, so the same set of
/// architectures gives the same command whatever order named it.
pub(crate) fn sorted(mut archs: Vec<String>) -> Vec<String> {
    archs.sort();
    archs
}

/// This machine's GPU architectures.
fn native() -> Result<Vec<String>> {
    let run = |program: &str| -> Option<String> {
        let out = Command::new(program).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let from_enumerator: Vec<String> = run("rocm_agent_enumerator")
        .map(|text| {
            text.lines()
                .map(str::trim)
                .filter(|l| l.starts_with("gfx") && *l != "gfx000")
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let found = if from_enumerator.is_empty() {
        run("rocminfo")
            .map(|text| {
                text.lines()
                    .filter_map(|l| l.trim().strip_prefix("Name:"))
                    .map(str::trim)
                    .filter(|n| n.starts_with("gfx") && *n != "gfx000")
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        from_enumerator
    };
    if found.is_empty() {
        return Err(CompileError::NoGpuArch);
    }
    Ok(found)
}

/// Checks that `toolchain` can compile for each of `archs` with the compile command `command`
/// (program and flags, no architecture), known in every place as `named` (its roots by name);
/// answers are cached under `cache`. `scratch` is a directory for the probe's files.
pub(crate) fn validate(
    toolchain: &HipToolchain,
    command: &[String],
    named: &[String],
    archs: &[String],
    cache: Option<&Path>,
    scratch: &Path,
) -> Result<()> {
    for arch in archs {
        let for_arch = [format!("--offload-arch={arch}"), "-c".to_string()];
        let probe_command: Vec<String> = command.iter().chain(&for_arch).cloned().collect();
        // Answers are kept by the command with roots by name: the same in every place.
        let named: Vec<String> = named.iter().chain(&for_arch).cloned().collect();
        let identity = &toolchain.identity;
        let ProbeAnswer::Rejected(stderr) = probe(
            identity,
            &toolchain.env,
            &probe_command,
            EMPTY_KERNEL,
            &named,
            cache,
            scratch,
        )?
        else {
            continue;
        };
        // The flags, or the architecture? The same compile with the compiler's own flags only.
        let bare = [
            toolchain.path.to_string_lossy().into_owned(),
            "-x".to_string(),
            "hip".to_string(),
            format!("--offload-arch={arch}"),
            "-c".to_string(),
        ];
        if probe(
            identity,
            &toolchain.env,
            &bare,
            EMPTY_KERNEL,
            &bare,
            cache,
            scratch,
        )? == ProbeAnswer::Accepted
        {
            return Err(CompileError::RejectedFlags {
                flags: command[1..].join(" "),
                compiler: toolchain.path.clone(),
                version: toolchain.version(),
                stderr,
            });
        }
        return Err(CompileError::UnsupportedArch {
            arch: arch.clone(),
            compiler: toolchain.path.clone(),
            version: toolchain.version(),
            stderr,
        });
    }
    Ok(())
}
