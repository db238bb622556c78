//! Parsing git-format patches (`git diff`, `git format-patch`, `qola diff`) and plain unified diffs
//! with `a/`/`b/` prefixes. Everything outside a file section (mail headers, commit message,
//! diffstat, signature) is skipped; hunks are read by their line counts, so a trailing `-- `
//! signature is never taken for a removed line.

use super::binary::decode_binary_block;
use super::{Body, FilePatch, Hunk, HunkLine, LineKind, Patch};

/// A parse error: the 1-based line and what is wrong there.
#[derive(Debug)]
pub(crate) struct ParseError {
    pub line: usize,
    pub message: String,
}

type Result<T> = std::result::Result<T, ParseError>;

fn err<T>(line: usize, message: impl Into<String>) -> Result<T> {
    Err(ParseError {
        line,
        message: message.into(),
    })
}

/// Splits `data` into lines that keep their `\n`.
fn split_lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|b| *b == b'\n').collect()
}

fn strip_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn text(line: &[u8]) -> String {
    String::from_utf8_lossy(strip_eol(line)).into_owned()
}

/// Parses one patch file.
pub(crate) fn parse_patch(name: &str, data: &[u8]) -> Result<Patch> {
    let lines = split_lines(data);
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with(b"diff --git ") {
            let (file, next) = parse_git_section(&lines, i)?;
            files.push(file);
            i = next;
        } else if line.starts_with(b"--- ")
            && lines.get(i + 1).is_some_and(|l| l.starts_with(b"+++ "))
            && lines.get(i + 2).is_some_and(|l| l.starts_with(b"@@ -"))
        {
            let old_path = parse_header_path(&text(&line[4..]), i + 1)?;
            let new_path = parse_header_path(&text(&lines[i + 1][4..]), i + 2)?;
            let (hunks, next) = parse_hunks(&lines, i + 2)?;
            files.push(FilePatch {
                old_path,
                new_path,
                old_mode: None,
                new_mode: None,
                copy: false,
                old_id: None,
                body: Body::Text(hunks),
            });
            i = next;
        } else {
            i += 1;
        }
    }
    if files.is_empty() {
        return err(
            1,
            "no file sections (`diff --git` or `---`/`+++` headers) found",
        );
    }
    Ok(Patch {
        name: name.to_string(),
        files,
    })
}

/// Parses a `--- a/x` / `+++ b/x` path: `/dev/null` is `None`; the first component is stripped.
fn parse_header_path(raw: &str, line: usize) -> Result<Option<String>> {
    // Traditional diffs append a tab and a timestamp.
    let raw = raw.split('\t').next().unwrap_or(raw);
    let path = unquote(raw.trim_end(), line)?;
    if path == "/dev/null" {
        return Ok(None);
    }
    Ok(Some(strip_prefix_component(&path, line)?))
}

fn strip_prefix_component(path: &str, line: usize) -> Result<String> {
    match path.split_once('/') {
        Some((_, rest)) if !rest.is_empty() => Ok(rest.to_string()),
        _ => err(
            line,
            format!("path `{path}` has no `a/` or `b/` prefix (qola reads patches with -p1)"),
        ),
    }
}

/// Undoes git's C-style quoting of a path (`"a/sp\303\244ce"`); unquoted paths pass through.
fn unquote(raw: &str, line: usize) -> Result<String> {
    let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return Ok(raw.to_string());
    };
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let Some(&c) = bytes.get(i + 1) else {
            return err(line, format!("bad escape at the end of quoted path {raw}"));
        };
        i += 2;
        out.push(match c {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            b'"' | b'\\' => c,
            b'0'..=b'7' => {
                let digits = bytes.get(i - 1..i + 2).unwrap_or(&[]);
                let value = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| u8::from_str_radix(d, 8).ok());
                let Some(value) = value else {
                    return err(line, format!("bad octal escape in quoted path {raw}"));
                };
                i += 2;
                value
            }
            _ => return err(line, format!("unknown escape `\\{}` in {raw}", c as char)),
        });
    }
    String::from_utf8(out).or_else(|_| err(line, format!("quoted path {raw} is not UTF-8")))
}

/// Finds the two paths of `diff --git a/x b/y`. Used only when no `---`/`+++`/rename lines name
/// them (empty new files, pure mode changes).
fn parse_git_line_paths(rest: &str, line: usize) -> Result<(String, String)> {
    if let Some(quoted) = rest.strip_prefix('"') {
        let end = quoted.find('"').map(|e| e + 2).filter(|e| *e < rest.len());
        let Some(end) = end else {
            return err(line, "unterminated quoted path in `diff --git` line");
        };
        let a = unquote(&rest[..end], line)?;
        let b = unquote(rest[end..].trim_start(), line)?;
        return Ok((
            strip_prefix_component(&a, line)?,
            strip_prefix_component(&b, line)?,
        ));
    }
    // Unquoted names may contain spaces: prefer the split where both sides name the same path.
    let split = rest
        .match_indices(' ')
        .map(|(i, _)| i)
        .find(|&i| rest[..i].get(2..) == rest[i + 1..].get(2..))
        .or_else(|| rest.find(' '));
    let Some(i) = split else {
        return err(line, "cannot find two paths in `diff --git` line");
    };
    Ok((
        strip_prefix_component(&rest[..i], line)?,
        strip_prefix_component(rest[i + 1..].trim_end(), line)?,
    ))
}

fn parse_mode(value: &str, line: usize) -> Result<u32> {
    u32::from_str_radix(value.trim(), 8)
        .or_else(|_| err(line, format!("bad file mode `{}`", value.trim())))
}

/// Parses a `diff --git` section starting at `start`; returns it and the index after it.
fn parse_git_section(lines: &[&[u8]], start: usize) -> Result<(FilePatch, usize)> {
    let head = text(lines[start]);
    let (line_old, line_new) = parse_git_line_paths(&head["diff --git ".len()..], start + 1)?;
    let mut file = FilePatch {
        old_path: Some(line_old),
        new_path: Some(line_new),
        old_mode: None,
        new_mode: None,
        copy: false,
        old_id: None,
        body: Body::None,
    };
    let mut i = start + 1;
    while i < lines.len() {
        let l = text(lines[i]);
        let n = i + 1;
        if let Some(v) = l.strip_prefix("old mode ") {
            file.old_mode = Some(parse_mode(v, n)?);
        } else if let Some(v) = l.strip_prefix("new mode ") {
            file.new_mode = Some(parse_mode(v, n)?);
        } else if let Some(v) = l.strip_prefix("deleted file mode ") {
            file.old_mode = Some(parse_mode(v, n)?);
            file.new_path = None;
        } else if let Some(v) = l.strip_prefix("new file mode ") {
            file.new_mode = Some(parse_mode(v, n)?);
            file.old_path = None;
        } else if let Some(v) = l.strip_prefix("rename from ") {
            file.old_path = Some(unquote(v, n)?);
        } else if let Some(v) = l.strip_prefix("rename to ") {
            file.new_path = Some(unquote(v, n)?);
        } else if let Some(v) = l.strip_prefix("copy from ") {
            file.old_path = Some(unquote(v, n)?);
            file.copy = true;
        } else if let Some(v) = l.strip_prefix("copy to ") {
            file.new_path = Some(unquote(v, n)?);
            file.copy = true;
        } else if l.starts_with("similarity index ") || l.starts_with("dissimilarity index ") {
        } else if let Some(v) = l.strip_prefix("index ") {
            let mut parts = v.split_whitespace();
            let ids = parts.next().unwrap_or("");
            file.old_id = ids.split_once("..").map(|(a, _)| a.to_string());
            if let Some(mode) = parts.next() {
                let mode = parse_mode(mode, n)?;
                file.old_mode.get_or_insert(mode);
                file.new_mode.get_or_insert(mode);
            }
        } else if let Some(minus) = l.strip_prefix("--- ") {
            let Some(plus) = lines.get(i + 1).filter(|p| p.starts_with(b"+++ ")) else {
                return err(n, "`---` line without a following `+++` line");
            };
            let old = parse_header_path(minus, n)?;
            let new = parse_header_path(&text(&plus[4..]), n + 1)?;
            if old.is_none() {
                file.old_path = None;
            }
            if new.is_none() {
                file.new_path = None;
            }
            let (hunks, next) = parse_hunks(lines, i + 2)?;
            file.body = Body::Text(hunks);
            return Ok((file, next));
        } else if l == "GIT binary patch" {
            let (forward, mut next) = decode_binary_block(lines, i + 1)?;
            if lines
                .get(next)
                .is_some_and(|l| l.starts_with(b"literal ") || l.starts_with(b"delta "))
            {
                next = decode_binary_block(lines, next)?.1;
            }
            file.body = Body::Binary(forward);
            return Ok((file, next));
        } else if l.starts_with("Binary files ") && l.ends_with(" differ") {
            file.body = Body::BinaryWithoutData;
            return Ok((file, i + 1));
        } else {
            break;
        }
        i += 1;
    }
    Ok((file, i))
}

/// Parses `@@ -a[,b] +c[,d] @@`: returns (old_start, old_len, new_start, new_len).
fn parse_hunk_header(header: &str, line: usize) -> Result<(usize, usize, usize, usize)> {
    let bad = || ParseError {
        line,
        message: format!("bad hunk header `{header}`"),
    };
    let body = header.strip_prefix("@@ -").ok_or_else(bad)?;
    let end = body.find(" @@").ok_or_else(bad)?;
    let (old, new) = body[..end].split_once(" +").ok_or_else(bad)?;
    let range = |r: &str| -> Result<(usize, usize)> {
        let (start, len) = r.split_once(',').unwrap_or((r, "1"));
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
fn parse_hunks(lines: &[&[u8]], start: usize) -> Result<(Vec<Hunk>, usize)> {
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
            let (kind, body): (LineKind, &[u8]) = match raw.first() {
                Some(b' ') => (LineKind::Context, &raw[1..]),
                Some(b'-') => (LineKind::Remove, &raw[1..]),
                Some(b'+') => (LineKind::Add, &raw[1..]),
                // An editor may strip the single space of an empty context line.
                Some(b'\n') => (LineKind::Context, &raw[..]),
                Some(b'\\') => {
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
            match kind {
                LineKind::Context => {
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                }
                LineKind::Remove => old_left = old_left.saturating_sub(1),
                LineKind::Add => new_left = new_left.saturating_sub(1),
            }
            hunk.lines.push(HunkLine {
                kind,
                text: body.to_vec(),
            });
            i += 1;
        }
        // `\ No newline at end of file` after the last line of either side.
        while lines.get(i).is_some_and(|l| l.starts_with(b"\\")) {
            strip_last_newline(&mut hunk);
            i += 1;
        }
        hunks.push(hunk);
    }
    Ok((hunks, i))
}

/// Applies `\ No newline at end of file` to the hunk line just read.
fn strip_last_newline(hunk: &mut Hunk) {
    if let Some(last) = hunk.lines.last_mut()
        && last.text.ends_with(b"\n")
    {
        last.text.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_patch_with_signature_parses_counted_lines_only() {
        let p = b"From 1 Mon\nSubject: x\n---\n a | 2 +-\n\ndiff --git a/a b/a\nindex 1..2 100644\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n-- \n2.39.2\n";
        let patch = parse_patch("0001.patch", p).unwrap();
        assert_eq!(patch.files.len(), 1);
        let Body::Text(h) = &patch.files[0].body else {
            panic!()
        };
        assert_eq!(h[0].lines.len(), 3);
        assert_eq!(patch.files[0].old_mode, Some(0o100644));
    }

    #[test]
    fn no_newline_marker_strips_the_preceding_line_ending() {
        let p = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x\n";
        let patch = parse_patch("p", p).unwrap();
        let Body::Text(h) = &patch.files[0].body else {
            panic!()
        };
        assert_eq!(h[0].lines[0].text, b"x");
        assert_eq!(h[0].lines[1].text, b"x\n");
    }

    #[test]
    fn new_empty_file_and_rename_sections_take_paths_from_headers() {
        let p = b"diff --git a/dir/new file b/dir/new file\nnew file mode 100755\nindex 0000000..e69de29\ndiff --git a/old b/new\nsimilarity index 100%\nrename from old\nrename to new\n";
        let patch = parse_patch("p", p).unwrap();
        assert_eq!(patch.files[0].old_path, None);
        assert_eq!(patch.files[0].new_path.as_deref(), Some("dir/new file"));
        assert_eq!(patch.files[0].new_mode, Some(0o100755));
        assert_eq!(patch.files[1].old_path.as_deref(), Some("old"));
        assert_eq!(patch.files[1].new_path.as_deref(), Some("new"));
    }

    #[test]
    fn quoted_paths_are_unquoted() {
        let p = b"diff --git \"a/sp\\303\\244ce\" \"b/sp\\303\\244ce\"\n--- \"a/sp\\303\\244ce\"\n+++ \"b/sp\\303\\244ce\"\n@@ -1 +1 @@\n-a\n+b\n";
        let patch = parse_patch("p", p).unwrap();
        assert_eq!(patch.files[0].new_path.as_deref(), Some("sp\u{e4}ce"));
    }

    #[test]
    fn truncated_hunk_is_an_error_with_its_line() {
        let p = b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n";
        let e = parse_patch("p", p).unwrap_err();
        assert!(e.message.contains("ends early"), "{}", e.message);
    }

    #[test]
    fn text_without_sections_is_an_error() {
        assert!(parse_patch("p", b"just words\n").is_err());
    }
}
