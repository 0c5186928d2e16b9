//! Controls: benchmarks whose command is the same under both labels of a pair (a suite
//! benchmark without `{build}`). Their change is no change of the builds but of the
//! sessions — a free A/A check of them — so they stay out of a geometric mean of what
//! changed and are shown as what they are.

use crate::StoredExperiment;

/// The environment fact `perflab run` records with each benchmark's experiment: `true`
/// when its command (or its hooks) uses `{build}`, `false` when every build runs the
/// same command.
pub const USES_BUILD_FACT: &str = "command_uses_build";

/// Whether the measured command of `experiments` (one benchmark's, on one machine) is
/// the same under `reference` and `label`: every experiment of either label that
/// recorded [`USES_BUILD_FACT`] says `false` (a label measured only as a baseline build
/// beside the other has none of its own); for stores written before the fact, both
/// labels' measured commands are named after the benchmark (how `perflab run` names a
/// command without `{build}`) and have the same command line.
pub fn same_command(experiments: &[&StoredExperiment], reference: &str, label: &str) -> bool {
    fn under<'e, 'a>(
        experiments: &'e [&'a StoredExperiment],
        label: &'e str,
    ) -> impl Iterator<Item = &'e &'a StoredExperiment> + 'e {
        experiments.iter().filter(move |e| e.label == label)
    }
    let of = |l| under(experiments, l);
    let facts: Vec<&str> = of(reference)
        .chain(of(label))
        .filter_map(|e| e.experiment.environment.get(USES_BUILD_FACT).map(String::as_str))
        .collect();
    if !facts.is_empty() {
        return facts.iter().all(|f| *f == "false");
    }
    let lines: Vec<Option<&str>> = of(reference)
        .chain(of(label))
        .map(|e| {
            let measured = e.experiment.commands.last()?;
            (measured.name == e.benchmark && !measured.command_line.is_empty())
                .then_some(measured.command_line.as_str())
        })
        .collect();
    of(reference).next().is_some() && of(label).next().is_some() && lines.iter().all(|l| l.is_some() && *l == lines[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::stored;

    fn with_fact(mut e: StoredExperiment, uses_build: bool) -> StoredExperiment {
        e.experiment.environment.insert(USES_BUILD_FACT.into(), uses_build.to_string());
        e
    }

    #[test]
    fn a_benchmark_without_build_is_a_control_and_one_with_it_is_not() {
        let nap = [
            with_fact(stored("v1", 1, "nap", "h", &[1.0]), false),
            with_fact(stored("v2", 2, "nap", "h", &[1.0]), false),
        ];
        assert!(same_command(&nap.iter().collect::<Vec<_>>(), "v1", "v2"));
        let hot = [
            with_fact(stored("v1", 1, "hot", "h", &[1.0]), true),
            with_fact(stored("v2", 2, "hot", "h", &[1.0]), true),
        ];
        assert!(!same_command(&hot.iter().collect::<Vec<_>>(), "v1", "v2"));
        // Measured only beside a baseline build that has no label of its own.
        let alone = [with_fact(stored("new", 1, "nap", "h", &[1.0]), false)];
        assert!(same_command(&alone.iter().collect::<Vec<_>>(), "base", "new"));
    }

    #[test]
    fn older_stores_are_told_by_the_command_line_and_name() {
        let named = |label: &str, line: &str| {
            let mut e = stored(label, 1, "nap", "h", &[1.0]);
            let measured = e.experiment.commands.last_mut().unwrap();
            measured.name = "nap".into();
            measured.command_line = line.into();
            e
        };
        let same = [named("v1", "sleep 0.02"), named("v2", "sleep 0.02")];
        assert!(same_command(&same.iter().collect::<Vec<_>>(), "v1", "v2"));
        let rebuilt = [named("v1", "sleep 0.02"), named("v2", "sleep 0.03")];
        assert!(!same_command(&rebuilt.iter().collect::<Vec<_>>(), "v1", "v2"));
        // A build's command (named after the build) is never taken for a control, even
        // when its text is the same: a binary rebuilt in place keeps its path.
        let build = [stored("v1", 1, "hot", "h", &[1.0]), stored("v2", 2, "hot", "h", &[1.0])];
        assert!(!same_command(&build.iter().collect::<Vec<_>>(), "v1", "v2"));
    }
}
