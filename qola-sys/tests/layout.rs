//! Every `#[repr(C)]` struct has the size and field offsets the C compiler gives the header.

use std::mem::{offset_of, size_of};
use std::process::Command;

use qola_sys::{qola_mha_bwd_args, qola_mha_fwd_args, qola_mha_shape, qola_tensor_strides};

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
    fields!(qola_mha_shape: dtype, batch, nhead, seqlen_q, seqlen_k, head_dim, causal, scale);
    fields!(qola_mha_fwd_args: shape, q, q_strides, k, k_strides, v, v_strides, o, o_strides, lse);
    fields!(qola_mha_bwd_args: shape, q, q_strides, k, k_strides, v, v_strides, o, o_strides,
        dout, dout_strides, lse, dq, dq_strides, dk, dk_strides, dv, dv_strides, workspace);
    out
}

#[test]
fn rust_structs_match_the_c_header() {
    let expected = rust_side();
    let mut program = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"qola_mha.h\"\nint main(void) {\n",
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
