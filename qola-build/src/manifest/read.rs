//! Reading a manifest from TOML text, collecting every problem with its line instead of
//! stopping at the first (see the module docs).

use std::collections::BTreeMap;
use std::path::PathBuf;

use toml::de::DeTable;

use crate::manifest::model::{BuildMode, BuildTable, Manifest, Module, QolaTable};
use crate::manifest::problem::Problem;
use crate::manifest::reader::{Reader, Value};
use crate::manifest::variants::{self, Direction};

/// optCompilerConfig fields a `[[modules]]` entry may set: the lists and strings are expressions
/// evaluated as AITER evaluates its own entries.
const RECIPE_LISTS: &[&str] = &[
    "srcs",
    "flags_extra_cc",
    "flags_extra_hip",
    "blob_gen_cmd",
    "extra_include",
    "extra_ldflags",
    "third_party",
];
const RECIPE_BOOLS: &[&str] = &[
    "verbose",
    "is_python_module",
    "is_standalone",
    "torch_exclude",
    "hipify",
];
const RECIPE_STRINGS: &[&str] = &["hip_clang_path"];

/// Reads manifest text; `Err` holds every problem found, in line order.
pub(super) fn read(text: &str) -> Result<Manifest, Vec<Problem>> {
    let mut r = Reader {
        text,
        problems: Vec::new(),
    };
    let root = match DeTable::parse(text) {
        Ok(root) => root,
        Err(e) => {
            let at = e.span().map_or(0, |s| s.start);
            r.problem(at, "syntax".to_string(), e.message().trim().to_string());
            return Err(r.problems);
        }
    };
    let mut manifest = Manifest::default();
    let root = root.get_ref();
    r.only(
        "(top level)",
        root,
        &[
            "qola",
            "build",
            "modules",
            "mha_fwd_variants",
            "mha_bwd_variants",
            "mha_variants",
        ],
    );
    if let Some(v) = root.get("qola")
        && let Some(t) = r.table(v, "[qola]".to_string())
    {
        manifest.qola = qola(&mut r, t);
    }
    if let Some(v) = root.get("build")
        && let Some(t) = r.table(v, "[build]".to_string())
    {
        manifest.build = build(&mut r, t);
    }
    if let Some(v) = root.get("modules") {
        for (at, t) in r.tables(v, "modules") {
            if let Some(m) = module(&mut r, at, t) {
                manifest.modules.push(m);
            }
        }
        let mut seen = BTreeMap::new();
        for m in &manifest.modules {
            if let Some(first) = seen.insert(m.md_name().to_string(), m.line) {
                let at = r.text.lines().take(m.line - 1).map(|l| l.len() + 1).sum();
                r.problem(
                    at,
                    "[[modules]] md_name".to_string(),
                    format!(
                        "library {} is already built by the entry on line {first}; give one of them another md_name",
                        m.md_name()
                    ),
                );
            }
        }
    }
    // `[[mha_variants]]` is QoLA's older name of the forward's declarations.
    for (key, direction) in [
        ("mha_fwd_variants", Direction::Forward),
        ("mha_variants", Direction::Forward),
        ("mha_bwd_variants", Direction::Backward),
    ] {
        if let Some(v) = root.get(key) {
            for (at, t) in r.tables(v, key) {
                if let Some(variant) = variants::read(&mut r, direction, key, at, t) {
                    match direction {
                        Direction::Forward => manifest.mha_fwd_variants.push(variant),
                        Direction::Backward => manifest.mha_bwd_variants.push(variant),
                    }
                }
            }
        }
    }
    if r.problems.is_empty() {
        Ok(manifest)
    } else {
        r.problems.sort_by_key(|p| p.line);
        Err(r.problems)
    }
}

fn qola(r: &mut Reader, t: &DeTable) -> QolaTable {
    const KNOWN: &[&str] = &[
        "aiter_commit",
        "aiter_url",
        "namespace",
        "patches_dir",
        "rocm_versions",
    ];
    r.only("[qola]", t, KNOWN);
    let mut q = QolaTable::default();
    let key = |k: &str| format!("[qola] {k}");
    if let Some(v) = t.get("aiter_commit") {
        q.aiter_commit = r.string(v, key("aiter_commit"));
    }
    if let Some(v) = t.get("aiter_url") {
        q.aiter_url = r.string(v, key("aiter_url"));
    }
    if let Some(v) = t.get("namespace") {
        q.namespace = r.string(v, key("namespace"));
        if let Some(ns) = &q.namespace
            && !ns.is_empty()
            && !is_identifier(ns)
        {
            r.problem(
                    v.span().start,
                    key("namespace"),
                    format!("{ns:?} is not a C++ identifier (letters, digits, `_`, not starting with a digit); it names the namespace qola::<ns>:: and the library prefix <ns>_"),
                );
        }
    }
    if let Some(v) = t.get("patches_dir") {
        q.patches_dir = r.string(v, key("patches_dir")).map(PathBuf::from);
    }
    if let Some(v) = t.get("rocm_versions") {
        q.rocm_versions = r.strings(v, key("rocm_versions")).unwrap_or_default();
    }
    q
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn mode(r: &mut Reader, v: &Value, key: String) -> Option<BuildMode> {
    match r.string(v, key.clone())?.as_str() {
        "cpp_itfs" => Some(BuildMode::CppItfs),
        "pybind" => Some(BuildMode::Pybind),
        other => {
            r.problem(
                v.span().start,
                key,
                format!("{other:?} is not a build mode: use \"cpp_itfs\" (or \"pybind\", which qola refuses to build: it needs PyTorch)"),
            );
            None
        }
    }
}

fn build(r: &mut Reader, t: &DeTable) -> BuildTable {
    r.only("[build]", t, &["architectures", "mode"]);
    let mut b = BuildTable::default();
    if let Some(v) = t.get("architectures") {
        b.architectures = r
            .split_list(v, "[build] architectures".to_string())
            .unwrap_or_default();
    }
    if let Some(v) = t.get("mode") {
        b.mode = mode(r, v, "[build] mode".to_string());
    }
    b
}

fn module(r: &mut Reader, at: usize, t: &DeTable) -> Option<Module> {
    const OURS: &[&str] = &[
        "name",
        "group",
        "mode",
        "receipt",
        "drop_srcs",
        "drop_directions",
        "hsa_subdirs",
        "md_name",
    ];
    let known: Vec<&str> = [OURS, RECIPE_LISTS, RECIPE_BOOLS, RECIPE_STRINGS].concat();
    r.only("[[modules]]", t, &known);
    let key = |k: &str| format!("[[modules]] {k}");
    let mut m = Module {
        line: r.line(at),
        ..Module::default()
    };
    match t.get("name") {
        Some(v) => m.name = r.string(v, key("name"))?,
        None => {
            r.problem(
                at,
                key("name"),
                "missing: every module names an optCompilerConfig entry",
            );
            return None;
        }
    }
    if let Some(v) = t.get("group") {
        m.group = r.string(v, key("group"));
    }
    if let Some(v) = t.get("mode") {
        m.mode = mode(r, v, key("mode"));
    }
    if let Some(v) = t.get("receipt") {
        m.receipt = r.integer(v, key("receipt"));
    }
    if let Some(v) = t.get("drop_srcs") {
        m.drop_srcs = r.strings(v, key("drop_srcs")).unwrap_or_default();
    }
    if let Some(v) = t.get("drop_directions") {
        m.drop_directions = r.strings(v, key("drop_directions")).unwrap_or_default();
    }
    if let Some(v) = t.get("hsa_subdirs") {
        m.hsa_subdirs = r.strings(v, key("hsa_subdirs"));
    }
    if let Some(v) = t.get("md_name") {
        m.md_name = r.string(v, key("md_name"));
        if let Some(name) = &m.md_name
            && (name.is_empty() || name.contains(['/', '\0']))
        {
            r.problem(
                v.span().start,
                key("md_name"),
                format!("{name:?} cannot name a library file"),
            );
        }
    }
    for field in RECIPE_LISTS {
        if let Some(v) = t.get(*field)
            && let Some(items) = r.strings(v, key(field))
        {
            m.recipe.insert(field.to_string(), serde_json::json!(items));
        }
    }
    for field in RECIPE_BOOLS {
        if let Some(v) = t.get(*field)
            && let Some(b) = r.bool(v, key(field))
        {
            m.recipe.insert(field.to_string(), serde_json::json!(b));
        }
    }
    for field in RECIPE_STRINGS {
        if let Some(v) = t.get(*field)
            && let Some(s) = r.string(v, key(field))
        {
            m.recipe.insert(field.to_string(), serde_json::json!(s));
        }
    }
    Some(m)
}
