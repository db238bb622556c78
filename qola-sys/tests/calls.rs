//! Calling the C API without a GPU: argument checks before any launch, with statuses that name
//! the field (thousands of random argument structs, valid and broken), HIP errors (never a
//! crash) when valid arguments meet no device, the workspace size, and the exported symbols.

mod common;

use std::ffi::{c_int, c_void};

use common::{Case, Rng};
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

fn fwd_check(a: &qola_mha_fwd_args) -> i32 {
    // SAFETY: the check reads the struct only, never what its pointers point to.
    unsafe { qola_mha_fwd_check(a) }
}

fn bwd_check(a: &qola_mha_bwd_args) -> i32 {
    // SAFETY: as above.
    unsafe { qola_mha_bwd_check(a) }
}

/// The field names of the header, for "every rejection names a field".
fn field_names() -> Vec<String> {
    (0..QOLA_MHA_FIELD_COUNT)
        .map(|f| {
            status_string(QOLA_MHA_STATUS_INVALID + f)
                .split(':')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

const FAKE: usize = 0x1000;

type FwdBreak = (&'static str, i32, fn(&mut qola_mha_fwd_args) -> bool);

/// One rule broken at a time: (what, the field the status must name, the change; false when
/// it does not apply to this case).
fn forward_breaks() -> Vec<FwdBreak> {
    vec![
        ("size", QOLA_MHA_FIELD_SIZE, |a| {
            a.size -= 8;
            true
        }),
        ("dtype", QOLA_MHA_FIELD_DTYPE, |a| {
            a.problem.dtype = 7;
            true
        }),
        ("mode", QOLA_MHA_FIELD_MODE, |a| {
            a.problem.mode = 2;
            true
        }),
        ("batch", QOLA_MHA_FIELD_BATCH, |a| {
            a.problem.batch = 0;
            true
        }),
        ("nhead_k", QOLA_MHA_FIELD_NHEAD_K, |a| {
            a.problem.nhead_k = 0;
            true
        }),
        ("nhead_q not a multiple", QOLA_MHA_FIELD_NHEAD_Q, |a| {
            a.problem.nhead_k = a.problem.nhead_q + 1;
            true
        }),
        ("seqlen_q", QOLA_MHA_FIELD_SEQLEN_Q, |a| {
            a.problem.seqlen_q = -3;
            true
        }),
        ("seqlen_k", QOLA_MHA_FIELD_SEQLEN_K, |a| {
            a.problem.seqlen_k = 0;
            true
        }),
        ("max_seqlen_q", QOLA_MHA_FIELD_MAX_SEQLEN_Q, |a| {
            a.problem.max_seqlen_q = a.problem.seqlen_q + 1;
            true
        }),
        ("max_seqlen_k", QOLA_MHA_FIELD_MAX_SEQLEN_K, |a| {
            a.problem.max_seqlen_k = a.problem.seqlen_k + 1;
            true
        }),
        ("hdim_q", QOLA_MHA_FIELD_HDIM_Q, |a| {
            a.problem.hdim_q = 257;
            true
        }),
        ("hdim_v", QOLA_MHA_FIELD_HDIM_V, |a| {
            a.problem.hdim_v = 0;
            true
        }),
        ("mask_type", QOLA_MHA_FIELD_MASK_TYPE, |a| {
            a.problem.mask_type = 3;
            true
        }),
        ("window_left", QOLA_MHA_FIELD_WINDOW_LEFT, |a| {
            a.problem.window_left = -2;
            true
        }),
        ("window without a mask", QOLA_MHA_FIELD_WINDOW_RIGHT, |a| {
            a.problem.mask_type == QOLA_MHA_MASK_NONE && {
                a.problem.window_right = 3;
                true
            }
        }),
        ("bias_type", QOLA_MHA_FIELD_BIAS_TYPE, |a| {
            a.problem.bias_type = -1;
            true
        }),
        ("scale", QOLA_MHA_FIELD_SCALE, |a| {
            a.problem.scale = f32::NAN;
            true
        }),
        ("soft cap", QOLA_MHA_FIELD_LOGITS_SOFT_CAP, |a| {
            a.problem.logits_soft_cap = -1.0;
            true
        }),
        ("seqstart_q", QOLA_MHA_FIELD_SEQSTART_Q, |a| {
            let s = &mut a.problem.seqlens.seqstart_q;
            *s = if s.is_null() {
                FAKE as *const i32
            } else {
                std::ptr::null()
            };
            true
        }),
        (
            "seqlen_k with cu_seqlen_k",
            QOLA_MHA_FIELD_SEQLEN_K_PTR,
            |a| {
                a.problem.seqlens.seqlen_k = FAKE as *const i32;
                a.problem.seqlens.cu_seqlen_k = FAKE as *const i32;
                true
            },
        ),
        ("p_drop", QOLA_MHA_FIELD_P_DROP, |a| {
            a.problem.dropout.p_drop = 1.0;
            true
        }),
        (
            "seed pointer without dropout",
            QOLA_MHA_FIELD_SEED_PTR,
            |a| {
                a.problem.dropout.p_drop == 0.0 && {
                    a.problem.dropout.seed_ptr = FAKE as *const u64;
                    true
                }
            },
        ),
        ("q", QOLA_MHA_FIELD_Q, |a| {
            a.q = std::ptr::null();
            true
        }),
        ("k strides", QOLA_MHA_FIELD_K_STRIDES, |a| {
            a.k_strides.head = -1;
            true
        }),
        ("v", QOLA_MHA_FIELD_V, |a| {
            a.v = std::ptr::null();
            true
        }),
        ("bias without its type", QOLA_MHA_FIELD_BIAS, |a| {
            a.problem.bias_type != QOLA_MHA_BIAS_ELEMENTWISE && {
                a.bias = FAKE as *const c_void;
                true
            }
        }),
        (
            "alibi stride",
            QOLA_MHA_FIELD_ALIBI_SLOPES_BATCH_STRIDE,
            |a| {
                a.problem.nhead_q > 1 && {
                    a.alibi_slopes_batch_stride = 1;
                    true
                }
            },
        ),
        ("o", QOLA_MHA_FIELD_O, |a| {
            a.o = std::ptr::null_mut();
            true
        }),
        ("o rows overlap", QOLA_MHA_FIELD_O_STRIDES, |a| {
            a.problem.seqlen_q > 1 && a.problem.hdim_v > 1 && {
                a.o_strides.seq = 1;
                true
            }
        }),
        (
            "batch stride in group mode",
            QOLA_MHA_FIELD_O_STRIDES,
            |a| {
                a.problem.mode == QOLA_MHA_MODE_GROUP && {
                    a.o_strides.batch = 1 << 30;
                    true
                }
            },
        ),
        ("randval without dropout", QOLA_MHA_FIELD_RANDVAL, |a| {
            a.problem.dropout.p_drop == 0.0 && {
                a.randval = FAKE as *mut u8;
                true
            }
        }),
    ]
}

type BwdBreak = (&'static str, i32, fn(&mut qola_mha_bwd_args) -> bool);

fn backward_breaks() -> Vec<BwdBreak> {
    vec![
        ("size", QOLA_MHA_FIELD_SIZE, |a| {
            a.size += 8;
            true
        }),
        ("deterministic", QOLA_MHA_FIELD_DETERMINISTIC, |a| {
            a.deterministic = 2;
            true
        }),
        ("dout", QOLA_MHA_FIELD_DOUT, |a| {
            a.dout = std::ptr::null();
            true
        }),
        ("lse", QOLA_MHA_FIELD_LSE, |a| {
            a.lse = std::ptr::null();
            true
        }),
        ("lse row stride", QOLA_MHA_FIELD_LSE_STRIDES, |a| {
            a.lse_strides.row = 1;
            true
        }),
        ("dq", QOLA_MHA_FIELD_DQ, |a| {
            a.dq = std::ptr::null_mut();
            true
        }),
        ("dk heads overlap", QOLA_MHA_FIELD_DK_STRIDES, |a| {
            a.problem.nhead_k > 1 && {
                a.dk_strides.head = 0;
                true
            }
        }),
        ("dv", QOLA_MHA_FIELD_DV, |a| {
            a.dv = std::ptr::null_mut();
            true
        }),
        ("dbias without a bias", QOLA_MHA_FIELD_DBIAS, |a| {
            a.problem.bias_type != QOLA_MHA_BIAS_ELEMENTWISE && {
                a.dbias = FAKE as *mut c_void;
                true
            }
        }),
        ("workspace", QOLA_MHA_FIELD_WORKSPACE, |a| {
            a.workspace = std::ptr::null_mut();
            true
        }),
        ("window_right", QOLA_MHA_FIELD_WINDOW_RIGHT, |a| {
            a.problem.window_right = -7;
            true
        }),
    ]
}

#[test]
fn thousands_of_random_argument_structs_never_crash_and_every_rejection_names_its_field() {
    let names = field_names();
    let (mut accepted, mut rejected) = (0, 0);
    for seed in 1..=300 {
        let laid = Case::random(seed).lay_out();
        assert_eq!(
            fwd_check(&laid.fwd),
            0,
            "case {seed}: {}",
            status_string(fwd_check(&laid.fwd))
        );
        assert_eq!(
            bwd_check(&laid.bwd),
            0,
            "case {seed}: {}",
            status_string(bwd_check(&laid.bwd))
        );
        accepted += 2;
        for (what, field, change) in forward_breaks() {
            let mut a = laid.fwd;
            if change(&mut a) {
                let status = fwd_check(&a);
                assert_eq!(
                    status,
                    QOLA_MHA_STATUS_INVALID + field,
                    "case {seed}, {what}: {}",
                    status_string(status)
                );
                // SAFETY: refused before anything is read or launched.
                assert_eq!(unsafe { qola_mha_fwd(&a, std::ptr::null_mut()) }, status);
                rejected += 1;
            }
        }
        for (what, field, change) in backward_breaks() {
            let mut a = laid.bwd;
            if change(&mut a) {
                let status = bwd_check(&a);
                assert_eq!(
                    status,
                    QOLA_MHA_STATUS_INVALID + field,
                    "case {seed}, {what}: {}",
                    status_string(status)
                );
                // SAFETY: refused before anything is read or launched.
                assert_eq!(unsafe { qola_mha_bwd(&a, std::ptr::null_mut()) }, status);
                rejected += 1;
            }
        }
    }
    // Random bytes: whatever the check says, no crash, and a rejection names a field.
    let mut r = Rng::new(99);
    for n in 0..4000 {
        let mut fwd = qola_mha_fwd_args::new();
        let mut bwd = qola_mha_bwd_args::new();
        randomize(&mut fwd, &mut r);
        randomize(&mut bwd, &mut r);
        if n % 2 == 0 {
            fwd.size = std::mem::size_of::<qola_mha_fwd_args>() as u32;
            bwd.size = std::mem::size_of::<qola_mha_bwd_args>() as u32;
        }
        for status in [fwd_check(&fwd), bwd_check(&bwd)] {
            if status == 0 {
                accepted += 1;
                continue;
            }
            rejected += 1;
            let text = status_string(status);
            assert!(
                names
                    .iter()
                    .any(|name| text.starts_with(&format!("{name}: "))),
                "status {status}: {text}"
            );
        }
    }
    eprintln!("{accepted} accepted, {rejected} rejected");
    assert!(rejected > 10_000);
}

/// Random bytes, with small integers most of the time so that checks get past the first field.
fn randomize<T: Copy>(value: &mut T, r: &mut Rng) {
    let size = std::mem::size_of::<T>();
    // SAFETY: T is a plain-data struct of integers, floats and raw pointers: any bytes are a
    // value of it (pointers are never dereferenced by the checks).
    let bytes = unsafe { std::slice::from_raw_parts_mut((value as *mut T).cast::<u8>(), size) };
    for chunk in bytes.chunks_mut(4) {
        let word: u32 = if r.chance(0.7) {
            r.range(0, 8) as u32
        } else {
            r.next() as u32
        };
        let word = word.to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
}

#[test]
fn every_status_has_a_string_naming_what_failed() {
    assert_eq!(status_string(0), "success");
    let names = field_names();
    assert_eq!(names.len(), QOLA_MHA_FIELD_COUNT as usize);
    assert!(names.contains(&"problem.hdim_q".to_string()));
    assert!(
        status_string(QOLA_MHA_STATUS_INVALID + QOLA_MHA_FIELD_HDIM_Q)
            .contains("1 .. QOLA_MHA_MAX_HEAD_DIM")
    );
    assert_eq!(
        status_string(QOLA_MHA_STATUS_UNSUPPORTED + QOLA_MHA_FIELD_DTYPE),
        "problem.dtype: not supported by this backend"
    );
    assert!(status_string(HIP_ERROR_INVALID_VALUE).starts_with("a HIP error"));
    assert_eq!(status_string(-4), "not a qola_mha status");
    assert_eq!(
        status_string(QOLA_MHA_STATUS_INVALID + QOLA_MHA_FIELD_COUNT),
        "not a qola_mha status"
    );
}

/// `hipErrorInvalidValue`.
const HIP_ERROR_INVALID_VALUE: c_int = 1;

#[test]
fn valid_arguments_without_a_gpu_return_a_hip_error_not_a_crash() {
    if gpus() > 0 {
        eprintln!("a GPU is present: the no-GPU path cannot be exercised here");
        return;
    }
    for seed in 1..=20 {
        let laid = Case::random(seed).lay_out();
        // SAFETY: valid in shape; no device exists to dereference the fake pointers.
        let status = unsafe { qola_mha_fwd(&laid.fwd, std::ptr::null_mut()) };
        assert!(
            status > 0 && status < QOLA_MHA_STATUS_INVALID,
            "case {seed}: {status}"
        );
        // SAFETY: as above.
        let status = unsafe { qola_mha_bwd(&laid.bwd, std::ptr::null_mut()) };
        assert!(
            status > 0 && status < QOLA_MHA_STATUS_INVALID,
            "case {seed}: {status}"
        );
    }
}

#[test]
fn the_backward_workspace_is_one_float_per_query_row() {
    let laid = Case::plain("plain").lay_out();
    let mut bytes = 0usize;
    // SAFETY: reads the struct only.
    assert_eq!(
        unsafe { qola_mha_bwd_workspace_size(&laid.bwd, &mut bytes) },
        0
    );
    assert_eq!(bytes, 2 * 2 * 5 * 4);
    let mut broken = laid.bwd;
    broken.problem.hdim_q = 0;
    // SAFETY: as above.
    let status = unsafe { qola_mha_bwd_workspace_size(&broken, &mut bytes) };
    assert_eq!(status, QOLA_MHA_STATUS_INVALID + QOLA_MHA_FIELD_HDIM_Q);
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
            "qola_mha_bwd_check",
            "qola_mha_bwd_workspace_size",
            "qola_mha_fwd",
            "qola_mha_fwd_check",
            "qola_mha_status_string"
        ],
        "{text}"
    );
}
