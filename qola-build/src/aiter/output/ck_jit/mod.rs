//! `qola build` under ROCm's ck-jit, TransformerEngine's default attention build
//! (`ck_jit_build.py full --with-qola`): ck-jit runs `python -m qola.cli build --skip-checkout`
//! with `ROCM_PATH` at a fake ROCm whose `bin/hipcc` is its interceptor. The interceptor
//! records each composable_kernel instance compile (a source under a `blob/` directory) in
//! `$CK_JIT_TMP_DIR/manifest.json.ndjson` and writes an empty object instead; rewrites the API
//! dispatchers (`fmha_*_api.cpp`, from the hints its patch adds to CK's generator) to call
//! `ck_jit_*_call` and compiles them; and on the link of a library named like
//! `libmha_{fwd,bwd}.so` compiles ck-jit's runtime, relinks with the link's objects,
//! `--offload-arch` and `-Wl,--version-script=` words, and leaves
//! `$CK_JIT_TMP_DIR/libmha_{fwd,bwd}/ck_jit_quick_rebuild.json` for `quick`. The library then
//! compiles each instance the first time it is called.
//!
//! qola recognises the run by its environment ([`CkJit::detect`]: `CK_JIT_TMP_DIR`, with
//! `CK_JIT_HIPCC` the real compiler and `ROCM_PATH` the fake ROCm) and, for each library ck-jit
//! takes (its file name as ck-jit's link pattern reads it, [`CkJit::takes`]), gives the
//! interceptor what AITER's own build gives it:
//!
//! | what | AITER's build | qola under ck-jit | why |
//! |---|---|---|---|
//! | CK instances and dispatchers | generated under `<build>/blob/` | CK's `01_fmha/generate.py` writes into `<gen>/<module>/<i>/blob/` (a directory apart from the ahead-of-time build's); no other source is under a `blob/` directory | the interceptor knows an instance by that directory |
//! | their compiles | `$ROCM_PATH/bin/hipcc ... -c <src> -o <obj>` | the same: one call per unit through the interceptor, every path in full, `-I<dir>` attached, the tree named as `CK_JIT_AITER_DIR` names it, no depfile, no `-cuid`, no split passes, no precompiled header, run on every build and never stored (see `compile::DirectBuild`) | the interceptor records the call and replays it on first use, where qola's links directory and scratch files are not |
//! | other units (AITER's own sources, qola's API wrapper) | compiled by hipcc | qola's own pipeline with the real compiler (`CK_JIT_HIPCC`), objects from qola's cache: the same keys as the ahead-of-time build | the interceptor only passes them through to that compiler; a cached object is what it would have made |
//! | probes (flags, architectures, bundle layout, dead passes) | none | the real compiler (`CK_JIT_HIPCC`), never the interceptor | an interceptor's empty stub is no answer |
//! | the link | `hipcc -shared ... -o libmha_fwd.so` | `$ROCM_PATH/bin/hipcc -shared --offload-arch=... -o <output>/lib/<ns>_libmha_fwd.so -Wl,--version-script=<script>`, straight to the final name, the library there before put back if the link fails | the interceptor takes a link by its output's name, keeps `-Wl,` words only, and `quick` relinks to that same name |
//!
//! `HIPCC` is not used under ck-jit (the interceptor and `CK_JIT_HIPCC` are), and a prebuilt
//! store is not asked or published to: a ck-jit library is not the ahead-of-time one. The
//! ahead-of-time build's link record of a library is removed when ck-jit relinks it, so a later
//! build without ck-jit links its own again.

mod hints;
mod names;

use hints::check_hints;
use names::{cuid, named, object_name};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::aiter::library::AiterLibrary;
use crate::aiter::{AiterError, Result};
use crate::build_script::Env;
use crate::common::io::io_error;
use crate::common::text::shell_quote;
use crate::compile::{DirectBuild, HipToolchain};

/// The ck-jit run a build is under (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct CkJit {
    /// `CK_JIT_TMP_DIR`: ck-jit's scratch, where its interceptor records.
    tmp_dir: PathBuf,
    /// `$ROCM_PATH/bin/hipcc`: the interceptor.
    interceptor: PathBuf,
    /// `CK_JIT_HIPCC`: the real compiler.
    compiler: PathBuf,
    /// `CK_JIT_AITER_DIR`: the tree as ck-jit names it (the prefix its interceptor makes
    /// relative, and under which `--install-dir` gets the headers), when set.
    aiter_dir: Option<PathBuf>,
    /// `HIPCC`, when set: not used (said once).
    ignored_hipcc: Option<PathBuf>,
}

/// One unit given to the interceptor.
struct Intercepted {
    source: PathBuf,
    args: Vec<String>,
    object: PathBuf,
}

impl CkJit {
    /// The ck-jit run this process is under, from its environment: `None` without
    /// `CK_JIT_TMP_DIR`; an error naming the variable when the rest of ck-jit's environment
    /// is missing or names nothing.
    pub(crate) fn detect(env: &Env) -> Result<Option<CkJit>> {
        let Some(tmp_dir) = env.var_os("CK_JIT_TMP_DIR").map(PathBuf::from) else {
            return Ok(None);
        };
        let compiler = env.var_os("CK_JIT_HIPCC").map(PathBuf::from).ok_or_else(|| {
            problem(
                "CK_JIT_HIPCC",
                "is not set: ck-jit names the real hipcc there, which qola compiles and probes with (CK_JIT_TMP_DIR is set: this looks like a ck-jit run)",
            )
        })?;
        if !compiler.is_file() {
            return Err(problem(
                "CK_JIT_HIPCC",
                &format!("{} is not a file: name the real hipcc", compiler.display()),
            ));
        }
        let rocm = env.var_os("ROCM_PATH").map(PathBuf::from).ok_or_else(|| {
            problem(
                "ROCM_PATH",
                "is not set: under ck-jit it names ck-jit's fake ROCm, whose bin/hipcc is the interceptor",
            )
        })?;
        let interceptor = rocm.join("bin/hipcc");
        if !interceptor.is_file() {
            return Err(problem(
                "ROCM_PATH",
                &format!(
                    "{} has no bin/hipcc: under ck-jit it names ck-jit's fake ROCm",
                    rocm.display()
                ),
            ));
        }
        let ck_jit = CkJit {
            tmp_dir,
            interceptor,
            compiler,
            aiter_dir: env.var_os("CK_JIT_AITER_DIR").map(PathBuf::from),
            ignored_hipcc: env.var_os("HIPCC").map(PathBuf::from),
        };
        ck_jit.check_tmp_dir("start")?;
        Ok(Some(ck_jit))
    }

    /// The real compiler, identified: what qola's probes and cached compiles use.
    pub(crate) fn toolchain(&self) -> Result<HipToolchain> {
        Ok(HipToolchain::identify(&self.compiler)?)
    }

    /// What the build says once about the run.
    pub(crate) fn notice(&self) -> String {
        let mut notice = format!(
            "qola build: under ck-jit (CK_JIT_TMP_DIR={}): CK instances go to its interceptor {}, everything else compiles with {}",
            self.tmp_dir.display(),
            self.interceptor.display(),
            self.compiler.display()
        );
        if let Some(hipcc) = &self.ignored_hipcc {
            notice.push_str(&format!(
                "; HIPCC={} is not used under ck-jit",
                hipcc.display()
            ));
        }
        notice
    }

    /// Whether ck-jit takes the library `library` (its link pattern,
    /// `^(?:.+_)?libmha_(fwd|bwd)(?:_.+)?\.so$`); any other library is built ahead of time.
    pub(crate) fn takes(library: &Path) -> bool {
        let Some(name) = library.file_name().and_then(|n| n.to_str()) else {
            return false;
        };
        let Some(stem) = name.strip_suffix(".so") else {
            return false;
        };
        ["libmha_fwd", "libmha_bwd"].iter().any(|lib| {
            stem.match_indices(lib).any(|(at, _)| {
                let (before, after) = (&stem[..at], &stem[at + lib.len()..]);
                (before.is_empty() || (before.len() > 1 && before.ends_with('_')))
                    && (after.is_empty() || (after.len() > 1 && after.starts_with('_')))
            })
        })
    }

    /// Builds `lib` the way ck-jit takes it (see the module docs) into its shared library, with
    /// its objects in `<work_dir>/ck-jit`; returns (units compiled or given to the
    /// interceptor, units).
    pub(crate) fn build(
        &self,
        lib: AiterLibrary,
        name: &str,
        work_dir: &Path,
        env: &Env,
        verbose: bool,
    ) -> Result<(usize, usize)> {
        let root = lib.module.root.clone();
        let mut build = lib.build;
        let taken = build.take_files(|source| {
            source
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|dir| dir == "blob")
        });
        check_hints(name, &taken)?;
        let direct = DirectBuild::new(&build, env)?;
        let objects_dir = work_dir.join("ck-jit");
        if objects_dir.exists() {
            std::fs::remove_dir_all(&objects_dir).map_err(io_error("remove", &objects_dir))?;
        }
        std::fs::create_dir_all(&objects_dir).map_err(io_error("create", &objects_dir))?;
        let mut objects = Vec::new();
        let (mut compiled, mut units) = (0, taken.len());
        if build.has_files() {
            let report = build
                .objects_only(true)
                .progress_on_terminal(verbose)
                .compile_in(name, env)?;
            compiled += report.compiled();
            units += report.units.len();
            // Copied: the link's objects stay for ck-jit's `quick`, whatever the cache evicts.
            for unit in &report.units {
                let file = unit.object.file_name().unwrap_or_default();
                let to = objects_dir.join(file);
                std::fs::copy(&unit.object, &to).map_err(io_error("copy", &unit.object))?;
                objects.push(to);
            }
        }
        let names = self.tree_names(&root);
        let mut calls = Vec::new();
        for (source, flags) in &taken {
            let object = objects_dir.join(object_name(source));
            // An explicit `-cuid`: the driver's own hashes every path of the command (qola's
            // output directory, the interceptor's rewritten copy), where this one follows the
            // unit alone, in the objects built now and in those ck-jit builds on first use.
            let mut flags = flags.clone();
            flags.push(format!("-cuid={}", cuid(source)));
            let args = direct
                .compile_args(source, &flags, &object)?
                .into_iter()
                .map(|arg| named(arg, names.as_ref()))
                .collect();
            calls.push(Intercepted {
                source: source.clone(),
                args,
                object,
            });
        }
        self.check_tmp_dir("compile the CK units")?;
        // As many at once as any compile of the build (`MAX_JOBS`, `NUM_JOBS`, the CPUs).
        let (workers, _) = crate::compile::job_limit(env, None)?;
        self.intercept(&calls, &direct.toolchain, workers, verbose)?;
        objects.extend(calls.iter().map(|c| c.object.clone()));
        let link = build.shared_library().ok_or_else(|| {
            problem(
                "link",
                "the library has no shared library to link (a ck-jit library is QoLA's shared library)",
            )
        })?;
        let library = link.library.to_path_buf();
        let mut args: Vec<String> = vec!["-shared".into(), "-fPIC".into()];
        args.extend(direct.archs.iter().map(|a| format!("--offload-arch={a}")));
        let file_name = library
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        args.extend([
            "-o".to_string(),
            library.to_string_lossy().into_owned(),
            format!("-Wl,-soname,{file_name}"),
        ]);
        args.extend(objects.iter().map(|o| o.to_string_lossy().into_owned()));
        if let Some(script) = link.version_script {
            let script = script.to_string_lossy();
            if script.contains(',') {
                return Err(problem(
                    "link",
                    &format!(
                        "the version script {script} has a comma in its path, which `-Wl,` (the only form ck-jit keeps) splits at: use an output directory without one"
                    ),
                ));
            }
            args.push(format!("-Wl,--version-script={script}"));
        }
        args.extend(link.flags.iter().cloned());
        // The ahead-of-time link record would call ck-jit's library up to date.
        let record = work_dir.join(format!("{file_name}.inputs"));
        match std::fs::remove_file(&record) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_error("remove", &record)(e).into());
            }
            _ => {}
        }
        self.check_tmp_dir("link")?;
        self.link(&library, &args, &direct.toolchain, verbose)?;
        eprintln!(
            "qola build: {name}: under ck-jit: {} CK unit{} given to its interceptor (compiled on first use), {} of {} other unit{} compiled, linked by ck-jit",
            taken.len(),
            plural(taken.len()),
            compiled,
            units - taken.len(),
            plural(units - taken.len())
        );
        Ok((compiled + taken.len(), units))
    }

    /// The tree's name in qola's paths and the one ck-jit gives it (`CK_JIT_AITER_DIR`), when
    /// they differ for the same directory (a symbolic link): its interceptor makes paths under
    /// its name relative, and installs what they name.
    fn tree_names(&self, root: &Path) -> Option<(String, String)> {
        let aiter_dir = self.aiter_dir.as_ref()?;
        let canonical = std::fs::canonicalize(root).ok()?;
        if std::fs::canonicalize(aiter_dir).ok()? != canonical {
            return None;
        }
        let (from, to) = (canonical.to_str()?, aiter_dir.to_str()?);
        (from != to).then(|| (from.to_string(), to.to_string()))
    }

    /// Runs each of `calls` through the interceptor, `workers` at once.
    fn intercept(
        &self,
        calls: &[Intercepted],
        toolchain: &HipToolchain,
        workers: usize,
        verbose: bool,
    ) -> Result<()> {
        let next = AtomicUsize::new(0);
        let failure: Mutex<Result<()>> = Mutex::new(Ok(()));
        std::thread::scope(|scope| {
            for _ in 0..workers.min(calls.len()) {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(call) = calls.get(i) else { break };
                        if failure.lock().is_ok_and(|f| f.is_err()) {
                            break;
                        }
                        let step = format!("ck-jit's interceptor on {}", call.source.display());
                        if let Err(e) = self.run(&step, &call.args, toolchain, verbose) {
                            if let Ok(mut first) = failure.lock()
                                && first.is_ok()
                            {
                                *first = Err(e);
                            }
                            break;
                        }
                    }
                });
            }
        });
        failure.into_inner().unwrap_or(Ok(()))
    }

    /// Links `library` through the interceptor with `args`; the library there before is put
    /// back when the link fails or ck-jit did not take it.
    fn link(
        &self,
        library: &Path,
        args: &[String],
        toolchain: &HipToolchain,
        verbose: bool,
    ) -> Result<()> {
        let file_name = library
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(dir) = library.parent() {
            std::fs::create_dir_all(dir).map_err(io_error("create", dir))?;
        }
        let kept =
            library.with_file_name(format!(".{file_name}.qola-ck-jit-{}", std::process::id()));
        let had = library.exists();
        if had {
            std::fs::rename(library, &kept).map_err(io_error("set aside", library))?;
        }
        let step =
            format!("ck-jit's link of {file_name} (its runtime compiled, the library relinked)");
        let linked = self
            .run(&step, args, toolchain, verbose)
            .and_then(|()| self.check_taken(library, &step));
        match linked {
            Ok(()) => {
                if had {
                    std::fs::remove_file(&kept).map_err(io_error("remove", &kept))?;
                }
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(library);
                if had {
                    std::fs::rename(&kept, library).map_err(io_error("put back", library))?;
                }
                Err(e)
            }
        }
    }

    /// Whether ck-jit's post-build took the link of `library`: its state for `quick` names it.
    fn check_taken(&self, library: &Path, step: &str) -> Result<()> {
        let name = library.file_name().unwrap_or_default().to_string_lossy();
        let which = match name.contains("libmha_fwd") {
            true => "libmha_fwd",
            false => "libmha_bwd",
        };
        let state = self.tmp_dir.join(which).join("ck_jit_quick_rebuild.json");
        let named = std::fs::read_to_string(&state).ok().and_then(|text| {
            let value: serde_json::Value = serde_json::from_str(&text).ok()?;
            let out = value.get("out_so")?.as_str()?.to_string();
            let out = match out.strip_prefix("{jit}/") {
                Some(rest) => self.tmp_dir.join(rest),
                None => PathBuf::from(out),
            };
            Some(out)
        });
        let same = named.as_deref().is_some_and(|out| {
            out == library || std::fs::canonicalize(out).ok() == std::fs::canonicalize(library).ok()
        });
        if same && library.is_file() {
            return Ok(());
        }
        Err(problem(
            step,
            &format!(
                "the interceptor linked, but ck-jit's post-build did not take the library: {} does not name {} (is {} ck-jit's interceptor?)",
                state.display(),
                library.display(),
                self.interceptor.display()
            ),
        ))
    }

    /// Runs the interceptor with `args` (in ck-jit's environment, with the toolchain's own);
    /// an error names `step`, the command and what it said.
    fn run(
        &self,
        step: &str,
        args: &[String],
        toolchain: &HipToolchain,
        verbose: bool,
    ) -> Result<()> {
        let command = std::iter::once(self.interceptor.to_string_lossy().into_owned())
            .chain(args.iter().cloned())
            .map(|a| shell_quote(&a))
            .collect::<Vec<_>>()
            .join(" ");
        if verbose {
            eprintln!("qola build: {command}");
        }
        let output = Command::new(&self.interceptor)
            .args(args)
            .envs(toolchain.env.iter().map(|(k, v)| (k, v)))
            .output()
            .map_err(|e| problem(step, &format!("`{command}` could not start: {e}")))?;
        if output.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        let out = String::from_utf8_lossy(&output.stdout);
        Err(problem(
            step,
            &format!(
                "`{command}` failed ({}):\n{}{}",
                output.status,
                out.trim_end(),
                said.trim_end()
            ),
        ))
    }

    /// An error when ck-jit's scratch is gone: its interceptor records there.
    fn check_tmp_dir(&self, step: &str) -> Result<()> {
        if self.tmp_dir.is_dir() {
            return Ok(());
        }
        Err(problem(
            step,
            &format!(
                "CK_JIT_TMP_DIR={} is not a directory: ck-jit's scratch vanished (run `ck_jit_build.py full` again)",
                self.tmp_dir.display()
            ),
        ))
    }
}

/// An error of the build under ck-jit, at `step`.
fn problem(step: &str, why: &str) -> AiterError {
    AiterError::CkJit {
        step: step.to_string(),
        why: why.to_string(),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ck_jit_takes_the_libraries_its_link_pattern_names_and_no_other() {
        for name in [
            "libmha_fwd.so",
            "libmha_bwd.so",
            "te_libmha_fwd.so",
            ".te_libmha_bwd.so",
            "libmha_fwd_v3.so",
            "a_b_libmha_bwd_c.so",
        ] {
            assert!(
                CkJit::takes(Path::new("/out/lib").join(name).as_path()),
                "{name}"
            );
        }
        for name in [
            ".te_libmha_fwd.so.qola-link-123",
            "libmha_fwd.tmp.so",
            "libmha_fwd.so.tmp",
            "_libmha_fwd.so",
            "xlibmha_fwd.so",
            "te_libmha_fwd_.so",
            "te_libgemm_a4w4_asm.so",
            "libmha_fwd",
        ] {
            assert!(
                !CkJit::takes(Path::new("/out/lib").join(name).as_path()),
                "{name}"
            );
        }
    }

    #[test]
    fn paths_in_the_tree_are_named_as_ck_jit_names_the_tree_and_no_other_path() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir_all(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let ck_jit = |aiter_dir: &Path| CkJit {
            tmp_dir: dir.path().to_path_buf(),
            interceptor: PathBuf::new(),
            compiler: PathBuf::new(),
            aiter_dir: Some(aiter_dir.to_path_buf()),
            ignored_hipcc: None,
        };
        let real_name = std::fs::canonicalize(&real).unwrap().display().to_string();
        let names = ck_jit(&link).tree_names(&real);
        let link_name = link.display().to_string();
        assert_eq!(names, Some((real_name.clone(), link_name.clone())));
        let named = |arg: String| named(arg, names.as_ref());
        assert_eq!(
            named(format!("-I{real_name}/csrc/include")),
            format!("-I{link_name}/csrc/include")
        );
        assert_eq!(
            named(format!("{real_name}/a.cpp")),
            format!("{link_name}/a.cpp")
        );
        assert_eq!(
            named(format!("-I{real_name}x/other")),
            format!("-I{real_name}x/other")
        );
        assert_eq!(named("-DX=1".to_string()), "-DX=1");
        assert_eq!(
            ck_jit(&real).tree_names(&real),
            None,
            "the same name: nothing to rename"
        );
        assert_eq!(
            ck_jit(dir.path()).tree_names(&real),
            None,
            "another directory"
        );
    }
}
