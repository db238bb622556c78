//! The paths of a patch's file header: `diff --git a/x b/y`, `---`/`+++` lines, quoted names
//! (git's C-style quoting), the `a/`/`b/` prefix, and how `git apply` checks that they agree.

use super::model::{Result, err};

/// Parses a `--- a/x` / `+++ b/x` path: `/dev/null` is `None`; the first component is stripped.
pub(super) fn parse_header_path(raw: &str, line: usize) -> Result<Option<String>> {
    // Traditional diffs append a tab and a timestamp.
    let raw = raw.split('\t').next().unwrap_or(raw);
    let path = unquote(raw.trim_end(), line)?;
    if path == "/dev/null" {
        return Ok(None);
    }
    Ok(Some(strip_prefix_component(&path, line)?))
}

pub(super) fn strip_prefix_component(path: &str, line: usize) -> Result<String> {
    match path.split_once('/') {
        Some((_, rest)) if !rest.is_empty() => Ok(rest.to_string()),
        _ => err(
            line,
            format!("path `{path}` has no `a/` or `b/` prefix (qola reads patches with -p1)"),
        ),
    }
}

/// Undoes git's C-style quoting of a path (`"a/sp\303\244ce"`); unquoted paths pass through.
pub(super) fn unquote(raw: &str, line: usize) -> Result<String> {
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
    Ok(crate::common::tree_path::key(&out))
}

/// Finds the two paths of `diff --git a/x b/y`. Used only when no `---`/`+++`/rename lines name
/// them (empty new files, pure mode changes).
pub(super) fn parse_git_line_paths(rest: &str, line: usize) -> Result<(String, String)> {
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

/// The file name of a `diff --git a/x b/y` line when both sides name the same path (git's
/// default name); `None` when they differ or cannot be split.
pub(super) fn default_name(rest: &str, line: usize) -> Result<Option<String>> {
    match parse_git_line_paths(rest, line) {
        Ok((a, b)) if a == b => Ok(Some(a)),
        Ok(_) | Err(_) => Ok(None),
    }
}

/// Sets a side's name from a `---`/`+++` line the way `git apply` checks it: a name given earlier
/// (by `rename from`, `copy to`, ...) must agree, `/dev/null` only where no name was given.
pub(super) fn verify_name(
    slot: &mut Option<String>,
    named: &mut bool,
    value: Option<String>,
    side: &str,
    line: usize,
) -> Result<()> {
    match (slot.as_ref(), value) {
        (_, None) if *named && slot.is_some() => err(
            line,
            format!(
                "expected /dev/null for the {side} file, the header names {}",
                slot.as_deref().unwrap_or("")
            ),
        ),
        (_, None) => Ok(()),
        (Some(existing), Some(value)) if *named => {
            if *existing == value {
                Ok(())
            } else {
                err(
                    line,
                    format!("inconsistent {side} file name: {value}, the header names {existing}"),
                )
            }
        }
        (_, Some(value)) => {
            *slot = Some(value);
            *named = true;
            Ok(())
        }
    }
}
