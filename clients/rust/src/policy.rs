//! RL.ALL's keys: the hand-written part of [`All`] (its options are generated).

use crate::generated::commands::{All, Policy};

impl All {
    /// No keys yet.
    pub fn new() -> Self {
        All::default()
    }

    /// Adds a key and its policy.
    ///
    /// ```
    /// use rl_client::{All, Fixed, Gcra};
    ///
    /// let all = All::new()
    ///     .key("{u42}:burst", Gcra::new(10, 1, "1s"))
    ///     .key("{u42}:day", Fixed::new(1000, "1d"))
    ///     .cost(2);
    /// assert_eq!(all.len(), 2);
    /// ```
    #[must_use]
    pub fn key(mut self, key: impl AsRef<[u8]>, policy: impl Into<Policy>) -> Self {
        self.push(key, policy);
        self
    }

    /// Adds a key and its policy in place.
    pub fn push(&mut self, key: impl AsRef<[u8]>, policy: impl Into<Policy>) -> &mut Self {
        self.entries.push((key.as_ref().to_vec(), policy.into()));
        self
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The keys and policies, in order.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &Policy)> {
        self.entries.iter().map(|(k, p)| (k.as_slice(), p))
    }
}

impl Policy {
    /// The policy's word in RL.ALL (`FIXED`, `GCRA`, …).
    pub fn word(&self) -> &'static str {
        self.params().names().word.unwrap_or_default()
    }
}
