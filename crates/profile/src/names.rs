//! Interned names: each distinct function and object name of a call graph held once, in
//! one buffer, and numbered in order of appearance.
//!
//! Written here rather than with string-interner (which did this before): a name known
//! to be new — each unnamed runtime region's own `[anon 0x…]`, 1.2 M of them in one
//! profile — is added without hashing it, which that crate cannot do, and the cache
//! misses of hashing 1.2 M names that cannot repeat were a quarter of `show`.

use std::hash::BuildHasher;

/// The names, looked up by number.
#[derive(Clone, Default)]
pub(crate) struct NameList {
    text: String,
    /// Where each name ends in `text`.
    ends: Vec<usize>,
}

impl NameList {
    /// The name numbered `n` (empty if there is none: never, for a number given here).
    pub(crate) fn get(&self, n: u32) -> &str {
        let n = n as usize;
        let start = if n == 0 { 0 } else { self.ends.get(n - 1).copied().unwrap_or(0) };
        let end = self.ends.get(n).copied().unwrap_or(start);
        self.text.get(start..end).unwrap_or("")
    }

    fn push(&mut self, name: &str) -> u32 {
        self.text.push_str(name);
        self.ends.push(self.text.len());
        self.ends.len() as u32 - 1
    }
}

/// The names being numbered: the list, and an index to find a name already in it.
pub(crate) struct Names {
    list: NameList,
    /// (number, 32 bits of the name's hash): the table grows without reading names
    /// again, and a name is compared only when those bits match.
    index: hashbrown::HashTable<(u32, u32)>,
}

impl Names {
    /// Room for `names` names of about `bytes` bytes in all, made once.
    pub(crate) fn with_capacity(names: usize, bytes: usize) -> Names {
        Names {
            list: NameList { text: String::with_capacity(bytes), ends: Vec::with_capacity(names) },
            index: hashbrown::HashTable::with_capacity(names),
        }
    }

    /// The number of `name`, numbered when new.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        let hash = rustc_hash::FxBuildHasher.hash_one(name) as u32;
        let list = &self.list;
        let entry = self.index.entry(spread(hash), |&(n, h)| h == hash && list.get(n) == name, |&(_, h)| spread(h));
        match entry {
            hashbrown::hash_table::Entry::Occupied(found) => found.get().0,
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                let n = self.list.push(name);
                vacant.insert((n, hash));
                n
            }
        }
    }

    /// A number for `name`, which the caller knows no other name given here equals and
    /// which will never be looked up by [`intern`](Self::intern): not hashed, not indexed.
    pub(crate) fn push_new(&mut self, name: &str) -> u32 {
        self.list.push(name)
    }

    /// The list, its index let go (nothing looks a name up once a graph is built).
    pub(crate) fn into_list(self) -> NameList {
        self.list
    }
}

/// A table's 64-bit hash from the 32 bits kept: spread by an odd multiplier, since the
/// table picks buckets by the low bits and tells entries apart by the top ones.
pub(crate) fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_numbered_once_in_order_and_read_back() {
        let mut names = Names::with_capacity(2, 8);
        let a = names.intern("main");
        let b = names.intern("[jit]");
        let new = names.push_new("[anon 0x10]");
        assert_eq!((a, b, new), (0, 1, 2));
        assert_eq!(names.intern("main"), a);
        for i in 0..1000 {
            assert_eq!(names.intern(&format!("f{i}")), 3 + i);
        }
        assert_eq!(names.intern("f500"), 503, "found after the table grew");
        let list = names.into_list();
        assert_eq!((list.get(a), list.get(b), list.get(new), list.get(503)), ("main", "[jit]", "[anon 0x10]", "f500"));
        assert_eq!(list.get(1003), "");
        assert_eq!(NameList::default().get(0), "");
    }
}
