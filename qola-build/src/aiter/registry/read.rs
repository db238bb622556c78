//! Reading a registry file (see the folder's docs), reporting every mistake with its line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::de::DeTable;

use crate::aiter::AiterError;
use crate::aiter::registry::{Base, Entry, Registry};
use crate::manifest::Reader;

/// The keys of a module's entry: QoLA's, then qola's own.
const ENTRY_KEYS: &[&str] = &[
    "drop_srcs",
    "add_srcs",
    "add_includes",
    "add_flags_extra_hip",
    "add_flags_extra_cc",
    "add_blob_gen_cmd",
    "hsa_subdirs",
    "public_headers",
    "architectures",
];

/// The keys of `[defaults]`.
const DEFAULT_KEYS: &[&str] = &["version_script", "public_headers"];

/// Reads the registry at `path`; its paths are relative to its directory, or to the QoLA
/// checkout it is part of (`<root>/qola/cpp_itfs/registry.toml`).
pub(super) fn read_file(path: &Path) -> Result<Registry, AiterError> {
    let text = std::fs::read_to_string(path).map_err(|e| AiterError::RegistryInvalid {
        file: path.to_path_buf(),
        problems: vec![crate::manifest::Problem {
            line: 0,
            key: "(file)".to_string(),
            message: format!(
                "cannot read it: {e}; check the path given by --registry, QOLA_REGISTRY or [qola] registry"
            ),
        }],
    })?;
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let base = if path.ends_with("qola/cpp_itfs/registry.toml") {
        dir.parent()
            .and_then(Path::parent)
            .map_or(dir.clone(), Path::to_path_buf)
    } else {
        dir
    };
    read(&text, &path, Base::Dir(base))
}

/// Reads registry `text` (of `file`, for messages) whose paths are under `base`.
pub(super) fn read(text: &str, file: &Path, base: Base) -> Result<Registry, AiterError> {
    let mut r = Reader {
        text,
        problems: Vec::new(),
    };
    let invalid = |problems| AiterError::RegistryInvalid {
        file: file.to_path_buf(),
        problems,
    };
    let root = match DeTable::parse(text) {
        Ok(root) => root,
        Err(e) => {
            let at = e.span().map_or(0, |s| s.start);
            r.problem(at, "syntax".to_string(), e.message().trim().to_string());
            return Err(invalid(r.problems));
        }
    };
    let mut registry = Registry::default();
    let mut version_script = None;
    let mut version_script_line = 0;
    for (name, value) in root.get_ref() {
        let name = name.get_ref().to_string();
        let Some(table) = r.table(value, format!("[{name}]")) else {
            continue;
        };
        if name == "defaults" {
            r.only("[defaults]", table, DEFAULT_KEYS);
            if let Some(v) = table.get("version_script") {
                version_script_line = r.line(v.span().start);
                version_script = r.string(v, "[defaults] version_script".to_string());
            }
            if let Some(v) = table.get("public_headers") {
                for header in r
                    .strings(v, "[defaults] public_headers".to_string())
                    .unwrap_or_default()
                {
                    registry.common_headers.push((header, base.clone()));
                }
            }
            continue;
        }
        registry
            .modules
            .insert(name.clone(), entry(&mut r, &name, table, file, &base));
    }
    if !r.problems.is_empty() {
        r.problems.sort_by_key(|p| p.line);
        return Err(invalid(r.problems));
    }
    for entry in registry.modules.values_mut() {
        entry.version_script = version_script.clone();
        if version_script.is_some() {
            entry
                .lines
                .insert("version_script".to_string(), version_script_line);
        }
    }
    Ok(registry)
}

/// One module's entry.
fn entry(r: &mut Reader, name: &str, t: &DeTable, file: &Path, base: &Base) -> Entry {
    let section = format!("[{name}]");
    r.only(&section, t, ENTRY_KEYS);
    let mut lines = BTreeMap::new();
    for (key, _) in t {
        lines.insert(key.get_ref().to_string(), r.line(key.span().start));
    }
    let mut list = |key: &str| -> Vec<String> {
        t.get(key)
            .and_then(|v| {
                let items = r.strings(v, format!("{section} {key}"))?;
                if matches!(v.get_ref(), toml::de::DeValue::String(_)) {
                    r.wrong(v, format!("{section} {key}"), "a list of strings");
                    return None;
                }
                Some(items)
            })
            .unwrap_or_default()
    };
    Entry {
        drop_srcs: list("drop_srcs"),
        add_srcs: list("add_srcs"),
        add_includes: list("add_includes"),
        add_flags_extra_hip: list("add_flags_extra_hip"),
        add_flags_extra_cc: list("add_flags_extra_cc"),
        add_blob_gen_cmd: list("add_blob_gen_cmd"),
        public_headers: list("public_headers"),
        hsa_subdirs: t.get("hsa_subdirs").map(|_| list("hsa_subdirs")),
        architectures: t.get("architectures").map(|_| list("architectures")),
        version_script: None,
        base: base.clone(),
        file: PathBuf::from(file),
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qolas_format_reads_and_every_mistake_names_its_line_and_key() {
        let text = "[defaults]\nversion_script = \"qola/cpp_itfs/qola_exports.lds\"\n\n[libmha_fwd]\ndrop_srcs    = []\nadd_srcs     = [\"qola/cpp_itfs/qola_mha_fwd.cu\"]\nadd_includes = [\"qola/cpp_itfs\"]\nhsa_subdirs  = [\"fmha_v3_fwd\"]\nadd_flags_extra_hip = [\"-DFAV3_ON=1\", \"-DFAV2_ON=1\"]\nadd_blob_gen_cmd = [\n    \"{AITER_META_DIR}/hsa/codegen.py -m fmha_v3_fwd --output_dir {{}}\",\n]\n";
        let registry = read(text, Path::new("r.toml"), Base::Dir("/q".into())).unwrap();
        let e = registry.entry("libmha_fwd").unwrap();
        assert_eq!(e.add_srcs, ["qola/cpp_itfs/qola_mha_fwd.cu"]);
        assert_eq!(
            e.hsa_subdirs.as_deref(),
            Some(&["fmha_v3_fwd".to_string()][..])
        );
        assert_eq!(
            e.version_script.as_deref(),
            Some("qola/cpp_itfs/qola_exports.lds")
        );
        assert_eq!(e.lines["add_blob_gen_cmd"], 10);
        let bad = "[m]\nadd_srcs = \"one.cu\"\nhsa_subdir = [\"x\"]\ndrop_srcs = [1]\n";
        let AiterError::RegistryInvalid { problems, .. } =
            read(bad, Path::new("r.toml"), Base::Shipped).unwrap_err()
        else {
            panic!()
        };
        let got: Vec<(usize, &str)> = problems.iter().map(|p| (p.line, p.key.as_str())).collect();
        assert_eq!(
            got,
            [
                (2, "[m] add_srcs"),
                (3, "[m] hsa_subdir"),
                (4, "[m] drop_srcs")
            ]
        );
    }
}
