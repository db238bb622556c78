//! Benchmark: `qola build` (QoLA's command, qola's incremental pipeline) on the real AITER tree
//! with the composable_kernel toolchain of `tools/sid-hipcc-setup`, in one run:
//!
//! 1. unit counts of a TransformerEngine-shaped manifest (libmha_fwd + libmha_bwd, receipt 700,
//!    gfx942) without variants, with TE's `[[mha_fwd_variants]]`/`[[mha_bwd_variants]]`, and
//!    with a narrower bf16-only declaration, from `qola plan` (code generation only);
//! 2. a narrow forward build (`NARROW_FWD_FILTER`) on an empty object cache (cold), then: the
//!    same build again (no-op), a new namespace, a patch that edits `csrc/include/mha_fwd.h`,
//!    each with its units compiled, its time, its ratio to the cold build, and the files it
//!    wrote in the output directory;
//! 3. TransformerEngine's FP4 GEMM manifest (`libgemm_a4w4_blockscale` narrowed by
//!    `NARROW_GEMM_FILTER`, `libgemm_a4w4_asm`, gfx950): cold, then again, with units compiled,
//!    the compiles' CPU time, wall time and the ratio to cold.
//!
//! ```text
//! tools/sid-hipcc-setup
//! cargo run --release -p qola-examples --example bench_qola_build
//! ```
//!
//! Works in `target/qola-fixtures/bench-qola-build` (its own checkout, cache and output).

use std::path::{Path, PathBuf};
use std::time::Instant;

use qola_build::{OutputBuild, Prepare};
use qola_tests::{NARROW_FWD_FILTER, NARROW_GEMM_FILTER};

const TE_VARIANTS: &str = "
[[mha_fwd_variants]]
dtype = [\"bf16\", \"fp16\"]
has_lse = true
has_skip = false
has_sink = false

[[mha_bwd_variants]]
dtype = [\"bf16\", \"fp16\"]
";

const BF16_VARIANTS: &str = "
[[mha_fwd_variants]]
dtype = \"bf16\"
has_lse = true
has_skip = false
has_sink = false
has_dropout = false

[[mha_bwd_variants]]
dtype = \"bf16\"
has_dropout = false
deterministic = false
";

struct Bench {
    dir: PathBuf,
    real: qola_tests::RealAiter,
}

impl Bench {
    fn manifest(
        &self,
        name: &str,
        namespace: &str,
        patches: Option<&Path>,
        extra: &str,
    ) -> PathBuf {
        let path = self.dir.join(format!("{name}.toml"));
        let patches = patches
            .map(|p| format!("patches_dir = \"{}\"\n", p.display()))
            .unwrap_or_default();
        std::fs::write(
            &path,
            format!(
                "[qola]\naiter_commit = \"{}\"\naiter_url = \"{}\"\nnamespace = \"{namespace}\"\n{patches}\n[build]\narchitectures = [\"gfx942\"]\n\n[[modules]]\nname = \"libmha_fwd\"\nmode = \"cpp_itfs\"\nreceipt = 700\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n\n[[modules]]\nname = \"libmha_bwd\"\nmode = \"cpp_itfs\"\nreceipt = 700\n{extra}",
                self.real.commit,
                self.real.upstream.display()
            ),
        )
        .unwrap();
        path
    }

    fn build(&self, manifest: &Path, groups: &[String]) -> OutputBuild {
        let mut prepare = Prepare::new();
        prepare
            .manifest(manifest)
            .root(self.dir.join("aiter"))
            .cache_dir(self.dir.join("cache"));
        let mut build = OutputBuild::new(prepare, self.dir.join("out"));
        build.groups(groups);
        build
    }
}

/// Files under `dir` (recursively) with their mtimes.
fn mtimes(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), meta.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn main() {
    let hipcc = qola_tests::sid_hipcc().expect("the sid toolchain: run tools/sid-hipcc-setup");
    let real = qola_tests::real_aiter().expect("the amd-aiter wheel (see README)");
    let dir = qola_tests::fixtures_dir().join("bench-qola-build");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // SAFETY: single-threaded here; the library reads these through its environment helper.
    unsafe {
        std::env::set_var("HIPCC", &hipcc);
        std::env::set_var("QOLA_CACHE_DIR", dir.join("cache"));
        std::env::remove_var("GPU_ARCHS");
    }
    let b = Bench { dir, real };

    println!("1. units per module (qola plan, gfx942, receipt 700)\n");
    println!("| manifest | libmha_fwd units | libmha_bwd units |\n|---|---|---|");
    for (name, extra) in [
        ("receipt 700 alone", ""),
        ("TE's variants", TE_VARIANTS),
        ("bf16, no dropout, non-deterministic", BF16_VARIANTS),
    ] {
        let m = b.manifest("plan", "te", None, extra);
        let plans = b
            .build(&m, &[])
            .try_plan()
            .unwrap_or_else(|e| panic!("{e}"))
            .modules;
        println!(
            "| {name} | {} | {} |",
            plans[0]
                .compile
                .as_ref()
                .expect("a compile plan")
                .units
                .len(),
            plans[1]
                .compile
                .as_ref()
                .expect("a compile plan")
                .units
                .len()
        );
    }

    println!("\n2. a narrow forward (NARROW_FWD_FILTER), 2 compiles at once\n");
    // SAFETY: as above.
    unsafe { std::env::set_var("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER) };
    // Only the forward module: a narrowed backward is not link-complete.
    let fwd_only = |name: &str, ns: &str, patches: Option<&Path>| {
        let text = b.manifest(name, ns, patches, "");
        let t = std::fs::read_to_string(&text).unwrap();
        let cut = t.find("\n[[modules]]\nname = \"libmha_bwd\"").unwrap();
        std::fs::write(&text, &t[..cut]).unwrap();
        text
    };
    let te = fwd_only("te", "te", None);
    let series = b.dir.join("series");
    std::fs::create_dir_all(&series).unwrap();
    for entry in
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-build/patches/aiter"))
            .unwrap()
    {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), series.join(entry.file_name())).unwrap();
    }
    let header = std::process::Command::new("git")
        .args(["show", "HEAD:csrc/include/mha_fwd.h"])
        .current_dir(&b.real.upstream)
        .output()
        .unwrap();
    let header = String::from_utf8(header.stdout).unwrap();
    let first: Vec<&str> = header.lines().take(3).collect();
    std::fs::write(
        series.join("0100-bench-edit-mha-fwd-header.patch"),
        format!(
            "diff --git a/csrc/include/mha_fwd.h b/csrc/include/mha_fwd.h\n--- a/csrc/include/mha_fwd.h\n+++ b/csrc/include/mha_fwd.h\n@@ -1,3 +1,4 @@\n {}\n+// bench_qola_build: a one-line change\n {}\n {}\n",
            first[0], first[1], first[2]
        ),
    )
    .unwrap();
    let steps: Vec<(&str, PathBuf)> = vec![
        ("cold (empty object cache)", te.clone()),
        ("again, nothing changed", te.clone()),
        ("namespace te → te2", fwd_only("te2", "te2", None)),
        (
            "a patch edits csrc/include/mha_fwd.h",
            fwd_only("te2p", "te2", Some(&series)),
        ),
    ];
    println!(
        "| step | units compiled | wall time | ratio to cold | files written in the output directory |\n|---|---|---|---|---|"
    );
    let mut cold = None;
    for (what, manifest) in steps {
        let before = mtimes(&b.dir.join("out"));
        let start = Instant::now();
        let outcome = b
            .build(&manifest, &[])
            .try_build()
            .unwrap_or_else(|e| panic!("{e}"));
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(outcome.record.summary.failed, 0, "{:?}", outcome.record);
        let after = mtimes(&b.dir.join("out"));
        let written = after.iter().filter(|f| !before.contains(f)).count();
        let cold_secs = *cold.get_or_insert(secs);
        println!(
            "| {what} | {} of {} | {secs:.2} s | {:.4} | {written} |",
            outcome.compiled,
            outcome.units,
            secs / cold_secs
        );
    }

    println!("\n3. TE's FP4 GEMM (NARROW_GEMM_FILTER), gfx950, 2 compiles at once\n");
    // SAFETY: as above.
    unsafe { std::env::set_var("QOLA_CK_FILTER_LIBGEMM_A4W4_BLOCKSCALE", NARROW_GEMM_FILTER) };
    let gemm = qola_tests::ManifestText::te_gemm(&b.real.commit, &b.real.upstream)
        .write(b.dir.join("te_gemm.toml"));
    println!(
        "| step | units compiled | compiles' CPU time | wall time | ratio to cold (wall) |\n|---|---|---|---|---|"
    );
    let mut cold = None;
    for what in ["cold (no GEMM object cached)", "again, nothing changed"] {
        let (cpu, start) = (qola_tests::children_cpu(), Instant::now());
        let outcome = b
            .build(&gemm, &[])
            .try_build()
            .unwrap_or_else(|e| panic!("{e}"));
        let (cpu, secs) = (
            (qola_tests::children_cpu() - cpu).as_secs_f64(),
            start.elapsed().as_secs_f64(),
        );
        assert_eq!(outcome.record.summary.failed, 0, "{:?}", outcome.record);
        let cold_secs = *cold.get_or_insert(secs);
        println!(
            "| {what} | {} of {} | {cpu:.1} s | {secs:.2} s | {:.4} |",
            outcome.compiled,
            outcome.units,
            secs / cold_secs
        );
    }
}
