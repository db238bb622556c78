//! `CXXFLAGS` and its variants reach the compile command exactly as `cc` (the version qola
//! depends on) reads and combines them: checked against `cc` itself, with every variant set, for
//! a native and a cross build, with and without `CC_SHELL_ESCAPED_FLAGS`.
//!
//! The only test of this binary: it sets process environment variables, which no other test
//! thread may read meanwhile.

#![allow(clippy::disallowed_methods)]

use qola_build::HipBuild;

const HOST: &str = "x86_64-unknown-linux-gnu";

/// Every variant cc knows, each with a flag of its own (two for the plain one, one quoted).
fn set_all(target: &str) {
    let target_u = target.replace(['-', '.'], "_");
    let vars = [
        ("CXXFLAGS".to_string(), "-DPLAIN_1 '-DPLAIN 2'"),
        ("HOST_CXXFLAGS".to_string(), "-DKIND_HOST"),
        ("TARGET_CXXFLAGS".to_string(), "-DKIND_TARGET"),
        (format!("CXXFLAGS_{target_u}"), "-DTRIPLE_UNDERSCORED"),
        (format!("CXXFLAGS_{target}"), "-DTRIPLE"),
    ];
    for (name, value) in vars {
        // SAFETY: the only test of this binary; no other thread reads the environment.
        unsafe { std::env::set_var(name, value) };
    }
}

/// The flags from the environment, in order, as `cc` puts them into its compiler command.
fn cc_flags(target: &str) -> Vec<String> {
    let tool = cc::Build::new()
        .cpp(true)
        .target(target)
        .host(HOST)
        .opt_level(0)
        .cargo_metadata(false)
        .get_compiler();
    tool.args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .filter(|a| a.starts_with("-D") || a.starts_with("'-D") || a.starts_with("2"))
        .collect()
}

/// The same flags as they appear in qola's compile command.
fn qola_flags(out: &std::path::Path, project: &qola_tests::HipProject) -> Vec<String> {
    let plan = HipBuild::new()
        .compiler(qola_tests::fake_hipcc())
        .files(&project.sources)
        .include(&project.include)
        .arch("gfx90a")
        .cache_dir(out.join("cache"))
        .out_dir(out.join("out"))
        .cargo_metadata(false)
        .try_plan("flags")
        .unwrap_or_else(|e| panic!("{e}"));
    plan.units[0]
        .command
        .iter()
        .filter(|a| a.starts_with("-D") || a.starts_with("'-D") || a.starts_with("2"))
        .cloned()
        .collect()
}

#[test]
fn cxxflags_variants_are_combined_exactly_as_cc_combines_them() {
    let tmp = tempfile::tempdir().unwrap();
    let project = qola_tests::HipProject::create(&tmp.path().join("src"));
    for (target, shell_escaped) in [
        (HOST, false),
        (HOST, true),
        ("aarch64-unknown-linux-gnu", false),
    ] {
        set_all(target);
        // SAFETY: as above.
        unsafe {
            std::env::set_var("HOST", HOST);
            std::env::set_var("TARGET", target);
            std::env::set_var(
                "CC_SHELL_ESCAPED_FLAGS",
                if shell_escaped { "1" } else { "0" },
            );
        }
        let expected = cc_flags(target);
        assert!(
            expected.len() >= 4,
            "{target}: cc used {expected:?}: the test sets nothing cc reads"
        );
        let ours = qola_flags(tmp.path(), &project);
        assert_eq!(ours, expected, "{target}, shell-escaped {shell_escaped}");
    }
}
