//! Builds the attention kernels into `libqola_mha.a` with qola-build's incremental HIP pipeline.
//!
//! `QOLA_KERNELS=builtin` (the default) compiles qola's own portable kernels in `kernels/`; they
//! need no AITER checkout. `DOCS_RS` set: nothing is compiled, the docs still build.

use std::path::PathBuf;

fn main() {
    if let Err(e) = build() {
        panic!("{e}");
    }
}

fn build() -> Result<(), Box<dyn std::error::Error>> {
    let env = qola_build::build_script_env;
    if env("DOCS_RS")?.is_some() {
        return Ok(());
    }
    match env("QOLA_KERNELS")?.as_deref() {
        None | Some("builtin") => {}
        Some("aiter") => {
            return Err(
                "QOLA_KERNELS=aiter: building AITER's own kernels is not available in \
                        this version of qola-sys; unset QOLA_KERNELS or set it to builtin"
                    .into(),
            );
        }
        Some(other) => {
            return Err(format!("QOLA_KERNELS={other}: expected builtin or aiter").into());
        }
    }
    let manifest_dir = env("CARGO_MANIFEST_DIR")?.ok_or("CARGO_MANIFEST_DIR is not set")?;
    let kernels = PathBuf::from(manifest_dir).join("kernels");
    // A new or removed kernel file reruns the script; the files it reads are watched one by one.
    println!("cargo:rerun-if-changed={}", kernels.display());
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&kernels)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    sources.retain(|p| p.extension().is_some_and(|x| x == "hip"));
    sources.sort();
    let report = qola_build::HipBuild::new()
        .files(&sources)
        .include(kernels.join("include"))
        .flag("-std=c++17")
        .flag("-fvisibility=hidden")
        .export("qola_mha_fwd")
        .export("qola_mha_bwd")
        .export("qola_mha_bwd_workspace_size")
        .try_compile("qola_mha")?;
    println!(
        "cargo:rustc-env=QOLA_MHA_LIBRARY={}",
        report.library.display()
    );
    println!("cargo:include={}", kernels.join("include").display());
    Ok(())
}
