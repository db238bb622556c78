//! composable_kernel's instances compiled in batches: several instance files in one translation
//! unit that qola writes in the build's own directory (never in the tree).
//!
//! # Why
//!
//! A device pass of a CK instance spends most of its time on what every instance of a family
//! shares (headers, semantic analysis, common instantiations): ~13 s fixed, then 1–6.5 s per
//! instance (gfx942, clang 21). Four instances in one unit cost about 0.4× of four units, with
//! every kernel the same bytes (BENCHMARKS.md, "CK batches").
//!
//! # What may go together
//!
//! | a member must | because |
//! |---|---|
//! | be a generated `.cpp` with a device guard (`compile::passes::Guard`: includes, then `#if !defined(__HIP_DEVICE_COMPILE__) \|\| (EXPR)` around the whole body) | the batch keeps that guard around its whole body, so a dead architecture still gets the empty pass |
//! | share the text before the guard (its includes), the guard's line and its own flags with the others | one translation unit has one prefix, one condition and one command |
//! | be found by its name through the module's include directories, in its own directory first | the batch includes it by name (`#include "<file>"`), so the batch's text holds no path |
//! | define its type aliases (`using NAME = ...;` at the top level) | each member's aliases get a name of their own around its `#include` (`#define NAME qola_<k>_NAME` ... `#undef NAME`): CK's generator names them `_0` in every file; an alias is no symbol, so no symbol changes |
//!
//! # Which go together: stable groups
//!
//! Within a group (same directory, prefix, guard and flags), members are taken in file-name
//! order and cut into batches by [`chunks`]. An instance's family is its name up to its block
//! tile (the first word `b<n>` or `b<n>x<n>...`, as composable_kernel's generators name an
//! instance: `fmha_bwd_d256_fp16_group_b16x64x...`). Members of one family share most of what
//! a device pass instantiates: a second d256 backward instance of a family adds 0.1–0.25 of
//! what it costs alone (6 s to 56 s, 19 s to 77 s), while instances of other head dims or
//! kernels share little more than the headers (BENCHMARKS.md, "Batches by family"). So:
//!
//! | a batch ends | because |
//! |---|---|
//! | when it holds the size | the size bounds a job's memory |
//! | after a family's last member, when the next family holds half the size or more and does not fit whole beside the batch's members, and this family holds half the size too or the batch does | a family fills batches of its own; its rest below half the size is a batch of its own, so its neighbours do not shift with it; small families that fit together share one batch rather than each pay the headers |
//! | in a family of more than four times the size, once the batch holds half the size, after a member whose name hashes to a cut point | one instance coming or going in a long family regroups a few batches until a cut falls on the same name again, not the rest of the family |
//!
//! A family of at most four times the size fills its batches in order (12 instances at size
//! 4: three batches of four, not the pairs hash cuts leave); one instance coming or going
//! regroups the rest of that family (at most four batches; all of them when the family's size
//! crosses four times the size, as hash cuts begin or end). A family below half the size joins
//! a neighbour's batch rather than be compiled alone: the next one's, or the previous one's
//! when that has room (TE's lone convert dQ and dot(dO, O)). Families that fit whole in one
//! batch together share it (a slice's two convert dQ of d64 and two of d256: one batch of
//! four, not two of two, each paying its headers). Membership depends only on the
//! names: not on the machine, the job count or the cache. Adding or removing one instance
//! regroups batches of its own family and a few after it (a run of small families that share
//! batches regroups after it), and at most the one batch before its family (when the family's
//! size crosses half the size, or when it comes to fit beside that batch): at most 8 of 46 in
//! the unit test. So a narrower CK filter keeps most batches (and their cached objects).
//! `QOLA_BATCH=1` compiles one unit per instance.
//!
//! A batch that fails to compile is compiled again as its members, one unit each, so the error
//! names the instance at fault (see `library`).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::aiter::Result;
use crate::common::io::{io_error, write_if_changed};

/// The batch size when `QOLA_BATCH` does not say (BENCHMARKS.md, "CK batches").
pub(crate) const DEFAULT_SIZE: usize = 4;

/// The directory, under the module's generated code, that holds its batches.
pub(crate) const DIR: &str = "qola-batches";

/// One batch: the translation unit qola writes, and the instance files it includes, in order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Batch {
    /// The batch's source file (in the module's `qola-batches/`).
    pub file: PathBuf,
    /// The instance files it compiles, in order.
    pub members: Vec<PathBuf>,
}

/// A family of at most this many times the size fills its batches in order; a larger one is
/// also cut where a name hashes to a cut point (see the module docs).
const FILLED_FAMILY: usize = 4;

/// The ranges of `names` (in order) that form batches of at most `size` (see the module docs).
pub(crate) fn chunks(names: &[&str], size: usize) -> Vec<Range<usize>> {
    let size = size.max(1);
    let least = size.div_ceil(2);
    let families: Vec<String> = names.iter().map(|name| family(name)).collect();
    // How many members each name's family has: sorted names keep a family together.
    let mut family_len = Vec::with_capacity(names.len());
    for run in families.chunk_by(|a, b| a == b) {
        family_len.extend(std::iter::repeat_n(run.len(), run.len()));
    }
    let mut out = Vec::new();
    let mut start = 0;
    for (i, name) in names.iter().enumerate() {
        let len = i + 1 - start;
        let hashes_to_a_cut = family_len[i] > FILLED_FAMILY * size && {
            let hash = blake3::hash(name.as_bytes());
            u64::from_le_bytes(hash.as_bytes()[..8].try_into().expect("8 bytes")) % size as u64 == 0
        };
        // A family ends here, and the next one can fill a batch of its own: so can this one
        // (its rest is a batch of its own), or the batch holds half the size; but a next
        // family that fits whole beside what the batch holds joins it.
        let family_ends = families.get(i + 1).is_some_and(|next| {
            *next != families[i]
                && family_len[i + 1] >= least
                && (len >= least || family_len[i] >= least)
                && len + family_len[i + 1] > size
        });
        if len >= size || (len >= least && hashes_to_a_cut) || family_ends {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < names.len() {
        out.push(start..names.len());
    }
    out
}

/// What members of one batch share: their directory, the text before their guard, the guard's
/// line and their own flags.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Group {
    dir: PathBuf,
    prefix: String,
    if_line: String,
    flags: Vec<String>,
}

/// An instance's family: its file name's `_`-separated words up to and including the first
/// block tile (`b<n>` or `b<n>x<n>...`), or `""` for a name without one (see the module docs).
fn family(name: &str) -> String {
    let is_tile = |word: &str| {
        word.strip_prefix('b').is_some_and(|dims| {
            dims.split('x')
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    let words: Vec<&str> = name.split('_').collect();
    match words.iter().position(|w| is_tile(w)) {
        Some(at) => words[..=at].join("_"),
        None => String::new(),
    }
}

/// What a source brings to a batch: its group and its aliases.
struct Candidate {
    path: PathBuf,
    name: String,
    group: Group,
    aliases: Vec<String>,
}

/// A module's units with its CK instances in batches.
pub(crate) struct Batched {
    /// The sources to compile, sorted: batches and what is compiled alone.
    pub sources: Vec<PathBuf>,
    /// The batches among them.
    pub batches: Vec<Batch>,
    /// The per-source flags of those sources (a batch has its members').
    pub file_flags: Vec<(PathBuf, Vec<String>)>,
}

/// `path` as a batch member, or `None` when it cannot be one (see the module docs).
fn candidate(path: &Path, flags: &[String], includes: &[PathBuf]) -> Option<Candidate> {
    if path.extension().is_none_or(|x| x != "cpp") {
        return None;
    }
    let dir = path.parent()?.to_path_buf();
    let name = path.file_name()?.to_str()?.to_string();
    // Found by name through the include directories, its own first.
    let found = includes.iter().find(|d| d.join(&name).is_file())?;
    if *found != dir {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let guard = crate::compile::read_guard(&text)?;
    let rest = &text[guard.prefix.len()..];
    let (if_line, body) = rest.split_once('\n')?;
    let aliases: Vec<String> = body
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("using ")?;
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest[ident.len()..]
                .trim_start()
                .starts_with('=')
                .then_some(ident)
        })
        .collect();
    if aliases.is_empty() {
        return None;
    }
    Some(Candidate {
        path: path.to_path_buf(),
        group: Group {
            dir,
            prefix: guard.prefix,
            if_line: if_line.to_string(),
            flags: flags.to_vec(),
        },
        name,
        aliases,
    })
}

/// The batch file's name: its first member's stem and how many follow, short enough for any
/// file system.
fn batch_name(first: &str, more: usize) -> String {
    let stem = first.strip_suffix(".cpp").unwrap_or(first);
    let stem = match stem.len() > 180 {
        true => format!(
            "{}-{}",
            &stem[..160],
            &blake3::hash(stem.as_bytes()).to_hex()[..16]
        ),
        false => stem.to_string(),
    };
    format!("{stem}+{more}.cpp")
}

/// The text of a batch of `members` (a group's prefix and guard line, then each member's
/// aliases renamed around its `#include`).
fn batch_text(members: &[&Candidate]) -> String {
    let Group {
        prefix, if_line, ..
    } = &members[0].group;
    let mut text = format!(
        "{prefix}{if_line}\n// qola: {} composable_kernel instances in one translation unit (QOLA_BATCH=1 compiles one\n// unit each); each one's type aliases get a name of their own around its #include.\n",
        members.len()
    );
    for (k, member) in members.iter().enumerate() {
        for alias in &member.aliases {
            text.push_str(&format!("#define {alias} qola_{k}_{alias}\n"));
        }
        text.push_str(&format!("#include \"{}\"\n", member.name));
        for alias in &member.aliases {
            text.push_str(&format!("#undef {alias}\n"));
        }
    }
    text.push_str("#endif\n");
    text
}

/// The module's sources with its CK instances in batches of up to `size` (`size` 1: as they
/// are), the batches written under `gen_dir/<module>/qola-batches/` (only what changed; stale
/// batches removed), and the flags of each batch (its members').
pub(crate) fn batch_sources(
    sources: &[PathBuf],
    file_flags: &[(PathBuf, Vec<String>)],
    includes: &[PathBuf],
    size: usize,
    dir: &Path,
) -> Result<Batched> {
    let flags_of: BTreeMap<&Path, &Vec<String>> =
        file_flags.iter().map(|(f, v)| (f.as_path(), v)).collect();
    let no_flags = Vec::new();
    let mut groups: BTreeMap<_, Vec<Candidate>> = BTreeMap::new();
    let mut single = Vec::new();
    for source in sources {
        let flags = flags_of.get(source.as_path()).copied().unwrap_or(&no_flags);
        match (size > 1)
            .then(|| candidate(source, flags, includes))
            .flatten()
        {
            Some(c) => groups.entry(c.group.clone()).or_default().push(c),
            None => single.push(source.clone()),
        }
    }
    let mut batches = Vec::new();
    let mut texts = BTreeMap::new();
    let mut flags = Vec::new();
    for (group, mut members) in groups {
        members.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        for range in chunks(&names, size) {
            let part: Vec<&Candidate> = members[range].iter().collect();
            if part.len() == 1 {
                single.push(part[0].path.clone());
                continue;
            }
            let file = dir.join(batch_name(&part[0].name, part.len() - 1));
            texts.insert(file.clone(), batch_text(&part));
            if !group.flags.is_empty() {
                flags.push((file.clone(), group.flags.clone()));
            }
            batches.push(Batch {
                file,
                members: part.iter().map(|m| m.path.clone()).collect(),
            });
        }
    }
    write_batches(dir, &texts)?;
    let mut sources: Vec<PathBuf> = single;
    sources.extend(batches.iter().map(|b| b.file.clone()));
    sources.sort();
    let mut file_flags: Vec<(PathBuf, Vec<String>)> = file_flags
        .iter()
        .filter(|(f, _)| sources.contains(f))
        .cloned()
        .collect();
    file_flags.extend(flags);
    Ok(Batched {
        sources,
        batches,
        file_flags,
    })
}

/// Writes `texts` (batch file → text) into `dir`, only what changed, and removes the batches
/// this build no longer has.
fn write_batches(dir: &Path, texts: &BTreeMap<PathBuf, String>) -> Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if !texts.contains_key(&path) {
                std::fs::remove_file(&path).map_err(io_error("remove the old batch", &path))?;
            }
        }
    }
    for (file, text) in texts {
        write_if_changed(file, text.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("fmha_fwd_d128_bf16_instance_{i:04}_gfx9.cpp"))
            .collect()
    }

    /// Instance names of families in this order: `(tile, how many)` each.
    fn families_of(families: &[(&str, usize)]) -> Vec<String> {
        families
            .iter()
            .flat_map(|(tile, n)| (0..*n).map(move |i| format!("k_{tile}_v{i}_gfx9.cpp")))
            .collect()
    }

    fn batches_of(names: &[String], size: usize) -> Vec<Vec<String>> {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        chunks(&refs, size)
            .into_iter()
            .map(|r| names[r].to_vec())
            .collect()
    }

    #[test]
    fn batches_hold_at_most_the_size_and_every_instance_once_in_order() {
        let all = names(300);
        for size in [1, 2, 4, 8] {
            let batches = batches_of(&all, size);
            assert!(batches.iter().all(|b| !b.is_empty() && b.len() <= size));
            assert_eq!(batches.concat(), all, "size {size}");
        }
        assert_eq!(batches_of(&all, 1).len(), 300);
    }

    /// Removes each of `all` in turn (size 4) and asserts that every batch before the one
    /// `kept(removed, batches)` names stays and that at most 8 regroup.
    fn at_most_a_few_regroup(all: &[String], kept: impl Fn(usize, &[Vec<String>]) -> usize) {
        let before = batches_of(all, 4);
        let mut worst = 0;
        for removed in 0..all.len() {
            let mut fewer = all.to_vec();
            fewer.remove(removed);
            let after = batches_of(&fewer, 4);
            let at = kept(removed, &before);
            assert!(
                before[..at].iter().all(|b| after.contains(b)),
                "{} removed",
                all[removed]
            );
            worst = worst.max(before.len() - before.iter().filter(|b| after.contains(b)).count());
        }
        assert!(
            worst <= 8,
            "up to {worst} of {} batches regrouped",
            before.len()
        );
        eprintln!(
            "one instance removed: at most {worst} of {} batches regrouped",
            before.len()
        );
    }

    #[test]
    fn one_instance_more_or_less_regroups_its_batch_and_few_after_it() {
        let all = names(300);
        // The batches before the removed one's stay.
        at_most_a_few_regroup(&all, |removed, before| {
            before
                .iter()
                .position(|b| b.contains(&all[removed]))
                .unwrap()
        });
    }

    #[test]
    fn an_instances_family_is_its_name_up_to_its_block_tile() {
        for (name, family_of) in [
            (
                "fmha_bwd_d256_fp16_group_b16x64x256x16x256x16x32x256x256_r1x4x1_r4x1x1_r1x4x1_w16x16x32_w16x16x16_o1_maxq0_pd1_alibi_ndbias_mask_dropout_wg16_deterministic_ntrload_gfx9.cpp",
                "fmha_bwd_d256_fp16_group_b16x64x256x16x256x16x32x256x256",
            ),
            (
                "fmha_bwd_convert_dq_d64_fp16_b64x128_group_o2_psd_deterministic_gfx9.cpp",
                "fmha_bwd_convert_dq_d64_fp16_b64x128",
            ),
            (
                "fmha_bwd_dot_do_o_d256_fp16_b64_group_o2_ps_gfx9.cpp",
                "fmha_bwd_dot_do_o_d256_fp16_b64",
            ),
            (
                "fmha_fwd_d64_fp16_group_b128x64x32x64x32x64_r4x1x1_r4x1x1_w32x32x16_w32x32x16_qr_async_vr_psskddv_nlogits_alibi_nmask_lse_dropout_nskip_nsquant_ntrload_gfx9.cpp",
                "fmha_fwd_d64_fp16_group_b128x64x32x64x32x64",
            ),
            // `bias` and `b` alone are words, not tiles; names without a tile are one family.
            ("inst_bias_b_1_gfx9.cpp", ""),
        ] {
            assert_eq!(family(name), family_of, "{name}");
        }
    }

    #[test]
    fn a_family_ends_a_batch_that_holds_half_the_size_and_a_smaller_rest_joins_the_next() {
        let names = families_of(&[("b8", 1), ("b16", 3), ("b32", 5)]);
        // Size 8: no hash cut before 4 members. The lone b8 joins b16's three; b32's five do
        // not fit beside them and are a batch of their own, not the rest of a batch of eight.
        assert_eq!(
            batches_of(&names, 8),
            [names[..4].to_vec(), names[4..].to_vec()]
        );
    }

    #[test]
    fn whole_families_that_fit_together_share_a_batch() {
        let names = families_of(&[("b16", 2), ("b32", 2), ("b64", 3), ("b8", 2)]);
        // Size 4: b16's and b32's two fill one batch; b64's three and b8's two do not fit in
        // one, so each is a batch of its own.
        assert_eq!(
            batches_of(&names, 4),
            [
                names[..4].to_vec(),
                names[4..7].to_vec(),
                names[7..].to_vec()
            ]
        );
    }

    #[test]
    fn a_family_smaller_than_half_the_size_joins_the_batch_before_it() {
        let names = families_of(&[("b16", 2), ("b8", 1)]);
        // Size 4: b16's two and the lone b8 (too few for a batch of its own) in one batch.
        assert_eq!(batches_of(&names, 4), std::slice::from_ref(&names));
    }

    #[test]
    fn a_family_of_at_most_four_times_the_size_fills_its_batches_in_order() {
        let names = families_of(&[("b16", 12), ("b32", 6), ("b64", 40)]);
        let sizes: Vec<usize> = batches_of(&names, 4).iter().map(Vec::len).collect();
        // b16: three batches of four; b32: four and two. b64 (more than 16) is also cut where
        // a name hashes to a cut point, once a batch holds two: more than ten batches.
        assert_eq!(sizes[..5], [4, 4, 4, 4, 2], "{sizes:?}");
        assert!(sizes.len() > 5 + 10, "{sizes:?}");
    }

    #[test]
    fn one_instance_more_or_less_regroups_its_family_and_few_after_it() {
        // Families of many sizes, in a fixed order: 1 to 20 members.
        let sizes = [
            5, 12, 1, 7, 16, 3, 9, 2, 13, 6, 20, 1, 1, 4, 11, 8, 17, 2, 5, 14,
        ];
        let tiles: Vec<String> = (0..sizes.len()).map(|f| format!("b{f}")).collect();
        let all = families_of(
            &tiles
                .iter()
                .zip(sizes)
                .map(|(t, n)| (t.as_str(), n))
                .collect::<Vec<_>>(),
        );
        // Every batch that ends before the batch ahead of the removed one's family stays.
        at_most_a_few_regroup(&all, |removed, before| {
            let its = family(&all[removed]);
            let first = before
                .iter()
                .position(|b| b.iter().any(|n| family(n) == its))
                .unwrap();
            first.saturating_sub(1)
        });
    }

    #[test]
    fn families_of_half_the_size_or_more_fill_batches_of_their_own() {
        let tmp = tempfile::tempdir().unwrap();
        let gen_dir = tmp.path().join("0");
        std::fs::create_dir_all(&gen_dir).unwrap();
        let mut sources = Vec::new();
        for tile in ["b64x64", "b128x64"] {
            for variant in ["npad", "pd1", "pd8"] {
                let path = gen_dir.join(format!("fmha_fwd_d64_{tile}_{variant}_gfx9.cpp"));
                let text = format!(
                    "#include \"fmha_fwd.hpp\"\n#if !defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__))\nusing trait_0 = T<{variant}>;\n#endif\n"
                );
                std::fs::write(&path, text).unwrap();
                sources.push(path);
            }
        }
        let dir = tmp.path().join(DIR);
        let batched =
            batch_sources(&sources, &[], std::slice::from_ref(&gen_dir), 4, &dir).unwrap();
        // In one family the six would make batches of four and two; by family, three and three.
        let members: Vec<&[PathBuf]> = batched.batches.iter().map(|b| &b.members[..]).collect();
        assert_eq!(members, [&sources[3..], &sources[..3]], "{members:?}");
    }

    #[test]
    fn a_batch_renames_each_members_aliases_around_its_include_inside_the_guard() {
        let tmp = tempfile::tempdir().unwrap();
        let gen_dir = tmp.path().join("0");
        std::fs::create_dir_all(&gen_dir).unwrap();
        let instance = |i: usize| {
            format!(
                "// generated\n#include \"fmha_fwd.hpp\"\n\n#if !defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__))\n\nusing fmha_dtype_0 = X{i};\nusing trait_0   = T<fmha_dtype_0>;\ntemplate<>\nfloat f_<trait_0>() {{ return {i}; }}\n#endif // guard\n"
            )
        };
        let mut sources = Vec::new();
        for i in 0..3 {
            let path = gen_dir.join(format!("inst_{i}_gfx9.cpp"));
            std::fs::write(&path, instance(i)).unwrap();
            sources.push(path);
        }
        // The API file has no guard: a unit of its own.
        let api = gen_dir.join("fmha_fwd_api.cpp");
        std::fs::write(&api, "#include \"fmha_fwd.hpp\"\nint api();\n").unwrap();
        sources.push(api.clone());
        let dir = tmp.path().join(DIR);
        let Batched {
            sources: units,
            batches,
            ..
        } = batch_sources(&sources, &[], std::slice::from_ref(&gen_dir), 3, &dir).unwrap();
        assert_eq!(batches.len(), 1, "{batches:?}");
        assert_eq!(batches[0].members, sources[..3]);
        let mut expected = vec![batches[0].file.clone(), api];
        expected.sort();
        assert_eq!(units, expected);
        let text = std::fs::read_to_string(&batches[0].file).unwrap();
        assert!(
            text.starts_with("// generated\n#include \"fmha_fwd.hpp\"\n\n#if !defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__))\n"),
            "{text}"
        );
        assert!(
            text.contains("#define fmha_dtype_0 qola_1_fmha_dtype_0\n#define trait_0 qola_1_trait_0\n#include \"inst_1_gfx9.cpp\"\n#undef fmha_dtype_0\n#undef trait_0\n"),
            "{text}"
        );
        assert!(text.ends_with("#endif\n"), "{text}");
        // The batch keeps the guard: the same prefix and condition as its members.
        let guard = crate::compile::read_guard(&text).expect("a guarded batch");
        let member = crate::compile::read_guard(&instance(0)).unwrap();
        assert_eq!(guard, member);
        // Batching off: the sources as they are, and the old batch removed.
        let Batched {
            sources: units,
            batches,
            ..
        } = batch_sources(&sources, &[], std::slice::from_ref(&gen_dir), 1, &dir).unwrap();
        assert!(batches.is_empty());
        sources.sort();
        assert_eq!(units, sources);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }
}
