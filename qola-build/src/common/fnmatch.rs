//! Shell-style wildcards as Python's `fnmatch.fnmatchcase` reads them (AITER matches its
//! per-source flags so): `*` any run of characters (`/` included), `?` one character, `[seq]` one
//! of the set (ranges `a-z`), `[!seq]` one not in it; anything else itself.

/// Whether `text` matches `pattern` (see the module docs).
pub(crate) fn fnmatch(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    matches(&p, &t)
}

fn matches(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|skip| matches(&p[1..], &t[skip..])),
        Some('?') => !t.is_empty() && matches(&p[1..], &t[1..]),
        Some('[') => match set(&p[1..]) {
            Some(set) => t.first().is_some_and(|c| {
                set.ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(c)) != set.negated
                    && matches(&p[1 + set.len..], &t[1..])
            }),
            // An unclosed `[` is itself.
            None => t.first() == Some(&'[') && matches(&p[1..], &t[1..]),
        },
        Some(c) => t.first() == Some(c) && matches(&p[1..], &t[1..]),
    }
}

/// A `[...]` set.
struct Set {
    /// Its ranges (a single character is a range of one).
    ranges: Vec<(char, char)>,
    /// `[!...]`.
    negated: bool,
    /// How many characters it took, the closing `]` included.
    len: usize,
}

/// The set after a `[`; `None` when it is not closed.
fn set(p: &[char]) -> Option<Set> {
    let mut i = 0;
    let negated = p.first() == Some(&'!');
    if negated {
        i += 1;
    }
    let mut members = Vec::new();
    let mut first = true;
    while i < p.len() {
        let c = p[i];
        if c == ']' && !first {
            return Some(Set {
                ranges: members,
                negated,
                len: i + 1,
            });
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            members.push((c, p[i + 2]));
            i += 3;
        } else {
            members.push((c, c));
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::fnmatch;

    #[test]
    fn wildcards_match_as_pythons_fnmatchcase() {
        for (pattern, text, expected) in [
            (
                "*kernels/mha_native/fmha_fwd_d64_bf16_*",
                "/a/csrc/kernels/mha_native/fmha_fwd_d64_bf16_combine.cu",
                true,
            ),
            ("*.device.cu", "x.device.cu", true),
            ("*.device.cu", "x.device.cpp", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("[a-c]x", "bx", true),
            ("[!a-c]x", "bx", false),
            ("[!a-c]x", "dx", true),
            ("[]]", "]", true),
            ("[x", "[x", true),
            ("exact.cu", "exact.cu", true),
            ("*", "", true),
        ] {
            assert_eq!(fnmatch(pattern, text), expected, "{pattern} {text}");
        }
    }
}
