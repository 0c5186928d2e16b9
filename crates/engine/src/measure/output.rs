//! Metrics a command reports about itself, read from what it printed: a regular
//! expression with named captures, a JSON-lines protocol, pgbench's report and Google
//! Benchmark's JSON. Every value found is one sample (an iteration); a run's value is
//! their aggregate ([`perflab_model::Iterations`]).
//!
//! A run's output is parsed as it arrives ([`RunParse`], fed by `executor::capture`),
//! line by line — a regular expression is matched against each line — and only the
//! samples are kept: a command printing gigabytes costs perflab no more memory than one
//! printing a line. Google Benchmark's JSON is read as a stream
//! ([`google_benchmark_from`]), keeping only the fields perflab reports. Samples keep
//! the order of the streams: stdout's first, then stderr's.

pub use super::error::{Malformed, NameError, ParseError, ParserError};
use perflab_model::{metric, CounterReading, Iterations, Printed, Run};
use regex::Regex;
use serde_json::Value;
use std::io::Read;
use std::sync::OnceLock;

/// One way of finding metrics in a command's output.
#[derive(Debug, Clone)]
pub enum Parser {
    /// Every match gives one sample of each named capture (`tps = (?<tps>[0-9.]+)`).
    Regex(Regex),
    /// The JSON-lines protocol: `{"metric": "NAME", "value": NUMBER}`, one sample a line.
    JsonLines,
    /// pgbench's report: `tps` and `latency_ms`, per interval from `-P` progress lines.
    Pgbench,
    /// Google Benchmark's `--benchmark_format=json`: `NAME:real_ns`, `NAME:cpu_ns`
    /// (and `NAME:items_per_s`, `NAME:bytes_per_s`), one sample per repetition.
    GoogleBenchmark,
}

impl PartialEq for Parser {
    fn eq(&self, other: &Parser) -> bool {
        self.describe() == other.describe()
    }
}

/// The ready-made formats, as `--parse` spells them.
pub const FORMAT_NAMES: [&str; 3] = ["pgbench", "google-benchmark", "jsonl"];

/// pgbench's metrics, in display order (the first is the primary one).
const PGBENCH_METRICS: [&str; 2] = ["tps", "latency_ms"];

impl Parser {
    /// A `--parse` format by name.
    pub fn format(name: &str) -> Result<Parser, ParserError> {
        match name {
            "pgbench" => Ok(Parser::Pgbench),
            "google-benchmark" | "gbench" => Ok(Parser::GoogleBenchmark),
            "jsonl" | "json-lines" => Ok(Parser::JsonLines),
            other => Err(ParserError::UnknownFormat { name: other.to_string(), expected: FORMAT_NAMES.join(", ") }),
        }
    }

    /// A `--output-metric` expression: a regular expression whose named captures are
    /// the metrics.
    pub fn regex(text: &str) -> Result<Parser, ParserError> {
        let regex = regex::RegexBuilder::new(text)
            .multi_line(true)
            .build()
            .map_err(|e| ParserError::BadRegex { text: text.to_string(), why: perflab_sys::text::regex_error(&e) })?;
        let names: Vec<&str> = regex.capture_names().flatten().collect();
        if names.is_empty() {
            return Err(ParserError::NoNamedCapture(text.to_string()));
        }
        if names.iter().all(|n| is_index(n)) {
            return Err(ParserError::OnlyIndex { text: text.to_string(), names: names.join("`, `") });
        }
        for name in names {
            check_name(name)?;
        }
        Ok(Parser::Regex(regex))
    }

    /// How the parser was asked for (recorded in the settings).
    pub fn describe(&self) -> String {
        match self {
            Parser::Regex(r) => format!("regex:{}", r.as_str()),
            Parser::JsonLines => "jsonl".into(),
            Parser::Pgbench => "pgbench".into(),
            Parser::GoogleBenchmark => "google-benchmark".into(),
        }
    }

    /// The metrics this parser reports whatever the output, in display order; `None`
    /// when the names come from the output itself.
    pub fn known_names(&self) -> Option<Vec<String>> {
        match self {
            Parser::Regex(r) => Some(r.capture_names().flatten().filter(|n| !is_index(n)).map(String::from).collect()),
            Parser::Pgbench => Some(PGBENCH_METRICS.map(String::from).to_vec()),
            Parser::JsonLines | Parser::GoogleBenchmark => None,
        }
    }

    /// What the output lacked when `name` has no value.
    fn expectation(&self, name: &str) -> String {
        match self {
            Parser::Regex(r) => format!("no line matched `{}`", r.as_str()),
            Parser::Pgbench if name == "tps" => {
                "no `tps = …` line (pgbench's report) and no `progress: … tps` lines".into()
            }
            Parser::Pgbench => "no `latency average = … ms` line (pgbench's report) and no `progress:` lines".into(),
            Parser::JsonLines => format!("no line `{{\"metric\": \"{name}\", \"value\": …}}`"),
            Parser::GoogleBenchmark => format!("no benchmark `{}` in the JSON", name.split(':').next().unwrap_or(name)),
        }
    }

    /// The samples in the whole texts `stdout` and `stderr`, as [`RunParse`] finds them.
    #[cfg(test)]
    fn samples(&self, stdout: &str, stderr: &str, out: &mut Samples) -> Result<(), ParseError> {
        *out = parse_texts(std::slice::from_ref(self), stdout, stderr)?.pop().unwrap_or_default();
        Ok(())
    }
}

/// Which of a command's output streams a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// One run's output, parsed as it arrives: the samples each parser found so far, per
/// stream, and the first error (a malformed metric line): nothing else is kept.
pub struct RunParse<'p> {
    parsers: &'p [Parser],
    /// Per parser.
    stdout: Vec<Samples>,
    stderr: Vec<Samples>,
    error: Option<ParseError>,
}

fn pgbench_progress() -> &'static Regex {
    static PROGRESS: OnceLock<Regex> = OnceLock::new();
    PROGRESS.get_or_init(|| Regex::new(r"^progress: [0-9.]+ s, ([0-9.]+) tps, lat ([0-9.]+) ms").expect("valid regex"))
}

fn pgbench_report() -> &'static (Regex, Regex) {
    static REPORT: OnceLock<(Regex, Regex)> = OnceLock::new();
    REPORT.get_or_init(|| {
        (
            Regex::new(r"^tps = ([0-9.]+) \((without initial connection time|excluding connections establishing)\)")
                .expect("valid regex"),
            Regex::new(r"^latency average = ([0-9.]+) ms").expect("valid regex"),
        )
    })
}

impl<'p> RunParse<'p> {
    /// A parse of one run's output by `parsers`, nothing read yet.
    pub fn new(parsers: &'p [Parser]) -> RunParse<'p> {
        RunParse {
            parsers,
            stdout: parsers.iter().map(|_| Samples::default()).collect(),
            stderr: parsers.iter().map(|_| Samples::default()).collect(),
            error: None,
        }
    }

    /// True when a parser reads Google Benchmark's JSON from stdout: the caller streams
    /// stdout through [`google_benchmark_from`] and hands over the result.
    pub(crate) fn wants_json(&self) -> bool {
        self.parsers.iter().any(|p| matches!(p, Parser::GoogleBenchmark))
    }

    /// One line of output (without its newline).
    pub fn line(&mut self, stream: Stream, line: &str) {
        if self.error.is_some() {
            return;
        }
        for (i, parser) in self.parsers.iter().enumerate() {
            let out = match stream {
                Stream::Stdout => &mut self.stdout[i],
                Stream::Stderr => &mut self.stderr[i],
            };
            if let Err(e) = parse_line(parser, stream, line, out) {
                self.error = Some(e);
                return;
            }
        }
    }

    /// What [`google_benchmark_from`] read from stdout, for every Google Benchmark parser.
    pub(crate) fn google_benchmark(&mut self, result: Result<Samples, ParseError>) {
        match result {
            Ok(samples) => {
                for (i, parser) in self.parsers.iter().enumerate() {
                    if matches!(parser, Parser::GoogleBenchmark) {
                        self.stdout[i] = samples.clone();
                    }
                }
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }

    /// Each parser's samples (stdout's, then stderr's), or the first error.
    pub fn finish(self) -> Result<Vec<Samples>, ParseError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(self
            .parsers
            .iter()
            .zip(self.stdout.into_iter().zip(self.stderr))
            .map(|(parser, (stdout, stderr))| match parser {
                // Progress lines (stderr), one sample per interval, beat the final report.
                Parser::Pgbench if stderr.get("tps").is_some() => stderr,
                Parser::Pgbench | Parser::GoogleBenchmark => stdout,
                Parser::Regex(_) | Parser::JsonLines => {
                    let mut all = stdout;
                    for (name, printed) in stderr.0 {
                        match all.0.iter_mut().find(|(n, _)| *n == name) {
                            Some((_, mine)) => mine.append(&printed),
                            None => all.0.push((name, printed)),
                        }
                    }
                    all
                }
            })
            .collect())
    }
}

/// The samples `parser` finds in one line of `stream`.
fn parse_line(parser: &Parser, stream: Stream, line: &str, out: &mut Samples) -> Result<(), ParseError> {
    match parser {
        Parser::Regex(regex) => {
            // Most lines do not match: the matcher without captures says so fastest.
            if !regex.is_match(line) {
                return Ok(());
            }
            for captures in regex.captures_iter(line) {
                // By group number: looking each group up by name hashed it, per line.
                for (group, name) in regex.capture_names().enumerate() {
                    let Some(name) = name else { continue };
                    if let Some(found) = captures.get(group) {
                        let value = number(found.as_str())
                            .map_err(|e| ParseError::Capture { name: name.to_string(), source: Box::new(e) })?;
                        out.push(name, value)?;
                    }
                }
            }
            Ok(())
        }
        Parser::JsonLines => json_line(line, out),
        Parser::Pgbench => pgbench_line(stream, line, out),
        Parser::GoogleBenchmark => Ok(()),
    }
}

/// Capture names that number a run's iterations rather than measure them: the value
/// `(?<iter>[0-9]+)` captures is which iteration a line is about, an index and no
/// measurement — never a metric, never the verdict's (it numbers the per-iteration
/// profile as the program printed it).
pub(crate) const INDEX_NAMES: [&str; 10] =
    ["i", "iter", "iteration", "idx", "index", "step", "rep", "repetition", "epoch", "loop"];

/// Whether a capture named `name` is an iteration's number ([`INDEX_NAMES`]).
pub(crate) fn is_index(name: &str) -> bool {
    INDEX_NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Why an index capture's reading has no value: what it is.
pub const INDEX_REASON: &str = "the iteration's number as the program printed it, not a measurement";

/// Names a command may give its metrics: not one perflab measures itself.
fn check_name(name: &str) -> Result<(), NameError> {
    if metric::kind(name) == metric::Kind::Field {
        return Err(NameError::Reserved(name.to_string()));
    }
    if name.is_empty() || name.chars().any(|c| c.is_control() || c == ',') {
        return Err(NameError::Invalid(name.to_string()));
    }
    Ok(())
}

/// A number as programs print them: `1234.5`, `1.2e3`; thousands separators (`1,234`)
/// are taken out. Never infinite or NaN.
fn number(text: &str) -> Result<f64, ParseError> {
    let trimmed = text.trim();
    // Digit separators dropped; a copy made only when there are some (one a line was a
    // tenth of reading a program that prints a value a line).
    let cleaned = if trimmed.contains([',', '_']) {
        std::borrow::Cow::Owned(trimmed.chars().filter(|c| *c != ',' && *c != '_').collect::<String>())
    } else {
        std::borrow::Cow::Borrowed(trimmed)
    };
    match cleaned.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(ParseError::NotANumber(text.to_string())),
    }
}

/// The most metric names one run may print: each is kept per run, and a program
/// printing a new name per line would otherwise grow memory with its output.
pub(crate) const MAX_METRIC_NAMES: usize = 1000;

/// Samples per metric in order of first appearance (a run's output order decides the
/// order metrics are shown in), each in bounded memory ([`Printed`]: every value counts,
/// the first [`perflab_model::SAMPLES_KEPT`] are kept).
#[derive(Debug, Default, PartialEq, Clone)]
pub struct Samples(Vec<(String, Printed)>);

impl Samples {
    fn push(&mut self, name: &str, value: f64) -> Result<(), ParseError> {
        let full = self.0.len() >= MAX_METRIC_NAMES;
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some((_, printed)) => printed.push(value),
            None if full => return Err(ParseError::TooManyNames(MAX_METRIC_NAMES)),
            None => {
                let mut printed = Printed::default();
                printed.push(value);
                self.0.push((name.to_string(), printed));
            }
        }
        Ok(())
    }

    /// The kept samples of `name`.
    pub fn get(&self, name: &str) -> Option<&[f64]> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.kept.as_slice())
    }

    /// How many values of `name` were printed (kept or not).
    pub fn count(&self, name: &str) -> u64 {
        self.0.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| v.count)
    }
}

fn json_line(line: &str, out: &mut Samples) -> Result<(), ParseError> {
    let trimmed = line.trim();
    if !trimmed.starts_with('{') {
        return Ok(());
    }
    // Other JSON a program prints is not for perflab; only objects naming a metric are.
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(trimmed) else { return Ok(()) };
    let Some(name) = object.get("metric") else { return Ok(()) };
    let malformed = |why: Malformed| ParseError::MalformedLine { why, line: truncate(trimmed) };
    let name = name.as_str().ok_or_else(|| malformed(Malformed::MetricNotAString))?;
    check_name(name).map_err(|e| malformed(e.into()))?;
    let value = object.get("value").and_then(Value::as_f64).ok_or_else(|| malformed(Malformed::ValueNotANumber))?;
    out.push(name, value)
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(120) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// One line of pgbench's report (stdout) or of its `-P` progress lines (stderr). With
/// progress lines each interval is one sample of `tps` and `latency_ms`; without, the
/// report's figures are one sample each (see [`RunParse::finish`]). pgbench ≥ 14 prints
/// `tps = N (without initial connection time)`, older versions a line `(including …)`
/// and one `(excluding …)`: the latter is taken, as the connection is not what a
/// select-only load measures.
fn pgbench_line(stream: Stream, line: &str, out: &mut Samples) -> Result<(), ParseError> {
    match stream {
        Stream::Stderr => {
            if let Some(c) = pgbench_progress().captures(line) {
                out.push("tps", number(&c[1])?)?;
                out.push("latency_ms", number(&c[2])?)?;
            }
        }
        Stream::Stdout => {
            let (tps, latency) = pgbench_report();
            // The report's first figure of each.
            if let Some(c) = tps.captures(line).filter(|_| out.get("tps").is_none()) {
                out.push("tps", number(&c[1])?)?;
            }
            if let Some(c) = latency.captures(line).filter(|_| out.get("latency_ms").is_none()) {
                out.push("latency_ms", number(&c[1])?)?;
            }
        }
    }
    Ok(())
}

/// One benchmark of Google Benchmark's JSON report: only the fields perflab reads
/// (serde skips the others, and the `context`, without keeping them).
#[derive(serde::Deserialize)]
struct GbEntry {
    name: Option<Value>,
    run_type: Option<Value>,
    time_unit: Option<Value>,
    real_time: Option<Value>,
    cpu_time: Option<Value>,
    items_per_second: Option<Value>,
    bytes_per_second: Option<Value>,
    error_occurred: Option<Value>,
    error_message: Option<Value>,
}

#[derive(serde::Deserialize)]
struct GbDocument {
    benchmarks: Option<Vec<GbEntry>>,
}

/// A reader that passes nothing before the first `{`: the JSON report follows whatever a
/// benchmark printed before it.
struct FromFirstBrace<R> {
    inner: R,
    found: bool,
}

impl<R: Read> Read for FromFirstBrace<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.inner.read(buf)?;
            if n == 0 || self.found {
                return Ok(n);
            }
            if let Some(start) = buf[..n].iter().position(|&b| b == b'{') {
                self.found = true;
                buf.copy_within(start..n, 0);
                return Ok(n - start);
            }
        }
    }
}

/// Google Benchmark's JSON report, read from `stdout` as it arrives (the first JSON
/// document after any banner): per benchmark run (aggregates skipped: perflab makes its
/// own), its times in nanoseconds and its rates. Output without JSON gives no samples.
pub fn google_benchmark_from(stdout: impl Read) -> Result<Samples, ParseError> {
    let reader = std::io::BufReader::new(FromFirstBrace { inner: stdout, found: false });
    let Some(document) = serde_json::Deserializer::from_reader(reader).into_iter::<GbDocument>().next() else {
        return Ok(Samples::default());
    };
    let document = document.map_err(ParseError::GoogleJson)?;
    let benchmarks = document.benchmarks.ok_or(ParseError::GoogleNoBenchmarks)?;
    let mut out = Samples::default();
    for b in benchmarks {
        if b.run_type.as_ref().and_then(Value::as_str) == Some("aggregate") {
            continue;
        }
        let name = b.name.as_ref().and_then(Value::as_str).ok_or(ParseError::GoogleNoName)?;
        if b.error_occurred.as_ref().and_then(Value::as_bool) == Some(true) {
            let message = b.error_message.as_ref().and_then(Value::as_str).unwrap_or("no message");
            return Err(ParseError::GoogleReported { name: name.to_string(), message: message.to_string() });
        }
        let unit = b.time_unit.as_ref().and_then(Value::as_str).unwrap_or("ns");
        let to_ns = match unit {
            "ns" => 1.0,
            "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            other => return Err(ParseError::GoogleTimeUnit { name: name.to_string(), unit: other.to_string() }),
        };
        for (field, suffix, scale) in [
            (&b.real_time, "real_ns", to_ns),
            (&b.cpu_time, "cpu_ns", to_ns),
            (&b.items_per_second, "items_per_s", 1.0),
            (&b.bytes_per_second, "bytes_per_s", 1.0),
        ] {
            if let Some(v) = field.as_ref().and_then(Value::as_f64) {
                out.push(&format!("{name}:{suffix}"), v * scale)?;
            }
        }
    }
    Ok(out)
}

/// What was expected of a command that printed no metric at all (for the formats whose
/// metric names come from the output).
pub(crate) fn expected_output(parsers: &[Parser]) -> String {
    let expected: Vec<&str> = parsers
        .iter()
        .filter_map(|p| match p {
            Parser::JsonLines => Some("lines {\"metric\": NAME, \"value\": NUMBER}"),
            Parser::GoogleBenchmark => Some("Google Benchmark's JSON on stdout (--benchmark_format=json)"),
            Parser::Regex(_) | Parser::Pgbench => None,
        })
        .collect();
    format!("expected {}", expected.join(" or "))
}

/// Record the samples `parsers` found in a run's output ([`RunParse::finish`], one
/// [`Samples`] per parser) in `run.counters`. A metric a parser always reports but the
/// output lacked is recorded as unsupported with what was expected (never a zero); so
/// is one whose samples give no value. Returns the names found, in output order.
pub(crate) fn record_metrics(
    parsers: &[Parser],
    found_samples: Vec<Samples>,
    iterations: Iterations,
    run: &mut Run,
) -> Vec<String> {
    let mut found = Vec::new();
    for (parser, samples) in parsers.iter().zip(found_samples) {
        for (name, printed) in samples.0 {
            if matches!(parser, Parser::Regex(_)) && is_index(&name) {
                // Kept with the run to number its iterations, never compared.
                let reading = CounterReading { samples: printed.kept, ..CounterReading::unsupported(INDEX_REASON) };
                run.counters.insert(name, reading);
                continue;
            }
            let groups = iterations.groups_printed(&name, &printed);
            let reading = CounterReading::printed(printed, iterations)
                .unwrap_or_else(|why| CounterReading::unsupported(format!("{name}: {why}")));
            if !found.contains(&name) {
                found.push(name.clone());
                found.extend(iterations.group_names(&name));
            }
            for group in iterations.group_names(&name) {
                // A run that printed no more than the first group has no steady state.
                let value = groups.iter().find(|(g, _)| *g == group).map(|(_, v)| *v);
                run.counters.insert(
                    group,
                    value.map_or_else(
                        || {
                            CounterReading::unsupported(format!(
                                "{name}: the run printed too few iterations for both groups"
                            ))
                        },
                        |v| CounterReading::value(v, false),
                    ),
                );
            }
            run.counters.insert(name, reading);
        }
        for name in parser.known_names().unwrap_or_default() {
            if !found.contains(&name) {
                run.counters.insert(name.clone(), CounterReading::unsupported(parser.expectation(&name)));
            }
        }
    }
    found
}

/// `record_metrics` of whole output texts.
pub fn read_metrics(
    parsers: &[Parser],
    stdout: &str,
    stderr: &str,
    iterations: Iterations,
    run: &mut Run,
) -> Result<Vec<String>, ParseError> {
    Ok(record_metrics(parsers, parse_texts(parsers, stdout, stderr)?, iterations, run))
}

/// Each parser's samples in the whole texts `stdout` and `stderr` (a run's output read
/// after it ended), line by line as [`RunParse`] reads a stream.
fn parse_texts(parsers: &[Parser], stdout: &str, stderr: &str) -> Result<Vec<Samples>, ParseError> {
    let mut parse = RunParse::new(parsers);
    for line in stdout.lines() {
        parse.line(Stream::Stdout, line);
    }
    for line in stderr.lines() {
        parse.line(Stream::Stderr, line);
    }
    if parse.wants_json() {
        parse.google_benchmark(google_benchmark_from(stdout.as_bytes()));
    }
    parse.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #28: `(?<iter>\d+)` became a metric, and the headline said "cold is
    /// equivalent to pretouch in iter". An index numbers the iterations; it is no metric.
    #[test]
    fn an_iteration_number_capture_is_no_metric() {
        let p = Parser::regex(r"iter (?<iter>\d+): (?<ms>[0-9.]+) ms").unwrap();
        assert_eq!(p.known_names(), Some(vec!["ms".to_string()]), "the verdict's metric is ms");
        let mut run = Run::default();
        let found = read_metrics(&[p], "iter 0: 5.0 ms\niter 1: 3.0 ms\n", "", Iterations::All, &mut run).unwrap();
        assert_eq!(found, ["ms"]);
        let iter = &run.counters["iter"];
        assert_eq!((iter.supported, iter.value, iter.samples.as_slice()), (false, None, &[0.0, 1.0][..]));
        assert_eq!(run.counters["ms"].value, Some(4.0));
        let only = Parser::regex(r"iter (?<iter>\d+)").unwrap_err().to_string();
        assert!(only.contains("only the iteration's number"), "{only}");
    }

    fn parse(parser: &Parser, stdout: &str, stderr: &str) -> Result<Samples, ParseError> {
        let mut out = Samples::default();
        parser.samples(stdout, stderr, &mut out)?;
        Ok(out)
    }

    const PGBENCH_15: &str = "pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 1
query mode: simple
number of clients: 1
number of threads: 1
maximum number of tries: 1
duration: 2 s
number of transactions actually processed: 21494
number of failed transactions: 0 (0.000%)
latency average = 0.093 ms
latency stddev = 0.293 ms
initial connection time = 2.508 ms
tps = 10759.739532 (without initial connection time)
";

    const PGBENCH_PROGRESS: &str = "starting vacuum...end.
progress: 1.0 s, 9746.4 tps, lat 0.102 ms stddev 0.337, 0 failed
progress: 2.0 s, 11746.5 tps, lat 0.085 ms stddev 0.250, 0 failed
";

    #[test]
    fn pgbench_reports_tps_and_latency_or_per_interval_progress() {
        let s = parse(&Parser::Pgbench, PGBENCH_15, "").unwrap();
        assert_eq!(s.get("tps"), Some(&[10759.739532][..]));
        assert_eq!(s.get("latency_ms"), Some(&[0.093][..]));
        let s = parse(&Parser::Pgbench, PGBENCH_15, PGBENCH_PROGRESS).unwrap();
        assert_eq!(s.get("tps"), Some(&[9746.4, 11746.5][..]), "one sample per progress interval");
        assert_eq!(s.get("latency_ms"), Some(&[0.102, 0.085][..]));
        // pgbench 13 and older print the figure with and without connection time.
        let old = "latency average = 3.1 ms\ntps = 320.1 (including connections establishing)\n\
                   tps = 321.5 (excluding connections establishing)\n";
        assert_eq!(parse(&Parser::Pgbench, old, "").unwrap().get("tps"), Some(&[321.5][..]));
    }

    #[test]
    fn pgbench_without_a_report_is_a_missing_metric_with_the_expected_line() {
        let mut run = Run::default();
        let found =
            read_metrics(&[Parser::Pgbench], "pgbench: error: connection refused\n", "", Iterations::All, &mut run)
                .unwrap();
        assert!(found.is_empty());
        assert_eq!(run.metric("tps"), None, "never a zero");
        let reason = run.counters["tps"].reason.as_deref().unwrap();
        assert!(reason.contains("no `tps = …` line"), "{reason}");
    }

    #[test]
    fn regex_named_captures_give_one_sample_per_match_from_stdout_then_stderr() {
        let p = Parser::regex(r"^iteration \d+: (?<iter_ns>[0-9,]+) ns").unwrap();
        let s = parse(&p, "iteration 1: 2,000 ns\nnoise\niteration 2: 1000 ns\n", "iteration 3: 1001 ns\n").unwrap();
        assert_eq!(s.get("iter_ns"), Some(&[2000.0, 1000.0, 1001.0][..]));
        let two =
            Parser::regex(r"Planning Time: (?<plan_ms>[0-9.]+) ms|Execution Time: (?<exec_ms>[0-9.]+) ms").unwrap();
        let s = parse(&two, " Planning Time: 0.360 ms\n Execution Time: 42.350 ms\n", "").unwrap();
        assert_eq!((s.get("plan_ms"), s.get("exec_ms")), (Some(&[0.36][..]), Some(&[42.35][..])));
        assert_eq!(s.0.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["plan_ms", "exec_ms"]);
        assert_eq!(two.known_names().unwrap(), ["plan_ms", "exec_ms"]);
    }

    #[test]
    fn bad_expressions_and_values_are_clear_errors() {
        assert!(Parser::regex("tps = ([0-9.]+)").unwrap_err().to_string().contains("no named capture"));
        assert!(Parser::regex("(?<x>[0-9").unwrap_err().to_string().contains("not a regular expression"));
        assert!(Parser::regex("(?<wall_s>[0-9.]+)").unwrap_err().to_string().contains("measured by perflab itself"));
        let p = Parser::regex(r"v=(?<v>\S+)").unwrap();
        let err = parse(&p, "v=fast\n", "").unwrap_err().to_string();
        assert!(err.contains("`v`: `fast` is not a number"), "{err}");
        assert!(parse(&p, "v=inf\n", "").is_err(), "infinite values are refused");
        assert!(Parser::format("csv").unwrap_err().to_string().contains("pgbench, google-benchmark, jsonl"));
    }

    #[test]
    fn json_lines_take_metric_lines_and_ignore_other_output() {
        let out = "starting\n{\"metric\": \"parse_ns\", \"value\": 812.5}\n{\"other\": 1}\n[1,2]\n\
                   {\"metric\": \"parse_ns\", \"value\": 790}\n{not json\n";
        let s = parse(&Parser::JsonLines, out, "{\"metric\": \"rows_per_s\", \"value\": 1e6}\n").unwrap();
        assert_eq!(s.get("parse_ns"), Some(&[812.5, 790.0][..]));
        assert_eq!(s.get("rows_per_s"), Some(&[1e6][..]));
        for bad in [r#"{"metric": "x", "value": "fast"}"#, r#"{"metric": 3, "value": 1}"#, r#"{"metric": "x"}"#] {
            let err = parse(&Parser::JsonLines, bad, "").unwrap_err().to_string();
            assert!(err.starts_with("malformed metric line") && err.contains(bad), "{err}");
        }
        let err = parse(&Parser::JsonLines, r#"{"metric": "wall_s", "value": 1}"#, "").unwrap_err().to_string();
        assert!(err.contains("measured by perflab itself"), "{err}");
    }

    const GBENCH: &str = r#"{
  "context": {"date": "2026-01-01", "library_build_type": "release"},
  "benchmarks": [
    {"name": "BM_copy/8", "run_name": "BM_copy/8", "run_type": "iteration", "repetitions": 2,
     "repetition_index": 0, "iterations": 1000, "real_time": 1.5, "cpu_time": 1.4, "time_unit": "us",
     "bytes_per_second": 5.0e9},
    {"name": "BM_copy/8", "run_name": "BM_copy/8", "run_type": "iteration", "repetitions": 2,
     "repetition_index": 1, "iterations": 1000, "real_time": 1.25, "cpu_time": 1.2, "time_unit": "us"},
    {"name": "BM_copy/8_mean", "run_name": "BM_copy/8", "run_type": "aggregate", "aggregate_name": "mean",
     "real_time": 1.375, "cpu_time": 1.3, "time_unit": "us"}
  ]
}"#;

    #[test]
    fn google_benchmark_json_gives_times_in_ns_per_repetition() {
        let s = parse(&Parser::GoogleBenchmark, &format!("some banner\n{GBENCH}\n"), "").unwrap();
        assert_eq!(s.get("BM_copy/8:real_ns"), Some(&[1500.0, 1250.0][..]));
        assert_eq!(s.get("BM_copy/8:cpu_ns"), Some(&[1400.0, 1200.0][..]));
        assert_eq!(s.get("BM_copy/8:bytes_per_s"), Some(&[5.0e9][..]));
        assert!(s.get("BM_copy/8_mean:real_ns").is_none(), "aggregates are perflab's to make");
        assert_eq!(metric::info("BM_copy/8:bytes_per_s").better, metric::Better::Higher);
        assert!(metric::info("BM_copy/8:real_ns").is_time());
    }

    #[test]
    fn google_benchmark_errors_and_broken_json_are_reported() {
        let failed = r#"{"benchmarks": [{"name": "BM_x", "run_type": "iteration", "error_occurred": true,
                         "error_message": "out of memory", "real_time": 0, "cpu_time": 0, "time_unit": "ns"}]}"#;
        assert!(parse(&Parser::GoogleBenchmark, failed, "")
            .unwrap_err()
            .to_string()
            .contains("`BM_x` reported an error: out of memory"));
        assert!(parse(&Parser::GoogleBenchmark, "{\"benchmarks\": [", "")
            .unwrap_err()
            .to_string()
            .contains("does not parse"));
        assert!(parse(&Parser::GoogleBenchmark, "{\"context\": {}}", "")
            .unwrap_err()
            .to_string()
            .contains("no `benchmarks`"));
        assert_eq!(parse(&Parser::GoogleBenchmark, "no json at all", "").unwrap(), Samples::default());
    }

    #[test]
    fn read_metrics_aggregates_and_keeps_every_sample() {
        let mut run = Run::default();
        let p = Parser::regex(r"^(?<iter_ns>[0-9]+)$").unwrap();
        let found =
            read_metrics(std::slice::from_ref(&p), "300\n100\n100\n", "", Iterations::Steady(1), &mut run).unwrap();
        assert_eq!(found, ["iter_ns"]);
        let reading = &run.counters["iter_ns"];
        assert_eq!((reading.value, reading.samples.as_slice()), (Some(100.0), &[300.0, 100.0, 100.0][..]));
        let mut short = Run::default();
        read_metrics(&[p], "300\n", "", Iterations::Steady(1), &mut short).unwrap();
        let reason = short.counters["iter_ns"].reason.clone().unwrap();
        assert!(reason.contains("printed only 1"), "{reason}");
    }
}
