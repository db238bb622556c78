//! The toolchain archive sccache-dist runs remote compiles with: the clang driver, what it runs
//! for HIP (lld, clang-offload-bundler), the shared libraries they load (`ldd`), clang's
//! resource directory and the ROCm device bitcode libraries, as a root filesystem. Built once
//! per toolchain, named by a digest of every file's path, size and modification time, in
//! qola's cache (`farm/<digest>.tar.gz`); the build servers cache it in turn.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::compile::CompileError;
use crate::compile::farm::expand::Expanded;
use crate::error::{Result, io_error};

fn farm_error(problem: String) -> crate::error::Error {
    CompileError::Farm { problem }.into()
}

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

/// Every file of the archive: the driver's chain of links, its siblings, their libraries.
fn files(clang: &Path, args: &[String]) -> Result<Vec<PathBuf>> {
    let real = std::fs::canonicalize(clang).map_err(io_error("resolve", clang))?;
    let bin = real.parent().expect("a binary's directory").to_path_buf();
    let mut files = vec![clang.to_path_buf(), real.clone()];
    for tool in ["lld", "ld.lld", "clang-offload-bundler", "clang", "clang++"] {
        let path = bin.join(tool);
        if path.exists() {
            files.push(path);
        }
    }
    let mut libraries = Vec::new();
    for binary in files.clone() {
        let out = Command::new("ldd")
            .arg(&binary)
            .output()
            .map_err(|e| farm_error(format!("cannot run ldd on {}: {e}", binary.display())))?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let path = match line.split_once("=>") {
                Some((_, right)) => right.split_whitespace().next(),
                None => line
                    .split_whitespace()
                    .next()
                    .filter(|p| p.starts_with('/')),
            };
            if let Some(path) = path.filter(|p| p.starts_with('/')) {
                libraries.push(PathBuf::from(path));
            }
        }
    }
    files.extend(libraries);
    let resource = Command::new(&real)
        .arg("-print-resource-dir")
        .output()
        .map_err(|e| farm_error(format!("cannot run {}: {e}", real.display())))?;
    let resource = PathBuf::from(String::from_utf8_lossy(&resource.stdout).trim());
    // Newer clang packages keep the device libraries in the resource directory.
    let libs = match device_libs(args) {
        Some(dir) => dir,
        None if resource.join("amdgcn/bitcode").is_dir() => resource.join("amdgcn/bitcode"),
        None => {
            return Err(farm_error(format!(
                "no ROCm device library directory: the expanded hipcc flags name none (--hip-device-lib-path, --rocm-device-lib-path, --rocm-path) and {} has no amdgcn/bitcode; pass --rocm-path to the build (HipBuild::flag)",
                resource.display()
            )));
        }
    };
    for dir in [resource, libs] {
        let dir = std::fs::canonicalize(&dir).map_err(io_error("resolve", &dir))?;
        walk(&dir, &mut files)?;
    }
    files.sort();
    files.dedup();
    Ok(files)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(io_error("list", dir))? {
        let path = entry.map_err(io_error("list", dir))?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The archive for `expanded`'s driver, built if qola's cache does not hold it yet.
pub(crate) fn build(expanded: &Expanded, cache: &Path) -> Result<PathBuf> {
    let files = files(&expanded.clang, &expanded.args)?;
    let mut hasher = blake3::Hasher::new();
    for file in &files {
        let meta = std::fs::metadata(file).map_err(io_error("read", file))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        hasher.update(format!("{}\0{}\0{mtime}\n", file.display(), meta.len()).as_bytes());
    }
    let digest = hasher.finalize().to_hex();
    let dir = cache.join("farm");
    let archive = dir.join(format!("{}.tar.gz", &digest[..32]));
    if archive.is_file() {
        return Ok(archive);
    }
    std::fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
    let list = dir.join(format!("{}.files", &digest[..32]));
    let names: Vec<String> = files
        .iter()
        .map(|f| f.to_string_lossy().trim_start_matches('/').to_string())
        .collect();
    std::fs::write(&list, names.join("\n") + "\n").map_err(io_error("write", &list))?;
    let tmp = dir.join(format!(".{}.{}.tmp", &digest[..32], std::process::id()));
    // Files by content (links followed), in a fixed order and owner, from the root.
    let out = Command::new("tar")
        .args([
            "--dereference",
            "--sort=name",
            "--mtime=@0",
            "--owner=0",
            "--group=0",
            "--numeric-owner",
            "-czf",
        ])
        .arg(&tmp)
        .arg("-C")
        .arg("/")
        .arg("-T")
        .arg(&list)
        .output()
        .map_err(|e| farm_error(format!("cannot run tar: {e}")))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(farm_error(format!(
            "tar could not pack the toolchain ({} files listed in {}): {}",
            files.len(),
            list.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    std::fs::rename(&tmp, &archive).map_err(io_error("rename", &archive))?;
    Ok(archive)
}
