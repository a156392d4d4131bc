'use strict';
// What error a failure is: a refused argument, the server's error reply by its code word,
// a command or function the server does not have, or no reply at all.

const { RLError, RLServerError, RLArgumentError, RLWrongTypeError, RLOutOfMemoryError, RLNotLoadedError, RLConnectionError } = require('./errors');

/** A refused argument, before anything is sent. */
const refuse = (command, message) => new RLArgumentError(`${command}: ${message}`, { command });

const NOT_LOADED_HELP =
  'RL is not loaded on this server: load the module (redis-server --loadmodule /path/to/librl.so, ' +
  'or MODULE LOAD /path/to/librl.so) or the Functions library (FUNCTION LOAD with the text of ' +
  "functions/rl.lua, e.g. `make load-library`); or force one with createLimiter(client, { backend: 'module' | 'library' })";

// A reply error of node-redis (ErrorReply and its subclasses) or ioredis (ReplyError),
// told apart from connection failures without importing either package.
function isReplyError(err) {
  if (err === null || typeof err !== 'object') return false;
  for (let p = Object.getPrototypeOf(err); p && p !== Error.prototype; p = Object.getPrototypeOf(p)) {
    const name = p.constructor && p.constructor.name;
    if (name === 'ErrorReply' || name === 'ReplyError' || name === 'SimpleError' || name === 'BlobError') {
      return true;
    }
  }
  return false;
}

// The server's answer that the command or function does not exist: the backend is gone
// (restart, unload, failover) or older than the command.
const MISSING = /^ERR unknown command|^ERR Function not found|No such function/i;

/** Whether `err` (an RLError) says the command or function is not on the server. */
const isMissing = (err) => err instanceof RLNotLoadedError && err.missing === true;

function toRLError(err, command) {
  if (err instanceof RLError) return err;
  const message = err && err.message !== undefined ? String(err.message) : String(err);
  if (!isReplyError(err)) {
    return new RLConnectionError(`${command}: no reply from Redis: ${message}`, { cause: err, command });
  }
  const code = message.split(' ', 1)[0];
  const opts = { cause: err, code, command };
  if (MISSING.test(message)) {
    const e = new RLNotLoadedError(`${command}: ${message}. ${NOT_LOADED_HELP}`, opts);
    e.missing = true;
    return e;
  }
  switch (code) {
    case 'ERR':
      return new RLArgumentError(message, opts);
    case 'WRONGTYPE':
      return new RLWrongTypeError(message, opts);
    case 'OOM':
      return new RLOutOfMemoryError(message, opts);
    default:
      return new RLServerError(message, opts);
  }
}

module.exports = { refuse, isMissing, toRLError, NOT_LOADED_HELP };
