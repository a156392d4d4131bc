//! A hash key's fields: read and set two at a time (RL.BUCKET's `tokens` and `ts`),
//! or one at a time (RL.SHARE's, any number per call). `RedisModule_HashGet` and
//! `RedisModule_HashSet` are C variadic calls, so each arity is its own function.

use std::os::raw::{c_char, c_int};
use std::ptr;

use redis_module::raw::{self, RedisModuleString};

use super::key::Key;
use super::string::{ServerString, StrRef};

/// The value `RedisModule_HashSet` takes to delete a field: redismodule.h's
/// `REDISMODULE_HASH_DELETE`, `((RedisModuleString*)(long)1)`.
const HASH_DELETE: *mut RedisModuleString = ptr::without_provenance_mut(1);

impl Key {
    /// The values of two fields, None for a field the hash lacks (or for both, when
    /// the key holds another type).
    pub fn hash_get_two(&self, fields: [StrRef<'_>; 2]) -> [Option<ServerString>; 2] {
        let mut values: [*mut RedisModuleString; 2] = [ptr::null_mut(); 2];
        let [first, second] = &mut values;
        // SAFETY: the key is open; the variadic list is (field, out-pointer) pairs of
        // the types HASH_NONE reads, ended by NULL; the field names are live module
        // strings (their borrows outlive the call). The server refuses another type
        // without touching the outputs.
        unsafe {
            rm!(RedisModule_HashGet)(
                self.raw(),
                raw::REDISMODULE_HASH_NONE as c_int,
                fields[0].ptr(),
                first as *mut *mut RedisModuleString,
                fields[1].ptr(),
                second as *mut *mut RedisModuleString,
                ptr::null_mut::<c_char>(),
            )
        };
        // SAFETY: HashGet hands the caller one reference to each value it found
        // (NULL for a missing field).
        values.map(|v| unsafe { ServerString::from_owned(v) })
    }

    /// Sets two fields; how many fields were inserted or updated (0: the server
    /// refused, and nothing changed; it checks the type and the access mode before
    /// setting any field).
    #[must_use]
    pub fn hash_set_two(&self, pairs: [(StrRef<'_>, StrRef<'_>); 2]) -> i32 {
        // SAFETY: the key is open; the variadic list is (field, value) pairs of live
        // strings, ended by NULL, as HASH_COUNT_ALL (no CFIELDS) reads.
        unsafe {
            rm!(RedisModule_HashSet)(
                self.raw(),
                raw::REDISMODULE_HASH_COUNT_ALL as c_int,
                pairs[0].0.ptr(),
                pairs[0].1.ptr(),
                pairs[1].0.ptr(),
                pairs[1].1.ptr(),
                ptr::null_mut::<c_char>(),
            )
        }
    }

    /// One field's value; None when the hash lacks it (or the key holds another
    /// type, or none).
    pub fn hash_get(&self, field: StrRef<'_>) -> Option<ServerString> {
        let mut value: *mut RedisModuleString = ptr::null_mut();
        // SAFETY: the key is open; the variadic list is one (field, out-pointer) pair
        // of the types HASH_NONE reads, ended by NULL; the field is a live string
        // (its borrow outlives the call). The server refuses another type without
        // touching the output.
        unsafe {
            rm!(RedisModule_HashGet)(
                self.raw(),
                raw::REDISMODULE_HASH_NONE as c_int,
                field.ptr(),
                &mut value as *mut *mut RedisModuleString,
                ptr::null_mut::<c_char>(),
            )
        };
        // SAFETY: HashGet hands the caller one reference to the value it found
        // (NULL for a missing field).
        unsafe { ServerString::from_owned(value) }
    }

    /// Sets one field (inserted or updated): false when the server refused, and
    /// nothing changed (it checks the type and the access mode before setting).
    #[must_use]
    pub fn hash_set(&self, field: StrRef<'_>, value: StrRef<'_>) -> bool {
        // SAFETY: the key is open; the variadic list is one (field, value) pair of
        // live strings, ended by NULL, as HASH_COUNT_ALL (no CFIELDS) reads.
        let set = unsafe {
            rm!(RedisModule_HashSet)(
                self.raw(),
                raw::REDISMODULE_HASH_COUNT_ALL as c_int,
                field.ptr(),
                value.ptr(),
                ptr::null_mut::<c_char>(),
            )
        };
        set == 1
    }

    /// Deletes one field: true when it was there and is gone; false when the hash
    /// lacks it (or the server refused). Deleting the last field deletes the key.
    #[must_use]
    pub fn hash_delete(&self, field: StrRef<'_>) -> bool {
        // SAFETY: the key is open; the variadic list is one (field, HASH_DELETE) pair,
        // ended by NULL: a live field string and the marker the server compares the
        // value against (never dereferenced).
        let deleted = unsafe {
            rm!(RedisModule_HashSet)(
                self.raw(),
                raw::REDISMODULE_HASH_NONE as c_int,
                field.ptr(),
                HASH_DELETE,
                ptr::null_mut::<c_char>(),
            )
        };
        deleted == 1
    }
}
