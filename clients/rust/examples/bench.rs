//! The typed client's overhead: a pipeline of N RL.GCRA calls through `Batch`
//! (typed decisions) against the same calls as raw commands through the same
//! redis-rs connection (tuples of five integers), alternating, several rounds;
//! the median of each. Prints one final line:
//!
//!   client-bench rust raw_ops=<int> typed_ops=<int> ratio=<typed/raw>
//!
//! Env: RL_BENCH_URL (default redis://127.0.0.1:6379), RL_BENCH_N (calls per
//! pipeline, default 20000), RL_BENCH_ROUNDS (default 7).

use std::time::{Duration, Instant};

use rl_client::{Backend, Batch, Gcra, Limiter};

type Fields = (i64, i64, i64, i64, i64);

fn env_or(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {v:?}")),
        Err(_) => default,
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("RL_BENCH_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let n = env_or("RL_BENCH_N", 20_000).max(1);
    let rounds = env_or("RL_BENCH_ROUNDS", 7).max(1);

    let con = redis::Client::open(url.as_str())?.get_connection()?;
    // A whole pipeline is one call: its deadline is the round's, not a request's.
    let mut rl = Limiter::new(con).timeout(Duration::from_secs(60));
    let backend = rl.backend()?;
    // A limit no call reaches: every call is an allowed write, as in production.
    let gcra = Gcra::new(1_000_000_000, 1_000_000_000, "1s");
    let keys: Vec<String> = (0..1000)
        .map(|i| format!("rl:bench:client:{{{i}}}"))
        .collect();
    let key = |i: usize| keys[i % keys.len()].as_str();

    // The raw calls: the very words the typed batch sends.
    let raw = |rl: &mut Limiter<redis::Connection>| -> redis::RedisResult<usize> {
        let mut pipe = redis::Pipeline::with_capacity(n);
        for i in 0..n {
            let cmd = match backend {
                Backend::Module => pipe.cmd("RL.GCRA"),
                Backend::Library => pipe.cmd("FCALL").arg("rl_gcra").arg(1),
            };
            cmd.arg(key(i))
                .arg(1_000_000_000u64)
                .arg(1_000_000_000u64)
                .arg("1000ms");
        }
        let replies: Vec<Fields> = pipe.query(rl.connection())?;
        Ok(replies.iter().filter(|r| r.0 == 1).count())
    };
    let typed = |rl: &mut Limiter<redis::Connection>| -> rl_client::Result<usize> {
        let mut batch = Batch::with_capacity(backend, n);
        for i in 0..n {
            batch.gcra(key(i), &gcra);
        }
        let replies = rl.run(&batch)?;
        Ok(replies.iter().filter(|r| r.allowed()).count())
    };

    // Warm-up (connections, allocator, the server's keys), then the rounds.
    assert_eq!(raw(&mut rl)?, n);
    assert_eq!(typed(&mut rl)?, n);
    let (mut raw_ops, mut typed_ops) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate which goes first, so neither always follows the other.
        for first_raw in [round % 2 == 0, round % 2 != 0] {
            let start = Instant::now();
            let allowed = if first_raw {
                raw(&mut rl)?
            } else {
                typed(&mut rl)?
            };
            let ops = n as f64 / start.elapsed().as_secs_f64();
            assert_eq!(allowed, n, "every call is allowed");
            if first_raw {
                raw_ops.push(ops);
            } else {
                typed_ops.push(ops);
            }
        }
        eprintln!(
            "round {}: raw {:.0} ops/s, typed {:.0} ops/s",
            round + 1,
            raw_ops[round],
            typed_ops[round]
        );
    }
    let (raw_med, typed_med) = (median(raw_ops), median(typed_ops));
    eprintln!("{backend:?} backend at {url}, {n} calls per pipeline, {rounds} rounds");
    println!(
        "client-bench rust raw_ops={} typed_ops={} ratio={:.3}",
        raw_med.round() as u64,
        typed_med.round() as u64,
        typed_med / raw_med
    );
    Ok(())
}
