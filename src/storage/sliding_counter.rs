//! RL.SLIDINGCOUNTER's state: a [`record`](super::record) holding
//! `"<start> <current> <previous>"` (three canonical decimals, one space apart),
//! expiring when the current window stops weighing (start + 2·window).

use super::{record, Key};
use rl_core::algorithms::sliding_counter::{Counts, Store};
use rl_core::algorithms::MAX_COUNT;
use rl_core::decimal;
use rl_core::error::Result;

const WHAT: &str = "an RL.SLIDINGCOUNTER (a string \"<start> <current> <previous>\")";

/// Room for three u64 decimals and two spaces.
type Buf = [u8; 64];

fn parse(bytes: &[u8]) -> Option<Counts> {
    let mut fields = bytes.split(|&b| b == b' ');
    let mut next = || fields.next().and_then(decimal::canonical);
    let (start, current, previous) = (next()?, next()?, next()?);
    if fields.next().is_some() {
        return None;
    }
    Some(Counts {
        // A start RL could have written: a server time in ms.
        start: i64::try_from(start)
            .ok()
            .filter(|&s| s as u64 <= MAX_COUNT)?,
        current: u64::try_from(current).ok()?,
        previous: u64::try_from(previous).ok()?,
    })
}

fn format(c: Counts, buf: &mut Buf) -> &[u8] {
    let mut len = 0;
    for (i, v) in [c.start.max(0) as u64, c.current, c.previous]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            buf[len] = b' ';
            len += 1;
        }
        let mut digits = itoa::Buffer::new();
        let d = digits.format(v).as_bytes();
        buf[len..len + d.len()].copy_from_slice(d);
        len += d.len();
    }
    &buf[..len]
}

/// Reads the counts; None for an absent key. The value alone is the state (its
/// start says which window it counts): without an expiry it is read the same, and
/// the next write sets one.
pub fn load(key: &Key) -> Result<Option<Counts>> {
    Ok(record::load(key, WHAT, parse)?.map(|(counts, _)| counts))
}

/// Stores the counts and propagates `SET key "<start> <current> <previous>" PXAT t`.
pub fn store(key: &Key, store: Store) -> Result<()> {
    let mut buf = [0u8; 64];
    record::store(key, format(store.counts, &mut buf), store.expires_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_round_trip_and_parse_strictly() {
        let c = Counts {
            start: 1_700_000_040_000,
            current: 3,
            previous: 8,
        };
        let mut buf = [0u8; 64];
        assert_eq!(format(c, &mut buf), b"1700000040000 3 8");
        assert_eq!(parse(b"1700000040000 3 8"), Some(c));
        let max = Counts {
            start: MAX_COUNT as i64,
            current: u64::MAX,
            previous: u64::MAX,
        };
        assert_eq!(parse(format(max, &mut buf)), Some(max));
        for bad in [
            "",
            "1 2",
            "1 2 3 4",
            "1  2 3",
            " 1 2 3",
            "1 2 3 ",
            "01 2 3",
            "1 -2 3",
            "1 2 x",
            "a b c",
            "1,2,3",
            "9007199254740992 0 0",
            "1 18446744073709551616 0",
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
    }
}
