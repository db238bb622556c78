//! The toolchain archive sccache-dist runs remote compiles with: the clang driver, what it runs
//! for HIP (lld, clang-offload-bundler, llvm-objcopy), the shared libraries they load (their
//! `NEEDED` entries, resolved as the dynamic loader would), clang's resource directory and the
//! ROCm device bitcode libraries, as a root filesystem. The files are read under a root: `/`
//! for a compiler installed on this machine, or the root of a sandboxed toolchain
//! (`QOLA_FARM_ROOT`), where links are followed inside the root. Built once per toolchain,
//! named by a digest of every file's path, size and modification time, in qola's cache
//! (`farm/<digest>.tar.gz`); the build servers cache it in turn.

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::common::io::io_error;
use crate::compile::Result;
use crate::compile::launcher::farm::problem;

/// What an archive holds beyond the toolchain's files (in its name's digest: an archive of an
/// earlier qola is not taken for one of this format).
const ARCHIVE_FORMAT: &str = "qola toolchain archive 2: the files and /tmp\n";

/// The device library directory the flags name, or `<rocm-path>/amdgcn/bitcode`.
pub(crate) fn device_libs(args: &[String]) -> Option<PathBuf> {
    let value = |prefix: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(prefix))
            .map(|v| PathBuf::from(v.trim_matches('"')))
    };
    value("--hip-device-lib-path=")
        .or_else(|| value("--rocm-device-lib-path="))
        .or_else(|| value("--rocm-path=").map(|r| r.join("amdgcn/bitcode")))
}

/// A directory tree seen from inside `root`: paths are the toolchain's own (absolute), links
/// are followed within the root.
pub(crate) struct Root(pub PathBuf);

impl Root {
    /// Where `path` (as the toolchain sees it) is on this machine, links followed inside the root.
    fn host(&self, path: &Path) -> PathBuf {
        let mut logical = PathBuf::from("/");
        let mut hops = 0;
        let mut rest: Vec<std::ffi::OsString> = Vec::new();
        let push = |rest: &mut Vec<std::ffi::OsString>, p: &Path| {
            let parts: Vec<std::ffi::OsString> = p
                .components()
                .map(|c| match c {
                    Component::ParentDir => "..".into(),
                    Component::Normal(n) => n.to_os_string(),
                    _ => ".".into(),
                })
                .collect();
            rest.extend(parts.into_iter().rev());
        };
        push(&mut rest, path);
        while let Some(part) = rest.pop() {
            if part == "." {
                continue;
            }
            if part == ".." {
                logical.pop();
                continue;
            }
            let next = logical.join(&part);
            let on_host = self.0.join(next.strip_prefix("/").expect("absolute"));
            match std::fs::read_link(&on_host) {
                Ok(target) if hops < 40 => {
                    hops += 1;
                    if target.is_absolute() {
                        logical = PathBuf::from("/");
                    }
                    push(&mut rest, &target);
                }
                _ => logical = next,
            }
        }
        self.0.join(logical.strip_prefix("/").expect("absolute"))
    }

    /// The toolchain's path of a file of the root seen from this machine.
    fn inside(&self, host: &Path) -> PathBuf {
        Path::new("/").join(host.strip_prefix(&self.0).unwrap_or(host))
    }

    fn exists(&self, path: &Path) -> bool {
        self.host(path).exists()
    }
}

/// `readelf -d` / `-l` of an ELF file: its NEEDED names, RUNPATH/RPATH and interpreter.
fn dynamic(file: &Path) -> (Vec<String>, Vec<String>, Option<String>) {
    let text = |args: &[&str]| {
        Command::new("readelf")
            .args(args)
            .arg(file)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let bracketed = |line: &str| {
        line.split_once('[')
            .and_then(|(_, r)| r.split_once(']'))
            .map(|(v, _)| v.to_string())
    };
    let (mut needed, mut paths) = (Vec::new(), Vec::new());
    for line in text(&["-dW"]).lines() {
        if line.contains("(NEEDED)") {
            needed.extend(bracketed(line));
        } else if line.contains("(RUNPATH)") || line.contains("(RPATH)") {
            paths.extend(
                bracketed(line)
                    .into_iter()
                    .flat_map(|v| v.split(':').map(String::from).collect::<Vec<_>>()),
            );
        }
    }
    let interpreter = text(&["-lW"]).lines().find_map(|l| {
        l.split_once("Requesting program interpreter: ")
            .and_then(|(_, r)| r.strip_suffix(']'))
            .map(String::from)
    });
    (needed, paths, interpreter)
}

/// Every file of the archive, as the toolchain sees them: the driver and its siblings, the
/// libraries they need, the resource and device library directories.
fn files(root: &Root, clang: &Path, resource: &Path, libs: &Path) -> Result<Vec<PathBuf>> {
    let bin = clang.parent().expect("a binary's directory").to_path_buf();
    let mut wanted = vec![clang.to_path_buf()];
    for tool in [
        "clang",
        "clang++",
        "lld",
        "ld.lld",
        "clang-offload-bundler",
        "llvm-objcopy",
    ] {
        if root.exists(&bin.join(tool)) {
            wanted.push(bin.join(tool));
        }
    }
    let mut files = Vec::new();
    let mut seen_libs = std::collections::BTreeSet::new();
    while let Some(file) = wanted.pop() {
        if files.contains(&file) {
            continue;
        }
        let host = root.host(&file);
        let (needed, paths, interpreter) = dynamic(&host);
        files.push(file.clone());
        let origin = root.inside(host.parent().expect("a file's directory"));
        let mut dirs: Vec<PathBuf> = paths
            .iter()
            .map(|p| PathBuf::from(p.replace("$ORIGIN", &origin.to_string_lossy())))
            .collect();
        dirs.extend(
            [
                "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu",
                "/lib64",
                "/usr/lib64",
                "/lib",
                "/usr/lib",
            ]
            .map(PathBuf::from),
        );
        for name in needed {
            if !seen_libs.insert(name.clone()) {
                continue;
            }
            match dirs.iter().map(|d| d.join(&name)).find(|p| root.exists(p)) {
                Some(found) => wanted.push(found),
                None => {
                    return Err(problem(format!(
                        "{} needs {name}, found in none of {}",
                        file.display(),
                        dirs.iter()
                            .map(|d| d.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
        }
        wanted.extend(interpreter.map(PathBuf::from));
    }
    for dir in [resource, libs] {
        walk(root, &root.host(dir), &mut files)?;
    }
    files.sort();
    files.dedup();
    Ok(files)
}

fn walk(root: &Root, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(io_error("list", dir))? {
        let path = entry.map_err(io_error("list", dir))?.path();
        if path.is_dir() {
            walk(root, &path, out)?;
        } else {
            out.push(root.inside(&path));
        }
    }
    Ok(())
}

/// What the archive is built from: the root, the driver as the toolchain sees it, and a command
/// on this machine that runs it (the same path for a compiler installed here).
pub(crate) struct Toolchain<'a> {
    pub root: Root,
    pub clang: &'a Path,
    pub run: &'a Path,
    pub args: &'a [String],
}

/// The archive for `t`'s driver, built if qola's cache does not hold it yet.
pub(crate) fn build(t: &Toolchain, cache: &Path) -> Result<PathBuf> {
    let resource = Command::new(t.run)
        .arg("-print-resource-dir")
        .output()
        .map_err(|e| problem(format!("cannot run {}: {e}", t.run.display())))?;
    let resource = PathBuf::from(String::from_utf8_lossy(&resource.stdout).trim());
    // Newer clang packages keep the device libraries in the resource directory.
    let libs = match device_libs(t.args) {
        Some(dir) => dir,
        None if t.root.host(&resource.join("amdgcn/bitcode")).is_dir() => {
            resource.join("amdgcn/bitcode")
        }
        None => {
            return Err(problem(format!(
                "no ROCm device library directory: the expanded hipcc flags name none (--hip-device-lib-path, --rocm-device-lib-path, --rocm-path) and {} has no amdgcn/bitcode; pass --rocm-path to the build (HipBuild::flag)",
                resource.display()
            )));
        }
    };
    let files = files(&t.root, t.clang, &resource, &libs)?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(ARCHIVE_FORMAT.as_bytes());
    for file in &files {
        let host = t.root.host(file);
        let meta = std::fs::metadata(&host).map_err(io_error("read", &host))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        hasher.update(format!("{}\0{}\0{mtime}\n", file.display(), meta.len()).as_bytes());
    }
    let digest = hasher.finalize().to_hex();
    let name = &digest[..32];
    let dir = cache.join(crate::cache_dir::LAUNCHER);
    let archive = dir.join(format!("{name}.tar.gz"));
    if archive.is_file() {
        return Ok(archive);
    }
    // The files by content at the toolchain's paths, in a staging tree of copies (hard links
    // would change the files' ctime under another build packing at the same time, and tar
    // refuses a file that changed while read), packed in a fixed order and owner.
    let staging = dir.join(format!(".{name}.{}.staging", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    // The compiler's temporary files: the server's sandbox is this tree, with only the job's
    // working directory and inputs added (which give it a /tmp only when they are under /tmp).
    let tmp_dir = staging.join("tmp");
    std::fs::create_dir_all(&tmp_dir).map_err(io_error("create", &tmp_dir))?;
    std::fs::set_permissions(&tmp_dir, std::fs::Permissions::from_mode(0o1777))
        .map_err(io_error("set the mode of", &tmp_dir))?;
    for file in &files {
        let to = staging.join(file.strip_prefix("/").expect("absolute"));
        std::fs::create_dir_all(to.parent().expect("a parent")).map_err(io_error("create", &to))?;
        let from = std::fs::canonicalize(t.root.host(file)).map_err(io_error("resolve", file))?;
        std::fs::copy(&from, &to).map_err(io_error("copy", &from))?;
    }
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let out = Command::new("tar")
        .args([
            "--sort=name",
            "--mtime=@0",
            "--owner=0",
            "--group=0",
            "--numeric-owner",
            // gzip's fastest level: on the sid toolchain's libLLVM (139 MB) level 1 takes
            // 2.0 s and gives 48 MB, tar's default (6) 5.4 s for 43 MB.
            "--use-compress-program=gzip -1 -n",
            "-cf",
        ])
        .arg(&tmp)
        .arg("-C")
        .arg(&staging)
        .arg(".")
        .output()
        .map_err(|e| problem(format!("cannot run tar: {e}")));
    let _ = std::fs::remove_dir_all(&staging);
    let out = out?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(problem(format!(
            "tar could not pack the toolchain ({} files): {}",
            files.len(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    std::fs::rename(&tmp, &archive).map_err(io_error("rename", &archive))?;
    Ok(archive)
}
