//! docs/architecture.md's map, checked against the crate's module graph: the floors (the three
//! top files included), each subsystem's rooms, the folders' faces and what each gives, the
//! arrows up and back up, circles among rooms, the order inside aiter/, the values whose methods
//! are in one file, the longest file and function, and where the farm is named. The map's tables
//! are this test's input (read from the doc, never copied here), and the graph is read from the
//! sources (`use` trees and `crate::`, `super::`, `self::` and child module paths, tests left
//! out), so a change to either alone fails here, a claim removed as well as one added.

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
    /// The folders the faces table names, each with the names its face gives.
    faces: Vec<(String, Vec<String>)>,
    /// aiter/'s rooms from the bottom up, each with the rooms it imports.
    aiter_order: Vec<(String, BTreeSet<String>)>,
    /// Values whose methods are in one file: the value, the file's module, the most methods.
    one_file: Vec<(String, String, usize)>,
    /// The arrows up the floors it allows, as `(from, to)` modules (`""` for the root).
    allowed_up: Vec<(String, String)>,
    /// How many lines a source file may have.
    longest_file: usize,
    /// How many lines a function may have.
    longest_function: usize,
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

/// The number after `phrase` in `doc` (its lines joined).
fn number_after(doc: &str, phrase: &str) -> Option<usize> {
    doc.replace('\n', " ")
        .split(phrase)
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
}

fn map() -> Map {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let longest_file = number_after(&doc, "no source file of the crate is over ")
        .expect("the map says how long a source file may be");
    let longest_function = number_after(&doc, "no function is over ")
        .expect("the map says how long a function may be");
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
        .map(|row| (module_named(&quoted(&row[0])[0]), quoted(&row[1])))
        .collect();
    let aiter_order = table(&doc, "| aiter room | imports |")
        .iter()
        .map(|row| {
            let room = |r: &String| module_named(r);
            (
                room(&quoted(&row[0])[0]),
                quoted(&row[1]).iter().map(room).collect(),
            )
        })
        .collect();
    let one_file = table(&doc, "| value | file | methods at most |")
        .iter()
        .map(|row| {
            (
                quoted(&row[0])[0].clone(),
                module_named(&quoted(&row[1])[0]),
                row[2].parse().unwrap(),
            )
        })
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
        aiter_order,
        one_file,
        allowed_up,
        longest_file,
        longest_function,
    }
}

/// A module: its path from the crate root (`compile/cache/key`; `""` for the root).
type Module = Vec<String>;

/// An import: the module that names, the module named (as written: a folder's face), the
/// module that defines what it names (a face's re-export followed to its source), and the path
/// as written.
#[derive(Debug)]
struct Arrow {
    from: Module,
    to: Module,
    defined: Module,
    path: String,
}

impl Arrow {
    /// How many folders its two ends share from the top.
    fn shared(&self) -> usize {
        self.from
            .iter()
            .zip(&self.defined)
            .take_while(|(x, y)| x == y)
            .count()
    }
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

/// What each folder's face re-exports, by name: the module the item comes from (`pub use
/// library::{AiterLibrary, ...}` in `aiter` gives `AiterLibrary` -> `aiter/library`).
fn reexports(
    modules: &[(Module, String)],
) -> std::collections::BTreeMap<Module, std::collections::BTreeMap<String, Vec<String>>> {
    let mut faces = std::collections::BTreeMap::new();
    for (me, text) in modules {
        if !is_folder(me) {
            continue;
        }
        let mut names = std::collections::BTreeMap::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("use ") {
            let before = rest[..at].trim_end();
            let public =
                before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
            let end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
            if public {
                for path in use_paths(&rest[at + 4..end]) {
                    let segments: Vec<String> = match path[0].as_str() {
                        "crate" => path[1..].to_vec(),
                        "super" => me[..me.len().saturating_sub(1)]
                            .iter()
                            .chain(&path[1..])
                            .cloned()
                            .collect(),
                        "self" => me.iter().chain(&path[1..]).cloned().collect(),
                        _ => me.iter().chain(&path).cloned().collect(),
                    };
                    if let Some(item) = segments.last() {
                        names.insert(item.clone(), segments.clone());
                    }
                }
            }
            rest = &rest[(at + 4).min(end)..];
        }
        faces.insert(me.clone(), names);
    }
    faces
}

/// The module `segments` reaches when a face on the way re-exports the item (`crate::aiter::X`
/// whose `aiter` face has `pub use library::X` reaches `aiter/library`), else `to`.
fn through_faces(
    to: Module,
    segments: &[String],
    faces: &std::collections::BTreeMap<Module, std::collections::BTreeMap<String, Vec<String>>>,
) -> Module {
    let Some(item) = segments.get(to.len()) else {
        return to;
    };
    match faces.get(&to).and_then(|names| names.get(item)) {
        Some(source) if source.as_slice() != segments => {
            let next = resolve(source);
            match next.len() > to.len() && next.starts_with(&to) {
                true => through_faces(next, source, faces),
                false => to,
            }
        }
        _ => to,
    }
}

/// The crate's import graph, each arrow to the module that defines what it names (a face's
/// re-export followed to its source).
fn graph() -> Vec<Arrow> {
    let mut arrows = Vec::new();
    let modules = modules();
    let faces = reexports(&modules);
    for (me, text) in modules {
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
            let defined = through_faces(to.clone(), &segments, &faces);
            if to != me && defined != me {
                arrows.push(Arrow {
                    from: me.clone(),
                    to,
                    defined,
                    path: path.join("::"),
                });
            }
        }
    }
    arrows
}

/// The floor of a module: its subsystem's (or top file's) place in the map.
fn floor(map: &Map, m: &[String]) -> usize {
    let top = m.first().map_or("", String::as_str);
    map.floors
        .iter()
        .position(|f| f.subsystem == top)
        .unwrap_or_else(|| panic!("{} is on no floor of the map", name(m)))
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
    // Every folder and file of src/ (the command line aside) is on a floor, and only those.
    let entries: BTreeSet<String> = std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "bin")
        .map(|e| module_named(&e.file_name().to_string_lossy()))
        .collect();
    let mapped: BTreeSet<String> = map.floors.iter().map(|f| f.subsystem.clone()).collect();
    assert_eq!(entries, mapped, "the floors of the map");
    for floor in map.floors.iter().filter(|f| !f.subsystem.is_empty()) {
        if !is_folder(std::slice::from_ref(&floor.subsystem)) {
            assert!(
                floor.rooms.is_empty() && floor.at_most == 0,
                "{floor:?}: a file has no rooms"
            );
            continue;
        }
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

/// The circles of the graph among rooms: each arrow lifted to the two modules under the deepest
/// folder both are in (`aiter/module/hsa -> aiter/library` is `aiter/module -> aiter/library`;
/// a folder and what is inside it are not two rooms), then each strongly connected set of more
/// than one of them (rooms that import each other, directly or through others).
fn circles(graph: &[Arrow]) -> Vec<Vec<String>> {
    use std::collections::BTreeMap;
    let mut next: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for a in graph {
        let shared = a.shared();
        if shared == a.from.len() || shared == a.defined.len() {
            continue; // one is inside the other
        }
        let (from, to) = (&a.from[..=shared], &a.defined[..=shared]);
        next.entry(name(from)).or_default().insert(name(to));
    }
    let reach = |start: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start.to_string()];
        while let Some(m) = todo.pop() {
            for n in next.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<String, BTreeSet<String>> =
        next.keys().map(|m| (m.clone(), reach(m))).collect();
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, from_m) in &reaches {
        let mut circle: Vec<String> = from_m
            .iter()
            .filter(|n| *n != m && reaches.get(*n).is_some_and(|r| r.contains(m)))
            .cloned()
            .collect();
        if !circle.is_empty() {
            circle.push(m.clone());
            circle.sort();
            found.insert(circle);
        }
    }
    found.into_iter().collect()
}

#[test]
fn no_rooms_import_each_other_directly_or_through_others() {
    let graph = graph();
    let found = circles(&graph);
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            let arrows: Vec<String> = graph
                .iter()
                .filter(|a| {
                    let shared = a.shared();
                    shared < a.from.len()
                        && shared < a.defined.len()
                        && c.contains(&name(&a.from[..=shared]))
                        && c.contains(&name(&a.defined[..=shared]))
                })
                .map(|a| format!("{} -> {} ({})", name(&a.from), name(&a.defined), a.path))
                .collect();
            format!("  {}:\n    {}", c.join(" <-> "), arrows.join("\n    "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "rooms that import each other are one concern (one file, or one of them owns what both need):\n{}",
        shown.join("\n")
    );
}

/// The functions of a module's code longer than `limit` lines: `(name, lines)`, from the line
/// of `fn` to the line of its closing brace.
fn long_functions(code: &str, limit: usize) -> Vec<(String, usize)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("fn ").map(|i| from + i) {
        from = at + 3;
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The body opens at the first `{` before any `;` (a declaration without a body).
        let Some(open) = code[at..].find(['{', ';']).map(|i| at + i) else {
            break;
        };
        if bytes[open] == b';' || name.is_empty() {
            continue;
        }
        let mut depth = 0;
        let mut close = open;
        for (i, b) in code[open..].bytes().enumerate() {
            match b {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                close = open + i;
                break;
            }
        }
        let lines = code[at..=close].lines().count();
        if lines > limit {
            out.push((name, lines));
        }
    }
    out
}

#[test]
fn no_function_is_longer_than_the_map_says() {
    let limit = map().longest_function;
    let long: Vec<String> = modules()
        .into_iter()
        .flat_map(|(m, code)| {
            long_functions(&code, limit)
                .into_iter()
                .map(move |(f, lines)| format!("{}::{f}: {lines} lines", name(&m)))
        })
        .collect();
    assert!(long.is_empty(), "functions over {limit} lines: {long:#?}");
    let text = "fn a() {\n    if x { y }\n}\nfn b();\nfn c() {\n\n\n\n}\n";
    assert_eq!(long_functions(text, 3), [("c".to_string(), 5)]);
}

/// The names a face gives: what it re-exports and the items it declares public to the crate.
fn face_names(face: &[String], modules: &[(Module, String)]) -> BTreeSet<String> {
    let faces = reexports(modules);
    let mut names: BTreeSet<String> = faces
        .get(face)
        .map(|names| names.keys().cloned().collect())
        .unwrap_or_default();
    let code = &modules.iter().find(|(m, _)| m == face).expect("a face").1;
    // A re-export's new name (`pub use a::{b as c}` gives `c`).
    for statement in code
        .split(';')
        .filter(|s| s.trim_start().starts_with("pub"))
    {
        if statement.contains(" use ") {
            for alias in statement.split(" as ").skip(1) {
                names.insert(
                    alias
                        .trim_start()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect(),
                );
            }
        }
    }
    for line in code.lines().map(str::trim_start) {
        let Some(rest) = line.strip_prefix("pub") else {
            continue;
        };
        let rest = rest.split_once(") ").map_or(rest, |(_, r)| r).trim_start();
        let words: Vec<&str> = rest.split_whitespace().collect();
        if let [kind, item, ..] = words[..]
            && [
                "fn", "struct", "enum", "trait", "type", "const", "static", "mod",
            ]
            .contains(&kind)
        {
            let item: String = item
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.insert(item);
        }
    }
    names
}

#[test]
fn the_faces_table_names_every_folder_reached_from_outside_and_what_its_face_gives() {
    let (map, graph, modules) = (map(), graph(), modules());
    // The folders inside a subsystem reached by a module neither inside nor above them.
    let reached: BTreeSet<String> = graph
        .iter()
        .filter(|a| a.to.len() >= 2 && is_folder(&a.to))
        .filter(|a| !a.from.starts_with(&a.to) && !a.to.starts_with(&a.from))
        .map(|a| name(&a.to))
        .collect();
    let listed: BTreeSet<String> = map.faces.iter().map(|(f, _)| f.clone()).collect();
    assert_eq!(
        listed.difference(&reached).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "faces on the map of folders no module outside them reaches (or that do not exist)"
    );
    assert_eq!(
        reached.difference(&listed).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "folders reached from outside without a row in the faces table"
    );
    for (face, said) in &map.faces {
        let module: Module = face.split('/').map(String::from).collect();
        let gives = face_names(&module, &modules);
        let identifier = |w: &&String| {
            w.chars().all(|c| c.is_alphanumeric() || c == '_')
                && w.chars().next().is_some_and(|c| c.is_alphabetic())
        };
        let missing: Vec<&String> = said
            .iter()
            .filter(identifier)
            .filter(|w| !gives.contains(*w))
            .collect();
        assert!(
            missing.is_empty(),
            "the map says {face}/'s face gives {missing:?}; it gives {gives:?}"
        );
    }
}

#[test]
fn aiter_rooms_import_exactly_the_rooms_below_them_the_map_lists() {
    let (map, graph) = (map(), graph());
    let aiter = &map
        .floors
        .iter()
        .find(|f| f.subsystem == "aiter")
        .unwrap()
        .rooms;
    let ordered: BTreeSet<String> = map
        .aiter_order
        .iter()
        .map(|(room, _)| format!("aiter/{room}"))
        .collect();
    let rooms: BTreeSet<String> = aiter
        .iter()
        .map(|r| format!("aiter/{}", module_named(r)))
        .collect();
    assert_eq!(ordered, rooms, "the order inside aiter/ lists its rooms");
    let mut imports: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for a in &graph {
        let (Some(from), Some(to)) = (a.from.get(1), a.defined.get(1)) else {
            continue;
        };
        if a.from[0] == "aiter" && a.defined[0] == "aiter" && from != to {
            imports.entry(from.clone()).or_default().insert(to.clone());
        }
    }
    for (i, (room, listed)) in map.aiter_order.iter().enumerate() {
        let below: BTreeSet<&String> = map.aiter_order[..i].iter().map(|(r, _)| r).collect();
        let above: Vec<&String> = listed.iter().filter(|r| !below.contains(r)).collect();
        assert!(
            above.is_empty(),
            "aiter/{room} is listed importing {above:?}, not below it"
        );
        let actual = imports.get(room).cloned().unwrap_or_default();
        assert_eq!(&actual, listed, "what aiter/{room} imports");
    }
}

#[test]
fn each_value_of_the_map_has_its_methods_in_one_file() {
    let map = map();
    assert!(!map.one_file.is_empty());
    for (value, file, at_most) in &map.one_file {
        let header = format!("impl {value} {{");
        let holders: Vec<String> = modules()
            .into_iter()
            .filter(|(_, code)| code.contains(&header))
            .map(|(m, _)| name(&m))
            .collect();
        assert_eq!(
            holders,
            std::slice::from_ref(file),
            "the files with `{header}`"
        );
        let module: Module = file.split('/').map(String::from).collect();
        let code = modules().into_iter().find(|(m, _)| *m == module).unwrap().1;
        let block = &code[code.find(&header).unwrap()..];
        let mut depth = 0;
        let end = block
            .char_indices()
            .find(|(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => return false,
                }
                depth == 0
            })
            .map(|(i, _)| i)
            .unwrap();
        let methods = block[..end]
            .lines()
            .filter(|l| l.starts_with("    ") && !l.starts_with("     "))
            .filter(|l| {
                l.trim_start().starts_with("pub fn ")
                    || l.trim_start().starts_with("fn ")
                    || l.trim_start().starts_with("pub(crate) fn ")
                    || l.trim_start().starts_with("pub(super) fn ")
            })
            .count();
        assert!(
            methods <= *at_most,
            "{value} has {methods} methods in {file}; the map allows {at_most}"
        );
    }
}
