//! Prebuilt libraries by content key, for real: machine A builds TE's narrow forward module
//! from the real AITER tree with the sid toolchain and publishes it to nginx's WebDAV on
//! loopback (started and stopped by the test); machine B (an empty HOME, an empty qola cache
//! and output directory, no checkout) gets it with no clone, no generator and no compile. Each
//! bad store or archive is its own test: one warning, then the module is built from source
//! (the fixtures' warm cache: nothing compiles), nothing half-unpacked left.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{assert_nothing_written, mtimes, stderr, tick};
use qola_tests::{HttpCache, NARROW_FWD_FILTER, fixtures_dir, tool};

/// What a test starts from: the real tree's commit and upstream, the sid toolchain, a
/// temporary directory and a TE-style manifest of the narrow forward module in it.
struct Machine {
    hipcc: PathBuf,
    tmp: tempfile::TempDir,
    manifest: PathBuf,
}

fn start() -> Option<Machine> {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return None;
    };
    let tmp = tempfile::tempdir().unwrap();
    let manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .archs(&["gfx942"])
        .narrow_forward()
        .write(tmp.path().join("te.toml"));
    Some(Machine {
        hipcc,
        tmp,
        manifest,
    })
}

impl Machine {
    /// `qola <verb>` on the fixtures' prepared tree and warm cache, into `<tmp>/<out>`.
    fn qola(&self, verb: &str, out: &str) -> Command {
        self.qola_at(
            verb,
            out,
            &fixtures_dir().join("aiter-narrow"),
            &fixtures_dir().join("cache"),
        )
    }

    /// `qola <verb>` with the checkout at `tree` and qola's cache at `cache`.
    fn qola_at(&self, verb: &str, out: &str, tree: &Path, cache: &Path) -> Command {
        self.qola_with(verb, out, tree, cache, &self.manifest)
    }

    /// [`Machine::qola_at`] with another manifest.
    fn qola_with(
        &self,
        verb: &str,
        out: &str,
        tree: &Path,
        cache: &Path,
        manifest: &Path,
    ) -> Command {
        let mut command = common::qola_command(&["GPU_ARCHS"]);
        command
            .arg(verb)
            .arg("-m")
            .arg(manifest)
            .arg("-a")
            .arg(tree)
            .arg("-o")
            .arg(self.tmp.path().join(out))
            .env("HIPCC", &self.hipcc)
            .env("QOLA_CACHE_DIR", cache)
            .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER);
        command
    }

    fn out(&self, out: &str) -> PathBuf {
        self.tmp.path().join(out)
    }

    /// The module's library key, from `qola plan --json` (the prepared tree's).
    fn key(&self) -> String {
        let plan = self.qola("plan", "plan").arg("--json").output().unwrap();
        assert!(plan.status.success(), "{}", stderr(&plan));
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        plan["modules"][0]["library_key"]["key"]
            .as_str()
            .unwrap_or_else(|| panic!("no key: {plan}"))
            .to_string()
    }

    /// A file store with the module published by a build into `published`: its directory.
    fn file_store(&self) -> PathBuf {
        let store = self.tmp.path().join("store");
        let url = format!("file://{}", store.display());
        let a = self
            .qola("build", "published")
            .args(["--publish", &url])
            .output()
            .unwrap();
        assert!(a.status.success(), "{}", stderr(&a));
        store
    }
}

/// The warnings of a run (that it waited for another test's use of the shared tree is
/// information, not a warning).
fn warnings(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.starts_with("qola: warning:"))
        .map(String::from)
        .collect()
}

/// Every file under `dir`, relative, with its bytes.
fn files(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    let mut out = Default::default();
    for sub in ["lib", "include", "configs", "aiter-headers"] {
        walk(dir, &dir.join(sub), &mut out);
    }
    out
}

#[test]
fn a_fresh_machine_gets_a_published_library_with_no_checkout_no_generator_and_no_compile() {
    let Some(m) = start() else { return };
    let Some(nginx) = tool("nginx", "nginx-light") else {
        return;
    };
    let server = HttpCache::start(&nginx, &m.tmp.path().join("nginx"));
    let url = format!("http://127.0.0.1:{}/cache/prebuilt", server.port);

    // Two CI jobs publish the key at once: each uploads its own temporary name and moves it
    // into place (whether the second saw the first's archive depends on timing: both ways
    // leave one whole archive, which machine B below unpacks and checks).
    let publishers: Vec<_> = ["p1", "p2"]
        .map(|out| {
            m.qola("build", out)
                .args(["--publish", &url])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .into_iter()
        .collect();
    for publisher in publishers {
        let out = publisher.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let puts = server.requests("PUT");
    assert!((1..=2).contains(&puts), "{puts} uploads");
    assert_eq!(
        server.requests("MOVE"),
        puts,
        "each upload moved into place"
    );
    // The key a plan computes from the prepared tree names the archive, the one file left.
    let key = m.key();
    let archive = server
        .www
        .join("cache/prebuilt/te_libmha_fwd")
        .join(format!("{key}.tar.zst"));
    let names: Vec<_> = std::fs::read_dir(archive.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, [archive.file_name().unwrap()], "no temporary left");

    // Machine A (CI again): builds from the tree qola prepared; the key is there already.
    let a = m
        .qola("build", "a")
        .args(["--publish", &url])
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(
        stderr(&a).contains("te_libmha_fwd: ") && stderr(&a).contains("is published already"),
        "{}",
        stderr(&a)
    );
    assert_eq!(server.requests("PUT"), puts);

    // Machine B: an empty HOME, qola cache and output directory, and no checkout.
    let b_tree = m.tmp.path().join("b-aiter");
    let b_cache = m.tmp.path().join("b-cache");
    let b_home = m.tmp.path().join("b-home");
    std::fs::create_dir_all(&b_home).unwrap();
    let b = || {
        m.qola_at("build", "b", &b_tree, &b_cache)
            .env("HOME", &b_home)
            .env("QOLA_PREBUILT_URL", &url)
            .arg("--timings")
            .output()
            .unwrap()
    };
    let first = b();
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("1/1 modules built (1 prebuilt"),
        "{}",
        stderr(&first)
    );
    assert!(
        stderr(&first).contains("0 of 0 units compiled"),
        "{}",
        stderr(&first)
    );
    assert!(!b_tree.exists(), "no clone: not one git object fetched");
    // Its timings report says so.
    let page = m.out("b/_qola/build/te_libmha_fwd/qola-timings-te_libmha_fwd.html");
    assert!(
        stderr(&first).contains(&format!("te_libmha_fwd: timings: {}", page.display())),
        "{}",
        stderr(&first)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("te_libmha_fwd: prebuilt "),
        "the report's summary line"
    );
    assert!(
        !b_cache.join("hip").exists(),
        "no unit compiled, no generator run"
    );
    assert_eq!(
        files(&m.out("b")),
        files(&m.out("a")),
        "A's files, byte for byte"
    );
    assert!(m.out("b/aiter-headers/csrc/include/mha_fwd.h").is_file());
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.out("b/manifest.json")).unwrap()).unwrap();
    assert_eq!(record["modules"][0]["prebuilt"], true);
    assert_eq!(server.requests("PUT"), puts, "B publishes nothing");

    // Again: nothing fetched, nothing written.
    let gets = server.requests("GET");
    let before = mtimes(&m.out("b"));
    tick();
    let again = b();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stderr(&again).contains("0 B fetched"), "{}", stderr(&again));
    assert_eq!(server.requests("GET"), gets);
    assert_nothing_written(&before, &m.out("b"));

    // --verify: the prebuilt is what a build from source makes.
    let verify = m
        .qola("build", "c")
        .args(["--prebuilt", &url, "--verify"])
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", stderr(&verify));
    assert!(
        stderr(&verify).contains("te_libmha_fwd: the prebuilt from")
            && stderr(&verify).contains("is byte-identical to this build"),
        "{}",
        stderr(&verify)
    );
}

/// `qola build --prebuilt url` from the prepared tree into a new output directory: it
/// succeeds, from source, with one warning (returned), and leaves no staging directory.
fn falls_back(m: &Machine, url: &str) -> String {
    falls_back_trusting(m, url, None)
}

/// [`falls_back`], the build trusting the key of the `.pub` file `trust`, if any
/// (`QOLA_TRUSTED_KEYS`).
fn falls_back_trusting(m: &Machine, url: &str, trust: Option<&Path>) -> String {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = format!(
        "fallback-{}",
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut command = m.qola("build", &dir);
    command.args(["--prebuilt", url]);
    if let Some(trust) = trust {
        command.env("QOLA_TRUSTED_KEYS", trust);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("1/1 modules built, 0 failed"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("(1 prebuilt"),
        "built from source: {}",
        stderr(&out)
    );
    assert!(m.out(&dir).join("lib/te_libmha_fwd.so").is_file());
    let warnings = warnings(&out);
    assert_eq!(warnings.len(), 1, "{}", stderr(&out));
    let left: Vec<_> = std::fs::read_dir(m.out(&dir).join("_qola/prebuilt"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| !n.to_string_lossy().ends_with(".json"))
        .collect();
    assert!(left.is_empty(), "nothing of the archive left: {left:?}");
    warnings[0].clone()
}

#[test]
fn a_key_the_store_does_not_have_is_a_warning_and_a_build_from_source() {
    let Some(m) = start() else { return };
    let empty = m.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let warning = falls_back(&m, &format!("file://{}", empty.display()));
    assert!(
        warning.contains("no prebuilt te_libmha_fwd at"),
        "{warning}"
    );
    assert!(
        warning.contains("none was published for this key"),
        "{warning}"
    );
}

#[test]
fn a_server_that_is_down_is_a_warning_and_a_build_from_source() {
    let Some(m) = start() else { return };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let warning = falls_back(&m, &format!("http://127.0.0.1:{port}/prebuilt"));
    assert!(warning.contains("not fetched from"), "{warning}");
    assert!(warning.contains("check that the server is up"), "{warning}");
}

/// A server on loopback that answers every request with `answer` (`None`: accepts and never
/// answers), until the test ends.
fn canned_server(answer: Option<&'static str>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            match answer {
                Some(answer) => {
                    let mut buf = [0u8; 4096];
                    let _ = stream.read(&mut buf);
                    let _ = stream.write_all(answer.as_bytes());
                }
                None => held.push(stream),
            }
        }
    });
    port
}

#[test]
fn a_server_that_does_not_answer_in_time_is_a_warning_and_a_build_from_source() {
    let Some(m) = start() else { return };
    let port = canned_server(None);
    let out = m
        .qola("build", "fallback")
        .args(["--prebuilt", &format!("http://127.0.0.1:{port}/p")])
        .env("QOLA_PREBUILT_TIMEOUT", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings = warnings(&out);
    assert_eq!(warnings.len(), 1, "{}", stderr(&out));
    assert!(
        warnings[0].contains("no answer within the timeout"),
        "{}",
        warnings[0]
    );
}

#[test]
fn an_http_error_or_a_refusal_is_a_warning_that_says_which() {
    let Some(m) = start() else { return };
    let error = canned_server(Some(
        "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ));
    let warning = falls_back(&m, &format!("http://127.0.0.1:{error}/p"));
    assert!(warning.contains("GET answered HTTP 500"), "{warning}");
    let refused = canned_server(Some(
        "HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ));
    let warning = falls_back(&m, &format!("http://127.0.0.1:{refused}/p"));
    assert!(
        warning.contains("GET answered HTTP 403: the store refused"),
        "{warning}"
    );
}

/// The published archive of the file store, and where it is.
fn published(m: &Machine) -> (PathBuf, Vec<u8>, String) {
    let store = m.file_store();
    let key = m.key();
    let path = store.join("te_libmha_fwd").join(format!("{key}.tar.zst"));
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes, format!("file://{}", store.display()))
}

#[test]
fn a_corrupt_archive_is_refused_and_the_module_built_from_source() {
    let Some(m) = start() else { return };
    let (path, mut bytes, url) = published(&m);
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let warning = falls_back(&m, &url);
    assert!(warning.contains("refused:"), "{warning}");
}

#[test]
fn a_truncated_archive_is_refused_and_the_module_built_from_source() {
    let Some(m) = start() else { return };
    let (path, bytes, url) = published(&m);
    std::fs::write(&path, &bytes[..bytes.len() / 3]).unwrap();
    let warning = falls_back(&m, &url);
    assert!(
        warning.contains("refused:") && warning.contains("truncated"),
        "{warning}"
    );
}

#[test]
fn an_archive_of_another_key_is_refused_and_the_module_built_from_source() {
    let Some(m) = start() else { return };
    let (path, bytes, url) = published(&m);
    // A whole, consistent archive whose index names another key, stored under this one.
    let mut all = members(&bytes);
    let mut index: serde_json::Value = serde_json::from_slice(&all[0].2).unwrap();
    index["key"] = "0".repeat(64).into();
    all[0].2 = serde_json::to_vec(&index).unwrap();
    std::fs::write(&path, repack(all, None)).unwrap();
    let warning = falls_back(&m, &url);
    assert!(
        warning.contains(&format!("holds the library of key {}", "0".repeat(64))),
        "{warning}"
    );
}

/// The members of an archive: each path, header and bytes.
fn members(archive: &[u8]) -> Vec<(PathBuf, tar::Header, Vec<u8>)> {
    let mut tar = tar::Archive::new(zstd::Decoder::new(archive).unwrap());
    tar.entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            (
                entry.path().unwrap().to_path_buf(),
                entry.header().clone(),
                data,
            )
        })
        .collect()
}

/// An archive of `members` (long paths written as tar writes them, sizes and checksums made
/// right), with `raw` (a header written as it is, and its payload) right after the first.
fn repack(
    members: Vec<(PathBuf, tar::Header, Vec<u8>)>,
    raw: Option<(tar::Header, &[u8])>,
) -> Vec<u8> {
    let mut rebuilt = tar::Builder::new(zstd::Encoder::new(Vec::new(), 1).unwrap());
    for (i, (path, mut header, data)) in members.into_iter().enumerate() {
        header.set_size(data.len() as u64);
        rebuilt.append_data(&mut header, &path, &data[..]).unwrap();
        if i == 0
            && let Some((header, payload)) = &raw
        {
            rebuilt.append(header, *payload).unwrap();
        }
    }
    rebuilt.into_inner().unwrap().finish().unwrap()
}

/// The published archive with one member more right after its index: `name` written raw into
/// the header (as a hostile archive would), of `kind`, linking to `link`.
fn with_member(bytes: &[u8], name: &str, kind: tar::EntryType, link: Option<&str>) -> Vec<u8> {
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    header.set_entry_type(kind);
    header.set_mode(0o644);
    if let Some(link) = link {
        header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
    }
    let payload: &[u8] = if link.is_some() { b"" } else { b"evil" };
    header.set_size(payload.len() as u64);
    header.set_cksum();
    repack(members(bytes), Some((header, payload)))
}

#[test]
fn an_archive_member_that_leaves_the_output_directory_is_refused_and_nothing_is_written_there() {
    let Some(m) = start() else { return };
    let (path, bytes, url) = published(&m);
    for (name, kind, link, says) in [
        (
            "../evil.so",
            tar::EntryType::Regular,
            None,
            "leaves the output directory",
        ),
        (
            "/tmp/qola-evil.so",
            tar::EntryType::Regular,
            None,
            "leaves the output directory",
        ),
        (
            "lib/link.so",
            tar::EntryType::Symlink,
            Some("/etc/passwd"),
            "not a plain file",
        ),
    ] {
        std::fs::write(&path, with_member(&bytes, name, kind, link)).unwrap();
        let warning = falls_back(&m, &url);
        assert!(warning.contains(says), "{name}: {warning}");
        assert!(!m.out("evil.so").exists());
        assert!(!Path::new("/tmp/qola-evil.so").exists());
    }
}

/// QoLA's CMake functions as a TE-style project calls them (`examples/cmake-qola-functions`),
/// with `QOLA_PREBUILT_URL`: the configure gets the published library through `qola build`,
/// with no checkout and an empty qola cache, and the project's program (which includes AITER's
/// and composable_kernel's headers through QoLA's) compiles against `aiter-headers/` and links.
#[test]
fn qolas_cmake_functions_get_a_published_library_with_no_checkout() {
    let Some(m) = start() else { return };
    let Some(cmake) = tool("cmake", "cmake") else {
        return;
    };
    let store = m.file_store();
    let build = m.tmp.path().join("cmake");
    let said = qola_tests::run_ok(&mut cmake_configure(&m, &cmake, &build, &store));
    assert!(said.contains("te_libmha_fwd.so"), "{said}");
    assert!(said.contains("1 prebuilt"), "{said}");
    assert!(
        !build.join("qola/third_party/aiter").exists(),
        "no checkout"
    );
    assert!(!m.tmp.path().join("empty-cache/checkouts").exists());
    assert_eq!(
        std::fs::read(build.join("qola/lib/te_libmha_fwd.so")).unwrap(),
        std::fs::read(m.out("published/lib/te_libmha_fwd.so")).unwrap()
    );
    let mut compile = Command::new(&cmake);
    qola_tests::without_caller_env(&mut compile, &[], &["GPU_ARCHS"]);
    qola_tests::run_ok(compile.arg("--build").arg(&build));
    assert!(build.join("call_mha_fwd").is_file());
    assert!(
        !build.join("qola/third_party/aiter").exists(),
        "still no checkout"
    );
    // The functions pass the trusted keys with the store: a malformed one stops the configure,
    // named, before anything is fetched.
    let untrusting = m.tmp.path().join("cmake-trust");
    let refused = cmake_configure(&m, &cmake, &untrusting, &store)
        .arg("-DQOLA_TRUSTED_KEYS=RWnotakey")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        stderr(&refused)
    );
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("--trust, entry 1 `RWnotakey`"), "{said}");
    assert!(!untrusting.join("qola/lib").exists(), "nothing fetched");
}

/// CMake configuring the example of QoLA's functions into `build`, its modules from `store`
/// (`QOLA_PREBUILT_URL`), with the sid toolchain and an empty qola cache.
fn cmake_configure(m: &Machine, cmake: &Path, build: &Path, store: &Path) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut configure = Command::new(cmake);
    qola_tests::without_caller_env(&mut configure, &[], &["GPU_ARCHS"]);
    configure
        .arg("-S")
        .arg(root.join("examples/cmake-qola-functions"))
        .arg("-B")
        .arg(build)
        .arg(format!("-DQOLA_DIR={}", root.join("python/qola").display()))
        .arg(format!("-DQOLA_MANIFEST={}", m.manifest.display()))
        .arg(format!("-DQOLA_PREBUILT_URL=file://{}", store.display()))
        .arg(format!("-DCMAKE_CXX_COMPILER={}", m.hipcc.display()))
        .env("HIPCC", &m.hipcc)
        .env("QOLA_EXECUTABLE", common::qola_binary())
        .env("QOLA_CACHE_DIR", m.tmp.path().join("empty-cache"))
        .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER);
    configure
}

/// `--verify` against a whole, consistent archive whose library is not what the source builds:
/// the module fails, naming the file.
#[test]
fn verify_names_the_files_a_prebuilt_has_that_a_build_from_source_does_not() {
    let Some(m) = start() else { return };
    let (path, bytes, url) = published(&m);
    let library = Path::new("lib/te_libmha_fwd.so");
    let mut all = members(&bytes);
    let changed = all.iter_mut().find(|(p, _, _)| p == library).unwrap();
    changed.2.extend_from_slice(b"another build");
    let (size, digest) = (
        changed.2.len(),
        blake3::hash(&changed.2).to_hex().to_string(),
    );
    // The index agrees with the changed library: only a rebuild can tell.
    let mut index: serde_json::Value = serde_json::from_slice(&all[0].2).unwrap();
    for file in index["files"].as_array_mut().unwrap() {
        if file["path"] == "lib/te_libmha_fwd.so" {
            file["size"] = size.into();
            file["blake3"] = digest.clone().into();
        }
    }
    all[0].2 = serde_json::to_vec(&index).unwrap();
    std::fs::write(&path, repack(all, None)).unwrap();
    let out = m
        .qola("build", "verified")
        .args(["--prebuilt", &url, "--verify"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("differs from this build in lib/te_libmha_fwd.so:"),
        "{}",
        stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAILED: te_libmha_fwd"));
}

/// A tree taken as it is (`--skip-checkout`: it may hold local edits) has no library key: the
/// plan says why, and a build neither fetches nor publishes it.
#[test]
fn a_tree_taken_as_it_is_has_no_key_and_is_never_published() {
    let Some(m) = start() else { return };
    let plan = m
        .qola("plan", "plan")
        .args(["--skip-checkout", "--json"])
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let key = &plan["modules"][0]["library_key"];
    assert!(key.get("key").is_none(), "{key}");
    assert!(
        key["why"].as_str().unwrap().contains("--skip-checkout"),
        "{key}"
    );
    let store = m.tmp.path().join("store");
    let url = format!("file://{}", store.display());
    let out = m
        .qola("build", "as-it-is")
        .args(["--skip-checkout", "--publish", &url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let said = warnings(&out);
    assert_eq!(
        said[1..],
        [format!(
            "qola: warning: te_libmha_fwd: not published to {url}: no library key: {}",
            key["why"].as_str().unwrap()
        )],
        "after the one line of QOLA_SKIP_PREPARE's: {said:?}"
    );
    assert!(said[0].contains("QOLA_SKIP_PREPARE=1: using"), "{said:?}");
    assert!(!store.exists(), "nothing published");
}

/// `--verify` with no store to fetch from, and a store qola cannot use, are refused by name
/// before anything is prepared or built.
#[test]
fn verify_without_a_store_and_an_unknown_store_are_refused_by_name() {
    let Some(m) = start() else { return };
    let out = m.qola("build", "refused").arg("--verify").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--verify checks a prebuilt: give the store with --prebuilt"),
        "{}",
        stderr(&out)
    );
    let out = m
        .qola("build", "refused")
        .args(["--prebuilt", "ftp://cache.example/qola"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ftp://cache.example/qola: not a store qola knows; give file:///<dir> or http(s)://<host>/<path>"),
        "{}",
        stderr(&out)
    );
    // A store's trust or signing key without the store.
    for (flag, value, says) in [
        (
            "--trust",
            "RWnotakey",
            "--trust: it names the publishers of the archives --prebuilt fetches",
        ),
        (
            "--sign-key",
            "ci.key",
            "--sign-key: it signs what --publish publishes",
        ),
    ] {
        let out = m
            .qola("build", "refused")
            .args([flag, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    assert!(!m.out("refused").exists(), "nothing written");
}

/// A key pair made by `qola key generate` in `dir`: (secret file, public file, public key line,
/// key id).
fn key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf, String, String) {
    let (secret, public) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.pub")),
    );
    let mut generate = common::qola_command(&[]);
    generate
        .args(["key", "generate", "--secret"])
        .arg(&secret)
        .arg("--public")
        .arg(&public);
    let said = qola_tests::run_ok(&mut generate);
    let line = said
        .lines()
        .find_map(|l| l.strip_prefix("public key: "))
        .unwrap()
        .to_string();
    let id = said
        .lines()
        .find_map(|l| l.strip_prefix("key id: "))
        .unwrap()
        .to_string();
    (secret, public, line, id)
}

/// Debian's `minisign`, when there (in CI: required).
fn minisign() -> Option<PathBuf> {
    tool("minisign", "minisign")
}

/// `index` signed by the secret key `secret` with minisign's own command (`minisign -S`), as
/// a `.minisig` file's bytes.
fn tool_signed(minisign: &Path, secret: &Path, index: &[u8], dir: &Path) -> Vec<u8> {
    let statement = dir.join("qola-prebuilt.json");
    std::fs::write(&statement, index).unwrap();
    let signature = dir.join("by-the-tool.minisig");
    let _ = std::fs::remove_file(&signature);
    qola_tests::run_ok(
        Command::new(minisign)
            .arg("-S")
            .arg("-s")
            .arg(secret)
            .arg("-m")
            .arg(&statement)
            .arg("-x")
            .arg(&signature)
            .args(["-t", "signed by hand"]),
    );
    std::fs::read(&signature).unwrap()
}

#[test]
fn a_signed_archive_is_taken_only_as_trusted_and_every_tampered_one_is_refused_before_unpacking() {
    let Some(m) = start() else { return };
    let (Some(nginx), Some(minisign)) = (tool("nginx", "nginx-light"), minisign()) else {
        return;
    };
    let keys = m.tmp.path().join("keys");
    let (a_secret, a_public, a_line, a_id) = key_pair(&keys, "a");
    let (b_secret, b_public, _, b_id) = key_pair(&keys, "b");
    let server = HttpCache::start(&nginx, &m.tmp.path().join("nginx"));
    let url = format!("http://127.0.0.1:{}/cache/prebuilt", server.port);

    // The publisher signs with A; the key's file is never printed nor written into the output.
    let publish = m
        .qola("build", "published")
        .args(["--publish", &url, "--sign-key"])
        .arg(&a_secret)
        .output()
        .unwrap();
    assert!(publish.status.success(), "{}", stderr(&publish));
    let secret_text = std::fs::read_to_string(&a_secret).unwrap();
    let secret_line = secret_text.lines().last().unwrap();
    assert!(!stderr(&publish).contains(secret_line));
    assert!(files(&m.out("published")).values().all(|bytes| {
        !bytes
            .windows(secret_line.len())
            .any(|w| w == secret_line.as_bytes())
    }));
    let key = m.key();
    let dir = server.www.join("cache/prebuilt/te_libmha_fwd");
    let archive_path = dir.join(format!("{key}.tar.zst"));
    let signature_path = dir.join(format!("{key}.tar.zst.minisig"));
    let archive = std::fs::read(&archive_path).unwrap();
    let signature = std::fs::read(&signature_path).unwrap();
    let index = members(&archive)[0].2.clone();

    // qola's signature verifies with minisign's own command over the archive's index.
    let by_hand = m.tmp.path().join("by-hand");
    std::fs::create_dir_all(&by_hand).unwrap();
    std::fs::write(by_hand.join("qola-prebuilt.json"), &index).unwrap();
    std::fs::write(by_hand.join("sig.minisig"), &signature).unwrap();
    let checked = qola_tests::run_ok(
        Command::new(&minisign)
            .arg("-V")
            .arg("-p")
            .arg(&a_public)
            .arg("-m")
            .arg(by_hand.join("qola-prebuilt.json"))
            .arg("-x")
            .arg(by_hand.join("sig.minisig")),
    );
    assert!(
        checked.contains(&format!("qola-prebuilt key={key} module=te_libmha_fwd")),
        "{checked}"
    );

    // Trusting A (its key on the command line): taken, no warning.
    let taken = m
        .qola("build", "trusts-a")
        .args(["--prebuilt", &url, "--trust", &a_line])
        .output()
        .unwrap();
    assert!(taken.status.success(), "{}", stderr(&taken));
    assert!(stderr(&taken).contains("(1 prebuilt"), "{}", stderr(&taken));
    assert!(warnings(&taken).is_empty(), "{}", stderr(&taken));
    // Trusting A through the manifest (`[qola] trusted_keys`, a .pub relative to it): taken;
    // QOLA_TRUSTED_KEYS naming B is over it: refused.
    let real = qola_tests::real_aiter().unwrap();
    let trusting_manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .set_toml("trusted_keys", "[\"keys/a.pub\"]")
        .archs(&["gfx942"])
        .narrow_forward()
        .write(m.tmp.path().join("trusting.toml"));
    let by_manifest = |out: &str, env_keys: Option<&Path>| {
        let fixtures = fixtures_dir();
        let mut command = m.qola_with(
            "build",
            out,
            &fixtures.join("aiter-narrow"),
            &fixtures.join("cache"),
            &trusting_manifest,
        );
        command.args(["--prebuilt", &url]);
        if let Some(keys) = env_keys {
            command.env("QOLA_TRUSTED_KEYS", keys);
        }
        command.output().unwrap()
    };
    let taken = by_manifest("manifest-trusts-a", None);
    assert!(stderr(&taken).contains("(1 prebuilt"), "{}", stderr(&taken));
    assert!(warnings(&taken).is_empty(), "{}", stderr(&taken));
    let over = by_manifest("env-over-manifest", Some(&b_public));
    assert!(!stderr(&over).contains("(1 prebuilt"), "{}", stderr(&over));
    assert!(
        stderr(&over).contains(&format!(
            "signed by key {a_id}, which this build does not trust"
        )),
        "{}",
        stderr(&over)
    );

    // Trusting nothing: taken, and said once that no publisher is checked.
    let unchecked = m
        .qola("build", "trusts-none")
        .args(["--prebuilt", &url])
        .output()
        .unwrap();
    assert!(
        stderr(&unchecked).contains("(1 prebuilt"),
        "{}",
        stderr(&unchecked)
    );
    assert_eq!(
        stderr(&unchecked)
            .matches("are not checked for a publisher")
            .count(),
        1,
        "{}",
        stderr(&unchecked)
    );

    // Each refusal: one warning saying which, the module built from source, nothing unpacked.
    let refused = |trust: &Path, archive_bytes: &[u8], signature_bytes: Option<&[u8]>| {
        std::fs::write(&archive_path, archive_bytes).unwrap();
        match signature_bytes {
            Some(bytes) => std::fs::write(&signature_path, bytes).unwrap(),
            None => {
                let _ = std::fs::remove_file(&signature_path);
            }
        }
        let warning = falls_back_trusting(&m, &url, Some(trust));
        std::fs::write(&archive_path, &archive).unwrap();
        std::fs::write(&signature_path, &signature).unwrap();
        warning
    };
    // Trusting only B (a .pub file in QOLA_TRUSTED_KEYS).
    let warning = refused(&b_public, &archive, Some(&signature));
    assert!(
        warning.contains(&format!(
            "signed by key {a_id}, which this build does not trust"
        )),
        "{warning}"
    );
    // A signature from B over A's statement.
    let by_b = tool_signed(&minisign, &b_secret, &index, &by_hand);
    let warning = refused(&a_public, &archive, Some(&by_b));
    assert!(
        warning.contains(&format!("signed by key {b_id}")),
        "{warning}"
    );
    // The signature removed, truncated, garbage.
    let warning = refused(&a_public, &archive, None);
    assert!(warning.contains("unsigned"), "{warning}");
    let warning = refused(&a_public, &archive, Some(&signature[..signature.len() / 2]));
    assert!(warning.contains("signature is unreadable"), "{warning}");
    let warning = refused(&a_public, &archive, Some(b"garbage\n"));
    assert!(warning.contains("signature is unreadable"), "{warning}");
    // The index changed after signing.
    let mut all = members(&archive);
    let mut changed: serde_json::Value = serde_json::from_slice(&all[0].2).unwrap();
    changed["files"][0]["size"] = 1.into();
    all[0].2 = serde_json::to_vec_pretty(&changed).unwrap();
    let warning = refused(&a_public, &repack(all, None), Some(&signature));
    assert!(
        warning.contains(&format!("signature by key {a_id} does not verify")),
        "{warning}"
    );
    // A file changed after signing (the signed index holds its digest).
    let mut all = members(&archive);
    let last = all.len() - 1;
    all[last].2.push(b'!');
    let warning = refused(&a_public, &repack(all, None), Some(&signature));
    assert!(warning.contains("does not match its index"), "{warning}");
    // A validly signed archive of another key, or another module, served under this key.
    for (field, value) in [
        ("key", "0".repeat(64)),
        ("md_name", "te_libmha_bwd".to_string()),
    ] {
        let mut all = members(&archive);
        let mut other: serde_json::Value = serde_json::from_slice(&all[0].2).unwrap();
        other[field] = value.clone().into();
        all[0].2 = serde_json::to_vec_pretty(&other).unwrap();
        let signed_other = tool_signed(&minisign, &a_secret, &all[0].2, &by_hand);
        let warning = refused(&a_public, &repack(all, None), Some(&signed_other));
        assert!(
            warning.contains(&format!("signed by key {a_id} over another statement"))
                && warning.contains(&value),
            "{warning}"
        );
    }
    // A signature made by minisign's own command over the same statement is taken.
    let by_the_tool = tool_signed(&minisign, &a_secret, &index, &by_hand);
    std::fs::write(&signature_path, &by_the_tool).unwrap();
    let taken = m
        .qola("build", "tool-signed")
        .args(["--prebuilt", &url])
        .env("QOLA_TRUSTED_KEYS", &a_public)
        .output()
        .unwrap();
    assert!(stderr(&taken).contains("(1 prebuilt"), "{}", stderr(&taken));
    assert!(warnings(&taken).is_empty(), "{}", stderr(&taken));
}

#[test]
fn a_signing_key_others_can_read_or_a_malformed_trusted_key_is_refused_before_anything_is_fetched()
{
    let Some(m) = start() else { return };
    let keys = m.tmp.path().join("keys");
    let (secret, _, _, _) = key_pair(&keys, "ci");
    let mode = std::fs::metadata(&secret).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let store = m.tmp.path().join("store");
    let url = format!("file://{}", store.display());
    let open_key = m
        .qola("build", "open-key")
        .args(["--publish", &url])
        .env("QOLA_SIGN_KEY", &secret)
        .output()
        .unwrap();
    assert_eq!(open_key.status.code(), Some(1), "{}", stderr(&open_key));
    assert!(
        stderr(&open_key).contains(&format!("chmod 600 {}", secret.display())),
        "{}",
        stderr(&open_key)
    );
    let bad_trust = m
        .qola("build", "bad-trust")
        .args(["--prebuilt", &url])
        .env("QOLA_TRUSTED_KEYS", "RWnotakey")
        .output()
        .unwrap();
    assert_eq!(bad_trust.status.code(), Some(1), "{}", stderr(&bad_trust));
    assert!(
        stderr(&bad_trust).contains("QOLA_TRUSTED_KEYS, entry 1 `RWnotakey`"),
        "{}",
        stderr(&bad_trust)
    );
    assert!(!store.exists(), "nothing published");
    assert!(
        !m.out("open-key").exists() && !m.out("bad-trust").exists(),
        "nothing written"
    );
}
