//! Order statistics of large implicit sets (Walsh averages, pairwise differences) found by
//! counting instead of materializing and sorting all n² elements.
//!
//! With n = 10,000 rounds there are 5·10⁷ Walsh averages (400 MB as f64, seconds to sort).
//! Counting the elements ≤ t takes O(n) with two pointers over sorted inputs, so a binary
//! search over the 64-bit ordered representation of f64 finds any order statistic exactly in
//! at most 64 counts. Exactness holds because each element is computed by the same monotone
//! floating-point expression in the counter as anywhere else.

/// Maps an f64 to a u64 whose unsigned order equals the numeric order of finite values.
fn ordered_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

fn from_ordered_key(key: u64) -> f64 {
    if key >> 63 == 1 {
        f64::from_bits(key & !(1 << 63))
    } else {
        f64::from_bits(!key)
    }
}

/// The `k`-th smallest (1-based) element of a multiset of finite values given by
/// `count_le(t)` = number of elements ≤ t, where every element lies in `[lo, hi]`
/// and 1 ≤ k ≤ count_le(hi).
pub(crate) fn kth_smallest(k: usize, lo: f64, hi: f64, count_le: impl Fn(f64) -> usize) -> f64 {
    let (mut lo, mut hi) = (ordered_key(lo), ordered_key(hi));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if count_le(from_ordered_key(mid)) >= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    from_ordered_key(hi)
}

/// The Walsh average of two values, the one expression used everywhere for it.
#[inline]
pub(crate) fn walsh(x: f64, y: f64) -> f64 {
    (x + y) / 2.0
}

/// Number of Walsh averages (x_i + x_j)/2, i ≤ j, that are ≤ t; `sorted` ascending.
pub(crate) fn count_walsh_le(sorted: &[f64], t: f64) -> usize {
    let mut count = 0;
    let mut end = sorted.len();
    for (i, &x) in sorted.iter().enumerate() {
        while end > i && walsh(x, sorted[end - 1]) > t {
            end -= 1;
        }
        if end <= i {
            break;
        }
        count += end - i;
    }
    count
}

/// The `k`-th smallest (1-based) Walsh average of `sorted` (ascending, finite, non-empty).
pub(crate) fn kth_walsh(sorted: &[f64], k: usize) -> f64 {
    let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
    kth_smallest(k, lo, hi, |t| count_walsh_le(sorted, t))
}

/// Number of differences y_j − x_i that are ≤ t; both slices ascending.
pub(crate) fn count_differences_le(x: &[f64], y: &[f64], t: f64) -> usize {
    let mut count = 0;
    let mut start = 0;
    for &yj in y {
        while start < x.len() && yj - x[start] > t {
            start += 1;
        }
        count += x.len() - start;
    }
    count
}

/// Up to this many differences, materializing them beats 64 counting passes.
const MATERIALIZE_DIFFERENCES: usize = 1024;

/// Every difference y_j − x_i, sorted, when there are at most [`MATERIALIZE_DIFFERENCES`]
/// (for several order statistics of the same small samples).
pub(crate) fn small_sorted_differences(x: &[f64], y: &[f64]) -> Option<Vec<f64>> {
    if x.len() * y.len() > MATERIALIZE_DIFFERENCES {
        return None;
    }
    let mut all: Vec<f64> = y.iter().flat_map(|yj| x.iter().map(move |xi| yj - xi)).collect();
    all.sort_unstable_by(f64::total_cmp);
    Some(all)
}

/// The `k`-th smallest (1-based) difference y_j − x_i; both slices ascending, finite, non-empty.
pub(crate) fn kth_difference(x: &[f64], y: &[f64], k: usize) -> f64 {
    if x.len() * y.len() <= MATERIALIZE_DIFFERENCES {
        let mut all: Vec<f64> = y.iter().flat_map(|yj| x.iter().map(move |xi| yj - xi)).collect();
        return *all.select_nth_unstable_by(k - 1, f64::total_cmp).1;
    }
    // Halve the range of values until few differences lie in it, then list those: about
    // ten counts instead of up to 64 when the differences are spread smoothly.
    let window_limit = x.len() + y.len();
    let floor = y[0] - x[x.len() - 1];
    // Invariant: `below` differences are ≤ lo (none while lo is −∞), `up_to` are ≤ hi,
    // and below < k ≤ up_to.
    let (mut lo, mut below) = (f64::NEG_INFINITY, 0);
    let (mut hi, mut up_to) = (y[y.len() - 1] - x[0], x.len() * y.len());
    while up_to - below > window_limit {
        let from = if below == 0 { floor } else { lo };
        let mid = from + (hi - from) / 2.0;
        if !(mid > from && mid < hi) {
            // The values are too close to split further: search their bit patterns.
            return kth_smallest(k, from, hi, |t| count_differences_le(x, y, t));
        }
        match count_differences_le(x, y, mid) {
            c if c >= k => (hi, up_to) = (mid, c),
            c => (lo, below) = (mid, c),
        }
    }
    let mut window = differences_between(x, y, lo, hi);
    *window.select_nth_unstable_by(k - below - 1, f64::total_cmp).1
}

/// The differences y_j − x_i in (lo, hi], computed as [`count_differences_le`] compares
/// them; both slices ascending.
fn differences_between(x: &[f64], y: &[f64], lo: f64, hi: f64) -> Vec<f64> {
    let mut window = Vec::new();
    // For each y_j, the x_i with y_j − x_i ≤ hi start at `above_hi`, those with
    // y_j − x_i ≤ lo at `above_lo`; both only move right as y_j grows.
    let (mut above_hi, mut above_lo) = (0, 0);
    for &yj in y {
        while above_hi < x.len() && yj - x[above_hi] > hi {
            above_hi += 1;
        }
        while above_lo < x.len() && yj - x[above_lo] > lo {
            above_lo += 1;
        }
        window.extend(x[above_hi..above_lo.max(above_hi)].iter().map(|xi| yj - xi));
    }
    window
}

/// Median of the `total` elements reachable through `kth` (1-based), as numpy defines it:
/// the mean of the two middle elements when `total` is even.
pub(crate) fn median_by_rank(total: usize, kth: impl Fn(usize) -> f64) -> f64 {
    if total % 2 == 1 {
        kth(total / 2 + 1)
    } else {
        (kth(total / 2) + kth(total / 2 + 1)) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sorted(mut v: Vec<f64>) -> Vec<f64> {
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn ordered_key_round_trips_and_orders() {
        let values = [-1e300, -2.5, -0.0, 0.0, 1e-310, 3.0, f64::MAX];
        for pair in values.windows(2) {
            assert!(ordered_key(pair[0]) < ordered_key(pair[1]));
        }
        for v in values {
            assert_eq!(from_ordered_key(ordered_key(v)).to_bits(), v.to_bits());
        }
    }

    proptest! {
        #[test]
        fn kth_walsh_matches_sorting(v in prop::collection::vec(-5.0f64..5.0, 1..40), pick in 0.0f64..1.0) {
            let s = sorted(v);
            let mut all = Vec::new();
            for i in 0..s.len() { for j in i..s.len() { all.push(walsh(s[i], s[j])); } }
            all.sort_by(f64::total_cmp);
            let k = 1 + ((all.len() - 1) as f64 * pick) as usize;
            prop_assert_eq!(kth_walsh(&s, k), all[k - 1]);
        }

        #[test]
        fn kth_difference_matches_sorting(
            x in prop::collection::vec(-5.0f64..5.0, 1..90),
            y in prop::collection::vec(-5.0f64..5.0, 1..90),
            pick in 0.0f64..1.0,
        ) {
            let (x, y) = (sorted(x), sorted(y));
            let mut all: Vec<f64> = y.iter().flat_map(|b| x.iter().map(move |a| b - a)).collect();
            all.sort_by(f64::total_cmp);
            let k = 1 + ((all.len() - 1) as f64 * pick) as usize;
            prop_assert_eq!(kth_difference(&x, &y, k), all[k - 1]);
        }

        #[test]
        fn kth_difference_handles_ties_and_clusters(
            x in prop::collection::vec(0u8..4, 20..80),
            y in prop::collection::vec(0u8..4, 20..80),
            spread in prop::sample::select(vec![1.0, 1e-9, 1e-300]),
            pick in 0.0f64..1.0,
        ) {
            let x = sorted(x.into_iter().map(|v| 1.0 + f64::from(v) * spread).collect());
            let y = sorted(y.into_iter().map(|v| 1.0 + f64::from(v) * spread).collect());
            let mut all: Vec<f64> = y.iter().flat_map(|b| x.iter().map(move |a| b - a)).collect();
            all.sort_by(f64::total_cmp);
            let k = 1 + ((all.len() - 1) as f64 * pick) as usize;
            prop_assert_eq!(kth_difference(&x, &y, k), all[k - 1]);
        }

        #[test]
        fn kth_walsh_handles_ties(v in prop::collection::vec(0u8..4, 1..30), pick in 0.0f64..1.0) {
            let s = sorted(v.into_iter().map(f64::from).collect());
            let mut all = Vec::new();
            for i in 0..s.len() { for j in i..s.len() { all.push(walsh(s[i], s[j])); } }
            all.sort_by(f64::total_cmp);
            let k = 1 + ((all.len() - 1) as f64 * pick) as usize;
            prop_assert_eq!(kth_walsh(&s, k), all[k - 1]);
        }
    }
}
