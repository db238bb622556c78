//! Applying unified-diff hunks to bytes exactly as `git apply` places them: every context and
//! removed line must match (no fuzz); each hunk is applied to the file as the previous hunks left
//! it, searched from the line its header gives for the new side, alternately one line further
//! and one line back; a hunk whose old side starts at line 0 or 1 must match at the beginning, a
//! hunk without trailing context at the end. A hunk applied elsewhere than its header says is
//! reported with its offset.

use super::model::{Hunk, LineKind};

/// Hunks applied: the new content and each non-zero offset (hunk header, lines moved).
pub(super) struct Applied {
    pub data: Vec<u8>,
    pub offsets: Vec<(String, isize)>,
}

/// The first hunk that matched nowhere.
pub(super) struct HunkFailure {
    pub header: String,
}

/// Applies `hunks` to `old` (reversed: `+` lines are expected and `-` lines restored).
pub(super) fn apply_hunks(
    old: &[u8],
    hunks: &[Hunk],
    reverse: bool,
) -> Result<Applied, HunkFailure> {
    let mut image: Vec<Vec<u8>> = old
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    let (removed, added) = if reverse {
        (LineKind::Add, LineKind::Remove)
    } else {
        (LineKind::Remove, LineKind::Add)
    };
    let mut offsets = Vec::new();
    for hunk in hunks {
        let side = |kind: LineKind| -> Vec<Vec<u8>> {
            hunk.lines
                .iter()
                .filter(|l| l.kind == LineKind::Context || l.kind == kind)
                .map(|l| l.text.clone())
                .collect()
        };
        let (pre, post) = (side(removed), side(added));
        let (old_start, new_start) = if reverse {
            (hunk.new_start, hunk.old_start)
        } else {
            (hunk.old_start, hunk.new_start)
        };
        let trailing = hunk
            .lines
            .iter()
            .rev()
            .take_while(|l| l.kind == LineKind::Context)
            .count();
        let hint = new_start.saturating_sub(1);
        let placement = Placement {
            beginning: old_start <= 1,
            end: trailing == 0,
        };
        let Some(at) = find_position(&image, &pre, hint, placement) else {
            return Err(HunkFailure {
                header: hunk.header.clone(),
            });
        };
        if at != hint {
            offsets.push((hunk.header.clone(), at as isize - hint as isize));
        }
        image.splice(at..at + pre.len(), post);
    }
    Ok(Applied {
        data: image.concat(),
        offsets,
    })
}

/// Where a hunk is allowed to match.
#[derive(Clone, Copy)]
struct Placement {
    /// Only at the first line.
    beginning: bool,
    /// Only where its old side ends with the file.
    end: bool,
}

/// git's search: from `line`, then one line further, one line back, two further, and so on.
fn find_position(
    image: &[Vec<u8>],
    pre: &[Vec<u8>],
    line: usize,
    placement: Placement,
) -> Option<usize> {
    let line = if placement.beginning {
        0
    } else if placement.end {
        image.len().saturating_sub(pre.len())
    } else {
        line
    }
    .min(image.len());
    let fits = |at: usize| {
        (!placement.beginning || at == 0)
            && (!placement.end || at + pre.len() == image.len())
            && at + pre.len() <= image.len()
            && image[at..at + pre.len()] == *pre
    };
    if fits(line) {
        return Some(line);
    }
    let (mut back, mut forward) = (line, line);
    while back > 0 || forward < image.len() {
        if forward < image.len() {
            forward += 1;
            if fits(forward) {
                return Some(forward);
            }
        }
        if back > 0 {
            back -= 1;
            if fits(back) {
                return Some(back);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::model::Body;
    use super::super::parse::parse_patch;
    use super::*;

    fn hunks(patch: &str) -> Vec<Hunk> {
        let p = parse_patch("t", patch.as_bytes()).unwrap();
        match p.files.into_iter().next().unwrap().body {
            Body::Text(h) => h,
            _ => panic!("no hunks"),
        }
    }

    const PATCH: &str = "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n";

    #[test]
    fn exact_position_applies_without_offset() {
        let out = apply_hunks(b"a\nb\nc\nd\ne\n", &hunks(PATCH), false)
            .ok()
            .unwrap();
        assert_eq!(out.data, b"a\nb\nC\nd\ne\n");
        assert!(out.offsets.is_empty());
    }

    #[test]
    fn shifted_context_applies_with_reported_offset() {
        let out = apply_hunks(b"x\ny\nz\na\nb\nc\nd\ne\n", &hunks(PATCH), false)
            .ok()
            .unwrap();
        assert_eq!(out.data, b"x\ny\nz\na\nb\nC\nd\ne\n");
        assert_eq!(out.offsets, vec![("@@ -2,3 +2,3 @@".to_string(), 3)]);
    }

    #[test]
    fn changed_context_is_refused_not_fuzzed() {
        let failure = apply_hunks(b"a\nB\nc\nd\ne\n", &hunks(PATCH), false)
            .err()
            .unwrap();
        assert_eq!(failure.header, "@@ -2,3 +2,3 @@");
    }

    #[test]
    fn reverse_apply_restores_the_old_lines() {
        let out = apply_hunks(b"a\nb\nC\nd\ne\n", &hunks(PATCH), true)
            .ok()
            .unwrap();
        assert_eq!(out.data, b"a\nb\nc\nd\ne\n");
    }

    #[test]
    fn insertion_into_empty_file() {
        let h = hunks("--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+1\n+2\n");
        assert_eq!(apply_hunks(b"", &h, false).ok().unwrap().data, b"1\n2\n");
    }
}
