'use strict';
// Every error this package raises is an RLError; `code` is the server's code word when
// the server answered.

class RLError extends Error {
  constructor(message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
    this.command = options.command;
  }
}

/** An error reply from the server (its code word is `code`: ERR, WRONGTYPE, OOM, NOPERM, ...). */
class RLServerError extends RLError {}
/**
 * A bad argument: refused by the client before anything is sent (no `code`), or by the
 * server (`code` ERR: a bad argument, option or arity, or a key RL did not write).
 * Nothing was changed.
 */
class RLArgumentError extends RLServerError {}
/** WRONGTYPE: the key holds another Redis type. Nothing was changed. */
class RLWrongTypeError extends RLServerError {}
/** OOM: the server is at maxmemory and refuses the write. */
class RLOutOfMemoryError extends RLServerError {}
/** Neither the RL module nor the RL Functions library is loaded on the server. */
class RLNotLoadedError extends RLError {}
/** The backend has no such command (CL.THROTTLE on the library; a command newer than the server's RL). */
class RLUnsupportedError extends RLError {}
/** The call did not get a reply: connection refused, closed, or no answer in time. */
class RLConnectionError extends RLError {}
/** No reply within the call's deadline (the limiter's `timeout`). */
class RLTimeoutError extends RLConnectionError {}
/** withLease(): the lease was not granted; `decision` says when to retry. */
class RLLeaseRejectedError extends RLError {
  constructor(decision, key) {
    super(
      `lease on '${String(key)}' not granted: ${decision.limit} held` +
        (decision.retryAfter === null ? '' : `; retry in ${decision.retryAfter} ms`),
      { command: 'RL.ACQUIRE' },
    );
    this.decision = decision;
  }
}

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

module.exports = {
  RLError,
  RLServerError,
  RLArgumentError,
  RLWrongTypeError,
  RLOutOfMemoryError,
  RLNotLoadedError,
  RLUnsupportedError,
  RLConnectionError,
  RLTimeoutError,
  RLLeaseRejectedError,
  refuse,
  isMissing,
  toRLError,
  NOT_LOADED_HELP,
};
