//! Attention kernels for AMD GPUs with a C ABI, built by `qola-build`.
//!
//! The build script compiles the HIP sources in `kernels/` (forward and backward, fp32, fp16 and
//! bf16, optional causal mask, head dim up to 128, any batch/sequence/head strides, LSE output)
//! into `libqola_mha.a` with qola's incremental, content-addressed pipeline, and links it with
//! `amdhip64`. Only the three `qola_mha_*` functions are exported. With `QOLA_KERNELS=aiter` the
//! same three functions are served by AITER's CK and asm kernels instead (fp16/bf16 only):
//! `libmha_fwd.a` and `libmha_bwd.a` built from the prepared AITER tree, their hsa code objects
//! embedded (see the build script's docs and qola-build's `aiter` module).
//!
//! The structs here are `#[repr(C)]` mirrors of `kernels/include/qola_mha.h` (a test checks every
//! size and field offset against the C compiler's). [`mod@reference`] is a float64 CPU reference of
//! both directions.
//!
//! | variable | effect |
//! |---|---|
//! | `QOLA_KERNELS` | `builtin` (default): qola's kernels; `aiter` (default when `QOLA_MANIFEST` names a manifest with modules): AITER's `libmha_fwd` and `libmha_bwd` behind the same C API |
//! | `QOLA_MANIFEST` | the qola manifest for `aiter` (default: qola-sys's own `qola.toml`, shipped in the package with `patches/aiter`); see qola-build for every preparation variable |
//! | `QOLA_AITER_MODULES` | `aiter`: the modules to build, comma-separated (default: `libmha_fwd,libmha_bwd`) |
//! | `QOLA_CK_FILTER`, `QOLA_CK_FILTER_<MODULE>` | `aiter`: CK's `--filter` for every module, or for one (`QOLA_CK_FILTER_LIBMHA_BWD`): narrow builds |
//! | `GPU_ARCHS`, `QOLA_GPU_ARCHS` | architectures to compile for (default: this machine's GPUs) |
//! | `HIPCC`, `ROCM_PATH`, `HIP_PATH` | the HIP compiler |
//! | `QOLA_COMPILER_LAUNCHER` | wraps every compile (`ccache`, `sccache`) |
//! | `QOLA_CACHE_DIR` | qola's cache, where objects are kept across builds and `cargo clean` |
//! | `DOCS_RS` | compile nothing (docs only) |
//!
//! Every call needs a HIP stream (or null for the default stream) and device pointers; statuses
//! are HIP error codes (0 = success).

#![deny(missing_docs)]
#![allow(non_camel_case_types)]

use std::ffi::{c_int, c_void};

pub mod reference;

/// A HIP stream (`hipStream_t`); null is the default stream.
pub type hipStream_t = *mut c_void;

/// `qola_dtype`: float32 elements.
pub const QOLA_DTYPE_FP32: i32 = 0;
/// `qola_dtype`: IEEE half elements.
pub const QOLA_DTYPE_FP16: i32 = 1;
/// `qola_dtype`: bfloat16 elements.
pub const QOLA_DTYPE_BF16: i32 = 2;
/// The largest `head_dim` the kernels take.
pub const QOLA_MAX_HEAD_DIM: i32 = 128;
/// The status for invalid arguments (`hipErrorInvalidValue`).
pub const HIP_ERROR_INVALID_VALUE: c_int = 1;

/// Strides, in elements, of the batch, sequence and head dimensions (head_dim is contiguous).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct qola_tensor_strides {
    /// Between batches.
    pub batch: i64,
    /// Between sequence positions.
    pub seq: i64,
    /// Between heads.
    pub head: i64,
}

impl qola_tensor_strides {
    /// The strides of a contiguous `[batch, seqlen, nhead, head_dim]` tensor.
    pub fn bshd(seqlen: i32, nhead: i32, head_dim: i32) -> qola_tensor_strides {
        let (s, h, d) = (seqlen as i64, nhead as i64, head_dim as i64);
        qola_tensor_strides {
            batch: s * h * d,
            seq: h * d,
            head: d,
        }
    }
}

/// Sizes shared by forward and backward (`qola_mha_shape`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct qola_mha_shape {
    /// `QOLA_DTYPE_*`.
    pub dtype: i32,
    /// Batch size.
    pub batch: i32,
    /// Number of heads.
    pub nhead: i32,
    /// Query sequence length.
    pub seqlen_q: i32,
    /// Key/value sequence length.
    pub seqlen_k: i32,
    /// Head dimension, 1 to [`QOLA_MAX_HEAD_DIM`].
    pub head_dim: i32,
    /// 1: query `i` sees keys `j <= i + seqlen_k - seqlen_q`; 0: all keys.
    pub causal: i32,
    /// Softmax scale, usually `1 / sqrt(head_dim)`.
    pub scale: f32,
}

/// Forward arguments (`qola_mha_fwd_args`); pointers are device pointers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qola_mha_fwd_args {
    /// Sizes.
    pub shape: qola_mha_shape,
    /// Queries.
    pub q: *const c_void,
    /// Their strides.
    pub q_strides: qola_tensor_strides,
    /// Keys.
    pub k: *const c_void,
    /// Their strides.
    pub k_strides: qola_tensor_strides,
    /// Values.
    pub v: *const c_void,
    /// Their strides.
    pub v_strides: qola_tensor_strides,
    /// Output.
    pub o: *mut c_void,
    /// Its strides.
    pub o_strides: qola_tensor_strides,
    /// Log-sum-exp per query row, `[batch, nhead, seqlen_q]` contiguous float; may be null.
    pub lse: *mut f32,
}

/// Backward arguments (`qola_mha_bwd_args`); pointers are device pointers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qola_mha_bwd_args {
    /// Sizes.
    pub shape: qola_mha_shape,
    /// Queries.
    pub q: *const c_void,
    /// Their strides.
    pub q_strides: qola_tensor_strides,
    /// Keys.
    pub k: *const c_void,
    /// Their strides.
    pub k_strides: qola_tensor_strides,
    /// Values.
    pub v: *const c_void,
    /// Their strides.
    pub v_strides: qola_tensor_strides,
    /// The forward's output.
    pub o: *const c_void,
    /// Its strides.
    pub o_strides: qola_tensor_strides,
    /// Gradient of the output.
    pub dout: *const c_void,
    /// Its strides.
    pub dout_strides: qola_tensor_strides,
    /// The forward's log-sum-exp, `[batch, nhead, seqlen_q]` contiguous float.
    pub lse: *const f32,
    /// Gradient of the queries (written).
    pub dq: *mut c_void,
    /// Its strides.
    pub dq_strides: qola_tensor_strides,
    /// Gradient of the keys (written).
    pub dk: *mut c_void,
    /// Its strides.
    pub dk_strides: qola_tensor_strides,
    /// Gradient of the values (written).
    pub dv: *mut c_void,
    /// Its strides.
    pub dv_strides: qola_tensor_strides,
    /// [`qola_mha_bwd_workspace_size`] bytes of device memory.
    pub workspace: *mut c_void,
}

unsafe extern "C" {
    /// Forward attention: `o = softmax(scale * q kᵀ [causal]) v`, and `lse` when not null.
    pub fn qola_mha_fwd(args: *const qola_mha_fwd_args, stream: hipStream_t) -> c_int;
    /// Device workspace bytes [`qola_mha_bwd`] needs for `args`.
    pub fn qola_mha_bwd_workspace_size(args: *const qola_mha_bwd_args) -> usize;
    /// Backward attention: `dq`, `dk`, `dv` from `o`, its gradient and `lse`.
    pub fn qola_mha_bwd(args: *const qola_mha_bwd_args, stream: hipStream_t) -> c_int;
}

/// The static libraries the build script produced (for tests and tools): one for the built-in
/// kernels, one per AITER module with `QOLA_KERNELS=aiter`; empty when nothing was compiled
/// (`DOCS_RS`).
pub fn libraries() -> Vec<&'static str> {
    option_env!("QOLA_MHA_LIBRARIES")
        .map(|list| list.split(';').collect())
        .unwrap_or_default()
}
