//! What a patch series is made of, as data: the series and its files, a parsed patch (files,
//! hunks, binary data), a parse error, where pristine content comes from and why a file section
//! failed. Every other file of the folder works on these; none
//! of them imports anything back.

use std::path::PathBuf;

use crate::prepare::git::Pristine;
use crate::prepare::report::Result as PrepareResult;

/// One patch file of the series, as bytes.
#[derive(Debug, Clone)]
pub(crate) struct PatchFile {
    /// File name (the series order is the byte order of these names).
    pub name: String,
    /// Full path.
    pub path: PathBuf,
    /// Content.
    pub bytes: Vec<u8>,
}

/// The series as found on disk.
#[derive(Debug, Clone, Default)]
pub(crate) struct Series {
    /// The directory, when there is one.
    pub dir: Option<PathBuf>,
    /// qola's own series (compiled in): its files are not a build's inputs.
    pub bundled: bool,
    /// The AITER commits qola's own series is written for (empty for a directory's).
    pub written_for: Vec<String>,
    /// The patches in order.
    pub patches: Vec<PatchFile>,
    /// What reading the directory passed over (hidden files named `*.patch`), to say once.
    pub warnings: Vec<String>,
}

/// One patch file, parsed.
#[derive(Debug, Clone)]
pub(crate) struct Patch {
    /// The patch's file name (as it appears in the series).
    pub name: String,
    /// The file sections, in the order they appear.
    pub files: Vec<FilePatch>,
}

/// The changes a patch makes to one file.
#[derive(Debug, Clone)]
pub(crate) struct FilePatch {
    /// Path before the change (`None`: the file is created).
    pub old_path: Option<String>,
    /// Path after the change (`None`: the file is deleted).
    pub new_path: Option<String>,
    /// Mode before the change, when the patch says.
    pub old_mode: Option<u32>,
    /// Mode after the change, when the patch says.
    pub new_mode: Option<u32>,
    /// A copy (`copy from`/`copy to`) keeps the old path; a rename removes it.
    pub copy: bool,
    /// Full or abbreviated blob id before the change, from the `index` line.
    pub old_id: Option<String>,
    /// The content change.
    pub body: Body,
}

impl FilePatch {
    /// A section whose only lines are `Subproject commit <id>` with the same id on both sides (one
    /// of them marked `-dirty`).
    pub(crate) fn is_dirty_submodule_marker(&self) -> bool {
        let Body::Text(hunks) = &self.body else {
            return false;
        };
        let mut ids = [Vec::new(), Vec::new()];
        for line in hunks.iter().flat_map(|h| &h.lines) {
            let text = String::from_utf8_lossy(&line.text);
            let Some(id) = text.trim_end().strip_prefix("Subproject commit ") else {
                return false;
            };
            let id = id.strip_suffix("-dirty").unwrap_or(id).to_string();
            match line.kind {
                LineKind::Remove => ids[0].push(id),
                LineKind::Add => ids[1].push(id),
                LineKind::Context => return false,
            }
        }
        !ids[0].is_empty() && ids[0] == ids[1]
    }

    /// The path used in messages: the new path, or the old one for a deletion.
    pub fn display_path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("?")
    }
}

/// The content part of a file section.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    /// No content change (pure mode change, rename, empty new file).
    None,
    /// Unified-diff hunks.
    Text(Vec<Hunk>),
    /// A `GIT binary patch` (its forward data; the reverse block is checked and dropped).
    Binary(BinaryData),
    /// `Binary files a/x and b/x differ`: no data to apply.
    BinaryWithoutData,
}

/// One `@@ -a,b +c,d @@` hunk.
#[derive(Debug, Clone)]
pub(crate) struct Hunk {
    /// The header line as written (without the newline), for messages.
    pub header: String,
    /// 1-based start line in the old file (0 for an empty old side).
    pub old_start: usize,
    /// 1-based start line in the new file.
    pub new_start: usize,
    /// The hunk's lines.
    pub lines: Vec<HunkLine>,
}

/// One line of a hunk, with its line ending (absent after `\ No newline at end of file`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HunkLine {
    /// Context, removal or addition.
    pub kind: LineKind,
    /// The line's bytes including its `\n` when it has one.
    pub text: Vec<u8>,
}

/// The role of a hunk line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// ` ` line: present before and after.
    Context,
    /// `-` line: present before only.
    Remove,
    /// `+` line: present after only.
    Add,
}

/// Inflated data of one side of a git binary patch.
#[derive(Debug, Clone)]
pub(crate) enum BinaryData {
    /// The whole new content.
    Literal(Vec<u8>),
    /// A git delta against the old content.
    Delta(Vec<u8>),
}

/// A parse error: the 1-based line and what is wrong there.
#[derive(Debug)]
pub(crate) struct ParseError {
    pub line: usize,
    pub message: String,
}

pub(super) type Result<T> = std::result::Result<T, ParseError>;

pub(super) fn err<T>(line: usize, message: impl Into<String>) -> Result<T> {
    Err(ParseError {
        line,
        message: message.into(),
    })
}

fn strip_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

pub(super) fn text(line: &[u8]) -> String {
    String::from_utf8_lossy(strip_eol(line)).into_owned()
}

/// Where the series reads pristine content from (the pinned commits).
pub(crate) trait PristineTree {
    /// The pinned state of `path`.
    fn read(&self, path: &str) -> PrepareResult<Pristine>;

    /// The blob `id` (full or abbreviated, from a patch's `index` line) a patch of `path` was
    /// made from, for a three-way merge, when the repository `path` lives in has it; `None`
    /// inside a submodule, where `git apply --3way` refuses too.
    fn three_way_base(&self, _path: &str, _id: &str) -> PrepareResult<Option<Vec<u8>>> {
        Ok(None)
    }

    /// The files under the directory `dir`, when known (`None`: a directory stays one, and a
    /// patch cannot put a file in its place).
    fn files_under(&self, _dir: &str) -> PrepareResult<Option<Vec<String>>> {
        Ok(None)
    }
}

/// Why one file section failed.
pub(super) struct FileFailure {
    pub hunk: String,
    pub detail: String,
}

pub(super) fn failure(hunk: &str, detail: impl Into<String>) -> FileFailure {
    FileFailure {
        hunk: hunk.to_string(),
        detail: detail.into(),
    }
}
