//! The CSV rendering: one row per measured run, written and flushed as each run
//! finishes, so a crash or kill loses at most the run in flight.

use crate::error::Failure;
use crate::experiment::Observer;
use crate::model::Run;

pub struct CsvWriter {
    writer: csv::Writer<Box<dyn std::io::Write>>,
    names: Vec<String>,
    /// The counter columns; `None` until the first run names them.
    counters: Option<Vec<String>>,
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
    pub fn create(path: &str, names: Vec<String>, counters: Option<Vec<String>>) -> Result<CsvWriter, Failure> {
        let writer = csv::Writer::from_writer(super::open_output(path)?);
        let mut csv = CsvWriter { writer, names, counters: None };
        if let Some(counters) = counters {
            csv.header(counters).map_err(|e| crate::usage!("cannot write `{path}`: {e}"))?;
        }
        Ok(csv)
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
}
