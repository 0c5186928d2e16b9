//! Builds measured in several code layouts each (`--layouts N`, `layouts = N`): which
//! commands are the layouts of which version, and what their runs say about how much
//! layout alone moves each version (docs/statistics.md, "Code layouts").

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::null_as_nan;

/// The parameter naming the version a layout's command belongs to.
pub const VERSION_PARAMETER: &str = "version";
/// The parameter holding a layout's seed (what `{layout}` stood for when it was built).
pub const LAYOUT_PARAMETER: &str = "layout";

/// Which commands are the layouts of which version; the first version is the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layouts {
    /// The versions, baseline first.
    pub versions: Vec<LayoutVersion>,
}

/// One version (a build of one source) and the commands that run its layouts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutVersion {
    /// The version's name (its build's: `v3`).
    pub name: String,
    /// Indices of the commands, one per layout.
    pub commands: Vec<usize>,
    /// The layout seed each command's binary was built with (`{layout}`).
    pub seeds: Vec<u64>,
}

impl Layouts {
    /// The layouts of commands that carry the [`VERSION_PARAMETER`] and
    /// [`LAYOUT_PARAMETER`] parameters (as stored), in the order versions first appear;
    /// None unless every command has both and every version has at least two layouts.
    pub fn from_parameters<'a>(commands: impl IntoIterator<Item = &'a BTreeMap<String, String>>) -> Option<Layouts> {
        let mut versions: Vec<LayoutVersion> = Vec::new();
        for (index, parameters) in commands.into_iter().enumerate() {
            let name = parameters.get(VERSION_PARAMETER)?;
            let seed = parameters.get(LAYOUT_PARAMETER)?.parse().ok()?;
            match versions.iter_mut().find(|v| &v.name == name) {
                Some(v) => {
                    v.commands.push(index);
                    v.seeds.push(seed);
                }
                None => versions.push(LayoutVersion { name: name.clone(), commands: vec![index], seeds: vec![seed] }),
            }
        }
        (!versions.is_empty() && versions.iter().all(|v| v.commands.len() >= 2)).then_some(Layouts { versions })
    }

    /// The version whose layouts include command `index`.
    pub fn version_of(&self, index: usize) -> Option<&LayoutVersion> {
        self.versions.iter().find(|v| v.commands.contains(&index))
    }

    /// The parameters a layout's command carries: its version and seed.
    pub fn parameters(version: &str, seed: u64) -> BTreeMap<String, String> {
        BTreeMap::from([
            (VERSION_PARAMETER.to_string(), version.to_string()),
            (LAYOUT_PARAMETER.to_string(), seed.to_string()),
        ])
    }
}

/// What the layouts' runs say on one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutAnalysis {
    /// The metric the layouts were analysed on (the experiment's primary).
    pub metric: String,
    /// Rounds in which every layout of every version ran (the ones analysed).
    pub rounds: usize,
    /// Robust σ of one run around its layout's own level (log scale ≈ a fraction): the
    /// noise more rounds average away.
    #[serde(deserialize_with = "null_as_nan")]
    pub run_sigma: f64,
    /// σ of the layout effect pooled over the versions (log scale ≈ a fraction): how much
    /// relinking the same source moves this metric, the runs' own noise taken out.
    #[serde(deserialize_with = "null_as_nan")]
    pub spread: f64,
    /// Each version's layouts, baseline first.
    pub versions: Vec<VersionLayouts>,
    /// Each candidate version against the baseline version: how much of the interval's
    /// width layouts account for.
    pub contrasts: Vec<LayoutContrast>,
    /// With `--layouts auto`: the pairs of layouts measured, the rounds each got and why
    /// the layouts stopped; None with `--layouts N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoLayouts>,
}

/// `--layouts auto`: layouts added a pair at a time (one per version, measured in their own
/// block of interleaved rounds) until the verdict was decided or the budget ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoLayouts {
    /// Why no more layouts were added.
    pub stop: AutoStop,
    /// The time budget (`--max-time`, seconds): builds and rounds together.
    pub max_time_s: f64,
    /// The layouts budget (`--max-layouts`, per version).
    pub max_layouts: usize,
    /// Variance of one pair's log ratio from layouts (2τ²: a layout of each version).
    #[serde(deserialize_with = "null_as_nan")]
    pub between_variance: f64,
    /// Variance of one round's log ratio within a pair (the runs' own noise; what one
    /// more round per pair averages away).
    #[serde(deserialize_with = "null_as_nan")]
    pub round_variance: f64,
    /// Seconds of build a new pair cost on average (0 when every layout came from the cache).
    pub build_s_per_pair: f64,
    /// Seconds a pair cost on average outside its builds and rounds (planning, starting
    /// the measurement, the cache's keys).
    #[serde(default)]
    pub overhead_s_per_pair: f64,
    /// Seconds of one measured round of a pair, on average.
    pub round_s: f64,
    /// The rounds the next pair would have got: √(round variance × a pair's fixed cost ÷
    /// (between variance × a round's cost)), within its bounds.
    pub next_rounds: u32,
    /// With an undecided verdict and an interval: the change ruled out, as ratios — the
    /// interval across the layouts measured (layouts included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ruled_out_beyond: Option<(f64, f64)>,
    /// Undecided: what would decide at the spread and estimate seen, and when the budget
    /// was first seen not to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<AutoProjection>,
    /// Layouts reused from the build cache (not rebuilt).
    #[serde(default)]
    pub cached: usize,
    /// Every pair, in the order measured.
    pub pairs: Vec<LayoutPair>,
}

/// What an undecided `--layouts auto` projects from its pairs: the layouts that would
/// decide if the pairs went on as they have (a point projection at the estimate and the
/// looks' levels: about even odds of deciding there), and what was said when a look first
/// projected past the budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutoProjection {
    /// Layouts of each version in all at the look that would decide; None: more than
    /// 100,000, or the estimate sits where no number decides.
    pub layouts: Option<usize>,
    /// Seconds the layouts still to measure would take at the pace measured.
    pub seconds: Option<f64>,
    /// The first look whose projection was past the budget (said then on stderr); None
    /// when every look until the end projected a decision within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beyond_budget: Option<BudgetReach>,
}

/// What the whole budget could still tell from layout, as seen at a look.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BudgetReach {
    /// Pairs measured then.
    pub at_pairs: usize,
    /// Seconds spent then.
    pub at_s: f64,
    /// Layouts of each version the budget would measure in all, at the pace then.
    pub budget_layouts: usize,
    /// The smallest change (either way, as a fraction) those layouts would tell from
    /// layout at even odds, at the spread then.
    pub resolves: f64,
    /// The same at 90 % odds.
    pub resolves_90: f64,
}

/// Why `--layouts auto` added no more layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoStop {
    /// The verdict was decided (a real change, or no change).
    Decided,
    /// `--max-time` would have been passed by one more pair.
    MaxTime,
    /// `--max-layouts` were measured.
    MaxLayouts,
    /// Interrupted (Ctrl-C) or a command failed: the pairs measured so far are kept.
    Stopped,
}

impl AutoStop {
    /// The words for it.
    pub fn as_str(self) -> &'static str {
        match self {
            AutoStop::Decided => "decided",
            AutoStop::MaxTime => "--max-time reached",
            AutoStop::MaxLayouts => "--max-layouts reached",
            AutoStop::Stopped => "stopped",
        }
    }
}

/// One pair of layouts of `--layouts auto`: a layout of the baseline and one of the
/// candidate, measured in the same interleaved rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutPair {
    /// The baseline layout's seed.
    pub baseline_seed: u64,
    /// The candidate layout's seed.
    pub candidate_seed: u64,
    /// Measured rounds (warm-up excluded) with a value from both.
    pub rounds: u32,
    /// exp(Hodges–Lehmann of the rounds' log ratios): this pair's candidate ÷ baseline.
    #[serde(deserialize_with = "null_as_nan")]
    pub ratio: f64,
    /// Seconds spent building its two layouts (0 when both came from the cache).
    pub build_s: f64,
    /// Seconds the pair took, builds included.
    pub elapsed_s: f64,
    /// Its warm-up rounds (the first pair's; later pairs follow one that just ran).
    #[serde(default)]
    pub warmup_rounds: u32,
}

/// One version's layouts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionLayouts {
    /// The version's name (its build's).
    pub name: String,
    /// σ of the layout effect among this version's layouts (log scale ≈ a fraction).
    #[serde(deserialize_with = "null_as_nan")]
    pub spread: f64,
    /// Its layouts, in command order.
    pub layouts: Vec<LayoutLevel>,
}

/// One layout: its command, seed and level relative to its version's mean level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutLevel {
    /// The command that ran this layout (its name).
    pub command: String,
    /// The layout seed its binary was built with (`{layout}`).
    pub seed: u64,
    /// exp(this layout's location − the version's mean location): 1.02 is 2 % above the
    /// version's average layout.
    #[serde(deserialize_with = "null_as_nan")]
    pub relative: f64,
}

/// A version against the baseline version across layouts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutContrast {
    /// The baseline version's name.
    pub baseline: String,
    /// The candidate version's name.
    pub candidate: String,
    /// Degrees of freedom of the interval (layouts of both − 2).
    pub df: f64,
    /// Share of the ratio's variance from layouts rather than the runs' own noise: near
    /// 1, more rounds cannot narrow the interval, only more layouts can.
    #[serde(deserialize_with = "null_as_nan")]
    pub layout_share: f64,
    /// The verdict is inconclusive and layouts dominate its uncertainty: the difference
    /// is one that relinking alone produces.
    pub within_layout_noise: bool,
    /// What the comparison says once layouts are counted, in one word (see
    /// [`LayoutReading`]); older files have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<LayoutReading>,
    /// With [`LayoutReading::NotYetToldFromLayout`]: the layouts per version that would
    /// decide at this spread (the interval narrows as 1/√layouts when layouts dominate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layouts_to_decide: Option<usize>,
}

/// A comparison across layouts, read: a real change, no change, or not yet told apart
/// from what a relink moves — three statements a reader must not confuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutReading {
    /// The whole interval, layouts included, is beyond 1×: a change relinking does not make.
    RealChange,
    /// The whole interval, layouts included, is within ±threshold.
    NoChange,
    /// The interval holds 1× and layouts dominate it: more layouts, not more rounds, decide.
    NotYetToldFromLayout,
    /// Undecided for another reason (too few rounds or layouts for an interval).
    Undecided,
}

/// A layout spread measured earlier on a machine (a stored layout experiment): what a
/// comparison of one build per version is checked against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutSpread {
    /// The benchmark (or `compare`'s commands) the spread was measured on.
    pub benchmark: String,
    /// The file name of the program the layouts ran (`prog` of `out/v3-123/prog`): the
    /// program kind a later comparison is matched by.
    pub program: String,
    /// The metric the spread is of.
    pub metric: String,
    /// σ of the layout effect (log scale ≈ a fraction).
    pub spread: f64,
    /// When the layout experiment was stored (UTC, as the store writes times).
    pub measured_at: String,
}

impl LayoutSpread {
    /// The program kind a layout spread is matched by: the program's file name (`prog`
    /// of `out/v3-123/prog`), the same for every build and layout of one program.
    pub fn program_kind(program: &str) -> String {
        std::path::Path::new(program)
            .file_name()
            .map_or_else(|| program.to_string(), |n| n.to_string_lossy().into_owned())
    }
}

impl LayoutAnalysis {
    /// The version named `name`.
    pub fn version(&self, name: &str) -> Option<&VersionLayouts> {
        self.versions.iter().find(|v| v.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_read_back_from_the_commands_parameters() {
        let commands: Vec<BTreeMap<String, String>> =
            [("a", 11), ("a", 12), ("b", 21), ("b", 22)].iter().map(|(v, s)| Layouts::parameters(v, *s)).collect();
        let layouts = Layouts::from_parameters(&commands).unwrap();
        assert_eq!(layouts.versions.len(), 2);
        assert_eq!(
            (layouts.versions[1].commands.as_slice(), layouts.versions[1].seeds.as_slice()),
            (&[2, 3][..], &[21, 22][..])
        );
        assert_eq!(layouts.version_of(1).unwrap().name, "a");
        // A command without the parameters, or a version of one layout: no layouts.
        let mut partial = commands.clone();
        partial[3].clear();
        assert_eq!(Layouts::from_parameters(&partial), None);
        assert_eq!(Layouts::from_parameters(&commands[1..]), None);
    }
}
