//! `perflab run --profile-changes` end to end: a suite whose second build is slower in one
//! function (tests/fixtures/profile_ratio.c built with -DSLOW_LIGHT) is measured, both builds are profiled, and the
//! stored diff, flame graph and profiles name that function; the report shows them and
//! opens in headless Chromium. Sampling is statistical: the assertions are on shares of
//! the change, with wide margins, never on times.

mod common;

use assert_cmd::Command;
use perflab::profile::format::Profile;
use perflab::store::{Query, Store};

#[test]
fn a_build_slower_in_one_function_is_profiled_and_the_report_says_which() {
    let fast = common::fixture("profile_ratio");
    let slow = common::fixture_with("profile_ratio", &["-DSLOW_LIGHT"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let suite = format!(
        "[builds]\nfast = {{ command = \"{}\" }}\nslow = {{ command = \"{}\" }}\n\n\
         [[benchmark]]\nname = \"items\"\ncommand = \"{{build}} 30000000\"\n",
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
        .args(["run", "--label", "slow", "--baseline", "fast", "--rounds", "6", "--profile-changes"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("slower than `fast`: profiling both"), "{stderr}");

    let mut store = Store::open(Some(db.to_str().unwrap())).unwrap();
    let experiments = store.experiments(&Query::default()).unwrap();
    let changes = store.profile_changes(&Query::default(), true).unwrap();
    assert_eq!(changes.len(), 1, "one benchmark, found slower once");
    let (id, change) = &changes[0];
    assert_eq!(*id, experiments[0].id);
    assert_eq!((change.baseline.as_str(), change.candidate.as_str()), ("fast", "slow"));
    // light_work does 3× the work in the slow build, heavy_work the same: the whole
    // change is light_work's.
    let top = &change.functions[0];
    assert_eq!(top.name, "light_work", "{:?}", &change.functions[..3.min(change.functions.len())]);
    assert!(top.change_s > 0.0 && top.contribution > 0.7, "{top:?}");
    let heavy = change.functions.iter().find(|f| f.name == "heavy_work").expect("heavy_work was sampled");
    assert!(heavy.contribution.abs() < 0.25, "{heavy:?}");
    // The stored files are profiles again, with call stacks.
    for bytes in [&change.baseline_profile, &change.candidate_profile] {
        let profile = Profile::parse(bytes).expect("a stored profile parses");
        assert!(profile.total_samples() > 100 && !profile.stacks.is_empty(), "{} samples", profile.total_samples());
    }
    let flame = change.flame_graph.as_deref().expect("a differential flame graph");
    assert!(flame.contains("light_work") && flame.contains("heavy_work"));
    // The two programs have different file names; their frames still merge.
    assert_eq!(flame.matches("data-n=\"light_work\"").count(), 1, "one light_work frame for both builds");

    let page = dir.path().join("report.html");
    perflab().arg("report").arg("--out").arg(&page).assert().success();
    let html = std::fs::read_to_string(&page).unwrap();
    let section = &html[html.find("<section id=\"explained\">").expect("a Why slower section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("<b>items</b> · slow vs fast"), "{section:.400}");
    let first_row = &section[section.find("<tbody><tr>").unwrap()..];
    assert!(first_row[..first_row.find("</tr>").unwrap()].contains("light_work"));
    assert!(section.contains("<svg") && section.contains("perflab-flame"));

    let Some(browser) = common::chromium() else {
        eprintln!("SKIPPED: chromium is not installed (CI would fail here)");
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
