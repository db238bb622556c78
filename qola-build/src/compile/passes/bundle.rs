//! The fat binary a host pass embeds (`-fcuda-include-gpubinary`): clang's offload bundle of
//! the device passes' code objects, written here as `clang-offload-bundler -type=o` writes it
//! for a HIP compile without relocatable device code (checked byte for byte by the tests):
//!
//! ```text
//! "__CLANG_OFFLOAD_BUNDLE__"  u64 entries
//! per entry: u64 offset, u64 size, u64 length of the target, the target
//! the entries' bytes, each at an offset aligned to `-bundle-align`
//! ```
//!
//! The targets, their order and the alignment are the driver's: read from the bundler command
//! it prints for the build's single call (`-###`), since they differ between clang versions
//! (clang 15 names the host `host-x86_64-unknown-linux` and sorts the architectures), and each
//! target spelled as the bundler writes it, read from a fat binary it made (clang 21's bundler
//! writes the host as `host-x86_64-unknown-linux-gnu-` although the command says
//! `host-x86_64-unknown-linux-gnu`).

use std::path::Path;

/// The bundle layout of a build: the host target, then one target per architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The host's target (first, with no bytes).
    pub host: String,
    /// Each architecture's target, in the driver's order.
    pub devices: Vec<(String, String)>,
    /// The offset alignment of each entry's bytes.
    pub align: u64,
}

const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";

impl Layout {
    /// The layout in the bundler command of `printed` (the driver's `-###` output), for the
    /// architectures `archs`.
    pub(crate) fn from_driver(printed: &str, archs: &[String]) -> Option<Layout> {
        let bundler = printed
            .lines()
            .find(|l| l.contains("clang-offload-bundler") && l.contains("-type=o"))?;
        let value = |name: &str| {
            bundler
                .split('"')
                .find_map(|word| word.strip_prefix(name).map(String::from))
        };
        let targets = value("-targets=")?;
        let align = value("-bundle-align=").map_or(Some(1), |a| a.parse().ok())?;
        let mut host = None;
        let mut devices = Vec::new();
        for target in targets.split(',') {
            if target.starts_with("host-") {
                host = Some(target.to_string());
                continue;
            }
            let arch = archs.iter().find(|a| {
                target.ends_with(&format!("--{a}")) || target.ends_with(&format!("-{a}"))
            })?;
            devices.push((arch.clone(), target.to_string()));
        }
        (devices.len() == archs.len()).then_some(Layout {
            host: host?,
            devices,
            align,
        })
    }

    /// The layout as qola keeps it in its cache: the alignment, the host, then an architecture
    /// and its target per line.
    pub(crate) fn to_text(&self) -> String {
        let mut text = format!("{}\n{}\n", self.align, self.host);
        for (arch, target) in &self.devices {
            text.push_str(&format!("{arch} {target}\n"));
        }
        text
    }

    /// A layout kept by [`Layout::to_text`], for the architectures `archs`.
    pub(crate) fn parse(text: &str, archs: &[String]) -> Option<Layout> {
        let mut lines = text.lines();
        let align = lines.next()?.parse().ok()?;
        let host = lines.next()?.to_string();
        let devices: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(' '))
            .map(|(a, t)| (a.to_string(), t.to_string()))
            .collect();
        let same = devices.len() == archs.len()
            && archs.iter().all(|a| devices.iter().any(|(d, _)| d == a));
        same.then_some(Layout {
            host,
            devices,
            align,
        })
    }

    /// The layout with each target spelled as in `bundle` (a fat binary the driver made for the
    /// same architectures), where the spellings differ only by a trailing `-`.
    pub(crate) fn spelled_as_in(mut self, bundle: &[u8]) -> Option<Layout> {
        let written = targets(bundle)?;
        let spelled = |target: &str| {
            written
                .iter()
                .find(|w| w.as_str() == target || w.trim_end_matches('-') == target)
                .cloned()
        };
        self.host = spelled(&self.host)?;
        for (_, target) in &mut self.devices {
            *target = spelled(target)?;
        }
        Some(self)
    }

    /// The bundle of the code objects `objects` (architecture, file), one per architecture.
    pub(crate) fn bundle(&self, objects: &[(String, Vec<u8>)]) -> Option<Vec<u8>> {
        let mut entries: Vec<(&str, &[u8])> = vec![(self.host.as_str(), &[][..])];
        for (arch, target) in &self.devices {
            let (_, bytes) = objects.iter().find(|(a, _)| a == arch)?;
            entries.push((target, bytes));
        }
        let align = |at: u64| at.div_ceil(self.align) * self.align;
        let header: u64 = (MAGIC.len() + 8) as u64
            + entries
                .iter()
                .map(|(t, _)| 24 + t.len() as u64)
                .sum::<u64>();
        let mut offsets = Vec::new();
        let mut at = align(header);
        for (_, bytes) in &entries {
            offsets.push(at);
            if !bytes.is_empty() {
                at = align(at + bytes.len() as u64);
            }
        }
        let mut out = MAGIC.to_vec();
        out.extend((entries.len() as u64).to_le_bytes());
        for ((target, bytes), offset) in entries.iter().zip(&offsets) {
            out.extend(offset.to_le_bytes());
            out.extend((bytes.len() as u64).to_le_bytes());
            out.extend((target.len() as u64).to_le_bytes());
            out.extend(target.as_bytes());
        }
        for ((_, bytes), offset) in entries.iter().zip(&offsets) {
            out.resize(*offset as usize, 0);
            out.extend_from_slice(bytes);
        }
        Some(out)
    }

    /// Writes the bundle of the code objects at `objects` (architecture, path) to `output`.
    pub(crate) fn write(&self, objects: &[(String, &Path)], output: &Path) -> std::io::Result<()> {
        let mut read = Vec::new();
        for (arch, path) in objects {
            read.push((arch.clone(), std::fs::read(path)?));
        }
        let bytes = self
            .bundle(&read)
            .ok_or_else(|| std::io::Error::other("a code object of the bundle is missing"))?;
        std::fs::write(output, bytes)
    }
}

/// The targets of the offload bundle in `bytes` (which may hold more before it: a section's
/// contents).
pub(crate) fn targets(bytes: &[u8]) -> Option<Vec<String>> {
    let start = bytes.windows(MAGIC.len()).position(|w| w == MAGIC)?;
    let bytes = &bytes[start..];
    let u64_at = |at: usize| -> Option<usize> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?) as usize)
    };
    let mut at = MAGIC.len();
    let entries = u64_at(at)?;
    at += 8;
    let mut found = Vec::new();
    for _ in 0..entries {
        let length = u64_at(at + 16)?;
        let target = bytes.get(at + 24..at + 24 + length)?;
        found.push(String::from_utf8_lossy(target).into_owned());
        at += 24 + length;
    }
    Some(found)
}

/// What the bundle-layout probe needs of the build.
pub(crate) struct LayoutProbe<'a> {
    /// The compiler and its arguments (every root by name, every `--offload-arch`).
    pub command: &'a [String],
    /// The build's architectures.
    pub archs: &'a [String],
    /// qola's cache (the answer is kept in its `probes/`).
    pub cache: &'a Path,
    /// The build's scratch directory.
    pub scratch: &'a Path,
    /// Where the compiler runs (the roots' links directory, which exists).
    pub links: &'a Path,
    /// A path's name (see `roots`).
    pub name: &'a dyn Fn(&Path) -> String,
    /// The compiler's environment.
    pub env: &'a [(String, String)],
}

/// The probe's kernels, the cheapest first: one that needs neither the HIP headers nor the
/// device libraries (it declares the launch function the host stub calls; with the sid
/// toolchain for `gfx942;gfx950` it compiles in 0.27 s, the kernel with `hip_runtime.h` in
/// 2.2 s), then, for a build whose own arguments need the headers (an `-include` of its own),
/// the one with them. The driver bundles both the same way.
const PROBE_KERNELS: [(&str, &[&str]); 2] = [
    (
        "struct dim3 { unsigned x, y, z; };\n\
         extern \"C\" int hipLaunchKernel(const void *, dim3, dim3, void **, unsigned long, void *);\n\
         __attribute__((global)) void qola_bundle_probe() {}\n",
        &["-nogpuinc", "-nogpulib"],
    ),
    (
        "#include <hip/hip_runtime.h>\n__global__ void qola_bundle_probe() {}\n",
        &[],
    ),
];

/// How the driver of `p.command` bundles device code objects: its `-###` command for a tiny
/// kernel, checked against the fat binary of that kernel compiled for the build's
/// architectures (`objcopy` reads it). Asked once per compiler and arguments, kept in qola's
/// cache; `None` when the driver does not say.
pub(crate) fn probe_layout(p: &LayoutProbe) -> Option<Layout> {
    let key = blake3::hash(p.command.join("\0").as_bytes()).to_hex();
    let kept = p
        .cache
        .join(crate::cache_dir::PROBES)
        .join(format!("bundle-layout-{}", &key[..32]));
    if let Ok(text) = std::fs::read_to_string(&kept) {
        return Layout::parse(&text, p.archs);
    }
    let layout = PROBE_KERNELS
        .iter()
        .find_map(|(text, flags)| layout_of(p, text, flags))?;
    if let Some(dir) = kept.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = crate::common::io::write_atomic(&kept, layout.to_text().as_bytes());
    Some(layout)
}

/// The layout the driver says for the kernel `text` compiled with `p.command` and `flags`, as
/// the fat binary of its compile spells it; `None` when either is missing.
fn layout_of(p: &LayoutProbe, text: &str, flags: &[&str]) -> Option<Layout> {
    // A unit with a kernel: one without embeds no fat binary at all.
    let probe = p.scratch.join("qola-bundle-probe.hip");
    std::fs::write(&probe, text).ok()?;
    let object = p.scratch.join("qola-bundle-probe.o");
    let section = p.scratch.join("qola-bundle-probe.hipfb");
    let run = |extra: &[&str]| {
        let mut argv = p.command.to_vec();
        argv.extend(flags.iter().map(|f| f.to_string()));
        argv.push("-cuid=0".to_string());
        argv.extend(["-c".to_string(), (p.name)(&probe)]);
        argv.extend(extra.iter().map(|a| a.to_string()));
        std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .envs(p.env.iter().map(|(k, v)| (k, v)))
            .current_dir(p.links)
            .output()
            .ok()
    };
    let printed = run(&["-###", "-o", "/dev/null"])?;
    let layout = Layout::from_driver(&String::from_utf8_lossy(&printed.stderr), p.archs);
    let object_name = object.display().to_string();
    let compiled = run(&["-o", &object_name]).is_some_and(|o| o.status.success());
    let extracted = compiled
        && std::process::Command::new("objcopy")
            .args(["-O", "binary", "--only-section=.hip_fatbin"])
            .arg(&object)
            .arg(&section)
            .status()
            .is_ok_and(|s| s.success());
    let bytes = std::fs::read(&section).ok().filter(|_| extracted);
    for file in [&probe, &object, &section] {
        let _ = std::fs::remove_file(file);
    }
    layout?.spelled_as_in(&bytes?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The architectures of `layout`'s device entries, in its order.
    fn device_archs(layout: &Layout) -> Vec<&str> {
        layout.devices.iter().map(|(a, _)| a.as_str()).collect()
    }

    const CLANG_21: &str = " \"/usr/lib/llvm-21/bin/clang-offload-bundler\" \"-type=o\" \"-bundle-align=4096\" \"-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx942,hipv4-amdgcn-amd-amdhsa--gfx950\" \"-input=/dev/null\" \"-input=/tmp/t-gfx942.out\" \"-input=/tmp/t-gfx950.out\" \"-output=/tmp/t.hipfb\"";

    /// The header-free probe kernel answers by itself (the one with `hip_runtime.h` is only its
    /// fallback, which would hide a light probe that no longer compiles): Debian's hipcc for
    /// two architectures. Skipped without hipcc, failed in CI.
    #[test]
    #[allow(clippy::disallowed_methods)] // CI's marker, read as qola-tests reads it
    fn the_probe_kernel_without_the_hip_headers_gives_the_layout() {
        let Ok(hipcc) = which::which("hipcc") else {
            assert!(std::env::var_os("CI").is_none(), "CI: hipcc is missing");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let command = [
            "-x",
            "hip",
            "-O3",
            "--offload-arch=gfx90a",
            "--offload-arch=gfx908",
        ];
        let command: Vec<String> = std::iter::once(hipcc.display().to_string())
            .chain(command.iter().map(|a| a.to_string()))
            .collect();
        let archs = ["gfx90a".to_string(), "gfx908".to_string()];
        let name = |p: &Path| p.display().to_string();
        let probe = LayoutProbe {
            command: &command,
            archs: &archs,
            cache: dir.path(),
            scratch: dir.path(),
            links: dir.path(),
            name: &name,
            env: &[],
        };
        let (text, flags) = PROBE_KERNELS[0];
        let layout = layout_of(&probe, text, flags).expect("the light probe's layout");
        assert_eq!(device_archs(&layout), ["gfx908", "gfx90a"]);
    }

    #[test]
    fn the_layout_is_the_driver_s() {
        let archs = ["gfx950".to_string(), "gfx942".to_string()];
        let layout = Layout::from_driver(CLANG_21, &archs).unwrap();
        assert_eq!(layout.host, "host-x86_64-unknown-linux-gnu");
        assert_eq!(device_archs(&layout), ["gfx942", "gfx950"]);
        assert_eq!(layout.align, 4096);
        assert_eq!(Layout::from_driver("no bundler here", &archs), None);
    }

    #[test]
    fn a_bundle_has_the_header_table_and_aligned_entries_clang_writes() {
        let layout = Layout {
            host: "host-x".to_string(),
            devices: vec![
                ("a".to_string(), "hip--a".to_string()),
                ("b".to_string(), "hip--b".to_string()),
            ],
            align: 16,
        };
        let bytes = layout
            .bundle(&[
                ("b".to_string(), vec![2; 3]),
                ("a".to_string(), vec![1; 20]),
            ])
            .unwrap();
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        assert_eq!(&bytes[..24], MAGIC);
        assert_eq!(u64_at(24), 3);
        // Header: 32 + 3 * 24 + 6 + 6 + 6 = 122 bytes, so the first entry is at 128.
        assert_eq!((u64_at(32), u64_at(40)), (128, 0));
        assert_eq!((u64_at(32 + 30), u64_at(32 + 38)), (128, 20));
        assert_eq!((u64_at(32 + 60), u64_at(32 + 68)), (160, 3));
        assert_eq!(&bytes[128..148], &[1; 20]);
        assert_eq!(&bytes[160..], &[2; 3]);
        assert_eq!(targets(&bytes).unwrap(), ["host-x", "hip--a", "hip--b"]);
        // Spelled as another bundle writes them.
        let mut written = layout.clone();
        written.host = "host-x-".to_string();
        let rewritten = layout
            .spelled_as_in(
                &written
                    .bundle(&[("a".into(), vec![1]), ("b".into(), vec![2])])
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(rewritten.host, "host-x-");
    }
}
