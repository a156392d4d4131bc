//! A Space-Saving sketch (Metwally, Agrawal, El Abbadi, 2005): the keys seen most
//! often in a stream, in memory fixed by its capacity, whatever the number of
//! distinct keys.
//!
//! While it has room, every key seen gets an entry and an exact count. When it is
//! full, a key it does not hold replaces the entry with the smallest count, taking
//! that count plus one: its `error` (the count it inherited) is how much its count
//! may overstate it. So, with `n` keys seen in all and `capacity` entries, a held
//! key's count is at most `error` ≤ n / capacity above the truth and never below
//! it, and every key seen more than n / capacity times is held.
//!
//! The entries sit in a binary min-heap by count, so a hit or a replacement costs
//! O(log capacity), and an open-addressing table of their indices finds a key's
//! entry. Each key is hashed once per sighting (its hash kept with its entry, for
//! the replacement), with the standard library's keyed hasher, as keys come from
//! clients; an entry that makes way keeps its key's buffer for the newcomer, so a
//! sighting allocates nothing once the sketch is warm.

use std::hash::{BuildHasher, RandomState};

use crate::algorithms::Millis;

/// One held key.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: Vec<u8>,
    /// Times seen, counting what it inherited: never below the truth.
    pub count: u64,
    /// How much of `count` it may not have earned (0: exact).
    pub error: u64,
    /// The `now` of its last sighting.
    pub last: Millis,
    /// Where it sits in the heap.
    slot: usize,
    hash: u64,
}

/// The sketch: at most `capacity` entries.
#[derive(Debug, Clone)]
pub struct SpaceSaving {
    capacity: usize,
    entries: Vec<Entry>,
    /// Entry indices, a min-heap by count.
    heap: Vec<usize>,
    /// Open addressing, linear probing: an entry's index + 1 per bucket, 0 for an
    /// empty one; a power of two at least twice the capacity, so a probe always ends.
    buckets: Vec<u32>,
    hasher: RandomState,
    /// Keys seen in all (n).
    seen: u64,
    /// Whether an entry made way for another key: until then it holds every key
    /// seen.
    evicted: bool,
}

/// Where a key is in the buckets: found in this bucket, or absent (this empty
/// bucket is where it would go).
enum Probe {
    Found(usize),
    Absent(usize),
}

impl SpaceSaving {
    pub fn new(capacity: usize) -> Self {
        // The capacity is at most rl.top-size's ceiling, so indices fit a u32.
        let buckets = capacity.saturating_mul(2).next_power_of_two().max(2);
        SpaceSaving {
            capacity,
            entries: Vec::with_capacity(capacity),
            heap: Vec::with_capacity(capacity),
            buckets: vec![0; buckets],
            hasher: RandomState::new(),
            seen: 0,
            evicted: false,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keys seen since it was made or cleared.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    fn is_full(&self) -> bool {
        self.entries.len() >= self.capacity
    }

    /// The most a key it does not hold can have been seen: the smallest count
    /// held once an entry made way for another key, else 0.
    pub fn floor(&self) -> u64 {
        if self.evicted {
            self.heap.first().map_or(0, |&i| self.entries[i].count)
        } else {
            0
        }
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        match self.probe(self.hasher.hash_one(key), key) {
            Probe::Found(b) => Some(&self.entries[self.index_at(b)]),
            Probe::Absent(_) => None,
        }
    }

    /// Forgets every key, keeping the table's memory.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.heap.clear();
        self.buckets.fill(0);
        self.seen = 0;
        self.evicted = false;
    }

    /// One sighting of `key` at `now`.
    pub fn offer(&mut self, key: &[u8], now: Millis) {
        self.seen = self.seen.saturating_add(1);
        if self.capacity == 0 {
            return;
        }
        let hash = self.hasher.hash_one(key);
        match self.probe(hash, key) {
            Probe::Found(b) => {
                let i = self.index_at(b);
                let e = &mut self.entries[i];
                e.count = e.count.saturating_add(1);
                e.last = now;
                let slot = e.slot;
                self.sift_down(slot);
            }
            Probe::Absent(b) if !self.is_full() => {
                let i = self.entries.len();
                let slot = self.heap.len();
                self.entries.push(Entry {
                    key: key.to_vec(),
                    count: 1,
                    error: 0,
                    last: now,
                    slot,
                    hash,
                });
                self.heap.push(i);
                self.buckets[b] = i as u32 + 1;
                self.sift_up(slot);
            }
            Probe::Absent(_) => self.replace_smallest(key, hash, now),
        }
    }

    /// Full: the smallest entry makes way, and the newcomer inherits its count.
    fn replace_smallest(&mut self, key: &[u8], hash: u64, now: Millis) {
        let Some(&i) = self.heap.first() else {
            return;
        };
        let old = &self.entries[i];
        if let Probe::Found(b) = self.probe(old.hash, &old.key) {
            self.unlink(b);
        }
        self.evicted = true;
        let e = &mut self.entries[i];
        e.key.clear();
        e.key.extend_from_slice(key);
        // A long key that passed through does not keep its buffer's size.
        if e.key.capacity() > 2 * key.len() + 64 {
            e.key.shrink_to_fit();
        }
        e.hash = hash;
        e.error = e.count;
        e.count = e.count.saturating_add(1);
        e.last = now;
        if let Probe::Absent(b) = self.probe(hash, key) {
            self.buckets[b] = i as u32 + 1;
        }
        self.sift_down(0);
    }

    fn index_at(&self, bucket: usize) -> usize {
        self.buckets[bucket] as usize - 1
    }

    fn probe(&self, hash: u64, key: &[u8]) -> Probe {
        let mask = self.buckets.len() - 1;
        let mut b = hash as usize & mask;
        loop {
            if self.buckets[b] == 0 {
                return Probe::Absent(b);
            }
            let e = &self.entries[self.index_at(b)];
            if e.hash == hash && e.key == key {
                return Probe::Found(b);
            }
            b = (b + 1) & mask;
        }
    }

    /// Empties bucket `hole`, moving back the entries after it whose probe passes
    /// through it (backward-shift deletion: no tombstones).
    fn unlink(&mut self, mut hole: usize) {
        let mask = self.buckets.len() - 1;
        self.buckets[hole] = 0;
        let mut next = (hole + 1) & mask;
        while self.buckets[next] != 0 {
            let home = self.entries[self.index_at(next)].hash as usize & mask;
            // Its probe from `home` reaches `next` through `hole`.
            if next.wrapping_sub(home) & mask >= next.wrapping_sub(hole) & mask {
                self.buckets[hole] = self.buckets[next];
                self.buckets[next] = 0;
                hole = next;
            }
            next = (next + 1) & mask;
        }
    }

    fn count_at(&self, slot: usize) -> u64 {
        self.entries[self.heap[slot]].count
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.entries[self.heap[a]].slot = a;
        self.entries[self.heap[b]].slot = b;
    }

    fn sift_up(&mut self, mut slot: usize) {
        while slot > 0 {
            let parent = (slot - 1) / 2;
            if self.count_at(parent) <= self.count_at(slot) {
                break;
            }
            self.swap(parent, slot);
            slot = parent;
        }
    }

    fn sift_down(&mut self, mut slot: usize) {
        loop {
            let mut least = slot;
            for child in [2 * slot + 1, 2 * slot + 2] {
                if child < self.heap.len() && self.count_at(child) < self.count_at(least) {
                    least = child;
                }
            }
            if least == slot {
                break;
            }
            self.swap(slot, least);
            slot = least;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn exact(stream: &[u16]) -> HashMap<u16, u64> {
        let mut counts = HashMap::new();
        for k in stream {
            *counts.entry(*k).or_insert(0) += 1;
        }
        counts
    }

    fn key(k: u16) -> [u8; 2] {
        k.to_be_bytes()
    }

    #[test]
    fn exact_while_it_has_room_then_the_smallest_makes_way() {
        let mut s = SpaceSaving::new(2);
        for (k, t) in [(1, 10), (1, 11), (2, 12)] {
            s.offer(&key(k), t);
        }
        assert_eq!(
            s.get(&key(1)).map(|e| (e.count, e.error, e.last)),
            Some((2, 0, 11))
        );
        assert_eq!(s.floor(), 0, "every key seen is held");
        s.offer(&key(3), 13);
        assert!(s.get(&key(2)).is_none(), "the smallest made way");
        let e = s.get(&key(3)).map(|e| (e.count, e.error, e.last));
        assert_eq!(e, Some((2, 1, 13)), "inherits its count");
        assert_eq!(s.floor(), 2);
        assert_eq!(s.entries().len(), 2);
        s.clear();
        assert_eq!((s.entries().len(), s.seen(), s.floor()), (0, 0, 0));
    }

    #[test]
    fn a_sketch_without_entries_holds_nothing() {
        let mut s = SpaceSaving::new(0);
        s.offer(b"k", 1);
        assert!(s.entries().is_empty());
        assert_eq!(s.seen(), 1);
    }

    /// Many replacements in a small table: every held key found, every other not,
    /// whatever the probing and the backward shifts left behind.
    #[test]
    fn the_table_finds_exactly_the_held_keys() {
        let mut s = SpaceSaving::new(7);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for t in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % 50) as u16;
            s.offer(&key(k), t);
            if t % 97 == 0 {
                let held: Vec<u16> = s
                    .entries()
                    .iter()
                    .map(|e| u16::from_be_bytes([e.key[0], e.key[1]]))
                    .collect();
                for k in 0..50u16 {
                    assert_eq!(s.get(&key(k)).is_some(), held.contains(&k), "{k} at {t}");
                }
            }
        }
        assert_eq!(s.entries().iter().map(|e| e.count).sum::<u64>(), 20_000);
    }

    proptest! {
        /// Against an exact count: every held count within [truth, truth + error],
        /// every error at most n / capacity, every key above n / capacity held, the
        /// heap's root the smallest count, and no more entries than its capacity.
        #[test]
        fn counts_stay_within_the_documented_bound(
            capacity in 1usize..12,
            stream in proptest::collection::vec(
                // A skewed stream: small keys much more often.
                (0u16..40).prop_map(|k| k * k / 40), 0..400),
        ) {
            let mut s = SpaceSaving::new(capacity);
            for (t, k) in stream.iter().enumerate() {
                s.offer(&key(*k), t as Millis);
            }
            let truth = exact(&stream);
            let n = stream.len() as u64;
            prop_assert_eq!(s.seen(), n);
            prop_assert!(s.entries().len() <= capacity);
            let mut held_sum = 0;
            for e in s.entries() {
                let k = u16::from_be_bytes([e.key[0], e.key[1]]);
                let real = truth[&k];
                prop_assert!(e.count >= real && e.count - e.error <= real,
                    "key {} count {} error {} truth {}", k, e.count, e.error, real);
                prop_assert!(e.error * capacity as u64 <= n);
                if e.error == 0 {
                    prop_assert_eq!(e.count, real, "exact without error");
                }
                prop_assert!(e.count >= s.floor());
                held_sum += e.count;
            }
            prop_assert_eq!(held_sum, n, "Space-Saving's counts add up to n");
            for (k, real) in &truth {
                if real * capacity as u64 > n {
                    prop_assert!(s.get(&key(*k)).is_some(), "key {} seen {} times", k, real);
                }
                if s.get(&key(*k)).is_none() {
                    prop_assert!(*real <= s.floor());
                }
            }
            if truth.len() <= capacity {
                for (k, real) in &truth {
                    prop_assert_eq!(s.get(&key(*k)).map(|e| e.count), Some(*real));
                }
            }
        }
    }
}
