//! How ck-jit names what it is given: a path in the tree under ck-jit's name for it, a unit's
//! object and its `-cuid` (from its generator and file name, never from where it is).

use std::path::Path;

/// `arg` with a path under the tree's name `from` written under ck-jit's `to` (see
/// [`super::CkJit::tree_names`]): a source, or an `-I` directory.
pub(super) fn named(arg: String, names: Option<&(String, String)>) -> String {
    let Some((from, to)) = names else {
        return arg;
    };
    let (flag, path) = match arg.strip_prefix("-I") {
        Some(path) => ("-I", path),
        None => ("", arg.as_str()),
    };
    match path.strip_prefix(from.as_str()) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{flag}{to}{rest}"),
        _ => arg,
    }
}

/// The object of a unit given to the interceptor: its generator's directory and its file name
/// (`0-fmha_fwd_api.cpp.o`), one per unit of a module.
pub(super) fn object_name(source: &Path) -> String {
    let generator = source
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{generator}-{file}.o")
}

/// The `-cuid` of a unit given to the interceptor: its file name's digest.
pub(super) fn cuid(source: &Path) -> String {
    let name = source.file_name().unwrap_or_default();
    blake3::hash(name.as_encoded_bytes()).to_hex()[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_s_object_and_cuid_follow_its_generator_and_file_name_not_where_it_is() {
        let here = Path::new("/a/gen/libmha_fwd/0/blob/fmha_fwd_api.cpp");
        let there = Path::new("/b/other/libmha_fwd/0/blob/fmha_fwd_api.cpp");
        assert_eq!(object_name(here), "0-fmha_fwd_api.cpp.o");
        assert_eq!(object_name(here), object_name(there));
        assert_eq!(cuid(here), cuid(there));
        assert_ne!(
            cuid(here),
            cuid(Path::new("/a/gen/libmha_fwd/0/blob/fmha_bwd_api.cpp"))
        );
    }
}
