//! qola's own patch series for AITER (`patches/aiter` for qola's pin 05a0d1f,
//! `patches/aiter-<commit>` for the others), compiled into qola: what a manifest without
//! `patches_dir` gets (the series written for its commit), as QoLA falls back to the series it
//! ships. Each patch
//! says what it does and why in its header; docs/preparation.md lists them.

use std::path::PathBuf;

use super::model::{PatchFile, Series};

/// One of qola's series: its directory under `patches/`, the AITER commits it is written for
/// (its `aiter-commits.txt`), and its patches in order.
struct Bundled {
    dir: &'static str,
    commits: &'static str,
    patches: &'static [(&'static str, &'static [u8])],
    /// What a build with it is told (what of QoLA's series for the pin it does not carry).
    note: Option<&'static str>,
}

/// A patch of a series directory, by its file name.
macro_rules! patch {
    ($dir:literal, $name:literal) => {
        (
            $name,
            include_bytes!(concat!("../../../patches/", $dir, "/", $name)),
        )
    };
}

/// qola's series, qola's own pin's first: a manifest without `patches_dir` gets the one written
/// for its commit.
const SERIES: &[Bundled] = &[
    Bundled {
        dir: "aiter",
        commits: include_str!("../../../patches/aiter/aiter-commits.txt"),
        patches: &[
            patch!("aiter", "0001-aiter-embedded-hsa-code-objects.patch"),
            patch!("aiter", "0002-ck-fmha-te-receipt.patch"),
            patch!("aiter", "0003-generators-require-output-dir.patch"),
            patch!("aiter", "0004-aiter-mha-api-receipt-700.patch"),
            patch!("aiter", "0005-aiter-asm-v3-loaders-embedded-hsa.patch"),
            patch!("aiter", "0006-ck-fmha-filter-alternatives.patch"),
            patch!("aiter", "0007-aiter-a4w4-gemm-torch-free.patch"),
        ],
        note: None,
    },
    Bundled {
        dir: "aiter-ab550455",
        commits: include_str!("../../../patches/aiter-ab550455/aiter-commits.txt"),
        patches: &[
            patch!("aiter-ab550455", "0001-jit-gpu-targets-no-cref.patch"),
            patch!("aiter-ab550455", "0002-embedded-code-objects-only.patch"),
            patch!(
                "aiter-ab550455",
                "0003-bwd-gfx1250-causal-top-left-as-bottom-right.patch"
            ),
            patch!(
                "aiter-ab550455",
                "0004-bwd-deterministic-group-zeroed-workspace.patch"
            ),
            patch!("aiter-ab550455", "0005-bwd-v3-api-check-dry-run.patch"),
            patch!("aiter-ab550455", "0006-fwd-native-split-kv.patch"),
            patch!("aiter-ab550455", "0007-fwd-gfx1250-with-sink.patch"),
        ],
        note: Some(
            "qola's series for this AITER carries the effect of QoLA's 0001, 0002, 0004, 0006, 0007, 0008 and 0010 on AITER's own files, not QoLA's composable_kernel changes (0003 receipt 700, 0009, 0011) nor 0005 (whose AITER half needs its composable_kernel half): to build with those, name QoLA's series with patches_dir (QOLA_PATCHES_DIR)",
        ),
    },
];

impl Bundled {
    /// The full SHAs of its `aiter-commits.txt`.
    fn written_for(&self) -> impl Iterator<Item = &'static str> {
        self.commits
            .lines()
            .map(|l| l.split('#').next().unwrap_or_default().trim())
            .filter(|l| !l.is_empty())
    }
}

/// The full SHAs of the AITER commits qola's series are written for, every series.
pub(crate) fn written_for() -> Vec<&'static str> {
    SERIES.iter().flat_map(Bundled::written_for).collect()
}

/// Whether a commit spec can only name a commit no series of qola's is written for: a hex
/// string of 7 to 40 digits (a full or short SHA) that starts none of them. Branches and tags
/// are known only once resolved.
pub(crate) fn spec_excluded(spec: &str) -> bool {
    let spec = spec.to_ascii_lowercase();
    (7..=40).contains(&spec.len())
        && spec.chars().all(|c| c.is_ascii_hexdigit())
        && !written_for().iter().any(|c| c.starts_with(&spec))
}

/// The series for the commit `spec` names: the one written for the commit it starts (a SHA),
/// else qola's own pin's (a branch or a tag is checked against it once resolved).
fn chosen(spec: Option<&str>) -> &'static Bundled {
    let spec = spec.map(str::to_ascii_lowercase).unwrap_or_default();
    SERIES
        .iter()
        .find(|s| spec.len() >= 7 && s.written_for().any(|c| c.starts_with(&spec)))
        .unwrap_or(&SERIES[0])
}

/// qola's series for the commit `spec` names (see [`chosen`]). Its files are part of qola
/// itself, not inputs of a build: a change comes with a new qola (and a new preparation key).
pub(crate) fn bundled_series(spec: Option<&str>) -> Series {
    let series = chosen(spec);
    // Where the series lives in qola-build's sources (for messages; nothing reads it at run time).
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/patches")).join(series.dir);
    Series {
        dir: None,
        bundled: true,
        written_for: series.written_for().map(String::from).collect(),
        patches: series
            .patches
            .iter()
            .map(|(name, bytes)| PatchFile {
                name: name.to_string(),
                path: dir.join(name),
                bytes: bytes.to_vec(),
            })
            .collect(),
        warnings: series.note.iter().map(|n| n.to_string()).collect(),
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
    fn each_pin_gets_the_series_written_for_it() {
        let ours = bundled_series(Some("05a0d1f"));
        assert_eq!(ours.patches.len(), 7);
        assert!(ours.warnings.is_empty());
        for spec in [
            "ab550455",
            "AB55045555071eb951b1bf50e29cdd3d194e1e51",
            "a50a62a",
        ] {
            let today = bundled_series(Some(spec));
            assert_eq!(
                today.patches[0].name, "0001-jit-gpu-targets-no-cref.patch",
                "{spec}"
            );
            assert!(today.written_for.iter().any(|c| c.starts_with("ab550455")));
            assert!(today.warnings[0].contains("patches_dir"), "{spec}");
        }
        // A branch or a tag: qola's own pin's, checked once resolved.
        assert_eq!(bundled_series(Some("main")).patches.len(), 7);
        assert_eq!(bundled_series(None).patches.len(), 7);
    }

    #[test]
    fn a_sha_the_series_is_not_written_for_is_known_before_resolving() {
        assert!(!spec_excluded("05a0d1f"));
        assert!(!spec_excluded("05A0D1F060AF14E789696479DE71A2FC2FBAADA9"));
        assert!(spec_excluded("d32b0cb"), "TransformerEngine's older pin");
        assert!(!spec_excluded("ab550455"), "TransformerEngine's pin today");
        assert!(spec_excluded("7a24cd87"));
        assert!(!spec_excluded("main"), "a branch is resolved first");
        assert!(!spec_excluded("v0.1.7"), "a tag too");
        assert!(!spec_excluded("abc123"), "six digits: a name, not a SHA");
    }

    #[test]
    fn each_bundled_series_is_every_patch_of_its_directory_in_order() {
        for series in SERIES {
            let dir =
                PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/patches")).join(series.dir);
            let mut on_disk: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
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
            let first = series.written_for().next().unwrap();
            let bundled: Vec<(String, Vec<u8>)> = bundled_series(Some(first))
                .patches
                .into_iter()
                .map(|p| (p.name, p.bytes))
                .collect();
            assert_eq!(bundled, on_disk, "{}", series.dir);
        }
    }
}
