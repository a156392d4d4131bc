//! Rate-limited HTTP server: tiny_http, the redis crate and RL's typed client (rl-client):
//! one token-bucket call per request (RL.BUCKET), and a route (/report) of which at most
//! RL_CONCURRENT run at once per user (a lease: RL.ACQUIRE when the request starts,
//! RL.RELEASE when it ends).
//!
//! Works unchanged with the RL module or, where MODULE LOAD is refused, RL's Functions
//! library (functions/rl.lua): the client finds out which one the server has, and this
//! server says so at start.
//!
//! Run:  cargo run --release
//! Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8080),
//!       RL_CAPACITY (5), RL_TOKENS (1), RL_PERIOD (1s): a burst of 5, then 1 per second;
//!       RL_CONCURRENT (2) reports at once, each taking RL_REPORT_MS (1000).

use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use std::{env, sync::Arc, thread};

use rl_client::{Acquire, Backend, Bucket, Decision, Error, Limiter};
use tiny_http::{Header, Request, Response, Server};

/// A response with its body in memory.
type Reply = Response<Cursor<Vec<u8>>>;

/// What every worker shares.
struct Config {
    client: redis::Client,
    backend: Backend,
    bucket: Bucket,
    concurrent: u64,
    report_ms: u64,
}

/// One worker thread's limiter on its own connection (the sync client is one
/// connection, not a pool), opened again after a connection error.
struct Worker {
    config: Arc<Config>,
    rl: Option<Limiter<redis::Connection>>,
}

impl Worker {
    /// The limiter, connecting first when there is none. The backend was found at
    /// start, so no worker asks the server again.
    fn limiter(&mut self) -> rl_client::Result<&mut Limiter<redis::Connection>> {
        let rl = match self.rl.take() {
            Some(rl) => rl,
            None => {
                let con = self
                    .config
                    .client
                    .get_connection()
                    .map_err(Error::Connection)?;
                Limiter::with_backend(con, self.config.backend)
            }
        };
        Ok(self.rl.insert(rl))
    }

    /// The answer to an error: `None` when Redis did not answer, to let the request
    /// through (fail open: a Redis outage should not take the whole API down; answer
    /// 503 instead where the limit protects something costly), and the next call opens
    /// a new connection. RL's own errors (a bad setting) are a 500.
    fn failed(&mut self, err: Error, what: &str) -> Option<Reply> {
        if err.is_connection() {
            self.rl = None;
            eprintln!("{what} unavailable; letting the request through: {err}");
            return None;
        }
        eprintln!("{what}: {err}");
        Some(Response::from_string("rate limiter misconfigured\n").with_status_code(500))
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

fn header(name: &str, value: impl Into<String>) -> Header {
    Header::from_bytes(name.as_bytes(), value.into().as_bytes()).unwrap()
}

/// The application being protected: /report takes a while (at most
/// `config.concurrent` at once per user), anything else answers at once.
fn app(request: &Request, worker: &mut Worker, user: &str) -> Reply {
    if request.url() != "/report" {
        return Response::from_string("Hello!\n");
    }
    let report_ms = worker.config.report_ms;
    concurrency_limited(worker, user, || {
        thread::sleep(Duration::from_millis(report_ms)); // a slow export
        Response::from_string("Report ready\n")
    })
}

/// The IETF fields for a limit on requests at once. (The client's headers() describe a
/// rate, q units per w seconds; a lease limit is q at once, which
/// draft-ietf-httpapi-ratelimit-headers writes with the unit "concurrent-requests".)
fn concurrency_fields(d: &Decision) -> Vec<Header> {
    let retry = d
        .headers()
        .into_iter()
        .find(|(name, _)| *name == "Retry-After"); // when the soonest lease ends
    let wait = retry
        .as_ref()
        .map_or(String::new(), |(_, s)| format!(";t={s}"));
    let mut fields = vec![
        header(
            "RateLimit-Policy",
            format!("\"concurrency\";q={};qu=\"concurrent-requests\"", d.limit),
        ),
        header(
            "RateLimit",
            format!("\"concurrency\";r={}{wait}", d.remaining),
        ),
    ];
    fields.extend(retry.map(|(name, value)| header(name, value)));
    fields
}

/// Middleware: at most `config.concurrent` runs of `work` at once per user; 503 when
/// all slots are taken. Each run holds a lease named by its own id, which ends by
/// itself after 30 s (the longest a report may run): a crash never keeps a slot.
fn concurrency_limited(worker: &mut Worker, user: &str, work: impl FnOnce() -> Reply) -> Reply {
    let key = format!("rl:concurrent:{user}");
    let acquire = Acquire::new(worker.config.concurrent, "30s", lease_id());
    let err = match worker.limiter().and_then(|rl| rl.lease(&key, &acquire)) {
        Ok(lease) => {
            let fields = concurrency_fields(lease.decision());
            let mut response = if lease.held() {
                let response = work();
                // Also released when `lease` is dropped, but then an error goes unseen.
                if let Err(err) = lease.release() {
                    eprintln!("could not release {key} (it ends by itself): {err}");
                }
                response
            } else {
                Response::from_string("Too many reports running; try again shortly\n")
                    .with_status_code(503)
            };
            for field in fields {
                response.add_header(field);
            }
            return response;
        }
        Err(err) => err,
    };
    worker
        .failed(err, "concurrency limiter")
        .unwrap_or_else(work)
}

/// Middleware: asks the limiter, then answers 429 or runs `app`, with the client's
/// RateLimit fields on both.
fn rate_limited(request: &Request, worker: &mut Worker) -> Reply {
    // X-User stands in for an authenticated user id; trust such a header only
    // behind your own auth. Without it, limit by the client's address.
    let user = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("X-User"))
        .map(|h| h.value.to_string())
        .or_else(|| request.remote_addr().map(|a| a.ip().to_string()))
        .unwrap_or_else(|| "unknown".into());

    // One command: Redis reads, decides and writes atomically, so every instance
    // of this server shares the same bucket without races.
    let bucket = worker.config.bucket.clone();
    let d = match worker
        .limiter()
        .and_then(|rl| rl.bucket(format!("rl:api:{user}"), &bucket))
    {
        Ok(d) => d,
        Err(err) => {
            return worker
                .failed(err, "rate limiter")
                .unwrap_or_else(|| app(request, worker, &user))
        }
    };
    let mut response = if d.allowed {
        app(request, worker, &user)
    } else {
        Response::from_string("Too Many Requests\n").with_status_code(429)
    };
    // RateLimit-Policy, RateLimit, X-RateLimit-*, and Retry-After when rejected: on
    // every response, so clients can pace themselves before they are refused.
    for (name, value) in d.headers() {
        response.add_header(header(name, value));
    }
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
    // Which RL the server has, asked once: the module or the Functions library.
    let backend = client
        .get_connection()
        .map_err(Error::Connection)
        .and_then(|con| Limiter::new(con).backend())
        .unwrap_or_else(|err| panic!("cannot find RL on the server: {err}"));
    println!(
        "{}",
        match backend {
            Backend::Module => "rate limiter: the RL module",
            Backend::Library => "rate limiter: RL's Functions library, no module",
        }
    );
    let period: String = env_or("RL_PERIOD", "1s".into()); // RL durations: 1500ms, 60, 1m, ...
    let config = Arc::new(Config {
        client,
        backend,
        bucket: Bucket::new(env_or("RL_CAPACITY", 5), env_or("RL_TOKENS", 1), period),
        concurrent: env_or("RL_CONCURRENT", 2),
        report_ms: env_or("RL_REPORT_MS", 1000),
    });
    let addr = format!("127.0.0.1:{}", env_or("PORT", 8080u16));
    let server = Arc::new(Server::http(&addr).expect("cannot listen"));
    println!("listening on http://{addr}");

    // A few worker threads, each with its own limiter and connection.
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let server = server.clone();
            let mut worker = Worker {
                config: config.clone(),
                rl: None,
            };
            thread::spawn(move || {
                for request in server.incoming_requests() {
                    let response = rate_limited(&request, &mut worker);
                    let _ = request.respond(response); // the client may have gone
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
}
