//! Typed errors: what RL answered, or why no answer came.

use redis::{ErrorKind, RedisError};

/// An RL call's error. The server's own text is kept (`ERR limit must be …`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// RL refused an argument, an option or a key whose content it did not write
    /// (the server's `ERR …`). Nothing was changed.
    #[error("{0}")]
    BadArgument(String),
    /// The key holds another Redis type (`WRONGTYPE …`). Nothing was changed.
    #[error("{0}")]
    WrongType(String),
    /// The server has neither the RL module nor the RL Functions library; the
    /// message says how to load one.
    #[error("{0}")]
    NotLoaded(String),
    /// The server is at `maxmemory` and refused the write (`OOM …`).
    #[error("{0}")]
    Oom(String),
    /// The command does not exist on this backend: CL.THROTTLE on the Functions
    /// library, or a command newer than the server's RL (RL.SHARE).
    #[error("{0}")]
    Unsupported(String),
    /// No answer: the connection failed, dropped or timed out. A
    /// [`FailMode`](crate::FailMode) other than `Error` turns this into a decision.
    #[error("connection error: {0}")]
    Connection(#[source] RedisError),
    /// Any other error from the server or redis-rs (`NOPERM`, `READONLY`,
    /// `CROSSSLOT`, `MOVED`, …).
    #[error("{0}")]
    Redis(#[source] RedisError),
    /// The server answered something that is not an RL reply.
    #[error("unexpected reply: {0}")]
    UnexpectedReply(String),
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How to load RL, for [`Error::NotLoaded`].
pub(crate) const NOT_LOADED: &str = "RL is not loaded on this server: neither the module (no RL.GCRA command) nor the Functions library 'rl' (FUNCTION LIST LIBRARYNAME rl is empty). Load the module with `redis-server --loadmodule /path/to/librl.so` (or a `loadmodule` line in redis.conf), or the library with `redis-cli -x FUNCTION LOAD REPLACE < functions/rl.lua` (`make load-library` in RL's repository)";

impl Error {
    /// The error code word of a server error (`ERR`, `WRONGTYPE`, `OOM`, `NOPERM`, …).
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::BadArgument(m) | Error::WrongType(m) | Error::Oom(m) => m.split(' ').next(),
            Error::Redis(e) => e.code(),
            _ => None,
        }
    }

    /// Whether this is a connection error (the call may or may not have run).
    pub fn is_connection(&self) -> bool {
        matches!(self, Error::Connection(_))
    }

    /// Classifies a redis-rs error from a call of `command` (its module name).
    pub(crate) fn from_redis(err: RedisError, command: &str) -> Error {
        if is_connection_error(&err) {
            return Error::Connection(err);
        }
        let text = || match (err.code(), err.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            _ => err.to_string(),
        };
        match err.code() {
            Some("ERR") => {
                let detail = err.detail().unwrap_or_default();
                if detail.starts_with("unknown command") || detail.starts_with("Function not found")
                {
                    missing(command, &text())
                } else {
                    Error::BadArgument(text())
                }
            }
            Some("WRONGTYPE") => Error::WrongType(text()),
            Some("OOM") => Error::Oom(text()),
            _ => Error::Redis(err),
        }
    }
}

/// A command the server does not know: RL itself is missing for the commands every
/// RL has; a newer command is unsupported by this server's RL.
fn missing(command: &str, text: &str) -> Error {
    if command == "RL.SHARE" {
        Error::Unsupported(format!(
            "{command} is not available on this server's RL (an older version): {text}"
        ))
    } else {
        Error::NotLoaded(format!("{NOT_LOADED} ({command}: {text})"))
    }
}

pub(crate) fn is_connection_error(err: &RedisError) -> bool {
    err.kind() == ErrorKind::IoError
        || err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: &str, detail: &str) -> RedisError {
        // How redis-rs builds a server error from `-<code> <detail>`.
        let reply = format!("-{code} {detail}\r\n");
        match redis::parse_redis_value(reply.as_bytes()) {
            Ok(v) => match v.extract_error() {
                Err(e) => e,
                Ok(v) => panic!("not an error: {v:?}"),
            },
            Err(e) => e,
        }
    }

    #[test]
    fn classifies_server_errors() {
        let e = Error::from_redis(
            server("ERR", "limit must be an integer from 1 to 9007199254740991"),
            "RL.FIXED",
        );
        assert!(
            matches!(&e, Error::BadArgument(m) if m == "ERR limit must be an integer from 1 to 9007199254740991"),
            "{e:?}"
        );
        assert_eq!(e.code(), Some("ERR"));
        let e = Error::from_redis(
            server(
                "WRONGTYPE",
                "Operation against a key holding the wrong kind of value",
            ),
            "RL.FIXED",
        );
        assert!(
            matches!(&e, Error::WrongType(m) if m.starts_with("WRONGTYPE Operation")),
            "{e:?}"
        );
        let e = Error::from_redis(
            server("OOM", "command not allowed when used memory > 'maxmemory'."),
            "RL.FIXED",
        );
        assert!(
            matches!(&e, Error::Oom(m) if m.starts_with("OOM command")),
            "{e:?}"
        );
        let e = Error::from_redis(server("NOPERM", "this user has no permissions"), "RL.FIXED");
        assert!(matches!(&e, Error::Redis(_)), "{e:?}");
        assert_eq!(e.code(), Some("NOPERM"));
    }

    #[test]
    fn unknown_commands() {
        let e = Error::from_redis(
            server(
                "ERR",
                "unknown command 'RL.GCRA', with args beginning with: ",
            ),
            "RL.GCRA",
        );
        assert!(
            matches!(&e, Error::NotLoaded(m) if m.contains("--loadmodule") && m.contains("FUNCTION LOAD")),
            "{e:?}"
        );
        let e = Error::from_redis(server("ERR", "Function not found"), "RL.FIXED");
        assert!(matches!(&e, Error::NotLoaded(_)), "{e:?}");
        let e = Error::from_redis(server("ERR", "Function not found"), "RL.SHARE");
        assert!(
            matches!(&e, Error::Unsupported(m) if m.contains("RL.SHARE")),
            "{e:?}"
        );
    }

    #[test]
    fn connection_errors() {
        let io = RedisError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        ));
        let e = Error::from_redis(io, "RL.FIXED");
        assert!(e.is_connection(), "{e:?}");
    }
}
