//! The keyspace's tricky corners, each as Redis 7.0 answers it (checked against
//! redis-server 7.0.15 when written).

use super::*;

const NOW: i64 = 1_000_000;

fn run(ks: &mut Keyspace, now: i64, args: &[&str]) -> Result<Value, String> {
    let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    ks.command(now, &argv)
}

fn ok(ks: &mut Keyspace, now: i64, args: &[&str]) -> Value {
    run(ks, now, args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

fn bulks(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| bulk(s)).collect())
}

#[test]
fn a_key_expiring_now_is_still_there_and_gone_a_ms_later() {
    let mut ks = Keyspace::new();
    ok(&mut ks, NOW, &["SET", "k", "v", "PXAT", &NOW.to_string()]);
    assert_eq!(ok(&mut ks, NOW, &["GET", "k"]), bulk("v"));
    assert_eq!(ok(&mut ks, NOW, &["PTTL", "k"]), Value::Int(0));
    assert_eq!(ok(&mut ks, NOW, &["PEXPIRETIME", "k"]), Value::Int(NOW));
    assert_eq!(ks.kind(b"k", NOW), Kind::String);
    assert_eq!(ks.kind(b"k", NOW + 1), Kind::Empty);
    assert_eq!(ok(&mut ks, NOW + 1, &["GET", "k"]), Value::Nil);
    assert_eq!(ok(&mut ks, NOW + 1, &["EXISTS", "k"]), Value::Int(0));
    assert_eq!(ok(&mut ks, NOW + 1, &["PTTL", "k"]), Value::Int(-2));
    assert!(ks.snapshot(NOW + 1).0.is_empty());
}

#[test]
fn pexpireat_now_or_earlier_deletes_at_once() {
    let mut ks = Keyspace::new();
    ok(&mut ks, NOW, &["SET", "k", "v"]);
    assert_eq!(ok(&mut ks, NOW, &["PTTL", "k"]), Value::Int(-1));
    assert_eq!(
        ok(&mut ks, NOW, &["PEXPIREAT", "k", &(NOW + 5).to_string()]),
        Value::Int(1)
    );
    assert_eq!(ok(&mut ks, NOW, &["PTTL", "k"]), Value::Int(5));
    assert_eq!(
        ok(&mut ks, NOW, &["PEXPIREAT", "k", &NOW.to_string()]),
        Value::Int(1)
    );
    assert_eq!(ok(&mut ks, NOW, &["EXISTS", "k"]), Value::Int(0));
    assert_eq!(ok(&mut ks, NOW, &["PEXPIREAT", "k", "1"]), Value::Int(0));
}

#[test]
fn set_replaces_the_expiry_unless_keepttl() {
    let mut ks = Keyspace::new();
    ok(&mut ks, NOW, &["SET", "k", "1", "PX", "100"]);
    assert_eq!(ks.expires_at(b"k", NOW), Some(NOW + 100));
    ok(&mut ks, NOW, &["SET", "k", "2", "KEEPTTL"]);
    assert_eq!(ks.expires_at(b"k", NOW), Some(NOW + 100));
    ok(&mut ks, NOW, &["SET", "k", "3"]);
    assert_eq!(ks.expires_at(b"k", NOW), None);
    ok(&mut ks, NOW, &["SET", "k", "4", "EX", "2"]);
    assert_eq!(ks.expires_at(b"k", NOW), Some(NOW + 2000));
    assert_eq!(ok(&mut ks, NOW, &["PERSIST", "k"]), Value::Int(1));
    assert_eq!(ok(&mut ks, NOW, &["PERSIST", "k"]), Value::Int(0));
    assert_eq!(
        run(&mut ks, NOW, &["SET", "k", "v", "PXAT", "0"]),
        Err("ERR invalid expire time in 'set' command".into())
    );
    assert_eq!(
        run(&mut ks, NOW, &["SET", "k", "v", "PX", "1", "EX", "1"]),
        Err("ERR syntax error".into())
    );
    assert_eq!(
        run(&mut ks, NOW, &["SET", "k", "v", "PXAT"]),
        Err("ERR syntax error".into())
    );
    assert_eq!(
        run(&mut ks, NOW, &["SET", "k", "v", "PXAT", "x"]),
        Err("ERR value is not an integer or out of range".into())
    );
    assert_eq!(ok(&mut ks, NOW, &["SET", "k", "5", "NX"]), Value::Nil);
    assert_eq!(ok(&mut ks, NOW, &["SET", "k", "6", "XX", "GET"]), bulk("4"));
    assert_eq!(ks.string(b"k", NOW), Some(&b"6"[..]));
}

#[test]
fn wrongtype_and_arity() {
    let mut ks = Keyspace::new();
    ok(&mut ks, NOW, &["HSET", "h", "f", "v"]);
    let wrong = Err(WRONGTYPE.to_string());
    assert_eq!(run(&mut ks, NOW, &["GET", "h"]), wrong);
    assert_eq!(run(&mut ks, NOW, &["ZADD", "h", "1", "m"]), wrong);
    assert_eq!(run(&mut ks, NOW, &["ZRANGE", "h", "0", "-1"]), wrong);
    assert_eq!(run(&mut ks, NOW, &["ZCARD", "h"]), wrong);
    ok(&mut ks, NOW, &["SET", "s", "x"]);
    assert_eq!(run(&mut ks, NOW, &["HGET", "s", "f"]), wrong);
    assert_eq!(run(&mut ks, NOW, &["HMGET", "s", "f"]), wrong);
    // Argument errors come before the type check.
    assert_eq!(
        run(&mut ks, NOW, &["ZCOUNT", "s", "x", "1"]),
        Err("ERR min or max is not a float".into())
    );
    assert_eq!(
        run(&mut ks, NOW, &["ZADD", "s", "x", "m"]),
        Err("ERR value is not a valid float".into())
    );
    assert_eq!(
        ok(&mut ks, NOW, &["TYPE", "s"]),
        Value::Status("string".into())
    );
    assert_eq!(
        ok(&mut ks, NOW, &["type", "h"]),
        Value::Status("hash".into())
    );
    assert_eq!(
        ok(&mut ks, NOW, &["TYPE", "none"]),
        Value::Status("none".into())
    );
    assert_eq!(
        run(&mut ks, NOW, &["GET"]),
        Err("ERR wrong number of arguments for 'get' command".into())
    );
    assert_eq!(
        run(&mut ks, NOW, &["HSET", "h", "f", "v", "g"]),
        Err("ERR wrong number of arguments for 'hset' command".into())
    );
    assert_eq!(
        run(&mut ks, NOW, &["NOPE", "a", "b"]),
        Err("ERR unknown command 'NOPE', with args beginning with: 'a' 'b' ".into())
    );
}

#[test]
fn hashes() {
    let mut ks = Keyspace::new();
    assert_eq!(
        ok(&mut ks, NOW, &["HSET", "h", "tokens", "4", "ts", "100"]),
        Value::Int(2)
    );
    assert_eq!(
        ok(&mut ks, NOW, &["HSET", "h", "tokens", "3.5"]),
        Value::Int(0)
    );
    assert_eq!(ok(&mut ks, NOW, &["HGET", "h", "tokens"]), bulk("3.5"));
    assert_eq!(ok(&mut ks, NOW, &["HGET", "h", "x"]), Value::Nil);
    assert_eq!(
        ok(&mut ks, NOW, &["HMGET", "h", "tokens", "x", "ts"]),
        Value::Array(vec![bulk("3.5"), Value::Nil, bulk("100")])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["HMGET", "nokey", "a"]),
        Value::Array(vec![Value::Nil])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["HGETALL", "h"]),
        bulks(&["tokens", "3.5", "ts", "100"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["HGETALL", "nokey"]),
        Value::Array(vec![])
    );
}

#[test]
fn hdel_counts_the_fields_removed_and_the_last_one_deletes_the_hash() {
    let mut ks = Keyspace::new();
    ok(&mut ks, NOW, &["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    ok(
        &mut ks,
        NOW,
        &["PEXPIREAT", "h", &(NOW + 100_000).to_string()],
    );
    // A field named twice counts once; an absent one not at all.
    assert_eq!(
        ok(&mut ks, NOW, &["HDEL", "h", "a", "a", "x"]),
        Value::Int(1)
    );
    assert_eq!(
        ok(&mut ks, NOW, &["HGETALL", "h"]),
        bulks(&["b", "2", "c", "3"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["PEXPIRETIME", "h"]),
        Value::Int(NOW + 100_000),
        "the expiry stays"
    );
    assert_eq!(ok(&mut ks, NOW, &["hdel", "h", "b", "c"]), Value::Int(2));
    assert_eq!(ok(&mut ks, NOW, &["EXISTS", "h"]), Value::Int(0));
    assert_eq!(ks.kind(b"h", NOW), Kind::Empty);
    assert_eq!(ok(&mut ks, NOW, &["HDEL", "nokey", "a"]), Value::Int(0));
    ok(&mut ks, NOW, &["SET", "s", "x"]);
    assert_eq!(
        run(&mut ks, NOW, &["HDEL", "s", "a"]),
        Err(WRONGTYPE.to_string())
    );
    assert_eq!(
        run(&mut ks, NOW, &["HDEL", "s"]),
        Err("ERR wrong number of arguments for 'hdel' command".into())
    );
    // An expired hash is no hash.
    ok(&mut ks, NOW, &["HSET", "e", "a", "1"]);
    ok(&mut ks, NOW, &["PEXPIREAT", "e", &(NOW + 10).to_string()]);
    assert_eq!(ok(&mut ks, NOW + 11, &["HDEL", "e", "a"]), Value::Int(0));
}

#[test]
fn the_last_member_removed_deletes_the_set() {
    let mut ks = Keyspace::new();
    assert_eq!(
        ok(&mut ks, NOW, &["ZADD", "z", "1", "a", "2", "b"]),
        Value::Int(2)
    );
    ok(&mut ks, NOW, &["PEXPIREAT", "z", &(NOW + 10).to_string()]);
    assert_eq!(ok(&mut ks, NOW, &["ZREM", "z", "a", "x"]), Value::Int(1));
    assert_eq!(ks.kind(b"z", NOW), Kind::Zset);
    assert_eq!(ok(&mut ks, NOW, &["ZREM", "z", "b"]), Value::Int(1));
    assert_eq!(ks.kind(b"z", NOW), Kind::Empty);
    // A new set does not inherit the old expiry.
    ok(&mut ks, NOW, &["ZADD", "z", "5", "c", "6", "d"]);
    assert_eq!(ks.expires_at(b"z", NOW), None);
    assert_eq!(
        ok(&mut ks, NOW, &["ZREMRANGEBYSCORE", "z", "-inf", "+inf"]),
        Value::Int(2)
    );
    assert!(ks.snapshot(NOW).0.is_empty());
    // The typed helper too.
    ks.zset_add(b"y", b"m", 1.0, NOW).ok();
    assert_eq!(ks.zset_remove(b"y", b"m", NOW), Ok(true));
    assert_eq!(ks.kind(b"y", NOW), Kind::Empty);
}

#[test]
fn zrange_by_index_with_negative_indexes() {
    let mut ks = Keyspace::new();
    ok(
        &mut ks,
        NOW,
        &["ZADD", "z", "3", "c", "1", "a", "2", "b", "1500", "d"],
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZRANGE", "z", "0", "0", "WITHSCORES"]),
        bulks(&["a", "1"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZRANGE", "z", "-1", "-1", "withscores"]),
        bulks(&["d", "1500"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZRANGE", "z", "-2", "-1"]),
        bulks(&["c", "d"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZRANGE", "z", "-100", "1"]),
        bulks(&["a", "b"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZRANGE", "z", "2", "100"]),
        bulks(&["c", "d"])
    );
    assert_eq!(ok(&mut ks, NOW, &["ZRANGE", "z", "3", "2"]), bulks(&[]));
    assert_eq!(ok(&mut ks, NOW, &["ZRANGE", "z", "4", "10"]), bulks(&[]));
    assert_eq!(ok(&mut ks, NOW, &["ZRANGE", "z", "0", "-5"]), bulks(&[]));
    assert_eq!(
        ok(&mut ks, NOW, &["ZREVRANGE", "z", "0", "1"]),
        bulks(&["d", "c"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZREVRANGE", "z", "-1", "-1", "WITHSCORES"]),
        bulks(&["a", "1"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZRANGE", "z", "0", "0", "REV"]),
        bulks(&["d"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZRANGE", "nokey", "0", "-1"]),
        bulks(&[])
    );
    assert_eq!(
        run(&mut ks, NOW, &["ZREVRANGE", "z", "0", "1", "REV"]),
        Err("ERR syntax error".into())
    );
    assert_eq!(
        run(&mut ks, NOW, &["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"]),
        Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
                .into()
        )
    );
    assert_eq!(
        run(&mut ks, NOW, &["ZRANGE", "z", "a", "1"]),
        Err("ERR value is not an integer or out of range".into())
    );
}

#[test]
fn score_ranges_exclusive_bounds_and_limit() {
    let mut ks = Keyspace::new();
    ok(
        &mut ks,
        NOW,
        &[
            "ZADD", "z", "1", "a", "2", "b", "2", "c", "3", "d", "4", "e",
        ],
    );
    let by_score = |ks: &mut Keyspace, args: &[&str]| {
        let mut argv = vec!["ZRANGEBYSCORE", "z"];
        argv.extend_from_slice(args);
        ok(ks, NOW, &argv)
    };
    assert_eq!(by_score(&mut ks, &["2", "3"]), bulks(&["b", "c", "d"]));
    assert_eq!(by_score(&mut ks, &["(2", "3"]), bulks(&["d"]));
    assert_eq!(by_score(&mut ks, &["2", "(3"]), bulks(&["b", "c"]));
    assert_eq!(by_score(&mut ks, &["(2", "(2"]), bulks(&[]));
    assert_eq!(by_score(&mut ks, &["3", "2"]), bulks(&[]));
    assert_eq!(
        by_score(&mut ks, &["(1", "+inf", "WITHSCORES", "LIMIT", "1", "2"]),
        bulks(&["c", "2", "d", "3"])
    );
    assert_eq!(
        by_score(&mut ks, &["-inf", "+inf", "LIMIT", "0", "-1"]),
        bulks(&["a", "b", "c", "d", "e"])
    );
    assert_eq!(
        by_score(&mut ks, &["-inf", "+inf", "LIMIT", "-1", "2"]),
        bulks(&[])
    );
    assert_eq!(
        by_score(&mut ks, &["-inf", "+inf", "LIMIT", "5", "2"]),
        bulks(&[])
    );
    assert_eq!(
        by_score(&mut ks, &["-inf", "+inf", "LIMIT", "4", "0"]),
        bulks(&[])
    );
    assert_eq!(
        ok(
            &mut ks,
            NOW,
            &["ZRANGE", "z", "(4", "2", "BYSCORE", "REV", "LIMIT", "0", "2"]
        ),
        bulks(&["d", "c"])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZCOUNT", "z", "(1", "+inf"]),
        Value::Int(4)
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZCOUNT", "z", "-inf", "(1"]),
        Value::Int(0)
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZREMRANGEBYSCORE", "z", "-inf", "(2"]),
        Value::Int(1)
    );
    assert_eq!(ok(&mut ks, NOW, &["ZCARD", "z"]), Value::Int(4));
    assert_eq!(
        run(
            &mut ks,
            NOW,
            &["ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "0"]
        ),
        Err("ERR syntax error".into())
    );
}

#[test]
fn scores_read_and_print_as_redis_does() {
    let mut ks = Keyspace::new();
    ok(
        &mut ks,
        NOW,
        &["ZADD", "z", "1500", "a", "0.1", "b", "-0", "c", "1e17", "d"],
    );
    // A small set (a listpack in Redis) stores -0 as the integer 0.
    assert_eq!(ok(&mut ks, NOW, &["ZSCORE", "z", "a"]), bulk("1500"));
    assert_eq!(
        ok(&mut ks, NOW, &["ZSCORE", "z", "b"]),
        bulk("0.10000000000000001")
    );
    assert_eq!(ok(&mut ks, NOW, &["ZSCORE", "z", "c"]), bulk("0"));
    assert_eq!(ok(&mut ks, NOW, &["ZSCORE", "z", "d"]), bulk("1e+17"));
    assert_eq!(ok(&mut ks, NOW, &["ZSCORE", "z", "x"]), Value::Nil);
    assert_eq!(
        ok(&mut ks, NOW, &["ZMSCORE", "z", "a", "x"]),
        Value::Array(vec![bulk("1500"), Value::Nil])
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZMSCORE", "nokey", "a"]),
        Value::Array(vec![Value::Nil])
    );
    assert_eq!(ok(&mut ks, NOW, &["ZADD", "z", "1500", "a"]), Value::Int(0));
    assert_eq!(
        ok(&mut ks, NOW, &["ZADD", "z", "CH", "7", "a", "8", "e"]),
        Value::Int(2)
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZADD", "z", "XX", "1", "new"]),
        Value::Int(0)
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZADD", "z", "INCR", "3", "a"]),
        bulk("10")
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZADD", "z", "GT", "CH", "1", "a"]),
        Value::Int(0)
    );
    assert_eq!(
        ok(&mut ks, NOW, &["ZADD", "nokey", "XX", "1", "a"]),
        Value::Int(0)
    );
    assert_eq!(ks.kind(b"nokey", NOW), Kind::Empty);
    assert_eq!(
        run(&mut ks, NOW, &["ZADD", "z", "1", "a", "2"]),
        Err("ERR syntax error".into())
    );
    assert_eq!(
        run(&mut ks, NOW, &["ZADD", "z", "nan", "a"]),
        Err("ERR value is not a valid float".into())
    );
}

#[test]
fn del_exists_time() {
    let mut ks = Keyspace::new();
    ok(&mut ks, NOW, &["SET", "a", "1"]);
    ok(
        &mut ks,
        NOW,
        &["SET", "b", "1", "PXAT", &(NOW - 1).to_string()],
    );
    assert_eq!(ok(&mut ks, NOW, &["EXISTS", "a", "a", "b"]), Value::Int(2));
    assert_eq!(ok(&mut ks, NOW, &["DEL", "a", "a", "b"]), Value::Int(1));
    assert_eq!(
        ok(&mut ks, 1_700_000_000_123, &["TIME"]),
        bulks(&["1700000000", "123000"])
    );
}

#[test]
fn snapshots_compare_content_and_expiry() {
    let mut a = Keyspace::new();
    let mut b = Keyspace::new();
    for ks in [&mut a, &mut b] {
        ok(ks, NOW, &["SET", "s", "1", "PXAT", "2000000"]);
        ok(ks, NOW, &["ZADD", "z", "1", "m"]);
    }
    ok(&mut a, NOW, &["HSET", "h", "x", "1", "y", "2"]);
    ok(&mut b, NOW, &["HSET", "h", "y", "2", "x", "1"]);
    assert_eq!(a.snapshot(NOW), b.snapshot(NOW));
    ok(&mut b, NOW, &["ZADD", "z", "0", "m"]);
    assert_ne!(a.snapshot(NOW), b.snapshot(NOW));
    ok(&mut b, NOW, &["ZADD", "z", "1", "m"]);
    ok(&mut b, NOW, &["PEXPIREAT", "s", "2000001"]);
    assert_ne!(a.snapshot(NOW), b.snapshot(NOW));
    a.clear();
    assert!(a.is_empty(NOW));
}
