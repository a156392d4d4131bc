//! Every vector of vectors/vectors.json (the tables of docs/commands.md) run twice
//! without a server: by the Rust core (the in-memory executor: the module's
//! parsers, algorithms and state formats) and by the Functions library
//! (functions/rl.lua, in-process). Both must answer every call as the file says.

use crate::twin::{library_runs, LuaTwin};
use crate::vectors_file::{self as vectors, Call};
use rl_core::commands;
use rl_core::keyspace::{Keyspace, Value};
use rl_core::{memory, table};

/// A call's line, for messages.
fn line(c: &Call) -> String {
    String::from_utf8_lossy(&c.argv.join(&b' ')).into_owned()
}

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
            assert_eq!(got, c.reply, "vector {} call {} ({})", v.id, i + 1, line(c));
        }
    }
}

/// The library's FCALL for a command line: None for a native command, and for a
/// command the library does not have (CL.THROTTLE, the module's alone).
fn fcall(
    lua: &mut LuaTwin,
    ks: &mut Keyspace,
    now: i64,
    argv: &[&[u8]],
) -> Option<Result<Value, String>> {
    let command = commands::find(argv[0])?;
    let function = command.function?;
    let (keys, args) = if command.name == table::ALL.name {
        let n: usize = std::str::from_utf8(argv[1]).ok()?.parse().ok()?;
        (&argv[2..2 + n], &argv[2 + n..])
    } else {
        (&argv[1..2], &argv[2..])
    };
    Some(lua.fcall(ks, now, function, keys, args))
}

#[test]
fn the_library_answers_every_vector_of_its_commands() {
    let epoch = vectors::epoch_ms();
    let mut lua = LuaTwin::rl();
    let mut ran = 0;
    for v in vectors::all() {
        // A vector of a command the library does not run (CL.THROTTLE's) is the
        // core's alone: its native reads follow the states those calls write.
        let skipped = v
            .calls
            .iter()
            .any(|c| commands::find(&c.argv[0]).is_some_and(|command| !library_runs(command)));
        if skipped {
            continue;
        }
        let mut ks = Keyspace::new();
        for (i, c) in v.calls.iter().enumerate() {
            let argv: Vec<&[u8]> = c.argv.iter().map(Vec::as_slice).collect();
            let now = epoch + c.t;
            let got = match commands::find(argv[0]) {
                Some(_) => fcall(&mut lua, &mut ks, now, &argv).expect("a library call"),
                None => ks.command(now, &argv),
            };
            assert_eq!(got, c.reply, "vector {} call {} ({})", v.id, i + 1, line(c));
            ran += 1;
        }
    }
    assert!(ran >= 50, "{ran} calls");
}
