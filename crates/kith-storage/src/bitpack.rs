//! Frame-of-reference bit packing for integer columns: every value is stored as
//! `value - base` in `bits` bits, packed little-endian into 64-bit words.

/// Number of bits needed to hold `v`.
pub fn bits_needed(v: u64) -> u8 {
    (64 - v.leading_zeros()) as u8
}

/// Bytes needed to pack `count` values of `bits` bits (whole words).
pub fn packed_bytes(count: u64, bits: u8) -> u64 {
    (count * bits as u64).div_ceil(64) * 8
}

/// Packs `deltas` (each `< 2^bits`) into words.
pub fn pack(deltas: impl Iterator<Item = u64>, count: usize, bits: u8) -> Vec<u64> {
    let mut words = vec![0u64; (count * bits as usize).div_ceil(64)];
    if bits == 0 {
        return words;
    }
    for (idx, d) in deltas.enumerate() {
        debug_assert!(
            bits == 64 || d >> bits == 0,
            "delta {d} exceeds {bits} bits"
        );
        let bit = idx * bits as usize;
        let (word, shift) = (bit / 64, bit % 64);
        words[word] |= d << shift;
        if shift + bits as usize > 64 {
            words[word + 1] |= d >> (64 - shift);
        }
    }
    words
}

/// The packed field that starts at bit `bit` of `words`, in the low bits
/// of the result (unmasked). The field's word and the next one are read as
/// one 128-bit value and shifted (one `shrd`), with no branch on whether
/// the field crosses a word boundary: in a random read that branch is
/// taken or not by chance, and its mispredictions cost more than the
/// second load. A field in the last word reads zeros beyond it.
#[inline(always)]
pub fn field_at(words: &[u64], bit: u64) -> u64 {
    let w = (bit / 64) as usize;
    let lo = words.get(w).copied().unwrap_or(0);
    let hi = words.get(w + 1).copied().unwrap_or(0);
    ((u128::from(hi) << 64 | u128::from(lo)) >> (bit % 64)) as u64
}

/// `out[at[i]] = conv(value rows[i])` for every `i`, the values packed in
/// `bits` bits over `base`: the property reads of the nodes an extend
/// reached. Returns the largest row (a `cmov` in the loop, not a second
/// pass), for the caller to report a row out of bounds; every read stays in
/// bounds whatever the row. `bits == 0` masks each read to `base`.
#[multiversion::multiversion(targets("x86_64+avx2+bmi1+bmi2+lzcnt+popcnt+fma"))]
pub fn gather_into<T>(
    words: &[u64],
    bits: u8,
    base: u64,
    rows: &[u64],
    at: &[usize],
    out: &mut [T],
    conv: impl Fn(u64) -> T,
) -> u64 {
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let width = u64::from(bits);
    let mut largest = 0;
    for (&r, &p) in rows.iter().zip(at) {
        largest = largest.max(r);
        out[p] = conv(base.wrapping_add(field_at(words, r.wrapping_mul(width)) & mask));
    }
    largest
}

/// Calls `out(i, deltas)` for values `start..start+count` a piece at a
/// time, `deltas` being values `i..i + deltas.len()`: the decode of
/// narrower types, through [`unpack_range_into`] a block of 64 values at a
/// time (the first piece ends at a block boundary, so the others are whole
/// blocks). A slice per piece lets the caller convert it in a loop that
/// vectorizes.
#[inline]
pub fn unpack_range(
    words: &[u64],
    bits: u8,
    start: u64,
    count: usize,
    mut out: impl FnMut(usize, &[u64]),
) {
    let mut buf = [0u64; 64];
    let mut done = 0;
    while done < count {
        let at = start + done as u64;
        let n = (count - done).min(64 - (at % 64) as usize);
        unpack_range_into(words, bits, at, 0, 0, &mut buf[..n]);
        out(done, &buf[..n]);
        done += n;
    }
}

/// Writes value `start + i` as `(delta + base) ^ flip` into `out[i]` for
/// every `i < out.len()`: the decode of 64-bit keys (`flip` turns an
/// order-preserving key back into an `i64`'s bits) with base and flip
/// applied where each value is unpacked, not in a second pass over a
/// buffer (a third of a scan-and-sum).
#[inline]
pub fn unpack_range_into(
    words: &[u64],
    bits: u8,
    start: u64,
    base: u64,
    flip: u64,
    out: &mut [u64],
) {
    let count = out.len();
    if bits == 0 {
        out.fill(base ^ flip);
        return;
    }
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let block = block_decoder(bits);
    let width = bits as u64;
    let one = |idx: usize| {
        let v = field_at(words, (start + idx as u64) * width);
        (v & mask).wrapping_add(base) ^ flip
    };
    // The words of the block of 64 values that value `start + idx` is in.
    let block_words = |idx: usize| {
        let first_word = ((start + idx as u64) / 64 * width) as usize;
        words.get(first_word..first_word + bits as usize)
    };
    // Values `idx..idx + n` of one block: a part of at least
    // `PART_BLOCK_MIN` values (a 50-neighbour list) decodes its whole block
    // into a buffer and copies the part, cheaper than value by value.
    let part = |idx: usize, out: &mut [u64]| {
        if out.len() >= PART_BLOCK_MIN {
            if let Some(w) = block_words(idx) {
                let mut buf = [0u64; 64];
                block(w, base, flip, &mut buf);
                let from = ((start + idx as u64) % 64) as usize;
                out.copy_from_slice(&buf[from..from + out.len()]);
                return;
            }
        }
        for (i, o) in out.iter_mut().enumerate() {
            *o = one(idx + i);
        }
    };
    let head = (((64 - start % 64) % 64) as usize).min(count);
    part(0, &mut out[..head]);
    let mut idx = head;
    while count - idx >= 64 {
        let (Some(w), Ok(dst)) = (
            block_words(idx),
            <&mut [u64; 64]>::try_from(&mut out[idx..idx + 64]),
        ) else {
            break;
        };
        block(w, base, flip, dst);
        idx += 64;
    }
    part(idx, &mut out[idx..]);
}

/// The fewest values of a block that [`unpack_range_into`] decodes by
/// decoding the whole block (64 values, unrolled and vectorized) rather
/// than one at a time.
const PART_BLOCK_MIN: usize = 24;

/// Decodes 64 values of `B` bits from exactly `B` words, as
/// [`unpack_range_into`] does.
#[multiversion::multiversion(targets("x86_64+avx2+bmi1+bmi2+lzcnt+popcnt+fma"))]
fn decode_block<const B: usize>(words: &[u64], base: u64, flip: u64, out: &mut [u64; 64]) {
    let words: &[u64; B] = match words.try_into() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mask = if B == 64 { u64::MAX } else { (1u64 << B) - 1 };
    macro_rules! values {
        ($($i:literal)*) => {$({
            let (w, s) = ($i * B / 64, $i * B % 64);
            let mut v = words[w] >> s;
            if s + B > 64 {
                v |= words[w + 1] << (64 - s);
            }
            out[$i] = (v & mask).wrapping_add(base) ^ flip;
        })*};
    }
    values!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
        32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
}

/// [`decode_block`] for `bits` (1 to 64).
fn block_decoder(bits: u8) -> fn(&[u64], u64, u64, &mut [u64; 64]) {
    macro_rules! widths {
        ($($b:literal)*) => {
            match bits {
                $($b => decode_block::<$b>,)*
                _ => decode_block::<64>,
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
        33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pack_unpack_round_trip(values in proptest::collection::vec(any::<u64>(), 0..300), bits in 0u8..=64, start_frac in 0.0f64..1.0) {
            let mask = if bits == 64 { u64::MAX } else if bits == 0 { 0 } else { (1u64 << bits) - 1 };
            let values: Vec<u64> = values.into_iter().map(|v| v & mask).collect();
            let words = pack(values.iter().copied(), values.len(), bits);
            prop_assert_eq!(words.len() * 8, packed_bytes(values.len() as u64, bits) as usize);
            let start = (values.len() as f64 * start_frac) as usize;
            let mut got = vec![0; values.len() - start];
            unpack_range(&words, bits, start as u64, got.len(), |i, v| got[i..i + v.len()].copy_from_slice(v));
            prop_assert_eq!(&got[..], &values[start..]);
            // The fused decode: the same values, based and flipped.
            let (base, flip) = (start as u64 * 977, if bits % 2 == 0 { 1 << 63 } else { 0 });
            let mut fused = vec![7u64; values.len() - start];
            unpack_range_into(&words, bits, start as u64, base, flip, &mut fused);
            let want: Vec<u64> = values[start..].iter().map(|&v| v.wrapping_add(base) ^ flip).collect();
            prop_assert_eq!(fused, want);
        }
    }

    proptest! {
        /// `field_at` reads the bits at `bit..bit + 64` one by one (zeros
        /// past the last word), wherever the field starts in its word,
        /// and never reads out of bounds, even far beyond the words.
        #[test]
        fn fields_read_bit_by_bit(words in proptest::collection::vec(any::<u64>(), 0..6), bit in 0u64..500) {
            let bit_of = |i: u64| {
                let w = (i / 64) as usize;
                words.get(w).map_or(0, |x| (x >> (i % 64)) & 1)
            };
            let want = (0..64).fold(0u64, |acc, k| acc | bit_of(bit + k) << k);
            prop_assert_eq!(field_at(&words, bit), want);
        }
    }

    #[test]
    fn bits_needed_edges() {
        assert_eq!(bits_needed(0), 0);
        assert_eq!(bits_needed(1), 1);
        assert_eq!(bits_needed(255), 8);
        assert_eq!(bits_needed(u64::MAX), 64);
    }
}
