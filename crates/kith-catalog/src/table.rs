//! Table entries: a node or rel table with its properties.

use kith_common::codec::{Decoder, Encoder};
use kith_common::{Error, LogicalType, Result, TableId};

/// Stable id of a property within its table (survives renames and drops of
/// other properties, so storage columns can key on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PropertyId(pub u32);

#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    pub id: PropertyId,
    pub name: String,
    pub ty: LogicalType,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeTableInfo {
    /// Index into the table's `properties` of the primary key.
    pub primary_key: usize,
}

/// How many rels a node may have on each side: `MANY_ONE` means each source has
/// at most one outgoing rel of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Multiplicity {
    pub src_many: bool,
    pub dst_many: bool,
}

impl Default for Multiplicity {
    fn default() -> Multiplicity {
        Multiplicity::MANY_MANY
    }
}

impl Multiplicity {
    pub const MANY_MANY: Multiplicity = Multiplicity {
        src_many: true,
        dst_many: true,
    };

    /// Parses `MANY_MANY`, `MANY_ONE`, `ONE_MANY`, `ONE_ONE`.
    pub fn parse(text: &str) -> Option<Multiplicity> {
        let (a, b) = text
            .to_ascii_uppercase()
            .split_once('_')
            .map(|(a, b)| (a.to_string(), b.to_string()))?;
        let side = |s: &str| match s {
            "MANY" => Some(true),
            "ONE" => Some(false),
            _ => None,
        };
        // `MANY_ONE`: many sources map to one destination, so each source has at
        // most one outgoing rel (the destination side is "one").
        Some(Multiplicity {
            src_many: side(&a)?,
            dst_many: side(&b)?,
        })
    }

    pub fn name(self) -> &'static str {
        match (self.src_many, self.dst_many) {
            (true, true) => "MANY_MANY",
            (true, false) => "MANY_ONE",
            (false, true) => "ONE_MANY",
            (false, false) => "ONE_ONE",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RelTableInfo {
    pub src: TableId,
    pub dst: TableId,
    pub multiplicity: Multiplicity,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TableKind {
    Node(NodeTableInfo),
    Rel(RelTableInfo),
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableEntry {
    pub id: TableId,
    pub name: String,
    pub properties: Vec<Property>,
    /// Next unused property id (ids are never reused within a table).
    pub next_property_id: u32,
    pub kind: TableKind,
    /// The label (node) or rel type Cypher sees. Equals `name` for declared
    /// tables; several implicit rel tables share the type they were created
    /// for (one per pair of endpoint tables); the table of unlabelled nodes
    /// has the empty label.
    pub label: String,
    /// Created by a schema-less write (CREATE/MERGE/SET) rather than DDL: its
    /// primary key is a hidden serial, properties are added on first write
    /// and reading a property it lacks gives NULL.
    pub implicit: bool,
    /// Labels some node of this node table carries besides (or instead of)
    /// `label`; such nodes keep their exact label list in the hidden
    /// property [`LABELS_KEY`]. Only grows (a label once added stays here).
    pub extra_labels: Vec<String>,
}

/// Prefix of property names the engine adds for itself (the serial key of an
/// implicit table); they are never shown as properties of an entity.
pub const HIDDEN_PREFIX: char = '\u{1}';

/// The hidden serial primary key of an implicit node table.
pub const SERIAL_KEY: &str = "\u{1}id";

/// The hidden property holding a node's labels when they differ from its
/// table's label (several labels, SET/REMOVE of labels): a list of strings.
pub const LABELS_KEY: &str = "\u{1}labels";

/// Whether `name` is an engine-internal property.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with(HIDDEN_PREFIX)
}

impl TableEntry {
    pub fn is_node(&self) -> bool {
        matches!(self.kind, TableKind::Node(_))
    }

    pub fn is_rel(&self) -> bool {
        matches!(self.kind, TableKind::Rel(_))
    }

    pub fn rel_info(&self) -> Option<&RelTableInfo> {
        match &self.kind {
            TableKind::Rel(info) => Some(info),
            TableKind::Node(_) => None,
        }
    }

    pub fn primary_key(&self) -> Option<&Property> {
        match &self.kind {
            TableKind::Node(info) => self.properties.get(info.primary_key),
            TableKind::Rel(_) => None,
        }
    }

    pub fn property(&self, name: &str) -> Option<&Property> {
        self.properties.iter().find(|p| p.name == name)
    }

    pub fn property_index(&self, name: &str) -> Option<usize> {
        self.properties.iter().position(|p| p.name == name)
    }

    /// Whether nodes of this table may carry label `label`.
    pub fn may_have_label(&self, label: &str) -> bool {
        self.label == label || self.extra_labels.iter().any(|l| l == label)
    }

    /// Whether some node of this table has labels other than the table's
    /// (its labels are then in the hidden property [`LABELS_KEY`]).
    pub fn has_label_column(&self) -> bool {
        self.property(LABELS_KEY).is_some()
    }

    /// Whether `name` is the serial key of an implicit table.
    pub fn is_serial_key(&self, property: &Property) -> bool {
        self.implicit && property.name == SERIAL_KEY
    }

    pub fn kind_name(&self) -> &'static str {
        if self.is_node() {
            "NODE"
        } else {
            "REL"
        }
    }

    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.u32(self.id.0);
        e.str(&self.name);
        e.u32(self.next_property_id);
        e.u64(self.properties.len() as u64);
        for p in &self.properties {
            e.u32(p.id.0);
            e.str(&p.name);
            e.ty(&p.ty);
        }
        match &self.kind {
            TableKind::Node(info) => {
                e.u8(0);
                e.u32(info.primary_key as u32);
            }
            TableKind::Rel(info) => {
                e.u8(1);
                e.u32(info.src.0);
                e.u32(info.dst.0);
                e.bool(info.multiplicity.src_many);
                e.bool(info.multiplicity.dst_many);
            }
        }
        e.str(&self.label);
        e.bool(self.implicit);
        e.u64(self.extra_labels.len() as u64);
        for l in &self.extra_labels {
            e.str(l);
        }
    }

    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<TableEntry> {
        let id = TableId(d.u32()?);
        let name = d.str()?;
        let next_property_id = d.u32()?;
        let n = d.count(13)?;
        let mut properties = Vec::with_capacity(n);
        for _ in 0..n {
            let pid = PropertyId(d.u32()?);
            let pname = d.str()?;
            properties.push(Property {
                id: pid,
                name: pname,
                ty: d.ty()?,
            });
        }
        let kind = match d.u8()? {
            0 => {
                let pk = d.u32()? as usize;
                if pk >= properties.len() {
                    return Err(Error::corruption("primary key index out of range"));
                }
                TableKind::Node(NodeTableInfo { primary_key: pk })
            }
            1 => TableKind::Rel(RelTableInfo {
                src: TableId(d.u32()?),
                dst: TableId(d.u32()?),
                multiplicity: Multiplicity {
                    src_many: d.bool()?,
                    dst_many: d.bool()?,
                },
            }),
            k => return Err(Error::corruption(format!("unknown table kind {k}"))),
        };
        let label = d.str()?;
        let implicit = d.bool()?;
        let n = d.count(8)?;
        let mut extra_labels = Vec::with_capacity(n);
        for _ in 0..n {
            extra_labels.push(d.str()?);
        }
        Ok(TableEntry {
            id,
            name,
            properties,
            next_property_id,
            kind,
            label,
            implicit,
            extra_labels,
        })
    }
}
