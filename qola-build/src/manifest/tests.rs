use super::*;

fn parse(text: &str) -> Result<Manifest, ManifestError> {
    Manifest::from_str_at(text, Path::new("qola.toml"))
}

fn problems(text: &str) -> Vec<Problem> {
    match parse(text) {
        Err(ManifestError::Invalid { problems, .. }) => problems,
        other => panic!("expected manifest problems, got {other:?}"),
    }
}

#[test]
fn full_manifest_reads_every_table() {
    let m = parse(
        "[qola]\naiter_commit = \"abc\"\nnamespace = \"te\"\npatches_dir = \"p\"\nrocm_versions = [\"6\"]\n[build]\narchitectures = \"gfx942;gfx950\"\nmode = \"cpp_itfs\"\n[[modules]]\nname = \"libmha_fwd\"\nreceipt = 600\nhsa_subdirs = [\"fmha_v3_fwd\"]\nflags_extra_hip = [\"'-DFOO=1'\"]\n[[modules]]\nname = \"libmha_bwd\"\n[[mha_fwd_variants]]\ndtype = [\"bf16\"]\nhas_lse = true\n[[mha_bwd_variants]]\ndeterministic = [false, true]\n",
    )
    .unwrap();
    assert_eq!(m.qola.aiter_commit.as_deref(), Some("abc"));
    assert_eq!(m.qola.rocm_versions, vec!["6"]);
    assert_eq!(m.build.architectures, vec!["gfx942", "gfx950"]);
    assert_eq!(m.build.mode, Some(BuildMode::CppItfs));
    assert_eq!(m.modules[0].receipt, Some(600));
    assert_eq!(m.modules[0].line, 9);
    assert_eq!(
        m.modules[0].recipe["flags_extra_hip"],
        serde_json::json!(["'-DFOO=1'"])
    );
    assert_eq!(m.mha_fwd_variants[0].dtypes, vec!["bf16"]);
    assert_eq!(m.mha_fwd_variants[0].flags["has_lse"], vec![true]);
    assert_eq!(
        m.mha_bwd_variants[0].flags["deterministic"],
        vec![false, true]
    );
}

#[test]
fn absent_hsa_subdirs_differ_from_an_empty_list() {
    let m =
        parse("[[modules]]\nname = \"a\"\n[[modules]]\nname = \"b\"\nhsa_subdirs = []\n").unwrap();
    assert_eq!(m.modules[0].hsa_subdirs, None);
    assert_eq!(m.modules[1].hsa_subdirs, Some(vec![]));
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let e = parse("[qola]\naiter_commit = \"abc\"\n\n[build]\narchs = []\n").unwrap_err();
    let ManifestError::Invalid { problems, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].line, 5);
    assert_eq!(problems[0].key, "[build] archs");
    assert!(e.to_string().contains("qola.toml:5: [build] archs"), "{e}");
}

#[test]
fn wrong_type_names_the_key() {
    let p = problems("[[modules]]\nname = \"m\"\nreceipt = \"600\"\n");
    assert_eq!((p[0].line, p[0].key.as_str()), (3, "[[modules]] receipt"));
}

#[test]
fn every_mistake_of_a_manifest_is_reported_at_once() {
    let p = problems(
        "[qola]\nnamespace = \"te-1\"\ncommit = \"x\"\n[build]\nmode = \"release\"\n[[modules]]\nreceipt = 1\n[[modules]]\nname = \"libmha_fwd\"\nsrcs = 3\n[[mha_fwd_variants]]\ndtype = \"fp64\"\nhas_lse = \"yes\"\n[[mha_bwd_variants]]\nhas_sink = true\n",
    );
    let got: Vec<(usize, &str)> = p.iter().map(|p| (p.line, p.key.as_str())).collect();
    assert_eq!(
        got,
        vec![
            (2, "[qola] namespace"),
            (3, "[qola] commit"),
            (5, "[build] mode"),
            (6, "[[modules]] name"),
            (10, "[[modules]] srcs"),
            (12, "[[mha_fwd_variants]] dtype"),
            (13, "[[mha_fwd_variants]] has_lse"),
            (14, "[[mha_bwd_variants]]"),
            (15, "[[mha_bwd_variants]] has_sink"),
        ]
    );
}

#[test]
fn md_name_is_a_python_string_as_qola_evaluates_it_and_a_bare_name_is_an_error() {
    let m = parse(
        "[[modules]]\nname = \"module_gemm_a4w4_asm\"\nmd_name = \"'libgemm_a4w4_asm'\"\n[[modules]]\nname = \"y\"\nmd_name = 'f\"liby\"'\n",
    )
    .unwrap();
    assert_eq!(m.modules[0].md_name(), "libgemm_a4w4_asm");
    assert_eq!(m.modules[1].md_name(), "liby");
    let p = problems("[[modules]]\nname = \"x\"\nmd_name = \"libx\"\n");
    assert_eq!((p[0].line, p[0].key.as_str()), (3, "[[modules]] md_name"));
    assert!(
        p[0].message.contains("md_name = \"'libx'\""),
        "{}",
        p[0].message
    );
    for not_one in ["'a' + 'b'", "f'{AITER_ROOT_DIR}'", "'a'b'"] {
        let text = format!("[[modules]]\nname = \"x\"\nmd_name = \"{not_one}\"\n");
        assert_eq!(problems(&text).len(), 1, "{not_one}");
    }
}

#[test]
fn two_modules_building_one_library_are_an_error() {
    let p = problems(
        "[[modules]]\nname = \"libmha_fwd\"\n[[modules]]\nname = \"x\"\nmd_name = \"'libmha_fwd'\"\n",
    );
    assert_eq!((p[0].line, p[0].key.as_str()), (3, "[[modules]] md_name"));
    assert!(p[0].message.contains("line 1"), "{}", p[0].message);
}

#[test]
fn a_syntax_error_names_its_line() {
    let p = problems("[qola]\naiter_commit = \n");
    assert_eq!((p[0].line, p[0].key.as_str()), (2, "syntax"));
}

#[test]
fn qolas_older_mha_variants_are_forward_variants() {
    let m = parse(
        "[[modules]]\nname = \"libmha_fwd\"\n[[mha_variants]]\ndtype = \"fp16\"\nhas_dropout = false\n",
    )
    .unwrap();
    assert_eq!(m.mha_fwd_variants.len(), 1);
    assert_eq!(m.mha_fwd_variants[0].dtypes, vec!["fp16"]);
    let p =
        problems("[[modules]]\nname = \"libmha_fwd\"\n[[mha_variants]]\ndeterministic = true\n");
    assert_eq!(p[0].key, "[[mha_variants]] deterministic");
}

/// The shape of QoLA's example manifest for TransformerEngine: every key it uses loads with
/// QoLA's meaning.
#[test]
fn a_manifest_shaped_like_qolas_te_example_loads() {
    let m = parse(
        "[qola]\naiter_commit = \"d32b0cb62\"\nnamespace = \"te\"\nrocm_versions = [\"7\"]\n\n[build]\narchitectures = [\"gfx950\"]\n\n[[modules]]\nname = \"libmha_fwd\"\nmode = \"cpp_itfs\"\nreceipt = 700\ndrop_srcs = [\"mha_fwd_split.cu\", \"mha_fwd_batch_prefill.cu\"]\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n\n[[modules]]\nname = \"libmha_bwd\"\nmode = \"cpp_itfs\"\nreceipt = 700\n\n[[mha_fwd_variants]]\ndtype = [\"bf16\", \"fp16\"]\nhas_lse = true\nhas_skip = false\nhas_sink = false\n\n[[mha_bwd_variants]]\ndtype = [\"bf16\", \"fp16\"]\n",
    )
    .unwrap();
    assert_eq!(m.namespace(), Some("te"));
    assert_eq!(m.qola.rocm_versions, vec!["7"]);
    assert_eq!(m.qola.patches_dir, None, "qola's own series");
    assert_eq!(m.build.architectures, vec!["gfx950"]);
    assert_eq!(m.build.mode, None);
    let fwd = &m.modules[0];
    assert_eq!(fwd.mode, Some(BuildMode::CppItfs));
    assert_eq!(
        fwd.drop_srcs,
        ["mha_fwd_split.cu", "mha_fwd_batch_prefill.cu"]
    );
    assert_eq!(fwd.hsa_subdirs, None, "qola's defaults for the module");
    assert_eq!(fwd.md_name(), "libmha_fwd");
    assert_eq!(m.modules[1].receipt, Some(700));
    let filters = m.variant_filters().unwrap();
    assert!(filters.fwd.unwrap().contains("_lse_"));
    assert_eq!(filters.bwd.unwrap().split('@').count(), 3);
}

/// QoLA's boolean keys: the values qola builds are accepted (as TOML booleans or QoLA's Python
/// `True`/`False`), the others refused with the key, the value and the way on.
#[test]
fn booleans_qola_cannot_honour_are_refused_naming_the_value() {
    let m = parse(
        "[[modules]]\nname = \"m\"\nis_python_module = false\ntorch_exclude = \"True\"\nis_standalone = false\nhipify = false\nverbose = true\n",
    )
    .unwrap();
    assert_eq!(
        m.modules[0].recipe["torch_exclude"],
        serde_json::json!(true)
    );
    assert_eq!(m.modules[0].recipe["verbose"], serde_json::json!(true));
    assert_eq!(m.modules[0].lines["verbose"], 7);
    let p = problems(
        "[[modules]]\nname = \"m\"\nis_python_module = true\ntorch_exclude = false\nis_standalone = \"True\"\nhipify = true\nflags_extra_hip_per_source = { \"*.device.cu\" = 1 }\n",
    );
    let got: Vec<(usize, &str)> = p.iter().map(|p| (p.line, p.key.as_str())).collect();
    assert_eq!(
        got,
        [
            (3, "[[modules]] is_python_module"),
            (4, "[[modules]] torch_exclude"),
            (5, "[[modules]] is_standalone"),
            (6, "[[modules]] hipify"),
            (7, "[[modules]] flags_extra_hip_per_source *.device.cu"),
        ]
    );
    assert!(p[0].message.starts_with("true: ") && p[0].message.contains("pybind"));
    assert!(p[2].message.starts_with("\"True\": ") && p[2].message.contains("executable"));
    let m = parse(
        "[[modules]]\nname = \"m\"\nflags_extra_hip_per_source = { \"*.device.cu\" = [\"-D__HIPCC_RTC__\"] }\n",
    )
    .unwrap();
    assert_eq!(
        m.modules[0].recipe["flags_extra_hip_per_source"],
        serde_json::json!({ "*.device.cu": ["-D__HIPCC_RTC__"] })
    );
}

/// Variants narrow the `libmha_*` entry of their direction; a receipt of their own is QoLA's
/// for pybind modules, refused unless it is the module's.
#[test]
fn a_variants_receipt_must_be_its_modules() {
    let p = problems(
        "[[modules]]\nname = \"libmha_fwd\"\nreceipt = 700\n[[mha_fwd_variants]]\ndtype = \"bf16\"\nreceipt = 600\n",
    );
    assert_eq!(
        (p[0].line, p[0].key.as_str()),
        (4, "[[mha_fwd_variants]] receipt")
    );
    assert!(p[0].message.contains("receipt = 700"), "{}", p[0].message);
    parse(
        "[[modules]]\nname = \"libmha_fwd\"\nreceipt = 700\n[[mha_fwd_variants]]\nreceipt = 700\n",
    )
    .unwrap();
}
