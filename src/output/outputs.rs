//! Sending a result to its destinations: every format is a
//! [`render::export::Exporter`](perflab_render::export::Exporter); [`Outputs`] sends each
//! to a file or to stdout (`-`). Files are written first and each on its own — one that
//! fails does not keep the others from being written — then stdout, so a full disk or a
//! closed pipe on stdout never costs a file.

use super::stdout;
use perflab_render::export::Exporter;
use perflab_render::OutputError;
use std::path::{Path, PathBuf};

/// Where an output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stdout,
    File(PathBuf),
}

impl Target {
    /// `-` is stdout, anything else a file.
    pub fn parse(path: impl AsRef<Path>) -> Target {
        let path = path.as_ref();
        if path == Path::new("-") {
            Target::Stdout
        } else {
            Target::File(path.to_path_buf())
        }
    }
}

struct Entry<'a, R: ?Sized> {
    /// The option that asked for it, for messages (`--export-json`).
    flag: String,
    target: Target,
    exporter: Box<dyn Exporter<R> + 'a>,
}

/// The outputs of one command: each format with its target, plus the terminal rendering,
/// which goes to stdout unless an output takes it (then to stderr).
pub struct Outputs<'a, R: ?Sized> {
    entries: Vec<Entry<'a, R>>,
    /// An output that streams to stdout while the command runs (the per-run CSV).
    streaming_to_stdout: Option<String>,
}

impl<R: ?Sized> Default for Outputs<'_, R> {
    fn default() -> Self {
        Outputs { entries: Vec::new(), streaming_to_stdout: None }
    }
}

impl<'a, R: ?Sized> Outputs<'a, R> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Send `exporter`'s rendering to `path` (`-`: stdout). Checked now, before anything is
    /// measured: the file can be created, and no other output goes to the same place.
    pub fn add(&mut self, flag: &str, path: &str, exporter: impl Exporter<R> + 'a) -> Result<(), OutputError> {
        let target = Target::parse(path);
        self.claim(flag, &target)?;
        self.entries.push(Entry { flag: flag.to_string(), target, exporter: Box::new(exporter) });
        Ok(())
    }

    /// Record that `flag` streams to `path` by itself (checked like [`Outputs::add`]).
    pub fn add_streaming(&mut self, flag: &str, path: &str) -> Result<(), OutputError> {
        let target = Target::parse(path);
        self.claim(flag, &target)?;
        if target == Target::Stdout {
            self.streaming_to_stdout = Some(flag.to_string());
        }
        Ok(())
    }

    fn claim(&self, flag: &str, target: &Target) -> Result<(), OutputError> {
        match target {
            Target::Stdout => {
                if let Some(other) = self.stdout_owner() {
                    return Err(OutputError::Clash {
                        first: other.to_string(),
                        second: flag.to_string(),
                        place: "standard output".into(),
                    });
                }
            }
            Target::File(path) => {
                if let Some(other) = self.entries.iter().find(|e| e.target == *target) {
                    return Err(OutputError::Clash {
                        first: other.flag.clone(),
                        second: flag.to_string(),
                        place: format!("`{}`", path.display()),
                    });
                }
                check_writable(path)?;
            }
        }
        Ok(())
    }

    fn stdout_owner(&self) -> Option<&str> {
        self.streaming_to_stdout
            .as_deref()
            .or_else(|| self.entries.iter().find(|e| e.target == Target::Stdout).map(|e| e.flag.as_str()))
    }

    /// True when an output goes to stdout: the terminal rendering then goes to stderr.
    pub fn stdout_taken(&self) -> bool {
        self.stdout_owner().is_some()
    }

    /// Write every file, then stdout: the output sent to `-`, else `terminal` (on stderr
    /// when stdout is taken; `None` prints nothing). A file that cannot be written does
    /// not keep the others or the terminal from being written; its error is returned
    /// afterwards. A failing stdout is kept by [`stdout`] for `cli::main`.
    pub fn write(&self, result: &R, terminal: Option<&dyn Exporter<R>>) -> Result<(), OutputError> {
        let mut failures = Vec::new();
        for entry in &self.entries {
            if let Target::File(path) = &entry.target {
                if let Err(e) = entry.exporter.render(result).and_then(|text| write_file(path, &text)) {
                    failures.push(e);
                }
            }
        }
        if let Some(terminal) = terminal {
            match terminal.render(result) {
                Ok(text) if self.stdout_taken() => eprint!("{text}"),
                Ok(text) => {
                    stdout::write(&text);
                }
                Err(e) => failures.push(e),
            }
        }
        for entry in self.entries.iter().filter(|e| e.target == Target::Stdout) {
            match entry.exporter.render(result) {
                Ok(text) => {
                    stdout::write(&text);
                }
                Err(e) => failures.push(e),
            }
        }
        OutputError::of_all(failures)
    }
}

/// Fail before the measurement, not after it, when a result could not be written: the
/// file is opened for appending (created if missing, then removed again).
pub fn check_writable(path: &Path) -> Result<(), OutputError> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|source| OutputError::File { path: path.to_path_buf(), source })?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// A file written beside its destination and renamed over it by [`AtomicFile::commit`],
/// so an interrupted or failed write leaves the destination as it was (the temporary
/// file is removed when dropped uncommitted). A destination that exists and is not a
/// regular file (`/dev/null`, a FIFO) is written in place: renaming over it would
/// replace the device.
pub struct AtomicFile {
    file: std::io::BufWriter<std::fs::File>,
    temporary: Option<(PathBuf, PathBuf)>,
}

impl AtomicFile {
    pub fn create(path: &Path) -> std::io::Result<AtomicFile> {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            let file = std::fs::OpenOptions::new().write(true).open(path)?;
            return Ok(AtomicFile { file: std::io::BufWriter::new(file), temporary: None });
        }
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
        let file = std::fs::File::create(&tmp)?;
        Ok(AtomicFile { file: std::io::BufWriter::new(file), temporary: Some((tmp, path.to_path_buf())) })
    }

    /// Flush and move the file into place.
    pub fn commit(mut self) -> std::io::Result<()> {
        std::io::Write::flush(&mut self.file)?;
        if let Some((tmp, path)) = self.temporary.take() {
            if let Err(e) = std::fs::rename(&tmp, &path) {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        }
        Ok(())
    }
}

impl std::io::Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.temporary.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Write `text` to `path` whole (created or truncated).
pub fn write_file(path: &Path, text: &str) -> Result<(), OutputError> {
    std::fs::write(path, text).map_err(|source| OutputError::File { path: path.to_path_buf(), source })
}

/// Open `--csv`'s destination (`-`: stdout) for rows written as runs finish.
pub fn open_csv(path: &str) -> Result<(Box<dyn std::io::Write>, Option<PathBuf>), OutputError> {
    Ok(match Target::parse(path) {
        Target::Stdout => (Box::new(stdout::Stdout), None),
        Target::File(path) => {
            let file =
                std::fs::File::create(&path).map_err(|source| OutputError::File { path: path.clone(), source })?;
            (Box::new(std::io::BufWriter::new(file)), Some(path))
        }
    })
}

/// Write `value` as pretty JSON to `path` (`-` is stdout).
pub fn write_json(path: impl AsRef<Path>, value: &(impl serde::Serialize + ?Sized)) -> Result<(), OutputError> {
    write_to(path, &perflab_render::json::to_string(value)?)
}

/// Write `text` to `path`: a file, or stdout for `-`.
pub fn write_to(path: impl AsRef<Path>, text: &str) -> Result<(), OutputError> {
    match Target::parse(path) {
        Target::Stdout => {
            stdout::write(text);
            Ok(())
        }
        Target::File(path) => write_file(&path, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Upper;
    impl Exporter<str> for Upper {
        fn render(&self, result: &str) -> Result<String, OutputError> {
            Ok(result.to_uppercase())
        }
    }

    #[test]
    fn files_are_written_even_when_another_fails_and_clashes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.txt");
        let mut outputs: Outputs<str> = Outputs::new();
        outputs.add("--a", good.to_str().unwrap(), Upper).unwrap();
        let clash = outputs.add("--b", good.to_str().unwrap(), Upper).unwrap_err();
        assert_eq!(clash.to_string(), format!("--a and --b cannot both write to `{}`", good.display()));
        outputs.add("--c", "-", Upper).unwrap();
        assert!(outputs.stdout_taken());
        assert!(outputs.add("--d", "-", Upper).unwrap_err().to_string().contains("standard output"));
        assert!(outputs.add("--e", "/nonexistent-dir/x", Upper).is_err(), "checked before anything runs");
        // A file that turns unwritable later does not stop the others.
        let doomed = dir.path().join("sub");
        std::fs::create_dir(&doomed).unwrap();
        let doomed_file = doomed.join("x.txt");
        let mut outputs: Outputs<str> = Outputs::new();
        outputs.add("--x", doomed_file.to_str().unwrap(), Upper).unwrap();
        outputs.add("--a", good.to_str().unwrap(), Upper).unwrap();
        std::fs::remove_dir(&doomed).unwrap();
        let err = outputs.write("abc", None).unwrap_err();
        assert!(err.to_string().contains("x.txt"), "{err}");
        assert_eq!(std::fs::read_to_string(&good).unwrap(), "ABC");
    }
}
