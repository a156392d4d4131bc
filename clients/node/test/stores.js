'use strict';
// Shared by the tests of the stores for other rate-limit libraries (express.test.js,
// fastify.test.js): an HTTP server on a free port, the server's clock, its windows.
const http = require('node:http');
const { raw } = require('./helpers');

/** `handler` (an Express app, or any (req, res)) listening on 127.0.0.1: { url, close }. */
function serve(handler) {
  return new Promise((resolve, reject) => {
    const server = http.createServer(handler);
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const url = `http://127.0.0.1:${server.address().port}`;
      resolve({ url, close: () => new Promise((done) => server.close(done)) });
    });
    server.keepAliveTimeout = 100;
  });
}

/** The server's clock, in ms. */
async function serverMs(client) {
  const [s, us] = await raw(client, 'TIME');
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until the server's clock is in the first `share` of an epoch-aligned window of
 * `windowMs` (RL.FIXED's windows), so the calls that follow fall in one window. Returns
 * that window's end, in server ms.
 */
async function startOfWindow(client, windowMs, share = 0.5) {
  for (;;) {
    const now = await serverMs(client);
    const into = now % windowMs;
    if (into < windowMs * share) return now - into + windowMs;
    await sleep(windowMs - into + 5);
  }
}

/**
 * The seconds express-rate-limit (or @fastify/rate-limit) may give as the reset of a
 * call made between server times `before` and `after` in a window ending at `end`:
 * ceil((end - now) / 1000) for a `now` in that span (less the time the response took).
 */
function resetSpan(end, before, after) {
  return { min: Math.max(0, Math.ceil((end - after - (after - before)) / 1000)), max: Math.ceil((end - before) / 1000) };
}

module.exports = { serve, serverMs, sleep, startOfWindow, resetSpan };
