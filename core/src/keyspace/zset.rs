//! A sorted set in Redis's order: by score, then by member bytes (memcmp, shorter
//! first on a common prefix). Scores are never NaN; `-0` and `0` are equal scores,
//! as C's `<` sees them, so they order by member.
//!
//! Redis keeps a small set as a listpack, which stores an integral score as an
//! integer, so `-0` comes back as `0`; a large one (a skiplist) keeps `-0`. That
//! is the one place the encoding shows in replies, so it is modelled: a set is a
//! listpack until it would pass 128 members or gets a member over 64 bytes
//! (`zset-max-listpack-entries` and `-value` at their defaults), and never goes back
//! (ZREM and ZREMRANGEBYSCORE do not convert).

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

/// One member in score order.
#[derive(Clone, Debug)]
pub struct Entry {
    pub score: f64,
    pub member: Vec<u8>,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Scores are never NaN, so partial_cmp always answers.
        self.score
            .partial_cmp(&other.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| self.member.cmp(&other.member))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

/// Redis's defaults for `zset-max-listpack-entries` and `zset-max-listpack-value`.
const LISTPACK_ENTRIES: usize = 128;
const LISTPACK_VALUE: usize = 64;

/// The member index (for ZSCORE) and the ordered set (for ranges), kept in step.
#[derive(Clone, Debug)]
pub struct Zset {
    scores: HashMap<Vec<u8>, f64>,
    order: BTreeSet<Entry>,
    /// Still a listpack in Redis (see the module's note).
    listpack: bool,
}

impl Default for Zset {
    fn default() -> Self {
        Self {
            scores: HashMap::new(),
            order: BTreeSet::new(),
            listpack: true,
        }
    }
}

/// What [`Zset::insert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insert {
    Added,
    Updated,
    /// The member was there with an equal score (`!=` is false): nothing changed.
    Unchanged,
}

impl Zset {
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets `member`'s score. The caller never passes NaN.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Insert {
        let known = self.scores.contains_key(member);
        if !known && (self.len() + 1 > LISTPACK_ENTRIES || member.len() > LISTPACK_VALUE) {
            self.listpack = false;
        }
        // A listpack stores an integral score as an integer: -0 becomes 0.
        let score = if self.listpack && score == 0.0 {
            0.0
        } else {
            score
        };
        match self.scores.get_mut(member) {
            Some(current) if *current == score => Insert::Unchanged,
            Some(current) => {
                let old = Entry {
                    score: *current,
                    member: member.to_vec(),
                };
                self.order.remove(&old);
                *current = score;
                self.order.insert(Entry {
                    score,
                    member: old.member,
                });
                Insert::Updated
            }
            None => {
                self.scores.insert(member.to_vec(), score);
                self.order.insert(Entry {
                    score,
                    member: member.to_vec(),
                });
                Insert::Added
            }
        }
    }

    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let score = self.scores.remove(member)?;
        self.order.remove(&Entry {
            score,
            member: member.to_vec(),
        });
        Some(score)
    }

    /// All members, lowest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Entry> {
        self.order.iter()
    }

    /// Members `start..=end` by rank (0-based, both within `0..len`), lowest
    /// first, or highest first when `reverse`. Walks from the nearer end, so the
    /// last member costs what the first does.
    pub fn by_rank(&self, start: usize, end: usize, reverse: bool) -> Vec<&Entry> {
        let len = self.len();
        if start > end || end >= len {
            return Vec::new();
        }
        let count = end - start + 1;
        // In ascending terms, the wanted members are ranks lo..=hi.
        let (lo, hi) = if reverse {
            (len - 1 - end, len - 1 - start)
        } else {
            (start, end)
        };
        let mut picked: Vec<&Entry> = if lo <= len - 1 - hi {
            self.order.iter().skip(lo).take(count).collect()
        } else {
            let mut v: Vec<&Entry> = self
                .order
                .iter()
                .rev()
                .skip(len - 1 - hi)
                .take(count)
                .collect();
            v.reverse();
            v
        };
        if reverse {
            picked.reverse();
        }
        picked
    }

    /// Members whose score is within the bounds (`Bound::Excluded` for Redis's
    /// `(`), lowest first. Empty when the bounds cross, as `zslIsInRange` says.
    pub fn by_score(
        &self,
        min: Bound<f64>,
        max: Bound<f64>,
    ) -> impl DoubleEndedIterator<Item = &Entry> {
        // Seek keys: the smallest entry of a score is (score, empty member).
        let seek = |score: f64| Entry {
            score,
            member: Vec::new(),
        };
        let lo = match min {
            Bound::Unbounded => Some(Bound::Unbounded),
            Bound::Included(s) => Some(Bound::Included(seek(s))),
            Bound::Excluded(s) if s == f64::INFINITY => None,
            Bound::Excluded(s) => Some(Bound::Included(seek(s.next_up()))),
        };
        let hi = match max {
            Bound::Unbounded => Some(Bound::Unbounded),
            Bound::Included(s) if s == f64::INFINITY => Some(Bound::Unbounded),
            Bound::Included(s) => Some(Bound::Excluded(seek(s.next_up()))),
            Bound::Excluded(s) => Some(Bound::Excluded(seek(s))),
        };
        let range = match (lo, hi) {
            (Some(lo), Some(hi)) if !crossed(&lo, &hi) => Some(self.order.range((lo, hi))),
            _ => None,
        };
        range.into_iter().flatten()
    }
}

/// Whether `lo..hi` is an empty range that BTreeSet::range would panic on
/// (start after end). `lo` is never Excluded, so equal keys are just empty.
fn crossed(lo: &Bound<Entry>, hi: &Bound<Entry>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b) | Bound::Excluded(b)) => a > b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, f64)]) -> Zset {
        let mut z = Zset::default();
        for (m, s) in pairs {
            z.insert(m.as_bytes(), *s);
        }
        z
    }

    fn members<'a>(it: impl Iterator<Item = &'a Entry>) -> Vec<String> {
        it.map(|e| String::from_utf8_lossy(&e.member).into_owned())
            .collect()
    }

    #[test]
    fn orders_by_score_then_member_bytes() {
        let z = set(&[("b", 1.0), ("a", 1.0), ("ab", 1.0), ("c", -0.0), ("d", 0.0)]);
        assert_eq!(members(z.iter()), ["c", "d", "a", "ab", "b"]);
    }

    #[test]
    fn minus_zero_survives_only_in_a_large_set() {
        let mut z = set(&[("a", -0.0)]);
        assert!(z.score(b"a").is_some_and(|s| s.is_sign_positive()));
        let long = [b'm'; 65];
        z.insert(&long, -0.0);
        z.insert(b"b", -0.0);
        assert!(z.score(&long).is_some_and(|s| s.is_sign_negative()));
        assert!(z.score(b"b").is_some_and(|s| s.is_sign_negative()));
        let mut z = Zset::default();
        for i in 0..=128 {
            z.insert(format!("{i}").as_bytes(), -0.0);
        }
        assert!(z.score(b"0").is_some_and(|s| s.is_sign_positive()));
        assert!(z.score(b"128").is_some_and(|s| s.is_sign_negative()));
    }

    #[test]
    fn equal_score_is_unchanged() {
        let mut z = set(&[("a", 0.0)]);
        assert_eq!(z.insert(b"a", -0.0), Insert::Unchanged);
        assert!(z.score(b"a").is_some_and(|s| s.is_sign_positive()));
        assert_eq!(z.insert(b"a", 2.0), Insert::Updated);
        assert_eq!(z.iter().count(), 1);
    }

    #[test]
    fn ranks_from_either_end() {
        let z = set(&[("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)]);
        assert_eq!(members(z.by_rank(0, 1, false).into_iter()), ["a", "b"]);
        assert_eq!(members(z.by_rank(2, 3, false).into_iter()), ["c", "d"]);
        assert_eq!(members(z.by_rank(0, 1, true).into_iter()), ["d", "c"]);
        assert_eq!(members(z.by_rank(3, 3, true).into_iter()), ["a"]);
        assert!(z.by_rank(2, 1, false).is_empty());
    }

    #[test]
    fn score_bounds() {
        let z = set(&[
            ("a", 1.0),
            ("b", 2.0),
            ("c", 2.0),
            ("d", 3.0),
            ("e", f64::INFINITY),
        ]);
        let r = |min, max| members(z.by_score(min, max));
        use Bound::*;
        assert_eq!(r(Included(2.0), Included(2.0)), ["b", "c"]);
        assert_eq!(r(Excluded(1.0), Excluded(3.0)), ["b", "c"]);
        assert_eq!(r(Excluded(2.0), Included(2.0)), Vec::<String>::new());
        assert_eq!(r(Included(3.0), Included(1.0)), Vec::<String>::new());
        assert_eq!(r(Excluded(3.0), Included(f64::INFINITY)), ["e"]);
        assert_eq!(r(Excluded(f64::INFINITY), Unbounded), Vec::<String>::new());
        assert_eq!(
            r(Unbounded, Excluded(f64::NEG_INFINITY)),
            Vec::<String>::new()
        );
        assert_eq!(
            members(z.by_score(Unbounded, Included(2.0)).rev()),
            ["c", "b", "a"]
        );
    }
}
