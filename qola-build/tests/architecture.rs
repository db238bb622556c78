//! docs/architecture.md's map, checked against the crate's module graph: the floors, each
//! subsystem's rooms, the folders' faces, the arrows back up and where the farm is named. The
//! map's tables are this test's input (read from the doc, never copied here), and the graph is
//! read from the sources (`use` trees and `crate::`, `super::`, `self::` and child module paths,
//! tests left out), so a change to either alone fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One row of the map's table of floors and rooms.
#[derive(Debug)]
struct Floor {
    /// The subsystem's folder (`compile`).
    subsystem: String,
    /// Its rooms, as listed (`cache/`, `error.rs`).
    rooms: BTreeSet<String>,
    /// The most rooms it may have.
    at_most: usize,
}

/// The map: docs/architecture.md's tables.
#[derive(Debug)]
struct Map {
    /// The subsystems from the ground floor up; `error.rs` and `lib.rs` stand above them all.
    floors: Vec<Floor>,
    /// The folders the faces table names.
    faces: Vec<String>,
    /// The arrows up the floors it allows, as `(from, to)` modules (`""` for the root).
    allowed_up: Vec<(String, String)>,
    /// How many lines a source file may have.
    longest_file: usize,
}

/// The rows of the markdown table whose header starts with `header`: each row's cells.
fn table(doc: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = doc.lines().skip_while(|l| !l.starts_with(header));
    assert!(
        lines.next().is_some(),
        "docs/architecture.md has no table `{header}`"
    );
    lines
        .skip(1) // the |---| line
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The names in backquotes of a cell (`` `a/` `b.rs` `` gives `a/`, `b.rs`).
fn quoted(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// A module named in the map (`aiter/error.rs`, `lib.rs`, `compile/launcher/`) as a module path.
fn module_named(name: &str) -> String {
    match name {
        "lib.rs" => String::new(),
        name => name
            .trim_end_matches('/')
            .trim_end_matches(".rs")
            .to_string(),
    }
}

fn map() -> Map {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let longest_file = doc
        .replace('\n', " ")
        .split("no source file of the crate is over ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("the map says how long a source file may be");
    let floors = table(&doc, "| floor | subsystem | rooms | at most |")
        .iter()
        .enumerate()
        .map(|(i, row)| {
            assert_eq!(row[0], (i + 1).to_string(), "the floors in order: {row:?}");
            Floor {
                subsystem: module_named(&quoted(&row[1])[0]),
                rooms: quoted(&row[2]).into_iter().collect(),
                at_most: row[3].parse().unwrap(),
            }
        })
        .collect();
    let faces = table(&doc, "| folder | its face gives |")
        .iter()
        .map(|row| module_named(&quoted(&row[0])[0]))
        .collect();
    let allowed_up = table(&doc, "| from | to | why |")
        .iter()
        .filter(|row| row[0] != "none")
        .map(|row| {
            (
                module_named(&quoted(&row[0])[0]),
                module_named(&quoted(&row[1])[0]),
            )
        })
        .collect();
    Map {
        floors,
        faces,
        allowed_up,
        longest_file,
    }
}

/// A module: its path from the crate root (`compile/cache/key`; `""` for the root).
type Module = Vec<String>;

/// An import: the module that names, the module named, and the path as written.
#[derive(Debug)]
struct Arrow {
    from: Module,
    to: Module,
    path: String,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn name(m: &[String]) -> String {
    m.join("/")
}

/// The file of module `m`, when it is one.
fn file_of(m: &[String]) -> Option<PathBuf> {
    if m.is_empty() {
        return Some(src().join("lib.rs"));
    }
    let base = m.iter().fold(src(), |p, s| p.join(s));
    [base.with_extension("rs"), base.join("mod.rs")]
        .into_iter()
        .find(|p| p.is_file())
}

/// Whether module `m` is a folder (its file is a `mod.rs`, or the root).
fn is_folder(m: &[String]) -> bool {
    m.is_empty() || m.iter().fold(src(), |p, s| p.join(s)).is_dir()
}

/// The deepest module `segments` names (a path's items after it are not modules).
fn resolve(segments: &[String]) -> Module {
    let mut m = Module::new();
    for s in segments {
        let mut next = m.clone();
        next.push(s.clone());
        if file_of(&next).is_none() {
            break;
        }
        m = next;
    }
    m
}

/// The text without comments, strings and the `#[cfg(test)]` module.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match (c, next) {
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            ('"', _) => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if !escaped && c == '"' {
                        break;
                    }
                    escaped = !escaped && c == '\\';
                }
                out.push_str("\"\"");
            }
            // A raw string: r"…", r#"…"#.
            ('r', Some('"' | '#')) if !out.ends_with(|p: char| p.is_alphanumeric() || p == '_') => {
                let mut hashes = 0;
                while chars.next_if_eq(&'#').is_some() {
                    hashes += 1;
                }
                if chars.next_if_eq(&'"').is_none() {
                    out.push('r');
                    out.extend(std::iter::repeat_n('#', hashes));
                    continue;
                }
                let close: String = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let mut seen = String::new();
                for c in chars.by_ref() {
                    seen.push(c);
                    if seen.ends_with(&close) {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            // A character literal ('"', '\'', 'x'), not a lifetime.
            ('\'', Some(_)) => {
                let mut ahead = chars.clone();
                let literal = match ahead.next() {
                    Some('\\') => {
                        ahead.next();
                        ahead.find(|c| *c == '\'').is_some()
                    }
                    Some(_) => ahead.next() == Some('\''),
                    None => false,
                };
                if literal {
                    chars = ahead;
                    out.push_str("' '");
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    // The test module, whatever its visibility (`pub(super) mod tests` lends its helpers).
    let test_module = out.match_indices("#[cfg(test)]\n").find(|(at, attr)| {
        let rest = &out[at + attr.len()..];
        let rest = rest.strip_prefix("pub(super) ").unwrap_or(rest);
        rest.starts_with("mod tests")
    });
    match test_module {
        Some((at, _)) => out[..at].to_string(),
        None => out,
    }
}

/// The paths of a `use` tree (`a::{b, c::d as e}` gives `a::b`, `a::c::d`).
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    fn go(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let (mut depth, mut start) = (0, 0);
        let mut parts = Vec::new();
        for (i, c) in tree.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&tree[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&tree[start..]);
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let words = |s: &str| -> Vec<String> {
                s.split("::")
                    .filter(|w| !w.is_empty())
                    .map(String::from)
                    .collect()
            };
            let mut path = prefix.to_vec();
            match part.find('{') {
                Some(open) => {
                    path.extend(words(&part[..open]));
                    go(&path, &part[open + 1..part.rfind('}').unwrap()], out);
                }
                None => {
                    path.extend(words(part.split(" as ").next().unwrap()));
                    out.push(path);
                }
            }
        }
    }
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree
        .replace(" ::", "::")
        .replace(":: ", "::")
        .replace(", ", ",");
    let tree = tree.replace("{ ", "{").replace(" }", "}");
    let mut out = Vec::new();
    go(&[], &tree, &mut out);
    out
}

/// The paths a text names outside its `use` items: `crate::a::b`, `super::x`, `child::y`.
fn inline_paths(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let starts = word(bytes[i]) && (i == 0 || !(word(bytes[i - 1]) || bytes[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut path = Vec::new();
        loop {
            let s = j;
            while j < bytes.len() && word(bytes[j]) {
                j += 1;
            }
            path.push(text[s..j].to_string());
            if text[j..].starts_with("::") && j + 2 < bytes.len() && word(bytes[j + 2]) {
                j += 2;
            } else {
                break;
            }
        }
        if path.len() > 1 {
            out.push(path);
        }
        i = j.max(i + 1);
    }
    out
}

/// Every module of the crate (the `bin/` command and test modules left out) with its code.
fn modules() -> Vec<(Module, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &mut files);
    let mut out = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src()).unwrap().with_extension("");
        let mut m: Module = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if m[0] == "bin" || m.last().is_some_and(|l| l == "tests") {
            continue;
        }
        if m.last().is_some_and(|l| l == "mod" || l == "lib") {
            m.pop();
        }
        out.push((m, code(&std::fs::read_to_string(&file).unwrap())));
    }
    out.sort();
    out
}

/// The crate's import graph.
fn graph() -> Vec<Arrow> {
    let mut arrows = Vec::new();
    for (me, text) in modules() {
        let mut paths = Vec::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("use ") {
            let boundary = at == 0 || !rest.as_bytes()[at - 1].is_ascii_alphanumeric();
            let end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
            if boundary {
                paths.extend(use_paths(&rest[at + 4..end]));
            }
            rest = &rest[(at + 4).min(end)..];
        }
        paths.extend(inline_paths(&text));
        for path in paths {
            let segments: Vec<String> = match path[0].as_str() {
                "crate" => path[1..].to_vec(),
                "self" => me.iter().chain(&path[1..]).cloned().collect(),
                "super" => {
                    let ups = path.iter().take_while(|s| *s == "super").count();
                    let base = &me[..me.len().saturating_sub(ups)];
                    base.iter().chain(&path[ups..]).cloned().collect()
                }
                child => {
                    let mut m = me.clone();
                    m.push(child.to_string());
                    if file_of(&m).is_none() {
                        continue;
                    }
                    me.iter().chain(&path).cloned().collect()
                }
            };
            let to = resolve(&segments);
            if to != me {
                arrows.push(Arrow {
                    from: me.clone(),
                    to,
                    path: path.join("::"),
                });
            }
        }
    }
    arrows
}

/// The floor of a module: its subsystem's place in the map; the top files stand above.
fn floor(map: &Map, m: &[String]) -> usize {
    m.first()
        .and_then(|top| map.floors.iter().position(|f| f.subsystem == *top))
        .unwrap_or(map.floors.len())
}

/// The folder a module is in (a folder module is its own).
fn folder(m: &[String]) -> &[String] {
    if is_folder(m) { m } else { &m[..m.len() - 1] }
}

fn listed(arrows: &[&Arrow]) -> String {
    let lines: BTreeSet<String> = arrows
        .iter()
        .map(|a| format!("  {} -> {} ({})", name(&a.from), name(&a.to), a.path))
        .collect();
    lines.into_iter().collect::<Vec<_>>().join("\n")
}

#[test]
fn no_module_imports_from_a_floor_above_its_own_but_the_arrows_the_map_allows() {
    let (map, graph) = (map(), graph());
    let up: Vec<&Arrow> = graph
        .iter()
        .filter(|a| floor(&map, &a.to) > floor(&map, &a.from))
        .filter(|a| !map.allowed_up.contains(&(name(&a.from), name(&a.to))))
        .collect();
    assert!(up.is_empty(), "arrows up the floors:\n{}", listed(&up));
    let ground: Vec<&Arrow> = graph
        .iter()
        .filter(|a| a.from.first().is_some_and(|f| f == "common"))
        .filter(|a| a.to.first().is_none_or(|t| t != "common"))
        .collect();
    assert!(
        ground.is_empty(),
        "the ground floor imports:\n{}",
        listed(&ground)
    );
    for (from, to) in &map.allowed_up {
        assert!(
            graph
                .iter()
                .any(|a| name(&a.from) == *from && name(&a.to) == *to),
            "the allowed arrow {from} -> {to} is gone: take it out of the map"
        );
    }
}

#[test]
fn every_subsystem_has_the_rooms_the_map_lists_and_no_more_than_it_allows() {
    let map = map();
    assert_eq!(map.floors[0].subsystem, "common", "the ground floor");
    let folders: BTreeSet<String> = std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir() && e.file_name() != "bin")
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let mapped: BTreeSet<String> = map.floors.iter().map(|f| f.subsystem.clone()).collect();
    assert_eq!(folders, mapped, "the subsystems on the map");
    for floor in &map.floors {
        let rooms: BTreeSet<String> = std::fs::read_dir(src().join(&floor.subsystem))
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name() != "mod.rs")
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() {
                    format!("{name}/")
                } else {
                    name
                }
            })
            .collect();
        assert_eq!(rooms, floor.rooms, "{}/'s rooms", floor.subsystem);
        assert!(
            rooms.len() <= floor.at_most,
            "{}/ has {} rooms, the map allows {}",
            floor.subsystem,
            rooms.len(),
            floor.at_most
        );
    }
    for face in &map.faces {
        assert!(
            src().join(face).join("mod.rs").is_file(),
            "{face}: a folder"
        );
    }
}

#[test]
fn a_folder_is_reached_from_outside_only_through_its_face() {
    let graph = graph();
    let through_a_wall: Vec<&Arrow> = graph
        .iter()
        .filter(|a| {
            // The first folder on the way down from where both meet to the target.
            let from = folder(&a.from);
            let shared = from.iter().zip(&a.to).take_while(|(x, y)| x == y).count();
            if shared >= a.to.len() || a.to[0] == "common" {
                return false; // an ancestor, or the ground floor's toolbox (a face per file)
            }
            let entered = &a.to[..=shared];
            is_folder(entered) && entered != a.to.as_slice()
        })
        .collect();
    assert!(
        through_a_wall.is_empty(),
        "modules reached past their folder's face (re-export what is needed from the folder's mod.rs):\n{}",
        listed(&through_a_wall)
    );
}

#[test]
fn no_child_folder_reaches_back_up_past_an_ancestors_face() {
    let graph = graph();
    let back_up: Vec<&Arrow> = graph
        .iter()
        .filter(|a| {
            let (from, to) = (folder(&a.from), folder(&a.to));
            !to.is_empty() && to.len() < from.len() && from.starts_with(to) && a.to != to
        })
        .collect();
    assert!(back_up.is_empty(), "arrows back up:\n{}", listed(&back_up));
}

#[test]
fn no_source_file_is_longer_than_the_map_says() {
    let limit = map().longest_file;
    let long: Vec<String> = modules()
        .into_iter()
        .filter_map(|(m, _)| {
            let lines = std::fs::read_to_string(file_of(&m)?).ok()?.lines().count();
            (lines > limit).then(|| format!("{}: {lines} lines", name(&m)))
        })
        .collect();
    assert!(long.is_empty(), "over {limit} lines: {long:?}");
}

#[test]
fn only_the_launcher_folder_names_the_farm() {
    let graph = graph();
    let launcher: Module = ["compile", "launcher"].map(String::from).to_vec();
    let farm: Vec<&Arrow> = graph
        .iter()
        .filter(|a| !a.from.starts_with(&launcher))
        .filter(|a| a.to.iter().any(|s| s == "farm") || a.path.split("::").any(|s| s == "farm"))
        .collect();
    assert!(
        farm.is_empty(),
        "the farm named outside compile/launcher/:\n{}",
        listed(&farm)
    );
    let kinds: Vec<&Arrow> = graph
        .iter()
        .filter(|a| !a.from.starts_with(&launcher) && a.to.starts_with(&launcher))
        .filter(|a| a.to != launcher)
        .collect();
    assert!(
        kinds.is_empty(),
        "a launcher's kind named outside compile/launcher/:\n{}",
        listed(&kinds)
    );
    // Nor in its code (comments, strings and tests aside): errors and reports carry the
    // launcher's words, not the farm's fields.
    let named: Vec<String> = modules()
        .into_iter()
        .filter(|(m, _)| !m.starts_with(&launcher))
        .filter(|(_, code)| code.to_ascii_lowercase().contains("farm"))
        .map(|(m, _)| name(&m))
        .collect();
    assert!(named.is_empty(), "the farm named in the code of {named:?}");
}

#[test]
fn the_graph_sees_the_imports_it_checks() {
    // A reader that found nothing would pass every test above.
    let graph = graph();
    let seen = |from: &str, to: &str| {
        graph
            .iter()
            .any(|a| name(&a.from) == from && name(&a.to) == to)
    };
    assert!(seen("compile/pipeline", "compile/run"));
    assert!(seen("compile/launcher/farm", "compile"));
    assert!(seen("error", "aiter"));
    assert!(seen("prepare/observe", "prepare/git"));
    let joined: Vec<String> = use_paths("crate::a::{b, c::{d as e, f}}")
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(joined, ["crate::a::b", "crate::a::c::d", "crate::a::c::f"]);
    // Literals that look like the start of a string hide nothing after them.
    let text = code("let q = '\"'; let r = r#\"a \" b\"#; fn f<'a>() {}\nuse crate::x::y;");
    assert!(text.ends_with("use crate::x::y;"), "{text}");
    assert!(text.contains("fn f<'a>()"), "{text}");
}

#[test]
fn no_function_is_allowed_too_many_arguments() {
    // A function that needs more than clippy's seven takes a value that names them.
    let allowed: Vec<String> = modules()
        .into_iter()
        .filter(|(_, code)| code.contains("clippy::too_many_arguments"))
        .map(|(m, _)| name(&m))
        .collect();
    assert!(
        allowed.is_empty(),
        "too_many_arguments allowed in {allowed:?}"
    );
}
