//! Prepare AMD's AITER sources (a pinned commit plus a patch series, submodules such as
//! `3rdparty/composable_kernel` included) from a build script, correctly and incrementally, and
//! compile HIP sources with [`HipBuild`]: only the units whose content (or a header's) changed.
//!
//! ```no_run
//! // in build.rs
//! let aiter = qola_build::prepare_aiter().unwrap_or_else(|e| panic!("{e}"));
//! println!("cargo:rustc-env=AITER_ROOT={}", aiter.root.display());
//! ```
//!
//! A preparation never rewrites a file that already has the right content, so compilers see no
//! change when nothing changed; it never builds a tree other than the one the manifest and the
//! patches describe unless asked to (`QOLA_SKIP_PREPARE=1`); and it never discards local edits
//! without saving them first.
//!
//! # Decision table
//!
//! The one specification of what a preparation does (`prepare::decision::decide` implements it;
//! its unit tests follow it row by row).
//!
//! | state of the tree | action | JSON `action` |
//! |---|---|---|
//! | `QOLA_SKIP_PREPARE=1` | write nothing; use the tree as it is; one warning naming up to 10 paths that differ from the prepared state | `skip-requested` |
//! | no checkout | clone, prepare | `clone` |
//! | `qola status` only: the answer needs a fetch (status never fetches) | nothing; the reason says what needs fetching | `resync` |
//! | a journal left by an interrupted run (killed; see below) | first roll it back (a first clone: finish it), then decide on the tree as it was; the reasons say "finished an interrupted prepare"; nothing qola left is a local edit | `recover` |
//! | `qola status` only: that journal is still there | nothing: says prepare will finish it first | `recover` |
//! | key unchanged, tree == prepared state | nothing: no file written, no mtime changed | `up-to-date` |
//! | no local edits, but the key changed or the tree lost our patches (`reset --hard`, `checkout -- f`, HEAD moved) | prepare; the reasons name what changed: commit, patch added/changed/removed/renamed, manifest field, qola version, patch reverted in tree, HEAD moved | `resync` |
//! | the tree already equals what the new key produces (e.g. `qola diff` output added to the series) | adopt it: write the stamp, rewrite no file | `resync` (reason `adopted`) |
//! | ck-jit's codegen hints left applied in composable_kernel by a ck-jit run that did not end (recognised by content, every variant ck-jit ships), nothing else changed | undo them (through the journal), say so naming the files, prepare; a ck-jit run still going is waited for (its lock) | `resync` (reason `ck-jit-hints`) |
//! | local edits present (ck-jit's hints beside them included) | refuse, change nothing; list the edited paths (20 + a count) and the three ways on: `QOLA_SKIP_PREPARE=1`, `qola diff`, `QOLA_FORCE_PREPARE=1` | `refused` |
//! | `QOLA_FORCE_PREPARE=1` | save local edits first (a patch under `.git/qola/backups/`, path printed), then prepare | `forced` |
//!
//! A path is a **local edit** only when its content, in the work tree or staged in the index,
//! differs from every state qola or git put there: the prepared state, the previously prepared
//! state, the pinned commit, and the repository's current `HEAD`. A path back at the pinned commit's
//! content is our patch undone, not a user's edit. What `git status` would show with the index flags
//! cleared counts: files marked `assume-unchanged` or `skip-worktree`, an executable bit changed
//! under a user's `core.filemode=false`, tracked files behind a directory replaced by a symlink,
//! files whose names are not UTF-8. Commits made in the checkout are not edits: a resync moves `HEAD`
//! back to the pinned commit and keeps each old one as `refs/qola/kept/<id>` (the latest also as
//! `refs/qola/previous-head`) until you delete it. A missing file of a submodule that is not checked
//! out (`git submodule deinit`, a new `git worktree add`) is not an edit either: it is checked out.
//!
//! **Nothing half-done.** Every write of a preparation (work-tree files, each repository's index,
//! `HEAD` and config, a submodule's `.git` link) is first recorded in a journal in
//! `.git/qola/journal/`, with the old content kept there; the stamp, written last, completes it.
//! Any error after the first write undoes every change before it is reported ("the checkout is
//! as it was before this preparation"); a killed run is undone by the next one (a first clone is
//! finished instead), before it looks at the tree.
//!
//! **Nothing of yours is removed without a backup.** Every write of a resync is planned and checked
//! before the first one (names the file system cannot take, symlinks on the way, what is in the
//! way); a failure there names the path and leaves the tree as it was. Untracked files in the way of
//! a path becoming a file or a directory, a symlink that replaced a tracked directory, and the work
//! tree of a submodule the new commit no longer has are moved into
//! `.git/qola/backups/in-the-way-<time>/`; a file that changed between the decision and its
//! replacement (an editor saving it) is copied there first; staged content of a forced run goes to
//! `local-edits-<time>.staged.patch` beside the work-tree edits. The report names each backup and
//! its paths. A refused run writes nothing, not even a changed `origin` URL.
//!
//! # Environment variables
//!
//! Every variable is read through one helper that prints `cargo:rerun-if-env-changed` for it
//! (except `PATH`, as `cc` does); a direct read is a clippy error (`clippy.toml`).
//! An explicit builder argument wins over the variable, which wins over the manifest.
//!
//! | variable | effect |
//! |---|---|
//! | `QOLA_MANIFEST` | manifest file (default: `qola.toml` in `CARGO_MANIFEST_DIR` in a build script, in the current directory otherwise, if present) |
//! | `QOLA_AITER_COMMIT` | AITER commit: full or short SHA, tag, or branch (refreshed from origin on every run) |
//! | `QOLA_AITER_URL` | AITER repository URL or local path (default `https://github.com/ROCm/aiter.git`) |
//! | `QOLA_PATCHES_DIR` | patch series directory: every `*.patch`, in file-name order (none given: a manifest gets qola's own series, compiled in) |
//! | `QOLA_AITER_ROOT` | the checkout (default `<cache>/checkouts/<name>-<hash of the URL>`) |
//! | `QOLA_CACHE_DIR` | qola's cache: default checkouts, stat snapshots, objects (default `$XDG_CACHE_HOME/qola`, else `$HOME/.cache/qola`) |
//! | `QOLA_CACHE_MAX_SIZE` | [`HipBuild`]: the object cache's size limit (`20G`, `500M`, bytes; default 20 GiB or a quarter of its file system), kept by evicting the least recently used objects no running build holds |
//! | `QOLA_SKIP_PREPARE=1` | use the checkout as it is, write nothing (debug with local edits) |
//! | `QOLA_FORCE_PREPARE=1` (or `QOLA_FORCE_AITER_CHECKOUT=1`, TransformerEngine's name) | save local edits as a backup patch, then prepare |
//! | `QOLA_OFFLINE=1`, `CARGO_NET_OFFLINE=true` | never use the network; a missing commit is an error |
//! | `QOLA_GIT` | the `git` used for clone and fetch (default: `git` on `PATH`) |
//! | `XDG_CACHE_HOME`, `HOME` | locate the default cache |
//! | `CARGO_MANIFEST_DIR` | locate the default manifest (build scripts only) |
//! | `HIPCC`, `ROCM_HOME`, `ROCM_PATH`, `HIP_PATH`, `PATH` | [`HipBuild`]: find the HIP compiler, in this order, then TheRock's `rocm-sdk path --root` (ROCm 7's Python packages: the `rocm-sdk` beside qola's executable, else on `PATH`), `hipcc` on `PATH`, `/opt/rocm/core/bin/hipcc`, `/opt/rocm/bin/hipcc`; a variable naming a ROCm without `bin/hipcc` is an error (docs/hip.md) |
//! | `CK_JIT_TMP_DIR`, `CK_JIT_HIPCC`, `CK_JIT_AITER_DIR` | [`OutputBuild`] (`qola build` under ROCm's ck-jit, which sets them): with `CK_JIT_TMP_DIR` set, the `libmha_{fwd,bwd}` libraries are built for ck-jit: CK instances through its interceptor (`$ROCM_PATH/bin/hipcc`), everything else and every probe with `CK_JIT_HIPCC`, paths in the tree named as `CK_JIT_AITER_DIR` names it; `HIPCC` is not used (see docs/qola-build.md, "CK-JIT") |
//! | `QOLA_GPU_ARCHS`, `GPU_ARCHS` | [`HipBuild`]: GPU architectures (`native` = this machine's); `QOLA_GPU_ARCHS` over the manifest's, which are over `GPU_ARCHS` (QoLA's order) |
//! | `QOLA_BUILD_GROUPS`, `QOLA_PREBUILT_DIR_<GROUP>`, `QOLA_AITER_SOURCE_DIR` | [`OutputBuild`] (`qola build`): groups to build, a group's prebuilt libraries, a tree to build as it is |
//! | `QOLA_TIMINGS=1` | [`HipBuild`] (`qola build --timings`): write the timings report of a build that compiles (HTML and Chrome trace next to the log) |
//! | `QOLA_COMPILER_LAUNCHER` | [`HipBuild`]: wraps every compile (`ccache`, `sccache`); `sccache` with a `[dist]` config compiles on an sccache-dist farm |
//! | `SCCACHE_CONF`, `HOME` | [`HipBuild`] with `sccache`: sccache's config (default `$HOME/.config/sccache/config`), read for its `[dist]` section |
//! | `QOLA_FARM_ROOT`, `QOLA_FARM_DRIVER` | [`HipBuild`] on a compile farm with a sandboxed toolchain: its root, and a command on this machine that runs its clang driver |
//! | `MAX_JOBS`, `NUM_JOBS` | [`HipBuild`] (every front door: build script, `qola build`, CMake, Python, ck-jit): compiles at once, by one precedence: `.jobs(n)`, else `MAX_JOBS` (PyTorch's and AITER's name; a whole number, 1 or more), else `NUM_JOBS` (Cargo's `-j`, in a build script), else the CPUs; Cargo's jobserver tokens and the memory cap (`QOLA_JOB_MEMORY_MB`) can only lower it |
//! | `QOLA_JOB_MEMORY_MB` | [`HipBuild`]: memory one compile needs; compiles at once are capped to what `MemAvailable` holds (default: the peak measured last time, else [`HipBuild::memory_per_job`]) |
//! | `CXXFLAGS`, `HOST_CXXFLAGS`/`TARGET_CXXFLAGS`, `CXXFLAGS_<target_with_underscores>`, `CXXFLAGS_<target>`, `CC_SHELL_ESCAPED_FLAGS` | [`HipBuild`]: extra flags, every one that is set, combined as `cc` 1.11 does |
//! | `OUT_DIR` | [`HipBuild`]: where the library, its log and `repro.sh` go |
//! | `QOLA_PYTHON` | [`aiter`]: the Python that runs AITER's and CK's generators (default: the `python3` beside qola's executable, in the venv qola's wheel went into, else `python3` on `PATH`); what the tree's generators need of it (pandas 2.2 or newer from AITER d32b0cb on, numpy, packaging, setuptools) is checked before any runs, one message naming each module, the version found and needed, and the command that fixes it |
//! | `CK_DIR` | [`aiter`]: composable_kernel's location in AITER's recipes (default: the tree's `3rdparty/composable_kernel`) |
//! | `AITER_META_DIR` | [`aiter`]: when it names a directory with a `csrc`, AITER's sources, generators and hsa code objects are read from there (QoLA's resolver); a warning says so |
//! | `AITER_CONFIG_<TABLE>` | [`aiter`]: the tuned table a recipe's `{AITER_CONFIG_<TABLE>_FILE}` names (`AITER_CONFIG_GEMM_A4W4`: the a4w4 blockscale's), as AITER's `core.py` reads it (default: the table `core.py` names in the tree and its `model_configs/` tables); several (a `:`-separated list) are merged as AITER merges them, into qola's cache |
//! | `HIP_KITTENS_DIR` | [`aiter`]: where a module's `third_party = ["HipKittens"]` is (default: the tree's `3rdparty/HipKittens`) |
//! | `ENABLE_CK` | [`aiter`]: as the tree's `core.py` reads it (a recipe's own `-DENABLE_CK=` wins): 0 builds a module without composable_kernel (AITER's CK switch `FAV2_ON` stays off); otherwise a tree without composable_kernel is refused, naming the module |
//! | the variables the tree's `core.py` reads for its flags (`ENABLE_ROPE_POSITIONS_INT32`, `AITER_DISABLE_KERNARG_PRELOAD`, `AITER_FP4x2`, `AITER_ASM_DEBUG`, ...) | [`aiter`]: as that `core.py` reads them; each one it read is tracked, and its answer kept with their values (see the `recipe::core_flags` module docs) |
//! | `QOLA_PREBUILT_URL` | [`OutputBuild`] (`qola build --prebuilt`, over the manifest's `[qola] prebuilt`): the store each module's files are fetched from by its library key before any checkout (see [`aiter::prebuilt`]) |
//! | `QOLA_PUBLISH_URL` | [`OutputBuild`] (`qola build --publish`): the store each module built here from a tree qola prepared is published to |
//! | `QOLA_SIGN_KEY` | [`OutputBuild`] (`qola build --sign-key`, over it): the minisign secret key (owner-only, no password) that signs each archive published |
//! | `QOLA_TRUSTED_KEYS` | [`OutputBuild`] (`qola build --trust`, over it; over the manifest's `[qola] trusted_keys`): the publishers whose signed archives are taken (minisign public keys `RW...` or `.pub` files, `;`/`,`/space-separated); none: archives are not checked for a publisher |
//! | `QOLA_PREBUILT_TIMEOUT` | [`OutputBuild`]: seconds to wait for each answer of a prebuilt store (default 60) |
//! | `QOLA_REGISTRY` | [`OutputBuild`] (`qola build --registry`): a registry in QoLA's format over qola's (see [`aiter::registry`]) |
//! | `QOLA_AITER_KEEP_INLINE_ALL=1` | [`aiter`]: keep AITER's `-amdgpu-function-calls=false` with upstream clang ≥ 20 (minutes per instance instead of seconds) |
//! | any name in a recipe's `os.environ.get(NAME, default)` | [`aiter`]: that recipe value, as AITER reads it |
//! | `QOLA_BATCH` | [`aiter`]: how many composable_kernel instances one translation unit compiles (default 4; `1`: one unit per instance); a batch that fails is compiled again one instance each |
//! | `QOLA_CK_FILTER`, `QOLA_CK_FILTER_<MODULE>` | [`aiter`] and `qola build`: CK's `--filter` for every module, or for one (`QOLA_CK_FILTER_LIBMHA_BWD`, in CK's `a@b@c` form; `QOLA_CK_FILTER_LIBGEMM_A4W4_BLOCKSCALE`, fnmatch on instance names): narrow builds, over the manifest's variants; a module none of whose generators takes a filter gets a warning. One rule ([`aiter::ck_filter`]): the module's own variable, else `qola build --filter`, else `QOLA_CK_FILTER` |
//! | `CCACHE_BASEDIR`, `CCACHE_HASHDIR`, `CCACHE_NOHASHDIR`, `SCCACHE_BASEDIRS` | [`HipBuild`] with ccache or sccache: left as the user set them; unset, qola sets them so that launchers hash paths by name |
//! | `QOLA_TEST_KILL_AT`, `QOLA_TEST_FAIL_AFTER_WRITES` | with the `test-hooks` feature only (qola's own tests): kill a preparation at a named step, fail it after its n-th write |
//!
//! Switches accept `1/true/yes/on` and `0/false/no/off`; anything else is an error. `qola`'s
//! Python face and CMake module also read `QOLA_EXECUTABLE` (the binary to run).
//!
//! # Where things live
//!
//! The default checkout is in qola's cache, outside any package source (a published crate's
//! source is read-only), shared by debug and release builds and `cargo check`, and untouched by
//! `cargo clean`. Inside its git directory, `.git/qola/` holds the stamp, the journal of a
//! preparation while it writes
//! and the backups (local edits of a forced run, what a resync moved out of its way). The lock
//! file sits beside the checkout, for its canonical path: `<parent>/.<name>.qola-lock`. The stat snapshots that make a no-op check fast live in
//! `<cache>/snapshots/`, outside the checkout.

#![deny(missing_docs)]

pub mod aiter;
mod build_script;
mod cache_dir;
mod common;
mod compile;
mod error;
pub mod manifest;
mod prepare;
mod script;

pub use aiter::{BuildOutcome, BuildRecord, GeneratorPlan, ModulePlan, OutputBuild};
pub use common::text::{scaled_size, split_list};
pub use compile::HipToolchain;
pub use compile::{
    BuildStats, CacheUsage, Cleared, CompilePlan, CompileReport, ElsewhereReport, GroupUsage,
    HipBuild, LauncherHits, PlannedJob, PlannedUnit, RemoteFailures, UnitReport,
};
pub use error::{
    AiterError, CompileError, EnvError, Error, ErrorKind, IoError, ManifestError, NoCacheDir,
    PrepareError, Result,
};
pub use manifest::Manifest;
pub use prepare::{
    Action, DEFAULT_AITER_URL, Preparation, Prepare, Reason, ReasonKind, prepare_aiter,
};
pub use script::BuildScript;

/// The GPU architectures to compile for, as [`HipBuild`] resolves them (`QOLA_GPU_ARCHS`,
/// then `manifest_archs`, then `GPU_ARCHS`, then this machine's GPUs), from a build script.
pub fn gpu_archs(manifest_archs: &[String]) -> Result<Vec<String>> {
    let directives = build_script::Directives::new(true);
    Ok(compile::resolve_archs(
        &build_script::Env::new(&directives),
        &[],
        manifest_archs,
    )?)
}

/// qola's cache directory (`QOLA_CACHE_DIR`, `$XDG_CACHE_HOME/qola`, `$HOME/.cache/qola`), from
/// a build script.
pub fn cache_dir() -> Result<std::path::PathBuf> {
    let directives = build_script::Directives::new(true);
    Ok(cache_dir::dir(&build_script::Env::new(&directives), None)?)
}

/// What qola's object cache holds (`qola cache`): its objects and their size, the size it is kept
/// within, running builds, and the last builds' hits and misses. `cache_dir`: qola's cache
/// (default: found as [`cache_dir`] finds it).
pub fn object_cache_usage(cache_dir: Option<&std::path::Path>) -> Result<CacheUsage> {
    let directives = build_script::Directives::new(false);
    let env = build_script::Env::new(&directives);
    let cache = cache_dir::dir(&env, cache_dir.map(std::path::Path::to_path_buf))?;
    Ok(compile::cache_usage(&env, &cache)?)
}

/// Empties qola's object cache (`qola cache --clear`): its objects, unit records and build
/// history, but for the objects a running build holds; says what it removed. The next builds
/// compile what they need again.
pub fn clear_object_cache(cache_dir: Option<&std::path::Path>) -> Result<Cleared> {
    let directives = build_script::Directives::new(false);
    let env = build_script::Env::new(&directives);
    let cache = cache_dir::dir(&env, cache_dir.map(std::path::Path::to_path_buf))?;
    Ok(compile::clear_cache(&cache, &directives)?)
}

/// Reads an environment variable from a build script the way qola does: Cargo is told to rerun
/// the script when it changes (`cargo:rerun-if-env-changed`); unset and empty are both `None`.
pub fn build_script_env(name: &str) -> Result<Option<String>> {
    let directives = build_script::Directives::new(true);
    Ok(build_script::Env::new(&directives).var(name)?)
}
