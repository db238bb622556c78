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

/// The values of QoLA's boolean keys that qola cannot honour, and why (with the way on). QoLA's
/// cpp_itfs mode itself sets `is_python_module = false` and `torch_exclude = true`; the others
/// would build something that is no shared library of QoLA's layout.
const REFUSED: &[(&str, bool, &str)] = &[
    (
        "is_python_module",
        true,
        "QoLA's cpp_itfs mode builds a plain shared library (it sets is_python_module = false); a Python extension module is a pybind build, which links PyTorch and which qola does not build: remove the key",
    ),
    (
        "torch_exclude",
        false,
        "QoLA's cpp_itfs mode builds without PyTorch (it sets torch_exclude = true); linking PyTorch is a pybind build, which qola does not build: remove the key",
    ),
    (
        "is_standalone",
        true,
        "a standalone build is an executable (AITER links `<md_name>` without `.so`), which QoLA's layout has no place for: remove the key, or build that executable with AITER's own tools",
    ),
    (
        "hipify",
        true,
        "hipify converts CUDA sources with PyTorch's hipify tool before compiling, and qola compiles the tree's sources as they are: carry the converted sources as a patch of the series (`qola diff`) and remove the key",
    ),
];

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
    variants_narrow_a_module(&mut r, &manifest);
    if r.problems.is_empty() {
        Ok(manifest)
    } else {
        r.problems.sort_by_key(|p| p.line);
        Err(r.problems)
    }
}

/// qola applies `[[mha_fwd_variants]]` and `[[mha_bwd_variants]]` to the `libmha_fwd` and
/// `libmha_bwd` entries they narrow. QoLA builds forward variants without a `libmha_fwd` entry as
/// per-variant pybind modules (PyTorch), and gives a variant's `receipt` to those modules only:
/// neither has a meaning qola can honour, so each is refused.
fn variants_narrow_a_module(r: &mut Reader, manifest: &Manifest) {
    for (variants, module, section) in [
        (
            &manifest.mha_fwd_variants,
            "libmha_fwd",
            "[[mha_fwd_variants]]",
        ),
        (
            &manifest.mha_bwd_variants,
            "libmha_bwd",
            "[[mha_bwd_variants]]",
        ),
    ] {
        let Some(first) = variants.first() else {
            continue;
        };
        let narrowed: Vec<&Module> = manifest
            .modules
            .iter()
            .filter(|m| m.name == module)
            .collect();
        if narrowed.is_empty() {
            r.problems.push(Problem {
                line: first.line,
                key: section.to_string(),
                message: format!(
                    "no [[modules]] entry builds {module}, which these variants narrow in qola (QoLA builds forward variants without it as per-variant pybind modules, which need PyTorch and which qola does not build): add a {module} entry"
                ),
            });
            continue;
        }
        for v in variants {
            let Some(receipt) = v.receipt else { continue };
            if narrowed.iter().all(|m| m.receipt == Some(receipt)) {
                continue;
            }
            let theirs: Vec<String> = narrowed
                .iter()
                .map(|m| {
                    m.receipt.map_or("AITER's own receipt".to_string(), |n| {
                        format!("receipt = {n}")
                    })
                })
                .collect();
            r.problems.push(Problem {
                line: v.line,
                key: format!("{section} receipt"),
                message: format!(
                    "{receipt}: these variants narrow {module}, which is generated at {} (its [[modules]] entry); a variant's receipt is QoLA's for per-variant pybind modules, which qola does not build: set receipt = {receipt} in the {module} entry and remove it here",
                    theirs.join(", ")
                ),
            });
        }
    }
}

fn qola(r: &mut Reader, t: &DeTable) -> QolaTable {
    const KNOWN: &[&str] = &[
        "aiter_commit",
        "aiter_url",
        "namespace",
        "patches_dir",
        "prebuilt",
        "registry",
        "rocm_versions",
        "trusted_keys",
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
    if let Some(v) = t.get("prebuilt") {
        q.prebuilt = r.string(v, key("prebuilt"));
    }
    if let Some(v) = t.get("registry") {
        q.registry = r.string(v, key("registry")).map(PathBuf::from);
    }
    if let Some(v) = t.get("rocm_versions") {
        q.rocm_versions = r.strings(v, key("rocm_versions")).unwrap_or_default();
    }
    if let Some(v) = t.get("trusted_keys") {
        q.trusted_keys = r.strings(v, key("trusted_keys")).unwrap_or_default();
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
    let known: Vec<&str> = [
        OURS,
        RECIPE_LISTS,
        RECIPE_BOOLS,
        RECIPE_STRINGS,
        &["flags_extra_hip_per_source"],
    ]
    .concat();
    r.only("[[modules]]", t, &known);
    let key = |k: &str| format!("[[modules]] {k}");
    let mut m = Module {
        line: r.line(at),
        ..Module::default()
    };
    for (k, _) in t {
        m.lines
            .insert(k.get_ref().to_string(), r.line(k.span().start));
    }
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
        m.md_name = md_name(r, v);
    }
    recipe_keys(r, t, &mut m.recipe);
    Some(m)
}

/// A module's `md_name`: a Python string literal naming a library file.
fn md_name(r: &mut Reader, v: &Value) -> Option<String> {
    // A Python expression, as QoLA evaluates every key of an entry that is not its own
    // (and as AITER's optCompilerConfig writes it): a string literal, `"'libgemm_x'"`.
    let key = || "[[modules]] md_name".to_string();
    let md_name = r.string(v, key()).and_then(|text| match python_string(&text) {
        Some(name) => Some(name),
        None => {
            r.problem(
                v.span().start,
                key(),
                format!(
                    "{text:?} is not a Python string literal: md_name is evaluated as a Python expression (QoLA evaluates it so, as AITER's optCompilerConfig.json entries); write the name with its quotes, md_name = \"'{}'\"",
                    text.trim().trim_matches(['\'', '"'])
                ),
            );
            None
        }
    });
    if let Some(name) = &md_name
        && (name.is_empty() || name.contains(['/', '\0']))
    {
        r.problem(
            v.span().start,
            key(),
            format!("{name:?} cannot name a library file"),
        );
    }
    md_name
}

/// The keys of a `[[modules]]` entry that are AITER's (optCompilerConfig.json's), into `recipe`.
fn recipe_keys(r: &mut Reader, t: &DeTable, recipe: &mut BTreeMap<String, serde_json::Value>) {
    let key = |k: &str| format!("[[modules]] {k}");
    for field in RECIPE_LISTS {
        if let Some(v) = t.get(*field)
            && let Some(items) = r.strings(v, key(field))
        {
            recipe.insert(field.to_string(), serde_json::json!(items));
        }
    }
    for field in RECIPE_BOOLS {
        let Some(v) = t.get(*field) else { continue };
        // A boolean, or the Python expression `True`/`False` (as QoLA evaluates the entry).
        let b = match v.get_ref() {
            toml::de::DeValue::String(s) if s.trim() == "True" => Some(true),
            toml::de::DeValue::String(s) if s.trim() == "False" => Some(false),
            _ => r.bool(v, key(field)),
        };
        let Some(b) = b else { continue };
        if let Some((_, _, why)) = REFUSED
            .iter()
            .find(|(f, value, _)| f == field && *value == b)
        {
            r.problem(
                v.span().start,
                key(field),
                format!("{}: {why}", toml_text(r.text, v)),
            );
            continue;
        }
        recipe.insert(field.to_string(), serde_json::json!(b));
    }
    // AITER's table of a source (or wildcard) to its own HIP flags.
    if let Some(v) = t.get("flags_extra_hip_per_source")
        && let Some(table) = r.table(v, "[[modules]] flags_extra_hip_per_source".to_string())
    {
        let mut map = serde_json::Map::new();
        for (pattern, flags) in table {
            let key = format!(
                "[[modules]] flags_extra_hip_per_source {}",
                pattern.get_ref()
            );
            if let Some(flags) = r.strings(flags, key) {
                map.insert(pattern.get_ref().to_string(), serde_json::json!(flags));
            }
        }
        recipe.insert(
            "flags_extra_hip_per_source".to_string(),
            serde_json::Value::Object(map),
        );
    }
    for field in RECIPE_STRINGS {
        if let Some(v) = t.get(*field)
            && let Some(s) = r.string(v, key(field))
        {
            recipe.insert(field.to_string(), serde_json::json!(s));
        }
    }
}

/// A value as the manifest writes it (for messages).
fn toml_text(text: &str, v: &Value) -> String {
    let span = v.span();
    text.get(span.start..span.end)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The value of `text` when it is one Python string literal (`'x'`, `"x"`, or an f-string with
/// no fields), as QoLA's `eval` gives it; `None` for any other expression.
fn python_string(text: &str) -> Option<String> {
    let text = text.trim();
    let (body, fstring) = match text.strip_prefix(['f', 'F']) {
        Some(rest) => (rest, true),
        None => (text, false),
    };
    let inner = crate::common::text::python_quoted(body)?;
    if fstring && inner.contains(['{', '}']) {
        return None;
    }
    Some(crate::common::text::python_unescape(inner))
}
