//! `git apply --3way` for a text hunk that does not apply: the patch applied to the blob it was
//! made from (its `index` line) and merged into the file as it is now with libgit2's
//! `merge_file`; a conflict is a failure naming the merge's lines, and nothing is written.

use super::hunks::apply_hunks;
use super::model::{FileFailure, PristineTree, failure};
use super::model::{FilePatch, Hunk};

/// A three-way merge's outcome, when it could be tried.
pub(super) enum ThreeWay {
    /// Merged cleanly from `base`, the blob the patch was made from.
    Merged { data: Vec<u8>, base: String },
    /// No merge could be tried: why, for the message.
    NoBase(String),
}

/// What `git apply --3way` does with a text patch that does not apply: when the repository has
/// the blob the patch was made from (its `index` line), apply the patch there and merge the
/// result into the file as it is now (base: that blob). A clean merge is the file's new content;
/// a conflict is a failure naming the lines (git leaves conflict markers; qola writes nothing).
pub(super) fn three_way(
    section: &FilePatch,
    ours: &[u8],
    hunks: &[Hunk],
    base: &dyn PristineTree,
) -> std::result::Result<ThreeWay, FileFailure> {
    let whole = "(whole file)";
    let (Some(path), Some(id)) = (&section.old_path, &section.old_id) else {
        return Ok(ThreeWay::NoBase(
            "the patch names no blob it was made from (no `index` line) for a three-way merge"
                .to_string(),
        ));
    };
    let Some(ancestor) = base
        .three_way_base(path, id)
        .map_err(|e| failure(whole, e.to_string()))?
    else {
        return Ok(ThreeWay::NoBase(format!(
            "the blob it was made from ({id}) is not in the repository (or the file is in a submodule) for a three-way merge, as `git apply --3way` would try"
        )));
    };
    let Ok(theirs) = apply_hunks(&ancestor, hunks, false) else {
        return Ok(ThreeWay::NoBase(format!(
            "it does not apply to the blob it names ({id}) either, so no three-way merge"
        )));
    };
    let input = |content| {
        let mut input = git2::MergeFileInput::new();
        input.content(content);
        input
    };
    let merged = git2::merge_file(&input(&ancestor), &input(ours), &input(&theirs.data), None)
        .map_err(|e| {
            failure(
                whole,
                format!("the three-way merge failed: {}", e.message()),
            )
        })?;
    if !merged.is_automergeable() {
        let conflicts: Vec<String> = merged
            .content()
            .split(|b| *b == b'\n')
            .enumerate()
            .filter(|(_, line)| line.starts_with(b"<<<<<<<"))
            .map(|(n, _)| (n + 1).to_string())
            .collect();
        return Err(failure(
            whole,
            format!(
                "it does not apply as it is, and its three-way merge from the blob it was made from ({id}) conflicts (at {} {} of the merge): rebase the patch on this commit",
                if conflicts.len() == 1 {
                    "line"
                } else {
                    "lines"
                },
                conflicts.join(", ")
            ),
        ));
    }
    Ok(ThreeWay::Merged {
        data: merged.content().to_vec(),
        base: id.clone(),
    })
}
