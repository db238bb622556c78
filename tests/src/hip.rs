//! A small HIP project for the compile pipeline's tests: three units, a header shared by two of
//! them and a header only the third includes.

use std::path::{Path, PathBuf};

use crate::write;

/// The project's sources (absolute paths), in a fixed order.
pub struct HipProject {
    /// The directory.
    pub dir: PathBuf,
    /// `a.hip`, `b.hip`, `c.hip`.
    pub sources: Vec<PathBuf>,
    /// The include directory.
    pub include: PathBuf,
}

const UNIT: &str = "#include <hip/hip_runtime.h>
#include \"shared.h\"
namespace {
__global__ void kernel_NAME(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * SHARED_SCALE + NAME_OFFSET;
}
}
extern \"C\" __attribute__((visibility(\"default\"))) int qola_NAME(float* x, int n, hipStream_t s) {
    hipLaunchKernelGGL(kernel_NAME, dim3((n + 63) / 64), dim3(64), 0, s, x, n);
    return (int)hipGetLastError();
}
";

impl HipProject {
    /// Writes the project under `dir`.
    pub fn create(dir: &Path) -> HipProject {
        let include = dir.join("include");
        write(
            &include,
            "shared.h",
            "#pragma once\n#define SHARED_SCALE 2.0f\n#define a_OFFSET 1.0f\n#define b_OFFSET 2.0f\n",
        );
        write(
            &include,
            "only_c.h",
            "#pragma once\n#define c_OFFSET 3.0f\n",
        );
        let mut sources = Vec::new();
        for name in ["a", "b", "c"] {
            let mut text = UNIT.replace("NAME", name);
            if name == "c" {
                text = text.replace(
                    "#include \"shared.h\"",
                    "#include \"shared.h\"\n#include \"only_c.h\"",
                );
            }
            write(dir, &format!("{name}.hip"), text);
            sources.push(dir.join(format!("{name}.hip")));
        }
        HipProject {
            dir: dir.to_path_buf(),
            sources,
            include,
        }
    }
}

/// qola-sys's built-in kernels: 11 HIP units and their include directory, the small real build
/// of tests and benchmarks.
#[derive(Debug, Clone)]
pub struct BuiltinKernels {
    /// Their directory.
    pub dir: PathBuf,
    /// The include directory.
    pub include: PathBuf,
    /// The `.hip` sources, sorted.
    pub sources: Vec<PathBuf>,
}

impl BuiltinKernels {
    /// The kernels in qola-sys.
    pub fn of_qola_sys() -> BuiltinKernels {
        BuiltinKernels::at(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-sys/kernels"))
    }

    fn at(dir: &Path) -> BuiltinKernels {
        BuiltinKernels {
            dir: dir.to_path_buf(),
            include: dir.join("include"),
            sources: crate::files_with_extension(dir, "hip"),
        }
    }

    /// A copy of them under `dir` (a test that edits them).
    pub fn copy_to(&self, dir: &Path) -> BuiltinKernels {
        fn copy(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for entry in std::fs::read_dir(from).unwrap().flatten() {
                let target = to.join(entry.file_name());
                match entry.path().is_dir() {
                    true => copy(&entry.path(), &target),
                    false => {
                        std::fs::copy(entry.path(), &target).unwrap();
                    }
                }
            }
        }
        copy(&self.dir, dir);
        BuiltinKernels::at(dir)
    }
}
