//! Numbers with units, both ways: what people type (durations, percentages) parsed and
//! bounded at the edge, so nothing past it meets an infinite, negative or overflowing
//! value; and what people read (seconds, sizes, counts, percentages, p-values) formatted
//! one way everywhere.

/// The longest duration accepted anywhere (a week): far beyond any sensible benchmark,
/// well inside what `std::time::Duration` and timestamps can hold.
pub(crate) const MAX_DURATION_S: f64 = 7.0 * 24.0 * 3600.0;

/// What is wrong with a number the user typed; each message quotes the text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// The text is not a number with an optional unit (`us`, `ms`, `s`, `m`, `h`).
    #[error("`{0}` is not a duration (e.g. 30, 90s, 5m, 250ms)")]
    NotADuration(String),
    /// A duration outside 1 µs … a week.
    #[error("`{text}` {why}")]
    Duration {
        /// The text as typed.
        text: String,
        /// Which bound it crosses.
        why: DurationRangeError,
    },
    /// The text is not a number with an optional `%`.
    #[error("`{0}` is not a percentage")]
    NotAPercentage(String),
    /// A percentage below 0 or above 1000.
    #[error("`{0}` must be a percentage from 0 to 1000")]
    PercentOutOfRange(String),
    /// A confidence level not strictly between 50 % and 100 %.
    #[error("confidence `{0}` must be between 50 and 100 (exclusive)")]
    ConfidenceOutOfRange(String),
}

/// Why a duration in seconds is outside the accepted range; the message follows the
/// value it is about ("`0s` must be a positive duration").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DurationRangeError {
    /// Zero, negative or not finite.
    #[error("must be a positive duration")]
    NotPositive,
    /// Below 1 µs.
    #[error("is shorter than a microsecond")]
    UnderAMicrosecond,
    /// Above a week (168 h).
    #[error("is longer than the longest accepted duration (a week, 168h)")]
    OverAWeek,
}

/// Parse "60", "60s", "1.5m", "250ms", "1h" into seconds, from 1 µs to a week.
pub fn parse_duration(text: &str) -> Result<f64, ParseError> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| ParseError::NotADuration(text.to_string()))?;
    check_duration(v * scale).map_err(|why| ParseError::Duration { text: text.to_string(), why })
}

/// A duration in seconds within the accepted range; the error says why not.
pub fn check_duration(seconds: f64) -> Result<f64, DurationRangeError> {
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(DurationRangeError::NotPositive);
    }
    if seconds < 1e-6 {
        return Err(DurationRangeError::UnderAMicrosecond);
    }
    if seconds > MAX_DURATION_S {
        return Err(DurationRangeError::OverAWeek);
    }
    Ok(seconds)
}

/// Parse "1", "1%", "2.5" (percent) into a fraction.
pub fn parse_percent(text: &str) -> Result<f64, ParseError> {
    let v: f64 =
        text.trim().trim_end_matches('%').trim().parse().map_err(|_| ParseError::NotAPercentage(text.to_string()))?;
    if !v.is_finite() || !(0.0..1000.0).contains(&v) {
        return Err(ParseError::PercentOutOfRange(text.to_string()));
    }
    Ok(v / 100.0)
}

/// Parse a confidence level in percent (50 < level < 100) into a fraction.
pub fn parse_confidence(text: &str) -> Result<f64, ParseError> {
    let v = parse_percent(text)?;
    if !(0.5..1.0).contains(&v) {
        return Err(ParseError::ConfidenceOutOfRange(text.to_string()));
    }
    Ok(v)
}

/// Seconds in the most readable unit: 1.23 s, 95.2 ms, 412 µs, 80 ns.
pub fn format_seconds(s: f64) -> String {
    let a = s.abs();
    if a >= 1.0 {
        format!("{s:.3} s")
    } else if a >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else if a >= 1e-6 {
        format!("{:.1} µs", s * 1e6)
    } else {
        format!("{:.0} ns", s * 1e9)
    }
}

/// A metric's value with its unit: times in the most readable unit, KiB as MiB when
/// large, rates and percentages with their unit, counts plain.
pub fn format_value(metric: &str, v: f64) -> String {
    let unit = crate::metric::unit(metric);
    if let Some(seconds) = crate::metric::to_seconds(unit) {
        return format_seconds(v * seconds);
    }
    match unit {
        "KiB" if v >= 1024.0 => format!("{:.1} MiB", v / 1024.0),
        "KiB" => format!("{v:.0} KiB"),
        "%" => format!("{v:.2} %"),
        "" => format_number(v),
        unit => format!("{} {unit}", format_number(v)),
    }
}

/// A plain number: integers grouped in thousands, others with four significant digits
/// (at least up to the units).
fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e18 {
        return group_thousands(v as i64);
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{v:.digits$}")
}

/// 17123637 → "17,123,637", as perf stat prints counts.
pub fn group_thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// A confidence level as a percentage with the digits it has (up to three decimals):
/// 0.95 → "95", 0.975 → "97.5", 0.9975 → "99.75".
pub fn format_level(confidence: f64) -> String {
    let text = format!("{:.3}", confidence * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A percentage with enough digits to be meaningful: 12.3, 2.1, 0.42, 0.013.
pub fn format_percent(p: f64) -> String {
    let a = p.abs();
    if a >= 1.0 || a == 0.0 {
        format!("{p:.1}")
    } else if a >= 0.1 {
        format!("{p:.2}")
    } else {
        format!("{p:.3}")
    }
}

/// A ratio as `1.05×`: three significant digits (0.0761×, 13.1×, 243×), and three or four
/// decimals near 1× so the ends of a narrow interval stay apart (1.198× – 1.203×).
pub fn format_ratio(ratio: f64) -> String {
    if !ratio.is_finite() {
        return "n/a".into();
    }
    let decimals = if ratio == 1.0 {
        0
    } else if (0.9995..1.0005).contains(&ratio) {
        4
    } else if (0.5..2.0).contains(&ratio) {
        3
    } else if ratio > 0.0 {
        (2 - ratio.log10().floor() as i32).clamp(0, 12) as usize
    } else {
        3
    };
    let text = format!("{ratio:.decimals$}");
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    format!("{text}×")
}

/// A p-value for tables: three decimals, or `<0.001`.
pub fn format_p(p: f64) -> String {
    if p.is_nan() {
        "–".into()
    } else if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_have_three_significant_digits_and_more_near_one() {
        for (ratio, text) in [
            (1.0, "1×"),
            (1.00031, "1.0003×"),
            (1.05, "1.05×"),
            (0.95, "0.95×"),
            (1.5, "1.5×"),
            (1.1984, "1.198×"),
            (3.256, "3.26×"),
            (0.0761, "0.0761×"),
            (0.07634, "0.0763×"),
            (13.07, "13.1×"),
            (243.2, "243×"),
            (0.25, "0.25×"),
            (0.001234, "0.00123×"),
            (f64::NAN, "n/a"),
        ] {
            assert_eq!(format_ratio(ratio), text, "{ratio}");
        }
    }

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("90s"), Ok(90.0));
        assert_eq!(parse_duration("1.5m"), Ok(90.0));
        assert_eq!(parse_duration("250ms"), Ok(0.25));
        assert_eq!(parse_duration("2h"), Ok(7200.0));
        assert_eq!(parse_duration("60"), Ok(60.0));
        assert!((parse_duration("500us").unwrap() - 5e-4).abs() < 1e-12);
    }

    #[test]
    fn durations_out_of_range_are_errors_not_panics() {
        for bad in ["0", "-1s", "1e19", "1e30s", "inf", "NaN", "1e-9s", "8d", "x"] {
            assert!(parse_duration(bad).is_err(), "{bad} must be refused");
        }
        assert!(parse_duration("1e19").unwrap_err().to_string().contains("a week"));
    }

    #[test]
    fn percentages_and_confidence() {
        assert_eq!(parse_percent("2.5%"), Ok(0.025));
        assert!(parse_percent("-1").is_err() && parse_percent("1e400").is_err());
        assert_eq!(parse_confidence("99"), Ok(0.99));
        assert!(parse_confidence("100").is_err() && parse_confidence("40").is_err());
    }

    #[test]
    fn values_are_readable() {
        assert_eq!(format_seconds(1.5), "1.500 s");
        assert_eq!(format_seconds(0.0952), "95.20 ms");
        assert_eq!(format_seconds(0.000412), "412.0 µs");
        assert_eq!(format_value("max_rss_kib", 20480.0), "20.0 MiB");
        assert_eq!(format_value("max_rss_kib", 900.0), "900 KiB");
        assert_eq!(format_value("minor_faults", 120.0), "120");
        assert_eq!(format_value("instructions", 17_123_637.0), "17,123,637");
        assert_eq!(format_value("ipc", 1.25), "1.250");
        assert_eq!(format_value("task-clock", 812_345.0), "812.3 µs");
        assert_eq!(format_value("branch-miss-rate", 5.87), "5.87 %");
        assert_eq!(format_value("exec_ms", 42.35), "42.35 ms");
        assert_eq!(format_value("tps", 10759.739532), "10760 tps");
        assert_eq!(format_value("rows_per_s", 0.5), "0.5000 /s");
        assert_eq!(group_thousands(-1000), "-1,000");
    }
}
