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

// ErrModuleOnly matches (errors.Is) the error of a command the rl Functions
// library does not have (CL.THROTTLE) on a server with only the library.
// Nothing is sent.
var ErrModuleOnly = errors.New("rl: this command needs the RL module; the rl Functions library has none")

// ModuleOnlyError is a call to a command the library does not have, on a
// server with only the library. It matches ErrModuleOnly.
type ModuleOnlyError struct {
	Command string // "CL.THROTTLE"
	Instead string // what to call on the library instead, if anything
}

func (e *ModuleOnlyError) Error() string {
	s := "rl: " + e.Command + " needs the RL module; the rl Functions library has none"
	if e.Instead != "" {
		s += ": call " + e.Instead + " instead"
	}
	return s
}

// Is makes errors.Is(err, ErrModuleOnly) true.
func (e *ModuleOnlyError) Is(target error) bool { return target == ErrModuleOnly }

// ErrUnsupported matches (errors.Is) the error of a command this server's RL
// does not have yet (a command newer than the module or library loaded),
// found after detecting the backend again and resending once: upgrade the
// module or the library.
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

// ArgumentError is a bad argument: one this package refused before sending
// anything (an integer or a duration outside the command table's range, a
// duration that is not a whole number of milliseconds, an option given twice
// or with one it excludes, a policy name that is not printable ASCII), or the
// server's ERR reply to one (a key that does not hold this limiter's state).
// Nothing was changed.
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
		case missingMessage(cmd, msg):
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

// missingMessage: an ERR reply saying the server has no such command or
// function.
func missingMessage(cmd, msg string) bool {
	return (strings.HasPrefix(msg, "unknown command") && strings.Contains(strings.ToLower(msg), "'"+strings.ToLower(cmd)+"'")) ||
		strings.HasPrefix(msg, "Function not found") || strings.HasPrefix(msg, "No such function")
}

// missing: err is the server saying it has no cmd (or its function).
func missing(cmd *command, err error) bool {
	code, msg, ok := splitServerError(err)
	return ok && code == "ERR" && missingMessage(cmd.name, msg)
}

// unsupported is the error of a command still missing after a new detection:
// the server has RL, but an RL without this command.
func unsupported(cmd *command, err error) error {
	_, msg, _ := splitServerError(err)
	return &ServerError{Command: cmd.name, Code: "ERR", Message: msg, err: err, missing: true}
}
