//! What layout experiments (`--layouts N`) measured on a machine: the layout spread of
//! each program, kept as facts of the stored experiment, read back so that a comparison
//! of one build per version can say when its difference is within what relinking alone
//! moves that program here (docs/suites.md, "Code layouts").

use super::{backend, Store, StoreError};
use anyhow::Context;
use perflab_engine::analysis::layouts::{SPREAD_FACT, SPREAD_METRIC_FACT};
use perflab_model::{LayoutSpread, Machine};
use std::collections::BTreeMap;

impl Store {
    /// Every layout spread stored for `machine`, oldest first.
    pub fn layout_spreads(&mut self, machine: &Machine) -> Result<Vec<LayoutSpread>, StoreError> {
        let rows = self.db.query(
            "SELECT b.name, e.started_at, e.environment, c.argv FROM experiments e \
             JOIN machines m ON m.id = e.machine_id JOIN benchmarks b ON b.id = e.benchmark_id \
             JOIN commands c ON c.experiment_id = e.id AND c.idx = 0 \
             WHERE m.fingerprint = $1 AND e.superseded_by IS NULL AND e.environment LIKE $2 ORDER BY e.id",
            &[backend::text(machine.fingerprint()), backend::text(format!("%{SPREAD_FACT}%"))],
        )?;
        let mut out = Vec::new();
        for row in rows {
            let text = |i: usize| row[i].as_str().unwrap_or_default().to_string();
            let facts: BTreeMap<String, String> = serde_json::from_str(&text(2))
                .with_context(|| format!("an experiment's environment in {}", self.location))?;
            let argv: Vec<String> = serde_json::from_str(&text(3)).unwrap_or_default();
            let (Some(spread), Some(program)) = (
                facts.get(SPREAD_FACT).and_then(|s| s.parse::<f64>().ok()).filter(|s| s.is_finite()),
                argv.first().map(|p| LayoutSpread::program_kind(p)),
            ) else {
                continue;
            };
            out.push(LayoutSpread {
                benchmark: text(0),
                program,
                metric: facts.get(SPREAD_METRIC_FACT).cloned().unwrap_or_default(),
                spread,
                measured_at: text(1),
            });
        }
        Ok(out)
    }
}
