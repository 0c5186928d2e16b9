//! Hand-written SVG building blocks for the HTML report: scales, ticks, number formats.
//!
//! Why no plotting crate: the report's charts are a forest plot and small line charts,
//! a few hundred lines of SVG text. Plotting crates (plotters and friends) bring font
//! loading and raster backends we do not need, and their SVG output embeds fonts or
//! draws text as paths, which breaks the browser's text selection, search and
//! `<title>` tooltips we rely on.

use std::borrow::Cow;

/// Shorten a label for display to `max_chars` characters, ending in an ellipsis.
/// The full name stays available in the element's `<title>` tooltip.
pub fn truncate(text: &str, max_chars: usize) -> Cow<'_, str> {
    if text.chars().count() <= max_chars {
        return Cow::Borrowed(text);
    }
    let kept: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    Cow::Owned(kept + "…")
}

/// A logarithmic mapping from ratios to pixels, so that 0.5× and 2× lie at equal
/// distances from 1×.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LogScale {
    ln_lo: f64,
    ln_hi: f64,
    px_lo: f64,
    px_hi: f64,
}

impl LogScale {
    /// A scale covering every value in `values` and 1.0, padded by 5 % of the range
    /// on each side. Non-finite or non-positive values are ignored.
    pub fn covering(values: impl IntoIterator<Item = f64>, px_lo: f64, px_hi: f64) -> LogScale {
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for v in values {
            if v.is_finite() && v > 0.0 {
                lo = lo.min(v.ln());
                hi = hi.max(v.ln());
            }
        }
        // At least ±1 % so an all-equal suite still gets a readable axis.
        lo = lo.min(-0.01);
        hi = hi.max(0.01);
        let pad = (hi - lo) * 0.05;
        LogScale { ln_lo: lo - pad, ln_hi: hi + pad, px_lo, px_hi }
    }

    pub(crate) fn domain(&self) -> (f64, f64) {
        (self.ln_lo.exp(), self.ln_hi.exp())
    }

    /// Pixel position of `ratio`, clamped to the plot area.
    pub fn px(&self, ratio: f64) -> f64 {
        let ln = if ratio > 0.0 && ratio.is_finite() {
            ratio.ln()
        } else if ratio > 0.0 {
            self.ln_hi
        } else {
            self.ln_lo
        };
        let t = ((ln - self.ln_lo) / (self.ln_hi - self.ln_lo)).clamp(0.0, 1.0);
        self.px_lo + t * (self.px_hi - self.px_lo)
    }

    /// Tick ratios inside the domain at least `min_gap_px` apart; 1× is always one.
    pub fn ticks(&self, min_gap_px: f64) -> Vec<f64> {
        const CANDIDATES: [f64; 37] = [
            0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 0.6, 0.67, 0.75, 0.8, 0.85, 0.9, 0.95, 0.97, 0.98, 0.99, 1.0, 1.01,
            1.02, 1.03, 1.05, 1.1, 1.15, 1.2, 1.25, 1.33, 1.5, 1.75, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0, 50.0, 100.0,
        ];
        let (lo, hi) = self.domain();
        let inside: Vec<f64> = CANDIDATES.iter().copied().filter(|&t| t >= lo && t <= hi).collect();
        // Walk outwards from 1× so the ticks nearest to "no change" survive thinning.
        let mut kept = vec![1.0];
        for side in [inside.iter().filter(|&&t| t > 1.0).copied().collect::<Vec<_>>(), {
            let mut below: Vec<f64> = inside.iter().filter(|&&t| t < 1.0).copied().collect();
            below.reverse();
            below
        }] {
            let mut last = self.px(1.0);
            for t in side {
                if (self.px(t) - last).abs() >= min_gap_px {
                    last = self.px(t);
                    kept.push(t);
                }
            }
        }
        kept.sort_by(f64::total_cmp);
        kept
    }
}

/// A linear mapping for the history charts' value axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LinearScale {
    lo: f64,
    hi: f64,
    px_lo: f64,
    px_hi: f64,
}

impl LinearScale {
    /// A scale from "nice" bounds around `values` (the `px_lo` end is the low value;
    /// pass `px_lo` > `px_hi` for a y axis growing upwards).
    pub fn covering(values: impl IntoIterator<Item = f64>, px_lo: f64, px_hi: f64) -> LinearScale {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        if hi - lo <= hi.abs() * 1e-9 {
            let half = if hi == 0.0 { 1.0 } else { hi.abs() * 0.05 };
            (lo, hi) = (lo - half, hi + half);
        }
        let step = nice_step((hi - lo) / 4.0);
        LinearScale { lo: (lo / step).floor() * step, hi: (hi / step).ceil() * step, px_lo, px_hi }
    }

    pub fn px(&self, value: f64) -> f64 {
        let t = ((value - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0);
        self.px_lo + t * (self.px_hi - self.px_lo)
    }

    /// About `count` evenly spaced ticks on 1-2-5 steps.
    pub fn ticks(&self, count: usize) -> Vec<f64> {
        let step = nice_step((self.hi - self.lo) / count.max(1) as f64);
        let first = (self.lo / step).ceil();
        let last = (self.hi / step).floor();
        // A range too wide for its step (values near ±f64::MAX overflow hi − lo) gets
        // its two ends as ticks rather than billions of them.
        if !(first.is_finite() && last.is_finite()) || last - first > 4.0 * count.max(1) as f64 {
            return [self.lo, self.hi].into_iter().filter(|v| v.is_finite()).collect();
        }
        (first as i64..=last as i64).map(|i| i as f64 * step).collect()
    }
}

/// The smallest 1, 2 or 5 × 10^k at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|&s| s >= raw * (1.0 - 1e-9)).unwrap_or(10.0 * magnitude)
}

/// A ratio as a signed percentage change: `+5.2 %`, `−10 %`; a change below 0.05 % keeps
/// the digits that show its sign (`−0.03 %`), and no change at all is `0 %` — never
/// `±0.0 %`, which reads as an uncertainty.
pub(crate) fn format_change(ratio: f64) -> String {
    if !ratio.is_finite() {
        return "n/a".into();
    }
    let pct = (ratio - 1.0) * 100.0;
    let magnitude = pct.abs();
    let body = if magnitude == 0.0 {
        String::new()
    } else if magnitude >= 10.0 {
        format!("{magnitude:.0}")
    } else if magnitude >= 0.05 {
        format!("{magnitude:.1}")
    } else {
        // Two significant digits, down to 0.0001 %; below that it is no change to print.
        let decimals = (1.0 - magnitude.log10().floor()).clamp(1.0, 4.0) as usize;
        format!("{magnitude:.decimals$}")
    };
    if body.trim_start_matches(['0', '.']).is_empty() {
        return "0 %".into();
    }
    let sign = if pct < 0.0 { "−" } else { "+" };
    format!("{sign}{body} %")
}

/// A measured value in its metric's unit with an SI prefix for seconds (`1.23 ms`).
pub fn format_value(value: f64, unit: &str) -> String {
    format_value_with(value, unit, 0)
}

/// Labels for an axis's ticks: as [`format_value`], with as many more digits as it takes
/// (up to three) for neighbouring ticks not to read alike (226 ms, 226.5 ms, 227 ms).
pub(crate) fn tick_labels(ticks: &[f64], unit: &str) -> Vec<String> {
    let labels = |extra: i32| ticks.iter().map(|&t| format_value_with(t, unit, extra)).collect::<Vec<_>>();
    (0..=3).map(labels).find(|l| l.windows(2).all(|w| w[0] != w[1])).unwrap_or_else(|| labels(0))
}

/// [`format_value`] with `extra` significant digits more than usual.
fn format_value_with(value: f64, unit: &str, extra: i32) -> String {
    if !value.is_finite() {
        return "n/a".into();
    }
    if unit == "s" {
        let abs = value.abs();
        let (scaled, prefix) = if abs == 0.0 || abs >= 1.0 {
            (value, "")
        } else if abs >= 1e-3 {
            (value * 1e3, "m")
        } else if abs >= 1e-6 {
            (value * 1e6, "µ")
        } else {
            (value * 1e9, "n")
        };
        return format!("{} {prefix}s", significant(scaled, 3 + extra));
    }
    let text = if value.abs() >= 10_000.0 { grouped(value.round()) } else { significant(value, 4 + extra) };
    if unit.is_empty() {
        text
    } else {
        format!("{text} {unit}")
    }
}

/// An integral value with thousands separators: counts like 274,220,941 stay readable.
fn grouped(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if value < 0.0 {
        out.push('-');
    }
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `value` with about `digits` significant digits and no trailing zeros; large values
/// keep every integer digit.
fn significant(value: f64, digits: i32) -> String {
    if value == 0.0 {
        return "0".into();
    }
    let int_digits = value.abs().log10().floor() as i32 + 1;
    let decimals = (digits - int_digits).max(0) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// `n` as a coordinate with at most one decimal: SVG size matters for 1,000-row charts.
pub fn num(n: f64) -> String {
    // In tenths as an integer: formatting a float with a precision costs several times
    // more, and a report writes a few hundred thousand coordinates.
    let tenths = (n * 10.0).round() as i64;
    let sign = if tenths < 0 { "-" } else { "" };
    let (whole, tenth) = (tenths.unsigned_abs() / 10, tenths.unsigned_abs() % 10);
    if tenth == 0 {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{tenth}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_short_names_and_marks_cut_ones() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("abcdefghijkl", 6), "abcde…");
        assert_eq!(truncate("ééééé", 3).chars().count(), 3);
    }

    #[test]
    fn log_scale_is_symmetric_around_one() {
        let s = LogScale::covering([0.5, 2.0], 0.0, 100.0);
        let mid = s.px(1.0);
        assert!((mid - 50.0).abs() < 1e-9, "1x at the middle, got {mid}");
        assert!((s.px(2.0) - mid - (mid - s.px(0.5))).abs() < 1e-9);
        assert!(s.px(0.5) > 0.0 && s.px(2.0) < 100.0, "padding keeps the extremes inside");
    }

    #[test]
    fn log_scale_clamps_and_survives_bad_values() {
        let s = LogScale::covering([f64::NAN, -1.0, 0.0, 1.2], 10.0, 110.0);
        let (lo, hi) = s.domain();
        assert!(lo < 1.0 && hi > 1.2);
        assert_eq!(s.px(1e9), 110.0);
        assert_eq!(s.px(0.0), 10.0);
        assert_eq!(s.px(f64::INFINITY), 110.0);
        assert_eq!(s.px(f64::NAN), 10.0);
    }

    #[test]
    fn log_ticks_include_one_and_respect_spacing() {
        let s = LogScale::covering([0.6, 1.7], 0.0, 600.0);
        let ticks = s.ticks(40.0);
        assert!(ticks.contains(&1.0));
        assert!(ticks.len() >= 3, "{ticks:?}");
        for pair in ticks.windows(2) {
            assert!(s.px(pair[1]) - s.px(pair[0]) >= 40.0 - 1e-9, "{ticks:?}");
        }
        let (lo, hi) = s.domain();
        assert!(ticks.iter().all(|&t| t >= lo && t <= hi));
    }

    #[test]
    fn linear_scale_has_nice_bounds_and_ticks() {
        let s = LinearScale::covering([0.0123, 0.0187], 100.0, 0.0);
        let ticks = s.ticks(4);
        assert!(ticks.len() >= 3 && ticks.len() <= 9, "{ticks:?}");
        assert!(s.px(0.0123) <= 100.0 && s.px(0.0187) >= 0.0);
        assert!(s.px(0.0187) < s.px(0.0123), "y grows upwards");
        let flat = LinearScale::covering([2.0, 2.0], 0.0, 10.0);
        assert!(flat.px(2.0) > 0.0 && flat.px(2.0) < 10.0);
    }

    #[test]
    fn formats_ratios_changes_and_values() {
        assert_eq!(format_change(1.052), "+5.2 %");
        assert_eq!(format_change(0.75), "−25 %");
        assert_eq!(format_change(1.0), "0 %");
        assert_eq!(format_change(0.9997), "−0.030 %");
        assert_eq!(format_change(1.00004), "+0.0040 %");
        assert_eq!(format_change(1.0000001), "0 %");
        assert_eq!(format_value(0.001234, "s"), "1.23 ms");
        assert_eq!(format_value(2.5e-6, "s"), "2.5 µs");
        assert_eq!(format_value(12345.0, "KiB"), "12,345 KiB");
        assert_eq!(format_value(274220941.4, ""), "274,220,941");
        assert_eq!(format_value(-1234567.0, ""), "-1,234,567");
        assert_eq!(format_value(4096.0, "KiB"), "4096 KiB");
        assert_eq!(format_value(f64::NAN, ""), "n/a");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(12.0), "12");
        assert_eq!(tick_labels(&[0.226, 0.2265, 0.227], "s"), ["226 ms", "226.5 ms", "227 ms"]);
        assert_eq!(tick_labels(&[0.2, 0.4], "s"), ["200 ms", "400 ms"]);
        assert_eq!(
            (num(-0.26), num(-0.04), num(-7.0), num(0.95)),
            ("-0.3".into(), "0".into(), "-7".into(), "1".into())
        );
    }
}
