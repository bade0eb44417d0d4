//! The tables of decorrelated subqueries (`EXISTS { ... }`, `COUNT { ... }`,
//! pattern predicates and comprehensions). Each subquery of a plan runs
//! once, before the plan's first part; its rows (the ids of the outer
//! variables it uses, then its value) become a hash table that expressions
//! probe with their row's ids (`BoundExprKind::Subquery`).
//!
//! A subquery that only counts one node's rels in one table
//! (`EXISTS { MATCH (a)-[:R]->() }`, `COUNT { (a)<-[:R]-(:T) }`, a pattern
//! predicate `WHERE (a)-[:R]->()`) does not run: its table is the CSR
//! degree of every node of the key's table ([`degree_shape`]).

use hashbrown::HashMap;

use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{Chunk, Error, InternalId, Result, TableId, Value};
use kith_planner::bound::SubqueryKind;
use kith_planner::plan::{DegreeCount, ExtendDirection};
use kith_storage::{RelDirection, TableData};

use crate::operator::QueryContext;

/// One subquery's results: key ids → value.
#[derive(Debug)]
pub struct SubqueryTable {
    kind: SubqueryKind,
    num_keys: usize,
    rows: Rows,
}

#[derive(Debug)]
enum Rows {
    /// The subquery's rows by their key ids.
    Hashed(HashMap<Box<[u64]>, Value>),
    /// Per node of `table` (by offset), its number of rels: the count of a
    /// one-key subquery answered by degrees.
    Degrees { table: TableId, counts: Vec<u64> },
}

impl SubqueryTable {
    /// Builds the table from the subquery's rows (`num_keys` id columns,
    /// then the count or list for `Count` / `Collect`).
    pub fn from_rows(
        kind: SubqueryKind,
        num_keys: usize,
        chunks: &[Chunk],
    ) -> Result<SubqueryTable> {
        let mut rows = HashMap::new();
        let mut key = Vec::with_capacity(num_keys);
        for c in chunks {
            for r in 0..c.num_rows {
                key.clear();
                for col in &c.columns[..num_keys] {
                    match col.get_value(r) {
                        Value::InternalId(id) => key.push(id.0),
                        other => {
                            return Err(Error::internal(format!(
                                "subquery key is not an id: {other:?}"
                            )))
                        }
                    }
                }
                let value = match kind {
                    // The row's match count (no keys: one row, maybe 0).
                    SubqueryKind::Exists => {
                        let count = c.columns.get(num_keys).map(|col| col.get_value(r));
                        if count.and_then(|v| v.as_i64()) == Some(0) {
                            continue;
                        }
                        Value::Bool(true)
                    }
                    SubqueryKind::Count | SubqueryKind::Collect => c
                        .columns
                        .get(num_keys)
                        .map(|col| col.get_value(r))
                        .ok_or_else(|| Error::internal("subquery row without its value"))?,
                };
                rows.insert(key.clone().into_boxed_slice(), value);
            }
        }
        Ok(SubqueryTable {
            kind,
            num_keys,
            rows: Rows::Hashed(rows),
        })
    }

    /// The table of a subquery answered by degrees: the degree of every
    /// node of the key's table in the rel table's CSR in that direction,
    /// as of the query's snapshot.
    pub fn from_degrees(
        kind: SubqueryKind,
        degree: &DegreeCount,
        ctx: &QueryContext,
    ) -> Result<SubqueryTable> {
        let DegreeCount {
            node_table,
            rel_table,
            direction,
        } = *degree;
        let TableData::Rel(rd) = ctx.version.table(rel_table)?.as_ref() else {
            return Err(Error::internal("expected rel table storage"));
        };
        let TableData::Node(nd) = ctx.version.table(node_table)?.as_ref() else {
            return Err(Error::internal("expected node table storage"));
        };
        let dir = match direction {
            ExtendDirection::Fwd => RelDirection::Fwd,
            ExtendDirection::Bwd => RelDirection::Bwd,
        };
        let mut counts = vec![0u64; nd.num_rows as usize];
        for (gi, g) in rd.csr(dir).groups.iter().enumerate() {
            let pinned = g.pin(&ctx.pager, &[])?;
            let base = gi as u64 * NODE_GROUP_SIZE;
            for local in 0..pinned.node_span() {
                let d = pinned.degree(local);
                if d > 0 {
                    let slot = counts
                        .get_mut((base + local) as usize)
                        .ok_or_else(|| Error::internal("rels of a node beyond its table"))?;
                    *slot = d;
                }
            }
            ctx.cancel.check()?;
        }
        Ok(SubqueryTable {
            kind,
            num_keys: 1,
            rows: Rows::Degrees {
                table: node_table,
                counts,
            },
        })
    }

    /// The value for the ids in `keys` (node or rel ids); NULL when one of
    /// them is NULL (an unmatched OPTIONAL MATCH variable).
    pub fn lookup(&self, keys: &[Value], scratch: &mut Vec<u64>) -> Result<Value> {
        if keys.len() != self.num_keys {
            return Err(Error::internal(
                "subquery probed with the wrong number of keys",
            ));
        }
        scratch.clear();
        for k in keys {
            match k {
                Value::InternalId(id) => scratch.push(id.0),
                Value::Null => return Ok(Value::Null),
                other => {
                    return Err(Error::internal(format!(
                        "subquery probed with a non-id key: {other:?}"
                    )))
                }
            }
        }
        let found = match &self.rows {
            Rows::Hashed(rows) => rows.get(scratch.as_slice()).cloned(),
            Rows::Degrees { table, counts } => {
                let id = InternalId(scratch[0]);
                let count = match id.table() == *table {
                    true => counts.get(id.offset() as usize).copied().unwrap_or(0),
                    false => 0,
                };
                match self.kind {
                    _ if count == 0 => None,
                    SubqueryKind::Exists => Some(Value::Bool(true)),
                    _ => Some(Value::Int64(count as i64)),
                }
            }
        };
        Ok(match found {
            Some(v) => v,
            None => match self.kind {
                SubqueryKind::Exists => Value::Bool(false),
                SubqueryKind::Count => Value::Int64(0),
                SubqueryKind::Collect => Value::List(Vec::new()),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_common::{InternalId, LogicalType, TableId};

    fn id(t: u32, o: u64) -> Value {
        Value::InternalId(InternalId::new(TableId(t), o))
    }

    fn chunk(rows: &[(Value, Value)]) -> Chunk {
        let mut c = Chunk::new(&[LogicalType::InternalId, LogicalType::Int64], 0);
        for (k, v) in rows {
            c.columns[0].push_value(k);
            c.columns[1].push_value(v);
            c.num_rows += 1;
        }
        c
    }

    /// An EXISTS table holds the keys counting a match: a subquery without
    /// keys has one row, whose count 0 means no match.
    #[test]
    fn exists_keeps_rows_with_a_match() {
        let mut s = Vec::new();
        let count = |n: i64| {
            let mut c = Chunk::new(&[LogicalType::Int64], 0);
            c.columns[0].push_value(&Value::Int64(n));
            c.num_rows = 1;
            c
        };
        for (n, want) in [(0, false), (3, true)] {
            let t = SubqueryTable::from_rows(SubqueryKind::Exists, 0, &[count(n)]).unwrap();
            assert_eq!(t.lookup(&[], &mut s).unwrap(), Value::Bool(want));
        }
    }

    #[test]
    fn lookups_hit_miss_and_null() {
        let rows = chunk(&[(id(1, 5), Value::Int64(3)), (id(2, 5), Value::Int64(7))]);
        let mut s = Vec::new();
        let count = SubqueryTable::from_rows(SubqueryKind::Count, 1, &[rows]).unwrap();
        assert_eq!(count.lookup(&[id(1, 5)], &mut s).unwrap(), Value::Int64(3));
        assert_eq!(count.lookup(&[id(2, 5)], &mut s).unwrap(), Value::Int64(7));
        // Same offset, other table: a different entity.
        assert_eq!(count.lookup(&[id(3, 5)], &mut s).unwrap(), Value::Int64(0));
        assert_eq!(count.lookup(&[Value::Null], &mut s).unwrap(), Value::Null);
        let exists = SubqueryTable::from_rows(
            SubqueryKind::Exists,
            1,
            &[chunk(&[(id(1, 1), Value::Int64(1))])],
        )
        .unwrap();
        assert_eq!(
            exists.lookup(&[id(1, 1)], &mut s).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            exists.lookup(&[id(1, 2)], &mut s).unwrap(),
            Value::Bool(false)
        );
        assert!(exists.lookup(&[], &mut s).is_err());
    }
}
