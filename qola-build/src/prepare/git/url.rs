//! AITER URLs: local or remote, the form `git clone` is given, the form the key records, and a
//! submodule URL relative to its superproject's.

use std::path::Path;

fn has_scheme(url: &str) -> bool {
    url.split_once("://").is_some_and(|(s, _)| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    })
}

fn is_scp_like(url: &str) -> bool {
    // `user@host:path` or `host:path`: a colon before the first slash.
    url.find(':')
        .is_some_and(|c| url.find('/').is_none_or(|s| c < s) && c > 1)
}

/// Whether `url` names a local repository (`file://` or a path): reaching it needs no network.
pub(crate) fn is_local_url(url: &str) -> bool {
    url.starts_with("file://") || !(has_scheme(url) || is_scp_like(url))
}

/// The URL for `git clone`: a local path becomes absolute.
pub(crate) fn clone_url(url: &str) -> String {
    let url = url.trim();
    if has_scheme(url) || is_scp_like(url) {
        return url.to_string();
    }
    let path = Path::new(url);
    path.canonicalize()
        .or_else(|_| std::path::absolute(path))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| url.to_string())
}

/// The URL as the key sees it: scheme and host lower-cased, no trailing `/` or (for remote
/// URLs) `.git`. Local paths stay as they are (they are absolute already).
pub(crate) fn normalize_url(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    if has_scheme(url) {
        let (scheme, rest) = url.split_once("://").expect("has a scheme");
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        let path = path.strip_suffix(".git").unwrap_or(path);
        let scheme = scheme.to_ascii_lowercase();
        if scheme == "file" {
            return format!("file://{host}/{path}");
        }
        return format!("{scheme}://{}/{path}", host.to_ascii_lowercase());
    }
    if is_scp_like(url) {
        return url.strip_suffix(".git").unwrap_or(url).to_string();
    }
    url.to_string()
}

/// Resolves a submodule URL relative to its superproject's (`../ck.git`, `./x`).
pub(crate) fn resolve_relative_url(base: &str, url: &str) -> String {
    if !(url.starts_with("./") || url.starts_with("../")) {
        return url.to_string();
    }
    let mut base = base.trim_end_matches('/').to_string();
    let mut rest = url;
    loop {
        if let Some(r) = rest.strip_prefix("./") {
            rest = r;
        } else if let Some(r) = rest.strip_prefix("../") {
            rest = r;
            let cut = base.rfind(['/', ':']).unwrap_or(0);
            base.truncate(cut);
        } else {
            break;
        }
    }
    format!("{base}/{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_normalize_to_one_form() {
        let a = normalize_url("https://GitHub.com/ROCm/aiter.git/");
        assert_eq!(a, "https://github.com/ROCm/aiter");
        assert_eq!(normalize_url("https://github.com/ROCm/aiter"), a);
        assert_eq!(
            normalize_url("git@github.com:ROCm/aiter.git"),
            "git@github.com:ROCm/aiter"
        );
        assert_eq!(normalize_url("/srv/aiter.git"), "/srv/aiter.git");
    }

    #[test]
    fn relative_submodule_urls_resolve_against_the_superproject() {
        assert_eq!(
            resolve_relative_url(
                "https://github.com/ROCm/aiter.git",
                "../composable_kernel.git"
            ),
            "https://github.com/ROCm/composable_kernel.git"
        );
        assert_eq!(
            resolve_relative_url("/tmp/up/aiter", "./ck"),
            "/tmp/up/aiter/ck"
        );
        assert_eq!(
            resolve_relative_url("git@github.com:ROCm/aiter.git", "../ck.git"),
            "git@github.com:ROCm/ck.git"
        );
        assert_eq!(resolve_relative_url("x", "https://h/ck"), "https://h/ck");
    }
}
