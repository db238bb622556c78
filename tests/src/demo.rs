//! A small AITER-shaped upstream: `aiter` (superproject) with `3rdparty/composable_kernel` as a
//! submodule whose URL is relative (`../composable_kernel`), as on GitHub.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::{add_gitlink, git, write};

/// The demo patch series: AITER only, composable_kernel only, and both (creating a file).
pub const DEMO_PATCHES: [(&str, &str); 3] = [
    (
        "0001-aiter-expose-lse.patch",
        "From: qola demo <demo@qola.invalid>
Subject: [PATCH 1/3] mha_fwd: return the log-sum-exp

---
 csrc/include/mha_fwd.h | 1 +
 1 file changed, 1 insertion(+)

diff --git a/csrc/include/mha_fwd.h b/csrc/include/mha_fwd.h
--- a/csrc/include/mha_fwd.h
+++ b/csrc/include/mha_fwd.h
@@ -9,6 +9,7 @@ struct mha_fwd_args {
     const void* k;
     const void* v;
     void* o;
+    void* lse;
     int32_t seqlen_q;
     int32_t seqlen_k;
 };
-- 
2.47.3
",
    ),
    (
        "0002-ck-te-receipt.patch",
        "diff --git a/3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/cpp_symbol_map.py b/3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/cpp_symbol_map.py
--- a/3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/cpp_symbol_map.py
+++ b/3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/cpp_symbol_map.py
@@ -2,4 +2,5 @@
 RECEIPTS = {
     0: \"all\",
     600: \"aiter\",
+    888: \"transformer_engine\",
 }
",
    ),
    (
        "0003-both-qola-marker.patch",
        "diff --git a/csrc/include/qola_version.h b/csrc/include/qola_version.h
new file mode 100644
--- /dev/null
+++ b/csrc/include/qola_version.h
@@ -0,0 +1,3 @@
+#pragma once
+// Added by qola's demo patch series.
+#define QOLA_PATCHED 1
diff --git a/3rdparty/composable_kernel/include/ck_tile/core/config.hpp b/3rdparty/composable_kernel/include/ck_tile/core/config.hpp
--- a/3rdparty/composable_kernel/include/ck_tile/core/config.hpp
+++ b/3rdparty/composable_kernel/include/ck_tile/core/config.hpp
@@ -2,5 +2,6 @@
 \n // Demo of composable_kernel's configuration header.
 #define CK_TILE_DEMO 1
+#define CK_TILE_QOLA 1
 \n namespace ck_tile {
",
    ),
];

/// A kernel of the demo tree: it includes a composable_kernel header (patched by 0003) and the
/// header 0003 creates, so compiling it depends on the prepared state.
pub const DEMO_KERNEL: &str = "csrc/kernels/demo_scale.hip";

const DEMO_KERNEL_SOURCE: &str = "#include <hip/hip_runtime.h>
#include \"ck_tile/core/config.hpp\"
#include \"qola_version.h\"

namespace {
__global__ void demo_scale(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= (float)ck_tile::warp_size * QOLA_PATCHED;
}
}

extern \"C\" __attribute__((visibility(\"default\"))) int qola_demo_scale(float* x, int n, hipStream_t s) {
    hipLaunchKernelGGL(demo_scale, dim3((n + 63) / 64), dim3(64), 0, s, x, n);
    return (int)hipGetLastError();
}
";

const MHA_FWD_H: &str = "#pragma once
#include <cstdint>

// Demo of AITER's forward attention interface.
namespace aiter {

struct mha_fwd_args {
    const void* q;
    const void* k;
    const void* v;
    void* o;
    int32_t seqlen_q;
    int32_t seqlen_k;
};

int mha_fwd(const mha_fwd_args& args);

} // namespace aiter
";

const SYMBOL_MAP_PY: &str = "# Demo of CK's fmha codegen receipts.
RECEIPTS = {
    0: \"all\",
    600: \"aiter\",
}

FWD_DTYPE_MAP = {
    \"fp16\": \"FmhaFwdFp16\",
    \"bf16\": \"FmhaFwdBf16\",
    \"fp8\": \"FmhaFwdFp8\",
}
";

const CONFIG_HPP: &str = "#pragma once

// Demo of composable_kernel's configuration header.
#define CK_TILE_DEMO 1

namespace ck_tile {
constexpr int warp_size = 64;
} // namespace ck_tile
";

/// Bytes of a fake hsa code object (binary: it holds NUL bytes).
pub fn code_object(seed: u8) -> Vec<u8> {
    let mut bytes = b"\x7fELF\x02\x01\x01\0qola-demo-code-object\0".to_vec();
    bytes.extend((0..=255u8).map(|b| b.wrapping_mul(seed)));
    bytes
}

/// The demo upstream and its patch series, in a directory the caller owns.
#[derive(Debug, Clone)]
pub struct Demo {
    /// The directory holding everything.
    pub dir: PathBuf,
    /// The superproject's repository (the URL to clone).
    pub aiter: PathBuf,
    /// The submodule's repository.
    pub ck: PathBuf,
    /// The patch series directory (the three [`DEMO_PATCHES`]).
    pub patches: PathBuf,
    /// The superproject's first commit.
    pub commit: String,
    /// The submodule commit it records.
    pub ck_commit: String,
}

impl Demo {
    /// Creates the upstream repositories and the patch series under `dir`.
    pub fn create(dir: &Path) -> Demo {
        let ck = dir.join("composable_kernel");
        let aiter = dir.join("aiter");
        let patches = dir.join("patches");
        for d in [&ck, &aiter, &patches] {
            std::fs::create_dir_all(d).expect("create the demo directories");
        }
        git(&ck, &["init", "-q"]);
        write(&ck, "include/ck_tile/core/config.hpp", CONFIG_HPP);
        write(
            &ck,
            "example/ck_tile/01_fmha/codegen/cpp_symbol_map.py",
            SYMBOL_MAP_PY,
        );
        write(&ck, "library/blob.bin", code_object(3));
        git(&ck, &["add", "-A"]);
        git(&ck, &["commit", "-q", "-m", "composable_kernel demo"]);
        let ck_commit = git(&ck, &["rev-parse", "HEAD"]);

        git(&aiter, &["init", "-q"]);
        write(&aiter, "README.md", "# AITER (qola demo)\n");
        write(&aiter, "csrc/include/mha_fwd.h", MHA_FWD_H);
        write(&aiter, DEMO_KERNEL, DEMO_KERNEL_SOURCE);
        write(
            &aiter,
            "aiter/jit/optCompilerConfig.json",
            "{\n  \"module_demo\": {\"srcs\": []}\n}\n",
        );
        write(
            &aiter,
            "hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co",
            code_object(7),
        );
        write(
            &aiter,
            "scripts/build_demo.sh",
            "#!/bin/sh\necho building the demo\n",
        );
        let script = aiter.join("scripts/build_demo.sh");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        write(
            &aiter,
            ".gitmodules",
            "[submodule \"3rdparty/composable_kernel\"]\n\tpath = 3rdparty/composable_kernel\n\turl = ../composable_kernel\n",
        );
        git(&aiter, &["add", "-A"]);
        add_gitlink(&aiter, &ck_commit, "3rdparty/composable_kernel");
        git(&aiter, &["commit", "-q", "-m", "AITER demo"]);
        let commit = git(&aiter, &["rev-parse", "HEAD"]);

        for (name, text) in DEMO_PATCHES {
            write(&patches, name, text);
        }
        Demo {
            dir: dir.to_path_buf(),
            aiter,
            ck,
            patches,
            commit,
            ck_commit,
        }
    }

    /// Commits `content` at `path` in the upstream superproject; returns the new commit.
    pub fn commit_aiter(&self, path: &str, content: &str, message: &str) -> String {
        write(&self.aiter, path, content);
        // Only this path: the work tree has no submodule checkout, `add -A` would drop it.
        git(&self.aiter, &["add", "--", path]);
        git(&self.aiter, &["commit", "-q", "-m", message]);
        git(&self.aiter, &["rev-parse", "HEAD"])
    }

    /// Commits `content` at `path` in the upstream submodule and records that commit in a new
    /// superproject commit; returns (superproject commit, submodule commit).
    pub fn bump_ck(&self, path: &str, content: &str) -> (String, String) {
        write(&self.ck, path, content);
        git(&self.ck, &["add", "-A"]);
        git(&self.ck, &["commit", "-q", "-m", "composable_kernel bump"]);
        let ck_commit = git(&self.ck, &["rev-parse", "HEAD"]);
        add_gitlink(&self.aiter, &ck_commit, "3rdparty/composable_kernel");
        git(
            &self.aiter,
            &["commit", "-q", "-m", "bump composable_kernel"],
        );
        (git(&self.aiter, &["rev-parse", "HEAD"]), ck_commit)
    }
}
