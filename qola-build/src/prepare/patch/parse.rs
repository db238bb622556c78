//! Parsing git-format patches (`git diff`, `git format-patch`, `qola diff`) and plain unified diffs
//! with `a/`/`b/` prefixes. Everything outside a file section (mail headers, commit message,
//! diffstat, signature) is skipped; hunks are read by their line counts, so a trailing `-- `
//! signature is never taken for a removed line.

use super::binary::decode_binary_block;
use super::header_paths::{default_name, parse_header_path, unquote, verify_name};
use super::hunk_lines::parse_hunks;
use super::model::{Body, FilePatch, LineKind, Patch, Result, err, text};

/// Splits `data` into lines that keep their `\n`.
fn split_lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|b| *b == b'\n').collect()
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
            if let (Some(old), Some(new)) = (&old_path, &new_path)
                && old != new
            {
                return err(
                    i + 1,
                    format!(
                        "`---` names {old} but `+++` names {new}; a plain diff cannot rename (use `git diff`)"
                    ),
                );
            }
            let (hunks, next) = parse_hunks(&lines, i + 2)?;
            let file = FilePatch {
                old_path,
                new_path,
                old_mode: None,
                new_mode: None,
                copy: false,
                old_id: None,
                body: Body::Text(hunks),
            };
            check_sides(&file, i + 3)?;
            files.push(file);
            i = next;
        } else if line.starts_with(b"@@ -") {
            return err(
                i + 1,
                "hunk without a file header (`diff --git` or `---`/`+++`) before it: the patch is corrupt",
            );
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

/// A mode git writes in patches: 100644, 100755, 120000 or 160000 (a submodule); any other is
/// an error (`git apply` would read 100 as executable, 1006 as not).
fn parse_mode(value: &str, line: usize) -> Result<u32> {
    match u32::from_str_radix(value.trim(), 8) {
        Ok(mode @ (0o100644 | 0o100755 | 0o120000 | 0o160000)) => Ok(mode),
        _ => err(
            line,
            format!(
                "bad file mode `{}` (git writes 100644, 100755, 120000 or 160000)",
                value.trim()
            ),
        ),
    }
}

/// The extended header lines of a `diff --git` section that may appear once each.
const HEADER_KEYWORDS: [&str; 9] = [
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
    "index ",
];

/// The section's state while its header lines are read.
#[derive(Default)]
struct GitHeader {
    old: Option<String>,
    new: Option<String>,
    old_named: bool,
    new_named: bool,
    is_new: bool,
    is_delete: bool,
}

/// Parses a `diff --git` section starting at `start`; returns it and the index after it.
/// Names follow `git apply`: from `rename`/`copy`/`---`/`+++` lines, else from the `diff --git`
/// line when both of its sides agree; anything else is an error.
fn parse_git_section(lines: &[&[u8]], start: usize) -> Result<(FilePatch, usize)> {
    let head = text(lines[start]);
    let mut section = Section {
        default: default_name(&head["diff --git ".len()..], start + 1)?,
        names: GitHeader::default(),
        file: FilePatch {
            old_path: None,
            new_path: None,
            old_mode: None,
            new_mode: None,
            copy: false,
            old_id: None,
            body: Body::None,
        },
        seen: Vec::new(),
    };
    let mut i = start + 1;
    let mut body_end = None;
    while i < lines.len() {
        let l = text(lines[i]);
        let n = i + 1;
        section.keyword_once(&l, n)?;
        if section.extended_header_line(&l, n)? {
            i += 1;
            continue;
        }
        if let Some(minus) = l.strip_prefix("--- ") {
            body_end = Some(section.text_body(lines, i, minus)?);
        } else if l.starts_with("+++ ") {
            return err(n, "`+++` line without a `---` line before it");
        } else if l == "GIT binary patch" {
            body_end = Some(section.binary_body(lines, i)?);
        } else if l.starts_with("Binary files ") && l.ends_with(" differ") {
            section.file.body = Body::BinaryWithoutData;
            body_end = Some(i + 1);
        }
        break;
    }
    let file = section.finish(start + 1, i + 1)?;
    Ok((file, body_end.unwrap_or(i)))
}

/// A `diff --git` section while it is read.
struct Section<'a> {
    /// The name the `diff --git` line gives, when both of its sides agree.
    default: Option<String>,
    names: GitHeader,
    file: FilePatch,
    /// The header keywords seen so far.
    seen: Vec<&'a str>,
}

impl Section<'_> {
    /// Refuses a header keyword seen twice, and a header that mixes a creation, a deletion, a
    /// rename or a copy of one file.
    fn keyword_once(&mut self, l: &str, n: usize) -> Result<()> {
        let Some(keyword) = HEADER_KEYWORDS.iter().find(|k| l.starts_with(*k)) else {
            return Ok(());
        };
        if self.seen.contains(keyword) {
            return err(
                n,
                format!("`{}` appears twice in one file's header", keyword.trim()),
            );
        }
        self.seen.push(keyword);
        let kinds = |set: &[&str]| self.seen.iter().filter(|s| set.contains(s)).count();
        let from = [
            "new file mode ",
            "deleted file mode ",
            "rename from ",
            "copy from ",
        ];
        let to = [
            "new file mode ",
            "deleted file mode ",
            "rename to ",
            "copy to ",
        ];
        if kinds(&from) > 1 || kinds(&to) > 1 {
            return err(
                n,
                "the header mixes a creation, a deletion, a rename or a copy of one file",
            );
        }
        Ok(())
    }

    /// Reads one extended header line (modes, creation, deletion, rename, copy, similarity,
    /// `index`); `false` when `l` is none of them.
    fn extended_header_line(&mut self, l: &str, n: usize) -> Result<bool> {
        let (file, names) = (&mut self.file, &mut self.names);
        if let Some(v) = l.strip_prefix("old mode ") {
            file.old_mode = Some(parse_mode(v, n)?);
        } else if let Some(v) = l.strip_prefix("new mode ") {
            file.new_mode = Some(parse_mode(v, n)?);
        } else if let Some(v) = l.strip_prefix("deleted file mode ") {
            file.old_mode = Some(parse_mode(v, n)?);
            names.is_delete = true;
            names.new = None;
            names.new_named = true;
        } else if let Some(v) = l.strip_prefix("new file mode ") {
            file.new_mode = Some(parse_mode(v, n)?);
            names.is_new = true;
            names.old = None;
            names.old_named = true;
        } else if let Some(v) = l.strip_prefix("rename from ") {
            names.old = Some(unquote(v, n)?);
            names.old_named = true;
        } else if let Some(v) = l.strip_prefix("rename to ") {
            names.new = Some(unquote(v, n)?);
            names.new_named = true;
        } else if let Some(v) = l.strip_prefix("copy from ") {
            names.old = Some(unquote(v, n)?);
            names.old_named = true;
            file.copy = true;
        } else if let Some(v) = l.strip_prefix("copy to ") {
            names.new = Some(unquote(v, n)?);
            names.new_named = true;
            file.copy = true;
        } else if l.starts_with("similarity index ") || l.starts_with("dissimilarity index ") {
        } else if let Some(v) = l.strip_prefix("index ") {
            index_line(file, l, v, n)?;
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    /// Reads the `---`/`+++` pair at `i` and the hunks after it; returns the index after them.
    fn text_body(&mut self, lines: &[&[u8]], i: usize, minus: &str) -> Result<usize> {
        let n = i + 1;
        let Some(plus) = lines.get(i + 1).filter(|p| p.starts_with(b"+++ ")) else {
            return err(n, "`---` line without a following `+++` line");
        };
        let old = parse_header_path(minus, n)?;
        let new = parse_header_path(&text(&plus[4..]), n + 1)?;
        // git would take differing names here for a rename; qola wants `rename` lines.
        let moved_by_header = self
            .seen
            .iter()
            .any(|k| k.starts_with("rename") || k.starts_with("copy"));
        if !moved_by_header
            && let (Some(a), Some(b)) = (&old, &new)
            && a != b
        {
            return err(
                n,
                format!("`---` names {a} but `+++` names {b}, and no `rename` line says it moves"),
            );
        }
        for (name, at) in [(&old, n), (&new, n + 1)] {
            if let (Some(name), Some(default)) = (name, &self.default)
                && name != default
                && !moved_by_header
            {
                return err(
                    at,
                    format!(
                        "inconsistent file name: {name}, the `diff --git` line names {default}"
                    ),
                );
            }
        }
        let names = &mut self.names;
        verify_name(&mut names.old, &mut names.old_named, old, "old", n)?;
        verify_name(&mut names.new, &mut names.new_named, new, "new", n + 1)?;
        let (hunks, next) = parse_hunks(lines, i + 2)?;
        if hunks.is_empty() {
            return err(
                i + 3,
                "`---`/`+++` header without a hunk after it (a stray line before `@@`?)",
            );
        }
        self.file.body = Body::Text(hunks);
        Ok(next)
    }

    /// Reads the `GIT binary patch` at `i` (the forward data and, when present, the reverse);
    /// returns the index after it.
    fn binary_body(&mut self, lines: &[&[u8]], i: usize) -> Result<usize> {
        let (forward, mut next) = decode_binary_block(lines, i + 1)?;
        if lines
            .get(next)
            .is_some_and(|l| l.starts_with(b"literal ") || l.starts_with(b"delta "))
        {
            next = decode_binary_block(lines, next)?.1;
        }
        self.file.body = Body::Binary(forward);
        Ok(next)
    }

    /// The section's file, once its names say which file it changes and what it does is a
    /// change git accepts (`header` is the `diff --git` line's number, `end` the line after the
    /// header).
    fn finish(self, header: usize, end: usize) -> Result<FilePatch> {
        let Section {
            default,
            mut names,
            mut file,
            ..
        } = self;
        if names.old.is_none() && names.new.is_none() {
            let Some(name) = default else {
                return err(
                    header,
                    "the `diff --git` line names two different paths and no `rename`/`---`/`+++` line says which: the header is truncated or corrupt",
                );
            };
            names.old = (!names.is_new).then(|| name.clone());
            names.new = (!names.is_delete).then_some(name);
        }
        if (names.new.is_none() && !names.is_delete) || (names.old.is_none() && !names.is_new) {
            return err(
                header,
                "the section does not say which file it changes (git diff header lacks file names)",
            );
        }
        if names.is_new && names.old.is_some() {
            return err(
                header,
                "a new file's section names an old file (expected /dev/null)",
            );
        }
        if names.is_delete && names.new.is_some() {
            return err(
                header,
                "a deleted file's section names a new file (expected /dev/null)",
            );
        }
        file.old_path = names.old;
        file.new_path = names.new;
        if file.new_mode.is_none() && !names.is_delete {
            file.new_mode = file.old_mode;
        }
        if let (Some(old), Some(new)) = (file.old_mode, file.new_mode)
            && file.old_path.is_some()
            && file.new_path.is_some()
            && old & 0o170000 != new & 0o170000
        {
            return err(
                header,
                format!(
                    "new mode {new:o} of {} changes the file's type from {old:o}: a type change must be a deletion and a creation",
                    file.display_path()
                ),
            );
        }
        let metadata = names.is_new
            || names.is_delete
            || file.old_path != file.new_path
            || file
                .old_mode
                .zip(file.new_mode)
                .is_some_and(|(a, b)| a != b);
        if matches!(file.body, Body::None) && !metadata {
            return err(
                end,
                "the section changes nothing (no hunk, no mode change, no rename): the patch has only garbage here",
            );
        }
        check_sides(&file, header)?;
        Ok(file)
    }
}

/// An `index OLD..NEW [MODE]` line.
fn index_line(file: &mut FilePatch, l: &str, v: &str, n: usize) -> Result<()> {
    let (ids, mode) = match v.split_once(' ') {
        Some((ids, mode)) => (ids, Some(mode)),
        None => (v, None),
    };
    let Some((old_id, new_id)) = ids.split_once("..") else {
        return err(
            n,
            format!("bad `index` line `{l}` (expected `index OLD..NEW [MODE]`)"),
        );
    };
    let hex = |id: &str| id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex(old_id) || !hex(new_id) {
        return err(n, format!("bad blob ids in `{l}`"));
    }
    file.old_id = Some(old_id.to_string());
    if let Some(mode) = mode {
        let mode = parse_mode(mode, n)?;
        file.old_mode.get_or_insert(mode);
    }
    Ok(())
}

/// A created file has no old lines; a deleted file keeps no new lines.
fn check_sides(file: &FilePatch, line: usize) -> Result<()> {
    let Body::Text(hunks) = &file.body else {
        return Ok(());
    };
    let has = |kind: LineKind| {
        hunks
            .iter()
            .flat_map(|h| &h.lines)
            .any(|l| l.kind == kind || l.kind == LineKind::Context)
    };
    if file.old_path.is_none() && has(LineKind::Remove) {
        return err(
            line,
            format!("new file {} depends on old contents", file.display_path()),
        );
    }
    if file.new_path.is_none() && has(LineKind::Add) {
        return err(
            line,
            format!("deleted file {} still has contents", file.display_path()),
        );
    }
    Ok(())
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

    /// Malformed patches that `git apply` refuses (each checked against git by hand and by the
    /// fuzz test): qola refuses them too, naming the line.
    #[test]
    fn malformed_sections_are_refused_like_git_apply_refuses_them() {
        for (what, patch, line) in [
            (
                "truncated diff --git line (would rename)",
                "diff --git a/f b/fo\nindex 1..2 100644\n@@ -1 +1 @@\n-a\n+b\n",
                1,
            ),
            (
                "stray line before @@ of a new file",
                "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\nstray\n@@ -0,0 +1 @@\n+hi\n",
                5,
            ),
            (
                "type change without content",
                "diff --git a/f b/f\nold mode 100644\nnew mode 120000\n",
                1,
            ),
            (
                "section with only garbage",
                "diff --git a/f b/f\nindex 1..2 100644\ngarbage\n",
                3,
            ),
            (
                "inconsistent +++ name",
                "diff --git a/f b/f\n--- a/f\n+++ b/g\n@@ -1 +1 @@\n-a\n+b\n",
                2,
            ),
            (
                "new file with context",
                "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n x\n+y\n",
                6,
            ),
            (
                "deleted file keeping a line",
                "diff --git a/f b/f\ndeleted file mode 100644\n--- a/f\n+++ /dev/null\n@@ -1 +0,1 @@\n-a\n+b\n",
                1,
            ),
            (
                "fragment without header",
                "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +5 @@\n",
                8,
            ),
        ] {
            match parse_patch("p", patch.as_bytes()) {
                Ok(p) => panic!("{what}: accepted as {p:?}"),
                Err(e) => assert_eq!(e.line, line, "{what}: {}", e.message),
            }
        }
    }

    #[test]
    fn text_without_sections_is_an_error() {
        assert!(parse_patch("p", b"just words\n").is_err());
    }
}
