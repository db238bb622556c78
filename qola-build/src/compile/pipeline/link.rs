//! Linking the objects into a static library that exports only the named C API, or into a
//! shared library whose exports a version script names.
//!
//! HIP kernel symbols keep default visibility even under `-fvisibility=hidden`, and hidden
//! symbols are still global in a static archive. So the objects are first linked into one
//! relocatable object (`ld -r`), every defined global symbol but the exported ones is made local
//! (`objcopy --keep-global-symbols`), and that object is archived with `cc`. COMDAT groups are
//! dissolved in that object (`--force-group-allocation`), so two such libraries that share inline
//! code (every AITER module shares CK's) each keep their own private copy and link together. The library is only
//! rewritten when its inputs changed, so an unchanged build does not make rustc relink.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::io::io_error;
use crate::common::io::write_atomic;
use crate::common::text::shell_quote;
use crate::compile::toolchain::HipToolchain;
use crate::compile::{CompileError, Result};

/// Runs a link tool, turning a failure into [`CompileError::Link`].
fn run(program: &Path, args: &[&std::ffi::OsStr], env: &[(String, String)]) -> Result<()> {
    let shown = std::iter::once(program.as_os_str())
        .chain(args.iter().copied())
        .map(|a| shell_quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .map_err(|e| CompileError::Link {
            command: shown.clone(),
            stderr: e.to_string(),
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(CompileError::Link {
        command: shown,
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

fn tool(names: &[&str]) -> Result<PathBuf> {
    names
        .iter()
        .find_map(|n| which::which(n).ok())
        .ok_or_else(|| CompileError::Link {
            command: names.join(" or "),
            stderr: "not found on PATH; install binutils (`apt-get install binutils`)".to_string(),
        })
}

/// The version of the static link recipe below; raise it when the recipe changes.
const STATIC_RECIPE: &str = "static link 2: ld -r --force-group-allocation";

/// The link steps of `lib<name>.a`, as commands to read (the objects are those of the units).
pub(crate) fn commands(name: &str, exported: &[String], out_dir: &Path) -> Vec<String> {
    let combined = out_dir.join(format!("{name}.combined.o"));
    let mut out = vec![format!(
        "ld -r --force-group-allocation -o {} <the objects of the units>",
        shell_quote(&combined.to_string_lossy())
    )];
    if !exported.is_empty() {
        out.push(format!(
            "objcopy --keep-global-symbols={} {}   # keeps only: {}",
            shell_quote(&out_dir.join(format!("{name}.exports")).to_string_lossy()),
            shell_quote(&combined.to_string_lossy()),
            exported.join(" ")
        ));
    }
    out.push(format!(
        "ar cq {} {}   # through cc",
        shell_quote(&out_dir.join(format!("lib{name}.a")).to_string_lossy()),
        shell_quote(&combined.to_string_lossy())
    ));
    out
}

/// A shared library to link: its file, the version script naming its exports, and extra link
/// flags (AITER's `extra_ldflags`), given after the objects.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedLink<'a> {
    pub library: &'a Path,
    pub version_script: Option<&'a Path>,
    pub flags: &'a [String],
}

/// The link step of a shared library, as one command to read.
pub(crate) fn shared_command(compiler: &Path, link: SharedLink) -> String {
    let mut words = vec![
        shell_quote(&compiler.to_string_lossy()),
        "-shared".to_string(),
        "-o".to_string(),
        shell_quote(&link.library.to_string_lossy()),
        "<the objects of the units>".to_string(),
    ];
    if let Some(script) = link.version_script {
        words.push("-Xlinker".to_string());
        words.push(shell_quote(&format!(
            "--version-script={}",
            script.display()
        )));
    }
    words.extend(link.flags.iter().map(|f| shell_quote(f)));
    words.join(" ")
}

/// The record of a library's inputs: the library, the file that records what it was linked
/// from, and what that file must hold for the library to be up to date.
pub(crate) struct LinkRecord {
    library: PathBuf,
    path: PathBuf,
    inputs: String,
}

impl LinkRecord {
    /// Whether the library exists and was linked from these inputs.
    pub(crate) fn holds(&self) -> bool {
        self.library.is_file()
            && std::fs::read_to_string(&self.path).is_ok_and(|s| s == self.inputs)
    }

    fn write(&self) -> Result<()> {
        Ok(write_atomic(&self.path, self.inputs.as_bytes())?)
    }
}

/// The link record of the shared library `link` from the objects of `keys` by `toolchain`, kept in
/// `work_dir`.
pub(crate) fn shared_link_record(
    toolchain: &HipToolchain,
    link: SharedLink,
    keys: &[String],
    work_dir: &Path,
) -> Result<LinkRecord> {
    let file_name = link
        .library
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let script = match link.version_script {
        Some(path) => std::fs::read_to_string(path).map_err(io_error("read", path))?,
        None => String::new(),
    };
    let mut inputs = format!(
        "{}\n--\n{}\n--\n{}\n",
        keys.join("\n"),
        script,
        toolchain.identity
    );
    // Libraries linked without flags keep the records they had.
    if !link.flags.is_empty() {
        inputs.push_str(&format!("--\n{}\n", link.flags.join("\n")));
    }
    Ok(LinkRecord {
        library: link.library.to_path_buf(),
        path: work_dir.join(format!("{file_name}.inputs")),
        inputs,
    })
}

/// The link record of `<out_dir>/lib<name>.a` linked from the objects of `keys`, exporting `exported`.
pub(crate) fn static_link_record(
    name: &str,
    keys: &[String],
    exported: &[String],
    out_dir: &Path,
) -> LinkRecord {
    LinkRecord {
        library: out_dir.join(format!("lib{name}.a")),
        path: out_dir.join(format!("lib{name}.inputs")),
        // The recipe's version is an input: a library linked by an earlier recipe is relinked.
        inputs: format!(
            "{STATIC_RECIPE}\n{}\n--\n{}\n",
            keys.join("\n"),
            exported.join("\n")
        ),
    }
}

/// Links `objects` into the shared library `library` with the HIP compiler (which adds the HIP
/// runtime), exporting what `version_script` names. Written (through a temporary file and a
/// rename) only when the objects or the script changed (`record`, see [`shared_link_record`]).
pub(crate) fn link_shared(
    toolchain: &HipToolchain,
    link: SharedLink,
    objects: &[PathBuf],
    record: &LinkRecord,
) -> Result<Linked> {
    let library = link.library;
    let file_name = library
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if record.holds() {
        return Ok(Linked {
            library: library.to_path_buf(),
            written: false,
        });
    }
    if let Some(dir) = library.parent() {
        std::fs::create_dir_all(dir).map_err(io_error("create", dir))?;
    }
    let partial = library.with_file_name(format!(".{file_name}.qola-link-{}", std::process::id()));
    let soname = format!("-Wl,-soname,{file_name}");
    let mut args: Vec<std::ffi::OsString> = vec!["-shared".into(), "-fPIC".into()];
    if toolchain.is_clang {
        args.push("--hip-link".into());
    }
    args.extend(["-o".into(), partial.clone().into_os_string(), soname.into()]);
    args.extend(objects.iter().map(|o| o.clone().into_os_string()));
    if let Some(path) = link.version_script {
        // `-Xlinker`, not `-Wl,`: a path may hold a comma, which `-Wl,` splits at.
        args.push("-Xlinker".into());
        args.push(format!("--version-script={}", path.display()).into());
    }
    args.extend(link.flags.iter().map(std::ffi::OsString::from));
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    if let Err(e) = run(&toolchain.path, &refs, &toolchain.env) {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, library).map_err(io_error("install", library))?;
    record.write()?;
    Ok(Linked {
        library: library.to_path_buf(),
        written: true,
    })
}

/// What [`link`] produced.
pub(crate) struct Linked {
    /// The archive.
    pub library: PathBuf,
    /// Whether it was written by this call (`false`: it already had these inputs).
    pub written: bool,
}

/// Links `objects` into `<out_dir>/lib<name>.a`, exporting only `exported` when it is not
/// empty, unless `record` (see [`static_link_record`]) says it is up to date. Prints cc's
/// `rustc-link-lib` directives when `cargo_metadata`.
pub(crate) fn link(
    name: &str,
    objects: &[PathBuf],
    exported: &[String],
    out_dir: &Path,
    target: &str,
    cargo_metadata: bool,
    record: &LinkRecord,
) -> Result<Linked> {
    let library = out_dir.join(format!("lib{name}.a"));
    if record.holds() {
        if cargo_metadata {
            println!("cargo:rustc-link-search=native={}", out_dir.display());
            println!("cargo:rustc-link-lib=static={name}");
        }
        return Ok(Linked {
            library,
            written: false,
        });
    }
    let combined = out_dir.join(format!("{name}.combined.o"));
    // Group members become plain sections: once their symbols are local, a COMDAT group would
    // still be deduplicated by name against another library's copy at the final link, leaving
    // this library's references pointing into a discarded section.
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "-r".as_ref(),
        "--force-group-allocation".as_ref(),
        "-o".as_ref(),
        combined.as_os_str(),
    ];
    args.extend(objects.iter().map(|o| o.as_os_str()));
    run(&tool(&["ld", "ld.lld"])?, &args, &[])?;
    if !exported.is_empty() {
        let list = out_dir.join(format!("{name}.exports"));
        std::fs::write(&list, format!("{}\n", exported.join("\n")))
            .map_err(io_error("write", &list))?;
        let keep = format!("--keep-global-symbols={}", list.display());
        run(
            &tool(&["objcopy", "llvm-objcopy"])?,
            &[keep.as_ref(), combined.as_os_str()],
            &[],
        )?;
    }
    cc::Build::new()
        .out_dir(out_dir)
        .target(target)
        .host(target)
        .opt_level(3)
        .debug(false)
        .cargo_metadata(cargo_metadata)
        .cargo_warnings(false)
        .object(&combined)
        .try_compile(name)
        .map_err(|e| CompileError::Link {
            command: format!("ar (through cc) for lib{name}.a"),
            stderr: e.to_string(),
        })?;
    record.write()?;
    Ok(Linked {
        library,
        written: true,
    })
}
