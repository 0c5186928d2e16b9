//! Says when a comparison's commands run byte-identical executables from two different
//! files: on a measured machine the same bytes ran up to 7 % apart at start-up (1–2 % of a
//! 3 ms run) depending on how each file's pages entered the page cache — written by the
//! linker or copied by `cp` — and not after the cache was dropped and both read back
//! (docs/evaluation.md, "Copies of one binary"). Such a difference is the files', not the
//! code's, so the reader is told; one file (or a hard link) compares the code alone.

use crate::plan::Plan;
use perflab_model::{Warning, WarningKind};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Executables above this size are not compared byte by byte (reading them would cost
/// more than the note is worth); the note is then not given.
const MAX_COMPARED_BYTES: u64 = 512 << 20;

/// One warning per candidate whose program is a separate byte-identical copy of the
/// baseline's. Programs that cannot be resolved or read give no warning.
pub(crate) fn separate_copies(plan: &Plan) -> Vec<Warning> {
    let Some((baseline, candidates)) = plan.commands.split_first() else {
        return Vec::new();
    };
    let Some(base_path) = program_path(&baseline.argv) else {
        return Vec::new();
    };
    candidates
        .iter()
        .filter_map(|candidate| {
            let path = program_path(&candidate.argv)?;
            separate_identical_files(&base_path, &path).then(|| {
                Warning::new(
                    WarningKind::SeparateCopies,
                    format!(
                        "`{}` and `{}` run byte-identical executables from two files ({}, {}): how a file's pages \
                         entered the page cache moved such copies' start-up by up to 7 % here, so a difference may \
                         be the files', not the code's (one file or a hard link compares the code alone)",
                        candidate.name,
                        baseline.name,
                        path.display(),
                        base_path.display()
                    ),
                )
            })
        })
        .collect()
}

fn program_path(argv: &[String]) -> Option<PathBuf> {
    perflab_sys::command::resolve_program(argv.first()?).ok()
}

/// True when `a` and `b` are different files (not one inode under two names) with the
/// same bytes.
fn separate_identical_files(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if (ma.dev(), ma.ino()) == (mb.dev(), mb.ino()) || ma.len() != mb.len() || ma.len() > MAX_COMPARED_BYTES {
        return false;
    }
    same_bytes(a, b).unwrap_or(false)
}

fn same_bytes(a: &Path, b: &Path) -> std::io::Result<bool> {
    let (mut fa, mut fb) = (File::open(a)?, File::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = fa.read(&mut ba)?;
        if n == 0 {
            return Ok(fb.read(&mut bb[..1])? == 0);
        }
        fb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::MeasureOptions;
    use crate::plan::Compared;
    use perflab_model::{CommandSpec, Settings};
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path, bytes: &[u8]) {
        std::fs::write(path, bytes).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn plan(programs: &[&Path]) -> Plan {
        let commands = programs.iter().map(|p| CommandSpec::bare(p.to_str().unwrap())).collect();
        Plan::new(commands, Settings::default(), MeasureOptions::default(), Compared::fixed(vec!["wall_s".into()]))
    }

    #[test]
    fn a_copy_is_named_a_link_or_other_bytes_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("spin");
        executable(&original, b"\x7fELF same bytes");
        let copy = dir.path().join("spin_copy");
        std::fs::copy(&original, &copy).unwrap();
        let link = dir.path().join("spin_link");
        std::fs::hard_link(&original, &link).unwrap();
        let other = dir.path().join("other");
        executable(&other, b"\x7fELF other bytes");

        let found = separate_copies(&plan(&[&original, &copy, &link, &other, &original]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, WarningKind::SeparateCopies);
        assert!(found[0].message.contains("spin_copy") && found[0].message.contains("byte-identical"));
        // A missing program (a simulation's name) says nothing.
        assert!(separate_copies(&plan(&[Path::new("no-such-program-here"), &copy])).is_empty());
    }

    #[test]
    fn an_experiment_on_two_copies_carries_the_note_in_its_warnings() {
        use crate::executor::simulated::{Noise, Simulated};
        use crate::experiment::{run_experiment, Quiet};
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("spin");
        executable(&original, b"\x7fELF same bytes");
        let copy = dir.path().join("spin_copy");
        std::fs::copy(&original, &copy).unwrap();
        let settings = Settings { fixed_rounds: Some(8), ..Settings::default() };
        let commands = [&original, &copy].iter().map(|p| CommandSpec::bare(p.to_str().unwrap())).collect();
        let plan = Plan::new(commands, settings, MeasureOptions::default(), Compared::fixed(vec!["wall_s".into()]));
        let e =
            run_experiment(&plan, &mut Simulated::new(7, vec![0.01, 0.01], Noise::gaussian(0.01)), &mut Quiet).unwrap();
        let kinds: Vec<WarningKind> = e.warnings.iter().map(|w| w.kind).collect();
        assert_eq!(kinds.iter().filter(|k| **k == WarningKind::SeparateCopies).count(), 1, "{:?}", e.warnings);
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains(r#""kind":"separate_copies""#), "the JSON names the kind");
    }
}
