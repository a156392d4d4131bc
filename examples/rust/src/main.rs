//! Rate-limited HTTP server: tiny_http, the redis crate and one RL.BUCKET call per request,
//! and a route (/report) of which at most RL_CONCURRENT run at once per user (RL.ACQUIRE
//! when the request starts, RL.RELEASE when it ends).
//!
//! Works unchanged with the RL module (RL.BUCKET) or, where MODULE LOAD is refused,
//! RL's Functions library (FCALL rl_bucket, functions/rl.lua): it finds out which one
//! the server has at start, and says so.
//!
//! Run:  cargo run --release
//! Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8080),
//!       RL_CAPACITY (5), RL_TOKENS (1), RL_PERIOD (1s): a burst of 5, then 1 per second;
//!       RL_CONCURRENT (2) reports at once, each taking RL_REPORT_MS (1000).

use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
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

    /// The call of RL command `name` (`RL.BUCKET`, or `FCALL rl_bucket 1`) for
    /// `key`; the caller adds the parameters.
    fn command(self, name: &str, key: String) -> redis::Cmd {
        match self {
            Backend::Module => {
                let mut c = redis::cmd(name);
                c.arg(key);
                c
            }
            Backend::Library => {
                let mut c = redis::cmd("FCALL");
                c.arg(name.to_lowercase().replace('.', "_")).arg(1).arg(key);
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
    concurrent: u64,
    report_ms: u64,
}

impl Limiter {
    /// One command: Redis reads, decides and writes atomically, so every instance
    /// of this server shares the same bucket without races.
    fn check(
        &self,
        con: &mut Option<redis::Connection>,
        user: &str,
    ) -> redis::RedisResult<Decision> {
        let mut call = self.backend.command("RL.BUCKET", format!("rl:api:{user}"));
        call.arg(self.capacity).arg(self.tokens).arg(&self.period);
        self.query(con, &call)
    }

    /// Runs `call` on the worker's connection; opens it again after an error.
    fn query<T: redis::FromRedisValue>(
        &self,
        con: &mut Option<redis::Connection>,
        call: &redis::Cmd,
    ) -> redis::RedisResult<T> {
        if con.is_none() {
            *con = Some(self.client.get_connection()?);
        }
        let result = call.query(con.as_mut().unwrap());
        if result.is_err() {
            *con = None;
        }
        result
    }
}

/// A name for this request's lease, unique across requests and processes.
fn lease_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{nanos}-{n}", std::process::id())
}

/// Headers count whole seconds; round up so a client never retries too early.
fn ceil_seconds(ms: u64) -> String {
    ms.div_ceil(1000).to_string()
}

fn header(name: &str, value: impl Into<String>) -> Header {
    Header::from_bytes(name.as_bytes(), value.into().as_bytes()).unwrap()
}

/// A response with its body in memory.
type Reply = Response<Cursor<Vec<u8>>>;

/// The application's signature: the request, the limiter and this worker's Redis
/// connection (for /report's leases), the user.
type App = fn(&Request, &Limiter, &mut Option<redis::Connection>, &str) -> Reply;

/// The application being protected: /report takes a while (at most
/// `limiter.concurrent` at once per user), anything else answers at once.
fn app(
    request: &Request,
    limiter: &Limiter,
    con: &mut Option<redis::Connection>,
    user: &str,
) -> Response<Cursor<Vec<u8>>> {
    if request.url() != "/report" {
        return Response::from_string("Hello!\n");
    }
    concurrency_limited(limiter, con, user, || {
        thread::sleep(Duration::from_millis(limiter.report_ms)); // a slow export
        Response::from_string("Report ready\n")
    })
}

/// Middleware: at most `limiter.concurrent` runs of `work` at once per user; 503 when
/// all slots are taken. Each run holds a lease named by its own id, which ends by
/// itself after 30 s (the longest a report may run): a crash never keeps a slot.
fn concurrency_limited(
    limiter: &Limiter,
    con: &mut Option<redis::Connection>,
    user: &str,
    work: impl FnOnce() -> Response<Cursor<Vec<u8>>>,
) -> Response<Cursor<Vec<u8>>> {
    let (key, lease) = (format!("rl:concurrent:{user}"), lease_id());
    let mut acquire = limiter.backend.command("RL.ACQUIRE", key.clone());
    acquire.arg(limiter.concurrent).arg("30s").arg(&lease);
    let (allowed, limit, remaining, retry_after_ms, _): Decision =
        match limiter.query(con, &acquire) {
            Ok(decision) => decision,
            Err(err) => {
                eprintln!("concurrency limiter unavailable; letting the request through: {err}");
                return work();
            }
        };
    let retry = ceil_seconds(u64::try_from(retry_after_ms).unwrap_or(0));
    let mut response = if allowed == 1 {
        let response = work();
        let mut release = limiter.backend.command("RL.RELEASE", key);
        release.arg(&lease);
        if let Err(err) = limiter.query::<i64>(con, &release) {
            eprintln!("could not release {lease} (it ends by itself): {err}");
        }
        response
    } else {
        Response::from_string("Too many reports running; try again shortly\n")
            .with_status_code(503)
            .with_header(header("Retry-After", retry.clone()))
    };
    // IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers), in concurrent requests.
    response.add_header(header(
        "RateLimit-Policy",
        format!("\"concurrency\";q={limit};qu=\"concurrent-requests\""),
    ));
    let wait = if allowed == 1 {
        String::new()
    } else {
        format!(";t={retry}")
    };
    response.add_header(header(
        "RateLimit",
        format!("\"concurrency\";r={remaining}{wait}"),
    ));
    response
}

/// Middleware: asks the limiter, then answers 429 or runs `app`, with RateLimit-* headers on both.
fn rate_limited(
    request: &Request,
    limiter: &Limiter,
    con: &mut Option<redis::Connection>,
    app: App,
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
                return app(request, limiter, con, &user);
            }
        };

    let mut response = if allowed == 1 {
        app(request, limiter, con, &user)
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
        concurrent: env_or("RL_CONCURRENT", 2),
        report_ms: env_or("RL_REPORT_MS", 1000),
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
                    let response = rate_limited(&request, &limiter, &mut con, app);
                    let _ = request.respond(response); // the client may have gone
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
}
