//! A committed version of the database: the catalog plus the storage metadata
//! of every table, and the page runs recent commits stopped using that some
//! reader may still read. Readers hold an `Arc<Version>` for the whole of their
//! transaction, which is what makes their snapshot consistent: committed pages
//! are never modified in place, and pages a later version stops using are only
//! reused once no reader, in any process, holds an older version (see
//! `shared.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use kith_catalog::Catalog;
use kith_common::codec::{Decoder, Encoder};
use kith_common::{Error, Result, TableId};

use crate::column::PageRun;
use crate::node_table::NodeTableData;
use crate::rel_table::RelTableData;

/// Version of the metadata encoding; bump on incompatible change.
pub const METADATA_FORMAT: u32 = 7;
/// Oldest metadata format this build still reads.
pub const METADATA_FORMAT_MIN: u32 = 1;

#[derive(Debug, Clone, PartialEq)]
pub enum TableData {
    Node(NodeTableData),
    Rel(RelTableData),
}

impl TableData {
    pub fn as_node(&self) -> Option<&NodeTableData> {
        match self {
            TableData::Node(n) => Some(n),
            TableData::Rel(_) => None,
        }
    }

    pub fn as_rel(&self) -> Option<&RelTableData> {
        match self {
            TableData::Rel(r) => Some(r),
            TableData::Node(_) => None,
        }
    }

    pub fn pages(&self, out: &mut Vec<PageRun>) {
        match self {
            TableData::Node(n) => n.pages(out),
            TableData::Rel(r) => r.pages(out),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Version {
    /// Commit sequence number (0 for an empty database).
    pub seq: u64,
    pub catalog: Arc<Catalog>,
    pub tables: BTreeMap<TableId, Arc<TableData>>,
    /// Page runs freed by recent commits, by the commit that freed them: reusable
    /// once every live reader's snapshot is at least that commit (format 7 on).
    pub freed: Vec<(u64, Vec<PageRun>)>,
    /// Set on the versions handed to readers: holds this process's reader slot at
    /// the version's sequence number while the version is alive.
    pub reader: Option<Arc<crate::shared::ReaderMark>>,
}

impl Version {
    pub fn table(&self, id: TableId) -> Result<&Arc<TableData>> {
        self.tables
            .get(&id)
            .ok_or_else(|| Error::internal(format!("no storage for table {}", id.0)))
    }

    /// Live rows of a node table or rels of a rel table (0 for an unknown
    /// table): the planner's cardinality estimate.
    pub fn cardinality(&self, id: TableId) -> u64 {
        self.table(id).ok().map_or(0, |d| match d.as_ref() {
            TableData::Node(n) => n.num_live_rows(),
            TableData::Rel(r) => r.num_rels,
        })
    }

    pub fn node_table(&self, id: TableId) -> Result<&NodeTableData> {
        self.table(id)?
            .as_node()
            .ok_or_else(|| Error::internal(format!("table {} is not a node table", id.0)))
    }

    pub fn rel_table(&self, id: TableId) -> Result<&RelTableData> {
        self.table(id)?
            .as_rel()
            .ok_or_else(|| Error::internal(format!("table {} is not a rel table", id.0)))
    }

    /// Every page this version references (not counting [`Version::freed`]).
    pub fn pages(&self) -> Vec<PageRun> {
        let mut out = Vec::new();
        for t in self.tables.values() {
            t.pages(&mut out);
        }
        out
    }

    /// The same version without a reader mark (for building the next one).
    pub fn unmarked(&self) -> Version {
        Version {
            reader: None,
            ..self.clone()
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::new();
        e.u32(METADATA_FORMAT);
        e.u64(self.seq);
        e.bytes(&self.catalog.encode());
        e.u64(self.tables.len() as u64);
        for (id, data) in &self.tables {
            e.u32(id.0);
            match data.as_ref() {
                TableData::Node(n) => {
                    e.u8(0);
                    n.encode(&mut e);
                }
                TableData::Rel(r) => {
                    e.u8(1);
                    r.encode(&mut e);
                }
            }
        }
        e.u64(self.freed.len() as u64);
        for (seq, runs) in &self.freed {
            e.u64(*seq);
            e.u64(runs.len() as u64);
            for run in runs {
                e.u32(run.first);
                e.u32(run.count);
            }
        }
        e.finish()
    }

    pub fn decode(buf: &[u8]) -> Result<Version> {
        let mut d = Decoder::new(buf);
        let format = d.u32()?;
        if !(METADATA_FORMAT_MIN..=METADATA_FORMAT).contains(&format) {
            return Err(Error::corruption(format!(
                "unsupported metadata format {format} (this build reads {METADATA_FORMAT})"
            )));
        }
        let seq = d.u64()?;
        let catalog = Catalog::decode(d.bytes()?)?;
        let n = d.count(5)?;
        let mut tables = BTreeMap::new();
        for _ in 0..n {
            let id = TableId(d.u32()?);
            let data = match d.u8()? {
                0 => TableData::Node(NodeTableData::decode(&mut d, format)?),
                1 => TableData::Rel(RelTableData::decode(&mut d, format)?),
                k => return Err(Error::corruption(format!("unknown table data kind {k}"))),
            };
            tables.insert(id, Arc::new(data));
        }
        let mut freed = Vec::new();
        if format >= 7 {
            for _ in 0..d.count(16)? {
                let seq = d.u64()?;
                let n = d.count(8)?;
                let mut runs = Vec::with_capacity(n);
                for _ in 0..n {
                    runs.push(PageRun {
                        first: d.u32()?,
                        count: d.u32()?,
                    });
                }
                freed.push((seq, runs));
            }
        }
        if !d.is_done() {
            return Err(Error::corruption("trailing bytes after metadata"));
        }
        for t in catalog.tables() {
            if !tables.contains_key(&t.id) {
                return Err(Error::corruption(format!(
                    "table '{}' has no storage metadata",
                    t.name
                )));
            }
        }
        Ok(Version {
            seq,
            catalog: Arc::new(catalog),
            tables,
            freed,
            reader: None,
        })
    }
}
