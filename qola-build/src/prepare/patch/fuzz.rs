//! The applier against `git apply`, on thousands of mutated real patches: every case is either
//! refused by qola or gives exactly the tree `git apply` gives. Seeded, so a failure reproduces.
//!
//! The seed patches are made by `git diff --binary` from edits of a small tree (several hunks,
//! a hunk at the first line and one at the end, a file without a final newline, creation,
//! deletion, rename, mode change, repeated lines that make a hunk ambiguous). Each case applies
//! one to three mutations (lines dropped, doubled, swapped or cut, stray lines, changed hunk
//! numbers, changed line prefixes) and runs both appliers on the same base tree. `git apply`
//! runs only when qola accepts: a refusal is always allowed.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::model::PristineTree;
use super::model::{PatchFile, Series};
use super::parse::parse_patch;
use super::series::{SeriesSource, apply_series, load_series};
use crate::prepare::git::Pristine;
use crate::prepare::git::{FileContent, MODE_EXEC, MODE_FILE, MODE_SYMLINK};
use crate::prepare::report::Result;

/// How many mutated cases one run checks.
const CASES: usize = 3000;

type Tree = BTreeMap<String, FileContent>;

struct Base<'t>(&'t Tree);

impl PristineTree for Base<'_> {
    fn files_under(&self, dir: &str) -> Result<Option<Vec<String>>> {
        let inside = format!("{dir}/");
        Ok(Some(
            self.0
                .keys()
                .filter(|k| k.starts_with(&inside))
                .cloned()
                .collect(),
        ))
    }

    fn read(&self, path: &str) -> Result<Pristine> {
        if let Some(file) = self.0.get(path) {
            return Ok(Pristine::File(file.clone()));
        }
        let dir = format!("{path}/");
        Ok(if self.0.keys().any(|k| k.starts_with(&dir)) {
            Pristine::Directory
        } else {
            Pristine::Absent
        })
    }
}

fn file(text: &str) -> FileContent {
    FileContent {
        mode: MODE_FILE,
        data: text.as_bytes().to_vec(),
    }
}

fn base_tree() -> Tree {
    let mut c = String::new();
    for i in 0..40 {
        c.push_str(&match i % 8 {
            0 => format!("int f{i}(void) {{\n"),
            3 => "  return 0;\n".to_string(),
            4 => "}\n".to_string(),
            5 => "\n".to_string(),
            _ => format!("  x += {i};\n"),
        });
    }
    let header: String = (0..15).map(|i| format!("#define H{i} {i}\n")).collect();
    let repeated: String = (0..24)
        .map(|i| ["x\n", "y\n", "x\n", "z\n"][i % 4])
        .collect();
    Tree::from([
        ("src/a.c".to_string(), file(&c)),
        ("src/b.h".to_string(), file(&header)),
        (
            "doc/readme.txt".to_string(),
            file("one\ntwo\nthree\nno newline"),
        ),
        ("data/rep.txt".to_string(), file(&repeated)),
        (
            "run.sh".to_string(),
            FileContent {
                mode: MODE_EXEC,
                data: b"#!/bin/sh\necho run\nexit 0\n".to_vec(),
            },
        ),
    ])
}

fn write_tree(dir: &Path, tree: &Tree) {
    for (path, content) in tree {
        let full = dir.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        if content.mode == MODE_SYMLINK {
            let target = std::ffi::OsStr::from_bytes(&content.data);
            std::os::unix::fs::symlink(target, &full).unwrap();
            continue;
        }
        std::fs::write(&full, &content.data).unwrap();
        let mode = if content.mode == MODE_EXEC {
            0o755
        } else {
            0o644
        };
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn read_tree(dir: &Path) -> Tree {
    let mut out = Tree::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let name = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if name == ".git" || name == "case.patch" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                // An empty directory is part of the result too (git makes one for a submodule).
                if std::fs::read_dir(&path).unwrap().next().is_none() {
                    out.insert(
                        format!("{name}/"),
                        FileContent {
                            mode: 0o040000,
                            data: Vec::new(),
                        },
                    );
                }
                stack.push(path);
                continue;
            }
            let content = if meta.file_type().is_symlink() {
                FileContent {
                    mode: MODE_SYMLINK,
                    data: std::fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                }
            } else {
                let exec = meta.permissions().mode() & 0o100 != 0;
                FileContent {
                    mode: if exec { MODE_EXEC } else { MODE_FILE },
                    data: std::fs::read(&path).unwrap(),
                }
            };
            out.insert(name, content);
        }
    }
    out
}

/// The seed patches: real `git diff --binary` output for edits of the base tree.
fn seed_patches(scratch: &Path, base: &Tree) -> Vec<Vec<u8>> {
    let repo = scratch.join("seed");
    std::fs::create_dir_all(&repo).unwrap();
    write_tree(&repo, base);
    qola_tests::git(&repo, &["init", "-q"]);
    qola_tests::git(&repo, &["add", "-A"]);
    qola_tests::git(&repo, &["commit", "-q", "-m", "base"]);
    type Edit = fn(&mut Tree);
    let edits: [Edit; 9] = [
        |t| {
            let a = t.get_mut("src/a.c").unwrap();
            let text = String::from_utf8(a.data.clone()).unwrap();
            a.data = text
                .replace("  x += 2;\n", "  x += 2000;\n")
                .replace("  x += 17;\n", "")
                .replace("  x += 38;\n", "  x += 38;\n  x -= 1;\n")
                .into_bytes();
        },
        |t| {
            let b = t.get_mut("src/b.h").unwrap();
            let text = String::from_utf8(b.data.clone()).unwrap();
            b.data = format!(
                "#pragma once\n{}#define LAST 1\n",
                text.replace("H0 0", "H0 00")
            )
            .into_bytes();
        },
        |t| {
            t.insert("src/new.c".into(), file("int added;\nint more;\n"));
            t.remove("doc/readme.txt");
        },
        |t| {
            let mut b = t.remove("src/b.h").unwrap();
            b.data.extend_from_slice(b"#define MOVED 1\n");
            t.insert("include/b.h".into(), b);
        },
        |t| {
            let r = t.get_mut("run.sh").unwrap();
            r.mode = MODE_FILE;
            r.data = b"#!/bin/sh\necho run twice\nexit 0\n".to_vec();
        },
        |t| {
            let r = t.get_mut("doc/readme.txt").unwrap();
            r.data = b"one\n2\nthree\nno newline\n".to_vec();
        },
        // Types and modes: a new symlink and a new executable; a file turned into a symlink
        // (a deletion and a creation).
        |t| {
            t.insert(
                "link".into(),
                FileContent {
                    mode: MODE_SYMLINK,
                    data: b"run.sh".to_vec(),
                },
            );
            t.insert(
                "tools/new.sh".into(),
                FileContent {
                    mode: MODE_EXEC,
                    data: b"#!/bin/sh\n".to_vec(),
                },
            );
        },
        |t| {
            t.insert(
                "src/b.h".into(),
                FileContent {
                    mode: MODE_SYMLINK,
                    data: b"../include/b.h".to_vec(),
                },
            );
        },
        |t| {
            let r = t.get_mut("data/rep.txt").unwrap();
            let text = String::from_utf8(r.data.clone()).unwrap();
            r.data = text
                .replacen("x\ny\nx\nz\n", "x\ny\nX\nz\n", 3)
                .into_bytes();
        },
    ];
    let mut patches = Vec::new();
    for (i, edit) in edits.iter().enumerate() {
        let mut tree = base.clone();
        edit(&mut tree);
        // All edits at once too, for multi-section patches.
        if i == edits.len() - 1 {
            for e in &edits[..2] {
                e(&mut tree);
            }
        }
        let _ = std::fs::remove_dir_all(repo.join("src"));
        for top in ["doc", "data", "include", "run.sh", "link", "tools"] {
            let p = repo.join(top);
            let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
        }
        write_tree(&repo, &tree);
        qola_tests::git(&repo, &["add", "-A"]);
        let diff = qola_tests::git_command(&repo, &["diff", "--cached", "--binary", "-M"])
            .output()
            .unwrap()
            .stdout;
        patches.push(diff);
        qola_tests::git(&repo, &["reset", "-q", "--hard"]);
    }
    // A new submodule entry (mode 160000), as `git diff` writes it: `git apply` makes an empty
    // directory, qola refuses.
    let commit = qola_tests::git(&repo, &["rev-parse", "HEAD"]);
    qola_tests::add_gitlink(&repo, &commit, "sub");
    patches.push(
        qola_tests::git_command(&repo, &["diff", "--cached", "--binary"])
            .output()
            .unwrap()
            .stdout,
    );
    qola_tests::git(&repo, &["reset", "-q", "--hard"]);
    patches
}

/// xorshift64*: small, seeded, enough for choosing mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const STRAY: [&str; 16] = [
    "\n",
    "garbage\n",
    " ctx\n",
    "+x\n",
    "-y\n",
    "@@ -1 +1 @@\n",
    "\\ No newline at end of file\n",
    "diff --git a/src/a.c b/src/a.c\n",
    "new mode 120000\n",
    "old mode 100644\n",
    "rename to src/zz.c\n",
    "deleted file mode 100644\n",
    "new file mode 160000\n",
    "new file mode 120000\n",
    "--- a/src/a.c\n",
    "+++ b/src/b.h\n",
];

fn mutate(patch: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = patch
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    for _ in 0..1 + rng.below(3) {
        if lines.is_empty() {
            break;
        }
        let at = rng.below(lines.len());
        match rng.below(8) {
            0 => {
                lines.remove(at);
            }
            1 => {
                let line = lines[at].clone();
                lines.insert(at, line);
            }
            2 if at + 1 < lines.len() => lines.swap(at, at + 1),
            3 => lines.insert(at, STRAY[rng.below(STRAY.len())].as_bytes().to_vec()),
            4 => {
                // A number of a hunk header.
                let headers: Vec<usize> = (0..lines.len())
                    .filter(|i| lines[*i].starts_with(b"@@ -"))
                    .collect();
                if let Some(&h) = headers.get(rng.below(headers.len())) {
                    let text = String::from_utf8_lossy(&lines[h]).into_owned();
                    let digits: Vec<usize> = text
                        .char_indices()
                        .filter(|(_, c)| c.is_ascii_digit())
                        .map(|(i, _)| i)
                        .collect();
                    if let Some(&d) = digits.get(rng.below(digits.len())) {
                        let mut bytes = text.into_bytes();
                        bytes[d] = b'0' + rng.below(10) as u8;
                        lines[h] = bytes;
                    }
                }
            }
            5 => {
                let len = lines[at].len();
                let cut = rng.below(len);
                lines[at].truncate(cut);
                lines[at].push(b'\n');
            }
            6 => {
                let len = lines[at].len().saturating_sub(1);
                if len > 0 {
                    let i = rng.below(len);
                    lines[at][i] = b"a/ +-1.\\"[rng.below(8)];
                }
            }
            _ => {
                if let Some(first) = lines[at].first_mut() {
                    *first = b" +-"[rng.below(3)];
                }
            }
        }
    }
    lines.concat()
}

fn git_apply(dir: &Path, patch: &[u8]) -> bool {
    std::fs::write(dir.join("case.patch"), patch).unwrap();
    qola_tests::git_command(dir, &["apply", "case.patch"])
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn mutated_real_patches_are_refused_or_give_git_applys_tree() {
    let scratch = tempfile::tempdir().unwrap();
    let base = base_tree();
    let seeds = seed_patches(scratch.path(), &base);
    let work = scratch.path().join("case");
    let mut rng = Rng(0x05ee_d0f9_a7c4);
    let (mut refused, mut agreed) = (0, 0);
    for case in 0..CASES {
        let seed = &seeds[case % seeds.len()];
        let patch = if case < seeds.len() {
            seed.clone()
        } else {
            mutate(seed, &mut rng)
        };
        let series = Series {
            dir: None,
            bundled: false,
            written_for: Vec::new(),
            patches: vec![PatchFile {
                name: "case.patch".into(),
                path: "case.patch".into(),
                bytes: patch.clone(),
            }],
            warnings: Vec::new(),
        };
        let Ok(applied) = apply_series(&series, &Base(&base), "base") else {
            assert!(
                case >= seeds.len() || case == seeds.len() - 1,
                "seed patch {case} refused"
            );
            refused += 1;
            continue;
        };
        let mut ours = base.clone();
        for (path, content) in applied.files {
            match content {
                Some(c) => ours.insert(path, c),
                None => ours.remove(&path),
            };
        }
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        write_tree(&work, &base);
        assert!(
            git_apply(&work, &patch),
            "case {case}: qola applied a patch `git apply` refuses:\n{}",
            String::from_utf8_lossy(&patch)
        );
        assert!(
            read_tree(&work) == ours,
            "case {case}: qola's tree differs from git apply's for:\n{}",
            String::from_utf8_lossy(&patch)
        );
        agreed += 1;
    }
    eprintln!("{CASES} cases: {refused} refused by qola, {agreed} gave git apply's tree");
    // Both outcomes are exercised.
    assert!(
        refused > CASES / 10 && agreed > CASES / 10,
        "{refused} refused, {agreed} agreed"
    );
}

#[test]
fn every_patch_of_qolas_own_series_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-build/patches/aiter");
    let series = load_series(&SeriesSource::Dir(dir.clone())).unwrap();
    assert!(series.patches.len() >= 5);
    for patch in &series.patches {
        parse_patch(&patch.name, &patch.bytes)
            .unwrap_or_else(|e| panic!("{} line {}: {}", patch.name, e.line, e.message));
    }
}
