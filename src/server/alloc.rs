//! The global allocator inside redis-server: every allocation goes through the
//! server's allocator (`RedisModule_Alloc`), so `used_memory`, `maxmemory` and
//! `MEMORY USAGE` see RL's memory.
//!
//! The server only promises 8-byte alignment: the jemalloc Redis and Valkey build
//! (`--with-lg-quantum=3`) has 8-byte size classes (24, 40, 56 … bytes, 8-aligned),
//! and Redis built with `MALLOC=libc` on musl (whose `malloc_usable_size` zmalloc does
//! not use) prepends an 8-byte size header to every block. The redis-module crate's
//! allocator only rounds the size up to the alignment, which relies on jemalloc's
//! size classes and gives misaligned blocks behind such a header. This one honours
//! any alignment: up to [`SERVER_ALIGN`] it passes the request through; above, it
//! over-allocates by the alignment, returns the first aligned address at least one
//! word in, and keeps the server's pointer in the word just before it, for `dealloc`.
//!
//! Code outside Rust also relies on C's malloc alignment (16 bytes, `max_align_t`)
//! for blocks Rust allocates: the unwinder (LLVM's libunwind, which the release
//! builds link) writes the exception object of a panic with 16-byte SSE stores,
//! while Rust asks for it with alignment 8, so a panic crashed those servers instead
//! of becoming an error reply. Every block of 16 bytes or more is therefore at least
//! 16-aligned ([`align_for`]).

// Unused where the system allocator is the global one (unit tests, the fuzzer).
#![cfg_attr(test, allow(dead_code))]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use std::mem::size_of;

use redis_module::raw;

/// The alignment every block from `RedisModule_Alloc` has on every server and libc.
const SERVER_ALIGN: usize = 8;

/// C's malloc alignment on x86-64 and arm64 (`alignof(max_align_t)`).
const MALLOC_ALIGN: usize = 16;

/// The alignment a block gets: the layout's, raised to [`MALLOC_ALIGN`] for blocks
/// of that size or more, so that every block is aligned at least as malloc's would
/// be (a smaller block cannot hold a 16-aligned object).
fn align_for(layout: Layout) -> usize {
    if layout.size() >= MALLOC_ALIGN {
        layout.align().max(MALLOC_ALIGN)
    } else {
        layout.align()
    }
}

/// Where the aligned block starts in a block the server returned at `base`, for an
/// alignment above [`SERVER_ALIGN`] (a power of two): the first multiple of `align`
/// that leaves a word before it for `base`. Since `base` is 8-aligned, it is at most
/// `align` bytes in, which the over-allocation covers.
fn aligned_start(base: usize, align: usize) -> Option<usize> {
    let after_word = base.checked_add(size_of::<usize>())?;
    Some(after_word.checked_add(align - 1)? & !(align - 1))
}

/// How much to ask the server for: the size, plus room to align (see [`aligned_start`]).
fn padded_size(size: usize, align: usize) -> Option<usize> {
    if align <= SERVER_ALIGN {
        Some(size)
    } else {
        size.checked_add(align)
    }
}

pub struct ServerAlloc;

// SAFETY: `alloc` returns null or a block of at least `layout.size()` bytes aligned to
// `layout.align()` (or more) that stays valid until `dealloc` with the same layout,
// which computes the same alignment and frees exactly the server block `alloc` got.
unsafe impl GlobalAlloc for ServerAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let align = align_for(layout);
        // Null (an allocation failure for Rust, which aborts with a message) if the
        // server's allocator is not there, as outside redis-server.
        let (Some(alloc), Some(size)) = (raw::RedisModule_Alloc, padded_size(layout.size(), align))
        else {
            return std::ptr::null_mut();
        };
        // SAFETY: the server's allocator, called with a size; it returns null or a block.
        let base: *mut u8 = unsafe { alloc(size) }.cast();
        if base.is_null() || align <= SERVER_ALIGN {
            return base;
        }
        let Some(start) = aligned_start(base as usize, align) else {
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
        if align_for(layout) <= SERVER_ALIGN {
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

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

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
        assert_eq!(padded_size(24, 8), Some(24));
        assert_eq!(padded_size(24, 1), Some(24));
        assert_eq!(padded_size(24, 16), Some(40));
        assert_eq!(padded_size(0, 64), Some(64));
        assert_eq!(padded_size(usize::MAX - 15, 16), None);
    }

    #[test]
    fn blocks_get_malloc_alignment() {
        // A panic's exception object: 8-aligned for Rust, 16 for the unwinder.
        assert_eq!(align_for(layout(48, 8)), 16);
        assert_eq!(align_for(layout(16, 1)), 16);
        // Smaller blocks cannot hold a 16-aligned type; larger alignments stay.
        assert_eq!(align_for(layout(15, 8)), 8);
        assert_eq!(align_for(layout(8, 8)), 8);
        assert_eq!(align_for(layout(64, 64)), 64);
    }
}
