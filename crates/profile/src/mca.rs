//! llvm-mca bridge: for the hot block of an annotated function (the innermost loop
//! around the hottest instruction, else its basic block), run the installed llvm-mca
//! and attach its per-instruction uops, latency and reciprocal throughput.
//! llvm-mca's scheduling models are LLVM's (Apache-2.0); we ship none of its data.

use serde::Serialize;
use std::io::Write;
use std::process::{Command, Stdio};

/// llvm-mca's view of one instruction.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct McaInstruction {
    pub uops: u32,
    pub latency: u32,
    pub rthroughput: f64,
}

/// llvm-mca's summary for a block.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct McaBlock {
    pub cpu: String,
    /// Addresses of the first and last instruction of the analysed block.
    pub start: u64,
    pub end: u64,
    pub iterations: u32,
    pub total_cycles: u64,
    /// Cycles per iteration of the block at best (llvm-mca's "Block RThroughput").
    pub block_rthroughput: f64,
}

/// The llvm-mca binary on PATH (`llvm-mca`, or a versioned `llvm-mca-N` as Debian installs it).
pub fn find() -> Option<std::path::PathBuf> {
    which::which("llvm-mca").ok().or_else(|| (10..=25).rev().find_map(|v| which::which(format!("llvm-mca-{v}")).ok()))
}

/// A scheduling model for this machine: llvm-mca's host CPU when it knows it, else a
/// model of the same vendor family (older LLVMs lack the newest cores).
pub(crate) fn default_cpu(mca: &std::path::Path) -> String {
    let version = Command::new(mca)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if let Some(host) = version.lines().find_map(|l| l.trim().strip_prefix("Host CPU:")).map(str::trim) {
        if !host.is_empty() && host != "(unknown)" && host != "generic" {
            return host.to_string();
        }
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo.lines().find(|l| l.starts_with(name)).and_then(|l| l.split(':').nth(1)).map(str::trim).unwrap_or("")
    };
    let family: u32 = field("cpu family").parse().unwrap_or(0);
    let model: u32 = field("model\t").parse().unwrap_or(0);
    match (field("vendor_id"), family) {
        ("AuthenticAMD", 23) if model < 0x30 => "znver1",
        ("AuthenticAMD", 23) => "znver2",
        ("AuthenticAMD", f) if f >= 25 => "znver3",
        _ => "skylake",
    }
    .to_string()
}

/// The block to analyse: the smallest loop (back-edge target ..= back-edge jump)
/// containing the hottest instruction, else the straight-line run around it.
/// `jumps[i]` is the in-function branch target of instruction i; `branches[i]` says
/// whether it transfers control at all.
pub(crate) fn hot_block(addresses: &[u64], jumps: &[Option<u64>], branches: &[bool], hottest: usize) -> (usize, usize) {
    let hot = addresses[hottest];
    let mut best: Option<(usize, usize)> = None;
    for (i, target) in jumps.iter().enumerate() {
        let Some(t) = *target else { continue };
        if t <= hot && hot <= addresses[i] {
            if let Some(start) = addresses.iter().position(|a| *a == t) {
                if best.is_none_or(|(s, e)| i - start < e - s) {
                    best = Some((start, i));
                }
            }
        }
    }
    best.unwrap_or_else(|| {
        let targets: Vec<u64> = jumps.iter().flatten().copied().collect();
        let mut start = hottest;
        while start > 0 && !branches[start - 1] && !targets.contains(&addresses[start]) {
            start -= 1;
        }
        let mut end = hottest;
        while end + 1 < addresses.len() && !branches[end] && !targets.contains(&addresses[end + 1]) {
            end += 1;
        }
        (start, end)
    })
}

/// Run llvm-mca on AT&T-syntax lines; Err is one line for a warning.
pub(crate) fn analyse(
    mca: &std::path::Path,
    cpu: &str,
    lines: &[String],
) -> Result<(Vec<McaInstruction>, u32, u64, f64), String> {
    let mut child = Command::new(mca)
        .args([&format!("-mcpu={cpu}"), "--iterations=100", "--instruction-info", "--resource-pressure=false", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", mca.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(lines.join("\n").as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| format!("llvm-mca: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "llvm-mca failed: {}",
            err.lines().find(|l| l.contains("error")).unwrap_or("no output").trim()
        ));
    }
    parse(&String::from_utf8_lossy(&out.stdout), lines.len())
}

fn parse(text: &str, expected: usize) -> Result<(Vec<McaInstruction>, u32, u64, f64), String> {
    let value = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim).unwrap_or("");
    let iterations = value("Iterations:").parse().map_err(|_| "llvm-mca output has no iteration count")?;
    let cycles = value("Total Cycles:").parse().map_err(|_| "llvm-mca output has no cycle count")?;
    let rthroughput = value("Block RThroughput:").parse().map_err(|_| "llvm-mca output has no block throughput")?;
    let table = text.split("Instructions:\n").nth(1).ok_or("llvm-mca output has no instruction info")?;
    let rows: Vec<McaInstruction> = table
        .lines()
        .take(expected)
        .map(|l| {
            let mut f = l.split_whitespace();
            Some(McaInstruction {
                uops: f.next()?.parse().ok()?,
                latency: f.next()?.parse().ok()?,
                rthroughput: f.next()?.parse().ok()?,
            })
        })
        .collect::<Option<_>>()
        .ok_or("cannot read llvm-mca's instruction info")?;
    if rows.len() != expected {
        return Err(format!("llvm-mca described {} of {expected} instructions", rows.len()));
    }
    Ok((rows, iterations, cycles, rthroughput))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_block_is_the_smallest_enclosing_loop_else_the_straight_line_run() {
        let addrs = [0, 4, 8, 12, 16, 20];
        // 12: jump back to 4 (loop 4..=12); 20: jump back to 0 (outer loop).
        let jumps = [None, None, None, Some(4), None, Some(0)];
        let branches = [false, false, false, true, false, true];
        assert_eq!(hot_block(&addrs, &jumps, &branches, 2), (1, 3));
        assert_eq!(hot_block(&addrs, &jumps, &branches, 4), (0, 5));
        let no_loops = [None, None, Some(16), None, None, None];
        let br = [false, false, true, false, false, false];
        assert_eq!(hot_block(&addrs, &no_loops, &br, 3), (3, 3));
        assert_eq!(hot_block(&addrs, &no_loops, &br, 0), (0, 2));
    }

    #[test]
    fn parses_llvm_mca_output() {
        let text =
            "Iterations:        100\nInstructions:      200\nTotal Cycles:      2704\nBlock RThroughput: 10.0\n\n\
Instruction Info:\n[1]: #uOps\n\n[1]    [2]    [3]    [4]    [5]    [6]    Instructions:\n \
1      25    10.00                 U     divq\t%rsi\n 1      1     0.33                        addq\t%rax, %rcx\n";
        let (rows, it, cycles, rthr) = parse(text, 2).unwrap();
        assert_eq!((it, cycles, rthr), (100, 2704, 10.0));
        assert_eq!(rows[0], McaInstruction { uops: 1, latency: 25, rthroughput: 10.0 });
        assert!(parse(text, 3).is_err());
        assert!(parse("garbage", 1).is_err());
    }

    #[test]
    fn runs_llvm_mca_when_installed() {
        let Some(mca) = find() else {
            // Skipped, said and counted as tests/common/skip.rs does (scripts/test's summary).
            let reason = "llvm-mca is not installed (apt-get install llvm)";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: {reason}");
            eprintln!("SKIPPED: {reason}");
            if let Some(path) = std::env::var_os("PERFLAB_TEST_SKIPS") {
                use std::io::Write;
                let line = format!("perflab_profile::mca::tests::runs_llvm_mca_when_installed\twhole\t{reason}\n");
                let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
                file.and_then(|mut f| f.write_all(line.as_bytes())).expect("append to PERFLAB_TEST_SKIPS");
            }
            return;
        };
        let lines = vec!["divq %rsi".to_string(), "addq %rax, %rcx".to_string()];
        let (rows, ..) = analyse(&mca, &default_cpu(&mca), &lines).unwrap();
        assert!(rows[0].latency > rows[1].latency, "{rows:?}");
    }
}
