//! The code blocks of README.md and docs/*.md, so that a test runs a snippet exactly as the
//! docs show it and the two cannot drift.
//!
//! Every block a user would copy says what it is in its fence's info string, after the
//! language (GitHub shows the language only):
//!
//! * `` ```nginx test:nginx-http-cache `` — a test runs it as written: it takes the block by its
//!   name with [`tested`], and `docs_are_tested` checks that some test (or `.ci/run`) names it;
//! * `` ```toml excerpt `` — a piece of something larger, or with names to fill in
//!   (`cache.example`, `<the client token>`): read, not run;
//! * `` ```text `` — what qola prints, not something to copy.

use std::path::{Path, PathBuf};

/// One fenced code block.
#[derive(Debug, Clone)]
pub struct Block {
    /// The Markdown file, relative to the workspace.
    pub file: PathBuf,
    /// The line of its opening fence (1-based).
    pub line: usize,
    /// Its language (`sh`, `toml`, ...).
    pub lang: String,
    /// What follows the language: `excerpt`, `test:<name>`, or nothing.
    pub tag: String,
    /// Its text, every line ended.
    pub text: String,
}

/// The workspace's root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace")
        .to_path_buf()
}

/// The Markdown files with snippets: README.md and docs/*.md.
pub fn markdown_files() -> Vec<PathBuf> {
    let root = workspace();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    files.insert(0, root.join("README.md"));
    files
}

/// Every fenced block of the Markdown `text` of `file`.
pub fn blocks_of(file: &Path, text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let Some(info) = line.strip_prefix("```") else {
            if let Some(block) = &mut open {
                block.text.push_str(line);
                block.text.push('\n');
            }
            continue;
        };
        match open.take() {
            Some(block) => blocks.push(block),
            None => {
                let (lang, tag) = info.trim().split_once(' ').unwrap_or((info.trim(), ""));
                open = Some(Block {
                    file: file.to_path_buf(),
                    line: i + 1,
                    lang: lang.to_string(),
                    tag: tag.trim().to_string(),
                    text: String::new(),
                });
            }
        }
    }
    assert!(
        open.is_none(),
        "{}: a code block is never closed",
        file.display()
    );
    blocks
}

/// Every block of README.md and docs/*.md.
pub fn blocks() -> Vec<Block> {
    let root = workspace();
    markdown_files()
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("a Markdown file");
            blocks_of(path.strip_prefix(&root).unwrap_or(path), &text)
        })
        .collect()
}

/// The text of the one block tagged `test:<name>`, exactly as the docs show it.
pub fn tested(name: &str) -> String {
    let tag = format!("test:{name}");
    let found: Vec<Block> = blocks().into_iter().filter(|b| b.tag == tag).collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one block of the docs is tagged {tag}: {found:?}"
    );
    found[0].text.clone()
}
