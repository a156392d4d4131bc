//! Rate-limited HTTP server: tiny_http, the redis crate and one RL.BUCKET call per request.
//!
//! Works unchanged with the RL module (RL.BUCKET) or, where MODULE LOAD is refused,
//! RL's Functions library (FCALL rl_bucket, functions/rl.lua): it finds out which one
//! the server has at start, and says so.
//!
//! Run:  cargo run --release
//! Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8080),
//!       RL_CAPACITY (5), RL_TOKENS (1), RL_PERIOD (1s): a burst of 5, then 1 per second.

use std::io::Cursor;
use std::{env, sync::Arc, thread};
use tiny_http::{Header, Request, Response, Server};

/// The reply of every RL command: allowed, limit, remaining, retry_after_ms, reset_after_ms.
type Decision = (i64, u64, u64, i64, u64);

/// Which RL the server has: the same arguments and reply either way.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// The module: `RL.BUCKET key …`.
    Module,
    /// The Functions library: `FCALL rl_bucket 1 key …`.
    Library,
}

impl Backend {
    /// The module if the server has RL.BUCKET, else the library. The probe takes
    /// COST 0, which writes nothing.
    fn detect(con: &mut redis::Connection) -> redis::RedisResult<Backend> {
        let probe = ("rl:probe", 1, 1, "1s", "COST", 0);
        match redis::cmd("RL.BUCKET")
            .arg(probe)
            .query::<redis::Value>(con)
        {
            Ok(_) => Ok(Backend::Module),
            Err(e) if e.to_string().to_lowercase().contains("unknown command") => {
                redis::cmd("FCALL")
                    .arg("rl_bucket")
                    .arg(1)
                    .arg(probe)
                    .query::<redis::Value>(con)?;
                Ok(Backend::Library)
            }
            Err(e) => Err(e),
        }
    }

    /// The call for `key`; the caller adds the parameters.
    fn bucket(self, key: String) -> redis::Cmd {
        match self {
            Backend::Module => {
                let mut c = redis::cmd("RL.BUCKET");
                c.arg(key);
                c
            }
            Backend::Library => {
                let mut c = redis::cmd("FCALL");
                c.arg("rl_bucket").arg(1).arg(key);
                c
            }
        }
    }
}

struct Limiter {
    client: redis::Client,
    backend: Backend,
    capacity: u64,
    tokens: u64,
    period: String, // RL durations: 1500ms, 60, 1m, ...
}

impl Limiter {
    /// One command: Redis reads, decides and writes atomically, so every instance
    /// of this server shares the same bucket without races.
    fn check(
        &self,
        con: &mut Option<redis::Connection>,
        user: &str,
    ) -> redis::RedisResult<Decision> {
        // Keep one connection per worker thread; open it again after an error.
        if con.is_none() {
            *con = Some(self.client.get_connection()?);
        }
        let result = self
            .backend
            .bucket(format!("rl:api:{user}"))
            .arg(self.capacity)
            .arg(self.tokens)
            .arg(&self.period)
            .query(con.as_mut().unwrap());
        if result.is_err() {
            *con = None;
        }
        result
    }
}

/// Headers count whole seconds; round up so a client never retries too early.
fn ceil_seconds(ms: u64) -> String {
    ms.div_ceil(1000).to_string()
}

fn header(name: &str, value: impl Into<String>) -> Header {
    Header::from_bytes(name.as_bytes(), value.into().as_bytes()).unwrap()
}

/// The application being protected.
fn hello(_request: &Request) -> Response<Cursor<Vec<u8>>> {
    Response::from_string("Hello!\n")
}

/// Middleware: asks the limiter, then answers 429 or runs `app`, with RateLimit-* headers on both.
fn rate_limited(
    request: &Request,
    limiter: &Limiter,
    con: &mut Option<redis::Connection>,
    app: fn(&Request) -> Response<Cursor<Vec<u8>>>,
) -> Response<Cursor<Vec<u8>>> {
    // X-User stands in for an authenticated user id; trust such a header only
    // behind your own auth. Without it, limit by the client's address.
    let user = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("X-User"))
        .map(|h| h.value.to_string())
        .or_else(|| request.remote_addr().map(|a| a.ip().to_string()))
        .unwrap_or_else(|| "unknown".into());

    let (allowed, limit, remaining, retry_after_ms, reset_after_ms) =
        match limiter.check(con, &user) {
            Ok(decision) => decision,
            Err(err) => {
                // Fail open: a Redis outage should not take the whole API down.
                // Answer 503 here instead if the limit protects something costly.
                eprintln!("rate limiter unavailable; letting the request through: {err}");
                return app(request);
            }
        };

    let mut response = if allowed == 1 {
        app(request)
    } else {
        let mut response = Response::from_string("Too Many Requests\n").with_status_code(429);
        // retry_after_ms is -1 when the call can never succeed (cost > capacity).
        if let Ok(ms) = u64::try_from(retry_after_ms) {
            response.add_header(header("Retry-After", ceil_seconds(ms)));
        }
        response
    };
    // Set on every response, so clients can pace themselves before hitting 429.
    response.add_header(header("RateLimit-Limit", limit.to_string()));
    response.add_header(header("RateLimit-Remaining", remaining.to_string()));
    response.add_header(header("RateLimit-Reset", ceil_seconds(reset_after_ms)));
    response
}

/// An environment variable parsed as `T`, or `default` when it is unset.
fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not valid")),
        Err(_) => default,
    }
}

fn main() {
    let url: String = env_or("REDIS_URL", "redis://127.0.0.1:6379".into());
    let client = redis::Client::open(url).expect("REDIS_URL is not a valid Redis URL");
    let backend = client
        .get_connection()
        .and_then(|mut con| Backend::detect(&mut con))
        .expect("cannot reach Redis to find RL (module or library)");
    println!(
        "{}",
        match backend {
            Backend::Module => "rate limiter: the RL module (RL.BUCKET)",
            Backend::Library => "rate limiter: RL's Functions library (FCALL rl_bucket), no module",
        }
    );
    let limiter = Arc::new(Limiter {
        client,
        backend,
        capacity: env_or("RL_CAPACITY", 5),
        tokens: env_or("RL_TOKENS", 1),
        period: env_or("RL_PERIOD", "1s".into()),
    });
    let addr = format!("127.0.0.1:{}", env_or("PORT", 8080u16));
    let server = Arc::new(Server::http(&addr).expect("cannot listen"));
    println!("listening on http://{addr}");

    // A few worker threads, each with its own Redis connection (the sync client
    // is one connection, not a pool).
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (server, limiter) = (server.clone(), limiter.clone());
            thread::spawn(move || {
                let mut con = None;
                for request in server.incoming_requests() {
                    let response = rate_limited(&request, &limiter, &mut con, hello);
                    let _ = request.respond(response); // the client may have gone
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
}
