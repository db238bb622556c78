//! Make-style dependency files as clang writes them with `-MD -MF`: `target: dep dep \`,
//! continuation lines, `\ ` for a space in a path, `$$` for `$`.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute against `cwd` (the directory the compiler ran in), `.` and `..`
/// resolved lexically: ccache's `base_dir` has the compiler see, and list, relative paths.
pub(crate) fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in cwd.join(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The prerequisites of every rule in `text`, in order, without duplicates.
pub(crate) fn prerequisites(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out: Vec<PathBuf> = Vec::new();
    for line in joined.lines() {
        let Some(colon) = find_rule_colon(line) else {
            continue;
        };
        for word in words(&line[colon + 1..]) {
            let path = PathBuf::from(word);
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// The `:` that ends a rule's targets (a `:` followed by a space or the end of the line).
fn find_rule_colon(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    (0..bytes.len()).find(|&i| {
        bytes[i] == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' ' || bytes[i + 1] == b'\t')
    })
}

/// Splits on unescaped whitespace and undoes the escapes.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some(' ') | Some('#') | Some('\\')) => {
                word.push(chars.next().expect("peeked"));
            }
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                word.push('$');
            }
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_become_absolute_against_the_compile_directory() {
        let cwd = Path::new("/w/qola-sys");
        assert_eq!(
            absolute(Path::new("../target/out/gen.h"), cwd),
            Path::new("/w/target/out/gen.h")
        );
        assert_eq!(
            absolute(Path::new("./kernels/a.hip"), cwd),
            Path::new("/w/qola-sys/kernels/a.hip")
        );
        assert_eq!(
            absolute(Path::new("/usr/include/x.h"), cwd),
            Path::new("/usr/include/x.h")
        );
    }

    #[test]
    fn continuation_lines_and_escapes_are_read() {
        let text = "/tmp/o/a.o: /src/a.hip \\\n  /src/inc/with\\ space.h /src/x$$y.h \\\n  /usr/include/stdio.h\n";
        assert_eq!(
            prerequisites(text),
            vec![
                PathBuf::from("/src/a.hip"),
                PathBuf::from("/src/inc/with space.h"),
                PathBuf::from("/src/x$y.h"),
                PathBuf::from("/usr/include/stdio.h"),
            ]
        );
    }

    #[test]
    fn phony_rules_add_nothing_new() {
        let text = "a.o: a.hip b.h\nb.h:\n";
        assert_eq!(
            prerequisites(text),
            vec![PathBuf::from("a.hip"), PathBuf::from("b.h")]
        );
    }
}
