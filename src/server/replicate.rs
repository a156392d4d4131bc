//! A typed builder for `RedisModule_Replicate`, which takes a printf-like format
//! string and C varargs: a format that does not match the arguments is undefined
//! behaviour. Here nobody writes a format: [`replicate!`] takes typed pieces and
//! derives each format letter from the piece that also produces the matching
//! arguments, so the two cannot disagree.
//!
//! ```text
//! replicate!(key, c"SET"; int(value), shared(&names().pxat), int(at))?;
//! ```
//!
//! The key always comes first (letter `s`). Pieces, each followed by a comma but the
//! last:
//!
//! | piece | type | letter | C arguments |
//! |---|---|---|---|
//! | `int(e)` | `i64` | `l` | `long long` |
//! | `bytes(ident)` | `&[u8]` | `b` | `const char *`, `size_t` |
//! | `shared(e)` | `&Shared` | `s` | `RedisModuleString *` |
//! | `strings(ident)` | `&[StrRef]` | `v` | `RedisModuleString **`, `size_t` |
//!
//! The format is a `const` array built at compile time: nothing is allocated and
//! nothing is formatted at run time. (A run-time builder cannot make a C variadic
//! call with a run-time argument list: the call's arity and types must be fixed in
//! the source, so the pieces are matched by a macro.)

use std::os::raw::c_int;

use redis_module::raw;

use rl_core::error::{Error, Result};

macro_rules! replicate {
    ($key:expr, $cmd:expr; $($pieces:tt)*) => {{
        let key: &$crate::server::Key = $key;
        let cmd: &'static ::std::ffi::CStr = $cmd;
        $crate::server::replicate::replicate!(@munch call(key, cmd) [b's'] [key.name()] $($pieces)*)
    }};
    // The format string the pieces produce, NUL included, without replicating
    // (for tests: the piece expressions are not evaluated).
    (@format $($pieces:tt)*) => {
        $crate::server::replicate::replicate!(@munch format() [b's'] [()] $($pieces)*)
    };

    (@munch $mode:ident($($m:tt)*) [$($f:expr),*] [$($a:expr),*]
        int($v:expr) $(, $($rest:tt)*)?) => {
        $crate::server::replicate::replicate!(@munch $mode($($m)*)
            [$($f,)* b'l'] [$($a,)* ::std::os::raw::c_longlong::from($v)] $($($rest)*)?)
    };
    (@munch $mode:ident($($m:tt)*) [$($f:expr),*] [$($a:expr),*]
        bytes($v:ident) $(, $($rest:tt)*)?) => {
        $crate::server::replicate::replicate!(@munch $mode($($m)*)
            [$($f,)* b'b']
            [$($a,)* <[u8]>::as_ptr($v).cast::<::std::os::raw::c_char>(), <[u8]>::len($v)]
            $($($rest)*)?)
    };
    (@munch $mode:ident($($m:tt)*) [$($f:expr),*] [$($a:expr),*]
        shared($v:expr) $(, $($rest:tt)*)?) => {
        $crate::server::replicate::replicate!(@munch $mode($($m)*)
            [$($f,)* b's'] [$($a,)* $crate::server::names::Shared::ptr($v)] $($($rest)*)?)
    };
    (@munch $mode:ident($($m:tt)*) [$($f:expr),*] [$($a:expr),*]
        strings($v:ident) $(, $($rest:tt)*)?) => {
        $crate::server::replicate::replicate!(@munch $mode($($m)*)
            [$($f,)* b'v']
            [$($a,)* $crate::server::replicate::vector($v), <[$crate::server::StrRef]>::len($v)]
            $($($rest)*)?)
    };

    (@munch call($key:ident, $cmd:ident) [$($f:expr),*] [$($a:expr),*]) => {{
        const FORMAT: &[u8] = &[$($f,)* 0];
        // SAFETY: FORMAT was written by the same macro arms that wrote the arguments,
        // one letter per piece, each followed by exactly the C arguments its letter
        // reads (`s`: a live RedisModuleString, `l`: a long long, `b`: pointer and
        // length of a live buffer, `v`: pointer and length of a live array of live
        // strings); FORMAT ends with NUL; `cmd` is a NUL-terminated command name; the
        // key's context and name are the running command's. The server copies or
        // takes a reference to everything before returning.
        let status = unsafe {
            $crate::server::rm!(RedisModule_Replicate)(
                $key.ctx(),
                $cmd.as_ptr(),
                FORMAT.as_ptr().cast::<::std::os::raw::c_char>(),
                $($a),*
            )
        };
        $crate::server::replicate::checked(status)
    }};
    (@munch format() [$($f:expr),*] [$($a:expr),*]) => {{
        const FORMAT: &[u8] = &[$($f,)* 0];
        FORMAT
    }};
}
pub(crate) use replicate;

/// The array pointer of a `v` piece.
pub fn vector(strings: &[super::string::StrRef<'_>]) -> *mut *mut raw::RedisModuleString {
    // StrRef is repr(transparent) over NonNull<RedisModuleString>, which has the
    // layout of *mut RedisModuleString. The server only reads the array.
    strings
        .as_ptr()
        .cast::<*mut raw::RedisModuleString>()
        .cast_mut()
}

/// `RedisModule_Replicate` fails only for an unknown command or a bad format, so an
/// error here is a bug; the caller still learns of it.
pub fn checked(status: c_int) -> Result<()> {
    if status == super::api::OK {
        Ok(())
    } else {
        Err(Error::WriteFailed("propagating the write"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_piece_writes_its_own_letter_after_the_key() {
        assert_eq!(replicate!(@format), b"s\0");
        assert_eq!(replicate!(@format int(1)), b"sl\0");
        assert_eq!(
            replicate!(@format int(used), shared(&names().pxat), int(at)),
            b"slsl\0"
        );
        assert_eq!(
            replicate!(@format shared(t), bytes(level), shared(ts), int(at),),
            b"ssbsl\0"
        );
        assert_eq!(replicate!(@format strings(args)), b"sv\0");
        assert_eq!(replicate!(@format shared(inf), int(max)), b"ssl\0");
    }
}
