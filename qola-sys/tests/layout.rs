//! Every `#[repr(C)]` struct has the size and field offsets the C compiler gives the header.

use std::mem::{offset_of, size_of};
use std::process::Command;

use qola_sys::gemm::*;
use qola_sys::*;

/// `(name, rust value)` for every size and offset checked.
fn rust_side() -> Vec<(String, usize)> {
    let mut out = Vec::new();
    macro_rules! fields {
        ($ty:ident: $($f:ident),*) => {
            out.push((format!("sizeof {}", stringify!($ty)), size_of::<$ty>()));
            $(out.push((format!("{}.{}", stringify!($ty), stringify!($f)), offset_of!($ty, $f)));)*
        };
    }
    fields!(qola_tensor_strides: batch, seq, head);
    fields!(qola_matrix_strides: batch, head, row);
    fields!(qola_mha_seqlens: seqstart_q, seqstart_k, seqlen_q, seqlen_k, cu_seqlen_q, cu_seqlen_k);
    fields!(qola_mha_dropout: p_drop, seed_offset_on_device, seed, offset, seed_ptr, offset_ptr);
    fields!(qola_mha_problem: dtype, mode, batch, nhead_q, nhead_k, seqlen_q, seqlen_k,
        max_seqlen_q, max_seqlen_k, hdim_q, hdim_v, mask_type, window_left, window_right,
        bias_type, scale, logits_soft_cap, seqlens, dropout);
    fields!(qola_mha_fwd_args: size, problem, q, q_strides, k, k_strides, v, v_strides, bias,
        bias_strides, alibi_slopes, alibi_slopes_batch_stride, o, o_strides, lse, lse_strides,
        randval, randval_strides);
    fields!(qola_mha_bwd_args: size, problem, deterministic, q, q_strides, k, k_strides, v,
        v_strides, bias, bias_strides, alibi_slopes, alibi_slopes_batch_stride, o, o_strides,
        dout, dout_strides, lse, lse_strides, dq, dq_strides, dk, dk_strides, dv, dv_strides,
        dbias, dbias_strides, workspace);
    fields!(qola_gemm_matrix: data, rows, cols, row_stride, dtype);
    fields!(qola_gemm_a4w4_args: size, a, b, a_scale, b_scale, out, bias, alpha, beta,
        b_preshuffled, log2_k_split, kernel_name, device);
    out
}

#[test]
fn rust_structs_match_the_c_header() {
    let expected = rust_side();
    let mut program = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"qola_mha.h\"\n#include \"qola_gemm.h\"\nint main(void) {\n",
    );
    for (name, _) in &expected {
        let expr = match name.strip_prefix("sizeof ") {
            Some(ty) => format!("sizeof({ty})"),
            None => {
                let (ty, field) = name.split_once('.').unwrap();
                format!("offsetof({ty}, {field})")
            }
        };
        program.push_str(&format!("    printf(\"{name} %zu\\n\", (size_t){expr});\n"));
    }
    program.push_str("    return 0;\n}\n");
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("layout.c");
    std::fs::write(&source, program).unwrap();
    let exe = tmp.path().join("layout");
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/include");
    let status = Command::new("cc")
        .arg("-I")
        .arg(include)
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("a C compiler (cc)");
    assert!(status.success());
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let c_side: Vec<(String, usize)> = text
        .lines()
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').unwrap();
            (name.to_string(), value.parse().unwrap())
        })
        .collect();
    assert_eq!(c_side, expected);
}

/// The status fields' constants are the headers' lists (`QOLA_MHA_FIELDS`, `QOLA_GEMM_FIELDS`),
/// name for name.
#[test]
fn rust_field_constants_match_the_c_headers() {
    for (header, prefix, rust, count) in [
        (
            "qola_mha.h",
            "pub const QOLA_MHA_FIELD_",
            include_str!("../src/lib.rs"),
            QOLA_MHA_FIELD_COUNT as usize,
        ),
        (
            "qola_gemm.h",
            "pub const QOLA_GEMM_FIELD_",
            include_str!("../src/gemm.rs"),
            12,
        ),
    ] {
        let header = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("kernels/include")
                .join(header),
        )
        .unwrap();
        let in_header: Vec<(String, i32)> = header
            .lines()
            .filter_map(|l| l.trim().strip_prefix("X("))
            .map(|l| {
                let mut parts = l.splitn(3, ", ");
                let name = parts.next().unwrap().to_string();
                (name, parts.next().unwrap().parse().unwrap())
            })
            .collect();
        let in_rust: Vec<(String, i32)> = rust
            .lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .filter(|l| !l.starts_with("COUNT"))
            .map(|l| {
                let (name, value) = l.split_once(": i32 = ").unwrap();
                (
                    name.to_string(),
                    value.trim_end_matches(';').parse().unwrap(),
                )
            })
            .collect();
        assert_eq!(in_rust, in_header, "{header}");
        assert_eq!(count, in_header.len(), "{header}");
    }
}
