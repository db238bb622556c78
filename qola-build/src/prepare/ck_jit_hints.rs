//! ck-jit's residue in a prepared tree: its codegen hints, recognised by content.
//!
//! ROCm's ck-jit (TransformerEngine's default attention build) patches composable_kernel's fmha
//! code generators (`example/ck_tile/01_fmha/codegen/ops/*.py`) before its codegen and reverts
//! the patch after, under an `flock` on `ops/__init__.py`. A run killed in between (Ctrl-C in a
//! long configure, an OOM kill, a CI timeout) leaves the patch applied. That is ck-jit's
//! residue, not the user's edit: a preparation undoes it (through its journal, like any
//! rewrite) and says so, instead of refusing the tree.
//!
//! A file is ck-jit's residue when it is its prepared content with nothing but what ck-jit's
//! hints patches change (every variant it ships: v1 for composable_kernel up to b09112bb, v2
//! after it, v3 for 22ee91463 and later; they differ in where their hunks land, not in what
//! they write):
//!
//! | change to the prepared lines | what it is |
//! |---|---|
//! | a line added that emits one of the four markers `//jit_kernel:`, `//jit_combine_kernel:`, `//jit_dot_do_o_kernel:`, `//jit_convert_dq_kernel:` | a hint before a dispatch |
//! | a line added declaring or passing `kernel_filename` / `combine_filename` | the trait's field that carries the instance's file name to the hint |
//! | a block added: `<name> = (` or `<name> += (`, marker lines, `)` | a hint of several lines (the backward's three kernels) |
//! | after such a block `<name> = (`, the line that assigned `<name>` now adds to it (`=` to `+=`) | v2 and v3: the backward's hints go first |
//!
//! Any other added, removed or changed line makes the file an edit (the user's, or ck-jit's
//! together with the user's): it is refused as every local edit is, and the user's lines
//! survive. At least one marker must be added, so a file is never ck-jit's by its name or by a
//! field alone. A ck-jit run still going holds its lock: a preparation waits for it
//! ([`wait_for_ck_jit`]) instead of undoing the hints it is using.

use std::path::Path;

use crate::build_script::Directives;
use crate::prepare::git::FileContent;

/// The markers ck-jit's hints emit into composable_kernel's dispatchers.
const MARKERS: [&str; 4] = [
    "//jit_kernel:",
    "//jit_combine_kernel:",
    "//jit_dot_do_o_kernel:",
    "//jit_convert_dq_kernel:",
];

/// The trait fields ck-jit's hints add to carry an instance's file name.
const FIELDS: [&str; 2] = ["kernel_filename", "combine_filename"];

/// The directory of composable_kernel's fmha generators in AITER's tree, whose `__init__.py`
/// ck-jit locks while its hints are applied.
const CK_JIT_LOCKED: &str =
    "3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/ops/__init__.py";

/// Whether a file whose prepared content is `prepared` and whose content in the work tree is
/// `now` (of the same mode) is ck-jit's residue.
pub(crate) fn left_by_ck_jit(prepared: Option<FileContent>, now: Option<FileContent>) -> bool {
    match (prepared, now) {
        (Some(prepared), Some(now)) => {
            prepared.mode == now.mode && is_ck_jit_hints(&prepared.data, &now.data)
        }
        _ => false,
    }
}

/// Whether `now` is `prepared` with ck-jit's hints and nothing else (see the module docs).
fn is_ck_jit_hints(prepared: &[u8], now: &[u8]) -> bool {
    let (Ok(prepared), Ok(now)) = (std::str::from_utf8(prepared), std::str::from_utf8(now)) else {
        return false;
    };
    let prepared: Vec<&str> = prepared.split('\n').collect();
    let now: Vec<&str> = now.split('\n').collect();
    let (mut i, mut j, mut markers) = (0, 0, 0);
    while i < prepared.len() || j < now.len() {
        if i < prepared.len() && j < now.len() && prepared[i] == now[j] {
            (i, j) = (i + 1, j + 1);
            continue;
        }
        let Some(line) = now.get(j) else {
            return false; // a prepared line removed
        };
        if is_marker(line) {
            (j, markers) = (j + 1, markers + 1);
            continue;
        }
        if is_field(line) {
            j += 1;
            continue;
        }
        let Some((name, end, block_markers)) = block(&now, j) else {
            return false;
        };
        (j, markers) = (end, markers + block_markers);
        // v2 and v3: the assignment after the block now adds to what the block assigned.
        if let (Some(was), Some(is)) = (prepared.get(i), now.get(j))
            && was != is
            && adds_to(was, is, name)
        {
            (i, j) = (i + 1, j + 1);
        }
    }
    markers > 0
}

/// A line that emits one of ck-jit's markers.
fn is_marker(line: &str) -> bool {
    MARKERS.iter().any(|m| line.contains(m))
}

/// A line declaring (`kernel_filename: str  # ...`) or passing (`kernel_filename=x.filename,`)
/// one of the hints' fields.
fn is_field(line: &str) -> bool {
    let line = line.trim();
    FIELDS.iter().any(|field| {
        let Some(rest) = line.strip_prefix(field) else {
            return false;
        };
        let rest = rest.trim_start();
        if let Some(kind) = rest.strip_prefix(':') {
            let kind = kind.split('#').next().unwrap_or_default().trim();
            return kind == "str";
        }
        rest.strip_prefix('=').is_some_and(|value| {
            let value = value.trim().trim_end_matches(',').trim();
            !value.is_empty()
                && value
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        })
    })
}

/// A block of hints starting at `now[start]`: `<name> = (` or `<name> += (`, at least one
/// marker line, `)`. Returns the name, the index after the block and its markers.
fn block<'a>(now: &[&'a str], start: usize) -> Option<(&'a str, usize, usize)> {
    let opener = now[start].trim();
    let head = opener.strip_suffix('(')?.trim_end();
    let name = head
        .strip_suffix("+=")
        .or_else(|| head.strip_suffix('='))?
        .trim_end();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let mut end = start + 1;
    while now.get(end).is_some_and(|l| is_marker(l)) {
        end += 1;
    }
    let markers = end - start - 1;
    (markers > 0 && now.get(end).is_some_and(|l| l.trim() == ")")).then_some((
        name,
        end + 1,
        markers,
    ))
}

/// Whether `is` is `was` with its assignment to `name` made an addition (`name = x` to
/// `name += x`), nothing else changed.
fn adds_to(was: &str, is: &str, name: &str) -> bool {
    let assigns = format!("{name} =");
    let indent = &was[..was.len() - was.trim_start().len()];
    was.trim_start().starts_with(&assigns)
        && is == format!("{indent}{name} +={}", &was.trim_start()[assigns.len()..])
}

/// When the tree at `root` has composable_kernel's fmha generators, holds ck-jit's lock on them
/// for as long as the returned file lives, so no ck-jit run is between applying its hints and
/// reverting them while a preparation looks at the tree (a preparation under ck-jit, which holds
/// the lock itself, skips preparing and never asks). A run that holds it is waited for, said
/// once on `directives`. `None` when the tree has no such file or it cannot be opened.
pub(crate) fn wait_for_ck_jit(root: &Path, directives: &Directives) -> Option<std::fs::File> {
    let path = root.join(CK_JIT_LOCKED);
    let file = std::fs::File::open(&path).ok()?;
    match file.try_lock_shared() {
        Ok(()) => Some(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            directives.info(&format!(
                "waiting for ck-jit: a run of it holds its lock on {} (its codegen hints are applied until it ends)",
                path.display()
            ));
            file.lock_shared().ok().map(|()| file)
        }
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    //! Each variant's shape, written here as qola's own lines (not ck-jit's patches): what each
    //! adds around a generator's dispatch.

    use super::*;

    /// A generator's lines, the prepared state.
    const PREPARED: &str = "@dataclass
class ApiTrait:
    pipeline: str
    hdim: int

    def render(self, traits):
        inners = str()
        for trait in traits:
            inners += DISPATCH.format(F_trait=trait.name)
        inners_common = COMMON.format(F_x=1)
        return inners

def make_trait(self):
    return ApiTrait(
        pipeline=self.pipeline,
        hdim=self.hdim,
    )
";

    /// `PREPARED` with `edit` applied: each `(after, lines)` inserts `lines` after the first line
    /// that contains `after`; `replace` swaps one line for another.
    fn with(inserts: &[(&str, &[&str])], replace: Option<(&str, &str)>) -> String {
        let mut lines: Vec<String> = PREPARED.split('\n').map(String::from).collect();
        for (after, added) in inserts {
            let at = lines.iter().position(|l| l.contains(after)).unwrap() + 1;
            for (k, line) in added.iter().enumerate() {
                lines.insert(at + k, line.to_string());
            }
        }
        if let Some((was, is)) = replace {
            let at = lines.iter().position(|l| l == was).unwrap();
            lines[at] = is.to_string();
        }
        lines.join("\n")
    }

    const FIELD: (&str, &[&str]) = (
        "    hdim: int",
        &["    kernel_filename: str  # the instance's file, for the hint"],
    );
    const KWARG: (&str, &[&str]) = (
        "hdim=self.hdim,",
        &["        kernel_filename=self.filename,"],
    );

    /// v1 (composable_kernel up to b09112bb): a one-line hint, and the backward's block before
    /// the dispatch it names.
    fn v1() -> String {
        with(
            &[
                FIELD,
                KWARG,
                (
                    "for trait in traits:",
                    &[
                        "            inners += f\"//jit_kernel: {trait.kernel_filename}\\n\"",
                        "            inners += (",
                        "                f\"//jit_kernel: {trait.dq.filename}\\n\"",
                        "                f\"//jit_dot_do_o_kernel: {trait.dot.filename}\\n\"",
                        "                f\"//jit_convert_dq_kernel: {trait.conv.filename if trait.conv else ''}\\n\"",
                        "            )",
                    ],
                ),
            ],
            None,
        )
    }

    /// v2 and v3 (after b09112bb; 22ee91463 and later): the backward's block assigns, and the
    /// dispatch that assigned adds to it; the split-KV hint names the combine kernel too.
    fn v2() -> String {
        with(
            &[
                FIELD,
                KWARG,
                (
                    "hdim=self.hdim,",
                    &["        combine_filename=combine.filename,"],
                ),
                (
                    "for trait in traits:",
                    &[
                        "            inners += f\"//jit_kernel: {trait.kernel_filename}\\n//jit_combine_kernel: {trait.combine_filename}\\n\"",
                    ],
                ),
                (
                    "inners += DISPATCH",
                    &[
                        "        inners_common = (",
                        "            f\"//jit_kernel: {trait.dq.filename}\\n\"",
                        "            f\"//jit_dot_do_o_kernel: {trait.dot.filename}\\n\"",
                        "            f\"//jit_convert_dq_kernel: {trait.conv.filename}\\n\"",
                        "        )",
                    ],
                ),
            ],
            Some((
                "        inners_common = COMMON.format(F_x=1)",
                "        inners_common += COMMON.format(F_x=1)",
            )),
        )
    }

    #[test]
    fn every_variant_of_ck_jit_s_hints_is_recognised_by_content() {
        for (name, hinted) in [("v1", v1()), ("v2", v2())] {
            assert!(
                is_ck_jit_hints(PREPARED.as_bytes(), hinted.as_bytes()),
                "{name}"
            );
        }
        // Part of a run's patch (a kill inside `patch`): still only ck-jit's.
        let one_hint = with(
            &[(
                "for trait in traits:",
                &["            inners += f\"//jit_kernel: {t}\\n\""],
            )],
            None,
        );
        assert!(is_ck_jit_hints(PREPARED.as_bytes(), one_hint.as_bytes()));
    }

    #[test]
    fn a_user_s_line_beside_ck_jit_s_hints_makes_the_file_an_edit() {
        let mut edited = v1();
        edited = edited.replace("hdim: int\n", "hdim: int\n    mine: bool = True\n");
        assert!(!is_ck_jit_hints(PREPARED.as_bytes(), edited.as_bytes()));
        // A changed prepared line, a removed one, a changed indentation of the `+=`.
        for (was, is) in [
            ("        return inners", "        return inners  # mine"),
            ("    pipeline: str\n", ""),
            (
                "        inners_common += COMMON",
                "        inners_common +=  COMMON",
            ),
        ] {
            let text = v2().replacen(was, is, 1);
            assert!(
                !is_ck_jit_hints(PREPARED.as_bytes(), text.as_bytes()),
                "{is}"
            );
        }
    }

    #[test]
    fn no_marker_no_residue_whatever_else_looks_like_it() {
        let fields_only = with(&[FIELD, KWARG], None);
        assert!(!is_ck_jit_hints(
            PREPARED.as_bytes(),
            fields_only.as_bytes()
        ));
        assert!(!is_ck_jit_hints(PREPARED.as_bytes(), PREPARED.as_bytes()));
        let empty_block = with(
            &[(
                "for trait in traits:",
                &["            inners += (", "            )"],
            )],
            None,
        );
        assert!(!is_ck_jit_hints(
            PREPARED.as_bytes(),
            empty_block.as_bytes()
        ));
        // `=` made `+=` with no block before it is the user's.
        let alone = PREPARED.replace("inners_common = COMMON", "inners_common += COMMON");
        assert!(!is_ck_jit_hints(PREPARED.as_bytes(), alone.as_bytes()));
    }

    /// Each file of a patch: the lines of its hunks, before and after (the file as far as the
    /// patch shows it).
    fn files(patch: &str) -> Vec<(String, String)> {
        let mut files = Vec::new();
        let mut current: Option<(Vec<&str>, Vec<&str>)> = None;
        let mut in_hunk = false;
        for line in patch.lines() {
            if line.starts_with("diff ") {
                files.extend(current.take());
                current = Some((Vec::new(), Vec::new()));
                in_hunk = false;
                continue;
            }
            if line.starts_with("@@") {
                in_hunk = true;
                continue;
            }
            let Some((before, after)) = current.as_mut().filter(|_| in_hunk) else {
                continue;
            };
            match line.split_at(line.len().min(1)) {
                ("-", rest) => before.push(rest),
                ("+", rest) => after.push(rest),
                (" ", rest) | ("", rest) => {
                    before.push(rest);
                    after.push(rest);
                }
                _ => {}
            }
        }
        files.extend(current);
        files
            .into_iter()
            .map(|(b, a)| (b.join("\n"), a.join("\n")))
            .collect()
    }

    /// ck-jit's own patches, when `QOLA_TEST_CK_JIT_DIR` names a checkout of ROCm/ck-jit (CI
    /// cannot fetch it): every file every `codegen_jit_hints_*.patch` there changes is, as far as
    /// the patch shows it, ck-jit's.
    #[test]
    #[allow(clippy::disallowed_methods)] // the test's own switch
    fn every_file_of_the_hints_patches_in_a_ck_jit_checkout_is_recognised() {
        let Some(dir) = std::env::var_os("QOLA_TEST_CK_JIT_DIR") else {
            eprintln!("skipping: QOLA_TEST_CK_JIT_DIR names no checkout of ROCm/ck-jit");
            return;
        };
        let mut patches: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("codegen_jit_hints"))
            })
            .collect();
        patches.sort();
        assert!(!patches.is_empty(), "no hints patch in {dir:?}");
        for patch in patches {
            let text = std::fs::read_to_string(&patch).unwrap();
            let files = files(&text);
            assert!(!files.is_empty(), "{}", patch.display());
            for (before, after) in &files {
                assert!(
                    is_ck_jit_hints(before.as_bytes(), after.as_bytes()),
                    "{}: not recognised:\n{after}",
                    patch.display()
                );
            }
            eprintln!("{}: its {} files recognised", patch.display(), files.len());
        }
    }

    #[test]
    fn a_live_ck_jit_run_s_lock_is_waited_for_and_none_without_its_generators() {
        let tmp = tempfile::tempdir().unwrap();
        let directives = Directives::new(false);
        assert!(wait_for_ck_jit(tmp.path(), &directives).is_none());
        let lock = tmp.path().join(CK_JIT_LOCKED);
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        std::fs::write(&lock, "").unwrap();
        let held = wait_for_ck_jit(tmp.path(), &directives).expect("free: taken");
        // ck-jit's exclusive lock waits while a preparation holds it.
        let ck_jit = std::fs::File::open(&lock).unwrap();
        assert!(matches!(
            ck_jit.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        ck_jit.try_lock().unwrap();
    }
}
