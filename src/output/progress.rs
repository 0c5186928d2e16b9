//! The progress display on stderr: rounds, elapsed time against the limit, and the
//! latest interval per candidate. Updated between runs only — no ticker thread — so
//! the harness stays idle while a command runs.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use perflab_engine::experiment::{Observer, Progress};
use perflab_engine::plan::Plan;

pub struct ProgressDisplay {
    hidden: bool,
    /// Made when an experiment starts, cleared when it ends.
    bar: Option<ProgressBar>,
    /// With a fixed round count the bar counts rounds (and shows an ETA); otherwise it
    /// fills with time against `--max-time`, the latest the experiment can stop.
    fixed_rounds: bool,
    /// The equivalence margin, for what a budget can reach.
    threshold: f64,
}

impl ProgressDisplay {
    /// A display for the experiments to come (one at a time); drawn on stderr unless
    /// `hidden` (the commands pass `--no-progress`, a `--style` or stderr not being a terminal).
    pub fn new(hidden: bool) -> Self {
        ProgressDisplay { hidden, bar: None, fixed_rounds: false, threshold: 0.01 }
    }

    fn bar_for(settings: &perflab_model::Settings, hidden: bool) -> ProgressBar {
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
        // The templates are constants of this file; a bad one would only lose the bar.
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style);
        }
        bar
    }
}

impl Observer for ProgressDisplay {
    fn experiment_started(&mut self, plan: &Plan) {
        self.fixed_rounds = plan.settings.fixed_rounds.is_some();
        self.threshold = plan.settings.threshold;
        self.bar = Some(Self::bar_for(&plan.settings, self.hidden));
    }

    fn experiment_finished(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    fn round_finished(&mut self, p: &Progress) {
        let Some(bar) = &self.bar else { return };
        if self.fixed_rounds {
            bar.set_position(p.rounds as u64);
        } else {
            bar.set_position((p.elapsed.as_secs_f64() * 10.0) as u64);
        }
        if p.warmup {
            bar.set_message("warming up");
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
        bar.set_message(msg);
    }

    /// Said before the rounds go on, whether or not the bar is drawn.
    fn promised(&mut self, promise: &perflab_model::Promise) {
        let threshold = self.threshold;
        let line = format!("perflab: {}", perflab_render::terminal::promise_line(promise, threshold));
        match &self.bar {
            Some(bar) if !self.hidden => bar.println(line),
            _ => eprintln!("{line}"),
        }
    }
}
