'use strict';
// Every error this package raises is an RLError; `code` is the server's code word when
// the server answered. (What error an answer is: classify.js.)

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
};
