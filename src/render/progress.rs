//! The progress display on stderr: rounds, elapsed time against the limit, and the
//! latest interval per candidate. Updated between runs only — no ticker thread — so
//! the harness stays idle while a command runs.

use crate::compare::{Observer, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct ProgressDisplay {
    bar: ProgressBar,
}

impl ProgressDisplay {
    /// A bar over the time budget; hidden when stderr is not a terminal or `hidden`.
    pub fn new(max_time_s: f64, hidden: bool) -> Self {
        let bar = ProgressBar::with_draw_target(
            Some((max_time_s * 10.0) as u64),
            if hidden { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() },
        );
        bar.set_style(
            ProgressStyle::with_template("{bar:24} {elapsed:>4} of ≤{len_s} {msg}")
                .expect("valid template")
                .with_key("len_s", move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{max_time_s:.0}s");
                }),
        );
        ProgressDisplay { bar }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Observer for ProgressDisplay {
    fn round_finished(&mut self, p: &Progress) {
        self.bar.set_position((p.elapsed.as_secs_f64() * 10.0) as u64);
        if p.warmup {
            self.bar.set_message("warming up");
            return;
        }
        let mut msg = format!("round {}", p.rounds);
        for c in &p.latest {
            if c.ci_high.is_finite() {
                msg.push_str(&format!(" · {} {:.3} [{:.3}, {:.3}] {}", c.candidate, c.ratio, c.ci_low, c.ci_high, c.verdict.as_str()));
            }
        }
        self.bar.set_message(msg);
    }
}
