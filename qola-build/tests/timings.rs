//! The timings report (`HipBuild::timings`, `--timings`, `QOLA_TIMINGS=1`) of real builds of
//! qola-sys's built-in kernels with Debian's hipcc, read the way a person reads it: rendered by
//! headless Chromium (Debian's package), whose DOM after the page's script ran is checked for
//! what is on screen (the units' bars, the legend with its counts, the summary's figures), and
//! the Chrome trace beside it.

mod common;

use std::path::Path;

use qola_build::{CompileReport, HipBuild};
use qola_tests::BuiltinKernels;

/// The build of the built-in kernels `kernels` into `out` with `cache`, timings on.
fn builder(kernels: &BuiltinKernels, cache: &Path, out: &Path) -> HipBuild {
    let mut build = HipBuild::new();
    build
        .files(&kernels.sources)
        .include(&kernels.include)
        .flag("-std=c++17")
        .arch("gfx90a")
        .jobs(2)
        .cache_dir(cache)
        .out_dir(out)
        .timings(true)
        .cargo_metadata(false);
    build
}

/// The built-in kernels `kernels` built into `out` with `cache`, timings on.
fn build(kernels: &BuiltinKernels, cache: &Path, out: &Path) -> CompileReport {
    builder(kernels, cache, out)
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The `<rect ...>` tags of `dom` that carry the attribute `attribute` (`name="value"`).
fn rects<'a>(dom: &'a str, attribute: &str) -> Vec<&'a str> {
    dom.split("<rect ")
        .skip(1)
        .map(|tag| tag.split('>').next().unwrap_or_default())
        .filter(|tag| tag.contains(attribute))
        .collect()
}

#[test]
fn the_report_of_a_real_build_shows_its_units_legend_and_summary_in_a_real_browser() {
    if !qola_tests::hipcc_available() {
        return;
    }
    let Some(chromium) = qola_tests::tool("chromium", "chromium") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let kernels = BuiltinKernels::of_qola_sys().copy_to(&tmp.path().join("kernels"));
    let cache = tmp.path().join("cache");
    // The plan names the jobs the build then runs (the trace's names: `<source>: <job>`).
    let cold_out = tmp.path().join("cold");
    let planned = common::planned_jobs(&builder(&kernels, &cache, &cold_out), "qola_mha");
    // One architecture, no include prefix two units share: one call each.
    assert_eq!(planned.len(), 11, "{planned:?}");
    let cold = build(&kernels, &cache, &cold_out);
    assert_eq!(cold.compiled(), 11);
    assert_eq!(
        common::traced_jobs(&cold_out, "qola_mha"),
        planned,
        "the trace's jobs are the plan's"
    );
    // Two sources change: two units compile, nine come from qola's cache.
    for name in ["fwd_bf16.hip", "bwd_dq_fp16.hip"] {
        let path = kernels.dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\n// changed\n")).unwrap();
    }
    // One unit says what it holds besides itself (as a batch of instances does): no key
    // changes, and the report lists the names under it.
    let out = tmp.path().join("warm");
    let report = builder(&kernels, &cache, &out)
        .file_holds(
            kernels.dir.join("fwd_bf16.hip"),
            &["instance_a.cpp".to_string(), "instance_b.cpp".to_string()],
        )
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.compiled(), 2);
    let page = out.join("qola-timings-qola_mha.html");
    let log = std::fs::read_to_string(&report.log).unwrap();
    let trace_file = out.join("qola-timings-qola_mha.json");
    assert!(
        log.contains(&format!("timings: {}", page.display()))
            && log.contains(&trace_file.display().to_string()),
        "the log says where the report and its trace are: {log}"
    );

    let dom = qola_tests::rendered_dom(&chromium, &page, &tmp.path().join("profile"));
    assert!(
        dom.contains("data-rendered=\"yes\""),
        "the page's script ran to its end: {dom}"
    );
    // The summary line, as the build said it, and its figures.
    let summary = report
        .summary()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    assert!(dom.contains(&summary), "{summary} in {dom}");
    // The figures count what the legend counts, in its words.
    for (figure, value) in [
        ("compiled", report.compiled().to_string()),
        (
            "qola-cache",
            (report.units.len() - report.compiled()).to_string(),
        ),
        ("jobs", report.jobs.to_string()),
    ] {
        assert!(
            dom.contains(&format!("data-figure=\"{figure}\"><dt>"))
                && dom.contains(&format!("<dd>{value}</dd>")),
            "figure {figure} = {value}: {dom}"
        );
    }
    // The legend, with how many units ended each way.
    assert!(dom.contains("compiled: 2"), "{dom}");
    assert!(dom.contains("from qola's cache: 9"), "{dom}");
    assert!(dom.contains("failed: 0"), "{dom}");
    assert!(
        dom.contains("units compiled</dt>") && dom.contains("units from qola's cache</dt>"),
        "{dom}"
    );
    assert!(
        dom.contains("outlined: a job on the critical path"),
        "every mark is in the legend: {dom}"
    );
    assert!(
        dom.contains(
            "<div class=\"holds\">instance_a.cpp</div><div class=\"holds\">instance_b.cpp</div>"
        ),
        "the unit's instances under its name: {dom}"
    );
    // The slowest units say how each ended in words, never a style's name.
    assert!(
        !dom.contains("<td>qola-cache</td>") && !dom.contains("<td>remote-cache</td>"),
        "{dom}"
    );
    // The time axis reaches the build's end: its last tick is at or after it.
    let ticks: Vec<f64> = dom
        .split("<text x=\"")
        .filter_map(|t| t.split_once("\" y=\"11\">").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split(" s</text>").next()?.parse().ok())
        .collect();
    let wall = report.elapsed.as_secs_f64();
    assert!(
        ticks.last().is_some_and(|t| *t >= wall - 0.05),
        "the axis ({ticks:?}) covers the build's {wall:.1} s"
    );
    // Each unit on the time axis: the compiled ones' jobs on slots, the reused on their lane.
    assert_eq!(rects(&dom, "data-ended=\"compiled\"").len(), 2, "{dom}");
    assert_eq!(rects(&dom, "data-ended=\"qola-cache\"").len(), 9, "{dom}");
    assert!(rects(&dom, "data-unit=").len() == 11, "{dom}");
    // The slowest units' table lists the compiled ones with their reasons.
    assert!(
        dom.contains("fwd_bf16.hip") && dom.contains("new content"),
        "{dom}"
    );

    // What a person sees: a screenshot of the page.
    let png = tmp.path().join("timings.png");
    qola_tests::screenshot(
        &chromium,
        &page,
        &tmp.path().join("profile"),
        &png,
        (1200, 1400),
    );
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000);

    // The Chrome trace beside it: a complete event per job, on its slot.
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace_file).unwrap()).unwrap();
    // Perfetto's JSON importer takes a counter's values as numbers only (a null is an error).
    for event in trace["traceEvents"].as_array().unwrap() {
        if event["ph"] == "C" {
            let args = event["args"].as_object().unwrap();
            assert!(args.values().all(|v| v.is_number()), "{event}");
        }
    }
    assert_eq!(
        common::traced_jobs(&out, "qola_mha"),
        ["bwd_dq_fp16.hip: one call", "fwd_bf16.hip: one call"],
        "two units changed, each alone with its include prefix: one call each"
    );
}

#[test]
fn a_build_that_compiles_nothing_writes_no_report() {
    if !qola_tests::hipcc_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let kernels = BuiltinKernels::of_qola_sys();
    let cache = tmp.path().join("cache");
    let out = tmp.path().join("out");
    build(&kernels, &cache, &out);
    let page = out.join("qola-timings-qola_mha.html");
    let written = std::fs::metadata(&page).unwrap().modified().unwrap();
    // A no-op build writes nothing in the output directory, the report included.
    assert_eq!(build(&kernels, &cache, &out).compiled(), 0);
    assert_eq!(
        std::fs::metadata(&page).unwrap().modified().unwrap(),
        written
    );
}
