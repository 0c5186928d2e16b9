//! How every rendering of an experiment lays out its numbers: the time unit (hyperfine's
//! `--time-unit`, automatic by default), the order of the commands (`--sort`) and the
//! width terminal tables must fit.

use perflab_model::units::{format_seconds, format_value};
use perflab_model::{metric, Experiment};

/// A fixed unit for times (`--time-unit`); `None` in [`Style`] picks one per value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// µs.
    Microsecond,
    /// ms.
    Millisecond,
    /// s.
    Second,
}

impl TimeUnit {
    /// The units as `--time-unit` spells them.
    pub const NAMES: [&'static str; 3] = ["microsecond", "millisecond", "second"];

    /// The unit `--time-unit NAME` means; None for an unknown name.
    pub fn named(name: &str) -> Option<TimeUnit> {
        match name {
            "microsecond" => Some(TimeUnit::Microsecond),
            "millisecond" => Some(TimeUnit::Millisecond),
            "second" => Some(TimeUnit::Second),
            _ => None,
        }
    }

    /// The unit's symbol, as in table headers (`Mean [ms]`).
    pub fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Microsecond => "µs",
            TimeUnit::Millisecond => "ms",
            TimeUnit::Second => "s",
        }
    }

    fn per_second(self) -> f64 {
        match self {
            TimeUnit::Microsecond => 1e6,
            TimeUnit::Millisecond => 1e3,
            TimeUnit::Second => 1.0,
        }
    }

    /// `seconds` in this unit, without the symbol (hyperfine's precision: 1 µs, 0.01 ms, 0.001 s).
    pub fn number(self, seconds: f64) -> String {
        let v = seconds * self.per_second();
        match self {
            TimeUnit::Microsecond => format!("{v:.1}"),
            TimeUnit::Millisecond => format!("{v:.2}"),
            TimeUnit::Second => format!("{v:.3}"),
        }
    }

    /// The unit that reads best for `seconds` (what hyperfine picks from the first mean).
    pub(crate) fn for_value(seconds: f64) -> TimeUnit {
        if seconds.abs() >= 1.0 {
            TimeUnit::Second
        } else if seconds.abs() >= 1e-3 {
            TimeUnit::Millisecond
        } else {
            TimeUnit::Microsecond
        }
    }
}

/// The order commands are listed in (`--sort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    /// As given (the baseline first); hyperfine's `auto` orders its tables so too.
    #[default]
    Auto,
    /// By command name.
    Command,
    /// By mean wall time (of the primary metric when wall time was not measured), fastest first.
    MeanTime,
}

impl SortOrder {
    /// The orders as `--sort` spells them.
    pub const NAMES: [&'static str; 3] = ["auto", "command", "mean-time"];

    /// The order `--sort NAME` means; None for an unknown name.
    pub fn named(name: &str) -> Option<SortOrder> {
        match name {
            "auto" => Some(SortOrder::Auto),
            "command" => Some(SortOrder::Command),
            "mean-time" => Some(SortOrder::MeanTime),
            _ => None,
        }
    }
}

/// Layout choices shared by every rendering of an experiment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Style {
    /// `--time-unit`; None: a unit per value.
    pub time_unit: Option<TimeUnit>,
    /// `--sort`: the order of the commands in tables.
    pub sort: SortOrder,
    /// The width terminal tables fit (`None`: no limit; see `render::table::width`).
    pub width: Option<usize>,
}

impl Style {
    /// A time with its unit: in `--time-unit` when given, else the most readable one.
    pub fn seconds(&self, seconds: f64) -> String {
        match self.time_unit {
            Some(unit) => format!("{} {}", unit.number(seconds), unit.symbol()),
            None => format_seconds(seconds),
        }
    }

    /// A metric's value with its unit; times follow [`Style::seconds`].
    pub fn value(&self, name: &str, v: f64) -> String {
        match metric::to_seconds(metric::unit(name)) {
            Some(per) if self.time_unit.is_some() => self.seconds(v * per),
            _ => format_value(name, v),
        }
    }

    /// The indices of `e`'s commands in display order.
    pub fn order(&self, e: &Experiment) -> Vec<usize> {
        let mut order: Vec<usize> = (0..e.commands.len()).collect();
        if self.sort == SortOrder::MeanTime {
            let key = if e.commands.iter().any(|c| c.summary.contains_key(metric::WALL)) {
                metric::WALL
            } else {
                e.primary_metric.as_str()
            };
            let mean = |i: usize| e.commands[i].summary.get(key).map_or(f64::INFINITY, |s| s.mean);
            order.sort_by(|&a, &b| mean(a).total_cmp(&mean(b)));
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_unit_is_used_for_every_time_and_only_for_times() {
        let ms = Style { time_unit: Some(TimeUnit::Millisecond), ..Style::default() };
        assert_eq!(ms.seconds(1.5), "1500.00 ms");
        assert_eq!(ms.value(metric::WALL, 0.0123), "12.30 ms");
        assert_eq!(ms.value(metric::MAX_RSS, 2048.0), format_value(metric::MAX_RSS, 2048.0));
        assert_eq!(Style::default().seconds(0.0123), format_seconds(0.0123));
        assert_eq!(TimeUnit::Microsecond.number(0.0000123), "12.3");
        assert_eq!(TimeUnit::for_value(0.3), TimeUnit::Millisecond);
    }
}
