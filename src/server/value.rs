//! A key's string value, read and written in place (`StringDMA`), and made anew at
//! an exact size (`StringTruncate`).

use std::os::raw::c_int;

use redis_module::raw;

use super::api::OK;
use super::key::Key;

impl Key {
    /// Reads the key's string value in place: `read` gets its bytes (empty for an
    /// empty key or a value of another type), borrowed from the server.
    ///
    /// The bytes stay valid only until the key is written. `read` is `Send`, so it
    /// cannot hold a borrow of any [`Key`] (which is not `Sync`): no write can
    /// happen while the bytes are borrowed.
    pub fn read_string<T>(&self, read: impl FnOnce(&[u8]) -> T + Send) -> T {
        let mut len = 0usize;
        // SAFETY: the key is open (`Key::open`'s contract); `len` is a valid
        // out-pointer. READ access: the buffer is only read. The server returns NULL
        // for a value that is not a string.
        let ptr = unsafe {
            rm!(RedisModule_StringDMA)(self.raw(), &mut len, raw::REDISMODULE_READ as c_int)
        };
        if ptr.is_null() {
            return read(&[]);
        }
        // SAFETY: the server returned `len` readable bytes at `ptr`; they stay valid
        // while the key is open and not written, and `read` cannot write it (see
        // above) nor keep the slice beyond its own run.
        read(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
    }

    /// Makes an empty key a string of exactly `len` zero bytes (a string key is cut
    /// or padded to `len`); false if the server refused, and then nothing changed.
    #[must_use]
    pub fn truncate(&self, len: usize) -> bool {
        // SAFETY: the key is open; the server checks the key's type and access mode.
        unsafe { rm!(RedisModule_StringTruncate)(self.raw(), len) == OK }
    }

    /// Overwrites the string value in place with `bytes`, which must be exactly as
    /// long as the value; false (nothing written) if the server hands no writable
    /// buffer or one of another length.
    #[must_use]
    pub fn overwrite_string(&self, bytes: &[u8]) -> bool {
        let mut len = 0usize;
        // SAFETY: the key is open; `len` is a valid out-pointer. The server returns
        // NULL unless the key is a string opened for writing.
        let ptr = unsafe {
            rm!(RedisModule_StringDMA)(self.raw(), &mut len, raw::REDISMODULE_WRITE as c_int)
        };
        if ptr.is_null() || len != bytes.len() {
            return false;
        }
        // SAFETY: `ptr` points to `len` == `bytes.len()` writable bytes owned by the
        // key (WRITE access, no other key call in between); the regions cannot
        // overlap (`bytes` is not the key's buffer: no borrow of it can be held
        // across a write, see `read_string`).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr.cast::<u8>(), len) };
        true
    }
}
