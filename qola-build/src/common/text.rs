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

#[cfg(test)]
mod tests {
    use super::*;

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
