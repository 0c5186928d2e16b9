//! Explanations end to end, with real processes and real perf sampling (what is tested
//! is that the kernel's samples of the compared programs name their functions — nothing
//! simulated can stand in for that): `perflab run --profile-changes` on a suite whose
//! second build is slower in one function (tests/fixtures/profile_ratio.c built with
//! -DSLOW_LIGHT) samples every run, stores the regression's explanation with the
//! experiment, and the report's "Why slower" shows its rows, opened in headless Chromium;
//! `compare --explain` in both modes. Sampling is statistical: a function's ratio is its
//! samples in the slower build over those in the faster, so it is asserted as a split of
//! its samples between the two builds, within the tolerance Hoeffding's inequality gives
//! that many samples (tests/common/noise.rs, P(fail) ≤ 1e-5 each; the runs are long
//! enough for ~260 samples of light_work in the fast build), and on verdicts of a 3×
//! change, never on times.

mod common;

use assert_cmd::Command;
use perflab::store::{Query, Store};

#[test]
fn a_build_slower_in_one_function_is_explained_and_the_report_says_which() {
    let fast = common::fixture("profile_ratio");
    let slow = common::fixture_with("profile_ratio", &["-DSLOW_LIGHT"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let suite = format!(
        "[builds]\nfast = {{ command = \"{}\" }}\nslow = {{ command = \"{}\" }}\n\n\
         [[benchmark]]\nname = \"items\"\ncommand = \"{{build}} 60000000\"\n",
        fast.display(),
        slow.display()
    );
    std::fs::write(dir.path().join("perflab.toml"), suite).unwrap();
    let perflab = || {
        let mut cmd = Command::cargo_bin("perflab").unwrap();
        cmd.current_dir(dir.path()).env("PERFLAB_DB", &db);
        cmd
    };

    // Without a baseline nothing can be found slower: a usage error.
    perflab().args(["run", "--label", "slow", "--profile-changes"]).assert().code(2);

    let out = perflab()
        .args(["run", "--label", "slow", "--baseline", "fast", "--rounds", "8", "--profile-changes"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("why (from every run's samples") && stderr.contains("light_work +"), "{stderr}");

    // Stored with the experiment: the comparison's explanation, no after-the-fact profiles.
    let mut store = Store::open(Some(db.to_str().unwrap())).unwrap();
    let experiments = store.experiments(&Query::default()).unwrap();
    assert!(store.profile_changes(&Query::default(), false).unwrap().is_empty());
    let experiment = &experiments[0].experiment;
    let comparison = experiment.comparisons.iter().find(|c| c.metric == experiment.primary_metric).unwrap();
    let e = comparison.explanation.as_deref().expect("the regression's explanation is stored");
    assert_eq!(
        (e.baseline.as_str(), e.candidate.as_str(), e.method.as_str(), e.rounds),
        ("fast", "slow", "sampled", 8)
    );
    // light_work does 3× the work in the slow build, heavy_work the same.
    let light = e.functions.iter().find(|f| f.name == "light_work").expect("light_work was sampled");
    assert_eq!(light.verdict, perflab::model::Verdict::Slower, "{light:?}");
    let total = |per_run: f64| (per_run * e.rounds as f64).round() as u64;
    let split = |f: &perflab::model::FunctionChange, truth: f64, what: &str| {
        common::noise::assert_split(total(f.candidate_samples), total(f.baseline_samples), truth, what);
    };
    split(light, 0.75, "light_work's samples, slow : fast");
    let heavy = e.functions.iter().find(|f| f.name == "heavy_work").expect("heavy_work was sampled");
    split(heavy, 0.5, "heavy_work's samples, slow : fast");
    let stacks = e.stacks.as_ref().expect("the sampled stacks, to draw the differential flame graph from");
    let stacked = |name: &str| stacks.candidate.keys().any(|s| s.split(';').any(|f| f == name));
    assert!(stacked("light_work") && stacked("heavy_work"), "{:?}", stacks.candidate.keys());

    let page = dir.path().join("report.html");
    perflab().arg("report").arg("--out").arg(&page).assert().success();
    let html = std::fs::read_to_string(&page).unwrap();
    let section = &html[html.find("<section id=\"explained\">").expect("a Why slower section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("<b>items</b> · slow vs fast"), "{section:.400}");
    assert!(section.contains("Explained from every run's samples"), "the method is said");
    assert!(section.contains("slow is ") && section.contains("light_work +"), "the story: {section:.2000}");
    let light_row = &section[section.find("<td class=\"name\" title=\"light_work\"").expect("a light_work row")..];
    let light_row = &light_row[..light_row.find("</tr>").unwrap()];
    assert!(light_row.contains("<td class=\"slower\">slower</td>"), "{light_row}");
    assert!(section.contains("<svg") && section.contains("perflab-flame"));

    let Some(browser) = common::chromium() else {
        common::skip_part("the headless Chromium check", "chromium is not installed (apt-get install chromium)");
        return;
    };
    let probe = "<script>window.__errors=[];window.onerror=function(m){window.__errors.push(String(m));};\
        window.addEventListener('load',function(){var r=document.documentElement;\
        r.setAttribute('data-errors',String(window.__errors.length));\
        r.setAttribute('data-flames',String(document.querySelectorAll('#explained svg.perflab-flame').length));});</script>";
    let probed = dir.path().join("probed.html");
    std::fs::write(&probed, html.replacen("<head>", &format!("<head>{probe}"), 1)).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let dom = common::run_chromium(&browser, profile.path(), &["--dump-dom"], &probed);
    assert!(dom.status.success(), "chromium failed: {}", String::from_utf8_lossy(&dom.stderr));
    let dom = String::from_utf8_lossy(&dom.stdout);
    let root = &dom[dom.find("<html").expect("a DOM")..];
    let root = &root[..root.find('>').unwrap()];
    assert!(root.contains("data-ready=\"1\"") && root.contains("data-errors=\"0\""), "{root}");
    assert!(root.contains("data-flames=\"1\""), "{root}");

    // A screenshot of the section, kept for people to look at.
    let shot = dir.path().join("explained.png");
    let profile = tempfile::tempdir().unwrap();
    let url_page = dir.path().join("report.html#explained");
    let res = common::run_chromium(
        &browser,
        profile.path(),
        &["--window-size=1250,1500", &format!("--screenshot={}", shot.display())],
        &url_page,
    );
    assert!(res.status.success() && shot.exists(), "screenshot failed: {}", String::from_utf8_lossy(&res.stderr));
    if let Ok(keep) = std::env::var("PERFLAB_EXPLAIN_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// The explanation of one comparison's JSON: the primary metric's comparison's
/// `explanation` object.
fn explanation(json: &serde_json::Value) -> serde_json::Value {
    let primary = json["primary_metric"].as_str().unwrap();
    let comparison = json["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == primary).unwrap();
    comparison["explanation"].clone()
}

fn function<'a>(explanation: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    explanation["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no row for {name}: {explanation}"))
}

/// `compare --explain` samples the compared runs themselves and names the function that
/// got slower, with its interval and contribution, beside the unchanged one. Sampling is
/// statistical: light_work does 3× the work, heavy_work the same, each asserted as a
/// split of its samples (not heavy_work's verdict, which may be wrong in a few % of runs
/// by design).
#[test]
fn compare_explain_names_the_function_that_changed_from_the_compared_runs() {
    let fast = common::fixture("profile_ratio");
    let slow = common::fixture_with("profile_ratio", &["-DSLOW_LIGHT"]);
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("explained.svg");
    let out = Command::cargo_bin("perflab")
        .unwrap()
        .args(["compare", "--explain", "--explain-frequency", "997", "--rounds", "8", "--json", "-"])
        .args(["-n", "fast", "-n", "slow", "--explain-flamegraph"])
        .arg(&svg)
        .arg(format!("{} 30000000", fast.display()))
        .arg(format!("{} 30000000", slow.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("light_work +") && stderr.contains("adds"), "the story on the terminal: {stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = explanation(&json);
    assert_eq!((e["method"].as_str(), e["rounds"].as_u64()), (Some("sampled"), Some(8)), "{e}");
    let light = function(&e, "light_work");
    assert_eq!(light["verdict"], "slower", "{light}");
    let rounds = e["rounds"].as_f64().unwrap();
    let split = |f: &serde_json::Value, truth: f64, what: &str| {
        let total = |key: &str| (f[key].as_f64().unwrap() * rounds).round() as u64;
        common::noise::assert_split(total("candidate_samples"), total("baseline_samples"), truth, what);
    };
    split(light, 0.75, "light_work's samples, slow : fast");
    let ratio = light["ratio"].as_f64().unwrap();
    assert!(light["ci_low"].as_f64().unwrap() <= ratio && ratio <= light["ci_high"].as_f64().unwrap());
    assert!(light["contribution"]["estimate"].as_f64().unwrap() > 0.0, "{light}");
    let heavy = function(&e, "heavy_work");
    split(heavy, 0.5, "heavy_work's samples, slow : fast");
    // The flame graph colours only what changed for real: light_work red, the rest grey.
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("light_work +") && svg.contains("grey: no real change"), "{}", &svg[..svg.len().min(2000)]);
    // The rows add up to the total.
    let sum: f64 =
        e["functions"].as_array().unwrap().iter().map(|f| f["contribution"]["estimate"].as_f64().unwrap()).sum();
    let total = e["total"]["contribution"]["estimate"].as_f64().unwrap();
    assert!((sum - total).abs() < 1e-6 * total.abs().max(1.0), "{sum} vs {total}");
}

/// `--mode instructions --explain`: cachegrind's per-function counts of one run each give
/// exact ratios: light_work runs 3× the instructions, heavy_work exactly the same.
#[test]
fn instruction_mode_explains_with_exact_per_function_counts() {
    if !common::have_valgrind() {
        return;
    }
    let fast = common::fixture("profile_ratio");
    let slow = common::fixture_with("profile_ratio", &["-DSLOW_LIGHT"]);
    let out = Command::cargo_bin("perflab")
        .unwrap()
        .args(["compare", "--mode", "instructions", "--explain", "--json", "-", "-n", "fast", "-n", "slow"])
        .arg(format!("{} 200000", fast.display()))
        .arg(format!("{} 200000", slow.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let e = explanation(&serde_json::from_slice(&out.stdout).unwrap());
    assert_eq!(e["method"], "exact", "{e}");
    let light = function(&e, "light_work");
    let ratio = light["ratio"].as_f64().unwrap();
    assert!((ratio - 3.0).abs() < 0.01, "{light}");
    assert_eq!((light["ci_low"].as_f64(), light["verdict"].as_str()), (Some(ratio), Some("slower")));
    let heavy = function(&e, "heavy_work");
    assert_eq!((heavy["ratio"].as_f64(), heavy["verdict"].as_str()), (Some(1.0), Some("equivalent")), "{heavy}");
    assert!(stderr.contains("light_work +200 %"), "{stderr}");
}
