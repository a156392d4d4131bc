//! Typed errors: what the client refused, what RL answered, or why no answer came.

use redis::RedisError;

/// An RL call's error. The server's own text is kept (`ERR limit must be …`).
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// The client refused an argument before sending anything: out of the command
    /// table's range, a duration that is not a whole number of milliseconds, an
    /// option given twice, or COST, REFUND and DEBIT together.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
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
    /// library, or a command newer than the server's RL.
    #[error("{0}")]
    Unsupported(String),
    /// No answer within the deadline: the connection failed, dropped or timed out. A
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
pub(crate) const NOT_LOADED: &str = "RL is not loaded on this server: neither the module (no RL.GCRA command) nor the Functions library 'rl' (FUNCTION LIST LIBRARYNAME rl is empty). Load the module with `redis-server --loadmodule /path/to/librl.so` (or a `loadmodule` line in redis.conf), or the library with `redis-cli -x FUNCTION LOAD REPLACE < rl.lua`";

impl Error {
    /// The error code word of a server error (`ERR`, `WRONGTYPE`, `OOM`, `NOPERM`, …).
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::BadArgument(m) | Error::WrongType(m) | Error::Oom(m) => m.split(' ').next(),
            Error::Redis(e) => e.code(),
            _ => None,
        }
    }

    /// Whether this is a connection error or a missed deadline (the call may or may
    /// not have run).
    pub fn is_connection(&self) -> bool {
        matches!(self, Error::Connection(_))
    }

    /// Classifies a redis-rs error from a call of `command` (its module name).
    pub(crate) fn from_redis(err: RedisError, command: &str) -> Error {
        if is_connection_error(&err) {
            return Error::Connection(err);
        }
        if is_missing(&err) {
            return Error::NotLoaded(format!("{NOT_LOADED} ({command}: {})", text(&err)));
        }
        match err.code() {
            Some("ERR") => Error::BadArgument(text(&err)),
            Some("WRONGTYPE") => Error::WrongType(text(&err)),
            Some("OOM") => Error::Oom(text(&err)),
            _ => Error::Redis(err),
        }
    }

    /// A command the server still does not know once RL was found again: newer than
    /// this server's RL.
    pub(crate) fn unsupported(command: &str, err: &RedisError) -> Error {
        Error::Unsupported(format!(
            "{command} is not available on this server's RL (an older version): {}",
            text(err)
        ))
    }

    /// The error of a call that missed its deadline.
    pub(crate) fn timeout(deadline: std::time::Duration) -> Error {
        Error::Connection(RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer within the call's deadline ({deadline:?})"),
        )))
    }
}

fn text(err: &RedisError) -> String {
    match (err.code(), err.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        _ => err.to_string(),
    }
}

/// The server does not know the command or function: RL was unloaded, the server
/// restarted without it, or a failover reached a node with the other backend.
pub(crate) fn is_missing(err: &RedisError) -> bool {
    err.code() == Some("ERR")
        && err.detail().is_some_and(|d| {
            d.starts_with("unknown command")
                || d.starts_with("Function not found")
                || d.starts_with("No such function")
        })
}

pub(crate) fn is_connection_error(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn server(code: &str, detail: &str) -> RedisError {
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
    fn unknown_commands_and_functions() {
        for detail in [
            "unknown command 'RL.GCRA', with args beginning with: ",
            "Function not found",
            "No such function",
        ] {
            let err = server("ERR", detail);
            assert!(is_missing(&err), "{detail}");
            let e = Error::from_redis(err.clone(), "RL.GCRA");
            assert!(
                matches!(&e, Error::NotLoaded(m) if m.contains("--loadmodule")),
                "{e:?}"
            );
            let e = Error::unsupported("RL.SHARE", &err);
            assert!(
                matches!(&e, Error::Unsupported(m) if m.contains("RL.SHARE")),
                "{e:?}"
            );
        }
        assert!(!is_missing(&server("ERR", "limit must be an integer")));
    }

    #[test]
    fn connection_errors() {
        let io = RedisError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        ));
        assert!(Error::from_redis(io, "RL.FIXED").is_connection());
        assert!(Error::timeout(std::time::Duration::from_millis(100)).is_connection());
    }
}
