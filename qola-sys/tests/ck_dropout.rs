//! Dropout agrees with composable_kernel: CK's own host computation of the random bytes
//! (`ck_tile::reference_batched_dropout_randval`, with CK's Philox), compiled from the real AITER
//! tree's CK with the sid toolchain, gives the bytes the float64 reference (and so the built-in
//! kernels, checked against it) uses for every element. Needs the AITER wheel and the sid
//! toolchain (required in CI).

use std::process::Command;

use qola_sys::reference::Dropout;

#[test]
fn the_references_dropout_bytes_are_cks() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let program = tmp.path().join("dropout_randval");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ck/dropout_randval.cpp");
    qola_tests::run_ok(
        Command::new(&hipcc)
            .args(["-std=c++20", "-x", "hip", "--offload-arch=gfx942", "-I"])
            .arg(real.ck.join("include"))
            .arg(source)
            .arg("-o")
            .arg(&program),
    );
    let cases = [
        (3, 70, 45, 2, 0x0123_4567_89ab_cdef_u64, 77_u64),
        (1, 33, 100, 0, 0, 0),
        (4, 5, 7, 9, u64::MAX, 1 << 40),
    ];
    for (nhead, lq, lk, b, seed, offset) in cases {
        let args = [nhead, lq, lk, b].map(|n: usize| n.to_string());
        let out = qola_tests::sid_root_command(&hipcc, &program, &[tmp.path()])
            .args(&args)
            .arg(seed.to_string())
            .arg(offset.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout.len(), nhead * lq * lk);
        let d = Dropout {
            p_drop: 0.5,
            seed,
            offset,
        };
        let mut differing = 0;
        for h in 0..nhead {
            for i in 0..lq {
                for j in 0..lk {
                    if out.stdout[(h * lq + i) * lk + j] != d.byte(nhead, b, h, i, j) {
                        differing += 1;
                    }
                }
            }
        }
        assert_eq!(
            differing, 0,
            "nhead {nhead}, {lq}x{lk}, sequence {b}, seed {seed}, offset {offset}"
        );
    }
}
