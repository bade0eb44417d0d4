//! Allocation-free decimal formatting of integers into a byte buffer.

const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends the decimal digits of `v`.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut pos = 20;
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&PAIRS[d..d + 2]);
    }
    if v >= 10 {
        let d = v as usize * 2;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&PAIRS[d..d + 2]);
    } else {
        pos -= 1;
        buf[pos] = b'0' + v as u8;
    }
    out.extend_from_slice(&buf[pos..]);
}

/// Appends `v` zero-padded to exactly `width` digits (`v` must fit).
#[inline]
pub fn push_u64_padded(out: &mut Vec<u8>, mut v: u64, width: usize) {
    let start = out.len();
    out.resize(start + width, b'0');
    let mut pos = start + width;
    while v > 0 && pos > start {
        pos -= 1;
        out[pos] = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_std() {
        for v in [0u64, 1, 9, 10, 99, 100, 101, 12345, 1 << 20, u64::MAX] {
            let mut b = Vec::new();
            push_u64(&mut b, v);
            assert_eq!(String::from_utf8(b).unwrap(), v.to_string());
        }
        let mut b = Vec::new();
        push_u64_padded(&mut b, 42, 6);
        assert_eq!(b, b"000042");
        b.clear();
        push_u64_padded(&mut b, 0, 6);
        assert_eq!(b, b"000000");
    }
}
