//! The tests' nested cargo builds (qola-sys dependents, copies of this workspace, the wheel):
//! where they build, how a new target directory starts, and what a build made.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{fixtures_dir, write};

/// The target directory the tests' nested cargo builds share (qola-sys dependents, copies of
/// this workspace, the wheel): see [`nested_cargo`]. A test whose claim is another target
/// directory, or whose builds compile kernels for minutes while another test binary's nested
/// builds run (`downstream.rs`: cargo's lock would hold theirs), uses one of its own beside it.
pub fn nested_target() -> PathBuf {
    fixtures_dir().join("nested-target")
}

/// Makes `command` (a `cargo` or `maturin` build) a nested build of the tests: into
/// [`nested_target`], with the workspace's dev debuginfo for units and build scripts alike
/// (`Cargo.toml`'s `[profile.dev]`, which a dependent crate's own workspace does not have), so
/// registry crates compile once for all of them. Cargo's lock runs them one at a time; what a
/// build made is read from its own messages ([`build_script_out_dir`], [`built_executable`]),
/// never as the newest file of the shared directory.
pub fn nested_cargo(command: &mut Command) -> &mut Command {
    nested_cargo_in(command, &nested_target())
}

/// [`nested_cargo`] into the target directory `target` instead (a test's own, see
/// [`nested_target`]). A target directory without a dev profile yet starts with the registry
/// crates of the tests' own build ([`seed_registry_units`]).
pub fn nested_cargo_in<'c>(command: &'c mut Command, target: &Path) -> &'c mut Command {
    seed_registry_units(target);
    command
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .env("CARGO_PROFILE_DEV_BUILD_OVERRIDE_DEBUG", "line-tables-only")
}

/// Gives the nested target directory `target`, when it has no `debug` directory yet, the units
/// of registry crates (`Cargo.lock`'s) that the running tests' own build made in
/// `<workspace target>/debug`: built with the same settings, cargo finds most of them fresh,
/// and a new target directory compiles qola's own crates and the few registry crates whose
/// features differ (~16 CPU s) instead of every dependency (~70 CPU s, libgit2's C among them).
/// What a test checks of a target directory is qola-sys's build script there, which no registry
/// unit is. The units are copied with their times (`cp -a`; not linked: a build script cargo
/// runs again writes its out dir in place), under another name renamed into place, so a build
/// never sees half of them; the first of two tests seeding one directory wins.
fn seed_registry_units(target: &Path) {
    let dev = target.join("debug");
    if dev.exists() {
        return;
    }
    let Some(ours) = fixtures_dir().parent().map(|t| t.join("debug")) else {
        return;
    };
    let Ok(lock) =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"))
    else {
        return;
    };
    let registry = registry_crates(&lock);
    let Ok(fingerprints) = std::fs::read_dir(ours.join(".fingerprint")) else {
        return;
    };
    // `<crate>-<16 hex digits>`: a unit's fingerprint directory, and its build directory when it
    // is a build script's; its files in deps/ are named with `_` for `-`.
    let units: BTreeSet<String> = fingerprints
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| {
            name.rsplit_once('-')
                .is_some_and(|(krate, hash)| hash.len() == 16 && registry.contains(krate))
        })
        .collect();
    let stems: BTreeSet<String> = units.iter().map(|u| u.replace('-', "_")).collect();
    let deps: Vec<PathBuf> = std::fs::read_dir(ours.join("deps"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let stem = name.strip_prefix("lib").unwrap_or(&name);
            stem.split_once('.')
                .is_some_and(|(stem, _)| stems.contains(stem))
        })
        .map(|e| e.path())
        .collect();
    std::fs::create_dir_all(target).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
    let seeding = tempfile::tempdir_in(target).unwrap();
    let copy = |what: &str, paths: Vec<PathBuf>| {
        let into = seeding.path().join(what);
        std::fs::create_dir_all(&into).unwrap();
        if paths.is_empty() {
            return;
        }
        let status = Command::new("cp")
            .arg("-a")
            .arg("-t")
            .arg(&into)
            .args(&paths)
            .status()
            .unwrap_or_else(|e| panic!("cp: {e}"));
        assert!(status.success(), "copying {what} into {}", into.display());
    };
    copy(
        ".fingerprint",
        units
            .iter()
            .map(|u| ours.join(".fingerprint").join(u))
            .collect(),
    );
    copy(
        "build",
        units
            .iter()
            .map(|u| ours.join("build").join(u))
            .filter(|p| p.exists())
            .collect(),
    );
    copy("deps", deps);
    // Another test's seeding or build may have made it meanwhile: then theirs stays.
    let _ = std::fs::rename(seeding.path(), &dev);
}

/// The names of the registry crates in the text of a `Cargo.lock`.
fn registry_crates(lock: &str) -> BTreeSet<String> {
    let mut crates = BTreeSet::new();
    let mut name = None;
    for line in lock.lines() {
        if line == "[[package]]" {
            name = None;
        } else if let Some(value) = line.strip_prefix("name = ") {
            name = Some(value.trim_matches('"').to_string());
        } else if line.starts_with("source = \"registry+") {
            crates.extend(name.take());
        }
    }
    crates
}

/// The messages of a `cargo build --message-format=json-render-diagnostics` (its stdout).
fn cargo_messages(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The package name in a cargo package id: `path+file:///.../qola-sys#0.1.0` or
/// `path+file:///.../qola-sys-0.1.0#qola-sys@0.1.0`.
fn package_name(id: &str) -> &str {
    let (url, fragment) = id.rsplit_once('#').unwrap_or((id, ""));
    match fragment.split_once('@') {
        Some((name, _)) => name,
        None => url.rsplit('/').next().unwrap_or(url),
    }
}

/// The `OUT_DIR` of `package`'s build script in a JSON-message build's `stdout` (cargo reports
/// it for a build script that was fresh too).
pub fn build_script_out_dir(stdout: &[u8], package: &str) -> PathBuf {
    let dirs: Vec<PathBuf> = cargo_messages(stdout)
        .iter()
        .filter(|m| m["reason"] == "build-script-executed")
        .filter(|m| m["package_id"].as_str().map(package_name) == Some(package))
        .filter_map(|m| m["out_dir"].as_str().map(PathBuf::from))
        .collect();
    match dirs.as_slice() {
        [dir] => dir.clone(),
        _ => panic!(
            "{package}'s OUT_DIR: {dirs:?} in {}",
            String::from_utf8_lossy(stdout)
        ),
    }
}

/// The executable a JSON-message build's `stdout` says it made for the binary target `name`.
pub fn built_executable(stdout: &[u8], name: &str) -> PathBuf {
    cargo_messages(stdout)
        .iter()
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| {
            panic!(
                "no executable {name} in {}",
                String::from_utf8_lossy(stdout)
            )
        })
}

/// A crate in `dir` depending on the qola-sys of the workspace at `workspace` (builds of a
/// dependent from elsewhere: other profiles, target directories, paths).
pub fn qola_sys_dependent(dir: &Path, workspace: &Path) {
    write(
        dir,
        "Cargo.toml",
        format!(
            "[package]\nname = \"located\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\nqola-sys = {{ path = \"{}\" }}\n",
            workspace.join("qola-sys").display()
        ),
    );
    write(
        dir,
        "src/lib.rs",
        "//! Built by qola's tests and benchmarks.\n",
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_package_id_names_its_package_in_either_form() {
        for (id, name) in [
            ("path+file:///w/qola-sys#0.1.0", "qola-sys"),
            (
                "path+file:///t/packaged-1/qola-sys-0.1.0#qola-sys@0.1.0",
                "qola-sys",
            ),
            (
                "registry+https://github.com/rust-lang/crates.io-index#cc@1.11.3",
                "cc",
            ),
        ] {
            assert_eq!(super::package_name(id), name, "{id}");
        }
    }

    #[test]
    fn the_registry_crates_of_a_lock_file_are_those_with_a_registry_source() {
        let lock = "version = 4\n\n[[package]]\nname = \"cc\"\nversion = \"1.11.3\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n[[package]]\nname = \"qola-build\"\nversion = \"0.1.0\"\ndependencies = [\n \"cc\",\n]\n\n[[package]]\nname = \"libgit2-sys\"\nversion = \"0.18.8+1.9.7\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n";
        assert_eq!(
            super::registry_crates(lock).into_iter().collect::<Vec<_>>(),
            ["cc", "libgit2-sys"]
        );
    }
}
