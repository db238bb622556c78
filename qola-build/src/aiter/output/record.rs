//! `manifest.json`: the record QoLA's consumers read (each module's library or error, the
//! totals), written only when more than its time stamp and durations change.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::aiter::Result;
use crate::common::io::write_if_changed;

/// One module of `manifest.json`.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[non_exhaustive]
pub struct ModuleRecord {
    /// The library's name (`<ns>_<md_name>`).
    pub md_name: String,
    /// Whether the library is there and current.
    pub success: bool,
    /// Why not (empty on success).
    pub error: String,
    /// The library (absent on failure).
    pub so_path: Option<PathBuf>,
    /// Seconds this module took in this build.
    pub duration_s: f64,
    /// Whether its files came prebuilt (`--prebuilt`) rather than from a build here (absent
    /// from the JSON when false, as QoLA writes it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prebuilt: bool,
}

/// The totals of `manifest.json`.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[non_exhaustive]
pub struct Summary {
    /// Modules.
    pub total: usize,
    /// Built.
    pub success: usize,
    /// Failed.
    pub failed: usize,
}

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[non_exhaustive]
pub struct BuildRecord {
    /// When the record was written (`2026-12-03T01:39:33Z`).
    pub generated_at: String,
    /// The AITER tree built from.
    pub aiter_root: PathBuf,
    /// The manifest.
    pub manifest_src: PathBuf,
    /// The architectures, `;`-separated.
    pub gpu_archs: String,
    /// Every module selected.
    pub modules: Vec<ModuleRecord>,
    /// Totals.
    pub summary: Summary,
}

/// Writes `manifest.json` unless it already says the same apart from its time stamp and the
/// durations; when the file is gone (its directory removed), the text `previous` (what the
/// output directory's ledger last saw there) is written back if it says the same. Returns
/// whether it wrote.
pub(super) fn write_record(
    path: &Path,
    record: &BuildRecord,
    previous: Option<&str>,
) -> Result<bool> {
    let stable = |r: &BuildRecord| {
        let mut r = r.clone();
        r.generated_at.clear();
        for m in &mut r.modules {
            m.duration_s = 0.0;
        }
        r
    };
    let says_the_same = |bytes: &[u8]| {
        serde_json::from_slice::<BuildRecord>(bytes).is_ok_and(|old| stable(&old) == stable(record))
    };
    match std::fs::read(path) {
        Ok(bytes) if says_the_same(&bytes) => return Ok(false),
        Err(_) if previous.is_some_and(|text| says_the_same(text.as_bytes())) => {
            let text = previous.unwrap_or_default();
            return Ok(write_if_changed(path, text.as_bytes())?);
        }
        _ => {}
    }
    let mut text = serde_json::to_string_pretty(record).expect("a record always serializes");
    text.push('\n');
    Ok(write_if_changed(path, text.as_bytes())?)
}
