package rl

import (
	"context"
	"errors"
	"strings"
)

// ErrNotLoaded matches (errors.Is) the error of a call to a server that has
// neither the RL module nor the rl Functions library. Its text says how to
// load one.
var ErrNotLoaded = errors.New("rl: not loaded")

// ErrWrongType matches (errors.Is) the server's WRONGTYPE error: the key holds
// another Redis type (a list, a set...). Nothing was changed.
var ErrWrongType = errors.New("rl: WRONGTYPE")

// ErrOOM matches (errors.Is) the server's OOM error: the server is at
// maxmemory and refuses RL's writes (RL.RELEASE still works).
var ErrOOM = errors.New("rl: OOM")

// ErrModuleOnly is returned by Throttle (CL.THROTTLE) on a server that has
// only the Functions library, which has no CL.THROTTLE.
var ErrModuleOnly = errors.New("rl: CL.THROTTLE needs the RL module; the rl Functions library has none: " +
	"call GCRA(ctx, key, maxBurst+1, count, period, Cost(quantity)) instead, on the same key, with RL's reply")

// ErrUnsupported matches (errors.Is) the error of a command this server's RL
// does not have yet (RL.SHARE on an RL that predates it): upgrade the module
// or the library.
var ErrUnsupported = errors.New("rl: command not supported by this server's RL")

// NotLoadedError is the error of a call to a server without RL. It matches
// ErrNotLoaded.
type NotLoadedError struct {
	// Detail is what the server answered, when the call itself (not the
	// probe) found RL missing: "unknown command", "Function not found".
	Detail string
}

func (e *NotLoadedError) Error() string {
	s := "rl: neither the RL module nor the rl Functions library is loaded on this server: " +
		"start redis-server with --loadmodule /path/to/librl.so (or MODULE LOAD /path/to/librl.so), " +
		"or load the library with `redis-cli -x FUNCTION LOAD REPLACE < functions/rl.lua` (make load-library in a clone of RL)"
	if e.Detail != "" {
		s += " (the server said: " + e.Detail + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrNotLoaded) true.
func (e *NotLoadedError) Is(target error) bool { return target == ErrNotLoaded }

// ArgumentError is a bad argument: the server's ERR reply to a bad count,
// duration, option, arity, or a key that does not hold this limiter's state;
// or a duration this package refused before sending (not a whole number of
// milliseconds). Nothing was changed.
type ArgumentError struct {
	Command string // "RL.FIXED", as the call was made
	Message string // the server's text after "ERR ", e.g. "limit must be an integer from 1 to 9007199254740991"
	err     error  // the underlying client's error, nil for a local one
}

func (e *ArgumentError) Error() string { return "rl: " + e.Command + ": ERR " + e.Message }

// Unwrap gives the underlying client's error (nil for a check made here).
func (e *ArgumentError) Unwrap() error { return e.err }

// ServerError is any other error reply: WRONGTYPE (matches ErrWrongType), OOM
// (matches ErrOOM), NOPERM, READONLY, MOVED, CROSSSLOT, LOADING, and ERR
// replies that are not about the arguments (an internal failure, a refused
// write).
type ServerError struct {
	Command string // "RL.FIXED"
	Code    string // "WRONGTYPE", "OOM", ...
	Message string // the text after the code
	err     error
	missing bool // the command is not on this server: matches ErrUnsupported
}

func (e *ServerError) Error() string { return "rl: " + e.Command + ": " + e.Code + " " + e.Message }

// Unwrap gives the underlying client's error.
func (e *ServerError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrWrongType) and errors.Is(err, ErrOOM) true for
// those codes.
func (e *ServerError) Is(target error) bool {
	switch target {
	case ErrWrongType:
		return e.Code == "WRONGTYPE"
	case ErrOOM:
		return e.Code == "OOM"
	case ErrUnsupported:
		return e.missing
	}
	return false
}

// redisError is the marker go-redis puts on its server error replies.
type redisError interface{ RedisError() }

// splitServerError tells a server's error reply from any other error (a
// connection error, a timeout): a go-redis reply error, or an error whose
// text is a reply's, an upper-case code word then a space ("ERR ...",
// "WRONGTYPE ..."), which is what redigo and most clients give.
func splitServerError(err error) (code, msg string, ok bool) {
	s := err.Error()
	_, marked := err.(redisError)
	i := strings.IndexByte(s, ' ')
	if i < 2 {
		if marked {
			return s, "", true
		}
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		if (c < 'A' || c > 'Z') && c != '_' && (c < '0' || c > '9' || j == 0) {
			if marked {
				return "ERR", s, true
			}
			return "", "", false
		}
	}
	return s[:i], s[i+1:], true
}

// classify turns the underlying client's error for cmd into this package's
// typed errors. A connection error comes back unchanged, with transport true.
func classify(cmd string, err error) (out error, transport bool) {
	var ae *ArgumentError
	var se *ServerError
	var nl *NotLoadedError
	if errors.As(err, &ae) || errors.As(err, &se) || errors.As(err, &nl) || errors.Is(err, ErrModuleOnly) {
		return err, false
	}
	code, msg, ok := splitServerError(err)
	if !ok {
		if errors.Is(err, context.Canceled) {
			return err, false
		}
		return err, true
	}
	if code == "ERR" {
		switch {
		case strings.HasPrefix(msg, "unknown command") && strings.Contains(strings.ToLower(msg), "'"+strings.ToLower(cmd)+"'"),
			strings.HasPrefix(msg, "Function not found"):
			if cmd == "RL.SHARE" {
				// Newer than the rest: an older RL is loaded without it.
				return &ServerError{Command: cmd, Code: code, Message: msg, err: err, missing: true}, false
			}
			return &NotLoadedError{Detail: code + " " + msg}, false
		case strings.HasPrefix(msg, "internal error"), strings.HasPrefix(msg, "could not update"):
			return &ServerError{Command: cmd, Code: code, Message: msg, err: err}, false
		}
		return &ArgumentError{Command: cmd, Message: msg, err: err}, false
	}
	se = &ServerError{Command: cmd, Code: code, Message: msg, err: err}
	switch code {
	case "LOADING", "MASTERDOWN", "CLUSTERDOWN", "BUSY", "TRYAGAIN":
		// The server cannot answer now: an outage as far as fail-open goes.
		return se, true
	}
	return se, false
}
