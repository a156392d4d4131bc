//! The global allocator inside redis-server: every allocation goes through the
//! server's allocator (`RedisModule_Alloc`), so `used_memory`, `maxmemory` and
//! `MEMORY USAGE` see RL's memory.
//!
//! The server only promises 8-byte alignment: Redis built with `MALLOC=libc` on a
//! libc without `malloc_usable_size` support in zmalloc (musl) prepends an 8-byte
//! size header to every block. The redis-module crate's allocator assumes more and
//! handed 16-aligned Rust types (u128 arithmetic, some std collections) misaligned
//! memory, which crashed the server on musl. This one honours any alignment: up to
//! [`SERVER_ALIGN`] it passes the request through; above, it over-allocates by the
//! alignment, returns the first aligned address at least one word in, and keeps the
//! server's pointer in the word just before it, for `dealloc`.

// Unused where the system allocator is the global one (unit tests, the fuzzer).
#![cfg_attr(any(test, feature = "system-alloc"), allow(dead_code))]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use std::mem::size_of;

use redis_module::raw;

/// The alignment every block from `RedisModule_Alloc` has on every server and libc.
const SERVER_ALIGN: usize = 8;

/// Where the aligned block starts in a block the server returned at `base`, for an
/// alignment above [`SERVER_ALIGN`] (a power of two): the first multiple of `align`
/// that leaves a word before it for `base`. Since `base` is 8-aligned, it is at most
/// `align` bytes in, which the over-allocation covers.
fn aligned_start(base: usize, align: usize) -> Option<usize> {
    let after_word = base.checked_add(size_of::<usize>())?;
    Some(after_word.checked_add(align - 1)? & !(align - 1))
}

/// How much to ask the server for: the size, plus room to align (see [`aligned_start`]).
fn padded_size(layout: Layout) -> Option<usize> {
    if layout.align() <= SERVER_ALIGN {
        Some(layout.size())
    } else {
        layout.size().checked_add(layout.align())
    }
}

pub struct ServerAlloc;

// SAFETY: `alloc` returns null or a block of at least `layout.size()` bytes aligned to
// `layout.align()` that stays valid until `dealloc` with the same layout, which frees
// exactly the server block `alloc` obtained.
unsafe impl GlobalAlloc for ServerAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Null (an allocation failure for Rust, which aborts with a message) if the
        // server's allocator is not there, as outside redis-server.
        let (Some(alloc), Some(size)) = (raw::RedisModule_Alloc, padded_size(layout)) else {
            return std::ptr::null_mut();
        };
        // SAFETY: the server's allocator, called with a size; it returns null or a block.
        let base: *mut u8 = unsafe { alloc(size) }.cast();
        if base.is_null() || layout.align() <= SERVER_ALIGN {
            return base;
        }
        let Some(start) = aligned_start(base as usize, layout.align()) else {
            // SAFETY: `base` came from the server's allocator just now.
            unsafe { free(base) };
            return std::ptr::null_mut();
        };
        let offset = start - base as usize;
        // SAFETY: `offset` is at most `align` (see `aligned_start`), so the block
        // (`size + align` bytes) holds `offset + size` bytes; the word before `start`
        // lies inside the block, past `base`, and is 8-aligned.
        unsafe {
            let aligned = base.add(offset);
            aligned.cast::<*mut u8>().sub(1).write(base);
            aligned
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.align() <= SERVER_ALIGN {
            // SAFETY: `ptr` is a block `alloc` passed through from the server.
            unsafe { free(ptr) };
        } else {
            // SAFETY: `alloc` stored the server's pointer in the word before `ptr`.
            unsafe { free(ptr.cast::<*mut u8>().sub(1).read()) };
        }
    }
}

/// Returns a block to the server's allocator.
///
/// # Safety
/// `ptr` must come from `RedisModule_Alloc` and not be freed yet.
unsafe fn free(ptr: *mut u8) {
    if let Some(free) = raw::RedisModule_Free {
        // SAFETY: the caller's contract: a live block of the server's allocator.
        unsafe { free(ptr.cast::<c_void>()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_start_is_aligned_leaves_a_word_and_fits_the_padding() {
        for align in [16usize, 32, 64, 4096] {
            for base in (0x1000..0x1000 + 2 * align).step_by(SERVER_ALIGN) {
                let start = aligned_start(base, align).unwrap();
                assert_eq!(start % align, 0, "base {base:#x} align {align}");
                assert!(
                    start - base >= size_of::<usize>(),
                    "no room for the pointer"
                );
                assert!(start - base <= align, "beyond the padding");
            }
        }
    }

    #[test]
    fn aligned_start_at_the_top_of_the_address_space_is_none() {
        assert_eq!(aligned_start(usize::MAX - 7, 16), None);
        assert_eq!(aligned_start(usize::MAX - 31, 32), None);
    }

    #[test]
    fn only_alignments_above_the_servers_are_padded() {
        let l = |size, align| Layout::from_size_align(size, align).unwrap();
        assert_eq!(padded_size(l(24, 8)), Some(24));
        assert_eq!(padded_size(l(24, 1)), Some(24));
        assert_eq!(padded_size(l(24, 16)), Some(40));
        assert_eq!(padded_size(l(0, 64)), Some(64));
        assert_eq!(
            padded_size(l(isize::MAX as usize - 15, 16)),
            Some(isize::MAX as usize + 1)
        );
    }
}
