// Rate-limited HTTP server: Node's http module, ioredis and RL's typed client (@rl/client):
// one token-bucket call per request (RL.BUCKET), and a route (/report) of which at most
// RL_CONCURRENT run at once per user (a lease: RL.ACQUIRE when the request starts,
// RL.RELEASE when it ends).
//
// Works unchanged with the RL module or, where MODULE LOAD is refused, RL's Functions
// library (functions/rl.lua): the client finds out which one the server has, and this
// server says so at start.
//
// Run:  npm ci && node server.js
// Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (3000),
//       RL_CAPACITY (5), RL_TOKENS (1), RL_PERIOD (1s): a burst of 5, then 1 per second;
//       RL_CONCURRENT (2) reports at once, each taking RL_REPORT_MS (1000).
import http from "node:http";
import { Redis } from "ioredis";
import { createLimiter } from "@rl/client";

const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", {
  // Fail fast while Redis is down instead of queueing every request for seconds.
  maxRetriesPerRequest: 1,
});
redis.on("error", (err) => console.error("redis:", err.message));
// Fail open: a Redis outage should not take the whole API down ('deny' where the limit
// protects something costly). RL's own errors (a bad setting) are always thrown.
const rl = createLimiter(redis, { onConnectionError: "allow" });

console.log(
  (await rl.backend()) === "module"
    ? "rate limiter: the RL module"
    : "rate limiter: RL's Functions library, no module",
);

const capacity = Number(process.env.RL_CAPACITY ?? 5);
const tokens = Number(process.env.RL_TOKENS ?? 1);
const period = process.env.RL_PERIOD ?? "1s"; // RL durations: 1500ms, 60, 1m, ...
const concurrent = Number(process.env.RL_CONCURRENT ?? 2);
const reportMs = Number(process.env.RL_REPORT_MS ?? 1000);

// X-User stands in for an authenticated user id; trust such a header only behind your
// own auth. Without it, limit by the client's address.
const userOf = (req) => req.headers["x-user"] || req.socket.remoteAddress;

// Middleware: wraps a (req, res) handler, like the ones Express or Connect use.
function withRateLimit(handler) {
  return async (req, res) => {
    // One command: Redis reads, decides and writes atomically, so every instance of
    // this server shares the same bucket without races.
    const d = await rl.bucket(`rl:api:${userOf(req)}`, capacity, tokens, period);
    if (d.error) {
      console.error("rate limiter unavailable; letting the request through:", d.error.message);
      return handler(req, res);
    }
    // RateLimit-Policy, RateLimit, X-RateLimit-*, and Retry-After when rejected: on
    // every response, so clients can pace themselves before they are refused.
    for (const [name, value] of Object.entries(d.headers())) res.setHeader(name, value);
    if (d.allowed) return handler(req, res);
    res.writeHead(429, { "Content-Type": "text/plain" });
    res.end("Too Many Requests\n");
  };
}

// The IETF fields for a limit on requests at once. (The client's headers() describe a
// rate, q units per w seconds; a lease limit is q at once, which
// draft-ietf-httpapi-ratelimit-headers writes with the unit "concurrent-requests".)
function setConcurrencyFields(res, d) {
  const retry = d.headers()["Retry-After"]; // when the soonest lease ends
  res.setHeader("RateLimit-Policy", `"concurrency";q=${d.limit};qu="concurrent-requests"`);
  res.setHeader("RateLimit", `"concurrency";r=${d.remaining}` + (retry ? `;t=${retry}` : ""));
  if (retry) res.setHeader("Retry-After", retry);
}

// Middleware: at most `limit` requests of `path` in flight at once per user; 503 when all
// slots are taken. Each request holds a lease of its own (a random id), which ends by
// itself after `ttl` (the longest a request may run): a crash never keeps a slot.
function withConcurrencyLimit(handler, path, limit, ttl) {
  return async (req, res) => {
    if (req.url !== path) return handler(req, res);
    const lease = await rl.lease(`rl:concurrent:${userOf(req)}`, limit, ttl);
    if (lease.decision.error) {
      console.error("concurrency limiter unavailable; letting the request through:", lease.decision.error.message);
      return handler(req, res);
    }
    setConcurrencyFields(res, lease.decision);
    if (!lease.acquired) {
      res.writeHead(503, { "Content-Type": "text/plain" });
      return res.end("Too many reports running; try again shortly\n");
    }
    try {
      await handler(req, res);
    } finally {
      await lease.release().catch((err) => {
        console.error(`could not release ${lease.id} (it ends by itself):`, err.message);
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

// An RL error (a bad setting, a key of another type): a 500, never silently allowed.
const server = withRateLimit(withConcurrencyLimit(app, "/report", concurrent, "30s"));
const port = Number(process.env.PORT ?? 3000);
http
  .createServer((req, res) =>
    server(req, res).catch((err) => {
      console.error("rate limiter:", err.message);
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
      res.end("rate limiter misconfigured\n");
    }),
  )
  .listen(port, "127.0.0.1", () => {
    console.log(`listening on http://127.0.0.1:${port}`);
  });
