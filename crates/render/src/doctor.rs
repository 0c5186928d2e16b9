//! `perflab doctor` on the terminal: the machine's findings with their fixes, and a
//! command's calibration (its noise and what it resolves in 10, 30 and 60 s).

use super::color::{bold, dim, green, yellow};
use super::terminal::escape;
use perflab_engine::doctor::{self, Finding, Report, Status};
use perflab_model::units::format_seconds;
use perflab_model::{Calibration, Experiment, WarningKind};

/// The heading and one line per finding (plus its fix).
pub fn findings(report: &Report) -> String {
    let machine = report.machine.describe(&report.fingerprint);
    let mut out = format!("{} {}\n", bold("perflab doctor —"), escape(&machine));
    out.push_str(&finding_lines(&report.findings));
    out
}

fn finding_lines(findings: &[Finding]) -> String {
    let width = findings.iter().map(|f| f.check.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for f in findings {
        let status = match f.status {
            Status::Ok => green("ok  "),
            Status::Info => dim("info"),
            Status::Warn => yellow("warn"),
        };
        out.push_str(&format!(" {status}  {:width$}  {}\n", f.check, f.finding));
        if let Some(fix) = &f.fix {
            out.push_str(&format!("       {:width$}  {}\n", "", dim(&format!("fix: {fix}"))));
        }
    }
    out
}

/// The calibration of `e`: its noise, what it resolves per time budget, the rounds an
/// `effect` (a fraction) needs, and any busy-machine warning.
pub fn calibration(c: &Calibration, e: &Experiment, effect: f64) -> String {
    let pct = |x: f64| format!("{:.2} %", x * 100.0);
    let mut out = format!(
        "\n{} `{}`: {} A/A rounds in {:.1} s ({} per round), on {}\n",
        bold("calibration of"),
        escape(&c.command_line),
        c.rounds,
        e.duration_s,
        format_seconds(c.round_s),
        c.metric
    );
    out.push_str(&format!("  round-to-round noise: {} (robust σ of the paired ratio)", pct(c.paired_sigma)));
    if let Some(busy) = c.busy_share {
        out.push_str(&format!("; runs waited for a CPU {:.0} % of their wall time", busy * 100.0));
    }
    out.push('\n');
    for r in &c.resolution {
        match (r.detectable_effect, r.equivalence_margin) {
            (Some(detect), Some(margin)) => out.push_str(&format!(
                "  within {:>2.0} s ({} rounds): detects {} (in 80 % of comparisons); confirms `equivalent` for --threshold ≥ {}\n",
                r.budget_s,
                r.rounds,
                pct(detect),
                pct(margin)
            )),
            _ => out.push_str(&format!(
                "  within {:>2.0} s ({} rounds): too few rounds for any interval\n",
                r.budget_s, r.rounds
            )),
        }
    }
    match doctor::rounds_for_effect(c.paired_sigma, c.round_s, effect) {
        Some(n) => out.push_str(&format!(
            "  a {} effect needs {n} rounds ({:.1} s) with compare's defaults\n",
            pct(effect),
            n as f64 * c.round_s
        )),
        None => out.push_str(&format!(
            "  a {} effect needs more than compare's 60 s here: raise --max-time, lengthen the runs or quiet the machine\n",
            pct(effect)
        )),
    }
    for w in e.warnings.iter().filter(|w| w.kind == WarningKind::Busy) {
        out.push_str(&format!("  {}\n", yellow(&escape(&w.message))));
    }
    out
}
