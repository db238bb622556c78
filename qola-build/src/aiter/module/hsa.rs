//! Embedding AITER's hsa code objects into the library: every `.co` under
//! `hsa/<arch>/<subdir>/` of every architecture built becomes an `alignas(4096)` byte array in a
//! generated header, so the library needs no `AITER_ASM_DIR` at run time. The arrays are C++17
//! inline variables: every translation unit that includes the header shares one copy. Two forms,
//! chosen by what the tree's loader reads ([`HsaForm::of`]):
//!
//! * **The tree's map** (AITER since 7a24cd87: `aiter_hip_common.h` includes
//!   `AITER_EMBEDDED_HSA_HEADER` and looks code objects up in `AITER_EMBEDDED_HSA_MAP` by
//!   `hsa/<arch>/<path>` when `AITER_ASM_DIR` is unset): `aiter_embedded_hsa_<module>.h`, QoLA's
//!   form, defining that map (`std::unordered_map<std::string, std::string_view>`) and the macro,
//!   given to the compile as `-DAITER_EMBEDDED_HSA_HEADER="aiter_embedded_hsa_<module>.h"`. The
//!   name is AITER's module's (`libmha_fwd`), not the library's: a namespace changes no unit.
//! * **qola's lookup** (AITER 05a0d1f, whose loader knows no embedding): `aiter_embedded_hsa.h`
//!   with `aiter_embedded_hsa_find(path)` for the running device's architecture, which patch 0001
//!   of qola's series makes AITER's loader call first when `AITER_EMBEDDED_HSA` is defined.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::aiter::Result;
use crate::common::io::io_error;
use crate::common::io::write_if_changed;

/// How the tree's loader finds embedded code objects (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HsaForm {
    /// The tree reads `AITER_EMBEDDED_HSA_HEADER` and `AITER_EMBEDDED_HSA_MAP`.
    TreeMap,
    /// qola's `aiter_embedded_hsa_find`, under `AITER_EMBEDDED_HSA` (qola's patch 0001).
    QolaLookup,
}

impl HsaForm {
    /// The form the tree at `meta` (its `csrc/include/aiter_hip_common.h`) reads.
    pub(crate) fn of(meta: &Path) -> HsaForm {
        let common = meta.join("csrc/include/aiter_hip_common.h");
        match std::fs::read_to_string(common) {
            Ok(text) if text.contains("AITER_EMBEDDED_HSA_HEADER") => HsaForm::TreeMap,
            _ => HsaForm::QolaLookup,
        }
    }
}

/// What [`embed_hsa`] wrote.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EmbeddedHsa {
    /// The generated header (`aiter_embedded_hsa.h`, or `aiter_embedded_hsa_<md_name>.h`).
    pub header: PathBuf,
    /// The define that makes the tree's loader use it (`AITER_EMBEDDED_HSA`, or
    /// `AITER_EMBEDDED_HSA_HEADER` with the header's quoted name).
    pub define: (String, Option<String>),
    /// Code objects embedded.
    pub blobs: usize,
    /// Code objects embedded per architecture, in the order given.
    pub per_arch: Vec<(String, usize)>,
    /// Their bytes in total.
    pub bytes: u64,
}

fn code_objects(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if crate::common::io::is_absent(&e) => return Ok(()),
        Err(e) => return Err(io_error("read", dir)(e).into()),
    };
    for entry in entries {
        let entry = entry.map_err(io_error("read", dir))?;
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            code_objects(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "co") {
            out.push(path);
        }
    }
    Ok(())
}

/// The subdirectories of `subdirs` that no architecture of `archs` has under `<root>/hsa/`.
pub(crate) fn absent<'a>(root: &Path, archs: &[String], subdirs: &'a [String]) -> Vec<&'a str> {
    subdirs
        .iter()
        .filter(|subdir| {
            !archs
                .iter()
                .any(|arch| root.join("hsa").join(arch).join(subdir).is_dir())
        })
        .map(String::as_str)
        .collect()
}

/// One code object to embed.
struct Blob {
    arch: String,
    /// Its path under `hsa/<arch>/`.
    rel: String,
    data: Vec<u8>,
}

/// How many code objects each architecture has, in the order given.
type PerArch = Vec<(String, usize)>;

/// The code objects of `hsa/<arch>/<subdir>` for each architecture and each of `subdirs`,
/// sorted per architecture, and how many each architecture has.
fn collect(root: &Path, archs: &[String], subdirs: &[String]) -> Result<(Vec<Blob>, PerArch)> {
    let mut blobs = Vec::new();
    let mut per_arch = Vec::new();
    for arch in archs {
        let base = root.join("hsa").join(arch);
        let mut files = Vec::new();
        for subdir in subdirs {
            code_objects(&base.join(subdir), &mut files)?;
        }
        files.sort();
        per_arch.push((arch.clone(), files.len()));
        for file in &files {
            blobs.push(Blob {
                arch: arch.clone(),
                rel: file
                    .strip_prefix(&base)
                    .unwrap_or(file)
                    .to_string_lossy()
                    .into_owned(),
                data: std::fs::read(file).map_err(io_error("read", file))?,
            });
        }
    }
    Ok((blobs, per_arch))
}

/// The C++ text of one byte array, `alignas(4096)` (a code object loads from an aligned
/// address).
fn byte_array(text: &mut String, name: &str, blob: &Blob) {
    let _ = writeln!(
        text,
        "// {}/{}\nalignas(4096) inline const unsigned char {name}[{}] = {{",
        blob.arch,
        blob.rel,
        blob.data.len()
    );
    text.reserve(blob.data.len() * 4 + blob.data.len() / 24 * 5 + 8);
    for chunk in blob.data.chunks(24) {
        text.push_str("    ");
        for &byte in chunk {
            push_byte(text, byte);
        }
        text.push('\n');
    }
    text.push_str("};\n");
}

/// `byte` in decimal and a comma, as `write!(text, "{byte},")` gives them. The headers hold
/// megabytes of code objects, rewritten in memory on every build (a no-op too, to compare);
/// through `fmt` that was ~40% of a no-op `qola build`'s CPU in a debug build.
fn push_byte(text: &mut String, byte: u8) {
    if byte >= 100 {
        text.push(char::from(b'0' + byte / 100));
    }
    if byte >= 10 {
        text.push(char::from(b'0' + byte / 10 % 10));
    }
    text.push(char::from(b'0' + byte % 10));
    text.push(',');
}

/// Writes `<out_dir>/aiter_embedded_hsa.h` (qola's lookup, see the module docs) for
/// `hsa/<arch>/<subdir>` of each architecture and each of `subdirs`. The header is rewritten
/// only when its content changes.
pub fn embed_hsa(
    root: &Path,
    archs: &[String],
    subdirs: &[String],
    out_dir: &Path,
) -> Result<EmbeddedHsa> {
    let (blobs, per_arch) = collect(root, archs, subdirs)?;
    let mut text = String::new();
    let mut table = String::new();
    for (index, blob) in blobs.iter().enumerate() {
        byte_array(&mut text, &format!("qola_hsa_blob_{index}"), blob);
        let _ = writeln!(
            table,
            "    {{\"{}\", \"{}\", qola_hsa_blob_{index}, {}}},",
            blob.arch,
            blob.rel,
            blob.data.len()
        );
    }
    let bytes: u64 = blobs.iter().map(|b| b.data.len() as u64).sum();
    let header = format!(
        "// Generated by qola: {} hsa code objects ({bytes} bytes) from hsa/{{{}}}/{{{}}}.\n\
         #pragma once\n#include <stddef.h>\n#include <string.h>\n#include <hip/hip_runtime.h>\n\n{text}\n\
         struct qola_hsa_entry {{\n    const char* arch;\n    const char* path;\n    const unsigned char* data;\n    size_t size;\n}};\n\n\
         inline const qola_hsa_entry qola_hsa_entries[] = {{\n{table}    {{nullptr, nullptr, nullptr, 0}},\n}};\n\n\
         // The current device's architecture without its feature suffix (gfx942 of\n\
         // gfx942:sramecc+:xnack-), or false when HIP cannot say.\n\
         inline bool qola_hsa_device_arch(char (&arch)[64]) {{\n\
         \x20   int device = 0;\n\
         \x20   hipDeviceProp_t props;\n\
         \x20   if (hipGetDevice(&device) != hipSuccess || hipGetDeviceProperties(&props, device) != hipSuccess) return false;\n\
         \x20   size_t n = 0;\n\
         \x20   while (n + 1 < sizeof arch && props.gcnArchName[n] && props.gcnArchName[n] != ':') {{ arch[n] = props.gcnArchName[n]; ++n; }}\n\
         \x20   arch[n] = 0;\n\
         \x20   return n > 0;\n}}\n\n\
         // The embedded code object AITER would load from AITER_ASM_DIR + hsaco for the current\n\
         // device's architecture, or nullptr.\n\
         inline const unsigned char* aiter_embedded_hsa_find(const char* hsaco) {{\n\
         \x20   char arch[64];\n\
         \x20   if (!qola_hsa_device_arch(arch)) return nullptr;\n\
         \x20   while (*hsaco == '/') ++hsaco;\n\
         \x20   for (const qola_hsa_entry* e = qola_hsa_entries; e->path; ++e) {{\n\
         \x20       if (strcmp(e->arch, arch) == 0 && strcmp(e->path, hsaco) == 0) return e->data;\n\
         \x20   }}\n\
         \x20   return nullptr;\n}}\n",
        blobs.len(),
        archs.join(","),
        subdirs.join(","),
    );
    let path = out_dir.join("aiter_embedded_hsa.h");
    write_if_changed(&path, header.as_bytes())?;
    Ok(EmbeddedHsa {
        header: path,
        define: ("AITER_EMBEDDED_HSA".to_string(), None),
        blobs: blobs.len(),
        per_arch,
        bytes,
    })
}

/// Writes `<out_dir>/aiter_embedded_hsa_<module>.h` (the tree's map, see the module docs) for
/// `hsa/<arch>/<subdir>` of each architecture and each of `subdirs`: `AITER_EMBEDDED_HSA_MAP`
/// is `::aiter_hsa::embedded_hsa_map`, keyed by `hsa/<arch>/<path>`. Rewritten only when its
/// content changes.
pub(crate) fn embed_hsa_map(
    root: &Path,
    archs: &[String],
    subdirs: &[String],
    out_dir: &Path,
    module: &str,
) -> Result<EmbeddedHsa> {
    let (blobs, per_arch) = collect(root, archs, subdirs)?;
    let mut text = String::new();
    let mut map = String::new();
    for (index, blob) in blobs.iter().enumerate() {
        byte_array(&mut text, &format!("blob_{index}"), blob);
        let _ = writeln!(
            map,
            "    {{\"hsa/{}/{}\", std::string_view(reinterpret_cast<const char*>(blob_{index}), {})}},",
            blob.arch,
            blob.rel,
            blob.data.len()
        );
    }
    let bytes: u64 = blobs.iter().map(|b| b.data.len() as u64).sum();
    let name = format!("aiter_embedded_hsa_{module}.h");
    let header = format!(
        "// Generated by qola: {} hsa code objects ({bytes} bytes) from hsa/{{{}}}/{{{}}}, for\n\
         // AITER's loader (AITER_EMBEDDED_HSA_HEADER, AITER_EMBEDDED_HSA_MAP).\n\
         #pragma once\n#include <cstdint>\n#include <string>\n#include <string_view>\n#include <unordered_map>\n\n\
         #define AITER_EMBEDDED_HSA_MAP ::aiter_hsa::embedded_hsa_map\n\n\
         namespace aiter_hsa {{\n\n{text}\n\
         inline const std::unordered_map<std::string, std::string_view> embedded_hsa_map = {{\n{map}}};\n\n\
         }} // namespace aiter_hsa\n",
        blobs.len(),
        archs.join(","),
        subdirs.join(","),
    );
    let path = out_dir.join(&name);
    write_if_changed(&path, header.as_bytes())?;
    Ok(EmbeddedHsa {
        header: path,
        define: (
            "AITER_EMBEDDED_HSA_HEADER".to_string(),
            Some(format!("\"{name}\"")),
        ),
        blobs: blobs.len(),
        per_arch,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_is_written_as_fmt_writes_it() {
        for byte in 0..=u8::MAX {
            let mut text = String::new();
            push_byte(&mut text, byte);
            assert_eq!(text, format!("{byte},"));
        }
    }

    #[test]
    fn every_architectures_code_objects_are_embedded_and_keyed_by_architecture() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for (arch, files) in [
            (
                "gfx942",
                &["fmha_v3_fwd/a.co", "fmha_v3_fwd/MI300/b.co", "other/c.co"][..],
            ),
            ("gfx950", &["fmha_v3_fwd/a.co"][..]),
        ] {
            for f in files {
                let path = root.join("hsa").join(arch).join(f);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, format!("{arch}/{f}")).unwrap();
            }
        }
        let out = root.join("out");
        let archs = [
            "gfx942".to_string(),
            "gfx950".to_string(),
            "gfx90a".to_string(),
        ];
        let e = embed_hsa(root, &archs, &["fmha_v3_fwd".to_string()], &out).unwrap();
        assert_eq!(
            e.per_arch,
            vec![
                ("gfx942".to_string(), 2),
                ("gfx950".to_string(), 1),
                ("gfx90a".to_string(), 0)
            ]
        );
        assert_eq!(e.blobs, 3);
        let header = std::fs::read_to_string(&e.header).unwrap();
        assert!(
            header.contains("{\"gfx942\", \"fmha_v3_fwd/MI300/b.co\""),
            "{header}"
        );
        assert!(
            header.contains("{\"gfx950\", \"fmha_v3_fwd/a.co\""),
            "{header}"
        );
        assert!(!header.contains("other/c.co"), "{header}");
        // A kernel set one architecture has is there; one none has is absent.
        let asked = ["fmha_v3_fwd".to_string(), "fmha_fwd_bf16".to_string()];
        assert_eq!(absent(root, &archs[1..], &asked), ["fmha_fwd_bf16"]);
        // Unchanged inputs: the header is not rewritten.
        let before = std::fs::metadata(&e.header).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        embed_hsa(root, &archs, &["fmha_v3_fwd".to_string()], &out).unwrap();
        assert_eq!(
            std::fs::metadata(&e.header).unwrap().modified().unwrap(),
            before
        );
    }

    #[test]
    fn the_trees_map_form_holds_every_code_object_under_the_key_aiter_looks_up() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let common = root.join("csrc/include/aiter_hip_common.h");
        std::fs::create_dir_all(common.parent().unwrap()).unwrap();
        std::fs::write(&common, "#include \"aiter_enum.h\"\n").unwrap();
        assert_eq!(HsaForm::of(root), HsaForm::QolaLookup);
        std::fs::write(
            &common,
            "#ifdef AITER_EMBEDDED_HSA_HEADER\n#include AITER_EMBEDDED_HSA_HEADER\n#endif\n",
        )
        .unwrap();
        assert_eq!(HsaForm::of(root), HsaForm::TreeMap);
        for (arch, file, bytes) in [
            ("gfx950", "f4gemm/a.co", &b"\x7fELF-a"[..]),
            ("gfx950", "f4gemm/sub/b.co", &b"b\0b"[..]),
            ("gfx942", "f4gemm/a.co", &b"942"[..]),
        ] {
            let path = root.join("hsa").join(arch).join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
        }
        let archs = ["gfx942".to_string(), "gfx950".to_string()];
        let out = root.join("out");
        let e = embed_hsa_map(root, &archs, &["f4gemm".to_string()], &out, "libgemm").unwrap();
        assert_eq!(e.blobs, 3);
        assert_eq!(
            e.define,
            (
                "AITER_EMBEDDED_HSA_HEADER".to_string(),
                Some("\"aiter_embedded_hsa_libgemm.h\"".to_string())
            )
        );
        // AITER's lookup, compiled: AITER_EMBEDDED_HSA_MAP.find("hsa/" + arch + "/" + path).
        let program = root.join("lookup.cpp");
        std::fs::write(
            &program,
            r#"#include <cstdio>
#include <string>
#include AITER_EMBEDDED_HSA_HEADER
int main() {
    for (const char* key : {"hsa/gfx950/f4gemm/a.co", "hsa/gfx950/f4gemm/sub/b.co", "hsa/gfx942/f4gemm/a.co", "hsa/gfx90a/f4gemm/a.co"}) {
        auto it = AITER_EMBEDDED_HSA_MAP.find(std::string(key));
        if (it == AITER_EMBEDDED_HSA_MAP.end()) { std::printf("%s: none\n", key); continue; }
        std::printf("%s: %zu %s aligned=%d\n", key, it->second.size(), std::string(it->second).c_str(),
                    int(reinterpret_cast<std::uintptr_t>(it->second.data()) % 4096 == 0));
    }
}
"#,
        )
        .unwrap();
        let binary = root.join("lookup");
        let built = std::process::Command::new("c++")
            .args(["-std=c++17", "-I"])
            .arg(&out)
            .arg(format!(
                "-DAITER_EMBEDDED_HSA_HEADER={}",
                e.define.1.as_ref().unwrap()
            ))
            .arg(&program)
            .arg("-o")
            .arg(&binary)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let run = std::process::Command::new(&binary).output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&run.stdout),
            "hsa/gfx950/f4gemm/a.co: 6 \x7fELF-a aligned=1\nhsa/gfx950/f4gemm/sub/b.co: 3 b aligned=1\nhsa/gfx942/f4gemm/a.co: 3 942 aligned=1\nhsa/gfx90a/f4gemm/a.co: none\n"
        );
    }
}
