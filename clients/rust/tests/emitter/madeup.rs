//! Built only by test_emitter.py, in a copy of the crate generated from a command table
//! with RL.MADEUP added: the new command is there, checked and sent, with no hand edit.

use rl_client::{All, Backend, Batch, Error, Madeup};

fn words(batch: &Batch) -> Vec<String> {
    let cmd = batch.pipeline().cmd_iter().last().expect("one call");
    cmd.args_iter()
        .map(|a| match a {
            redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        })
        .collect()
}

#[test]
fn rl_madeup_is_sent() {
    let mut b = Batch::new(Backend::Module);
    b.madeup(
        "k",
        &Madeup::new(5)
            .loud()
            .every("1d")
            .tz("Europe/Berlin")
            .cost(2),
    );
    b.refusal().unwrap();
    assert_eq!(
        words(&b),
        [
            "RL.MADEUP",
            "k",
            "5",
            "COST",
            "2",
            "EVERY",
            "86400000ms",
            "TZ",
            "Europe/Berlin",
            "LOUD"
        ]
    );
    let mut b = Batch::new(Backend::Library);
    b.madeup("k", &Madeup::new(5).on("monday"));
    assert_eq!(
        words(&b),
        ["FCALL", "rl_madeup", "1", "k", "5", "ON", "monday"]
    );
}

#[test]
fn rl_madeup_is_checked() {
    for (q, why) in [
        (Madeup::new(0), "limit must be an integer from 1"),
        (Madeup::new(5).tz("a").tz("b"), "TZ given twice"),
        (Madeup::new(5).tz(""), "TZ must be 1 to 64 bytes"),
        (Madeup::new(5).every("1.5ms"), "not a duration"),
        (Madeup::new(5).loud().loud(), "LOUD given twice"),
        (Madeup::new(5).quiet(), "QUIET does not apply to RL.MADEUP"),
        (
            Madeup::new(5).cost(1).refund(1),
            "COST and REFUND exclude one another",
        ),
    ] {
        let mut b = Batch::new(Backend::Module);
        b.madeup("k", &q);
        let err = b.refusal().unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains(why)),
            "{q:?}: {err:?}"
        );
    }
}

#[test]
fn rl_madeup_is_a_policy() {
    let mut b = Batch::new(Backend::Module);
    b.all(&All::new().key("k", Madeup::new(5).tz("UTC")));
    assert_eq!(words(&b), ["RL.ALL", "1", "k", "MADEUP", "5", "TZ", "UTC"]);
    let mut b = Batch::new(Backend::Module);
    b.all(&All::new().key("k", Madeup::new(5).quiet().loud()));
    assert_eq!(
        words(&b),
        ["RL.ALL", "1", "k", "LOUD", "QUIET", "MADEUP", "5"]
    );
    let mut b = Batch::new(Backend::Module);
    b.all(&All::new().key("k", Madeup::new(5).cost(1)));
    assert!(matches!(b.refusal(), Err(Error::InvalidArgument(_))));
}
