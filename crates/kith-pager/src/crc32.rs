//! CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) for the header slots.
//!
//! A byte-at-a-time table version: a header slot is one small page, so a faster
//! variant is not worth it (WAL frames, which carry page images, use XXH3).

const POLYNOMIAL: u32 = 0xEDB8_8320;

const TABLE: [u32; 256] = build_table();

const fn build_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut byte_idx = 0;
    while byte_idx < 256 {
        let mut crc = byte_idx as u32;
        let mut bit_idx = 0;
        while bit_idx < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLYNOMIAL
            } else {
                crc >> 1
            };
            bit_idx += 1;
        }
        table[byte_idx] = crc;
        byte_idx += 1;
    }
    table
}

/// Incremental CRC-32 over several byte slices.
#[derive(Clone, Copy)]
pub struct Crc32 {
    state: u32,
}

impl Crc32 {
    pub fn new() -> Crc32 {
        Crc32 { state: 0xFFFF_FFFF }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        let mut crc = self.state;
        for &byte in bytes {
            crc = TABLE[((crc ^ byte as u32) & 0xFF) as usize] ^ (crc >> 8);
        }
        self.state = crc;
    }

    pub fn finish(self) -> u32 {
        !self.state
    }
}

/// CRC-32 of one slice.
#[cfg(test)]
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = Crc32::new();
    crc.update(bytes);
    crc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }

    #[test]
    fn incremental_matches_one_shot() {
        let mut crc = Crc32::new();
        crc.update(b"1234");
        crc.update(b"56789");
        assert_eq!(crc.finish(), crc32(b"123456789"));
    }
}
