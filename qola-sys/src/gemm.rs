//! AITER's a4w4 (FP4) GEMMs for gfx950: `#[repr(C)]` mirrors of `kernels/include/qola_gemm.h`
//! (which documents the model, the layouts and every rule once) and its functions.
//!
//! The functions exist where the build served them: with `QOLA_KERNELS=aiter` and a manifest
//! whose modules include `libgemm_a4w4_blockscale` (cfg `qola_gemm_a4w4_blockscale`) or
//! `libgemm_a4w4_asm` (cfg `qola_gemm_a4w4_asm`), as TransformerEngine's GEMM manifest does.
//! Each checks its arguments before launching anything; the `_check` functions run those checks
//! alone (no GPU needed) and [`gemm_status_string`] names a status's field and rule.
//!
//! A program linking them links the HIP runtime of the ROCm that compiled them (the build
//! script names its library directory when the compiler's install has one): AITER's objects
//! call that runtime's symbols (`hipGetDevicePropertiesR0600` from ROCm 6 on), which an older
//! `libamdhip64` on the linker's default path lacks. qola's own test links with the toolchain's
//! driver as the linker (`RUSTFLAGS="-C linker=<hipcc>"` with `--target`, so build scripts keep
//! the host's linker).

use std::ffi::{c_char, c_int, c_void};

/// `qola_gemm_dtype`: two e2m1 values in a byte.
pub const QOLA_GEMM_DTYPE_FP4X2: i32 = 0;
/// `qola_gemm_dtype`: a power-of-two scale, biased by 127.
pub const QOLA_GEMM_DTYPE_E8M0: i32 = 1;
/// `qola_gemm_dtype`: bfloat16.
pub const QOLA_GEMM_DTYPE_BF16: i32 = 2;
/// `qola_gemm_dtype`: IEEE half.
pub const QOLA_GEMM_DTYPE_FP16: i32 = 3;
/// `qola_gemm_dtype`: float32.
pub const QOLA_GEMM_DTYPE_FP32: i32 = 4;

/// Status: success.
pub const QOLA_GEMM_STATUS_SUCCESS: c_int = 0;
/// Status base: `QOLA_GEMM_STATUS_INVALID + field`, the field's value breaks its rule.
pub const QOLA_GEMM_STATUS_INVALID: c_int = 1000;
/// Status base: `QOLA_GEMM_STATUS_UNSUPPORTED + field`, valid but served by no kernel of the build.
pub const QOLA_GEMM_STATUS_UNSUPPORTED: c_int = 2000;
/// Status: AITER refused the arguments at the call (its message is on standard error).
pub const QOLA_GEMM_STATUS_KERNEL_ERROR: c_int = 3000;

/// Status field `args`: must not be NULL.
pub const QOLA_GEMM_FIELD_ARGS: i32 = 0;
/// Status field `size`: must be sizeof the args struct of a qola version this library knows.
pub const QOLA_GEMM_FIELD_SIZE: i32 = 1;
/// Status field `a`: FP4X2, data set, rows and cols >= 1, row_stride >= cols.
pub const QOLA_GEMM_FIELD_A: i32 = 2;
/// Status field `b`: FP4X2, data set, cols = a.cols, rows >= 1, row_stride >= cols.
pub const QOLA_GEMM_FIELD_B: i32 = 3;
/// Status field `a.cols`: K = 2 * a.cols must be a multiple of 32 (one scale per 32 values).
pub const QOLA_GEMM_FIELD_K: i32 = 4;
/// Status field `a_scale`: E8M0, data set, rows >= M, cols >= K/32, row_stride >= cols.
pub const QOLA_GEMM_FIELD_A_SCALE: i32 = 5;
/// Status field `b_scale`: E8M0, data set, rows >= N, cols >= K/32, row_stride >= cols.
pub const QOLA_GEMM_FIELD_B_SCALE: i32 = 6;
/// Status field `out`: data set, rows = M, cols = N, row_stride >= cols.
pub const QOLA_GEMM_FIELD_OUT: i32 = 7;
/// Status field `bias`: data NULL, or FP32 with rows = M, cols = N, row_stride >= cols.
pub const QOLA_GEMM_FIELD_BIAS: i32 = 8;
/// Status field `b_preshuffled`: must be 0 or 1.
pub const QOLA_GEMM_FIELD_B_PRESHUFFLED: i32 = 9;
/// Status field `log2_k_split`: >= 0 (asm: or -1), and 2^log2_k_split must divide K.
pub const QOLA_GEMM_FIELD_LOG2_K_SPLIT: i32 = 10;
/// Status field `kernel_name`: NULL, empty, or a kernel of this build.
pub const QOLA_GEMM_FIELD_KERNEL_NAME: i32 = 11;

/// `qola_gemm_matrix`: a row-major matrix in device memory.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qola_gemm_matrix {
    /// The elements (device memory).
    pub data: *mut c_void,
    /// Rows.
    pub rows: i64,
    /// Columns, in elements (an FP4X2 element is a byte, two values).
    pub cols: i64,
    /// Elements from one row to the next (>= cols).
    pub row_stride: i64,
    /// A `QOLA_GEMM_DTYPE_*`.
    pub dtype: i32,
}

/// `qola_gemm_a4w4_args`: the arguments of both a4w4 GEMMs.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qola_gemm_a4w4_args {
    /// `size_of::<qola_gemm_a4w4_args>()` (set by [`qola_gemm_a4w4_args::new`]).
    pub size: u32,
    /// `[M, K/2]` FP4X2.
    pub a: qola_gemm_matrix,
    /// `[N, K/2]` FP4X2.
    pub b: qola_gemm_matrix,
    /// `[>= M, >= K/32]` E8M0.
    pub a_scale: qola_gemm_matrix,
    /// `[>= N, >= K/32]` E8M0.
    pub b_scale: qola_gemm_matrix,
    /// `[M, N]`: BF16 or FP16 (blockscale), BF16 (asm).
    pub out: qola_gemm_matrix,
    /// asm only, null data for none: `[M, N]` FP32.
    pub bias: qola_gemm_matrix,
    /// asm only: the product's factor.
    pub alpha: f32,
    /// asm only: the bias's factor.
    pub beta: f32,
    /// asm only: 1 when `b` is preshuffled, else 0.
    pub b_preshuffled: i32,
    /// K in 2^log2_k_split batches; asm: -1 lets the heuristic choose.
    pub log2_k_split: i32,
    /// Null or empty: the tuned or heuristic choice; else a kernel of this build (NUL-terminated).
    pub kernel_name: *const c_char,
    /// The device holding the data; -1: the current one.
    pub device: i32,
}

impl qola_gemm_a4w4_args {
    /// All fields zero or null, `size` set: `QOLA_GEMM_A4W4_ARGS_INIT` of C.
    pub fn new() -> qola_gemm_a4w4_args {
        // SAFETY: every field is an integer, a float or a raw pointer: all-zero is valid.
        let mut args: qola_gemm_a4w4_args = unsafe { std::mem::zeroed() };
        args.size = std::mem::size_of::<qola_gemm_a4w4_args>() as u32;
        args
    }
}

impl Default for qola_gemm_a4w4_args {
    fn default() -> qola_gemm_a4w4_args {
        qola_gemm_a4w4_args::new()
    }
}

#[cfg(any(qola_gemm_a4w4_blockscale, doc))]
unsafe extern "C" {
    /// `out = A * B^T` with block scales by composable_kernel's instances (see `qola_gemm.h`).
    pub fn qola_gemm_a4w4_blockscale(
        args: *const qola_gemm_a4w4_args,
        stream: crate::hipStream_t,
    ) -> c_int;
    /// The status [`qola_gemm_a4w4_blockscale`] would return before launching anything.
    pub fn qola_gemm_a4w4_blockscale_check(args: *const qola_gemm_a4w4_args) -> c_int;
}

#[cfg(any(qola_gemm_a4w4_asm, doc))]
unsafe extern "C" {
    /// `out = alpha * A * B^T + beta * bias` by AITER's f4gemm code objects.
    pub fn qola_gemm_a4w4_asm(
        args: *const qola_gemm_a4w4_args,
        stream: crate::hipStream_t,
    ) -> c_int;
    /// The status [`qola_gemm_a4w4_asm`] would return before launching anything.
    pub fn qola_gemm_a4w4_asm_check(args: *const qola_gemm_a4w4_args) -> c_int;
}

#[cfg(any(qola_gemm_a4w4_blockscale, qola_gemm_a4w4_asm, doc))]
unsafe extern "C" {
    /// A static string for a status: `"<field>: invalid: <rule>"` and the like.
    pub fn qola_gemm_status_string(status: c_int) -> *const c_char;
}

/// [`qola_gemm_status_string`] as a Rust string.
#[cfg(any(qola_gemm_a4w4_blockscale, qola_gemm_a4w4_asm, doc))]
pub fn gemm_status_string(status: c_int) -> &'static str {
    // SAFETY: the function returns a static, NUL-terminated ASCII string for any input.
    unsafe { std::ffi::CStr::from_ptr(qola_gemm_status_string(status)) }
        .to_str()
        .unwrap_or("not a qola_gemm status")
}
