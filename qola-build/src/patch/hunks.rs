//! Applying unified-diff hunks to bytes: every context and removed line must match exactly (no
//! fuzz); a hunk that matches elsewhere than its header says is applied at the nearest such place
//! after the previous hunk, and its offset is reported.

use super::{Hunk, LineKind};

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
    let lines: Vec<&[u8]> = old.split_inclusive(|b| *b == b'\n').collect();
    let (removed, added) = if reverse {
        (LineKind::Add, LineKind::Remove)
    } else {
        (LineKind::Remove, LineKind::Add)
    };
    let mut data = Vec::with_capacity(old.len());
    let mut offsets = Vec::new();
    let mut cursor = 0usize;
    let mut drift = 0isize;
    for hunk in hunks {
        let pre: Vec<&[u8]> = hunk
            .lines
            .iter()
            .filter(|l| l.kind == LineKind::Context || l.kind == removed)
            .map(|l| l.text.as_slice())
            .collect();
        let start = if reverse {
            hunk.new_start
        } else {
            hunk.old_start
        };
        // A hunk with no old lines inserts after line `start`; otherwise it begins at `start`.
        let nominal = if pre.is_empty() {
            start
        } else {
            start.saturating_sub(1)
        };
        let expected = (nominal as isize + drift).clamp(cursor as isize, lines.len() as isize);
        let found = if pre.is_empty() {
            Some(expected as usize)
        } else {
            find_nearest(&lines, &pre, expected as usize, cursor)
        };
        let Some(at) = found else {
            return Err(HunkFailure {
                header: hunk.header.clone(),
            });
        };
        let offset = at as isize - nominal as isize;
        if offset != 0 {
            offsets.push((hunk.header.clone(), offset));
        }
        drift = offset;
        for line in &lines[cursor..at] {
            data.extend_from_slice(line);
        }
        for line in hunk
            .lines
            .iter()
            .filter(|l| l.kind == LineKind::Context || l.kind == added)
        {
            data.extend_from_slice(&line.text);
        }
        cursor = at + pre.len();
    }
    for line in &lines[cursor..] {
        data.extend_from_slice(line);
    }
    Ok(Applied { data, offsets })
}

/// The match of `pre` at or after `floor` nearest to `expected` (ties go forward).
fn find_nearest(lines: &[&[u8]], pre: &[&[u8]], expected: usize, floor: usize) -> Option<usize> {
    let fits = |at: usize| at + pre.len() <= lines.len() && lines[at..at + pre.len()] == *pre;
    let last = lines.len().checked_sub(pre.len())?;
    for distance in 0..=lines.len() {
        let forward = expected + distance;
        if forward <= last && fits(forward) {
            return Some(forward);
        }
        let back = expected
            .checked_sub(distance)
            .filter(|b| distance > 0 && *b >= floor);
        if let Some(back) = back.filter(|b| *b <= last && fits(*b)) {
            return Some(back);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::Body;
    use super::super::parse_patch;
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
