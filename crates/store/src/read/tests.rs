//! Tests of the parent module (kept apart so that it stays readable).

use super::*;

#[test]
fn experiments_are_put_in_label_order_along_the_cycles() {
    // Stored benchmark after benchmark: labels 0, 1, 2 of each of three benchmarks,
    // shuffled further so the permutation has cycles of several lengths.
    let keys = [(2, 9), (0, 1), (1, 5), (0, 4), (2, 3), (1, 2), (0, 7), (2, 6), (1, 8)];
    let experiments: Vec<StoredExperiment> = keys
        .iter()
        .map(|&(label, id)| StoredExperiment {
            id,
            ..crate::fixtures::stored(&format!("v{label}"), label, "b", "h", &[1.0])
        })
        .collect();
    let sorted = in_label_order(experiments);
    let got: Vec<(i64, i64)> = sorted.iter().map(|e| (e.label_order, e.id)).collect();
    let mut want = keys.to_vec();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(sorted[0].label, "v0");
}
