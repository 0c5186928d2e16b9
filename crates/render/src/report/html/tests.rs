//! Tests of the parent module (kept apart so that it stays readable).

use super::super::tests::row;
use super::super::{Control, CounterRow};
use super::*;
use perflab_model::Machine;
use perflab_store::history::Shift;

fn sample(names: &[&str]) -> ReportData {
    let labels: Vec<String> = ["v1", "v2", "v3"].iter().map(|s| s.to_string()).collect();
    let rows: Vec<RelativeTime> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let r = 0.9 + 0.1 * i as f64;
            let verdict = if r < 0.97 {
                Verdict::Faster
            } else if r > 1.03 {
                Verdict::Slower
            } else {
                Verdict::Equivalent
            };
            row(n, r, r * 0.97, r * 1.03, verdict)
        })
        .collect();
    let page = MachinePage {
        description: "box (EPYC, 2 cores, Linux 6.1) [abc]".into(),
        reference: "v1".into(),
        labels: labels.clone(),
        comparisons: vec![LabelComparison {
            label: "v3".into(),
            rows,
            controls: vec![
                Control {
                    benchmark: "nap".into(),
                    change: Ok(Ratio {
                        method: CiMethod::Sessions,
                        verdict: Verdict::Inconclusive,
                        ..row("nap", 1.003, 0.964, 1.043, Verdict::Inconclusive).change
                    }),
                },
                Control { benchmark: "idle".into(), change: Err("measured once: nothing to compare".into()) },
            ],
        }],
        histories: names
            .iter()
            .map(|n| BenchmarkHistory {
                name: n.to_string(),
                points: labels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| Point {
                        label: l.clone(),
                        n: 10,
                        median: 0.01 * (1.0 + i as f64 * 0.1),
                        median_ci: Some((0.0099, 0.0102 + i as f64 * 0.001)),
                        incomplete: false,
                        sessions: 1,
                        busy_share: None,
                        vs_previous: None,
                    })
                    .collect(),
                change_points: vec![Shift {
                    label: "v3".into(),
                    index: 2,
                    before: 0.0105,
                    after: 0.012,
                    ratio: 1.14,
                    ratio_ci: (1.1, 1.18),
                    p_value: 0.001,
                }],
            })
            .collect(),
        counters: CounterTable {
            reference: "v1".into(),
            rows: names
                .iter()
                .enumerate()
                .map(|(i, n)| CounterRow {
                    benchmark: n.to_string(),
                    metric: "instructions".into(),
                    label: Some("v3".into()),
                    reference_value: Some(1e9),
                    value: Some(1.1e9),
                    change: if i == 0 {
                        Err("no interval: not measured in one session with v1, and v1 has no session of its own".into())
                    } else {
                        Ok(Ratio { metric: "instructions".into(), ..row(n, 1.1, 1.09, 1.11, Verdict::Slower).change })
                    },
                })
                .collect(),
        },
        explained: Vec::new(),
        machines: vec![MachineGroup {
            labels: labels.clone(),
            machine: Machine {
                hostname: "box\"1".into(),
                cpu_model: "EPYC".into(),
                cores: 2,
                kernel: "6.1".into(),
                governor: None,
                pmu: false,
                virtualization: Some("kvm".into()),
                ..Machine::default()
            },
            perflab_version: "0.1.0".into(),
            environment: [("GLIBC_TUNABLES".to_string(), "<none>".to_string())].into(),
        }],
    };
    ReportData {
        title: "suite <b>".into(),
        generated_at: "2026-11-22T03:00:00Z".into(),
        metric: "wall_s".into(),
        matrices: vec![],
        pages: vec![page],
        notes: vec!["note & caveat".into()],
    }
}

#[test]
fn every_user_string_is_escaped() {
    let evil = "<script>alert(1)</script>";
    let mut data = sample(&[evil, "x\" onmouseover=\"alert(2)"]);
    let page = &mut data.pages[0];
    page.labels.push(evil.into());
    page.reference = evil.into();
    page.description = evil.into();
    page.comparisons[0].label = evil.into();
    page.machines[0].environment.insert(evil.into(), evil.into());
    let html = render_html(&data);
    assert!(!html.contains("<script>alert"), "raw script tag in output");
    assert!(!html.contains("\" onmouseover="), "attribute injection");
    // askama escapes with numeric character references.
    assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"));
    assert!(html.contains("suite &#60;b&#62;") && html.contains("box&#34;1") && html.contains("note &#38; caveat"));
    // Exactly one script element: the page's own.
    assert_eq!(html.matches("<script").count(), 1);
}

#[test]
fn one_bar_and_error_bar_per_benchmark_plus_the_geomean() {
    let html = render_html(&sample(&["a", "b", "c", "d"]));
    let forest = &html[html.find("<svg class=\"forest\"").unwrap()..];
    let forest = &forest[..forest.find("</svg>").unwrap()];
    assert_eq!(forest.matches("class=\"bar\"").count(), 4);
    assert_eq!(forest.matches("class=\"errbar\"").count(), 4);
    assert_eq!(html.matches("class=\"diamond\"").count(), 1);
    assert_eq!(html.matches("<figure class=\"h\"").count(), 4);
    assert_eq!(html.matches("class=\"cp up\"").count(), 4);
}

#[test]
fn rows_are_sorted_slowest_first_and_coloured_by_verdict() {
    let html = render_html(&sample(&["fast", "same", "slow"]));
    let pos = |name: &str| html.find(&format!("data-name=\"{name}\"")).unwrap();
    assert!(pos("slow") < pos("same") && pos("same") < pos("fast"));
    assert!(html.contains("<g class=\"r slower\" data-name=\"slow\""));
    assert!(html.contains("<g class=\"r faster\" data-name=\"fast\""));
    assert!(html.contains("<g class=\"r equivalent\" data-name=\"same\""));
}

#[test]
fn error_bar_spans_the_ci_on_the_log_axis() {
    let data = sample(&["only"]);
    let html = render_html(&data);
    let r = &data.pages[0].comparisons[0].rows[0].change;
    let scale = LogScale::covering(
        data.pages[0].comparisons[0]
            .rows
            .iter()
            .flat_map(|r| [r.change.ci_low, r.change.ci_high, r.change.ratio])
            .chain(geomean(&data.pages[0].comparisons[0].rows).iter().flat_map(|g| [g.ci_low, g.ci_high])),
        PLOT_LEFT,
        PLOT_RIGHT,
    );
    let expected = format!("M{} 11H{}", num(scale.px(r.ci_low)), num(scale.px(r.ci_high)));
    assert!(html.contains(&expected), "{expected} not in forest");
    assert!(scale.px(r.ci_low) < scale.px(r.ratio) && scale.px(r.ratio) < scale.px(r.ci_high));
}

#[test]
fn large_suites_get_compact_scrolling_rows() {
    let names: Vec<String> = (0..200).map(|i| format!("bench-{i:03}")).collect();
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let html = render_html(&sample(&refs));
    assert!(html.contains("<div class=\"scroll\"><svg class=\"forest\""));
    assert!(html.contains("data-row-height=\"15\""));
    assert_eq!(html.matches("<svg class=\"overview\"").count(), 1);
}

#[test]
fn empty_report_still_renders_every_section() {
    let data = ReportData {
        title: "empty".into(),
        generated_at: String::new(),
        metric: "wall_s".into(),
        matrices: vec![],
        pages: vec![MachinePage {
            description: String::new(),
            reference: "base".into(),
            labels: vec![],
            comparisons: vec![],
            histories: vec![],
            counters: CounterTable::default(),
            machines: vec![],
            explained: Vec::new(),
        }],
        notes: vec![],
    };
    let html = render_html(&data);
    for id in ["relative", "history", "counters", "machine"] {
        assert!(html.contains(&format!("<section id=\"{id}\">")));
    }
    assert!(html.contains("No other label to compare"));
}

#[test]
fn several_machines_get_a_matrix_and_a_part_each_with_their_own_section_ids() {
    let mut data = sample(&["a", "b"]);
    let mut second = data.pages[0].clone();
    second.description = "other box".into();
    data.pages.push(second);
    let columns = ["sandy", "haswell"].map(|name| perflab_store::history::matrix::MachineColumn {
        fingerprint: format!("{name}-fp"),
        name: name.into(),
        description: format!("{name} description"),
        machine: Machine::default(),
    });
    let cell = |r: f64, v: Verdict| Some(row("x", r, r * 0.98, r * 1.02, v).change);
    data.matrices.push(Matrix {
        metric: "wall_s".into(),
        reference: "gcc48".into(),
        label: "gcc54".into(),
        machines: columns.to_vec(),
        rows: vec![perflab_store::history::matrix::MatrixRow {
            benchmark: "vm_insns".into(),
            cells: vec![cell(1.059, Verdict::Slower), None],
        }],
    });
    let html = render_html(&data);
    assert!(html.contains("<section id=\"matrix\">") && html.contains("gcc54 vs gcc48"));
    assert!(html.contains("<td class=\"slower\" data-v=\"1.059\"") && html.contains("<td data-v=\"NaN\">—</td>"));
    assert!(html.contains("<h2 class=\"part\" id=\"part-2\">Machine 2: other box</h2>"));
    for id in ["relative", "history", "counters", "machine"] {
        assert!(html.contains(&format!("<section id=\"{id}\">")) && html.contains(&format!("<section id=\"{id}-2\">")));
    }
    assert_eq!(html.matches("<table class=\"sortable").count(), 3, "the matrix and each machine's counters");
}

#[test]
fn independent_intervals_say_so_in_the_tooltip() {
    let mut data = sample(&["a"]);
    data.pages[0].comparisons[0].rows[0].change.method = CiMethod::Independent;
    assert!(render_html(&data).contains("independent runs"));
}

/// Issue #28, row 5: a 0.1 % change was drawn as a full-height rise. The chart's axis
/// spans at least the noise of two sessions, so it stays a small step; a real change
/// still spans the chart.
#[test]
fn a_change_inside_the_noise_is_no_jump_on_the_history_chart() {
    let rise = |levels: [f64; 2]| {
        let mut data = sample(&["hot"]);
        let page = &mut data.pages[0];
        page.labels.truncate(2);
        page.histories[0].change_points.clear();
        page.histories[0].points.truncate(2);
        for (p, level) in page.histories[0].points.iter_mut().zip(levels) {
            p.median = level;
            p.median_ci = Some((level * 0.9995, level * 1.0005));
        }
        let page = &data.pages[0];
        let index: HashMap<&str, usize> = page.labels.iter().enumerate().map(|(i, l)| (l.as_str(), i)).collect();
        let chart = history_chart(&page.histories[0], page, &index, "wall_s");
        let ys: Vec<f64> = chart
            .line
            .split(['M', 'L'])
            .filter(|p| !p.is_empty())
            .map(|p| p.split(' ').nth(1).unwrap().parse().unwrap())
            .collect();
        (ys[0] - ys[1]) / (HIST_HEIGHT - HIST_BOTTOM - HIST_TOP)
    };
    let small = rise([0.02711, 0.02714]);
    assert!(small > 0.0 && small < 0.05, "a 0.1 % change rises {:.0} % of the height", small * 100.0);
    let real = rise([0.02711, 0.0336]);
    assert!(real > 0.8, "a 24 % change rises {:.0} % of the height", real * 100.0);
}

/// The page's body as a reviewed snapshot: the markup every section draws for a
/// small report (the style sheet and script are files of their own).
#[test]
fn the_page_body_matches_its_snapshot() {
    let html = render_html(&sample(&["parse", "render <fast>", "load"]));
    let body = &html[html.find("<header>").unwrap()..html.find("<script>").unwrap()];
    insta::assert_snapshot!(body);
}

#[test]
fn a_machine_matrix_and_explained_functions_match_their_snapshot() {
    let mut data = sample(&["a"]);
    let mut second = data.pages[0].clone();
    second.description = "other box".into();
    data.pages.push(second);
    let columns = ["sandy", "haswell"].map(|name| perflab_store::history::matrix::MachineColumn {
        fingerprint: format!("{name}-fp"),
        name: name.into(),
        description: format!("{name} description"),
        machine: Machine::default(),
    });
    data.matrices.push(Matrix {
        metric: "wall_s".into(),
        reference: "v1".into(),
        label: "v3".into(),
        machines: columns.to_vec(),
        rows: vec![perflab_store::history::matrix::MatrixRow {
            benchmark: "a".into(),
            cells: vec![Some(row("a", 1.059, 1.04, 1.08, Verdict::Slower).change), None],
        }],
    });
    let html = render_html(&data);
    let matrix = &html[html.find("<section id=\"matrix\">").unwrap()..html.find("<h2 class=\"part\"").unwrap()];
    insta::assert_snapshot!(matrix);
}

/// "Why slower" for both methods: a regression explained from every run's samples
/// (rows with intervals, coloured verdicts, contributions, the story) and one from an
/// older store's single profile of each build.
#[test]
fn why_slower_shows_each_method_and_matches_its_snapshot() {
    let mut data = sample(&["a", "b"]);
    let comparison = |candidate: &str| perflab_model::Comparison::example_slower("A", candidate);
    let mut explanation = perflab_engine::fixtures::example_explanation();
    explanation.baseline = "A".into();
    explanation.candidate = "B".into();
    // A picture stored by an older perflab is shown as it was stored.
    explanation.stored_flame_graph = Some("<svg class=\"perflab-flame\"></svg>".into());
    let row: perflab_profile::diff::Change = serde_json::from_value(serde_json::json!({
        "name": "f_up<int>", "object": "[command]", "old_samples": 100, "new_samples": 130,
        "old_share": 0.1, "new_share": 0.13, "share_change": 0.03,
        "old_s": 0.1, "new_s": 0.13, "change_s": 0.03, "contribution": 0.9
    }))
    .unwrap();
    let change = perflab_store::ProfileChange {
        metric: "wall_s".into(),
        baseline: "A".into(),
        candidate: "C".into(),
        functions: vec![row],
        flame_graph: None,
        warnings: vec!["only 150 samples of `A` (one run at 1999 Hz): its shares are rough".into()],
        baseline_profile: Vec::new(),
        candidate_profile: Vec::new(),
    };
    data.pages[0].explained = vec![
        Explained {
            benchmark: "a".into(),
            label: "v2".into(),
            comparison: comparison("B"),
            why: Why::Sampled(Box::new(explanation)),
        },
        Explained {
            benchmark: "b".into(),
            label: "v2".into(),
            comparison: comparison("C"),
            why: Why::OneProfile(Box::new(change)),
        },
    ];
    let html = render_html(&data);
    let section = &html[html.find("<section id=\"explained\">").unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("<td class=\"slower\">slower</td>") && section.contains("B is 2.5 % [2.1, 2.9] slower"));
    assert!(section.contains("f_up&#60;int&#62;") && !section.contains("f_up<int>"), "names are escaped");
    assert!(section.contains("Explained from one profile of each build"));
    insta::assert_snapshot!(section);
}
