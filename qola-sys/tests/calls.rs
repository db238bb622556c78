//! Calling the kernels through the C ABI on a machine without a GPU: a HIP error status comes
//! back, never a crash; invalid arguments are refused before any launch.

use std::ffi::{c_int, c_void};

use qola_sys::*;

unsafe extern "C" {
    fn hipGetDeviceCount(count: *mut c_int) -> c_int;
}

fn gpus() -> c_int {
    let mut count = 0;
    // SAFETY: hipGetDeviceCount writes one int.
    let status = unsafe { hipGetDeviceCount(&mut count) };
    if status == 0 { count } else { 0 }
}

fn shape(dtype: i32) -> qola_mha_shape {
    qola_mha_shape {
        dtype,
        batch: 1,
        nhead: 2,
        seqlen_q: 8,
        seqlen_k: 8,
        head_dim: 64,
        causal: 1,
        scale: 0.125,
    }
}

fn fwd_args(dtype: i32, fake: *mut c_void) -> qola_mha_fwd_args {
    let strides = qola_tensor_strides::bshd(8, 2, 64);
    qola_mha_fwd_args {
        shape: shape(dtype),
        q: fake,
        q_strides: strides,
        k: fake,
        k_strides: strides,
        v: fake,
        v_strides: strides,
        o: fake,
        o_strides: strides,
        lse: fake.cast(),
    }
}

#[test]
fn forward_without_a_gpu_returns_a_hip_error_not_a_crash() {
    if gpus() > 0 {
        eprintln!("a GPU is present: the no-GPU path cannot be exercised here");
        return;
    }
    // Pointers no GPU will ever read: with no device, the launch fails in the runtime.
    let fake = 0x1000 as *mut c_void;
    for dtype in [QOLA_DTYPE_FP32, QOLA_DTYPE_FP16, QOLA_DTYPE_BF16] {
        let args = fwd_args(dtype, fake);
        // SAFETY: the arguments are valid in shape; no device exists to dereference them.
        let status = unsafe { qola_mha_fwd(&args, std::ptr::null_mut()) };
        assert_ne!(status, 0, "dtype {dtype}");
        assert_ne!(
            status, HIP_ERROR_INVALID_VALUE,
            "dtype {dtype}: arguments were valid"
        );
    }
}

#[test]
fn invalid_arguments_are_refused_before_any_launch() {
    let fake = 0x1000 as *mut c_void;
    let mut args = fwd_args(QOLA_DTYPE_FP16, fake);
    args.shape.head_dim = 129;
    // SAFETY: refused before anything is read.
    assert_eq!(
        unsafe { qola_mha_fwd(&args, std::ptr::null_mut()) },
        HIP_ERROR_INVALID_VALUE
    );
    let mut args = fwd_args(7, fake);
    args.shape.dtype = 7;
    assert_eq!(
        unsafe { qola_mha_fwd(&args, std::ptr::null_mut()) },
        HIP_ERROR_INVALID_VALUE
    );
    let mut args = fwd_args(QOLA_DTYPE_FP32, fake);
    args.q = std::ptr::null();
    assert_eq!(
        unsafe { qola_mha_fwd(&args, std::ptr::null_mut()) },
        HIP_ERROR_INVALID_VALUE
    );
    assert_eq!(
        unsafe { qola_mha_fwd(std::ptr::null(), std::ptr::null_mut()) },
        HIP_ERROR_INVALID_VALUE
    );
    // SAFETY: null is refused.
    assert_eq!(
        unsafe { qola_mha_bwd(std::ptr::null(), std::ptr::null_mut()) },
        HIP_ERROR_INVALID_VALUE
    );
}

#[test]
fn the_backward_workspace_is_one_float_per_query_row() {
    let strides = qola_tensor_strides::bshd(8, 2, 64);
    let null = std::ptr::null_mut();
    let args = qola_mha_bwd_args {
        shape: shape(QOLA_DTYPE_BF16),
        q: null,
        q_strides: strides,
        k: null,
        k_strides: strides,
        v: null,
        v_strides: strides,
        o: null,
        o_strides: strides,
        dout: null,
        dout_strides: strides,
        lse: std::ptr::null(),
        dq: null,
        dq_strides: strides,
        dk: null,
        dk_strides: strides,
        dv: null,
        dv_strides: strides,
        workspace: null,
    };
    // SAFETY: only the shape is read.
    assert_eq!(unsafe { qola_mha_bwd_workspace_size(&args) }, 2 * 8 * 4);
}

#[test]
fn only_the_c_api_is_exported() {
    let libraries = libraries();
    assert!(
        !libraries.is_empty(),
        "the build script names its libraries"
    );
    let out = std::process::Command::new("nm")
        .args(["-g", "--defined-only"])
        .args(&libraries)
        .output()
        .expect("nm (binutils)");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "qola_mha_bwd",
            "qola_mha_bwd_workspace_size",
            "qola_mha_fwd"
        ],
        "{text}"
    );
}
