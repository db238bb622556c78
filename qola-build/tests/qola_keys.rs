//! Every key QoLA's manifest reader knows, walked: given a value other than its default, `qola
//! plan --json` differs from the plan without it, or qola refuses naming the key; and the
//! docs' table (docs/manifest.md) has a row for each, saying "applied" or "refused". On the
//! real tree with the sid toolchain and the narrow CK filters.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::{Path, PathBuf};

use qola_tests::{NARROW_BWD_FILTER, NARROW_FWD_FILTER, fixtures_dir};

/// Where a key lives.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Table {
    Qola,
    Build,
    Module,
    FwdVariant,
    BwdVariant,
}

/// What qola does with a key given a value other than its default.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The plan differs.
    Differs,
    /// qola refuses, naming the key.
    Refused,
}

/// QoLA's keys (its `config.py`: `_MANIFEST_KEYS`, `BuildSpec`'s optCompilerConfig fields and
/// `_DEFAULTS`; `builder.py`: `group`; `variant_matrix.py`: the forward option space; the
/// `[qola]` and `[build]` keys its reader and CMake read; TE's `rocm_versions`), each with a value
/// other than its default (TOML, as QoLA's manifests write it: recipe values are Python
/// expressions) and what qola does with it.
const KEYS: &[(Table, &str, &str, Expect)] = &[
    (
        Table::Qola,
        "aiter_commit",
        "\"0123456789abcdef0123456789abcdef01234567\"",
        Expect::Refused,
    ),
    (Table::Qola, "namespace", "\"other\"", Expect::Differs),
    (
        Table::Qola,
        "patches_dir",
        "\"/nonexistent/qola/series\"",
        Expect::Refused,
    ),
    (Table::Qola, "rocm_versions", "[\"5\"]", Expect::Differs),
    (
        Table::Build,
        "architectures",
        "[\"gfx950\"]",
        Expect::Differs,
    ),
    (Table::Build, "mode", "\"pybind\"", Expect::Refused),
    (Table::Module, "name", "\"libmha_bwd\"", Expect::Differs),
    (Table::Module, "mode", "\"pybind\"", Expect::Refused),
    (Table::Module, "group", "\"other\"", Expect::Differs),
    (Table::Module, "receipt", "700", Expect::Differs),
    (
        Table::Module,
        "drop_srcs",
        "[\"asm_mha_fwd.cu\"]",
        Expect::Differs,
    ),
    (
        Table::Module,
        "drop_directions",
        "[\"fwd_splitkv\"]",
        Expect::Differs,
    ),
    (Table::Module, "hsa_subdirs", "[]", Expect::Differs),
    (
        Table::Module,
        "md_name",
        "\"'libqola_fwd'\"",
        Expect::Differs,
    ),
    (
        Table::Module,
        "srcs",
        "[\"f'{AITER_CSRC_DIR}/py_itfs_cu/asm_mha_fwd.cu'\"]",
        Expect::Differs,
    ),
    (
        Table::Module,
        "flags_extra_cc",
        "[\"'-DQOLA_KEY_TEST=1'\"]",
        Expect::Differs,
    ),
    (
        Table::Module,
        "flags_extra_hip",
        "[\"'-DQOLA_KEY_TEST=1'\"]",
        Expect::Differs,
    ),
    (
        Table::Module,
        "blob_gen_cmd",
        "[\"f'{CK_DIR}/example/ck_tile/01_fmha/generate.py -d fwd --receipt 700 --output_dir {{}}'\"]",
        Expect::Differs,
    ),
    (
        Table::Module,
        "extra_include",
        "[\"f'{AITER_CSRC_DIR}/include/ck_tile'\"]",
        Expect::Differs,
    ),
    (
        Table::Module,
        "extra_ldflags",
        "[\"'-Wl,--as-needed'\"]",
        Expect::Differs,
    ),
    (Table::Module, "verbose", "true", Expect::Differs),
    (Table::Module, "is_python_module", "true", Expect::Refused),
    (Table::Module, "is_standalone", "true", Expect::Refused),
    (Table::Module, "torch_exclude", "false", Expect::Refused),
    (
        Table::Module,
        "third_party",
        "[\"'HipKittens'\"]",
        Expect::Refused,
    ),
    (Table::Module, "hipify", "true", Expect::Refused),
    (
        Table::Module,
        "hip_clang_path",
        "(the sid toolchain's clang directory)",
        Expect::Differs,
    ),
    (
        Table::Module,
        "flags_extra_hip_per_source",
        "{ \"*_d128_bf16_batch_*\" = [\"'-DQOLA_KEY_TEST=1'\"] }",
        Expect::Differs,
    ),
    (Table::FwdVariant, "dtype", "\"fp16\"", Expect::Differs),
    (Table::FwdVariant, "has_bias", "true", Expect::Differs),
    (Table::FwdVariant, "has_alibi", "true", Expect::Differs),
    (Table::FwdVariant, "has_mask", "true", Expect::Differs),
    (Table::FwdVariant, "has_lse", "false", Expect::Differs),
    (Table::FwdVariant, "has_dropout", "true", Expect::Differs),
    (Table::FwdVariant, "has_skip", "true", Expect::Differs),
    (Table::FwdVariant, "has_sink", "true", Expect::Refused),
    (Table::FwdVariant, "receipt", "600", Expect::Refused),
    (Table::BwdVariant, "dtype", "\"fp16\"", Expect::Differs),
    (Table::BwdVariant, "has_bias", "true", Expect::Differs),
    (Table::BwdVariant, "has_alibi", "true", Expect::Differs),
    (Table::BwdVariant, "has_dbias", "true", Expect::Differs),
    (Table::BwdVariant, "has_mask", "false", Expect::Differs),
    (Table::BwdVariant, "has_dropout", "true", Expect::Differs),
    (Table::BwdVariant, "deterministic", "true", Expect::Differs),
    (Table::BwdVariant, "receipt", "600", Expect::Refused),
];

/// The `[[modules]]` entry every module case starts from: the forward without split-KV and
/// batch prefill, AITER's receipt and `[build]`'s mode (so that each can be given).
const FORWARD: &[(&str, &str)] = &[
    ("name", "\"libmha_fwd\""),
    ("group", "\"mha\""),
    ("drop_directions", "[\"fwd_splitkv\", \"batch_prefill\"]"),
];

/// The forward variant the variant cases start from: one pattern.
const FWD_VARIANT: &[(&str, &str)] = &[
    ("dtype", "\"bf16\""),
    ("has_bias", "false"),
    ("has_alibi", "false"),
    ("has_mask", "false"),
    ("has_lse", "true"),
    ("has_dropout", "false"),
    ("has_skip", "false"),
];

/// The backward variant the variant cases start from.
const BWD_VARIANT: &[(&str, &str)] = &[
    ("dtype", "\"bf16\""),
    ("has_bias", "false"),
    ("has_alibi", "false"),
    ("has_dbias", "false"),
    ("has_mask", "true"),
    ("has_dropout", "false"),
    ("deterministic", "false"),
];

/// `base` with `key` set to `value` (replacing it, or added), as TOML lines.
fn table(base: &[(&str, &str)], key: Option<(&str, &str)>) -> String {
    let mut lines: Vec<(String, String)> = base
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some((key, value)) = key {
        match lines.iter_mut().find(|(k, _)| k == key) {
            Some(line) => line.1 = value.to_string(),
            None => lines.push((key.to_string(), value.to_string())),
        }
    }
    lines.iter().map(|(k, v)| format!("{k} = {v}\n")).collect()
}

/// The manifest of a case: the narrow forward (or, for backward variants, the backward), the
/// case's key set (`None`: the base).
fn manifest(real: &qola_tests::RealAiter, at: Table, key: Option<(&str, &str)>) -> String {
    let pick = |t: Table| if t == at { key } else { None };
    let mut text = table(
        &[
            ("aiter_commit", &format!("\"{}\"", real.commit)),
            ("aiter_url", &format!("\"{}\"", real.upstream.display())),
            ("namespace", "\"te\""),
        ],
        pick(Table::Qola),
    );
    text = format!(
        "[qola]\n{text}\n[build]\n{}",
        table(&[("architectures", "[\"gfx942\"]")], pick(Table::Build))
    );
    let backward = [
        ("name", "\"libmha_bwd\""),
        ("mode", "\"cpp_itfs\""),
        ("receipt", "700"),
    ];
    let module: &[(&str, &str)] = if at == Table::BwdVariant {
        &backward
    } else {
        FORWARD
    };
    text.push_str(&format!(
        "\n[[modules]]\n{}",
        table(module, pick(Table::Module))
    ));
    match at {
        Table::FwdVariant => text.push_str(&format!(
            "\n[[mha_fwd_variants]]\n{}",
            table(FWD_VARIANT, key)
        )),
        Table::BwdVariant => text.push_str(&format!(
            "\n[[mha_bwd_variants]]\n{}",
            table(BWD_VARIANT, key)
        )),
        _ => {}
    }
    text
}

/// `qola plan --json` of `manifest` into `out`: the exit status, the plan's parts that say what
/// the build would do (everything but scratch names), and standard error.
fn plan(
    hipcc: &Path,
    manifest: &Path,
    out: &Path,
    narrow: bool,
) -> (Option<i32>, serde_json::Value, String) {
    let mut command = common::qola_command(&["GPU_ARCHS", "AITER_META_DIR"]);
    command
        .args(["plan", "--json", "-m"])
        .arg(manifest)
        .arg("-a")
        .arg(fixtures_dir().join("aiter-narrow"))
        .arg("-o")
        .arg(out)
        .env("HIPCC", hipcc)
        .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"));
    if narrow {
        command
            .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER)
            .env("QOLA_CK_FILTER_LIBMHA_BWD", NARROW_BWD_FILTER);
    }
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let modules: Vec<serde_json::Value> = json["modules"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            let mut units: Vec<String> = m["compile"]["units"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|u| u["unit_id"].as_str().unwrap_or_default().to_string())
                .collect();
            units.sort();
            serde_json::json!({
                "md_name": m["md_name"],
                "group": m["group"],
                "verbose": m["verbose"],
                "generators": m["generators"].as_array().into_iter().flatten().map(|g| g["command"].clone()).collect::<Vec<_>>(),
                "hsa_blobs": m["hsa_blobs"],
                "archs": m["compile"]["archs"],
                "link": m["compile"]["link"],
                "toolchain": [m["compile"]["toolchain"]["identity"].clone(), m["compile"]["toolchain"]["env"].clone()],
                "units": units,
            })
        })
        .collect();
    let shown = serde_json::json!({ "modules": modules, "warnings": json["warnings"] });
    (output.status.code(), shown, stderr)
}

/// The sid toolchain's clang directory, as a manifest's Python expression.
fn sid_clang_dir() -> PathBuf {
    fixtures_dir().join("sid-root/usr/lib/llvm-21/bin")
}

fn walk(tables: &[Table]) {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let write = |name: &str, text: &str| -> PathBuf {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let mut failures = Vec::new();
    for at in tables {
        // Variants narrow CK's generation themselves: no filter of the environment over them.
        let narrow = !matches!(at, Table::FwdVariant | Table::BwdVariant);
        let base = write("base.toml", &manifest(&real, *at, None));
        let (status, before, stderr) = plan(&hipcc, &base, &out, narrow);
        assert_eq!(status, Some(0), "{at:?} base plan: {stderr}");
        for (table, key, value, expect) in KEYS.iter().filter(|k| k.0 == *at) {
            let value = match *key {
                "hip_clang_path" => format!("\"'{}'\"", sid_clang_dir().display()),
                _ => value.to_string(),
            };
            let case = write("case.toml", &manifest(&real, *table, Some((key, &value))));
            let (status, after, stderr) = plan(&hipcc, &case, &out, narrow);
            let held = match expect {
                Expect::Differs => status == Some(0) && after != before,
                Expect::Refused => status != Some(0) && stderr.contains(key),
            };
            if !held {
                failures.push(format!(
                    "{table:?} {key} = {value}: expected {expect:?}, got exit status {status:?}\n{stderr}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_qola_and_module_key_changes_the_plan_or_is_refused_naming_it() {
    walk(&[Table::Qola, Table::Build, Table::Module]);
}

#[test]
fn every_variant_key_changes_the_plan_or_is_refused_naming_it() {
    walk(&[Table::FwdVariant, Table::BwdVariant]);
}

/// docs/manifest.md's table: a row for each of QoLA's keys, each saying what qola does ("applied"
/// or "refused"), none "accepted" without an effect.
#[test]
fn the_docs_table_has_a_row_for_each_key_saying_applied_or_refused() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/manifest.md"))
            .unwrap();
    let rows: Vec<(String, String, String)> = docs
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            (
                cells[0].to_string(),
                cells[1].to_string(),
                cells[2].to_string(),
            )
        })
        .collect();
    for (table, key, _, _) in KEYS {
        let section = match table {
            Table::Qola => "`[qola]`",
            Table::Build => "`[build]`",
            Table::Module => "`[[modules]]`",
            Table::FwdVariant => "`[[mha_fwd_variants]]`",
            Table::BwdVariant => "`[[mha_bwd_variants]]`",
        };
        let quoted = format!("`{key}`");
        assert!(
            rows.iter()
                .any(|(t, k, _)| t.contains(section) && k.split(", ").any(|k| k == quoted)),
            "docs/manifest.md has no row for {section} {key}"
        );
    }
    for (table, key, qola) in &rows {
        assert!(
            qola.starts_with("applied") || qola.starts_with("refused"),
            "{table} {key}: {qola}"
        );
    }
}
