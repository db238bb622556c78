//! One cached compiler probe: compile an empty kernel with some arguments, once per compiler
//! identity and arguments, and remember the answer in qola's cache (`<cache>/probes/`). Used to
//! check architectures ([`super::archs`]) and `-mllvm` flags (AITER's recipes).

use std::path::Path;
use std::process::Command;

use crate::common::io::write_atomic;
use crate::compile::{CompileError, Result};

/// What the compiler said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProbeAnswer {
    /// It compiled the empty kernel.
    Accepted,
    /// It refused, with its standard error.
    Rejected(String),
}

/// The probe's source: an empty kernel with the HIP runtime's header (what a build's compile
/// reads first).
pub(crate) const EMPTY_KERNEL: &str =
    "#include <hip/hip_runtime.h>\n__global__ void qola_probe() {}\n";

/// Compiles `source` with `command` (program first, then every argument but the source and
/// `-o`), or reads the answer kept for the same compiler (its `identity`) and `key_command` (the
/// command as it is known in every place: its roots by name) under `cache`. `scratch` holds the
/// probe's files; `env`: the compiler's environment (see [`super::HipToolchain::env`]).
pub(crate) fn probe(
    identity: &str,
    env: &[(String, String)],
    command: &[String],
    source: &str,
    key_command: &[String],
    cache: Option<&Path>,
    scratch: &Path,
) -> Result<ProbeAnswer> {
    let key =
        blake3::hash(format!("{identity}\0{}\0{source}", key_command[1..].join("\0")).as_bytes())
            .to_hex();
    let record = cache.map(|c| c.join(crate::cache_dir::PROBES).join(&key[..24]));
    if let Some(known) = record
        .as_ref()
        .and_then(|r| std::fs::read_to_string(r).ok())
    {
        return Ok(match known.strip_prefix("rejected\n") {
            Some(stderr) => ProbeAnswer::Rejected(stderr.to_string()),
            None => ProbeAnswer::Accepted,
        });
    }
    crate::common::io::own_dir(scratch)?;
    // Named by this process too: a probe of another build at once in the same scratch never
    // loses its source to this one's clean-up.
    let stem = format!("qola-probe-{}-{}", std::process::id(), &key[..12]);
    let object = scratch.join(format!("{stem}.o"));
    let source_file = scratch.join(format!("{stem}.hip"));
    write_atomic(&source_file, source.as_bytes())?;
    let output = Command::new(&command[0])
        .args(&command[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .arg(&source_file)
        .arg("-o")
        .arg(&object)
        .output()
        .map_err(|e| CompileError::HipCompilerUnusable {
            path: command[0].clone().into(),
            why: format!("cannot run it: {e}"),
        })?;
    // The probe's files are scratch: none stays, so a build that probed leaves the same files
    // as one that found the answers cached.
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_file(&source_file);
    let _ = std::fs::remove_dir(scratch); // when nothing else is there
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    // clang warns about some unknown `-mllvm` options and still succeeds.
    let answer = if output.status.success() && !stderr.contains("Unknown command line argument") {
        ProbeAnswer::Accepted
    } else {
        ProbeAnswer::Rejected(stderr)
    };
    if let Some(record) = &record {
        let text = match &answer {
            ProbeAnswer::Accepted => "accepted\n".to_string(),
            ProbeAnswer::Rejected(stderr) => format!("rejected\n{stderr}"),
        };
        // A cache that cannot be written keeps no answer: this build still has it.
        let _ = write_atomic(record, text.as_bytes());
    }
    Ok(answer)
}

impl super::HipToolchain {
    /// The start of a probe's compile for `arch`: the compiler, `-x hip`, the architecture, `-c`.
    fn probe_command(&self, arch: &str) -> Vec<String> {
        vec![
            self.path.to_string_lossy().into_owned(),
            "-x".to_string(),
            "hip".to_string(),
            format!("--offload-arch={arch}"),
            "-c".to_string(),
        ]
    }

    /// Whether the compiler's HIP headers declare `name` (an enumerator or a function): a
    /// kernel compiled with a header using it, once per compiler, the answer kept under `cache`.
    pub(crate) fn knows_hip_name(
        &self,
        name: &str,
        arch: &str,
        cache: &Path,
        scratch: &Path,
    ) -> Result<bool> {
        crate::common::io::own_dir(scratch)?;
        let header = scratch.join(format!("qola-probe-{name}.h"));
        // Rewritten only when it differs: a build whose answer is cached changes no file.
        crate::common::io::write_if_changed(
            &header,
            format!(
                "#include <hip/hip_runtime.h>\nstatic const long qola_probe_name = (long){name};\n"
            )
            .as_bytes(),
        )?;
        let mut start = self.probe_command(arch);
        start.push("-include".to_string());
        let mut command = start.clone();
        command.push(header.to_string_lossy().into_owned());
        let mut key_command = start;
        key_command.push(format!("hip-name:{name}"));
        let answer = probe(
            &self.identity,
            &self.env,
            &command,
            EMPTY_KERNEL,
            &key_command,
            Some(cache),
            scratch,
        )?;
        Ok(answer == ProbeAnswer::Accepted)
    }

    /// Whether the compiler accepts `flag` (such as an `-mllvm` option) for `arch`: an empty
    /// translation unit compiled with it, without the HIP headers and device libraries
    /// (`-nogpuinc -nogpulib`: the compiler parses its `-mllvm` options before any source, and
    /// a tenth of a second beats the second and a half the runtime's header costs per flag),
    /// once per compiler, the answer kept under `cache`.
    pub(crate) fn accepts_flag(
        &self,
        flag: &str,
        arch: &str,
        cache: &Path,
        scratch: &Path,
    ) -> Result<bool> {
        let mut command = self.probe_command(arch);
        command.extend(["-nogpuinc", "-nogpulib"].map(String::from));
        command.extend(flag.split_whitespace().map(String::from));
        let answer = probe(
            &self.identity,
            &self.env,
            &command,
            "",
            &command,
            Some(cache),
            scratch,
        )?;
        Ok(answer == ProbeAnswer::Accepted)
    }
}
