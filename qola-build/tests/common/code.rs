//! What an object's code is, for tests that compare two builds of the same sources: the code
//! objects of its fat binary, each kernel's instructions and metadata, each host function's
//! instructions and relocations (read with the sid toolchain's LLVM tools).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The device code objects of `object`'s fat binary (`.hip_fatbin`), by offload target.
pub fn fat_binary_code_objects(object: &Path, scratch: &Path) -> Vec<(String, Vec<u8>)> {
    let bundle = scratch.join("fatbin.bin");
    let status = std::process::Command::new("objcopy")
        .args(["-O", "binary", "--only-section=.hip_fatbin"])
        .arg(object)
        .arg(&bundle)
        .status()
        .unwrap();
    assert!(status.success(), "objcopy {}", object.display());
    let bytes = std::fs::read(&bundle).unwrap();
    let magic = b"__CLANG_OFFLOAD_BUNDLE__";
    let start = bytes
        .windows(magic.len())
        .position(|w| w == magic)
        .expect("an offload bundle");
    let bytes = &bytes[start..];
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let mut at = magic.len();
    let entries = u64_at(at);
    at += 8;
    let mut found = Vec::new();
    for _ in 0..entries {
        let (offset, size, length) = (u64_at(at), u64_at(at + 8), u64_at(at + 16));
        let target = String::from_utf8_lossy(&bytes[at + 24..at + 24 + length]).into_owned();
        at += 24 + length;
        if !target.starts_with("host-") {
            found.push((target, bytes[offset..offset + size].to_vec()));
        }
    }
    found
}

/// An object's code, as a build's output is compared.
#[derive(Debug, Default)]
pub struct Code {
    /// Per kernel (`<target> <name>`): its code bytes and its metadata entry (registers,
    /// spills, LDS, arguments).
    pub kernels: BTreeMap<String, (Vec<u8>, String)>,
    /// Per host function: its code bytes (relocated places as the compiler left them) and its
    /// relocations (place, type, the symbol or section named; not the addend, which follows
    /// the layout of the object's data).
    pub host: BTreeMap<String, (Vec<u8>, Vec<String>)>,
}

/// An ELF symbol, as [`elf_functions`] reads it.
#[derive(Clone)]
struct Symbol {
    name: String,
    value: usize,
    size: usize,
    section: usize,
    kind: usize,
}

/// The functions of an ELF64 little-endian file (an object or a code object): each `FUNC`
/// symbol's bytes and the relocations that fall inside it.
pub fn elf_functions(bytes: &[u8]) -> BTreeMap<String, (Vec<u8>, Vec<String>)> {
    let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap()) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    assert_eq!(&bytes[..5], b"\x7fELF\x02", "an ELF64 file");
    let (shoff, shentsize, shnum) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c));
    // (type, addr, offset, size, link, info, entsize) of each section.
    let sections: Vec<[usize; 7]> = (0..shnum)
        .map(|i| {
            let at = shoff + i * shentsize;
            [
                u32_at(at + 4),
                u64_at(at + 16),
                u64_at(at + 24),
                u64_at(at + 32),
                u32_at(at + 40),
                u32_at(at + 44),
                u64_at(at + 56),
            ]
        })
        .collect();
    let shstr = sections[u16_at(0x3e)];
    let c_str = |at: usize| {
        let end = bytes[at..].iter().position(|b| *b == 0).unwrap();
        String::from_utf8_lossy(&bytes[at..at + end]).into_owned()
    };
    let section_name = |i: usize| c_str(shstr[2] + u32_at(shoff + i * shentsize));
    // Every symbol of each symbol table.
    let mut symbols: Vec<Vec<Symbol>> = vec![Vec::new(); shnum];
    for (i, s) in sections.iter().enumerate() {
        if s[0] != 2 && s[0] != 11 {
            continue;
        }
        let strings = sections[s[4]][2];
        for k in 0..s[3] / 24 {
            let at = s[2] + k * 24;
            let name = c_str(strings + u32_at(at));
            let (kind, shndx) = (bytes[at + 4] & 0xf, u16_at(at + 6));
            symbols[i].push(Symbol {
                name,
                value: u64_at(at + 8),
                size: u64_at(at + 16),
                section: shndx,
                kind: kind as usize,
            });
        }
    }
    let mut out = BTreeMap::new();
    for table in &symbols {
        for Symbol {
            name,
            value,
            size,
            section: shndx,
            kind,
        } in table
        {
            if *kind != 2 || *size == 0 || *shndx == 0 || *shndx >= shnum {
                continue;
            }
            let section = sections[*shndx];
            let start = section[2] + value - section[1];
            let code = bytes[start..start + size].to_vec();
            let mut relocations = Vec::new();
            for rela in sections.iter().filter(|r| r[0] == 4 && r[5] == *shndx) {
                for k in 0..rela[3] / 24 {
                    let at = rela[2] + k * 24;
                    let (offset, info) = (u64_at(at), u64_at(at + 8));
                    if offset < *value || offset >= value + size {
                        continue;
                    }
                    let symbol = &symbols[rela[4]][info >> 32];
                    let target = match (symbol.kind, symbol.name.is_empty()) {
                        // A section's own symbol: the section's name.
                        (3, _) | (_, true) => section_name(symbol.section),
                        _ => symbol.name.clone(),
                    };
                    relocations.push(format!(
                        "{} {} {target}",
                        offset - value,
                        info & 0xffff_ffff
                    ));
                }
            }
            out.insert(name.clone(), (code, relocations));
        }
    }
    out
}

/// The sid root's LLVM tool `name`, as a path inside the root.
fn llvm_tool(hipcc: &Path, name: &str) -> PathBuf {
    let root = hipcc.parent().unwrap().join("sid-root");
    let llvm = std::fs::read_dir(root.join("usr/lib"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("llvm-"))
        .max()
        .expect("an llvm-<n> in the sid root");
    PathBuf::from("/usr/lib").join(llvm).join("bin").join(name)
}

/// The metadata entries of `amdhsa.kernels` in `llvm-readelf --notes` output, by `.name`.
fn kernel_metadata(notes: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut entry: Option<String> = None;
    let mut in_kernels = false;
    let finish = |entry: Option<String>, out: &mut BTreeMap<String, String>| {
        if let Some(text) = entry {
            let name = text
                .lines()
                .find_map(|l| l.trim().strip_prefix(".name:"))
                .unwrap_or("")
                .trim()
                .to_string();
            out.insert(name, text);
        }
    };
    for line in notes.lines() {
        if line.starts_with("amdhsa.kernels:") {
            in_kernels = true;
            continue;
        }
        if !in_kernels {
            continue;
        }
        if line.starts_with("  - ") {
            finish(entry.take(), &mut out);
            entry = Some(String::new());
        } else if !line.starts_with("   ") {
            in_kernels = false;
            finish(entry.take(), &mut out);
            continue;
        }
        if let Some(text) = entry.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    finish(entry, &mut out);
    out
}

/// The code of `object` (a HIP object with a fat binary): its kernels read from the code
/// objects (metadata with the sid root's `llvm-readelf`), its host functions from the object.
pub fn code_of(hipcc: &Path, object: &Path, scratch: &Path) -> Code {
    let mut code = Code::default();
    for (target, bytes) in fat_binary_code_objects(object, scratch) {
        let file = scratch.join("code-object.elf");
        std::fs::write(&file, &bytes).unwrap();
        let out =
            qola_tests::sid_root_command(hipcc, &llvm_tool(hipcc, "llvm-readelf"), &[scratch])
                .arg("--notes")
                .arg(&file)
                .output()
                .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let functions = elf_functions(&bytes);
        for (name, meta) in kernel_metadata(&String::from_utf8_lossy(&out.stdout)) {
            let (instructions, _) = functions
                .get(&name)
                .cloned()
                .unwrap_or_else(|| panic!("no code for the kernel {name}"));
            code.kernels
                .insert(format!("{target} {name}"), (instructions, meta));
        }
    }
    code.host = elf_functions(&std::fs::read(object).unwrap());
    code
}
