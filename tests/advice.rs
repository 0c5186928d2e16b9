//! Advice that is true (issue #39, item 4): each message the issue found untrue, read
//! as a user reads it — from the command line where perflab prints it.

mod common;

use assert_cmd::Command;

fn perflab() -> Command {
    let mut cmd = Command::cargo_bin("perflab").unwrap();
    cmd.env("NO_COLOR", "1").env_remove("PERFLAB_DB");
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_failed_commands_stderr_lines_are_clauses_of_one_error_line_not_a_literal_backslash_n() {
    let out = perflab()
        .args(["compare", "-r", "2", "sh -c 'echo oops >&2; echo second >&2; exit 3'", "true"])
        .assert()
        .failure();
    let stderr = text(&out.get_output().stderr);
    let line = stderr.lines().find(|l| l.starts_with("perflab: error:")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.ends_with("exited with code 3; its last stderr lines: oops; second"), "{line}");
    assert!(!stderr.contains("\\n"), "{stderr}");
}

#[test]
fn a_kernel_only_event_with_u_says_the_modifier_excludes_it_and_as_root_not_to_become_root() {
    let out = perflab().args(["stat", "-r", "2", "-e", "context-switches:u", "true"]).output().unwrap();
    let all = text(&out.stdout) + &text(&out.stderr);
    if all.contains("perf_event_open") && !all.contains("kernel mode") {
        common::skip::skip(&format!("perf events cannot be opened here: {all}"));
        return;
    }
    assert!(all.contains("context-switches happen in kernel mode, which the `:u` modifier excludes"), "{all}");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert!(!all.contains("run as root"), "{all}");
    }
}

#[test]
fn stat_names_no_verdict_it_does_not_have() {
    let out = perflab()
        .args(["stat", "-r", "3", "--output-metric", "t=(?<t_ms>[0-9.]+)", "sh -c 'echo t=1; echo t=2; echo t=2'"])
        .assert()
        .success();
    let all = text(&out.get_output().stdout) + &text(&out.get_output().stderr);
    assert!(all.contains("t_ms per iteration"), "the per-iteration table is shown: {all}");
    assert!(!all.contains("verdict"), "{all}");
}
