//! Attention kernels for AMD GPUs with a C ABI, built by `qola-build`.
//!
//! The API is `kernels/include/qola_mha.h`, which documents every field once (its "Model",
//! masks, ALiBi, dropout and layouts); the structs here are `#[repr(C)]` mirrors of it (a test
//! checks every size and field offset against the C compiler's). It carries everything AITER's
//! `mha_fwd`/`mha_bwd` take: fp32/fp16/bf16, GQA/MQA, batch and group (variable-length) mode
//! with padded sequences, head dims up to 256 (`hdim_q` ≠ `hdim_v`), top-left/bottom-right
//! causal masks and sliding windows, elementwise bias (and its gradient) and ALiBi, dropout with
//! CK's Philox scheme (seed/offset by value or on the device), logits soft-cap, LSE, every
//! stride, deterministic backward. Every call checks its arguments first and returns a status
//! that names the field ([`qola_mha_status_string`]); [`qola_mha_fwd_check`] and
//! [`qola_mha_bwd_check`] run those checks alone.
//!
//! The build script compiles the HIP sources in `kernels/` (qola's built-in kernels, every
//! feature) into `libqola_mha.a` with qola's incremental, content-addressed pipeline, and links
//! it with `amdhip64`; only the `qola_mha_*` functions are exported. With `QOLA_KERNELS=aiter`
//! the same functions are served by AITER's CK and asm kernels instead (fp16/bf16):
//! `libmha_fwd.a` and `libmha_bwd.a` built from the prepared AITER tree, their hsa code objects
//! embedded (see the build script's docs and qola-build's `aiter` module).
//! [`mod@reference`] is a float64 CPU reference of both directions, every feature. [`mod@gemm`]
//! is AITER's a4w4 (FP4) GEMMs for gfx950 (`kernels/include/qola_gemm.h`), served when the
//! manifest's modules include `libgemm_a4w4_blockscale` or `libgemm_a4w4_asm`.
//!
//! | variable | effect |
//! |---|---|
//! | `QOLA_KERNELS` | `builtin` (default): qola's kernels; `aiter` (default when `QOLA_MANIFEST` names a manifest with modules): AITER's `libmha_fwd` and `libmha_bwd` behind the same C API |
//! | `QOLA_MANIFEST` | the qola manifest for `aiter` (default: qola-sys's own `qola.toml`, shipped in the package with `patches/aiter`); see qola-build for every preparation variable |
//! | `QOLA_AITER_MODULES` | `aiter`: the modules to build, `,`- or `;`-separated (default: every module of the manifest qola-sys wraps: `libmha_fwd`, `libmha_bwd`, `libgemm_a4w4_blockscale`, `libgemm_a4w4_asm`) |
//! | `QOLA_CK_FILTER`, `QOLA_CK_FILTER_<MODULE>` | `aiter`: CK's `--filter` for every module, or for one (`QOLA_CK_FILTER_LIBMHA_BWD`): narrow builds |
//! | `GPU_ARCHS`, `QOLA_GPU_ARCHS` | architectures to compile for (default: this machine's GPUs) |
//! | `HIPCC`, `ROCM_PATH`, `HIP_PATH` | the HIP compiler |
//! | `QOLA_COMPILER_LAUNCHER` | wraps every compile (`ccache`, `sccache`) |
//! | `QOLA_CACHE_DIR` | qola's cache, where objects are kept across builds and `cargo clean` |
//! | `DOCS_RS` | compile nothing (docs only) |
//!
//! Every call needs a HIP stream (or null for the default stream) and device pointers.

#![deny(missing_docs)]
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

pub mod gemm;
pub mod reference;

/// A HIP stream (`hipStream_t`); null is the default stream.
pub type hipStream_t = *mut c_void;

/// `qola_dtype`: float32 elements.
pub const QOLA_DTYPE_FP32: i32 = 0;
/// `qola_dtype`: IEEE half elements.
pub const QOLA_DTYPE_FP16: i32 = 1;
/// `qola_dtype`: bfloat16 elements.
pub const QOLA_DTYPE_BF16: i32 = 2;
/// `qola_mha_mode`: every sequence has `seqlen_q`/`seqlen_k` rows.
pub const QOLA_MHA_MODE_BATCH: i32 = 0;
/// `qola_mha_mode`: packed variable-length sequences (`seqstart_q`/`seqstart_k`).
pub const QOLA_MHA_MODE_GROUP: i32 = 1;
/// `qola_mha_mask_type`: no mask.
pub const QOLA_MHA_MASK_NONE: i32 = 0;
/// `qola_mha_mask_type`: windows aligned to the top left.
pub const QOLA_MHA_MASK_TOP_LEFT: i32 = 1;
/// `qola_mha_mask_type`: windows aligned to the bottom right.
pub const QOLA_MHA_MASK_BOTTOM_RIGHT: i32 = 2;
/// `qola_mha_bias_type`: no bias.
pub const QOLA_MHA_BIAS_NONE: i32 = 0;
/// `qola_mha_bias_type`: an elementwise bias matrix.
pub const QOLA_MHA_BIAS_ELEMENTWISE: i32 = 1;
/// `qola_mha_bias_type`: ALiBi slopes.
pub const QOLA_MHA_BIAS_ALIBI: i32 = 2;
/// The largest `hdim_q` and `hdim_v`.
pub const QOLA_MHA_MAX_HEAD_DIM: i32 = 256;
/// Status: success.
pub const QOLA_MHA_STATUS_SUCCESS: c_int = 0;
/// Status base: `QOLA_MHA_STATUS_INVALID + field`, the field's value breaks its rule.
pub const QOLA_MHA_STATUS_INVALID: c_int = 1000;
/// Status base: `QOLA_MHA_STATUS_UNSUPPORTED + field`, valid but not served by this backend.
pub const QOLA_MHA_STATUS_UNSUPPORTED: c_int = 2000;
/// The number of fields a status can name.
pub const QOLA_MHA_FIELD_COUNT: i32 = FIELD_COUNT;

/// Status field `args`: must not be NULL.
pub const QOLA_MHA_FIELD_ARGS: i32 = 0;
/// Status field `size`: must be sizeof the args struct of a qola version this library knows.
pub const QOLA_MHA_FIELD_SIZE: i32 = 1;
/// Status field `problem.dtype`: must be a qola_dtype.
pub const QOLA_MHA_FIELD_DTYPE: i32 = 2;
/// Status field `problem.mode`: must be a qola_mha_mode.
pub const QOLA_MHA_FIELD_MODE: i32 = 3;
/// Status field `problem.batch`: must be >= 1.
pub const QOLA_MHA_FIELD_BATCH: i32 = 4;
/// Status field `problem.nhead_q`: must be >= 1 and a multiple of nhead_k.
pub const QOLA_MHA_FIELD_NHEAD_Q: i32 = 5;
/// Status field `problem.nhead_k`: must be >= 1.
pub const QOLA_MHA_FIELD_NHEAD_K: i32 = 6;
/// Status field `problem.seqlen_q`: must be >= 1.
pub const QOLA_MHA_FIELD_SEQLEN_Q: i32 = 7;
/// Status field `problem.seqlen_k`: must be >= 1.
pub const QOLA_MHA_FIELD_SEQLEN_K: i32 = 8;
/// Status field `problem.max_seqlen_q`: BATCH: 0 or seqlen_q; GROUP: 1 .. seqlen_q.
pub const QOLA_MHA_FIELD_MAX_SEQLEN_Q: i32 = 9;
/// Status field `problem.max_seqlen_k`: BATCH: 0 or seqlen_k; GROUP: 1 .. seqlen_k.
pub const QOLA_MHA_FIELD_MAX_SEQLEN_K: i32 = 10;
/// Status field `problem.hdim_q`: must be 1 .. QOLA_MHA_MAX_HEAD_DIM.
pub const QOLA_MHA_FIELD_HDIM_Q: i32 = 11;
/// Status field `problem.hdim_v`: must be 1 .. QOLA_MHA_MAX_HEAD_DIM.
pub const QOLA_MHA_FIELD_HDIM_V: i32 = 12;
/// Status field `problem.mask_type`: must be a qola_mha_mask_type.
pub const QOLA_MHA_FIELD_MASK_TYPE: i32 = 13;
/// Status field `problem.window_left`: must be >= -1, and -1 without a mask.
pub const QOLA_MHA_FIELD_WINDOW_LEFT: i32 = 14;
/// Status field `problem.window_right`: must be >= -1, and -1 without a mask.
pub const QOLA_MHA_FIELD_WINDOW_RIGHT: i32 = 15;
/// Status field `problem.bias_type`: must be a qola_mha_bias_type.
pub const QOLA_MHA_FIELD_BIAS_TYPE: i32 = 16;
/// Status field `problem.scale`: must be finite.
pub const QOLA_MHA_FIELD_SCALE: i32 = 17;
/// Status field `problem.logits_soft_cap`: must be 0 or finite and > 0.
pub const QOLA_MHA_FIELD_LOGITS_SOFT_CAP: i32 = 18;
/// Status field `problem.seqlens.seqstart_q`: required in GROUP mode, NULL in BATCH.
pub const QOLA_MHA_FIELD_SEQSTART_Q: i32 = 19;
/// Status field `problem.seqlens.seqstart_k`: required in GROUP mode, NULL in BATCH.
pub const QOLA_MHA_FIELD_SEQSTART_K: i32 = 20;
/// Status field `problem.seqlens.seqlen_q`: GROUP mode only, not with cu_seqlen_q.
pub const QOLA_MHA_FIELD_SEQLEN_Q_PTR: i32 = 21;
/// Status field `problem.seqlens.seqlen_k`: GROUP mode only, not with cu_seqlen_k.
pub const QOLA_MHA_FIELD_SEQLEN_K_PTR: i32 = 22;
/// Status field `problem.seqlens.cu_seqlen_q`: optional device int32 [batch + 1].
pub const QOLA_MHA_FIELD_CU_SEQLEN_Q: i32 = 23;
/// Status field `problem.seqlens.cu_seqlen_k`: optional device int32 [batch + 1].
pub const QOLA_MHA_FIELD_CU_SEQLEN_K: i32 = 24;
/// Status field `problem.dropout.p_drop`: must be in [0, 1).
pub const QOLA_MHA_FIELD_P_DROP: i32 = 25;
/// Status field `problem.dropout.seed_offset_on_device`: must be 0 or 1.
pub const QOLA_MHA_FIELD_SEED_OFFSET_ON_DEVICE: i32 = 26;
/// Status field `problem.dropout.seed_ptr`: required when on device, NULL otherwise.
pub const QOLA_MHA_FIELD_SEED_PTR: i32 = 27;
/// Status field `problem.dropout.offset_ptr`: required when on device, NULL otherwise.
pub const QOLA_MHA_FIELD_OFFSET_PTR: i32 = 28;
/// Status field `q`: required.
pub const QOLA_MHA_FIELD_Q: i32 = 29;
/// Status field `q_strides`: must be >= 0 (batch 0 in GROUP mode).
pub const QOLA_MHA_FIELD_Q_STRIDES: i32 = 30;
/// Status field `k`: required.
pub const QOLA_MHA_FIELD_K: i32 = 31;
/// Status field `k_strides`: must be >= 0 (batch 0 in GROUP mode).
pub const QOLA_MHA_FIELD_K_STRIDES: i32 = 32;
/// Status field `v`: required.
pub const QOLA_MHA_FIELD_V: i32 = 33;
/// Status field `v_strides`: must be >= 0 (batch 0 in GROUP mode).
pub const QOLA_MHA_FIELD_V_STRIDES: i32 = 34;
/// Status field `bias`: required with an ELEMENTWISE bias, NULL otherwise.
pub const QOLA_MHA_FIELD_BIAS: i32 = 35;
/// Status field `bias_strides`: must be >= 0 (batch 0 in GROUP mode).
pub const QOLA_MHA_FIELD_BIAS_STRIDES: i32 = 36;
/// Status field `alibi_slopes`: required with an ALIBI bias, NULL otherwise.
pub const QOLA_MHA_FIELD_ALIBI_SLOPES: i32 = 37;
/// Status field `alibi_slopes_batch_stride`: must be 0 or >= nhead_q.
pub const QOLA_MHA_FIELD_ALIBI_SLOPES_BATCH_STRIDE: i32 = 38;
/// Status field `o`: required.
pub const QOLA_MHA_FIELD_O: i32 = 39;
/// Status field `o_strides`: rows and heads must not overlap (batch 0 in GROUP mode).
pub const QOLA_MHA_FIELD_O_STRIDES: i32 = 40;
/// Status field `lse`: required in the backward.
pub const QOLA_MHA_FIELD_LSE: i32 = 41;
/// Status field `lse_strides`: heads and sequences must not overlap; row 0.
pub const QOLA_MHA_FIELD_LSE_STRIDES: i32 = 42;
/// Status field `randval`: dropout only.
pub const QOLA_MHA_FIELD_RANDVAL: i32 = 43;
/// Status field `randval_strides`: rows and heads must not overlap.
pub const QOLA_MHA_FIELD_RANDVAL_STRIDES: i32 = 44;
/// Status field `deterministic`: must be 0 or 1.
pub const QOLA_MHA_FIELD_DETERMINISTIC: i32 = 45;
/// Status field `dout`: required.
pub const QOLA_MHA_FIELD_DOUT: i32 = 46;
/// Status field `dout_strides`: must be >= 0 (batch 0 in GROUP mode).
pub const QOLA_MHA_FIELD_DOUT_STRIDES: i32 = 47;
/// Status field `dq`: required.
pub const QOLA_MHA_FIELD_DQ: i32 = 48;
/// Status field `dq_strides`: rows and heads must not overlap (batch 0 in GROUP mode).
pub const QOLA_MHA_FIELD_DQ_STRIDES: i32 = 49;
/// Status field `dk`: required.
pub const QOLA_MHA_FIELD_DK: i32 = 50;
/// Status field `dk_strides`: rows and heads must not overlap (batch 0 in GROUP mode).
pub const QOLA_MHA_FIELD_DK_STRIDES: i32 = 51;
/// Status field `dv`: required.
pub const QOLA_MHA_FIELD_DV: i32 = 52;
/// Status field `dv_strides`: rows and heads must not overlap (batch 0 in GROUP mode).
pub const QOLA_MHA_FIELD_DV_STRIDES: i32 = 53;
/// Status field `dbias`: ELEMENTWISE bias only.
pub const QOLA_MHA_FIELD_DBIAS: i32 = 54;
/// Status field `dbias_strides`: rows and heads must not overlap.
pub const QOLA_MHA_FIELD_DBIAS_STRIDES: i32 = 55;
/// Status field `workspace`: required when qola_mha_bwd_workspace_size is not 0.
pub const QOLA_MHA_FIELD_WORKSPACE: i32 = 56;
/// Status field `traits`: a combination no kernel of this build serves.
pub const QOLA_MHA_FIELD_TRAITS: i32 = 57;

const FIELD_COUNT: i32 = 58;

/// Strides, in elements, of the batch, sequence and head dimensions (head dim is contiguous).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct qola_tensor_strides {
    /// Between sequences (0 in group mode).
    pub batch: i64,
    /// Between rows.
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

/// Strides, in elements, of a `[batch, nhead, rows, columns]` matrix (columns contiguous).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct qola_matrix_strides {
    /// Between sequences (0 in group mode).
    pub batch: i64,
    /// Between heads.
    pub head: i64,
    /// Between rows (0 for lse).
    pub row: i64,
}

/// Sequence lengths in device memory (`qola_mha_seqlens`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qola_mha_seqlens {
    /// Group mode: `[batch + 1]` physical start rows of each query sequence.
    pub seqstart_q: *const i32,
    /// Group mode: `[batch + 1]` physical start rows of each key sequence.
    pub seqstart_k: *const i32,
    /// Group mode, optional: `[batch]` logical query lengths.
    pub seqlen_q: *const i32,
    /// Group mode, optional: `[batch]` logical key lengths.
    pub seqlen_k: *const i32,
    /// Optional: `[batch + 1]` cumulative logical query lengths.
    pub cu_seqlen_q: *const i32,
    /// Optional: `[batch + 1]` cumulative logical key lengths.
    pub cu_seqlen_k: *const i32,
}

/// Dropout (`qola_mha_dropout`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qola_mha_dropout {
    /// Probability of dropping, `[0, 1)`; 0 = none.
    pub p_drop: f32,
    /// 1: seed and offset from `seed_ptr`/`offset_ptr` on the device.
    pub seed_offset_on_device: i32,
    /// Philox seed, by value.
    pub seed: u64,
    /// Philox offset, by value.
    pub offset: u64,
    /// Device seed.
    pub seed_ptr: *const u64,
    /// Device offset.
    pub offset_ptr: *const u64,
}

/// What forward and backward share (`qola_mha_problem`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qola_mha_problem {
    /// `QOLA_DTYPE_*`.
    pub dtype: i32,
    /// `QOLA_MHA_MODE_*`.
    pub mode: i32,
    /// Number of sequences.
    pub batch: i32,
    /// Query heads, a multiple of `nhead_k`.
    pub nhead_q: i32,
    /// Key/value heads.
    pub nhead_k: i32,
    /// Batch mode: rows per sequence; group mode: rows of the packed q.
    pub seqlen_q: i32,
    /// The same for k and v.
    pub seqlen_k: i32,
    /// Group mode: the longest logical query sequence; batch mode: 0 or `seqlen_q`.
    pub max_seqlen_q: i32,
    /// Group mode: the longest logical key sequence; batch mode: 0 or `seqlen_k`.
    pub max_seqlen_k: i32,
    /// Head dim of q and k.
    pub hdim_q: i32,
    /// Head dim of v and o.
    pub hdim_v: i32,
    /// `QOLA_MHA_MASK_*`.
    pub mask_type: i32,
    /// Left window, -1 = unlimited.
    pub window_left: i32,
    /// Right window, -1 = unlimited.
    pub window_right: i32,
    /// `QOLA_MHA_BIAS_*`.
    pub bias_type: i32,
    /// Softmax scale.
    pub scale: f32,
    /// Logits soft cap, 0 = none.
    pub logits_soft_cap: f32,
    /// Device sequence lengths.
    pub seqlens: qola_mha_seqlens,
    /// Dropout.
    pub dropout: qola_mha_dropout,
}

/// Forward arguments (`qola_mha_fwd_args`); pointers are device pointers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qola_mha_fwd_args {
    /// `size_of::<qola_mha_fwd_args>()` ([`qola_mha_fwd_args::new`] sets it).
    pub size: u32,
    /// The problem.
    pub problem: qola_mha_problem,
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
    /// Elementwise bias.
    pub bias: *const c_void,
    /// Its strides.
    pub bias_strides: qola_matrix_strides,
    /// ALiBi slopes.
    pub alibi_slopes: *const f32,
    /// Their batch stride (0: shared).
    pub alibi_slopes_batch_stride: i64,
    /// Output.
    pub o: *mut c_void,
    /// Its strides.
    pub o_strides: qola_tensor_strides,
    /// Log-sum-exp per query row, may be null.
    pub lse: *mut f32,
    /// Its strides.
    pub lse_strides: qola_matrix_strides,
    /// Dropout random bytes, may be null.
    pub randval: *mut u8,
    /// Their strides.
    pub randval_strides: qola_matrix_strides,
}

/// Backward arguments (`qola_mha_bwd_args`); pointers are device pointers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qola_mha_bwd_args {
    /// `size_of::<qola_mha_bwd_args>()` ([`qola_mha_bwd_args::new`] sets it).
    pub size: u32,
    /// The problem.
    pub problem: qola_mha_problem,
    /// 1: the same bits on every run.
    pub deterministic: i32,
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
    /// Elementwise bias.
    pub bias: *const c_void,
    /// Its strides.
    pub bias_strides: qola_matrix_strides,
    /// ALiBi slopes.
    pub alibi_slopes: *const f32,
    /// Their batch stride (0: shared).
    pub alibi_slopes_batch_stride: i64,
    /// The forward's output.
    pub o: *const c_void,
    /// Its strides.
    pub o_strides: qola_tensor_strides,
    /// Gradient of the output.
    pub dout: *const c_void,
    /// Its strides.
    pub dout_strides: qola_tensor_strides,
    /// The forward's log-sum-exp.
    pub lse: *const f32,
    /// Its strides.
    pub lse_strides: qola_matrix_strides,
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
    /// Gradient of the elementwise bias (written), may be null.
    pub dbias: *mut c_void,
    /// Its strides.
    pub dbias_strides: qola_matrix_strides,
    /// [`qola_mha_bwd_workspace_size`] bytes of device memory.
    pub workspace: *mut c_void,
}

macro_rules! zeroed_with_size {
    ($ty:ident) => {
        impl $ty {
            /// All fields zero or null (every feature off), `size` set: the `*_ARGS_INIT` of C.
            pub fn new() -> $ty {
                // SAFETY: every field is an integer, a float or a raw pointer: all-zero is valid.
                let mut args: $ty = unsafe { std::mem::zeroed() };
                args.size = std::mem::size_of::<$ty>() as u32;
                args
            }
        }

        impl Default for $ty {
            fn default() -> $ty {
                $ty::new()
            }
        }
    };
}

zeroed_with_size!(qola_mha_fwd_args);
zeroed_with_size!(qola_mha_bwd_args);

unsafe extern "C" {
    /// Forward attention (see `qola_mha.h`).
    pub fn qola_mha_fwd(args: *const qola_mha_fwd_args, stream: hipStream_t) -> c_int;
    /// The status [`qola_mha_fwd`] would return before launching anything.
    pub fn qola_mha_fwd_check(args: *const qola_mha_fwd_args) -> c_int;
    /// Device workspace bytes [`qola_mha_bwd`] needs for `args`, in `*bytes`.
    pub fn qola_mha_bwd_workspace_size(args: *const qola_mha_bwd_args, bytes: *mut usize) -> c_int;
    /// Backward attention: `dq`, `dk`, `dv` (and `dbias`).
    pub fn qola_mha_bwd(args: *const qola_mha_bwd_args, stream: hipStream_t) -> c_int;
    /// The status [`qola_mha_bwd`] would return before launching anything.
    pub fn qola_mha_bwd_check(args: *const qola_mha_bwd_args) -> c_int;
    /// A static string for a status: `"<field>: invalid: <rule>"` and the like.
    pub fn qola_mha_status_string(status: c_int) -> *const c_char;
}

/// [`qola_mha_status_string`] as a Rust string.
pub fn status_string(status: c_int) -> &'static str {
    // SAFETY: the function returns a static, NUL-terminated ASCII string for any input.
    unsafe { std::ffi::CStr::from_ptr(qola_mha_status_string(status)) }
        .to_str()
        .unwrap_or("not a qola_mha status")
}

/// The static libraries the build script produced (for tests and tools): one for the built-in
/// kernels, one per AITER module with `QOLA_KERNELS=aiter`; empty when nothing was compiled
/// (`DOCS_RS`).
pub fn libraries() -> Vec<&'static str> {
    option_env!("QOLA_MHA_LIBRARIES")
        .map(|list| list.split(';').collect())
        .unwrap_or_default()
}
