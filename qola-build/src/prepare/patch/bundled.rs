//! qola's own patch series for AITER (`patches/aiter` of this package), compiled into qola: what
//! a manifest without `patches_dir` gets, as QoLA falls back to the series it ships. Each patch
//! says what it does and why in its header; docs/preparation.md lists them.

use std::path::PathBuf;

use super::model::{PatchFile, Series};

/// The series, in order: file name and content.
const PATCHES: &[(&str, &[u8])] = &[
    (
        "0001-aiter-embedded-hsa-code-objects.patch",
        include_bytes!("../../../patches/aiter/0001-aiter-embedded-hsa-code-objects.patch"),
    ),
    (
        "0002-ck-fmha-te-receipt.patch",
        include_bytes!("../../../patches/aiter/0002-ck-fmha-te-receipt.patch"),
    ),
    (
        "0003-generators-require-output-dir.patch",
        include_bytes!("../../../patches/aiter/0003-generators-require-output-dir.patch"),
    ),
    (
        "0004-aiter-mha-api-receipt-700.patch",
        include_bytes!("../../../patches/aiter/0004-aiter-mha-api-receipt-700.patch"),
    ),
    (
        "0005-aiter-asm-v3-loaders-embedded-hsa.patch",
        include_bytes!("../../../patches/aiter/0005-aiter-asm-v3-loaders-embedded-hsa.patch"),
    ),
    (
        "0006-ck-fmha-filter-alternatives.patch",
        include_bytes!("../../../patches/aiter/0006-ck-fmha-filter-alternatives.patch"),
    ),
    (
        "0007-aiter-a4w4-gemm-torch-free.patch",
        include_bytes!("../../../patches/aiter/0007-aiter-a4w4-gemm-torch-free.patch"),
    ),
];

/// The AITER commits the series is written for (`aiter-commits.txt` beside the patches).
const WRITTEN_FOR: &str = include_str!("../../../patches/aiter/aiter-commits.txt");

/// The full SHAs of the AITER commits the series is written for.
pub(crate) fn written_for() -> Vec<&'static str> {
    WRITTEN_FOR
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Whether a commit spec can only name a commit the series is not written for: a hex string of
/// 7 to 40 digits (a full or short SHA) that starts none of them. Branches and tags are known
/// only once resolved.
pub(crate) fn spec_excluded(spec: &str) -> bool {
    let spec = spec.to_ascii_lowercase();
    (7..=40).contains(&spec.len())
        && spec.chars().all(|c| c.is_ascii_hexdigit())
        && !written_for().iter().any(|c| c.starts_with(&spec))
}

/// Where the series lives in qola-build's sources (for messages; nothing reads it at run time).
fn source_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/patches/aiter"))
}

/// qola's own series. Its files are part of qola itself, not inputs of a build: a change comes
/// with a new qola (and a new preparation key).
pub(crate) fn bundled_series() -> Series {
    Series {
        dir: None,
        bundled: true,
        patches: PATCHES
            .iter()
            .map(|(name, bytes)| PatchFile {
                name: name.to_string(),
                path: source_dir().join(name),
                bytes: bytes.to_vec(),
            })
            .collect(),
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_records_full_shas_and_the_default_manifests_commit_is_one() {
        let commits = written_for();
        assert!(!commits.is_empty());
        for c in &commits {
            assert!(
                c.len() == 40 && c.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')),
                "{c}"
            );
        }
        let default = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../qola-sys/qola.toml"
        ))
        .unwrap();
        assert!(
            commits
                .iter()
                .any(|c| default.contains(&format!("aiter_commit = \"{c}\""))),
            "qola-sys's default manifest pins a commit the series is written for"
        );
    }

    #[test]
    fn a_sha_the_series_is_not_written_for_is_known_before_resolving() {
        assert!(!spec_excluded("05a0d1f"));
        assert!(!spec_excluded("05A0D1F060AF14E789696479DE71A2FC2FBAADA9"));
        assert!(spec_excluded("d32b0cb"), "TransformerEngine's pin");
        assert!(spec_excluded("7a24cd87"));
        assert!(!spec_excluded("main"), "a branch is resolved first");
        assert!(!spec_excluded("v0.1.7"), "a tag too");
        assert!(!spec_excluded("abc123"), "six digits: a name, not a SHA");
    }

    #[test]
    fn the_bundled_series_is_every_patch_of_the_directory_in_order() {
        let mut on_disk: Vec<(String, Vec<u8>)> = std::fs::read_dir(source_dir())
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".patch"))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        on_disk.sort();
        let bundled: Vec<(String, Vec<u8>)> = bundled_series()
            .patches
            .into_iter()
            .map(|p| (p.name, p.bytes))
            .collect();
        assert_eq!(bundled, on_disk);
    }
}
