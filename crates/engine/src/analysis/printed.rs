//! What the metrics a command printed are, said where it could mislead: a regular
//! expression matching several lines per run (two statements timed the same way are
//! averaged unless one is picked), and a command that is a database or network client
//! (its CPU time is the client's, whatever it prints about the server).

use crate::measure::output::{is_index, Parser};
use crate::plan::Plan;
use perflab_model::units::format_value;
use perflab_model::{Experiment, Iterations, Warning, WarningKind};

/// Programs that ask a server to do the work: their run's CPU time is theirs, not the
/// server's (pgbench is also recognised by its `--parse` format).
pub(crate) const CLIENT_PROGRAMS: [&str; 11] =
    ["psql", "pgbench", "mysql", "mariadb", "mongosh", "redis-cli", "redis-benchmark", "curl", "wget", "wrk", "ab"];

/// The client program a plan's commands run (its name), when one is in
/// [`CLIENT_PROGRAMS`]: the first word of the command as typed (through a shell too).
pub(crate) fn client_program(plan: &Plan) -> Option<String> {
    plan.commands.iter().find_map(|c| {
        let first = c.command_line.split_whitespace().next().or(c.argv.first().map(String::as_str))?;
        let program = first.rsplit('/').next().unwrap_or(first);
        CLIENT_PROGRAMS.contains(&program).then(|| program.to_string())
    })
}

/// For each metric a regular expression found more than once in a run: how many times,
/// the first run's values, which of them made the run's value, and how to take one alone
/// (`--iterations N`) when they are different things — psql's `\timing` prints a `Time:`
/// line for every statement, and a 0.17 ms `SET` averaged with an 88 ms query is
/// neither.
pub(crate) fn several_matches(plan: &Plan, experiment: &Experiment) -> Vec<Warning> {
    let mut out = Vec::new();
    for parser in &plan.measure.output {
        let Parser::Regex(regex) = parser else { continue };
        for name in regex.capture_names().flatten().filter(|n| !is_index(n)) {
            let counts: Vec<usize> = experiment
                .commands
                .iter()
                .flat_map(|c| &c.runs)
                .filter_map(|r| r.counters.get(name).map(|reading| reading.samples.len()))
                .collect();
            let (Some(&fewest), Some(&most)) = (counts.iter().min(), counts.iter().max()) else { continue };
            if most <= 1 {
                continue;
            }
            let first: Vec<String> = experiment
                .commands
                .iter()
                .flat_map(|c| &c.runs)
                .find_map(|r| r.counters.get(name).filter(|reading| reading.samples.len() > 1))
                .map(|reading| reading.samples.iter().take(5).map(|v| format_value(name, *v)).collect())
                .unwrap_or_default();
            let times = if fewest == most {
                format!("{most} times in every run")
            } else {
                format!("{fewest} to {most} times per run")
            };
            let more = if most > 5 { ", …" } else { "" };
            let used = plan.settings.iterations.describe();
            let pick = match plan.settings.iterations {
                Iterations::Only(_) => String::new(),
                _ => format!(
                    "; if they are different statements rather than iterations of one, take one alone: --iterations {most} for the last (iterations = \"{most}\" in a suite)"
                ),
            };
            out.push(Warning::new(
                WarningKind::Scope,
                format!(
                    "`{name}` matched {times} (`{}`; the first run's: {}{more}): a run's value is {used}{pick}",
                    regex.as_str(),
                    first.join(", ")
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::output::read_metrics;
    use crate::measure::MeasureOptions;
    use crate::plan::Compared;
    use perflab_model::{CommandResult, CommandSpec, Run, Settings};

    fn spec(line: &str) -> CommandSpec {
        CommandSpec {
            name: line.into(),
            argv: line.split(' ').map(String::from).collect(),
            command_line: line.into(),
            ..CommandSpec::default()
        }
    }

    /// psql with `\timing on`, a `SET` and a query: two `Time:` lines per run.
    fn psql(iterations: Iterations) -> (Plan, Experiment) {
        let parser = Parser::regex(r"Time: (?<ms>[0-9.]+) ms").unwrap();
        let commands = vec![spec("psql -c 'SET x' -c 'SELECT 1'"), spec("psql -c 'SET y' -c 'SELECT 1'")];
        let measure = MeasureOptions { output: vec![parser.clone()], iterations, ..MeasureOptions::default() };
        let settings = Settings { iterations, ..Settings::default() };
        let plan = Plan::new(commands.clone(), settings, measure, Compared::fixed(vec!["ms".into()]));
        let results = commands
            .iter()
            .map(|c| {
                let runs = (0..3)
                    .map(|_| {
                        let mut run = Run::default();
                        let output = "SET\nTime: 0.170 ms\n ?column?\nTime: 88.300 ms\n";
                        read_metrics(std::slice::from_ref(&parser), output, "", iterations, &mut run).unwrap();
                        run
                    })
                    .collect();
                CommandResult { name: c.name.clone(), runs, ..CommandResult::default() }
            })
            .collect();
        (plan, Experiment { commands: results, ..Experiment::default() })
    }

    /// Issue #28: `--output-metric` on psql matched a 0.17 ms SET and an 88 ms query in
    /// every run and averaged them silently (44 ms). How many matches, which were used,
    /// and how to take one alone are said; `--iterations 2` takes the query.
    #[test]
    fn several_matches_per_run_are_counted_and_one_can_be_picked() {
        let (plan, experiment) = psql(Iterations::All);
        let warnings = several_matches(&plan, &experiment);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let text = &warnings[0].message;
        assert!(
            text.contains("`ms` matched 2 times in every run") && text.contains("the mean of all iterations"),
            "{text}"
        );
        assert!(text.contains("--iterations 2"), "{text}");
        assert_eq!(experiment.commands[0].runs[0].counters["ms"].value, Some((0.17 + 88.3) / 2.0));
        let (plan, experiment) = psql(Iterations::Only(2));
        assert_eq!(experiment.commands[0].runs[0].counters["ms"].value, Some(88.3), "the query alone");
        let text = &several_matches(&plan, &experiment)[0].message;
        assert!(text.contains("value #2 of those it printed") && !text.contains("take one alone"), "{text}");
    }

    /// Issue #28: psql's cpu_s was compared as if it were the server's (pgbench's was
    /// already labelled as the client's).
    #[test]
    fn a_database_client_is_known_by_its_program() {
        let (plan, _) = psql(Iterations::All);
        assert_eq!(client_program(&plan).as_deref(), Some("psql"));
        let shell = Plan::new(
            vec![spec("/usr/bin/psql -c 'SELECT 1' | cat")],
            Settings::default(),
            MeasureOptions::default(),
            Compared::fixed(vec![]),
        );
        assert_eq!(client_program(&shell).as_deref(), Some("psql"));
        let local = Plan::new(
            vec![spec("./sort 1000")],
            Settings::default(),
            MeasureOptions::default(),
            Compared::fixed(vec![]),
        );
        assert_eq!(client_program(&local), None);
    }
}
