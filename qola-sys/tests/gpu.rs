//! The kernels on a GPU, against the float64 reference: the emulation test's cases (every
//! feature alone, then random combinations), run where a HIP device is present; elsewhere it
//! says why it does not run (the CPU emulation test covers the math everywhere).

mod common;

use std::ffi::{c_int, c_void};

use common::{Blob, Case, Laid, check, rebase_bwd, rebase_fwd};
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

/// Runs one direction on the GPU: the blob copied to device memory, the args' offsets moved onto
/// it, the blob copied back.
fn run(backward: bool, laid: &Laid) -> (i32, Blob) {
    let memory = Buffer::from(&laid.blob.0);
    let base = memory.0 as usize;
    let status = if backward {
        let a = rebase_bwd(&laid.bwd, base);
        // SAFETY: every pointer is an offset into `memory`, sized by the case's layout.
        unsafe { qola_mha_bwd(&a, std::ptr::null_mut()) }
    } else {
        let a = rebase_fwd(&laid.fwd, base);
        // SAFETY: as above.
        unsafe { qola_mha_fwd(&a, std::ptr::null_mut()) }
    };
    // SAFETY: no arguments.
    assert_eq!(unsafe { hipDeviceSynchronize() }, 0);
    (status, Blob(memory.read()))
}

#[test]
fn kernels_on_a_gpu_match_the_float64_reference() {
    let mut count = 0;
    // SAFETY: writes one int.
    if unsafe { hipGetDeviceCount(&mut count) } != 0 || count == 0 {
        eprintln!("skipping: no HIP device here (the emulation test checks the kernels' math)");
        return;
    }
    let mut failures = Vec::new();
    let cases = Case::features()
        .into_iter()
        .chain((1..=60).map(Case::random));
    for case in cases {
        if let Err(e) = check(&case, &mut run) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
