//! Text helpers: shell quoting, joining tree paths, short commit ids, sizes in words.

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

/// The items of a list as QoLA and the environment write them (`"gfx942;gfx950"`,
/// `"mha,gemm"`): split at `;` or `,`, trimmed, empty items dropped. Every list qola reads from
/// text (architectures, groups, manifest strings, `--arch`, `--group`) goes through here.
pub fn split_list(list: &str) -> Vec<String> {
    list.split([';', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// `bytes` in the unit that fits it, binary multiples as `ls -h` and ccache print them:
/// `512 B`, `1.4 MiB`, `20.0 GiB`.
pub fn scaled_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The text between matching quotes (`'x'` or `"x"`) when `s` is one Python string literal:
/// a quote of the same kind inside, unescaped, means it is not one.
pub(crate) fn python_quoted(s: &str) -> Option<&str> {
    let s = s.trim();
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = s.strip_prefix(q)?.strip_suffix(q)?;
    let mut escaped = false;
    for c in inner.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == q {
            return None;
        }
    }
    Some(inner)
}

/// A Python string literal's inside with its backslash escapes taken as the character they
/// escape.
pub(crate) fn python_unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_splits_at_semicolons_and_commas_and_drops_empty_items() {
        assert_eq!(
            split_list(" gfx942; gfx950,,gfx90a ;"),
            ["gfx942", "gfx950", "gfx90a"]
        );
        assert!(split_list(" ; ").is_empty());
    }

    #[test]
    fn sizes_are_said_in_the_unit_that_fits_them() {
        assert_eq!(scaled_size(0), "0 B");
        assert_eq!(scaled_size(1023), "1023 B");
        assert_eq!(scaled_size(1024), "1.0 KiB");
        assert_eq!(scaled_size(1_468_006), "1.4 MiB");
        assert_eq!(scaled_size(20 << 30), "20.0 GiB");
        assert_eq!(scaled_size(3 << 40), "3.0 TiB");
    }
}
