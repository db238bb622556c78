//! A generator's command line (a field of the recipe): its options read and rewritten (the
//! receipt, the targets, a CK filter), and split into words as a shell would.

use std::path::Path;

/// `cmd` with the value after every `option` replaced by `value`.
pub(super) fn replace_option(cmd: &str, option: &str, value: &str) -> String {
    let mut words: Vec<String> = cmd.split(' ').map(String::from).collect();
    for i in 0..words.len().saturating_sub(1) {
        if words[i] == option {
            words[i + 1] = value.to_string();
        }
    }
    words.join(" ")
}

/// The recipe's generator scripts resolved: each command's script path and its arguments with
/// `{}` replaced by `out_dir`.
pub(crate) fn generator_argv(cmd: &str, out_dir: &Path) -> Vec<String> {
    // Split first: a directory with a space in its name stays one argument.
    shell_words(cmd)
        .into_iter()
        .map(|word| word.replace("{}", &out_dir.to_string_lossy()))
        .collect()
}

/// The `-d` direction of CK's fmha generator command (`None` for any other generator).
pub(crate) fn ck_direction(cmd: &str) -> Option<&str> {
    if !cmd.contains("01_fmha/generate.py") {
        return None;
    }
    option_value(cmd, "-d")
}

/// The word after the first `option` of a command (`-d fwd`: `fwd`).
pub(crate) fn option_value<'a>(cmd: &'a str, option: &str) -> Option<&'a str> {
    let mut words = cmd.split_whitespace();
    words.find(|w| *w == option)?;
    words.next()
}

/// `cmd` with CK instance filter `filter`, for narrow builds: it replaces the argument of the
/// command's own `--filter` (AITER's backward pre/post kernel generator has one), and is
/// appended to CK's fmha `generate.py` and to a generator whose script takes a `--filter`
/// (`takes_filter`: the a4w4 blockscale's `gen_instances.py` with qola's series); `None` for
/// any other generator, which takes no filter.
pub(crate) fn with_ck_filter(cmd: &str, filter: &str, takes_filter: bool) -> Option<String> {
    let mut words = shell_words(cmd);
    if let Some(i) = words.iter().position(|w| w == "--filter") {
        match words.get_mut(i + 1) {
            Some(word) => *word = filter.to_string(),
            None => words.push(filter.to_string()),
        }
    } else if cmd.contains("01_fmha/generate.py") || takes_filter {
        words.extend(["--filter".to_string(), filter.to_string()]);
    } else {
        return None;
    }
    let quoted: Vec<String> = words
        .iter()
        .map(|w| {
            if w.chars().any(char::is_whitespace) {
                format!("\"{w}\"")
            } else {
                w.clone()
            }
        })
        .collect();
    Some(quoted.join(" "))
}

/// Splits a command on spaces, keeping double- or single-quoted words whole (quotes removed).
pub(super) fn shell_words(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in cmd.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_directory_with_spaces_stays_one_argument() {
        let argv = generator_argv(
            "/a/generate.py -d fwd --output_dir {} --filter \"x y\"",
            Path::new("/build dir/gen"),
        );
        assert_eq!(
            argv,
            [
                "/a/generate.py",
                "-d",
                "fwd",
                "--output_dir",
                "/build dir/gen",
                "--filter",
                "x y"
            ]
        );
    }

    #[test]
    fn a_ck_filter_replaces_a_generators_own_and_is_appended_to_cks_generate_py() {
        assert_eq!(
            with_ck_filter(
                "/a/01_fmha/generate.py -d bwd --output_dir {}",
                "x*@y@z",
                false
            ),
            Some("/a/01_fmha/generate.py -d bwd --output_dir {} --filter x*@y@z".to_string())
        );
        assert_eq!(
            with_ck_filter(
                r#"/a/pre_post_generate.py --filter "*@*_nd@*" --output_dir {}"#,
                "x@y@z",
                false
            ),
            Some("/a/pre_post_generate.py --filter x@y@z --output_dir {}".to_string())
        );
        assert_eq!(
            with_ck_filter("/a/codegen.py --output_dir {}", "x", false),
            None
        );
        assert_eq!(
            with_ck_filter("/a/gen_instances.py --working_path {}", "a|b", true),
            Some("/a/gen_instances.py --working_path {} --filter a|b".to_string())
        );
    }
}
