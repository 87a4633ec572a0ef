//! A size-class allocator for guests (the `size-class-alloc` feature, on
//! by default).
//!
//! A permission check or a short call allocates and frees many small
//! blocks (parser tokens, AST nodes, strings). The default wasm allocator
//! (dlmalloc) spends a quarter of the Bash tool's check time splitting and
//! coalescing them. Here a small block comes from a free list per size class
//! and goes back to it: a few instructions each way, no headers (the layout
//! passed to `dealloc` names the class), no coalescing. Blocks above
//! [`MAX_SMALL`] bytes or aligned above [`ALIGN`] go to the backing
//! allocator unchanged.
//!
//! Memory of freed small blocks is kept for reuse by the same class and is
//! never handed back: an instance lives for one call (or one batch of
//! checks), so the peak is what counts, and that is unchanged. The memory
//! cap the host sets still applies to everything.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr::null_mut;

/// Alignment of every small block (and the granularity of the classes).
pub const ALIGN: usize = 16;
/// The largest size served from the size classes.
pub const MAX_SMALL: usize = 2048;
/// Bytes taken from the backing allocator at a time for small blocks.
const CHUNK: usize = 64 * 1024;
/// 16-byte classes up to 256 bytes, then 512, 1024 and 2048.
const CLASSES: usize = 19;

/// The size class of a small layout, or `None` when the backing allocator
/// serves it.
fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size().max(1);
    if layout.align() > ALIGN || size > MAX_SMALL {
        return None;
    }
    Some(match size {
        ..=256 => (size - 1) / ALIGN,
        ..=512 => 16,
        ..=1024 => 17,
        _ => 18,
    })
}

/// The block size of a class.
fn class_size(class: usize) -> usize {
    match class {
        ..16 => (class + 1) * ALIGN,
        16 => 512,
        17 => 1024,
        _ => 2048,
    }
}

struct State {
    /// Head of each class's free list; a free block stores the next one.
    free: [*mut u8; CLASSES],
    /// The unused rest of the current chunk.
    bump: *mut u8,
    end: *mut u8,
}

/// Size classes over a backing allocator `A`. Not thread-safe: for
/// single-threaded guests (wasm without the atomics feature) only, where
/// the SDK installs it as the global allocator.
pub struct SizeClassAlloc<A> {
    backing: A,
    state: UnsafeCell<State>,
}

// SAFETY: only installed where there is one thread (see the type docs); the
// native tests use one instance per test thread.
unsafe impl<A: Sync> Sync for SizeClassAlloc<A> {}

impl<A> SizeClassAlloc<A> {
    /// An allocator with empty free lists over `backing`.
    pub const fn new(backing: A) -> Self {
        Self {
            backing,
            state: UnsafeCell::new(State { free: [null_mut(); CLASSES], bump: null_mut(), end: null_mut() }),
        }
    }
}

impl<A: GlobalAlloc> SizeClassAlloc<A> {
    /// A fresh block of `class` carved from the current chunk (a new chunk
    /// when it is used up; the rest of the old one is left unused).
    unsafe fn carve(&self, state: &mut State, class: usize) -> *mut u8 {
        let size = class_size(class);
        if state.bump.is_null() || (state.end as usize - state.bump as usize) < size {
            // SAFETY: CHUNK and ALIGN form a valid, non-zero layout.
            let chunk = unsafe { self.backing.alloc(Layout::from_size_align_unchecked(CHUNK, ALIGN)) };
            if chunk.is_null() {
                return null_mut();
            }
            state.bump = chunk;
            // SAFETY: `chunk` points to CHUNK bytes.
            state.end = unsafe { chunk.add(CHUNK) };
        }
        let block = state.bump;
        // SAFETY: at least `size` bytes remain before `end`.
        state.bump = unsafe { block.add(size) };
        block
    }
}

unsafe impl<A: GlobalAlloc> GlobalAlloc for SizeClassAlloc<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { self.backing.alloc(layout) };
        };
        // SAFETY: single-threaded (see `Sync`), and no reference to the
        // state outlives this call.
        let state = unsafe { &mut *self.state.get() };
        let head = state.free[class];
        if head.is_null() {
            // SAFETY: `state` is exclusively borrowed here.
            return unsafe { self.carve(state, class) };
        }
        // SAFETY: a free block of this class holds the next free block.
        state.free[class] = unsafe { head.cast::<*mut u8>().read() };
        head
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            // SAFETY: `ptr` came from the backing allocator with `layout`.
            return unsafe { self.backing.dealloc(ptr, layout) };
        };
        // SAFETY: as in `alloc`.
        let state = unsafe { &mut *self.state.get() };
        // SAFETY: the block is ours again, at least ALIGN bytes and aligned.
        unsafe { ptr.cast::<*mut u8>().write(state.free[class]) };
        state.free[class] = ptr;
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size` with `layout.align()` is valid.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (class_of(layout), class_of(new_layout)) {
            // Same block size: the block already fits.
            (Some(a), Some(b)) if a == b => ptr,
            // Both large: the backing allocator may grow in place.
            // SAFETY: forwarded with the caller's guarantees.
            (None, None) => unsafe { self.backing.realloc(ptr, layout, new_size) },
            _ => {
                // SAFETY: `new_layout` is valid (see above).
                let new = unsafe { self.alloc(new_layout) };
                if !new.is_null() {
                    // SAFETY: both blocks hold at least the smaller size and
                    // do not overlap (the old one is still allocated).
                    unsafe {
                        core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                new
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    #[test]
    fn classes_cover_every_small_size_with_room() {
        for size in 1..=MAX_SMALL {
            let class = class_of(Layout::from_size_align(size, 1).unwrap()).unwrap();
            assert!(class_size(class) >= size, "{size}");
            if class > 0 {
                assert!(class_size(class - 1) < size, "{size} is not in the smallest class that fits");
            }
        }
        assert_eq!(class_of(Layout::from_size_align(MAX_SMALL + 1, 1).unwrap()), None);
        assert_eq!(class_of(Layout::from_size_align(8, 32).unwrap()), None);
    }

    #[test]
    fn freed_blocks_are_reused_by_their_class_only() {
        let a = SizeClassAlloc::new(System);
        let l24 = Layout::from_size_align(24, 8).unwrap();
        let l100 = Layout::from_size_align(100, 8).unwrap();
        unsafe {
            let p = a.alloc(l24);
            a.dealloc(p, l24);
            let q = a.alloc(l100);
            assert_ne!(p, q, "a 100-byte block must not reuse a 32-byte one");
            assert_eq!(a.alloc(l24), p, "the freed 32-byte block comes back");
            a.dealloc(q, l100);
        }
    }

    /// Random alloc / realloc / free sequences: every live block keeps its
    /// bytes (no two live blocks overlap), alignment holds.
    #[test]
    fn live_blocks_never_overlap() {
        let a = SizeClassAlloc::new(System);
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for step in 0..20_000u32 {
            let r = next();
            let fill = (step % 251) as u8;
            match r % 4 {
                0 | 1 if live.len() < 500 => {
                    let size = match r % 10 {
                        0 => (r >> 8) as usize % 8000 + 1,
                        _ => (r >> 8) as usize % 300 + 1,
                    };
                    let align = [1, 2, 4, 8, 16, 32][(r >> 40) as usize % 6];
                    let layout = Layout::from_size_align(size, align).unwrap();
                    let p = unsafe { a.alloc(layout) };
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0);
                    unsafe { p.write_bytes(fill, size) };
                    live.push((p, layout, fill));
                }
                2 if !live.is_empty() => {
                    let i = (r >> 16) as usize % live.len();
                    let (p, layout, old) = live[i];
                    let new_size = (r >> 24) as usize % 3000 + 1;
                    let q = unsafe { a.realloc(p, layout, new_size) };
                    assert!(!q.is_null());
                    let kept = layout.size().min(new_size);
                    assert!(unsafe { std::slice::from_raw_parts(q, kept) }.iter().all(|&b| b == old));
                    unsafe { q.write_bytes(fill, new_size) };
                    live[i] = (q, Layout::from_size_align(new_size, layout.align()).unwrap(), fill);
                }
                _ if !live.is_empty() => {
                    let i = (r >> 16) as usize % live.len();
                    let (p, layout, fill) = live.swap_remove(i);
                    let bytes = unsafe { std::slice::from_raw_parts(p, layout.size()) };
                    assert!(bytes.iter().all(|&b| b == fill), "a live block was overwritten");
                    unsafe { a.dealloc(p, layout) };
                }
                _ => {}
            }
        }
        for (p, layout, fill) in live {
            let bytes = unsafe { std::slice::from_raw_parts(p, layout.size()) };
            assert!(bytes.iter().all(|&b| b == fill), "a live block was overwritten");
            unsafe { a.dealloc(p, layout) };
        }
    }
}
