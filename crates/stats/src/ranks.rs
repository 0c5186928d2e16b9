//! Mid-ranks with tie bookkeeping, shared by the signed-rank and rank-sum tests.

/// 1-based ranks of `values` (ties get the mean of their ranks) and Σ(t³ − t) over tie
/// groups of size t, the quantity every tie correction of a rank statistic's variance uses.
pub(crate) fn midranks(values: &[f64]) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let rank = (start + end + 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        start = end;
    }
    (ranks, tie_term)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_share_the_mean_rank() {
        let (ranks, tie_term) = midranks(&[3.0, 1.0, 3.0, 2.0, 3.0]);
        assert_eq!(ranks, vec![4.0, 1.0, 4.0, 2.0, 4.0]);
        assert_eq!(tie_term, 24.0);
    }
}
