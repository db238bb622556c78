//! AITER's own modules from the real tree (the amd-aiter wheel as git repositories, prepared
//! with qola's series): code generation, flags, hsa embedding, with the composable_kernel
//! toolchain from `tools/sid-hipcc-setup` (Debian sid's hipcc 7.0 / HIP 6.4 / clang 21).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::prepared_aiter as prepared;
use qola_build::HipToolchain;
use qola_build::aiter::{AiterModuleSpec, embed_hsa, prepare_module};

/// A manifest entry; `receipt: None` keeps the receipts of AITER's own recipe.
fn module(
    name: &str,
    receipt: Option<i64>,
    drop_directions: &[&str],
) -> qola_build::manifest::Module {
    let receipt = receipt
        .map(|r| format!("receipt = {r}\n"))
        .unwrap_or_default();
    let text = format!(
        "[[modules]]\nname = \"{name}\"\n{receipt}drop_directions = {:?}\n",
        drop_directions
    );
    let manifest = qola_build::Manifest::from_str_at(&text, Path::new("test.toml")).unwrap();
    manifest.modules[0].clone()
}

/// The file names CK's generator lists for `direction` at `receipt` for gfx942.
fn ck_list(root: &Path, direction: &str, receipt: i64, out: &Path) -> Vec<String> {
    let list = out.join(format!("{direction}.list"));
    let status = Command::new("python3")
        .arg(root.join("3rdparty/composable_kernel/example/ck_tile/01_fmha/generate.py"))
        .args([
            "-d",
            direction,
            "--receipt",
            &receipt.to_string(),
            "--targets",
            "gfx942",
            "--list_blobs",
        ])
        .arg(&list)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .status()
        .unwrap();
    assert!(status.success());
    let mut names: Vec<String> = std::fs::read_to_string(&list)
        .unwrap()
        .lines()
        .map(|l| {
            Path::new(l)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn names(files: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// AITER's own recipe (CK at receipt 600) through qola's code generation.
#[test]
fn code_generation_at_receipt_600_lists_exactly_what_cks_generator_lists() {
    let (Some(root), Some(hipcc)) = (prepared(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let fwd = common::prepare_gfx942_module(
        &root,
        &hipcc,
        &module("libmha_fwd", None, &["fwd_splitkv", "batch_prefill"]),
        None,
        tmp.path(),
    );
    let ck_fwd = &fwd.generated[0];
    assert!(
        ck_fwd.command.contains("-d fwd --receipt 600"),
        "{}",
        ck_fwd.command
    );
    let listed = ck_list(&root, "fwd", 600, tmp.path());
    assert_eq!(listed.len(), 2693, "2,692 gfx9 instances and the API file");
    assert_eq!(names(&ck_fwd.files), listed);

    let bwd = common::prepare_gfx942_module(
        &root,
        &hipcc,
        &module("libmha_bwd", None, &[]),
        None,
        tmp.path(),
    );
    let ck_bwd = &bwd.generated[0];
    assert!(
        ck_bwd.command.contains("-d bwd --receipt 600"),
        "{}",
        ck_bwd.command
    );
    assert_eq!(names(&ck_bwd.files), ck_list(&root, "bwd", 600, tmp.path()));
    // Nothing was written into the tree (no __pycache__, no generated file).
    for repo in [root.clone(), root.join("3rdparty/composable_kernel")] {
        let status = common::git(
            &repo,
            &[
                "status",
                "--porcelain",
                "--ignored",
                "--untracked-files=all",
            ],
        );
        let new: Vec<&str> = status
            .lines()
            .filter(|l| l.starts_with("??") || l.starts_with("!!"))
            .collect();
        assert!(new.is_empty(), "{}: {new:?}", repo.display());
    }

    // Unchanged inputs: the generators do not run again, and no file is rewritten.
    let again = common::prepare_gfx942_module(
        &root,
        &hipcc,
        &module("libmha_fwd", None, &["fwd_splitkv", "batch_prefill"]),
        None,
        tmp.path(),
    );
    assert!(again.generated.iter().all(|g| !g.ran));
}

/// The flags of one CK instance, as AITER builds it (`aiter/jit/core.py` and
/// `aiter/jit/utils/cpp_extension.py` at 05a0d1f, with libmha_fwd's optCompilerConfig entry),
/// for HIP 6.4.43484: `cpp_extension`'s `-DWITH_HIP`, `-fPIC -std=c++20`, `flags_cc` `-O3
/// -std=c++20`, `COMMON_HIP_FLAGS` and `COMMON_HIPCC_FLAGS` (visibility hidden); `core.py`'s
/// list for HIP > 6.2.41133 (sorted, each `-mllvm` flag probed: clang 21 does not know
/// `-amdgpu-coerce-illegal-types`), the entry's `flags_extra_hip`, then `-fno-gpu-rdc`. qola
/// adds `-x hip`, its `--offload-arch`, and `-mllvm -amdgpu-function-calls=true` after AITER's
/// inline-all pair (see `qola_build::aiter`).
const EXPECTED_FLAGS: &[&str] = &[
    "-x hip",
    "-fPIC",
    "-O3",
    "-DWITH_HIP",
    "-std=c++20",
    "-D__HIP_PLATFORM_AMD__=1",
    "-DUSE_ROCM=1",
    "-DHIPBLAS_V2",
    "-DCUDA_HAS_FP16=1",
    "-D__HIP_NO_HALF_OPERATORS__=1",
    "-D__HIP_NO_HALF_CONVERSIONS__=1",
    "-mcmodel=large",
    "-fno-unique-section-names",
    "-ffunction-sections",
    "-fdata-sections",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
    "-DCK_TILE_FLOAT_TO_BFLOAT16_DEFAULT=2",
    "-DCK_TILE_FMHA_FWD_FAST_EXP2=1",
    "-DCK_TILE_FMHA_FWD_SPLITKV_API=1",
    "-DLEGACY_HIPBLAS_DIRECT",
    "-DUSE_PROF_API=1",
    "-D__HIP_PLATFORM_HCC__=1",
    "-U__HIP_NO_HALF_CONVERSIONS__",
    "-U__HIP_NO_HALF_OPERATORS__",
    "-Wno-macro-redefined",
    "-Wno-missing-template-arg-list-after-template-kw",
    "-Wno-switch-bool",
    "-Wno-undefined-func-template",
    "-Wno-unused-result",
    "-Wno-vla-cxx-extension",
    "-fgpu-flush-denormals-to-zero",
    "-fno-offload-uniform-block",
    "-mllvm --amdgpu-kernarg-preload-count=16",
    "-mllvm --lsr-drop-solution=1",
    "-mllvm -amdgpu-early-inline-all=true",
    "-mllvm -amdgpu-function-calls=false",
    "-mllvm -enable-post-misched=0",
    "-mllvm -amdgpu-function-calls=true",
    "-fno-gpu-rdc",
    "--offload-arch=gfx942",
];

#[test]
fn the_plan_gives_one_instance_aiters_flags() {
    let (Some(root), Some(hipcc)) = (prepared(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let m = module("libmha_fwd", Some(700), &["fwd_splitkv", "batch_prefill"]);
    let aiter =
        common::prepare_gfx942_module(&root, &hipcc, &m, Some("*_d128_bf16_batch_*"), tmp.path());
    assert_eq!(
        aiter.dropped_flags,
        ["-mllvm -amdgpu-coerce-illegal-types=1"]
    );
    let plan = aiter
        .hip_build()
        .arch("gfx942")
        .cache_dir(tmp.path().join("cache"))
        .out_dir(tmp.path().join("out"))
        .cargo_metadata(false)
        .try_plan("libmha_fwd")
        .unwrap_or_else(|e| panic!("{e}"));
    let unit = plan
        .units
        .iter()
        .find(|u| {
            u.source
                .to_string_lossy()
                .contains("fmha_fwd_d128_bf16_batch")
        })
        .expect("a bf16 hd128 instance");
    // Everything but the compiler, includes, depfile, output and source (and qola's own
    // `-fdebug-compilation-dir=.`, which keeps debug information free of the compile's
    // directory, and the unit's `-cuid=`). Every path is a name: under the tree (`aiter/`) or the generated code (`gen/`).
    let mut flags = Vec::new();
    let mut words = unit.command[1..].iter();
    while let Some(w) = words.next() {
        match w.as_str() {
            "-I" | "-MF" | "-o" | "-c" | "-x" | "-mllvm" => {
                let value = words.next().unwrap();
                if w == "-I" {
                    assert!(
                        value.starts_with("aiter/") || value.starts_with("gen/"),
                        "{value}"
                    );
                }
                if !matches!(w.as_str(), "-I" | "-MF" | "-o" | "-c") {
                    flags.push(format!("{w} {value}"));
                }
            }
            // qola's own: debug information free of the compile's directory, the unit's CUID.
            "-MD" | "-fdebug-compilation-dir=." => {}
            w if w.starts_with("-cuid=") => {}
            _ => flags.push(w.clone()),
        }
    }
    let mut expected: Vec<String> = EXPECTED_FLAGS.iter().map(|s| s.to_string()).collect();
    flags.sort();
    flags.dedup();
    expected.sort();
    expected.dedup();
    assert_eq!(flags, expected);
    let command = unit.command.join(" ");
    assert!(
        command.contains("-mllvm -amdgpu-function-calls=false -mllvm -enable-post-misched=0 -mllvm -amdgpu-function-calls=true")
            || command.find("-amdgpu-function-calls=true") > command.find("-amdgpu-function-calls=false"),
        "the override comes last: {command}"
    );
}

#[test]
fn hsa_embedding_holds_every_code_object_of_each_architecture() {
    let Some(root) = prepared() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let archs = ["gfx942".to_string(), "gfx950".to_string()];
    let embedded = embed_hsa(&root, &archs, &["fmha_v3_fwd".to_string()], tmp.path()).unwrap();
    let mut on_disk = Vec::new();
    for arch in &archs {
        let mut count = 0;
        let mut stack = vec![root.join("hsa").join(arch).join("fmha_v3_fwd")];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else if e.path().extension().is_some_and(|x| x == "co") {
                    on_disk.push(e.metadata().unwrap().len());
                    count += 1;
                }
            }
        }
        assert!(count > 0, "{arch} has code objects");
        assert!(
            embedded.per_arch.contains(&(arch.clone(), count)),
            "{:?}",
            embedded.per_arch
        );
    }
    assert!(!on_disk.is_empty());
    assert_eq!(embedded.blobs, on_disk.len());
    assert_eq!(embedded.bytes, on_disk.iter().sum::<u64>());
    // The header itself says the same: one alignas(4096) array per code object, sized to it.
    let header = std::fs::read_to_string(&embedded.header).unwrap();
    let sizes: Vec<u64> = header
        .lines()
        .filter(|l| l.starts_with("alignas(4096)"))
        .map(|l| {
            l.split('[')
                .nth(1)
                .unwrap()
                .split(']')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(sizes.len(), on_disk.len());
    assert_eq!(sizes.iter().sum::<u64>(), embedded.bytes);
    assert!(
        header.contains("\"fmha_v3_fwd/MI300/"),
        "keys are relative to hsa/gfx942/"
    );
}

#[test]
fn a_toolchain_too_old_for_composable_kernel_is_one_clear_line() {
    let hipcc = Path::new("/usr/bin/hipcc");
    if !hipcc.is_file() {
        return;
    }
    let toolchain = HipToolchain::identify(hipcc).unwrap();
    let e = qola_build::aiter::check_ck_toolchain(&toolchain).unwrap_err();
    let message = e.to_string();
    assert!(
        message.starts_with("composable_kernel needs HIP >= 6.0; found 5.2 at /usr/bin/hipcc")
            && message.contains("tools/sid-hipcc-setup")
            && !message.contains('\n'),
        "{message}"
    );
}

/// A manifest's `[[mha_fwd_variants]]` narrow CK's forward generation to exactly the instances
/// of those variants (checked against CK's own list at the same receipt), in one generator run.
#[test]
fn forward_variants_generate_exactly_their_instances() {
    let (Some(root), Some(hipcc)) = (prepared(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let manifest = qola_build::Manifest::from_str_at(
        "[[modules]]\nname = \"libmha_fwd\"\nreceipt = 700\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n[[mha_fwd_variants]]\ndtype = \"bf16\"\nhas_mask = false\nhas_lse = true\nhas_skip = false\nhas_sink = false\n",
        Path::new("variants.toml"),
    )
    .unwrap();
    let variants = manifest.variant_filters().unwrap();
    let archs = ["gfx942".to_string()];
    let fwd = prepare_module(&AiterModuleSpec {
        root: &root,
        module: &manifest.modules[0],
        archs: &archs,
        gen_dir: tmp.path(),
        cache: &qola_tests::fixtures_dir().join("cache"),
        ck_filter: None,
        variants: &variants,
        compiler: Some(&hipcc),
        toolchain: None,
        cargo_metadata: false,
        registry: None,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let expected: Vec<String> = ck_list(&root, "fwd", 700, tmp.path())
        .into_iter()
        .filter(|n| {
            n == "fmha_fwd_api.cpp"
                || n.contains("_bf16_") && n.contains("_nmask_") && n.contains("_lse_")
        })
        .collect();
    assert!(expected.len() > 10, "{expected:?}");
    assert_eq!(names(&fwd.generated[0].files), expected);
}
