//! Fuzzing what perflab reads from users: import files (hyperfine, perflab result, run
//! and export JSON), suite files, and the report built from whatever was imported. Every
//! input must give a result or a one-line usage error — never a panic, never a hang.
//!
//! Inputs start from real documents and are mutated structurally (a node replaced by an
//! extreme number, a control-character string, null, a deep array; keys dropped), since
//! random bytes rarely get past a JSON or TOML parser. Each target runs a fixed number of
//! cases by default (CI); `PERFLAB_FUZZ_SECONDS=600 cargo test --release --test
//! input_fuzz -- --test-threads 1 --nocapture` runs each for that long and prints how
//! many cases it tried (`scripts/fuzz`).

use perflab::executor::simulated::{Noise, Simulated};
use perflab::experiment::{run_experiment, Quiet};
use perflab::measure::MeasureOptions;
use perflab::model::{metric, CommandSpec, Settings};
use perflab::plan::{Compared, Plan};
use perflab::report::{load, render_html};
use perflab::store::exchange::{read_import, ImportOptions};
use perflab::store::{Meta, Store};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Inputs a target accepted (the rest were refused with a usage error): a fuzzer whose
/// every input is refused at the first check tests nothing beyond it.
static ACCEPTED: [AtomicUsize; 4] =
    [AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)];
const IMPORT: usize = 0;
const SUITE: usize = 1;
const REPORT: usize = 2;
const OUTPUT: usize = 3;

/// Run `exercise` on values of `strategy`: `PERFLAB_FUZZ_SECONDS` long, else `cases` times.
fn fuzz<S: Strategy>(name: &str, target: usize, cases: usize, strategy: S, exercise: impl Fn(&S::Value))
where
    S::Value: std::fmt::Debug,
{
    let budget = std::env::var("PERFLAB_FUZZ_SECONDS").ok().and_then(|s| s.parse::<f64>().ok());
    let deadline = budget.map(|s| Instant::now() + Duration::from_secs_f64(s));
    let mut runner = if budget.is_some() { TestRunner::default() } else { TestRunner::deterministic() };
    let started = Instant::now();
    let mut done = 0usize;
    while deadline.map_or(done < cases, |d| Instant::now() < d) {
        let value = strategy.new_tree(&mut runner).expect("strategy generates").current();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| exercise(&value)));
        assert!(outcome.is_ok(), "{name}: panicked on input {value:?}");
        done += 1;
    }
    let accepted = ACCEPTED[target].load(Ordering::Relaxed);
    eprintln!("{name}: {done} cases in {:.1} s, {accepted} accepted, no panic", started.elapsed().as_secs_f64());
    assert!(accepted > 0, "{name}: every input was refused; the fuzzer never got past the first check");
}

/// Commands named as they are run.
fn commands(texts: &[&str]) -> Vec<CommandSpec> {
    texts
        .iter()
        .map(|c| CommandSpec {
            name: c.to_string(),
            argv: vec![c.to_string()],
            command_line: c.to_string(),
            ..Default::default()
        })
        .collect()
}

/// A realistic `compare --json` result, made by the engine on a simulated machine.
fn perflab_result() -> Value {
    let plan = Plan::new(
        commands(&["./old", "./new"]),
        Settings { seed: 1, fixed_rounds: Some(8), ..Settings::default() },
        MeasureOptions::default(),
        Compared::fixed(vec![metric::WALL.into(), metric::CPU.into()]),
    );
    let mut machine = Simulated::new(1, vec![0.02, 0.021], Noise::gaussian(0.01));
    serde_json::to_value(run_experiment(&plan, &mut machine, &mut Quiet).unwrap()).unwrap()
}

fn templates() -> Vec<Value> {
    let hyperfine: Value =
        serde_json::from_str(include_str!("fixtures/hyperfine-1.15.json")).expect("the hyperfine fixture is JSON");
    let result = perflab_result();
    let run = serde_json::json!([{ "benchmark": "b", "label": "v1", "experiment": result.clone() }]);
    let export = serde_json::json!({ "format": "perflab-export", "format_version": 1, "experiments": [{
        "label": "v1", "benchmark": "b", "git_commit": null, "source": "run", "recorded_at": "",
        "machine_fingerprint": "abc", "complete": true, "experiment": result.clone() }] });
    vec![hyperfine, result, run, export]
}

/// Values that break naive code: extremes, negatives, wrong types, hostile text.
fn nasty_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(serde_json::json!(1.79e308)),
        Just(serde_json::json!(-1.79e308)),
        Just(serde_json::json!(5e-324)),
        Just(serde_json::json!(0)),
        Just(serde_json::json!(-1)),
        Just(serde_json::json!(i64::MAX)),
        Just(serde_json::json!(u64::MAX)),
        Just(serde_json::json!(i64::MIN)),
        Just(serde_json::json!("\u{1b}[31m<script>alert(1)</script>\n\"&")),
        Just(serde_json::json!("")),
        Just(serde_json::json!([])),
        Just(serde_json::json!({})),
        Just(serde_json::json!(true)),
        any::<f64>().prop_filter("JSON numbers are finite", |v| v.is_finite()).prop_map(|v| serde_json::json!(v)),
        any::<i64>().prop_map(|v| serde_json::json!(v)),
        "[a-z0-9 ._-]{0,12}".prop_map(Value::String),
    ]
}

/// One mutation: which node (by a walk index), and what happens to it.
#[derive(Debug, Clone)]
enum Mutation {
    Replace(u32, Value),
    Remove(u32),
    Duplicate(u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<u32>(), nasty_value()).prop_map(|(at, v)| Mutation::Replace(at, v)),
        any::<u32>().prop_map(Mutation::Remove),
        any::<u32>().prop_map(Mutation::Duplicate),
    ]
}

/// Count the nodes of `v` (pre-order).
fn node_count(v: &Value) -> u32 {
    1 + match v {
        Value::Array(a) => a.iter().map(node_count).sum(),
        Value::Object(o) => o.values().map(node_count).sum(),
        _ => 0,
    }
}

/// Apply `m` to the node at pre-order position `target` (its parent holds it).
fn apply(v: &mut Value, target: &mut i64, m: &Mutation) -> bool {
    let children: Vec<String> = match v {
        Value::Object(o) => o.keys().cloned().collect(),
        Value::Array(a) => (0..a.len()).map(|i| i.to_string()).collect(),
        _ => return false,
    };
    for key in children {
        *target -= 1;
        if *target == 0 {
            match (v, m) {
                (Value::Object(o), Mutation::Replace(_, new)) => {
                    o.insert(key, new.clone());
                }
                (Value::Object(o), Mutation::Remove(_)) => {
                    o.remove(&key);
                }
                (Value::Array(a), Mutation::Replace(_, new)) => a[key.parse::<usize>().unwrap()] = new.clone(),
                (Value::Array(a), Mutation::Remove(_)) => {
                    a.remove(key.parse::<usize>().unwrap());
                }
                (Value::Array(a), Mutation::Duplicate(_)) => {
                    let i = key.parse::<usize>().unwrap();
                    let copy = a[i].clone();
                    a.insert(i, copy);
                }
                (Value::Object(_), Mutation::Duplicate(_)) => {}
                _ => unreachable!("parents are objects or arrays"),
            }
            return true;
        }
        let child = match v {
            Value::Object(o) => o.get_mut(&key).unwrap(),
            Value::Array(a) => &mut a[key.parse::<usize>().unwrap()],
            _ => unreachable!(),
        };
        if apply(child, target, m) {
            return true;
        }
    }
    false
}

fn mutated(template: &Value, mutations: &[Mutation]) -> Value {
    let mut doc = template.clone();
    for m in mutations {
        let at = match m {
            Mutation::Replace(at, _) | Mutation::Remove(at) | Mutation::Duplicate(at) => *at,
        };
        let mut target = 1 + (at % node_count(&doc).max(1)) as i64;
        apply(&mut doc, &mut target, m);
    }
    doc
}

/// Import `doc`; when it is accepted, store it and build the history and the report from it.
fn import_store_report(doc: &Value) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    std::fs::write(&file, serde_json::to_vec(doc).unwrap()).unwrap();
    let options = ImportOptions { file: file.to_str().unwrap().into(), label: Some("v2".into()), ..Default::default() };
    let Ok(records) = read_import(&options) else { return };
    ACCEPTED[IMPORT].fetch_add(1, Ordering::Relaxed);
    let db = dir.path().join("h.db");
    let mut store = Store::open(Some(db.to_str().unwrap())).unwrap();
    for r in &records {
        let meta =
            Meta { label: r.label.clone(), benchmark: r.benchmark.clone(), git_commit: None, source: "fuzz".into() };
        store.save(&meta, &r.experiment).expect("an accepted import can be stored");
    }
    let stored = store.experiments(&Default::default()).unwrap();
    let _ = perflab::render::history::render(
        &perflab::history::build(&stored, metric::WALL, perflab::history::Steps::Compare),
        true,
        Some(40),
    );
    for reference in [None, Some("v2".to_string()), Some("nope".to_string())] {
        let options = load::Selection {
            title: "fuzz".into(),
            reference,
            labels: vec![],
            metric: metric::WALL.into(),
            metric_asked: false,
            machine: None,
            metric_note: None,
            left_out: None,
        };
        if let Ok(data) = load::build(&stored, &options) {
            let html = render_html(&data);
            assert!(html.trim_end().ends_with("</html>"), "the page is complete");
            assert!(!html.contains("<script>alert(1)"), "names are escaped");
        }
    }
}

#[test]
fn imports_never_panic_and_what_they_accept_stores_and_reports() {
    let templates = templates();
    let strategy = (0..templates.len(), proptest::collection::vec(mutation(), 1..6));
    fuzz("import", IMPORT, 150, strategy, |(which, mutations)| {
        import_store_report(&mutated(&templates[*which], mutations))
    });
}

/// Suite text from lines a suite can have, with values that stress the checks.
fn suite_text() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just("\"true\"".to_string()),
        Just("\"sh -c 'exit 0' {build} {n}\"".to_string()),
        Just("\"{unclosed\"".to_string()),
        Just("1e30".to_string()),
        Just("-3".to_string()),
        Just("0".to_string()),
        Just("9223372036854775807".to_string()),
        Just("\"1e30s\"".to_string()),
        Just("\"250ms\"".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("[1, 2, 3]".to_string()),
        Just("[]".to_string()),
        Just("[\"a\", 2.5, true]".to_string()),
        Just("{ n = [1, 2] }".to_string()),
        Just("true".to_string()),
        Just("\"\\u001b[2J\"".to_string()),
        "\"[a-z {}]{0,10}\"".prop_map(|s| s),
    ];
    let key = prop_oneof![
        Just("name"),
        Just("command"),
        Just("params"),
        Just("setup"),
        Just("cleanup"),
        Just("rounds"),
        Just("warmup"),
        Just("min_rounds"),
        Just("max_rounds"),
        Just("max_time"),
        Just("timeout"),
        Just("threshold"),
        Just("events"),
        Just("mode"),
        Just("shell"),
        Just("old"),
        Just("new"),
        Just("path"),
        Just("prepare"),
        Just("bogus"),
    ];
    let line = prop_oneof![
        3 => (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => prop_oneof![
            Just("[[benchmark]]".to_string()),
            Just("[defaults]".to_string()),
            Just("[builds]".to_string()),
            Just("[builds.fast]".to_string()),
            Just("[[benchmark".to_string()),
            Just("".to_string()),
        ],
    ];
    // A valid suite, with lines inserted or replaced: most inputs get past the TOML
    // parser and reach the checks behind it.
    let base = [
        "[defaults]",
        "warmup = 1",
        "[builds]",
        "old = \"a\"",
        "new = \"b\"",
        "[[benchmark]]",
        "name = \"x\"",
        "command = \"true {build} {n}\"",
        "params = { n = [1, 2] }",
        "[[benchmark]]",
        "name = \"y\"",
        "command = \"true\"",
    ];
    let edit = (any::<u8>(), any::<bool>(), line);
    proptest::collection::vec(edit, 0..6).prop_map(move |edits| {
        let mut lines: Vec<String> = base.iter().map(|l| l.to_string()).collect();
        for (at, replace, line) in edits {
            let at = at as usize % (lines.len() + 1);
            if replace && at < lines.len() {
                lines[at] = line;
            } else {
                lines.insert(at, line);
            }
        }
        lines.join("\n")
    })
}

#[test]
fn suite_files_never_panic() {
    fuzz("suite", SUITE, 400, suite_text(), |text| {
        let Ok(suite) = perflab::suite::parse(text, std::path::Path::new("fuzz/perflab.toml")) else { return };
        ACCEPTED[SUITE].fetch_add(1, Ordering::Relaxed);
        let run = perflab::suite::runner::RunOptions::default();
        let builds: Vec<Option<&perflab::suite::Build>> =
            std::iter::once(None).chain(suite.builds.iter().map(Some)).collect();
        for bench in &suite.benchmarks {
            for build in &builds {
                let _ = bench.command_for(*build);
                let _ = perflab::suite::runner::plan_for(bench, *build, None, &run);
            }
        }
    });
}

/// Stored experiments of a small history: hostile names, labels in any order, several
/// machines, commands from a nanosecond to an hour, failed and incomplete experiments.
fn history() -> impl Strategy<Value = Vec<perflab::store::StoredExperiment>> {
    let name = prop_oneof![
        Just("parse".to_string()),
        Just("<script>alert(1)</script>".to_string()),
        Just("a\u{1b}[31m\"&'".to_string()),
        Just("".to_string()),
        "[a-zA-Z0-9 ]{1,20}",
    ];
    let experiment = (
        name,
        0usize..4,
        0usize..2,
        prop_oneof![Just(1e-9), Just(3600.0), 1e-6..10.0f64],
        0.5..2.0f64,
        0.0..0.3f64,
        any::<u64>(),
        any::<bool>(),
    );
    proptest::collection::vec(experiment, 0..12).prop_map(|items| {
        items
            .into_iter()
            .map(|(bench, label, host, seconds, ratio, sigma, seed, complete)| {
                let plan = Plan::new(
                    commands(&["base", "cand"]),
                    Settings { seed, fixed_rounds: Some(6), ..Settings::default() },
                    MeasureOptions::default(),
                    Compared::fixed(vec![metric::WALL.into()]),
                );
                let mut machine = Simulated::new(seed, vec![seconds, seconds * ratio], Noise::gaussian(sigma));
                let mut experiment = run_experiment(&plan, &mut machine, &mut Quiet).unwrap();
                experiment.machine.hostname = format!("host{host}");
                perflab::store::StoredExperiment {
                    id: 0,
                    label: format!("v{label}"),
                    label_order: label as i64,
                    benchmark: bench,
                    git_commit: None,
                    source: "fuzz".into(),
                    recorded_at: String::new(),
                    machine_fingerprint: experiment.machine.fingerprint(),
                    complete,
                    sample: None,
                    profile_change: None,
                    experiment,
                }
            })
            .collect()
    })
}

#[test]
fn reports_render_any_history() {
    let strategy = (history(), proptest::option::of(0usize..5), any::<bool>());
    fuzz("report", REPORT, 60, strategy, |(experiments, reference, one_machine)| {
        let mut experiments = experiments.clone();
        experiments.sort_by_key(|e| e.label_order);
        let options = load::Selection {
            title: "<b>fuzz</b>".into(),
            reference: reference.map(|r| format!("v{r}")),
            labels: vec![],
            metric: metric::WALL.into(),
            metric_asked: false,
            machine: one_machine.then(|| "host0".to_string()),
            metric_note: None,
            left_out: None,
        };
        if let Ok(data) = load::build(&experiments, &options) {
            ACCEPTED[REPORT].fetch_add(1, Ordering::Relaxed);
            let html = render_html(&data);
            assert!(html.trim_end().ends_with("</html>"), "the page is complete");
            assert!(!html.contains("<script>alert(1)") && !html.contains("<b>fuzz</b>"), "text is escaped");
        }
    });
}

/// What a benchmarked command prints: pgbench-, JSON-lines- and regex-like lines mixed
/// with hostile ones (huge numbers, NaN, broken JSON, control characters, no newline).
fn output_lines() -> impl Strategy<Value = Vec<(bool, String)>> {
    let line = prop_oneof![
        Just("tps = 1234.5 (without initial connection time)".to_string()),
        Just("latency average = 0.81 ms".to_string()),
        "tps = [-+0-9.eE]{0,12}.*",
        "latency average = [-+0-9.eE naNinf]{0,10} ms",
        "\\{\"metric\": \"[a-z_]{0,6}\", \"value\": [-0-9.eE]{0,8}\\}",
        "\\{.{0,40}",
        "v=[-+0-9.eE]{0,10}",
        ".{0,60}",
        "[\\x00-\\x1f]{0,8}",
    ];
    proptest::collection::vec((any::<bool>(), line), 0..40)
}

#[test]
fn command_output_parsers_never_panic() {
    use perflab::measure::output::{google_benchmark_from, Parser, RunParse, Stream};
    let parsers =
        [Parser::format("pgbench").unwrap(), Parser::format("jsonl").unwrap(), Parser::regex("v=(?<v>\\S+)").unwrap()];
    fuzz("output", OUTPUT, 400, output_lines(), |lines| {
        let mut run = RunParse::new(&parsers);
        for (stderr, line) in lines {
            run.line(if *stderr { Stream::Stderr } else { Stream::Stdout }, line);
        }
        if run.finish().is_ok() {
            ACCEPTED[OUTPUT].fetch_add(1, Ordering::Relaxed);
        }
        let text: String = lines.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>().join("\n");
        let _ = google_benchmark_from(text.as_bytes());
    });
}
