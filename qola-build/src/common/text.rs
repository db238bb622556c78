//! Text helpers: shell quoting, joining tree paths, short commit ids.

/// Quotes a word for a POSIX shell when it needs it.
pub(crate) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@+,%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `prefix/path`, or `path` for the superproject's empty prefix.
pub(crate) fn join(prefix: &str, path: &str) -> String {
    if prefix.is_empty() {
        path.to_string()
    } else {
        format!("{prefix}/{path}")
    }
}

/// The 12-character abbreviation of a commit id used in messages.
pub(crate) fn short_id(id: &str) -> &str {
    &id[..12.min(id.len())]
}
