//! Fixtures for qola's tests, benchmarks and quickstart: real git repositories, never mocks.
//!
//! * [`Demo`]: a small AITER-shaped upstream (a superproject with a `3rdparty/composable_kernel`
//!   submodule, a binary hsa code object, an executable script) and a demo patch series touching
//!   the superproject, the submodule and both.
//! * [`real_aiter`]: the real AITER source tree from the PyPI wheel `amd-aiter==0.1.7.post2.dev18`
//!   as a local git repository with composable_kernel as a real submodule, built once and cached
//!   under `target/qola-fixtures/`.
//! * [`RedisServer`], [`copy_tracked`]: a real Redis for ccache's remote storage, and a checkout
//!   copied to another path (a second machine).
//!
//! * [`docs`]: the code blocks of README.md and docs/, for tests that run them as written.
//!
//! Fixtures panic on failure: they are test support, not library code.

use std::path::{Path, PathBuf};
use std::process::Command;

mod browser;
mod demo;
pub mod docs;
mod farm;
mod hip;
mod manifest;
mod nested;
mod phase;
mod real;
mod team;

pub use browser::{rendered_dom, screenshot};
pub use demo::{DEMO_KERNEL, DEMO_PATCHES, Demo, code_object as demo_code_object};
pub use farm::LoopbackFarm;
pub use hip::{BuiltinKernels, HipProject};
pub use manifest::ManifestText;
pub use nested::{
    build_script_out_dir, built_executable, nested_cargo, nested_cargo_in, nested_target,
    qola_sys_dependent,
};
pub use phase::{resume, wait_until_stopped};
pub use real::{RealAiter, real_aiter};
pub use team::{HttpCache, RedisServer, copy_tracked, tool};

/// The CPU time (user + system) of this process's children that have ended, so far: what a
/// benchmark's compiles cost, from the difference around them.
pub fn children_cpu() -> std::time::Duration {
    // SAFETY: getrusage fills the zeroed struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let time = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// A narrow AITER forward for gfx942 (CK's `--filter`): 4 CK instances, bf16, head dim 128,
/// batch mode, LSE, with and without the causal mask.
pub const NARROW_FWD_FILTER: &str =
    "fmha_fwd_d128_bf16_batch_*_qr_async_vr_ps*ddv_nlogits_nbias_*mask_lse_ndropout_*";

/// Two of [`NARROW_FWD_FILTER`]'s instances (with and without the mask, no skip): still one
/// batch, at about half its compile. For the tests that must compile the forward from an empty
/// cache (a claim that counts compiles or shows where they ran), where the instance count
/// is not what they check.
pub const TWO_INSTANCE_FWD_FILTER: &str =
    "fmha_fwd_d128_bf16_batch_*_qr_async_vr_psddv_nlogits_nbias_*mask_lse_ndropout_nskip_*";

/// A narrow a4w4 blockscale GEMM for gfx950 (its generator's `--filter`, qola's port; `|`
/// separates alternatives): AITER's default tile (256x64x128x128, 1x32x1x8 C transfer) and
/// its cheapest tuned one to compile (256x32x128x128: 31 s of CPU per unit with the sid
/// toolchain, against ~65 s for 256x64x256x128), each in bf16 and fp16 output, 4 units of the
/// ~60 in AITER's list.
pub const NARROW_GEMM_FILTER: &str = "*256x64x128x128_*1x32x1x8*|*256x32x128x128_*";

/// A narrow AITER backward, in CK's three-part form (dot(dO, O) @ convert dQ @ dQ/dK/dV): bf16,
/// head dim 128, batch mode, unpadded, non-deterministic, with and without the mask, for CK's
/// generator and AITER's pre/post kernels alike. Such a library is not link-complete: the asm
/// v3 API calls ~40 pre/post kernels this leaves out (all 96 would take ~10 min on 2 cores).
pub const NARROW_BWD_FILTER: &str = "*d128_bf16_*batch_o2_npad*@*d128_bf16_b64x0_batch_o2_npad_ndeterministic*@*d128_bf16_batch_*_maxq0_npad_nbias_ndbias_*mask_ndropout_ndeterministic*";

/// Runs `git` in `dir` with a fixed identity and no user or system config; returns stdout.
/// Panics with the command and its stderr when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = git_command(dir, args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run git {args:?}: {e}"));
    if !output.status.success() {
        panic!(
            "git {args:?} in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_string()
}

/// A `git` command in `dir` with the fixtures' environment (fixed identity and dates, no user
/// or system config, local file transport allowed for submodules).
pub fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .args([
            "-c",
            "user.name=qola fixtures",
            "-c",
            "user.email=fixtures@qola.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
            "-c",
            "core.autocrlf=false",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
    for name in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"] {
        command.env_remove(name);
    }
    command
}

/// Records `commit` as the submodule at `path` in `repo`'s index (a gitlink, no checkout).
pub fn add_gitlink(repo: &Path, commit: &str, path: &str) {
    git(
        repo,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{commit},{path}"),
        ],
    );
}

/// Writes `content` to `root/path`, creating parent directories.
pub fn write(root: &Path, path: &str, content: impl AsRef<[u8]>) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().expect("a file path has a parent"))
        .unwrap_or_else(|e| panic!("cannot create the parent of {}: {e}", full.display()));
    std::fs::write(&full, content)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", full.display()));
}

/// The files directly in `dir` whose extension is `extension`, sorted.
pub fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == extension))
        .collect();
    files.sort();
    files
}

/// Whether this run is in CI (`CI=true`), where missing tools and downloads fail the tests.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Whether a HIP compiler is on `PATH` (or named by `HIPCC`). Outside CI a test without one
/// says so and returns; in CI (`CI=true`) a missing compiler is a failure.
pub fn hipcc_available() -> bool {
    let found = std::env::var_os("HIPCC").is_some() || which_hipcc();
    if !found {
        assert!(
            !in_ci(),
            "CI: hipcc is required (apt-get install hipcc libamdhip64-dev rocm-device-libs)"
        );
        eprintln!("skipping: no hipcc (apt-get install hipcc libamdhip64-dev rocm-device-libs)");
    }
    found
}

fn which_hipcc() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("hipcc").is_file()))
}

/// The stand-in compiler `tests/fake/hipcc` (Python): it answers like hipcc, writes depfiles from
/// `#include` lines and real objects through the system C compiler, so qola's caching, header
/// tracking, launcher and link step are tested where ROCm is missing.
pub fn fake_hipcc() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fake/hipcc")
}

/// The stand-in for ck-jit's interceptor (`tests/fake/ck-jit-hipcc`: ck-jit's contract, each
/// call recorded in `$CK_JIT_TMP_DIR/calls.ndjson`), for CI, which cannot fetch ck-jit.
pub fn fake_ck_jit_interceptor() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fake/ck-jit-hipcc")
}

/// The HIP compiler that can compile composable_kernel: `QOLA_SID_HIPCC`, else the wrapper
/// `tools/sid-hipcc-setup` leaves in `target/qola-fixtures/sid-hipcc`. Outside CI a test without
/// one says so and returns `None`; in CI it is a failure.
pub fn sid_hipcc() -> Option<PathBuf> {
    let found = std::env::var_os("QOLA_SID_HIPCC")
        .map(PathBuf::from)
        .or_else(|| Some(fixtures_dir().join("sid-hipcc")))
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            !in_ci(),
            "CI: the sid toolchain is required (tools/sid-hipcc-setup)"
        );
        eprintln!("skipping: no composable_kernel toolchain; run tools/sid-hipcc-setup");
    }
    found
}

/// Debian experimental's HIP 7.2 toolchain (`tools/sid-hipcc-setup --rocm7`, for AITERs that need
/// ROCm 7): `QOLA_ROCM7_HIPCC`, else `target/qola-fixtures/rocm7-hipcc`. Optional everywhere
/// (CI reaches no AITER that needs it): `None` says so.
pub fn rocm7_hipcc() -> Option<PathBuf> {
    let found = std::env::var_os("QOLA_ROCM7_HIPCC")
        .map(PathBuf::from)
        .or_else(|| Some(fixtures_dir().join("rocm7-hipcc")))
        .filter(|p| p.is_file());
    if found.is_none() {
        eprintln!("skipping: no ROCm 7 toolchain; run tools/sid-hipcc-setup --rocm7");
    }
    found
}

/// The AITER checkout at `commit` (a short SHA as the variable names it) that
/// `QOLA_TEST_AITER_<commit>` names, for tests at pins CI cannot fetch; `None` (the test says it
/// skipped) when unset.
pub fn aiter_at(commit: &str) -> Option<PathBuf> {
    let name = format!("QOLA_TEST_AITER_{commit}");
    match std::env::var_os(&name).map(PathBuf::from) {
        Some(dir) if dir.join("aiter/jit/core.py").is_file() => Some(dir),
        Some(dir) => panic!("{name}={} is not an AITER checkout", dir.display()),
        None => {
            eprintln!("skipped: set {name} to an AITER checkout at {commit} to run this");
            None
        }
    }
}

/// A ROCm directory around the sid toolchain's `hipcc` (the wrapper): `bin/hipcc`, and the sid
/// root's `lib`, `share`, the device libraries (`amdgcn`) and ROCm's own headers (`include/hip`,
/// `hsa`, `amd_comgr`: not the whole `/usr/include`, which as `-isystem` would shadow the C
/// library's), as a tool expects of `$ROCM_PATH` (ck-jit links its fake ROCm's entries to
/// these). Made in the fixtures once.
pub fn sid_rocm(hipcc: &Path) -> PathBuf {
    let sid_root = hipcc
        .parent()
        .expect("the wrapper's directory")
        .join("sid-root");
    let rocm = fixtures_dir().join("sid-rocm");
    let usr = sid_root.join("usr");
    let clang = std::fs::read_dir(usr.join("lib"))
        .expect("the sid root's /usr/lib")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("llvm-"))
        })
        .max()
        .expect("an llvm-<n> in the sid root");
    let device_libs = std::fs::read_dir(clang.join("lib/clang"))
        .expect("clang's resource directories")
        .filter_map(|e| e.ok().map(|e| e.path().join("amdgcn")))
        .find(|p| p.is_dir())
        .expect("the device libraries in the sid root");
    let links: Vec<(PathBuf, PathBuf)> = vec![
        (rocm.join("bin/hipcc"), hipcc.to_path_buf()),
        (rocm.join("lib"), usr.join("lib")),
        (rocm.join("share"), usr.join("share")),
        (rocm.join("amdgcn"), device_libs),
        (rocm.join("include/hip"), usr.join("include/hip")),
        (rocm.join("include/hsa"), usr.join("include/hsa")),
        (
            rocm.join("include/amd_comgr"),
            usr.join("include/amd_comgr"),
        ),
    ];
    for (link, to) in links {
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        if std::fs::read_link(&link).ok().as_deref() != Some(to.as_path()) {
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&to, &link).unwrap();
        }
    }
    rocm
}

/// Runs `program` in the sid toolchain's root (next to `hipcc`, where its HIP runtime is), with
/// `/tmp` and each of `binds` visible at the same paths.
pub fn in_sid_root(hipcc: &Path, program: &Path, binds: &[&Path]) -> std::process::Output {
    sid_root_command(hipcc, program, binds)
        .output()
        .unwrap_or_else(|e| panic!("bwrap {}: {e}", program.display()))
}

/// The command [`in_sid_root`] runs, for callers that add arguments.
pub fn sid_root_command(hipcc: &Path, program: &Path, binds: &[&Path]) -> Command {
    // The wrapper `<name>-hipcc` runs in `<name>-root` (sid, rocm7).
    let name = hipcc
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix("-hipcc"))
        .unwrap_or("sid");
    let sid_root = hipcc
        .parent()
        .expect("the wrapper's directory")
        .join(format!("{name}-root"));
    let mut command = Command::new("bwrap");
    command
        .arg("--bind")
        .arg(&sid_root)
        .arg("/")
        .args(["--bind", "/tmp", "/tmp", "--dev", "/dev", "--proc", "/proc"]);
    for dir in binds {
        command.arg("--bind").arg(dir).arg(dir);
    }
    command.arg(program);
    command
}

/// Runs `command`, panics with its output unless it succeeds; returns stdout and stderr.
pub fn run_ok(command: &mut Command) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{command:?}: {text}");
    text
}

/// The workspace's `target/qola-fixtures` directory (or `$CARGO_TARGET_DIR/qola-fixtures`).
pub fn fixtures_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        });
    let dir = target.join("qola-fixtures");
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    // Canonical: paths that compilers and ccache see carry no `..`.
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// `command` without the caller's variables whose names start with one of `prefixes` (`QOLA_`
/// always) or equal one of `names`: a test's command sees only what the test sets.
pub fn without_caller_env<'c>(
    command: &'c mut Command,
    prefixes: &[&str],
    names: &[&str],
) -> &'c mut Command {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("QOLA_")
            || prefixes.iter().any(|p| name.starts_with(p))
            || names.contains(&name.as_str())
        {
            command.env_remove(name);
        }
    }
    command
}
