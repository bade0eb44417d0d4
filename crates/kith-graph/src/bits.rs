//! Zero-initialised atomic arrays and the dense frontier bitset.

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};

macro_rules! zeroed_atomics {
    ($name:ident, $atomic:ty, $plain:ty) => {
        /// `len` zeroed atomics, allocated as zeroed plain integers so that a
        /// large array costs one `calloc` (pages are zeroed lazily by the OS)
        /// instead of a per-element initialisation loop.
        pub fn $name(len: usize) -> Vec<$atomic> {
            const _: () = assert!(
                std::mem::size_of::<$atomic>() == std::mem::size_of::<$plain>()
                    && std::mem::align_of::<$atomic>() == std::mem::align_of::<$plain>()
            );
            let mut v = std::mem::ManuallyDrop::new(vec![0 as $plain; len]);
            let (ptr, len, cap) = (v.as_mut_ptr(), v.len(), v.capacity());
            // SAFETY: the atomic type has the same size, alignment (checked at
            // compile time above) and bit validity as the plain integer, and
            // all-zero bits are a valid value of it. The allocation came from a
            // Vec of the plain type with this exact ptr/len/cap, so the Vec of
            // atomics deallocates it with an identical layout. The original Vec
            // is never used or dropped again (ManuallyDrop).
            unsafe { Vec::from_raw_parts(ptr as *mut $atomic, len, cap) }
        }
    };
}

zeroed_atomics!(zeroed_u64s, AtomicU64, u64);
zeroed_atomics!(zeroed_u16s, AtomicU16, u16);

/// A dense set of node offsets: one bit per node, settable from many threads.
pub struct DenseBits {
    words: Vec<AtomicU64>,
    len: u64,
}

impl DenseBits {
    pub fn new(len: u64) -> DenseBits {
        DenseBits {
            words: zeroed_u64s(len.div_ceil(64) as usize),
            len,
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn get(&self, i: u64) -> bool {
        (self.words[(i / 64) as usize].load(Ordering::Relaxed) >> (i % 64)) & 1 == 1
    }

    /// Sets bit `i`; true when this call changed it.
    #[inline]
    pub fn insert(&self, i: u64) -> bool {
        let w = &self.words[(i / 64) as usize];
        let bit = 1u64 << (i % 64);
        if w.load(Ordering::Relaxed) & bit != 0 {
            return false;
        }
        w.fetch_or(bit, Ordering::Relaxed) & bit == 0
    }

    /// Sets bit `i` without reporting whether it was new (cheaper when the
    /// caller does not care: a plain load-test before the RMW).
    #[inline]
    pub fn set(&self, i: u64) {
        let w = &self.words[(i / 64) as usize];
        let bit = 1u64 << (i % 64);
        if w.load(Ordering::Relaxed) & bit == 0 {
            w.fetch_or(bit, Ordering::Relaxed);
        }
    }

    #[inline]
    pub fn word(&self, w: usize) -> u64 {
        self.words[w].load(Ordering::Relaxed)
    }

    pub fn num_words(&self) -> usize {
        self.words.len()
    }

    /// Sets the bits of `bits` in word `w` (one atomic update for a word's
    /// worth of bits).
    #[inline]
    pub fn or_word(&self, w: usize, bits: u64) {
        if bits != 0 {
            self.words[w].fetch_or(bits, Ordering::Relaxed);
        }
    }

    pub fn clear_word(&self, w: usize) {
        self.words[w].store(0, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.words
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones() as u64)
            .sum()
    }

    /// Appends the set bits in increasing order.
    pub fn collect_into(&self, out: &mut Vec<u64>) {
        for (wi, w) in self.words.iter().enumerate() {
            let mut bits = w.load(Ordering::Relaxed);
            while bits != 0 {
                out.push(wi as u64 * 64 + bits.trailing_zeros() as u64);
                bits &= bits - 1;
            }
        }
    }
}

/// Saturating atomic add; returns the previous value.
#[inline]
pub fn saturating_add(a: &AtomicU64, v: u64) -> u64 {
    let mut cur = a.load(Ordering::Relaxed);
    loop {
        if cur == u64::MAX {
            return cur;
        }
        let new = cur.saturating_add(v);
        match a.compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(prev) => return prev,
            Err(x) => cur = x,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_arrays_are_zero_and_usable() {
        for len in [0usize, 1, 7, 1000, 1 << 16] {
            let a = zeroed_u64s(len);
            assert_eq!(a.len(), len);
            assert!(a.iter().all(|x| x.load(Ordering::Relaxed) == 0));
            if len > 0 {
                a[len - 1].store(5, Ordering::Relaxed);
                assert_eq!(a[len - 1].load(Ordering::Relaxed), 5);
            }
            let b = zeroed_u16s(len);
            assert!(b.iter().all(|x| x.load(Ordering::Relaxed) == 0));
            drop(b);
        }
    }

    #[test]
    fn dense_bits() {
        let b = DenseBits::new(130);
        assert!(b.insert(0));
        assert!(!b.insert(0));
        b.set(129);
        b.set(64);
        assert!(b.get(129) && b.get(64) && !b.get(1));
        assert_eq!(b.count(), 3);
        let mut v = Vec::new();
        b.collect_into(&mut v);
        assert_eq!(v, vec![0, 64, 129]);
        b.clear_word(1);
        assert_eq!(b.count(), 2);
    }

    #[test]
    fn saturating() {
        let a = AtomicU64::new(u64::MAX - 2);
        saturating_add(&a, 1);
        saturating_add(&a, 10);
        assert_eq!(a.load(Ordering::Relaxed), u64::MAX);
    }
}
