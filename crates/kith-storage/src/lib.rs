//! KithDB's storage layer: columnar node tables in node groups, double-indexed
//! CSR rel tables with parallel property columns, the primary-key index,
//! versions with one writer and many snapshot readers (in one process or
//! several, through the shared file beside the database), commit through the
//! WAL, checkpoint, recovery, and the bulk loader.
//!
//! Built on `kith-pager` (pages, buffer manager, WAL frames); knows nothing of
//! Cypher. Entry point: [`Storage::open`], then [`Storage::snapshot`] for readers
//! and [`Storage::begin_write`] for the writer.

pub mod bitpack;
pub mod column;
pub mod loader;
pub mod node_table;
pub mod pk_delta;
pub mod pk_index;
pub mod rel_table;
mod shared;
pub mod storage;
pub mod version;
pub mod write;

pub use column::{ColumnChunk, PackedU64s, PageRun, PinnedColumn};
pub use loader::{load_nodes, load_rels, LoadChunk, LoadContext};
pub use node_table::{DeletedMask, NodeGroupData, NodeTableData, PkKey, PkLookup};
pub use rel_table::{
    CsrGroup, CsrIndex, PinnedCsrGroup, RelDirection, RelTableData, DELETED_POSITION,
};
pub use shared::ReaderMark;
pub use storage::{Storage, StorageConfig, WriteTxn};
pub use version::{TableData, Version};
