//! perflab's CSV (`--csv`): one row per measured run, written and flushed as each run
//! finishes, so a crash or kill loses at most the run in flight. A write that fails (a
//! full disk, a closed stdout) stops the CSV, not the experiment: the failure is
//! reported once the other outputs are written (hyperfine's per-command summary CSV is
//! `render::hyperfine`).

use super::OutputError;
use perflab_engine::experiment::Observer;
use perflab_model::Run;
use std::path::PathBuf;

/// A CSV file (or stdout) written one record at a time.
pub struct CsvWriter {
    writer: csv::Writer<Box<dyn std::io::Write>>,
    /// Where it goes (for the message of a failure); `None` for stdout.
    path: Option<PathBuf>,
    names: Vec<String>,
    /// The counter columns; `None` until the first run names them.
    counters: Option<Vec<String>>,
    /// The first write that failed; nothing more is written after it.
    failure: Option<csv::Error>,
}

const COLUMNS: [&str; 15] = [
    "command",
    "round",
    "position",
    "wall_s",
    "user_s",
    "sys_s",
    "max_rss_kib",
    "minor_faults",
    "major_faults",
    "voluntary_cs",
    "involuntary_cs",
    "exit_code",
    "signal",
    "timed_out",
    "env_pad_bytes",
];

impl CsvWriter {
    /// `counters` become extra columns (empty where a run lacks them); `None` when they
    /// are only known from the output (the first run's metrics become the columns, and
    /// the header is written with it).
    /// `out` is where the rows go, `path` its file (`None` for stdout).
    pub fn new(
        out: Box<dyn std::io::Write>,
        path: Option<PathBuf>,
        names: Vec<String>,
        counters: Option<Vec<String>>,
    ) -> Result<CsvWriter, OutputError> {
        let mut csv = CsvWriter { writer: csv::Writer::from_writer(out), path, names, counters: None, failure: None };
        if let Some(counters) = counters {
            if let Err(e) = csv.header(counters) {
                return Err(csv.error(e));
            }
        }
        Ok(csv)
    }

    fn error(&self, e: csv::Error) -> OutputError {
        let source = match e.into_kind() {
            csv::ErrorKind::Io(io) => io,
            other => std::io::Error::other(format!("{other:?}")),
        };
        OutputError::File { path: self.path.clone().unwrap_or_else(|| PathBuf::from("-")), source }
    }

    /// Flush what is left; the first write that failed, if any.
    pub fn finish(mut self) -> Result<(), OutputError> {
        if let Some(e) = self.failure.take() {
            return Err(self.error(e));
        }
        self.writer.flush().map_err(|source| OutputError::File {
            path: self.path.clone().unwrap_or_else(|| PathBuf::from("-")),
            source,
        })
    }

    fn row(&mut self, command: usize, run: &Run) -> csv::Result<()> {
        if self.counters.is_none() {
            self.header(run.counters.keys().cloned().collect())?;
        }
        let mut row = vec![
            self.names[command].clone(),
            run.round.to_string(),
            run.position.to_string(),
            run.wall_s.to_string(),
            run.user_s.to_string(),
            run.sys_s.to_string(),
            run.max_rss_kib.to_string(),
            run.minor_faults.to_string(),
            run.major_faults.to_string(),
            run.voluntary_cs.to_string(),
            run.involuntary_cs.to_string(),
            opt(run.exit.exit_code),
            opt(run.exit.signal),
            run.exit.timed_out.to_string(),
            run.env_pad_bytes.to_string(),
        ];
        row.extend(self.counters.iter().flatten().map(|c| opt(run.counters.get(c).and_then(|r| r.value))));
        self.writer.write_record(&row)?;
        self.writer.flush()?;
        Ok(())
    }

    fn header(&mut self, counters: Vec<String>) -> csv::Result<()> {
        let header = COLUMNS.iter().map(|s| s.to_string()).chain(counters.iter().cloned());
        self.writer.write_record(header)?;
        self.writer.flush()?;
        self.counters = Some(counters);
        Ok(())
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

impl Observer for CsvWriter {
    fn run_finished(&mut self, command: usize, run: &Run) -> anyhow::Result<()> {
        if self.failure.is_none() {
            if let Err(e) = self.row(command, run) {
                self.failure = Some(e);
            }
        }
        Ok(())
    }
}
