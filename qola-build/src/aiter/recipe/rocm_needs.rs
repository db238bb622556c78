//! The ROCm a tree needs, said before anything is compiled: AITER's shared headers
//! (`csrc/include/*.h`, included by every module) use HIP names that older ROCms lack, and a
//! compile would fail on each of thousands of units with the compiler's words. For each name
//! below that the tree's headers use, the compiler is asked once (a probe, cached per compiler)
//! whether its HIP declares it.

use std::path::Path;

use crate::aiter::{AiterError, Result};
use crate::compile::HipToolchain;
use crate::manifest::Manifest;

/// HIP names AITER's headers use, with the ROCm that has them: `hipDeviceAttributePciChipId`
/// (AITER's `get_pci_chip_id`, since 7a24cd87) is absent from HIP 6.4.3 and present in
/// ROCm 7's HIP (Debian's 7.2.4 checked).
const HIP_NAMES: &[(&str, &str)] = &[("hipDeviceAttributePciChipId", "7")];

/// Fails, naming the header, its line, the name and the ROCm needed, when the tree's shared
/// headers under `meta` use a HIP name `toolchain` does not declare.
pub(crate) fn check(
    meta: &Path,
    toolchain: &HipToolchain,
    arch: &str,
    cache: &Path,
    scratch: &Path,
) -> Result<()> {
    let dir = meta.join("csrc/include");
    let mut headers: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "h" || x == "hpp"))
        .collect();
    headers.sort();
    for (name, needed) in HIP_NAMES {
        let Some((file, line)) = headers.iter().find_map(|h| {
            let text = std::fs::read_to_string(h).ok()?;
            let line = text.lines().position(|l| l.contains(name))?;
            Some((h.clone(), line + 1))
        }) else {
            continue;
        };
        if !toolchain.knows_hip_name(name, arch, cache, scratch)? {
            return Err(AiterError::TreeNeedsNewerRocm {
                name: name.to_string(),
                at: format!("{}:{line}", file.display()),
                needed: needed.to_string(),
                found: toolchain
                    .hip_version
                    .clone()
                    .unwrap_or_else(|| "unknown".to_string()),
                compiler: toolchain.path.clone(),
            });
        }
    }
    Ok(())
}

/// `[qola] rocm_versions` against the compiler: `None` when the list is empty or the compiler's
/// HIP version starts with one of them, else the mismatch.
pub(crate) fn rocm_versions_mismatch(
    manifest: &Manifest,
    toolchain: &HipToolchain,
) -> Option<AiterError> {
    let wanted = &manifest.qola.rocm_versions;
    if wanted.is_empty() {
        return None;
    }
    let found = toolchain.hip_release();
    let matches = |w: &str| {
        let Some((major, minor, patch)) = found else {
            return false;
        };
        let parts: Vec<&str> = w.split('.').collect();
        [major, minor, patch]
            .iter()
            .zip(&parts)
            .all(|(have, want)| want.parse::<u32>().is_ok_and(|w| w == *have))
    };
    if wanted.iter().any(|w| matches(w)) {
        return None;
    }
    Some(AiterError::RocmVersion {
        manifest: manifest.path.clone(),
        wanted: wanted.clone(),
        found: found.map_or("an unknown HIP version".to_string(), |(a, b, c)| {
            format!("{a}.{b}.{c}")
        }),
        compiler: toolchain.path.clone(),
    })
}
