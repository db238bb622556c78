//! Patches in git's format: parsing, applying hunks with offset search (never fuzz) and, where
//! that fails, a three-way merge from the blob the patch was made from (as `git apply --3way`),
//! git binary patches, and the series (every `*.patch` of a directory, in file-name order).
//!
//! qola applies patches itself, in memory, to the pristine blobs of the pinned commits: libgit2's
//! `apply` has no offset search and cannot reverse-apply (both needed here), and applying in memory
//! makes a series all-or-nothing by construction: nothing is written until every patch applied.

mod binary;
mod bundled;
#[cfg(test)]
mod fuzz;
mod header_paths;
mod hunk_lines;
mod hunks;
mod location;
mod model;
mod parse;
mod series;
mod three_way;

pub(crate) use crate::prepare::git::{FileContent, MODE_EXEC, MODE_FILE, MODE_GITLINK};
pub(crate) use binary::encode_literal;
pub(crate) use bundled::{spec_excluded, written_for};
pub(crate) use location::locate;
#[cfg(test)]
pub(crate) use model::PatchFile;
pub(crate) use model::PristineTree;
pub(crate) use model::Series;
pub(crate) use parse::parse_patch;
pub(crate) use series::{Applied, SeriesSource, apply_series, load_series};
