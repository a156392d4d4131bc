//! Server strings (`RedisModuleString`) with Rust ownership: an owned string freed
//! on drop, borrows whose lifetime is tied to the string they point into, and the
//! one unchecked accessor the command glue needs for its argument vector.

use std::marker::PhantomData;
use std::ptr::NonNull;

use redis_module::raw::{RedisModuleCtx, RedisModuleString};

/// A server string this module owns one reference to; released on drop.
///
/// Always created and freed with a NULL context: the module never enables automatic
/// memory, so the context only matters for that bookkeeping, and a NULL one keeps
/// the string independent of any call's context.
#[repr(transparent)]
pub struct ServerString(NonNull<RedisModuleString>);

impl ServerString {
    /// A new string holding a copy of `bytes`.
    pub fn new(bytes: &[u8]) -> Option<Self> {
        // SAFETY: `bytes` is a valid buffer of `bytes.len()` bytes for the duration of
        // the call, which copies it; a NULL context is allowed (see the type's doc).
        let ptr = unsafe {
            rm!(RedisModule_CreateString)(
                std::ptr::null_mut::<RedisModuleCtx>(),
                bytes.as_ptr().cast(),
                bytes.len(),
            )
        };
        NonNull::new(ptr).map(Self)
    }

    /// A new string holding the decimal digits of `value`.
    pub fn from_i64(value: i64) -> Option<Self> {
        // SAFETY: takes a plain integer; a NULL context is allowed (see the type's doc).
        let ptr = unsafe {
            rm!(RedisModule_CreateStringFromLongLong)(std::ptr::null_mut::<RedisModuleCtx>(), value)
        };
        NonNull::new(ptr).map(Self)
    }

    /// Takes over a string the server handed out (e.g. by `RedisModule_HashGet` or
    /// `RedisModule_ZsetRangeCurrentElement`); None for NULL.
    ///
    /// # Safety
    /// `ptr` must be NULL or a live string whose one reference the caller owns and
    /// passes on: nothing else may free it afterwards. It must not be registered with
    /// a context's automatic memory (this module never enables it).
    pub unsafe fn from_owned(ptr: *mut RedisModuleString) -> Option<Self> {
        NonNull::new(ptr).map(Self)
    }

    /// The string for an API call that only borrows it.
    pub fn ptr(&self) -> *mut RedisModuleString {
        self.0.as_ptr()
    }

    /// A borrow usable where the server takes a string it does not keep (e.g. the
    /// vector of a propagated command), valid while `self` lives.
    pub fn as_ref(&self) -> StrRef<'_> {
        StrRef {
            ptr: self.0,
            _owner: PhantomData,
        }
    }

    /// The string's bytes, borrowed for as long as `self` is.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `self` owns a live string, and the borrow returned cannot outlive
        // `self`; this module never modifies its own strings in place, so the
        // buffer stays as it is while borrowed.
        unsafe { bytes_of(self.ptr()) }
    }
}

impl AsRef<[u8]> for ServerString {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

impl Drop for ServerString {
    fn drop(&mut self) {
        // Not rm!: a drop must never panic (it may run while unwinding).
        // SAFETY: reading the function pointer is a plain load of a static that the
        // server's loader wrote once before any command ran.
        if let Some(free) = unsafe { redis_module::raw::RedisModule_FreeString } {
            // SAFETY: `self` owns one reference to a live string (see `from_owned`)
            // and gives it up exactly once, here.
            unsafe { free(std::ptr::null_mut::<RedisModuleCtx>(), self.ptr()) };
        }
    }
}

/// A borrowed [`ServerString`], valid for `'a`.
///
/// `repr(transparent)` over `NonNull<RedisModuleString>`, which has the layout of
/// `*mut RedisModuleString`: a `&[StrRef]` is a valid `RedisModuleString **` array
/// for the `v` format of `RedisModule_Replicate`.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct StrRef<'a> {
    ptr: NonNull<RedisModuleString>,
    _owner: PhantomData<&'a ServerString>,
}

impl StrRef<'_> {
    /// The string for an API call that only borrows it.
    pub(super) fn ptr(self) -> *mut RedisModuleString {
        self.ptr.as_ptr()
    }
}

impl StrRef<'static> {
    /// One of this load's constant strings ([`super::names::names`]); None only if
    /// the server could not create it.
    pub fn shared(s: &'static super::names::Shared) -> Option<Self> {
        NonNull::new(s.ptr()).map(|ptr| StrRef {
            ptr,
            _owner: PhantomData,
        })
    }
}

/// The bytes of a server string (empty for NULL).
///
/// # Safety
/// `s` must be NULL or a live server string that is neither freed nor modified for
/// as long as the returned slice is used (`'a` is chosen by the caller: tie it to
/// whatever keeps the string alive, e.g. the argument vector of the running call).
pub(crate) unsafe fn bytes_of<'a>(s: *const RedisModuleString) -> &'a [u8] {
    if s.is_null() {
        return &[];
    }
    let mut len = 0usize;
    // SAFETY: `s` is a live string (the caller's contract); `len` is a valid out-pointer.
    let p = unsafe { rm!(RedisModule_StringPtrLen)(s, &mut len) };
    if p.is_null() {
        return &[];
    }
    // SAFETY: the server returned `len` readable bytes at `p`, which stay valid and
    // unchanged while `s` lives unmodified (the caller's contract covers `'a`).
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
}
