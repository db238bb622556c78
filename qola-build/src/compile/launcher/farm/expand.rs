//! hipcc's expansion: the clang driver and the flags `hipcc` adds (`--rocm-path`, the device
//! library path, `-isystem` directories, `--hip-version`, its `-mllvm` options), read from
//! hipcc itself (`HIPCC_VERBOSE=1` prints the command it runs; `-###` keeps clang from running
//! anything), so the farm compiles exactly what `hipcc` would.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::compile::Result;
use crate::compile::launcher::farm::problem;

/// The clang driver and the full compile arguments (the driver first), with the unit's source,
/// object and depfile still to be appended as for `hipcc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expanded {
    pub clang: PathBuf,
    pub args: Vec<String>,
}

/// Placeholder names the probe passes for the unit's own paths.
const SOURCE: &str = "qola-farm-probe-source.hip";

/// Expands `args` (the compiler first, then the flags shared by every unit).
/// `is_clang`: the compiler is a clang driver already (nothing to expand); `env`: the
/// compiler's environment (a module's `HIP_CLANG_PATH`, which names the clang it expands to).
pub(crate) fn expand(
    args: &[String],
    env: &[(String, String)],
    is_clang: bool,
    work: &Path,
) -> Result<Expanded> {
    if is_clang {
        return Ok(Expanded {
            clang: PathBuf::from(&args[0]),
            args: args.to_vec(),
        });
    }
    crate::common::io::own_dir(work)?;
    let out = Command::new(&args[0])
        .args(&args[1..])
        .args(["-c", SOURCE, "-o", "qola-farm-probe.o", "-###"])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("HIPCC_VERBOSE", "1")
        .current_dir(work)
        .output()
        .map_err(|e| problem(format!("cannot run {} to read its expansion: {e}", args[0])))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    parse(&text).map(in_install_dir).ok_or_else(|| {
        problem(format!(
                "{} printed no `hipcc-cmd:` line with HIPCC_VERBOSE=1, so qola cannot hand its clang command to sccache-dist; unset QOLA_COMPILER_LAUNCHER's dist config or use a hipcc that prints it:\n{text}",
                args[0]
            ))
    })
}

/// The clang command of hipcc's `hipcc-cmd:` line, without the probe's own arguments.
pub(crate) fn parse(text: &str) -> Option<Expanded> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("hipcc-cmd:"))?;
    let words = shlex::split(line.trim())?;
    let mut args: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match words[i].as_str() {
            "-###" | SOURCE => {}
            "-c" => {}
            "-o" if words.get(i + 1).is_some_and(|o| o == "qola-farm-probe.o") => i += 1,
            _ => args.push(words[i].clone()),
        }
        i += 1;
    }
    let clang = PathBuf::from(args.first()?);
    Some(Expanded { clang, args })
}

/// The driver as its own installation directory names it (`/usr/lib/llvm-15/bin/clang++` for
/// Debian's `/usr/bin/clang++-15`): clang looks for the tools it runs (clang-offload-bundler,
/// lld) next to the path it was started as, so on a build server, whose root is the toolchain
/// archive, it must be started from there.
fn in_install_dir(mut e: Expanded) -> Expanded {
    let Ok(real) = std::fs::canonicalize(&e.clang) else {
        return e;
    };
    let dir = real.parent().expect("a binary's directory");
    let name = e
        .clang
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let driver = [
        name.as_str(),
        if name.contains("++") {
            "clang++"
        } else {
            "clang"
        },
    ]
    .iter()
    .map(|n| dir.join(n))
    .find(|p| p.exists())
    .unwrap_or(real);
    e.args[0] = driver.to_string_lossy().into_owned();
    e.clang = driver;
    e
}
