//! The kernels on a GPU, against the float64 reference: runs where a HIP device is present and
//! says why it does not run elsewhere (the CPU emulation test covers the math everywhere).

mod common;

use std::ffi::{c_int, c_void};

use common::{Problem, Results, check, decode, encode};
use qola_sys::*;

unsafe extern "C" {
    fn hipGetDeviceCount(count: *mut c_int) -> c_int;
    fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> c_int;
    fn hipFree(ptr: *mut c_void) -> c_int;
    fn hipMemcpy(dst: *mut c_void, src: *const c_void, size: usize, kind: c_int) -> c_int;
    fn hipDeviceSynchronize() -> c_int;
}

const HOST_TO_DEVICE: c_int = 1;
const DEVICE_TO_HOST: c_int = 2;

/// Device memory, freed on drop.
struct Buffer(*mut c_void, usize);

impl Buffer {
    fn new(size: usize) -> Buffer {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: hipMalloc writes one pointer.
        assert_eq!(unsafe { hipMalloc(&mut ptr, size.max(4)) }, 0);
        Buffer(ptr, size)
    }
    fn from(bytes: &[u8]) -> Buffer {
        let b = Buffer::new(bytes.len());
        // SAFETY: both regions hold bytes.len() bytes.
        assert_eq!(
            unsafe { hipMemcpy(b.0, bytes.as_ptr().cast(), bytes.len(), HOST_TO_DEVICE) },
            0
        );
        b
    }
    fn read(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.1];
        // SAFETY: both regions hold self.1 bytes.
        assert_eq!(
            unsafe { hipMemcpy(out.as_mut_ptr().cast(), self.0, self.1, DEVICE_TO_HOST) },
            0
        );
        out
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated by hipMalloc.
        unsafe { hipFree(self.0) };
    }
}

fn run(p: &Problem) -> Results {
    let s = &p.shape;
    let (dt, size) = (p.dtype, if p.dtype == QOLA_DTYPE_FP32 { 4 } else { 2 });
    let q = Buffer::from(&encode(dt, &p.q));
    let k = Buffer::from(&encode(dt, &p.k));
    let v = Buffer::from(&encode(dt, &p.v));
    let dout = Buffer::from(&encode(dt, &p.dout));
    let o = Buffer::new(s.q_len() * size);
    let lse = Buffer::new(s.lse_len() * 4);
    let (dq, dk, dv) = (
        Buffer::new(s.q_len() * size),
        Buffer::new(s.k_len() * size),
        Buffer::new(s.k_len() * size),
    );
    let shape = qola_mha_shape {
        dtype: dt,
        batch: s.batch as i32,
        nhead: s.nhead as i32,
        seqlen_q: s.seqlen_q as i32,
        seqlen_k: s.seqlen_k as i32,
        head_dim: s.head_dim as i32,
        causal: s.causal as i32,
        scale: s.scale as f32,
    };
    let qs = qola_tensor_strides::bshd(shape.seqlen_q, shape.nhead, shape.head_dim);
    let ks = qola_tensor_strides::bshd(shape.seqlen_k, shape.nhead, shape.head_dim);
    let fwd = qola_mha_fwd_args {
        shape,
        q: q.0,
        q_strides: qs,
        k: k.0,
        k_strides: ks,
        v: v.0,
        v_strides: ks,
        o: o.0,
        o_strides: qs,
        lse: lse.0.cast(),
    };
    // SAFETY: every pointer is a device buffer of the size the shape implies.
    assert_eq!(unsafe { qola_mha_fwd(&fwd, std::ptr::null_mut()) }, 0);
    let mut bwd = qola_mha_bwd_args {
        shape,
        q: q.0,
        q_strides: qs,
        k: k.0,
        k_strides: ks,
        v: v.0,
        v_strides: ks,
        o: o.0,
        o_strides: qs,
        dout: dout.0,
        dout_strides: qs,
        lse: lse.0.cast(),
        dq: dq.0,
        dq_strides: qs,
        dk: dk.0,
        dk_strides: ks,
        dv: dv.0,
        dv_strides: ks,
        workspace: std::ptr::null_mut(),
    };
    // SAFETY: only the shape is read.
    let workspace = Buffer::new(unsafe { qola_mha_bwd_workspace_size(&bwd) });
    bwd.workspace = workspace.0;
    // SAFETY: as above.
    assert_eq!(unsafe { qola_mha_bwd(&bwd, std::ptr::null_mut()) }, 0);
    // SAFETY: no arguments.
    assert_eq!(unsafe { hipDeviceSynchronize() }, 0);
    let round = |x: &[f32]| decode(dt, &encode(dt, x));
    Results {
        q: round(&p.q),
        k: round(&p.k),
        v: round(&p.v),
        dout: round(&p.dout),
        o: decode(dt, &o.read()),
        lse: decode(QOLA_DTYPE_FP32, &lse.read()),
        dq: decode(dt, &dq.read()),
        dk: decode(dt, &dk.read()),
        dv: decode(dt, &dv.read()),
    }
}

#[test]
fn kernels_on_a_gpu_match_the_float64_reference() {
    let mut count = 0;
    // SAFETY: writes one int.
    if unsafe { hipGetDeviceCount(&mut count) } != 0 || count == 0 {
        eprintln!("skipping: no HIP device here (the emulation test checks the kernels' math)");
        return;
    }
    for problem in Problem::all() {
        check(&problem, &run(&problem));
    }
}

#[test]
fn rust_rounding_matches_the_kernels_rounding_at_the_edges() {
    use common::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
    assert_eq!(f32_to_f16(1.0), 0x3c00);
    assert_eq!(f32_to_f16(65504.0), 0x7bff);
    assert_eq!(f32_to_f16(1e6), 0x7c00);
    assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00, "tie to even");
    assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8)), 0x3f80, "tie to even");
    assert_eq!(bf16_to_f32(f32_to_bf16(3.0)), 3.0);
}
