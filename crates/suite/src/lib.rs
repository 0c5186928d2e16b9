//! The suite file (`perflab.toml`): benchmarks with command templates and parameters,
//! builds to compare, and defaults, checked up front with `FILE:LINE: what is expected`.
//!
//! See docs/suites.md for the format. [`runner`] runs a suite's benchmarks through the
//! engine into the store (and [`explain`] says why a regression is slower), [`bisect`]
//! finds the commit that made a benchmark slower, and [`fleet`] queues suites for many
//! machines sharing one PostgreSQL store and runs them there.
//!
//! May use: `perflab-engine`, `perflab-store` and the floors below them.

#![deny(missing_docs)]

pub mod bisect;
pub mod budget;
pub mod error;
pub mod explain;
pub mod family;
pub mod fleet;
pub mod layouts;
pub mod runner;

use perflab_engine::measure::output::{Parser, ParserError};
use perflab_engine::measure::Mode;
use perflab_engine::plan::SettingsLayer;
use perflab_model::metric::Better;
use perflab_model::{Hooks, Iterations};
use perflab_sys::command::{
    cartesian, check_combination_count, combination_count, expand, expand_quoted, is_placeholder_name, MAX_COMBINATIONS,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

pub use error::SuiteError;

/// The suite file used when `--suite` is not given.
pub const DEFAULT_FILE: &str = "perflab.toml";

/// A build or variant: what `{build}` stands for in command templates.
#[derive(Debug, Clone, PartialEq)]
pub struct Build {
    /// The build's name (`--build NAME`, `{build}`'s key in `[builds]`).
    pub name: String,
    /// The text substituted for `{build}` (a `path` is made absolute against the suite's directory).
    pub value: String,
    /// A command run once (through `sh -c`) before the build is first measured.
    pub prepare: Option<String>,
}

/// One benchmark after parameter expansion.
#[derive(Debug, Clone, PartialEq)]
pub struct Benchmark {
    /// `name`, or `name[p=v,q=w]` for one combination of parameters.
    pub name: String,
    /// The parameter values of this combination.
    pub params: BTreeMap<String, String>,
    /// The command with parameters substituted; `{build}` is still a placeholder.
    pub command: String,
    /// Shell command run once before the benchmark's first run (`setup`).
    pub setup: Option<String>,
    /// Shell command run once after its last run (`cleanup`).
    pub cleanup: Option<String>,
    /// The benchmark's own options over the suite's `[defaults]`.
    pub options: SettingsLayer,
}

impl Benchmark {
    /// True when the command or a per-run hook names `{build}` (a build may differ in
    /// how the server is configured before each run, not only in the command).
    pub fn uses_build(&self) -> bool {
        [Some(&self.command), self.options.prepare.as_ref(), self.options.conclude.as_ref()]
            .into_iter()
            .flatten()
            .any(|text| expand(text, &|_| None).1.iter().any(|p| p == "build"))
    }

    /// The per-run hooks for `build` (`{build}` substituted as in the command).
    pub(crate) fn hooks_for(&self, build: Option<&Build>) -> Hooks {
        let hooks = Hooks {
            prepare: self.options.prepare.clone(),
            conclude: self.options.conclude.clone(),
            ..Hooks::default()
        };
        match build {
            Some(b) => hooks.map(|text| expand(text, &|name| (name == "build").then(|| b.value.clone())).0),
            None => hooks,
        }
    }

    /// The command line for `build` (`{build}` substituted).
    pub fn command_for(&self, build: Option<&Build>) -> Result<String, SuiteError> {
        match build {
            Some(b) => Ok(expand(&self.command, &|name| (name == "build").then(|| b.value.clone())).0),
            None if self.uses_build() => Err(SuiteError::NeedsBuild(self.name.clone())),
            None => Ok(self.command.clone()),
        }
    }
}

/// A suite file, loaded: its builds and its benchmarks with parameters expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// The file it was read from.
    pub path: PathBuf,
    /// The `[builds]`, in file order.
    pub builds: Vec<Build>,
    /// The benchmarks, in file order, one per parameter combination.
    pub benchmarks: Vec<Benchmark>,
    /// `layouts = N` in `[builds]`: build every compared version N times, each with its
    /// own layout seed for `{layout}` (see [`layouts`]).
    pub layouts: Option<u32>,
}

impl Suite {
    /// The build named `name`, if the suite defines it.
    pub fn build(&self, name: &str) -> Option<&Build> {
        self.builds.iter().find(|b| b.name == name)
    }

    /// The benchmarks whose name matches the regular expression `filter` (all without one).
    pub fn select(&self, filter: Option<&str>) -> Result<Vec<&Benchmark>, SuiteError> {
        let re = match filter {
            Some(re) => Some(regex::Regex::new(re).map_err(|e| SuiteError::BadFilter {
                pattern: perflab_sys::text::escape(re),
                why: perflab_sys::text::regex_error(&e),
            })?),
            None => None,
        };
        let selected: Vec<&Benchmark> =
            self.benchmarks.iter().filter(|b| re.as_ref().is_none_or(|re| re.is_match(&b.name))).collect();
        if selected.is_empty() {
            return Err(SuiteError::NothingSelected {
                path: self.path.clone(),
                filter: filter.unwrap_or("").to_string(),
            });
        }
        Ok(selected)
    }

    /// The measured build — `build`, else the build named like `label` — and the baseline
    /// build, checked against the suite's `[builds]`.
    pub fn builds(
        &self,
        build: Option<&str>,
        baseline: Option<&str>,
        label: Option<&str>,
    ) -> Result<(Option<&Build>, Option<&Build>), SuiteError> {
        let known = || self.builds.iter().map(|b| format!("`{}`", b.name)).collect::<Vec<_>>().join(", ");
        let find = |name: &str, flag: &'static str| {
            self.build(name).ok_or_else(|| {
                let (name, path) = (name.to_string(), self.path.clone());
                if self.builds.is_empty() {
                    SuiteError::NoBuilds { flag, name, path }
                } else {
                    SuiteError::NoSuchBuild { flag, name, path, known: known() }
                }
            })
        };
        let candidate = match build {
            Some(name) => Some(find(name, "--build")?),
            None => label.and_then(|l| self.build(l)),
        };
        let baseline = match baseline {
            Some(name) => Some(find(name, "--baseline")?),
            None => None,
        };
        if baseline.is_some() && candidate.is_none() && self.benchmarks.iter().any(Benchmark::uses_build) {
            return Err(SuiteError::BaselineWithoutBuild);
        }
        if let (Some(b), Some(c)) = (baseline, candidate) {
            if b.name == c.name {
                return Err(SuiteError::SameBuild(b.name.clone()));
            }
        }
        Ok((candidate, baseline))
    }
}

macro_rules! with_options {
    ($(#[$meta:meta])* struct $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty,)* }) => {
        $(#[$meta])*
        struct $name {
            $($(#[$fmeta])* $field: $ty,)*
            rounds: Option<Spanned<u32>>,
            warmup: Option<Spanned<u32>>,
            min_rounds: Option<Spanned<u32>>,
            max_rounds: Option<Spanned<u32>>,
            max_time: Option<Spanned<toml::Value>>,
            timeout: Option<Spanned<toml::Value>>,
            threshold: Option<Spanned<f64>>,
            events: Option<Vec<String>>,
            mode: Option<Spanned<String>>,
            shell: Option<Spanned<toml::Value>>,
            output_metric: Option<Spanned<toml::Value>>,
            parse: Option<Spanned<toml::Value>>,
            higher_is_better: Option<Vec<String>>,
            lower_is_better: Option<Vec<String>>,
            iterations: Option<Spanned<String>>,
            warmup_iterations: Option<Spanned<u32>>,
            prepare: Option<String>,
            conclude: Option<String>,
            input: Option<String>,
        }

        impl $name {
            fn options(&self, file: &SourceFile) -> Result<SettingsLayer, SuiteError> {
                let duration = |v: &Option<Spanned<toml::Value>>| -> Result<Option<f64>, SuiteError> {
                    let Some(v) = v else { return Ok(None) };
                    let parsed: Result<f64, error::Problem> = match v.get_ref() {
                        toml::Value::Integer(i) => perflab_model::units::check_duration(*i as f64).map_err(|why| format!("{i} {why}").into()),
                        toml::Value::Float(f) => perflab_model::units::check_duration(*f).map_err(|why| format!("{f} {why}").into()),
                        toml::Value::String(s) => perflab_model::units::parse_duration(s).map_err(Into::into),
                        _ => Err("expected a positive number of seconds or a duration such as \"90s\" or \"5m\"".into()),
                    };
                    parsed.map(Some).map_err(|e| file.error(v.span(), e))
                };
                let positive = |v: &Option<Spanned<u32>>, what: &str| -> Result<Option<u32>, SuiteError> {
                    match v {
                        Some(n) if *n.get_ref() == 0 => Err(file.error(n.span(), format!("{what} must be at least 1"))),
                        Some(n) => Ok(Some(*n.get_ref())),
                        None => Ok(None),
                    }
                };
                let threshold = match &self.threshold {
                    Some(t) if !(0.0..1000.0).contains(t.get_ref()) => {
                        return Err(file.error(t.span(), "expected `threshold` in percent, from 0 to 1000"))
                    }
                    Some(t) => Some(t.get_ref() / 100.0),
                    None => None,
                };
                let mode = match &self.mode {
                    Some(m) => Some(m.get_ref().parse::<Mode>().map_err(|e| file.error(m.span(), e))?),
                    None => None,
                };
                let shell = match &self.shell {
                    Some(s) => match s.get_ref() {
                        toml::Value::Boolean(true) => Some("/bin/sh".to_string()),
                        toml::Value::Boolean(false) => Some("none".to_string()),
                        toml::Value::String(p) if !p.is_empty() => Some(p.clone()),
                        _ => return Err(file.error(s.span(), "expected `shell` = true, false or a shell's path")),
                    },
                    None => None,
                };
                // A string or a list of strings, each turned into a parser.
                let parsers = |v: &Option<Spanned<toml::Value>>, key: &str, make: fn(&str) -> Result<Parser, ParserError>|
                 -> Result<Vec<Parser>, SuiteError> {
                    let Some(v) = v else { return Ok(Vec::new()) };
                    let texts: Vec<&str> = match v.get_ref() {
                        toml::Value::String(s) => vec![s.as_str()],
                        toml::Value::Array(items) if items.iter().all(toml::Value::is_str) => {
                            items.iter().filter_map(toml::Value::as_str).collect()
                        }
                        _ => return Err(file.error(v.span(), format!("expected `{key}` to be a string or a list of strings"))),
                    };
                    texts.into_iter().map(|t| make(t).map_err(|e| file.error(v.span(), e))).collect()
                };
                let mut output = parsers(&self.parse, "parse", Parser::format)?;
                output.extend(parsers(&self.output_metric, "output_metric", Parser::regex)?);
                let mut better = BTreeMap::new();
                for name in self.higher_is_better.iter().flatten() {
                    better.insert(name.clone(), Better::Higher);
                }
                for name in self.lower_is_better.iter().flatten() {
                    better.insert(name.clone(), Better::Lower);
                }
                let warmup_iterations = match &self.warmup_iterations {
                    Some(n) if *n.get_ref() == 0 => {
                        return Err(file.error(n.span(), "warmup_iterations must be at least 1"))
                    }
                    Some(n) => *n.get_ref(),
                    None => 1,
                };
                let iterations = match &self.iterations {
                    Some(i) => Some(Iterations::named(i.get_ref(), warmup_iterations).map_err(|e| file.error(i.span(), e))?),
                    None => None,
                };
                Ok(SettingsLayer {
                    output: (!output.is_empty()).then_some(output),
                    better: (!better.is_empty()).then_some(better),
                    iterations,
                    prepare: self.prepare.clone(),
                    conclude: self.conclude.clone(),
                    input: self.input.clone(),
                    rounds: positive(&self.rounds, "rounds")?,
                    warmup: self.warmup.as_ref().map(|w| *w.get_ref()),
                    min_rounds: positive(&self.min_rounds, "min_rounds")?,
                    max_rounds: positive(&self.max_rounds, "max_rounds")?,
                    max_time: duration(&self.max_time)?,
                    timeout: duration(&self.timeout)?,
                    threshold,
                    events: self.events.clone(),
                    mode,
                    shell,
                })
            }
        }
    };
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    #[serde(default)]
    defaults: Option<RawDefaults>,
    #[serde(default)]
    builds: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    benchmark: Vec<Spanned<RawBenchmark>>,
}

with_options! {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawDefaults {}
}

with_options! {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawBenchmark {
        name: Spanned<String>,
        command: Spanned<String>,
        #[serde(default)]
        params: BTreeMap<String, Spanned<Vec<toml::Value>>>,
        setup: Option<String>,
        cleanup: Option<String>,
    }
}

/// The file's text, for turning byte spans into `FILE:LINE:` messages.
struct SourceFile<'a> {
    display: String,
    text: &'a str,
}

impl SourceFile<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text.as_bytes()[..offset.min(self.text.len())].iter().filter(|&&b| b == b'\n').count() + 1
    }

    fn error(&self, span: std::ops::Range<usize>, problem: impl Into<error::Problem>) -> SuiteError {
        SuiteError::At { file: self.display.clone(), line: self.line(span.start), problem: problem.into() }
    }
}

/// Read and check a suite file; every problem is a one-line `FILE:LINE: …` usage error.
pub fn load(path: &Path) -> Result<Suite, SuiteError> {
    // A regular file only: a FIFO would block, /dev/zero fill memory.
    let text = perflab_sys::files::read_regular_to_string(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound && path == Path::new(DEFAULT_FILE) {
            SuiteError::NoSuiteHere
        } else {
            SuiteError::Read { path: path.to_path_buf(), source }
        }
    })?;
    parse(&text, path)
}

/// Parse suite text read from `path` (used for messages and to resolve build paths).
pub fn parse(text: &str, path: &Path) -> Result<Suite, SuiteError> {
    let file = SourceFile { display: path.display().to_string(), text };
    let raw: RawSuite = toml::from_str(text).map_err(|e| {
        // toml's message can span lines (it quotes the source); the first line says it.
        let message = e.message().lines().next().unwrap_or("invalid TOML").trim_end_matches('.');
        file.error(e.span().unwrap_or(0..0), message.to_string())
    })?;
    if raw.benchmark.is_empty() {
        return Err(file.error(0..0, "expected at least one [[benchmark]] table with `name` and `command`"));
    }
    let defaults = match &raw.defaults {
        Some(d) => d.options(&file)?,
        None => SettingsLayer::default(),
    };
    let base_dir = path.parent().unwrap_or(Path::new("."));
    let mut builds = Vec::new();
    let mut layouts = None;
    for (name, value) in &raw.builds {
        // `layouts = N` is a setting of the builds, not a build (a build is a string or a table).
        if name == "layouts" && value.get_ref().is_integer() {
            layouts = Some(parse_layouts(&file, value)?);
            continue;
        }
        builds.push(parse_build(&file, name, value, base_dir)?);
    }

    let mut benchmarks: Vec<Benchmark> = Vec::new();
    // Names seen, for the duplicate check (a scan of every benchmark made it quadratic).
    let mut names: std::collections::HashSet<String> = std::collections::HashSet::new();
    for spanned in &raw.benchmark {
        let raw_bench = spanned.get_ref();
        let name = raw_bench.name.get_ref();
        if name.trim().is_empty() || name.contains(['[', ']']) {
            return Err(file.error(raw_bench.name.span(), "expected a non-empty benchmark `name` without `[` or `]`"));
        }
        let options = raw_bench.options(&file)?.or(&defaults);
        let command = raw_bench.command.get_ref();
        if command.trim().is_empty() {
            return Err(file.error(raw_bench.command.span(), "expected a non-empty `command`"));
        }
        let mut params: Vec<(String, Vec<String>)> = Vec::new();
        for (key, values) in &raw_bench.params {
            if key == "build" || !is_placeholder_name(key) {
                return Err(file.error(
                    values.span(),
                    format!("parameter `{key}`: expected a name of letters, digits, `_` or `-`, other than `build`"),
                ));
            }
            if values.get_ref().is_empty() {
                return Err(
                    file.error(values.span(), format!("parameter `{key}`: expected a non-empty list of values"))
                );
            }
            let mut texts = Vec::new();
            for v in values.get_ref() {
                texts.push(match v {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(i) => i.to_string(),
                    toml::Value::Float(f) => f.to_string(),
                    toml::Value::Boolean(b) => b.to_string(),
                    _ => {
                        return Err(file.error(
                            values.span(),
                            format!("parameter `{key}`: expected strings or numbers, found {}", v.type_str()),
                        ))
                    }
                });
            }
            params.push((key.clone(), texts));
        }
        for placeholder in expand(command, &|_| None).1 {
            if placeholder != "build" && !raw_bench.params.contains_key(&placeholder) {
                return Err(file.error(
                    raw_bench.command.span(),
                    format!(
                        "`{{{placeholder}}}` in the command is not a parameter: expected one of {{build}}{} (write `{{{{` for a literal brace)",
                        raw_bench.params.keys().map(|k| format!(", {{{k}}}")).collect::<String>()
                    ),
                ));
            }
        }
        // Counted before expanding: the suite's benchmarks so far and these.
        let count = combination_count(&params);
        if let Err(too_many) = check_combination_count(1, &params) {
            return Err(file.error(raw_bench.name.span(), too_many.to_string()));
        }
        if (benchmarks.len() as u64).saturating_add(count) > MAX_COMBINATIONS {
            return Err(file.error(
                raw_bench.name.span(),
                format!(
                    "the suite makes more than {MAX_COMBINATIONS} benchmarks with this one's {count}: more than perflab's limit"
                ),
            ));
        }
        for combination in cartesian(&params) {
            // Only escapes can name a non-parameter here (unknown placeholders failed
            // above); answering for them unescapes them. `{build}` waits for command_for.
            let lookup = |name: &str| {
                (name != "build")
                    .then(|| combination.iter().find(|(k, _)| k == name).map_or(String::new(), |(_, v)| v.clone()))
            };
            // Values are data: quoted for the shell where they stand, so `$(…)`, `;` or a
            // backtick in a value is one argument, never code (docs/suites.md).
            let command = expand_quoted(command, &lookup);
            let full_name = if combination.is_empty() {
                name.clone()
            } else {
                let inner: Vec<String> = combination.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{name}[{}]", inner.join(","))
            };
            if !names.insert(full_name.clone()) {
                return Err(file.error(raw_bench.name.span(), format!("duplicate benchmark `{full_name}`")));
            }
            let mut options = options.clone();
            for hook in [&mut options.prepare, &mut options.conclude] {
                *hook = hook.as_deref().map(|text| expand_quoted(text, &lookup));
            }
            benchmarks.push(Benchmark {
                name: full_name,
                params: combination.into_iter().collect(),
                command,
                setup: raw_bench.setup.clone(),
                cleanup: raw_bench.cleanup.clone(),
                options,
            });
        }
    }
    Ok(Suite { path: path.to_path_buf(), builds, benchmarks, layouts })
}

/// `layouts = N` in `[builds]`: 2 or more (one layout is what a plain comparison measures).
fn parse_layouts(file: &SourceFile, value: &Spanned<toml::Value>) -> Result<u32, SuiteError> {
    match value.get_ref().as_integer() {
        Some(n) if (2..=1000).contains(&n) => Ok(n as u32),
        _ => Err(file.error(value.span(), "expected `layouts` to be a number of layouts per build, from 2 to 1000")),
    }
}

fn parse_build(
    file: &SourceFile,
    name: &str,
    value: &Spanned<toml::Value>,
    base_dir: &Path,
) -> Result<Build, SuiteError> {
    let expected = "expected a build as a string (a path) or a table with `path` or `command` and optional `prepare`";
    let resolve = |p: &str| {
        let path = Path::new(p);
        if path.is_absolute() || !p.contains('/') {
            p.to_string()
        } else {
            base_dir.join(path).to_string_lossy().into_owned()
        }
    };
    match value.get_ref() {
        toml::Value::String(s) if !s.is_empty() => {
            Ok(Build { name: name.to_string(), value: resolve(s), prepare: None })
        }
        toml::Value::Table(t) => {
            let get =
                |k: &str| -> Result<Option<String>, SuiteError> {
                    match t.get(k) {
                        None => Ok(None),
                        Some(toml::Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
                        Some(_) => Err(file
                            .error(value.span(), format!("build `{name}`: expected `{k}` to be a non-empty string"))),
                    }
                };
            if let Some(unknown) = t.keys().find(|k| !["path", "command", "prepare"].contains(&k.as_str())) {
                return Err(file.error(
                    value.span(),
                    format!("build `{name}`: unknown key `{unknown}`, expected `path`, `command` or `prepare`"),
                ));
            }
            let value_text = match (get("path")?, get("command")?) {
                (Some(p), None) => resolve(&p),
                (None, Some(c)) => c,
                _ => {
                    return Err(file
                        .error(value.span(), format!("build `{name}`: expected exactly one of `path` or `command`")))
                }
            };
            Ok(Build { name: name.to_string(), value: value_text, prepare: get("prepare")? })
        }
        _ => Err(file.error(value.span(), format!("build `{name}`: {expected}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Suite, String> {
        parse(text, Path::new("dir/perflab.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn smallest_suite() {
        let s = parse_str("[[benchmark]]\nname = \"a\"\ncommand = \"true\"\n").unwrap();
        assert_eq!(s.benchmarks.len(), 1);
        assert_eq!(s.benchmarks[0].command, "true");
        assert_eq!(s.benchmarks[0].options, SettingsLayer::default());
    }

    #[test]
    fn parameters_expand_to_named_combinations() {
        let s = parse_str(
            r#"
[defaults]
rounds = 5
max_time = "2m"
[builds]
old = "bin/old"
new = { command = "python3 -X opt", prepare = "make" }
[[benchmark]]
name = "sort"
command = "{build} --n {n} --algo {algo} | awk '{print $1}' {{n}} {{x}}"
params = { n = [10, 1000], algo = ["quick", "merge"] }
threshold = 2
mode = "instructions"
"#,
        )
        .unwrap();
        let names: Vec<&str> = s.benchmarks.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            ["sort[algo=quick,n=10]", "sort[algo=quick,n=1000]", "sort[algo=merge,n=10]", "sort[algo=merge,n=1000]"]
        );
        let b = &s.benchmarks[1];
        assert_eq!(b.command, "{build} --n 1000 --algo quick | awk '{print $1}' {n} {x}");
        assert_eq!(b.options.rounds, Some(5));
        assert_eq!(b.options.max_time, Some(120.0));
        assert_eq!(b.options.threshold, Some(0.02));
        assert_eq!(b.options.mode, Some(Mode::Instructions));
        assert_eq!(s.build("old").unwrap().value, "dir/bin/old");
        assert_eq!(s.build("new").unwrap().prepare.as_deref(), Some("make"));
        assert_eq!(
            b.command_for(s.build("new")).unwrap(),
            "python3 -X opt --n 1000 --algo quick | awk '{print $1}' {n} {x}"
        );
    }

    #[test]
    fn errors_name_file_line_and_expectation() {
        let cases = [
            (
                "[[benchmark]]\nname = \"a\"\ncommand = \"x\"\nrounds = 3\ncolour = 1\n",
                "dir/perflab.toml:5: unknown field `colour`",
            ),
            ("[[benchmark]]\nname = \"a\"\n", "dir/perflab.toml:1: missing field `command`"),
            (
                "[[benchmark]]\nname = \"a\"\ncommand = \"x {n}\"\n",
                "dir/perflab.toml:3: `{n}` in the command is not a parameter",
            ),
            (
                "[[benchmark]]\nname = \"a\"\ncommand = \"x\"\nmode = \"fast\"\n",
                "dir/perflab.toml:4: expected `mode` \"wall\" or \"instructions\"",
            ),
            (
                "[defaults]\nmax_time = \"soon\"\n[[benchmark]]\nname = \"a\"\ncommand = \"x\"\n",
                "dir/perflab.toml:2: `soon` is not a duration",
            ),
            (
                "[[benchmark]]\nname = \"a\"\ncommand = \"x\"\ntimeout = \"1e30s\"\n",
                "dir/perflab.toml:4: `1e30s` is longer than the longest accepted duration",
            ),
            (
                "[[benchmark]]\nname = \"a\"\ncommand = \"x\"\ntimeout = 1e30\n",
                "dir/perflab.toml:4: 1000000000000000000000000000000 is longer than the longest accepted duration",
            ),
            (
                "[defaults]\nmax_time = -3\n[[benchmark]]\nname = \"a\"\ncommand = \"x\"\n",
                "dir/perflab.toml:2: -3 must be a positive duration",
            ),
            (
                "[[benchmark]]\nname = \"a\"\ncommand = \"x {n}\"\nparams = { n = [] }\n",
                "dir/perflab.toml:4: parameter `n`: expected a non-empty list",
            ),
            (
                "[builds]\nold = 3\n[[benchmark]]\nname = \"a\"\ncommand = \"x\"\n",
                "dir/perflab.toml:2: build `old`: expected a build",
            ),
            (
                "[[benchmark]]\nname = \"a\"\ncommand = \"x\"\n[[benchmark]]\nname = \"a\"\ncommand = \"y\"\n",
                "dir/perflab.toml:5: duplicate benchmark `a`",
            ),
            ("[defaults]\nrounds = 2\n", "dir/perflab.toml:1: expected at least one [[benchmark]]"),
            ("[[benchmark]\n", "dir/perflab.toml:1:"),
        ];
        for (text, expected) in cases {
            let err = parse_str(text).unwrap_err();
            assert!(err.starts_with(expected), "for {text:?}: got {err:?}, expected {expected:?}");
            assert!(!err.contains('\n'), "{err:?}");
        }
    }

    #[test]
    fn benchmarks_can_read_what_they_print_and_run_hooks() {
        let s = parse_str(
            r#"
[defaults]
parse = "pgbench"
prepare = "pg_ctl restart -D {build}"
[builds]
small = "/srv/a"
[[benchmark]]
name = "select"
command = "pgbench -S -T 2 -c {clients} --host {build}"
params = { clients = [1, 4] }
conclude = "echo {clients} done"
[[benchmark]]
name = "explain"
command = "psql -c 'EXPLAIN ANALYZE SELECT 1'"
output_metric = ['Execution Time: (?<exec_ms>[0-9.]+) ms']
higher_is_better = ["throughput"]
iterations = "steady"
warmup_iterations = 2
input = "queries.sql"
"#,
        )
        .unwrap();
        let select = &s.benchmarks[1];
        assert_eq!(select.options.output, Some(vec![Parser::Pgbench]));
        let hooks = select.hooks_for(s.build("small"));
        assert_eq!(hooks.prepare.as_deref(), Some("pg_ctl restart -D /srv/a"), "{{build}} as in the command");
        assert_eq!(hooks.conclude.as_deref(), Some("echo 4 done"), "parameters as in the command");
        let explain = &s.benchmarks[2];
        assert_eq!(explain.options.output.as_ref().unwrap()[0].known_names().unwrap(), ["exec_ms"]);
        assert_eq!(explain.options.iterations, Some(Iterations::Steady(2)));
        assert_eq!(explain.options.better.as_ref().unwrap()["throughput"], Better::Higher);
        assert_eq!(explain.options.input.as_deref(), Some("queries.sql"));
        for (text, expected) in [
            ("output_metric = \"([0-9]+)\"", "perflab.toml:4: --output-metric `([0-9]+)` has no named capture"),
            ("parse = \"csv\"", "perflab.toml:4: unknown output format `csv`"),
            ("parse = 3", "perflab.toml:4: expected `parse` to be a string or a list of strings"),
            (
                "iterations = \"last\"",
                "perflab.toml:4: expected `iterations` \"all\", \"first\", \"steady\", \"each\" or a number N ≥ 1",
            ),
        ] {
            let err = parse_str(&format!("[[benchmark]]\nname = \"a\"\ncommand = \"x\"\n{text}\n")).unwrap_err();
            assert!(err.contains(expected), "{err}");
        }
    }

    #[test]
    fn layouts_in_builds_is_a_count_not_a_build() {
        let s = parse_str(
            "[builds]\nlayouts = 8\nv3 = { path = \"out/v3-{layout}/prog\", prepare = \"make SEED={layout}\" }\n\
             [[benchmark]]\nname = \"a\"\ncommand = \"{build} -x\"\n",
        )
        .unwrap();
        assert_eq!((s.layouts, s.builds.len()), (Some(8), 1));
        assert_eq!(s.build("v3").unwrap().value, "dir/out/v3-{layout}/prog", "kept for each layout's seed");
        let err = parse_str("[builds]\nlayouts = 1\n[[benchmark]]\nname = \"a\"\ncommand = \"x\"\n").unwrap_err();
        assert!(err.starts_with("dir/perflab.toml:2: expected `layouts` to be a number of layouts per build"), "{err}");
    }

    #[test]
    fn build_placeholder_needs_a_build() {
        let s = parse_str("[[benchmark]]\nname = \"a\"\ncommand = \"{build} -x\"\n").unwrap();
        let err = s.benchmarks[0].command_for(None).unwrap_err().to_string();
        assert!(err.contains("uses {build}"), "{err}");
    }
}
