//! Independent pieces of work spread over the machine's cores, results in input order: a
//! report's thousand histories and their charts.

/// `f` over `items` on as many threads as there are cores, results in the order of
/// `items`; each thread keeps one `state` (made by `state()`) for all the items it takes.
pub fn map<T: Sync, S, R: Send>(
    items: &[T],
    state: impl Fn() -> S + Sync,
    f: impl Fn(&T, &mut S) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len()).max(1);
    let work = |chunk: &[T]| {
        let mut s = state();
        chunk.iter().map(|item| f(item, &mut s)).collect::<Vec<R>>()
    };
    if threads == 1 {
        return work(items);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            items.chunks(items.len().div_ceil(threads)).map(|chunk| scope.spawn(|| work(chunk))).collect();
        // A worker only panics on a bug; carry the panic over.
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_input_order_and_each_thread_its_state() {
        let items: Vec<u32> = (0..1000).collect();
        let doubled = super::map(
            &items,
            || 0u32,
            |&x, seen| {
                *seen += 1;
                (x * 2, *seen)
            },
        );
        assert_eq!(doubled.iter().map(|d| d.0).collect::<Vec<_>>(), (0..1000).map(|x| x * 2).collect::<Vec<_>>());
        // Each thread counts from 1 over its own run of items.
        assert_eq!(doubled[0].1, 1);
        assert!(super::map(&[] as &[u32], || (), |&x, _| x).is_empty());
    }
}
