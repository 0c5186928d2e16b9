//! Output: the terminal table, JSON, Markdown and CSV renderings of an experiment, and
//! the progress display.

pub mod color;
pub mod csv;
pub mod json;
pub mod markdown;
pub mod progress;
pub mod terminal;

use std::io::Write;

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

/// A metric's value with its unit: seconds scaled, KiB as MiB when large, counts plain.
pub fn format_value(metric: &str, v: f64) -> String {
    match crate::model::metric::unit(metric) {
        "s" => format_seconds(v),
        "KiB" if v >= 1024.0 => format!("{:.1} MiB", v / 1024.0),
        "KiB" => format!("{v:.0} KiB"),
        _ if v.fract() == 0.0 && v.abs() < 1e18 => group_thousands(v as i64),
        _ => format!("{v:.3}"),
    }
}

/// 17123637 → "17,123,637", as perf stat prints counts.
pub fn group_thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// Open an output destination: `-` is stdout, anything else a file (created/truncated).
pub fn open_output(path: &str) -> Result<Box<dyn Write>, crate::error::Failure> {
    if path == "-" {
        Ok(Box::new(std::io::stdout()))
    } else {
        let file = std::fs::File::create(path).map_err(|e| crate::usage!("cannot write `{path}`: {e}"))?;
        Ok(Box::new(std::io::BufWriter::new(file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(group_thousands(-1000), "-1,000");
    }
}
