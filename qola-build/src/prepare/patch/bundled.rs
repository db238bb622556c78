//! qola's own patch series for AITER (`patches/aiter` of this package), compiled into qola: what
//! a manifest without `patches_dir` gets, as QoLA falls back to the series it ships. Each patch
//! says what it does and why in its header; the README lists them.

use std::path::PathBuf;

use super::series::{PatchFile, Series};

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
];

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
