//! The Rust core runs every vector of vectors/vectors.json (the tables of
//! docs/commands.md) through the in-memory executor: the module's parsers,
//! algorithms and state formats, no server.

mod common;

use common::vectors;
use rl_core::keyspace::Keyspace;
use rl_core::memory;

#[test]
fn the_core_answers_every_vector() {
    let epoch = vectors::epoch_ms();
    let all = vectors::all();
    assert!(all.len() >= 10, "{} vectors", all.len());
    for v in all {
        let mut ks = Keyspace::new();
        for (i, c) in v.calls.iter().enumerate() {
            let argv: Vec<&[u8]> = c.argv.iter().map(Vec::as_slice).collect();
            let got = memory::call(&mut ks, epoch + c.t, &argv);
            assert_eq!(
                got,
                c.reply,
                "vector {} call {} ({})",
                v.id,
                i + 1,
                String::from_utf8_lossy(&c.argv.join(&b' '))
            );
        }
    }
}
