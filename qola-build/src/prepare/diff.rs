//! Writing changes as a patch in the series format: `diff --git` sections with
//! superproject-relative paths (submodule files included), modes, full blob ids, unified hunks
//! with three lines of context from libgit2's in-memory diff, and `GIT binary patch` literals for
//! binary files. Adding the output as the next patch of the series reproduces the changed tree.

use std::fmt::Write as _;

use git2::{DiffOptions, Patch};

use crate::prepare::git::blob_id;
use crate::prepare::patch::{FileContent, encode_literal};

/// One path's change: content before and after (`None`: absent).
pub(crate) struct Change {
    /// Superproject-relative path.
    pub path: String,
    /// Before (the prepared state).
    pub from: Option<FileContent>,
    /// After (the work tree).
    pub to: Option<FileContent>,
}

const NULL_ID: &str = "0000000000000000000000000000000000000000";

/// Git's quoting of a path in a patch header, when it needs any.
fn quote(prefix: &str, path: &str) -> String {
    let raw = crate::common::tree_path::bytes(path);
    let needs = raw
        .iter()
        .any(|b| !(0x20..0x7f).contains(b) || *b == b'"' || *b == b'\\');
    if !needs {
        return format!("{prefix}{path}");
    }
    let mut out = String::from("\"");
    for &b in prefix.as_bytes().iter().chain(raw.iter()) {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}

/// `---`/`+++` lines get a tab after names with spaces, as git writes them, so that `patch`
/// and qola's parser do not take the rest for a timestamp.
fn header_name(prefix: &str, path: &str) -> String {
    let name = quote(prefix, path);
    if name.contains(' ') && !name.starts_with('"') {
        format!("{name}\t")
    } else {
        name
    }
}

fn is_binary(content: &Option<FileContent>) -> bool {
    content.as_ref().is_some_and(|c| c.data.contains(&0))
}

/// Renders `changes` (paths in the order given) as one patch.
pub(crate) fn render(changes: &[Change]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    for change in changes {
        if change.from == change.to {
            continue;
        }
        let path = &change.path;
        let mut head = format!("diff --git {} {}\n", quote("a/", path), quote("b/", path));
        let from_id = change
            .from
            .as_ref()
            .map_or(NULL_ID.to_string(), |c| blob_id(&c.data));
        let to_id = change
            .to
            .as_ref()
            .map_or(NULL_ID.to_string(), |c| blob_id(&c.data));
        let from_mode = change.from.as_ref().map(|c| c.mode);
        let to_mode = change.to.as_ref().map(|c| c.mode);
        match (from_mode, to_mode) {
            (None, Some(m)) => {
                let _ = writeln!(head, "new file mode {m:o}");
            }
            (Some(m), None) => {
                let _ = writeln!(head, "deleted file mode {m:o}");
            }
            (Some(a), Some(b)) if a != b => {
                let _ = writeln!(head, "old mode {a:o}\nnew mode {b:o}");
            }
            _ => {}
        }
        let same_content = from_id == to_id;
        if !same_content {
            match (from_mode, to_mode) {
                (Some(a), Some(b)) if a == b => {
                    let _ = writeln!(head, "index {from_id}..{to_id} {a:o}");
                }
                _ => {
                    let _ = writeln!(head, "index {from_id}..{to_id}");
                }
            }
        }
        out.extend_from_slice(head.as_bytes());
        if same_content {
            continue;
        }
        let old = change.from.as_ref().map_or(&[][..], |c| &c.data[..]);
        let new = change.to.as_ref().map_or(&[][..], |c| &c.data[..]);
        if is_binary(&change.from) || is_binary(&change.to) {
            out.extend_from_slice(b"GIT binary patch\n");
            out.extend_from_slice(encode_literal(new).as_bytes());
            out.push(b'\n');
            out.extend_from_slice(encode_literal(old).as_bytes());
            out.push(b'\n');
            continue;
        }
        let minus = if change.from.is_some() {
            header_name("a/", path)
        } else {
            "/dev/null".to_string()
        };
        let plus = if change.to.is_some() {
            header_name("b/", path)
        } else {
            "/dev/null".to_string()
        };
        out.extend_from_slice(format!("--- {minus}\n+++ {plus}\n").as_bytes());
        write_hunks(&mut out, old, new);
    }
    out
}

/// Appends the unified hunks between two texts.
fn write_hunks(out: &mut Vec<u8>, old: &[u8], new: &[u8]) {
    let mut options = DiffOptions::new();
    options.context_lines(3).force_text(true);
    let patch = Patch::from_buffers(old, None, new, None, Some(&mut options))
        .expect("diffing two in-memory buffers cannot fail");
    for h in 0..patch.num_hunks() {
        let (hunk, lines) = patch.hunk(h).expect("hunk index in range");
        out.extend_from_slice(hunk.header());
        if !hunk.header().ends_with(b"\n") {
            out.push(b'\n');
        }
        for l in 0..lines {
            let line = patch.line_in_hunk(h, l).expect("line index in range");
            let origin = line.origin();
            if !matches!(origin, ' ' | '+' | '-') {
                // End-of-file newline markers: handled below from the content itself.
                continue;
            }
            out.push(origin as u8);
            out.extend_from_slice(line.content());
            if !line.content().ends_with(b"\n") {
                out.extend_from_slice(b"\n\\ No newline at end of file\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::git::pinned::Pristine;
    use crate::prepare::patch::{
        MODE_EXEC, MODE_FILE, PatchFile, PristineTree, Series, apply_series,
    };
    use std::collections::BTreeMap;

    struct Tree(BTreeMap<String, FileContent>);
    impl PristineTree for Tree {
        fn read(&self, path: &str) -> crate::prepare::report::error::Result<Pristine> {
            Ok(self
                .0
                .get(path)
                .cloned()
                .map_or(Pristine::Absent, Pristine::File))
        }
    }

    fn content(mode: u32, data: &[u8]) -> Option<FileContent> {
        Some(FileContent {
            mode,
            data: data.to_vec(),
        })
    }

    #[test]
    fn rendered_changes_apply_back_to_the_same_content() {
        let changes = vec![
            Change {
                path: "a b.txt".into(),
                from: content(MODE_FILE, b"1\n2\n3\n4\n5\n6\n7\n8\n"),
                to: content(MODE_FILE, b"1\n2\nthree\n4\n5\n6\n7\n8"),
            },
            Change {
                path: "bin.co".into(),
                from: content(MODE_FILE, b"\0\x01old"),
                to: content(MODE_FILE, b"\0\x02new and longer"),
            },
            Change {
                path: "new.sh".into(),
                from: None,
                to: content(MODE_EXEC, b"#!/bin/sh\n"),
            },
            Change {
                path: "gone".into(),
                from: content(MODE_FILE, b"bye\n"),
                to: None,
            },
            Change {
                path: "m".into(),
                from: content(MODE_FILE, b"x\n"),
                to: content(MODE_EXEC, b"x\n"),
            },
            Change {
                path: "sp\u{e4}ce".into(),
                from: content(MODE_FILE, b"a\n"),
                to: content(MODE_FILE, b"b\n"),
            },
        ];
        let text = render(&changes);
        let base = Tree(
            changes
                .iter()
                .filter_map(|c| Some((c.path.clone(), c.from.clone()?)))
                .collect(),
        );
        let series = Series {
            dir: None,
            bundled: false,
            written_for: Vec::new(),
            patches: vec![PatchFile {
                name: "x.patch".into(),
                path: "x.patch".into(),
                bytes: text,
            }],
            warnings: Vec::new(),
        };
        let applied = apply_series(&series, &base, "c").unwrap();
        for c in &changes {
            assert_eq!(applied.files.get(&c.path), Some(&c.to), "{}", c.path);
        }
    }
}
