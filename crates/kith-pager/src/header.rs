//! The double-buffered database header in pages 0 and 1.
//!
//! ```text
//!  slot page (PAGE_SIZE bytes, little endian)
//!  0        8        12       16                24       28       32
//!  +--------+--------+--------+-----------------+--------+--------+----------------+
//!  | magic  | format | len    | generation      | crc32  | 0      | payload[len]   | zero
//!  +--------+--------+--------+-----------------+--------+--------+----------------+
//!  crc32 covers bytes 0..24 and the payload.
//! ```
//!
//! Each new header goes to the slot that holds the *older* generation and is fsynced
//! before anything relies on it; a torn write damages only that slot, so the other one
//! (the previous header) stays readable. On read the valid slot with the highest
//! generation wins.

use kith_common::constants::PAGE_SIZE;
use kith_common::{Error, Result};

use crate::crc32::Crc32;

pub const MAGIC: [u8; 8] = *b"KITHDB\0\0";
pub const FORMAT_VERSION: u32 = 1;
pub const SLOT_PREFIX_BYTES: usize = 32;
pub const PAYLOAD_BYTES_MAX: usize = PAGE_SIZE - SLOT_PREFIX_BYTES;
/// Pages 0 and 1 hold the two header slots; data pages start after them.
pub const HEADER_PAGES: u32 = 2;

const _: () = assert!(SLOT_PREFIX_BYTES >= 8 + 4 + 4 + 8 + 4);
const _: () = assert!(PAYLOAD_BYTES_MAX > 0);

/// What one header slot holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Slot {
    /// All zero: never written.
    Empty,
    /// Complete and checksum-valid.
    Valid { generation: u64, payload: Vec<u8> },
    /// KithDB magic, but torn or damaged.
    Damaged,
    /// Not a KithDB header at all.
    Foreign,
    /// A KithDB header of a format this build cannot read.
    Unsupported { format: u32 },
}

pub fn encode_slot(generation: u64, payload: &[u8]) -> Result<Vec<u8>> {
    if payload.len() > PAYLOAD_BYTES_MAX {
        return Err(Error::internal(format!(
            "database header payload of {} bytes exceeds the maximum of {PAYLOAD_BYTES_MAX}",
            payload.len()
        )));
    }
    let mut page = vec![0u8; PAGE_SIZE];
    page[0..8].copy_from_slice(&MAGIC);
    page[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    page[12..16].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    page[16..24].copy_from_slice(&generation.to_le_bytes());
    page[SLOT_PREFIX_BYTES..SLOT_PREFIX_BYTES + payload.len()].copy_from_slice(payload);
    let mut crc = Crc32::new();
    crc.update(&page[0..24]);
    crc.update(payload);
    page[24..28].copy_from_slice(&crc.finish().to_le_bytes());
    // Pair assertion: what we are about to write must decode back to itself.
    debug_assert_eq!(
        decode_slot(&page),
        Slot::Valid {
            generation,
            payload: payload.to_vec()
        }
    );
    Ok(page)
}

/// Classifies one slot; `bytes` may be shorter than a page (a short file).
pub fn decode_slot(bytes: &[u8]) -> Slot {
    if bytes.iter().all(|&b| b == 0) {
        return Slot::Empty;
    }
    if bytes.len() < SLOT_PREFIX_BYTES || bytes[0..8] != MAGIC {
        return if bytes.len() >= 8 && bytes[0..8] == MAGIC {
            Slot::Damaged
        } else {
            Slot::Foreign
        };
    }
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let format = word(8);
    let len_bytes = word(12) as usize;
    let generation = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
    let stored_crc = word(24);
    if len_bytes > PAYLOAD_BYTES_MAX || SLOT_PREFIX_BYTES + len_bytes > bytes.len() {
        return Slot::Damaged;
    }
    let payload = &bytes[SLOT_PREFIX_BYTES..SLOT_PREFIX_BYTES + len_bytes];
    let mut crc = Crc32::new();
    crc.update(&bytes[0..24]);
    crc.update(payload);
    if crc.finish() != stored_crc {
        return Slot::Damaged;
    }
    if format != FORMAT_VERSION {
        return Slot::Unsupported { format };
    }
    Slot::Valid {
        generation,
        payload: payload.to_vec(),
    }
}

/// The newest valid header of the two slots: `Ok(None)` for a fresh file, an error for a
/// file that is not (or no longer) a readable KithDB database.
pub fn pick_latest(slots: [Slot; 2], file_name: &str) -> Result<Option<(u64, Vec<u8>)>> {
    let mut best: Option<(u64, Vec<u8>)> = None;
    for slot in &slots {
        if let Slot::Valid {
            generation,
            payload,
        } = slot
        {
            if best.as_ref().is_none_or(|(g, _)| generation > g) {
                best = Some((*generation, payload.clone()));
            }
        }
    }
    if best.is_some() {
        return Ok(best);
    }
    if let Some(Slot::Unsupported { format }) =
        slots.iter().find(|s| matches!(s, Slot::Unsupported { .. }))
    {
        return Err(Error::corruption(format!(
            "database file '{file_name}' has format version {format}, this build reads version {FORMAT_VERSION}"
        )));
    }
    match slots {
        [Slot::Empty, Slot::Empty] => Ok(None),
        [Slot::Damaged, _] | [_, Slot::Damaged] => Err(Error::corruption(format!(
            "database file '{file_name}' is damaged: both header slots are invalid"
        ))),
        _ => Err(Error::corruption(format!(
            "file '{file_name}' is not a KithDB database file"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let page = encode_slot(7, b"hello").unwrap();
        assert_eq!(
            decode_slot(&page),
            Slot::Valid {
                generation: 7,
                payload: b"hello".to_vec()
            }
        );
    }

    #[test]
    fn classification() {
        assert_eq!(decode_slot(&[0u8; PAGE_SIZE]), Slot::Empty);
        assert_eq!(decode_slot(b"PK\x03\x04 a zip file"), Slot::Foreign);
        let mut page = encode_slot(1, b"abc").unwrap();
        page[SLOT_PREFIX_BYTES] ^= 1;
        assert_eq!(decode_slot(&page), Slot::Damaged);
        assert_eq!(
            decode_slot(&encode_slot(1, b"abc").unwrap()[..20]),
            Slot::Damaged
        );
    }

    #[test]
    fn newest_valid_wins() {
        let a = decode_slot(&encode_slot(3, b"old").unwrap());
        let b = decode_slot(&encode_slot(4, b"new").unwrap());
        assert_eq!(pick_latest([a.clone(), b], "f").unwrap().unwrap().1, b"new");
        assert_eq!(
            pick_latest([a, Slot::Damaged], "f").unwrap().unwrap().1,
            b"old"
        );
        assert_eq!(pick_latest([Slot::Empty, Slot::Empty], "f").unwrap(), None);
        let err = pick_latest([Slot::Foreign, Slot::Empty], "f").unwrap_err();
        assert!(
            err.message.contains("not a KithDB database file"),
            "{}",
            err.message
        );
        assert!(pick_latest([Slot::Damaged, Slot::Damaged], "f").is_err());
    }

    #[test]
    fn oversized_payload_is_refused() {
        assert!(encode_slot(1, &vec![1u8; PAYLOAD_BYTES_MAX + 1]).is_err());
        assert!(encode_slot(1, &vec![1u8; PAYLOAD_BYTES_MAX]).is_ok());
    }
}
