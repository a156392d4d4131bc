// Rate-limited HTTP server: Node's http module, ioredis and one RL.BUCKET call per request,
// and a route (/report) of which at most RL_CONCURRENT run at once per user (RL.ACQUIRE
// when the request starts, RL.RELEASE when it ends).
//
// Works unchanged with the RL module (RL.BUCKET) or, where MODULE LOAD is refused, RL's
// Functions library (FCALL rl_bucket, functions/rl.lua): it finds out which one the
// server has at start, and says so.
//
// Run:  npm ci && node server.js
// Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (3000),
//       RL_CAPACITY (5), RL_TOKENS (1), RL_PERIOD (1s): a burst of 5, then 1 per second;
//       RL_CONCURRENT (2) reports at once, each taking RL_REPORT_MS (1000).
import { randomUUID } from "node:crypto";
import http from "node:http";
import { Redis } from "ioredis";

const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", {
  // Fail fast while Redis is down instead of queueing every request for seconds.
  maxRetriesPerRequest: 1,
});
redis.on("error", (err) => console.error("redis:", err.message));

const capacity = Number(process.env.RL_CAPACITY ?? 5);
const tokens = Number(process.env.RL_TOKENS ?? 1);
const period = process.env.RL_PERIOD ?? "1s"; // RL durations: 1500ms, 60, 1m, ...

// The module if the server has RL.BUCKET, else the library's rl_bucket: same
// arguments, same reply. The probe takes COST 0, which writes nothing.
async function detectBackend() {
  const probe = ["rl:probe", 1, 1, "1s", "COST", 0];
  try {
    await redis.call("RL.BUCKET", ...probe);
    return { name: "module", call: (key, ...args) => redis.call("RL.BUCKET", key, ...args) };
  } catch (err) {
    if (!/unknown command/i.test(err.message)) throw err;
  }
  await redis.call("FCALL", "rl_bucket", 1, ...probe);
  return {
    name: "library",
    call: (key, ...args) => redis.call("FCALL", "rl_bucket", 1, key, ...args),
  };
}

const backend = await detectBackend();
console.log(
  backend.name === "module"
    ? "rate limiter: the RL module (RL.BUCKET)"
    : "rate limiter: RL's Functions library (FCALL rl_bucket), no module",
);

// Leases: RL.ACQUIRE / RL.RELEASE, or the library's rl_acquire / rl_release.
const leases =
  backend.name === "module"
    ? {
        acquire: (key, ...args) => redis.call("RL.ACQUIRE", key, ...args),
        release: (key, id) => redis.call("RL.RELEASE", key, id),
      }
    : {
        acquire: (key, ...args) => redis.call("FCALL", "rl_acquire", 1, key, ...args),
        release: (key, id) => redis.call("FCALL", "rl_release", 1, key, id),
      };
const concurrent = Number(process.env.RL_CONCURRENT ?? 2);
const reportMs = Number(process.env.RL_REPORT_MS ?? 1000);

// Headers count whole seconds; round up so a client never retries too early.
const ceilSeconds = (ms) => String(Math.ceil(ms / 1000));

// Middleware: wraps a (req, res) handler, like the ones Express or Connect use.
function withRateLimit(handler) {
  return async (req, res) => {
    // X-User stands in for an authenticated user id; trust such a header only
    // behind your own auth. Without it, limit by the client's address.
    const user = req.headers["x-user"] || req.socket.remoteAddress;
    let reply;
    try {
      // One command: Redis reads, decides and writes atomically, so every
      // instance of this server shares the same bucket without races.
      reply = await backend.call(`rl:api:${user}`, capacity, tokens, period);
    } catch (err) {
      // Fail open: a Redis outage should not take the whole API down.
      // Answer 503 here instead if the limit protects something costly.
      console.error("rate limiter unavailable; letting the request through:", err.message);
      return handler(req, res);
    }
    const [allowed, limit, remaining, retryAfterMs, resetAfterMs] = reply;

    // Set on every response, so clients can pace themselves before hitting 429.
    res.setHeader("RateLimit-Limit", String(limit));
    res.setHeader("RateLimit-Remaining", String(remaining));
    res.setHeader("RateLimit-Reset", ceilSeconds(resetAfterMs));
    if (allowed === 1) return handler(req, res);

    // retryAfterMs is -1 when the call can never succeed (cost > capacity).
    if (retryAfterMs >= 0) res.setHeader("Retry-After", ceilSeconds(retryAfterMs));
    res.writeHead(429, { "Content-Type": "text/plain" });
    res.end("Too Many Requests\n");
  };
}

// Middleware: at most `limit` requests of `path` in flight at once per user; 503 when
// all slots are taken. Each request holds a lease named by its own id, which ends by
// itself after `ttl` (the longest a request may run): a crash never keeps a slot.
function withConcurrencyLimit(handler, path, limit, ttl) {
  return async (req, res) => {
    if (req.url !== path) return handler(req, res);
    const user = req.headers["x-user"] || req.socket.remoteAddress;
    const key = `rl:concurrent:${user}`;
    const lease = randomUUID();
    let reply;
    try {
      reply = await leases.acquire(key, limit, ttl, lease);
    } catch (err) {
      console.error("concurrency limiter unavailable; letting the request through:", err.message);
      return handler(req, res);
    }
    const [allowed, max, remaining, retryAfterMs] = reply;
    // IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers), in concurrent requests.
    res.setHeader("RateLimit-Policy", `"concurrency";q=${max};qu="concurrent-requests"`);
    res.setHeader(
      "RateLimit",
      `"concurrency";r=${remaining}` + (allowed === 1 ? "" : `;t=${ceilSeconds(retryAfterMs)}`),
    );
    if (allowed !== 1) {
      res.setHeader("Retry-After", ceilSeconds(retryAfterMs));
      res.writeHead(503, { "Content-Type": "text/plain" });
      return res.end("Too many reports running; try again shortly\n");
    }
    try {
      await handler(req, res);
    } finally {
      await leases.release(key, lease).catch((err) => {
        console.error(`could not release ${lease} (it ends by itself):`, err.message);
      });
    }
  };
}

// The application being protected: /report takes a while, anything else answers at once.
async function app(req, res) {
  if (req.url === "/report") {
    await new Promise((resolve) => setTimeout(resolve, reportMs)); // a slow export
    res.writeHead(200, { "Content-Type": "text/plain" });
    return res.end("Report ready\n");
  }
  res.writeHead(200, { "Content-Type": "text/plain" });
  res.end("Hello!\n");
}

const port = Number(process.env.PORT ?? 3000);
const server = withRateLimit(withConcurrencyLimit(app, "/report", concurrent, "30s"));
http.createServer(server).listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${port}`);
});
