//! `--json FILE`: the flat report as JSON (its fields in docs/profiling.md), with an
//! allocation profile's totals beside its rows.

use super::exporter::{ExportInput, ProfileExporter};
use perflab_profile::allocations::AllocSummary;
use perflab_profile::error::ProfileError;

/// The `--json` exporter.
pub struct Json;

impl ProfileExporter for Json {
    fn flag(&self) -> &'static str {
        "--json"
    }

    fn encode(&self, input: &ExportInput) -> Result<Vec<u8>, ProfileError> {
        let error = |e: serde_json::Error| ProfileError::Export { format: "JSON", why: e.to_string() };
        let mut value = serde_json::to_value(&input.report.flat).map_err(error)?;
        if let (Some(summary), Some(object)) = (&input.profile.alloc, value.as_object_mut()) {
            object.insert("alloc".into(), alloc_totals(summary));
        }
        let mut bytes = serde_json::to_vec_pretty(&value).map_err(error)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// An allocation profile's totals as the terminal's header states them: calls and bytes
/// requested, frees and the bytes they released, frees of blocks not allocated here,
/// and the blocks still live at exit — `null` when blocks were not followed (`every` > 1),
/// where 0 would claim no leak.
fn alloc_totals(summary: &AllocSummary) -> serde_json::Value {
    let followed = |n: u64| if summary.tracked { serde_json::json!(n) } else { serde_json::Value::Null };
    serde_json::json!({
        "every": summary.every,
        "tracked": summary.tracked,
        "allocations": summary.allocations(),
        "allocated_bytes": summary.allocated_bytes(),
        "frees": followed(summary.frees),
        "freed_bytes": followed(summary.freed_bytes),
        "unmatched_frees": followed(summary.unmatched_frees),
        "live_blocks": followed(summary.live_blocks()),
        "live_bytes": followed(summary.live_bytes()),
        "functions": summary.functions,
        "notes": summary.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_profile::allocations::{AllocFunction, LiveStack, Role};
    use perflab_profile::format::Profile;

    fn summary(tracked: bool) -> AllocSummary {
        AllocSummary {
            every: if tracked { 1 } else { 4 },
            functions: vec![
                AllocFunction { name: "malloc".into(), calls: 10, bytes: 640, ..AllocFunction::default() },
                AllocFunction { name: "free".into(), role: Role::Free, calls: 7, ..AllocFunction::default() },
            ],
            frees: 7,
            freed_bytes: 448,
            unmatched_frees: 1,
            tracked,
            live: vec![LiveStack { pid: 1, tid: 1, frames: vec![], count: 3, period: 192 }],
            notes: Vec::new(),
            sample_bytes: None,
            site_bytes_sd: Vec::new(),
        }
    }

    fn encoded(alloc: Option<AllocSummary>) -> serde_json::Value {
        let profile = Profile { event: "alloc-bytes".into(), alloc, ..Profile::default() };
        let report = perflab_profile::report::build(&profile, &Default::default()).unwrap();
        let flame = crate::profile::flame::FlameOptions::default();
        let input = ExportInput { profile: &profile, report: &report, title: "t", flame: &flame };
        serde_json::from_slice(&Json.encode(&input).unwrap()).unwrap()
    }

    #[test]
    fn an_allocation_profiles_json_has_its_totals_of_frees_and_live_blocks() {
        let json = encoded(Some(summary(true)));
        let alloc = &json["alloc"];
        assert_eq!(
            [&alloc["allocations"], &alloc["allocated_bytes"], &alloc["frees"], &alloc["freed_bytes"]],
            [10, 640, 7, 448].map(serde_json::Value::from).each_ref()
        );
        assert_eq!(
            [&alloc["unmatched_frees"], &alloc["live_blocks"], &alloc["live_bytes"]],
            [1, 3, 192].map(serde_json::Value::from).each_ref()
        );
        assert_eq!(alloc["functions"][1]["name"], "free");
    }

    #[test]
    fn blocks_not_followed_have_no_totals_rather_than_zero() {
        let alloc = encoded(Some(summary(false)))["alloc"].clone();
        assert_eq!(alloc["allocations"], 10);
        assert!(alloc["frees"].is_null() && alloc["live_blocks"].is_null(), "{alloc}");
    }

    #[test]
    fn a_profile_of_time_has_no_alloc_field() {
        assert!(encoded(None).get("alloc").is_none());
    }
}
