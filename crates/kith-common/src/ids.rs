//! Identifiers that cross layer boundaries, as newtypes.

use std::fmt;

/// A catalog table id (node and rel tables share one id space).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TableId(pub u32);

/// Bits of an [`InternalId`] given to the offset; the rest hold the table id.
pub const OFFSET_BITS: u32 = 48;
pub const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
/// The largest number of rows one table can hold.
pub const MAX_TABLE_ROWS: u64 = 1 << OFFSET_BITS;

/// The identity of a node or rel: its table and its dense offset within the table,
/// packed into one `u64` (table in the high 16 bits) so IDs hash and compare as
/// plain integers in joins and frontiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct InternalId(pub u64);

impl InternalId {
    pub fn new(table: TableId, offset: u64) -> InternalId {
        debug_assert!(offset <= OFFSET_MASK, "offset {offset} exceeds 48 bits");
        debug_assert!(table.0 < (1 << 16), "table id {} exceeds 16 bits", table.0);
        InternalId(((table.0 as u64) << OFFSET_BITS) | offset)
    }

    pub fn table(self) -> TableId {
        TableId((self.0 >> OFFSET_BITS) as u32)
    }

    pub fn offset(self) -> u64 {
        self.0 & OFFSET_MASK
    }
}

impl fmt::Display for InternalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.table().0, self.offset())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack() {
        let id = InternalId::new(TableId(7), 123_456_789);
        assert_eq!(id.table(), TableId(7));
        assert_eq!(id.offset(), 123_456_789);
        assert_eq!(id.to_string(), "7:123456789");
    }
}
