//! AITER's tuned tables merged as its `core.py` merges them, into qola's cache, never into the
//! tree or `/tmp`.
//!
//! A recipe names a tuned table through `AITER_CONFIGS.AITER_CONFIG_<T>_FILE` (the FP4 GEMM's
//! `--tune_file`). AITER's `get_config_file` picks it: the environment's `AITER_CONFIG_<T>` (a
//! `:`-separated list), else the default table `core.py` names plus every
//! `aiter/configs/model_configs/*<table>*.csv` that is not an untuned one. One file is used as
//! it is; several are merged (AITER's `update_config_files`, with pandas):
//!
//! | Step | AITER | qola |
//! |---|---|---|
//! | a listed file that does not exist | skipped | skipped; none left: an error |
//! | columns | the first table's, each new one inserted before `tflops` | the same |
//! | a missing column | `gfx` from `cu_num` (`_LEGACY_CU_NUM_TO_GFX` in `chip_info.py`), `xbf16`/`run_1stage`/`ksplit` and any other: `0` | the same, the map read from the tree; a `cu_num` it lacks: an error (AITER asks the live GPU) |
//! | rows | the tables' rows in order | the same |
//! | duplicates | by the untuned table's columns + `cu_num` (+ `gfx`, `_tag`): written back into the source tables, then an error | an error naming the rows and their tables; nothing written |
//! | the result | `/tmp/aiter_configs/<table>.csv` | `<cache>/tuned-tables/<key>/<table>.csv`, the key a hash of what it holds |
//!
//! `model_configs/` files are taken in name order (AITER takes the directory's order). Values
//! are compared as numbers where both parse as one (pandas reads `1` and `1.0` as equal) and
//! written as the tables spell them. A quoted field is refused: AITER's tables have none.

use std::path::{Path, PathBuf};

use crate::common::io::write_if_changed;

/// The format of a merged table; a change gives every merge a new key.
const FORMAT: &str = "qola tuned-table merge 1";

/// What AITER writes in a column a table lacks, `gfx` aside (its `_FILL_DEFAULTS` and its
/// fallback are all `0`).
const FILL: &str = "0";

/// One table read: its path, its columns and its rows (fields as spelled).
struct Table {
    path: PathBuf,
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn read_table(path: &Path) -> Result<Table, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if text.contains('"') {
        return Err(format!(
            "{} has a quoted field, which qola's merge does not read: AITER's tables have none",
            path.display()
        ));
    }
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let columns: Vec<String> = lines
        .next()
        .ok_or_else(|| format!("{} is empty: it has no header", path.display()))?
        .split(',')
        .map(|c| c.trim().to_string())
        .collect();
    let mut rows = Vec::new();
    for (n, line) in lines.enumerate() {
        let row: Vec<String> = line.split(',').map(str::to_string).collect();
        if row.len() != columns.len() {
            return Err(format!(
                "{}: row {} has {} fields, its header {}",
                path.display(),
                n + 2,
                row.len(),
                columns.len()
            ));
        }
        rows.push(row);
    }
    Ok(Table {
        path: path.to_path_buf(),
        columns,
        rows,
    })
}

/// `_LEGACY_CU_NUM_TO_GFX` of the tree's `aiter/jit/utils/chip_info.py`: `(cu_num, gfx)` pairs.
fn legacy_cu_num_to_gfx(root: &Path) -> Vec<(i64, String)> {
    let file = root.join("aiter/jit/utils/chip_info.py");
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let Some(body) = text
        .split("_LEGACY_CU_NUM_TO_GFX = {")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
    else {
        return Vec::new();
    };
    body.split(',')
        .filter_map(|pair| {
            let (cu, gfx) = pair.split_once(':')?;
            let gfx = gfx.trim().trim_matches(|c| c == '"' || c == '\'');
            Some((cu.trim().parse().ok()?, gfx.to_string()))
        })
        .collect()
}

/// A value as pandas compares it: a number when it parses as one, else the trimmed text.
#[derive(PartialEq, PartialOrd)]
enum Value<'a> {
    Number(f64),
    Text(&'a str),
}

fn value(field: &str) -> Value<'_> {
    let field = field.trim();
    match field.parse::<f64>() {
        Ok(n) if !field.is_empty() => Value::Number(n),
        _ => Value::Text(field),
    }
}

/// The merged table's columns: the first table's, each new one before `tflops` (or before the
/// last column), as AITER orders them.
fn merged_columns(tables: &[Table]) -> Vec<String> {
    let mut all = tables[0].columns.clone();
    for table in &tables[1..] {
        for c in &table.columns {
            if !all.contains(c) {
                let before = all
                    .iter()
                    .position(|a| a == "tflops")
                    .unwrap_or(all.len().saturating_sub(1));
                all.insert(before, c.clone());
            }
        }
    }
    all
}

/// The rows of `table` over `columns`, missing columns filled as AITER fills them.
fn filled_rows(
    table: &Table,
    columns: &[String],
    legacy: &[(i64, String)],
) -> Result<Vec<Vec<String>>, String> {
    let index = |name: &str| table.columns.iter().position(|c| c == name);
    let cu_num = index("cu_num");
    let mut out = Vec::new();
    for (n, row) in table.rows.iter().enumerate() {
        let mut filled = Vec::with_capacity(columns.len());
        for c in columns {
            filled.push(match (index(c), c.as_str(), cu_num) {
                (Some(i), _, _) => row[i].clone(),
                (None, "gfx", Some(cu)) => {
                    let cu_value = row[cu].trim();
                    legacy
                        .iter()
                        .find(|(known, _)| cu_value.parse::<i64>() == Ok(*known))
                        .map(|(_, gfx)| gfx.clone())
                        .ok_or_else(|| {
                            format!(
                                "{} has no gfx column and row {} has cu_num {cu_value}, which the tree's chip_info.py maps to no gfx (AITER would ask the GPU it runs on): add a gfx column to the table",
                                table.path.display(),
                                n + 2
                            )
                        })?
                }
                (None, _, _) => FILL.to_string(),
            });
        }
        out.push(filled);
    }
    Ok(out)
}

/// The untuned table's name for a tuned one (`a4w4_blockscale_tuned_gemm` →
/// `a4w4_blockscale_untuned_gemm`).
fn untuned_name(tuned: &str) -> String {
    match tuned.rfind("tuned") {
        Some(at) => format!("{}untuned{}", &tuned[..at], &tuned[at + "tuned".len()..]),
        None => tuned.to_string(),
    }
}

/// Rows equal on `keys` (indices into the row), as `(table, line)` groups.
fn duplicates(rows: &[(usize, usize, Vec<String>)], keys: &[usize]) -> Vec<Vec<(usize, usize)>> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let cmp = |a: &usize, b: &usize| {
        for &k in keys {
            let (x, y) = (value(&rows[*a].2[k]), value(&rows[*b].2[k]));
            match x.partial_cmp(&y) {
                Some(std::cmp::Ordering::Equal) => continue,
                Some(o) => return o,
                // A number against a text: numbers first.
                None => return std::cmp::Ordering::Less,
            }
        }
        std::cmp::Ordering::Equal
    };
    order.sort_by(cmp);
    let mut groups = Vec::new();
    let mut start = 0;
    for i in 1..=order.len() {
        if i == order.len() || cmp(&order[start], &order[i]) != std::cmp::Ordering::Equal {
            if i - start > 1 {
                let mut group: Vec<(usize, usize)> = order[start..i]
                    .iter()
                    .map(|&r| (rows[r].0, rows[r].1))
                    .collect();
                group.sort();
                groups.push(group);
            }
            start = i;
        }
    }
    groups.sort();
    groups
}

/// The tables `core.py` would merge for `name` (a tuned table's stem), given `listed` (the
/// environment's list, or the default plus `model_configs/`), merged into
/// `<cache_dir>/<key>/<name>.csv`; one table: itself, untouched.
pub(crate) fn merged(
    root: &Path,
    name: &str,
    listed: &[PathBuf],
    cache_dir: &Path,
) -> Result<PathBuf, String> {
    if let [one] = listed {
        return Ok(one.clone());
    }
    let tables = listed
        .iter()
        .filter(|p| p.exists())
        .map(|p| read_table(p))
        .collect::<Result<Vec<_>, _>>()?;
    if tables.is_empty() {
        return Err(format!(
            "none of the tables listed exists: {}",
            listed
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let columns = merged_columns(&tables);
    let legacy = legacy_cu_num_to_gfx(root);
    let mut rows = Vec::new();
    for (t, table) in tables.iter().enumerate() {
        for (n, row) in filled_rows(table, &columns, &legacy)?
            .into_iter()
            .enumerate()
        {
            rows.push((t, n + 2, row));
        }
    }
    let untuned_path = root
        .join("aiter/configs")
        .join(format!("{}.csv", untuned_name(name)));
    if untuned_path.exists() {
        let untuned = read_table(&untuned_path)?;
        let mut keys = untuned.columns.clone();
        for extra in ["cu_num", "gfx", "_tag"] {
            if columns.iter().any(|c| c == extra) && !keys.iter().any(|k| k == extra) {
                keys.push(extra.to_string());
            }
        }
        let key_index = keys
            .iter()
            .map(|k| {
                columns.iter().position(|c| c == k).ok_or_else(|| {
                    format!(
                        "the untuned table {} has the column {k}, which the tuned tables lack",
                        untuned_path.display()
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let groups = duplicates(&rows, &key_index);
        if !groups.is_empty() {
            let shown: Vec<String> = groups
                .iter()
                .map(|group| {
                    group
                        .iter()
                        .map(|(t, line)| format!("{}:{line}", tables[*t].path.display()))
                        .collect::<Vec<_>>()
                        .join(" = ")
                })
                .collect();
            return Err(format!(
                "{} rows are the same shape (by {}): {}; remove all but one of each (AITER keeps the one with the lowest `us`)",
                groups.iter().map(Vec::len).sum::<usize>(),
                keys.join(", "),
                shown.join("; ")
            ));
        }
    }
    let mut text = columns.join(",");
    text.push('\n');
    for (_, _, row) in &rows {
        text.push_str(&row.join(","));
        text.push('\n');
    }
    // Keyed by what it holds, never by where its tables live.
    let key = blake3::hash(format!("{FORMAT}\0{name}\0{text}").as_bytes()).to_hex();
    let out = cache_dir
        .join(&key.as_str()[..32])
        .join(format!("{name}.csv"));
    write_if_changed(&out, text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tree(tempfile::TempDir);

    impl Tree {
        fn new() -> Tree {
            let tree = Tree(tempfile::tempdir().unwrap());
            tree.write(
                "aiter/jit/utils/chip_info.py",
                "_LEGACY_CU_NUM_TO_GFX = {\n    256: \"gfx950\",\n    80: \"gfx942\",\n    304: \"gfx942\",\n}\n",
            );
            tree.write("aiter/configs/t_untuned_gemm.csv", "M,N,K\n1, 2, 3\n");
            tree
        }
        fn write(&self, rel: &str, text: &str) -> PathBuf {
            let path = self.0.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            path
        }
        fn merge(&self, tables: &[PathBuf]) -> Result<PathBuf, String> {
            merged(
                self.0.path(),
                "t_tuned_gemm",
                tables,
                &self.0.path().join("cache"),
            )
        }
    }

    #[test]
    fn tables_merge_as_aiter_merges_them_new_columns_before_tflops_and_gfx_from_cu_num() {
        let tree = Tree::new();
        let legacy = tree.write(
            "a.csv",
            "cu_num,M,N,K,kernelId,us,tflops\n256,1,2,3,7,5.5,0.1\n",
        );
        let new = tree.write(
            "b.csv",
            "gfx,cu_num,M,N,K,kernelId,splitK,us,tflops\ngfx942,80,1,2,3,9,1,2.0,0.2\n",
        );
        let out = tree.merge(&[legacy.clone(), new.clone()]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "cu_num,M,N,K,kernelId,us,gfx,splitK,tflops\n\
             256,1,2,3,7,5.5,gfx950,0,0.1\n\
             80,1,2,3,9,2.0,gfx942,1,0.2\n"
        );
        assert!(out.starts_with(tree.0.path().join("cache")), "{out:?}");
        // The same inputs: the same file, not rewritten.
        let mtime = std::fs::metadata(&out).unwrap().modified().unwrap();
        assert_eq!(tree.merge(&[legacy.clone(), new]).unwrap(), out);
        assert_eq!(std::fs::metadata(&out).unwrap().modified().unwrap(), mtime);
        // One table is used as it is; a missing one is skipped.
        assert_eq!(tree.merge(std::slice::from_ref(&legacy)).unwrap(), legacy);
        let missing = tree.0.path().join("missing.csv");
        let only = tree.merge(&[legacy.clone(), missing]).unwrap();
        assert_eq!(
            std::fs::read_to_string(only).unwrap(),
            std::fs::read_to_string(&legacy).unwrap()
        );
    }

    #[test]
    fn the_same_shape_twice_is_an_error_naming_both_rows_and_nothing_is_written() {
        let tree = Tree::new();
        let a = tree.write(
            "a.csv",
            "gfx,cu_num,M,N,K,us\ngfx950,256,1,2,3,5.0\ngfx950,256,4,2,3,5.0\n",
        );
        let b = tree.write("b.csv", "gfx,cu_num,M,N,K,us\ngfx950,256.0,4,2,3,1.0\n");
        let e = tree.merge(&[a.clone(), b.clone()]).unwrap_err();
        assert!(
            e.contains(&format!("{}:3 = {}:2", a.display(), b.display())),
            "{e}"
        );
        assert!(e.contains("by M, N, K, cu_num, gfx"), "{e}");
        assert!(!tree.0.path().join("cache").exists());
        // Another architecture is another shape.
        let c = tree.write("c.csv", "gfx,cu_num,M,N,K,us\ngfx942,256,4,2,3,1.0\n");
        tree.merge(&[a, c]).unwrap();
    }

    #[test]
    fn a_legacy_row_whose_cu_num_the_tree_does_not_map_is_an_error() {
        let tree = Tree::new();
        let a = tree.write("a.csv", "cu_num,M,N,K\n100,1,2,3\n");
        let b = tree.write("b.csv", "gfx,cu_num,M,N,K\ngfx950,256,1,2,3\n");
        let e = tree.merge(&[a, b]).unwrap_err();
        assert!(
            e.contains("cu_num 100") && e.contains("add a gfx column"),
            "{e}"
        );
    }
}
