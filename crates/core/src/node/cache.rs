//! A bounded cache of blocks by number with second-chance eviction: a lookup marks its
//! entry used; when the cache is full, a sweep drops the entries not used since the
//! last sweep (and, if they are too few, any others) until a quarter of it is free.
//! Cheaper per lookup than an exact LRU (no list to relink), which matters on GC's
//! hot paths; eviction costs one sweep per quarter of the capacity inserted.

use std::collections::HashMap;

/// One cached value and whether it was looked up since the last sweep.
struct Entry<V> {
    value: V,
    used: bool,
}

/// Values by key, at most `capacity` of them (see the module notes).
pub(crate) struct ClockCache<V> {
    map: HashMap<u32, Entry<V>, foldhash::fast::RandomState>,
    capacity: usize,
}

impl<V: Clone> ClockCache<V> {
    /// An empty cache of `capacity` entries (at least one).
    pub(crate) fn new(capacity: usize) -> ClockCache<V> {
        ClockCache {
            map: HashMap::with_hasher(foldhash::fast::RandomState::default()),
            capacity: capacity.max(1),
        }
    }

    /// The value of `key`, marked used.
    pub(crate) fn get(&mut self, key: u32) -> Option<V> {
        self.map.get_mut(&key).map(|e| {
            e.used = true;
            e.value.clone()
        })
    }

    /// Caches `value` for `key` (replacing any older one), evicting first if full.
    pub(crate) fn put(&mut self, key: u32, value: V) {
        if self.map.len() >= self.capacity && !self.map.contains_key(&key) {
            self.sweep();
        }
        self.map.insert(key, Entry { value, used: false });
    }

    /// Takes `key`'s value out of the cache.
    pub(crate) fn pop(&mut self, key: u32) -> Option<V> {
        self.map.remove(&key).map(|e| e.value)
    }

    /// Entries cached.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }

    /// Frees at least a quarter of the capacity: the entries not used since the last
    /// sweep first, then any.
    fn sweep(&mut self) {
        let target = self.capacity - self.capacity.div_ceil(4);
        self.map.retain(|_, e| std::mem::take(&mut e.used));
        let excess = self.map.len().saturating_sub(target);
        if excess > 0 {
            let drop: Vec<u32> = self.map.keys().take(excess).copied().collect();
            for k in drop {
                self.map.remove(&k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_used_entries_and_stays_bounded() {
        let mut c = ClockCache::new(8);
        for k in 0..8 {
            c.put(k, k * 10);
        }
        assert_eq!((c.get(3), c.get(5), c.get(99)), (Some(30), Some(50), None));
        c.put(8, 80);
        // The sweep dropped the unused entries; the used ones and the new one stay.
        assert_eq!(
            (c.len(), c.get(3), c.get(5), c.get(8)),
            (3, Some(30), Some(50), Some(80))
        );
        for k in 100..200 {
            c.put(k, k);
            assert!(c.len() <= 8);
            c.get(k);
        }
        assert_eq!(c.pop(199), Some(199));
        assert_eq!(c.pop(199), None);
        // Replacing a key never evicts.
        let mut d = ClockCache::new(2);
        d.put(1, 1);
        d.put(2, 2);
        d.put(2, 3);
        assert_eq!((d.get(1), d.get(2)), (Some(1), Some(3)));
    }
}
