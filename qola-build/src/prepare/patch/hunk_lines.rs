//! A file section's hunks: their `@@` headers, and their lines read by the headers' counts
//! (so a trailing `-- ` signature is never taken for a removed line), with git's
//! `\ No newline at end of file` marker.

use super::model::{Hunk, HunkLine, LineKind, ParseError};
use super::model::{Result, err, text};

/// Parses `@@ -a[,b] +c[,d] @@`: returns (old_start, old_len, new_start, new_len).
pub(super) fn parse_hunk_header(header: &str, line: usize) -> Result<(usize, usize, usize, usize)> {
    let bad = || ParseError {
        line,
        message: format!("bad hunk header `{header}`"),
    };
    let body = header.strip_prefix("@@ -").ok_or_else(bad)?;
    let end = body.find(" @@").ok_or_else(bad)?;
    let (old, new) = body[..end].split_once(" +").ok_or_else(bad)?;
    let range = |r: &str| -> Result<(usize, usize)> {
        let (start, len) = r.split_once(',').unwrap_or((r, "1"));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(start) || !digits(len) {
            return Err(bad());
        }
        Ok((
            start.parse().map_err(|_| bad())?,
            len.parse().map_err(|_| bad())?,
        ))
    };
    let (a, b) = range(old)?;
    let (c, d) = range(new)?;
    Ok((a, b, c, d))
}

/// Parses consecutive hunks from `start`; returns them and the index after the last.
pub(super) fn parse_hunks(lines: &[&[u8]], start: usize) -> Result<(Vec<Hunk>, usize)> {
    let mut hunks = Vec::new();
    let mut i = start;
    while i < lines.len() && lines[i].starts_with(b"@@ -") {
        let header = text(lines[i]);
        let (old_start, mut old_left, new_start, mut new_left) = parse_hunk_header(&header, i + 1)?;
        let mut hunk = Hunk {
            header,
            old_start,
            new_start,
            lines: Vec::new(),
        };
        i += 1;
        while old_left > 0 || new_left > 0 {
            let Some(raw) = lines.get(i) else {
                return err(
                    i,
                    format!("hunk `{}` ends early (file truncated)", hunk.header),
                );
            };
            if !raw.ends_with(b"\n") {
                return err(
                    i + 1,
                    format!("hunk `{}` is cut off in the middle of a line", hunk.header),
                );
            }
            let (kind, body): (LineKind, &[u8]) = match raw.first() {
                Some(b' ') => (LineKind::Context, &raw[1..]),
                Some(b'-') => (LineKind::Remove, &raw[1..]),
                Some(b'+') => (LineKind::Add, &raw[1..]),
                // An editor may strip the single space of an empty context line.
                Some(b'\n') => (LineKind::Context, &raw[..]),
                Some(b'\\') if is_no_newline_marker(raw) => {
                    strip_last_newline(&mut hunk);
                    i += 1;
                    continue;
                }
                _ => {
                    return err(
                        i + 1,
                        format!(
                            "hunk `{}` has fewer lines than its header counts",
                            hunk.header
                        ),
                    );
                }
            };
            let counts = match kind {
                LineKind::Context => old_left.checked_sub(1).zip(new_left.checked_sub(1)),
                LineKind::Remove => old_left.checked_sub(1).map(|o| (o, new_left)),
                LineKind::Add => new_left.checked_sub(1).map(|n| (old_left, n)),
            };
            let Some(counts) = counts else {
                return err(
                    i + 1,
                    format!(
                        "hunk `{}` has more lines of one side than its header counts: the patch is corrupt",
                        hunk.header
                    ),
                );
            };
            (old_left, new_left) = counts;
            hunk.lines.push(HunkLine {
                kind,
                text: body.to_vec(),
            });
            i += 1;
        }
        // `\ No newline at end of file` after the last line of either side.
        while lines.get(i).is_some_and(|l| l.starts_with(b"\\")) {
            if !is_no_newline_marker(lines[i]) {
                return err(
                    i + 1,
                    "a cut `\\ No newline at end of file` line: the patch is corrupt",
                );
            }
            strip_last_newline(&mut hunk);
            i += 1;
        }
        if hunk.lines.iter().all(|l| l.kind == LineKind::Context) {
            return err(
                i,
                format!(
                    "hunk `{}` changes nothing: the patch is corrupt",
                    hunk.header
                ),
            );
        }
        hunks.push(hunk);
    }
    Ok((hunks, i))
}

/// `\ No newline at end of file`, in any language: `\ ` and at least 12 bytes, as git checks.
pub(super) fn is_no_newline_marker(line: &[u8]) -> bool {
    line.starts_with(b"\\ ") && line.len() >= 12
}

/// Applies `\ No newline at end of file` to the hunk line just read.
pub(super) fn strip_last_newline(hunk: &mut Hunk) {
    if let Some(last) = hunk.lines.last_mut()
        && last.text.ends_with(b"\n")
    {
        last.text.pop();
    }
}
