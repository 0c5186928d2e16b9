//! The progress display on stderr: rounds, elapsed time against the limit, and the
//! latest interval per candidate. Updated between runs only — no ticker thread — so
//! the harness stays idle while a command runs.

use crate::experiment::{Observer, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct ProgressDisplay {
    bar: ProgressBar,
    /// With a fixed round count the bar counts rounds (and shows an ETA); otherwise it
    /// fills with time against `--max-time`, the latest the experiment can stop.
    fixed_rounds: bool,
}

impl ProgressDisplay {
    /// Hidden when stderr is not a terminal or `hidden`.
    pub fn new(settings: &crate::model::Settings, hidden: bool) -> Self {
        let target = if hidden { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() };
        let (bar, template) = match settings.fixed_rounds {
            Some(n) => (
                ProgressBar::with_draw_target(Some(n as u64), target),
                "{bar:24} {pos}/{len} rounds, ETA {eta} {msg}".to_string(),
            ),
            None => (
                ProgressBar::with_draw_target(Some((settings.max_time_s * 10.0) as u64), target),
                format!("{{bar:24}} {{elapsed}} (stops by {:.0}s at the latest) {{msg}}", settings.max_time_s),
            ),
        };
        bar.set_style(ProgressStyle::with_template(&template).expect("valid template"));
        ProgressDisplay { bar, fixed_rounds: settings.fixed_rounds.is_some() }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Observer for ProgressDisplay {
    fn round_finished(&mut self, p: &Progress) {
        if self.fixed_rounds {
            self.bar.set_position(p.rounds as u64);
        } else {
            self.bar.set_position((p.elapsed.as_secs_f64() * 10.0) as u64);
        }
        if p.warmup {
            self.bar.set_message("warming up");
            return;
        }
        let mut msg = format!("round {}", p.rounds);
        for c in &p.latest {
            if c.ci_high.is_finite() {
                msg.push_str(&format!(
                    " · {} {:.3} [{:.3}, {:.3}] {}",
                    c.candidate,
                    c.ratio,
                    c.ci_low,
                    c.ci_high,
                    c.verdict.as_str()
                ));
            }
        }
        self.bar.set_message(msg);
    }
}
