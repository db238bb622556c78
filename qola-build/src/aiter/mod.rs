//! AITER's own modules (`libmha_fwd`, `libmha_bwd`, ...) built from the prepared tree:
//! the recipe from `optCompilerConfig.json` (see `recipe`), the manifest's overrides, code
//! generation into `OUT_DIR` (see `module::codegen`), AITER's compile flags and include order,
//! and the hsa code objects embedded into the library (see `module::hsa`). In rooms: `recipe`,
//! `module` (one module from the tree), `library` (it as a library, with its API), `registry`
//! (QoLA's registry format), `output` (`qola build` and `qola plan`), `prebuilt` (libraries by
//! their key); `error` is [`AiterError`], which carries the other subsystems' errors.
//!
//! # Flags
//!
//! As AITER gives them for these modules, at the prepared commit: `cpp_extension.py`'s
//! `-DWITH_HIP -fPIC`, then the tree's own `core.py`'s `flags_cc` (its base list, `ENABLE_CK`,
//! rope and the other switches it computes, the module's `flags_extra_cc`), `-D__HIP_PLATFORM_AMD__=1
//! -DUSE_ROCM=1 -DHIPBLAS_V2 -DCUDA_HAS_FP16=1 -D__HIP_NO_HALF_OPERATORS__=1
//! -D__HIP_NO_HALF_CONVERSIONS__=1 -mcmodel=large -fno-unique-section-names -ffunction-sections
//! -fdata-sections -fvisibility=hidden -fvisibility-inlines-hidden`, the tree's `core.py`'s
//! `flags_hip` (sorted as it sorts them: the HIP version's and the architecture's flags, kernarg
//! preload, the module's `flags_extra_hip`), and `-fno-gpu-rdc`; the include directories
//! (ck_helper, CK `include`, CK `library/include`, AITER `csrc/include`, the generated sources,
//! the module's `extra_include`, `csrc/include/torch`). `core.py`'s lists are computed by that
//! `core.py` itself (see `recipe::core_flags`), so a new AITER's flags come with it. Each
//! `-mllvm` flag is probed once against the compiler (cached) and dropped when the compiler
//! does not know it, as AITER's `hip_flag_checker` does.
//!
//! One decision differs from AITER: with an upstream clang (Debian's, 20 or newer) the pair
//! `-mllvm -amdgpu-early-inline-all=true -mllvm -amdgpu-function-calls=false` makes one CK
//! instance take 4 to over 15 minutes instead of ~35 s, so qola appends
//! `-mllvm -amdgpu-function-calls=true` (the last value wins) unless
//! `QOLA_AITER_KEEP_INLINE_ALL=1`. AMD's own ROCm clang keeps AITER's pair.
//!
//! # Compiling
//!
//! [`AiterModule::hip_build`] gives a [`crate::compile::HipBuild`] of the module's units with these flags
//! and includes, at most as many compiles at once as the available memory holds at each unit's
//! measured peak, [`CK_UNIT_MEMORY`] before the first measurement (a CK instance peaks at
//! 0.8–1.2 GB), on top of Cargo's jobserver.

pub(crate) mod error;
mod library;
mod module;
mod output;
pub mod prebuilt;
mod recipe;
pub mod registry;

pub use error::AiterError;
pub(crate) use error::{ModuleKeyError, Result};
pub(crate) use library::library_in;
pub use library::{AiterLibrary, Api, CppApi, library};
pub use module::{
    AiterModule, AiterModuleSpec, Batch, CK_UNIT_MEMORY, EmbeddedHsa, Generated,
    check_ck_toolchain, ck_filter, embed_hsa, prepare_module,
};
pub(crate) use module::{CkInstances, Refusals, ck_filter_in};
pub use output::{
    BuildOutcome, BuildPlan, BuildRecord, GeneratorPlan, ModulePlan, ModuleRecord, OutputBuild,
    Summary, check_groups,
};
pub use recipe::CoreFlags;
pub use recipe::{AiterPaths, ModuleRecipe};
pub use recipe::{ApiGeneration, ForwardExtra, TreeApi, detect_api_generation, read_api};
