//! Storage-level writes (insert/update/delete of nodes and rels) against a
//! reference model, including commit, rollback, reopen and WAL replay.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kith_catalog::{Multiplicity, PropertyId};
use kith_common::constants::NODE_GROUP_SIZE;
use kith_common::{LogicalType, TableId, Value, ValueVector};
use kith_storage::write::read_node_value;
use kith_storage::{
    NodeTableData, RelDirection, RelTableData, Storage, StorageConfig, TableData, Version,
};
use proptest::prelude::*;

type Row = (i64, Option<String>, Option<i64>);
/// (src, dst, w, s) by rel id.
type Rels = BTreeMap<u64, (u64, u64, Option<i64>, Option<String>)>;

#[derive(Clone, Debug, Default, PartialEq)]
struct Model {
    /// By offset; None = deleted.
    rows: Vec<Option<Row>>,
    rels: [Rels; 2],
    next_id: [u64; 2],
    /// Offsets of deleted rows a checkpoint freed: inserts take them first,
    /// lowest first.
    free: std::collections::BTreeSet<u64>,
}

impl Model {
    fn live(&self, o: u64) -> bool {
        self.rows.get(o as usize).is_some_and(|r| r.is_some())
    }

    /// A checkpoint frees every deleted row.
    fn checkpointed(&mut self) {
        self.free = (0..self.rows.len() as u64)
            .filter(|&o| !self.live(o))
            .collect();
    }

    fn has_rels(&self, o: u64) -> bool {
        self.rels
            .iter()
            .any(|m| m.values().any(|(s, d, _, _)| *s == o || *d == o))
    }
}

struct Ids {
    p: TableId,
    rel: [TableId; 2],
}

fn ids(v: &Version) -> Ids {
    let t = |n: &str| v.catalog.table_by_name(n).unwrap().id;
    Ids {
        p: t("P"),
        rel: [t("K"), t("B")],
    }
}

fn setup(storage: &Storage) {
    let mut txn = storage.begin_write().unwrap();
    let p = txn
        .catalog
        .create_node_table(
            "P",
            vec![
                ("id".into(), LogicalType::Int64),
                ("name".into(), LogicalType::String),
                ("age".into(), LogicalType::Int64),
            ],
            "id",
        )
        .unwrap();
    let entry = txn.catalog.table(p).unwrap().clone();
    txn.tables.insert(
        p,
        Arc::new(TableData::Node(NodeTableData::empty(
            entry.properties.iter().map(|p| p.id).collect(),
            0,
        ))),
    );
    for (name, cols, mult) in [
        (
            "K",
            vec![
                ("w".to_string(), LogicalType::Int64),
                ("s".to_string(), LogicalType::String),
            ],
            Multiplicity::MANY_MANY,
        ),
        ("B", vec![], Multiplicity::parse("MANY_ONE").unwrap()),
    ] {
        let id = txn
            .catalog
            .create_rel_table(name, "P", "P", cols, mult)
            .unwrap();
        let entry = txn.catalog.table(id).unwrap().clone();
        txn.tables.insert(
            id,
            Arc::new(TableData::Rel(RelTableData::empty(
                entry.properties.iter().map(|p| p.id).collect(),
            ))),
        );
    }
    txn.commit().unwrap();
}

fn open(path: &Path) -> Arc<Storage> {
    Storage::open(Some(path), StorageConfig::default()).unwrap()
}

/// A new database with the test schema: its directory (removed when
/// dropped), file path, storage and table ids.
fn fresh() -> (tempfile::TempDir, std::path::PathBuf, Arc<Storage>, Ids) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.kith");
    let storage = open(&path);
    setup(&storage);
    let ids = ids(&storage.snapshot().unwrap());
    (dir, path, storage, ids)
}

/// Every rel of `data` in direction `dir` as (src, dst, id, props).
fn edges(
    storage: &Storage,
    data: &RelTableData,
    dir: RelDirection,
) -> Vec<(u64, u64, u64, Vec<Value>)> {
    let pager = storage.pager();
    let ncols = data.column_ids.len();
    let types = [LogicalType::Int64, LogicalType::String];
    let all: Vec<usize> = (0..ncols).collect();
    let mut out = Vec::new();
    for (g, group) in data.csr(dir).groups.iter().enumerate() {
        let pinned = group.pin(pager, &all).unwrap();
        let n = group.num_rels as usize;
        let props: Vec<ValueVector> = (0..ncols)
            .map(|c| {
                let mut v = ValueVector::new(types[c].clone(), n);
                pinned.properties[c].read(0, n, &mut v, 0).unwrap();
                v
            })
            .collect();
        let mut offsets = vec![0u64; group.num_nodes as usize + 1];
        pinned.offsets.read_u64s(0, offsets.len(), &mut offsets);
        assert_eq!(offsets[0], 0);
        assert!(offsets.is_sorted(), "CSR offsets not ascending");
        assert_eq!(offsets[group.num_nodes as usize], group.main_rels());
        let mut degrees = Vec::new();
        pinned.degrees(&mut degrees);
        assert_eq!(degrees.len() as u64, pinned.node_span());
        // Offsets, degrees and ranges are read without the neighbours and
        // rel ids, which are pinned on their first read.
        assert_eq!(pinned.pinned_parts(), (false, false));
        let (neighbors, rel_ids) = (pinned.neighbors().unwrap(), pinned.rel_ids().unwrap());
        assert_eq!(pinned.pinned_parts(), (true, true));
        let mut seen = 0;
        // The direct view of the neighbour column, where it has one.
        let packed = neighbors.packed_u64s();
        let mut block = [(0u64, 0u64); 64];
        for local in 0..pinned.node_span() {
            assert_eq!(
                degrees[local as usize],
                pinned.degree(local),
                "degree of {local}"
            );
            if local % 64 == 0 {
                pinned.main_ranges(local, &mut block);
            }
            assert_eq!(
                block[(local % 64) as usize],
                pinned.range(local),
                "main range of {local}"
            );
            for pos in pinned.ranges(local).flat_map(|(s, e)| s..e) {
                seen += 1;
                let bound = g as u64 * NODE_GROUP_SIZE + local;
                let nbr = neighbors.get_u64(pos);
                if let Some(p) = packed {
                    assert_eq!(p.get(pos), nbr, "packed neighbour at {pos}");
                }
                let id = rel_ids.get_u64(pos);
                let (src, dst) = match dir {
                    RelDirection::Fwd => (bound, nbr),
                    RelDirection::Bwd => (nbr, bound),
                };
                let p = props.iter().map(|v| v.get_value(pos as usize)).collect();
                out.push((src, dst, id, p));
            }
        }
        assert_eq!(seen, group.live_rels(), "rels of no node");
        let live = pinned.bound_nodes();
        let live = live
            .iter()
            .filter(|&&b| b != kith_storage::DELETED_POSITION);
        assert_eq!(live.count() as u64, seen, "bound_nodes and ranges differ");
    }
    out.sort_by_key(|e| e.2);
    out
}

fn check(storage: &Storage, model: &Model) {
    let v = storage.snapshot().unwrap();
    let ids = ids(&v);
    let pager = storage.pager();
    let nd = v.node_table(ids.p).unwrap();
    assert_eq!(nd.num_rows, model.rows.len() as u64);
    assert_eq!(
        nd.num_live_rows(),
        model.rows.iter().filter(|r| r.is_some()).count() as u64
    );
    let mut lookup = nd.pk_lookup(pager).unwrap();
    let mut live_keys = std::collections::HashSet::new();
    for (o, row) in model.rows.iter().enumerate() {
        let o = o as u64;
        assert_eq!(nd.is_deleted(o), row.is_none(), "deletion of node {o}");
        if let Some((id, name, age)) = row {
            let get = |c: usize, ty: LogicalType| read_node_value(pager, nd, c, &ty, o).unwrap();
            assert_eq!(get(0, LogicalType::Int64), Value::Int64(*id));
            assert_eq!(
                get(1, LogicalType::String),
                name.clone().map_or(Value::Null, Value::String)
            );
            assert_eq!(
                get(2, LogicalType::Int64),
                age.map_or(Value::Null, Value::Int64)
            );
            assert_eq!(
                lookup.lookup(&Value::Int64(*id)).unwrap(),
                Some(o),
                "pk {id}"
            );
            live_keys.insert(*id);
        }
    }
    for k in -5..80 {
        if !live_keys.contains(&k) {
            assert_eq!(
                lookup.lookup(&Value::Int64(k)).unwrap(),
                None,
                "pk {k} should be absent"
            );
        }
    }
    for t in 0..2 {
        let rd = v.rel_table(ids.rel[t]).unwrap();
        let fwd = edges(storage, rd, RelDirection::Fwd);
        let bwd = edges(storage, rd, RelDirection::Bwd);
        assert_eq!(fwd, bwd, "fwd and bwd CSR of table {t} differ");
        let want: Vec<(u64, u64, u64, Vec<Value>)> = model.rels[t]
            .iter()
            .map(|(id, (s, d, w, st))| {
                let p = if t == 0 {
                    vec![
                        w.map_or(Value::Null, Value::Int64),
                        st.clone().map_or(Value::Null, Value::String),
                    ]
                } else {
                    vec![]
                };
                (*s, *d, *id, p)
            })
            .collect();
        assert_eq!(fwd, want, "rels of table {t}");
        assert_eq!(rd.num_rels, model.rels[t].len() as u64);
        assert_eq!(rd.next_rel_id, model.next_id[t]);
        // Both tables join P to P: every write keeps the self loops counted.
        let loops = model.rels[t].values().filter(|r| r.0 == r.1).count() as u64;
        assert_eq!(rd.self_loops, Some(loops), "self loops of table {t}");
    }
}

#[derive(Clone, Debug)]
enum Op {
    InsertNodes(Vec<Row>),
    InsertRels(usize, Vec<(usize, usize, Option<i64>)>),
    UpdateAge(usize, Option<i64>),
    UpdateRel(usize, Option<i64>),
    DeleteNodes(Vec<usize>, bool),
    DeleteRels(usize, Vec<usize>),
    WrongType,
}

#[derive(Clone, Debug)]
struct Txn {
    ops: Vec<Op>,
    commit: bool,
    merge_pk: bool,
    /// 0: keep open, 1: reopen (WAL replay), 2: checkpoint then reopen.
    reopen: u8,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let row = (
        0i64..70,
        prop::option::of("[a-c]{0,3}"),
        prop::option::of(-3i64..3),
    );
    prop_oneof![
        4 => prop::collection::vec(row, 1..12).prop_map(Op::InsertNodes),
        4 => (0usize..2, prop::collection::vec((any::<usize>(), any::<usize>(), prop::option::of(-9i64..9)), 1..10))
            .prop_map(|(t, v)| Op::InsertRels(t, v)),
        2 => (any::<usize>(), prop::option::of(-9i64..9)).prop_map(|(p, a)| Op::UpdateAge(p, a)),
        2 => (any::<usize>(), prop::option::of(-9i64..9)).prop_map(|(p, a)| Op::UpdateRel(p, a)),
        2 => (prop::collection::vec(any::<usize>(), 1..4), any::<bool>()).prop_map(|(v, d)| Op::DeleteNodes(v, d)),
        2 => (0usize..2, prop::collection::vec(any::<usize>(), 1..4)).prop_map(|(t, v)| Op::DeleteRels(t, v)),
        1 => Just(Op::WrongType),
    ]
}

fn txn_strategy() -> impl Strategy<Value = Txn> {
    (
        prop::collection::vec(op_strategy(), 1..6),
        prop::bool::weighted(0.75),
        prop::bool::weighted(0.2),
        prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
    )
        .prop_map(|(ops, commit, merge_pk, reopen)| Txn {
            ops,
            commit,
            merge_pk,
            reopen,
        })
}

/// Picks an offset: usually an existing one, sometimes one past the end.
fn pick_node(m: &Model, p: usize) -> u64 {
    let n = m.rows.len();
    let o = p % (n + 1);
    if o == n {
        (n + 3) as u64
    } else {
        o as u64
    }
}

fn apply(txn: &mut kith_storage::WriteTxn<'_>, ids: &Ids, m: &mut Model, op: &Op) {
    match op {
        Op::InsertNodes(rows) => {
            let mut keys = std::collections::HashSet::new();
            let ok = rows
                .iter()
                .all(|r| keys.insert(r.0) && !m.rows.iter().flatten().any(|x| x.0 == r.0));
            let vals: Vec<Vec<Value>> = rows
                .iter()
                .map(|(id, name, age)| {
                    vec![
                        Value::Int64(*id),
                        name.clone().map_or(Value::Null, Value::String),
                        age.map_or(Value::Null, Value::Int64),
                    ]
                })
                .collect();
            let res = txn.insert_nodes(ids.p, &vals);
            assert_eq!(res.is_ok(), ok, "{op:?}: {res:?}");
            if let Ok(offs) = res {
                let reused: Vec<u64> = m.free.iter().copied().take(rows.len()).collect();
                let first = m.rows.len() as u64;
                let expected: Vec<u64> = reused
                    .iter()
                    .copied()
                    .chain(first..first + (rows.len() - reused.len()) as u64)
                    .collect();
                assert_eq!(offs, expected);
                for (&o, row) in offs.iter().zip(rows) {
                    m.free.remove(&o);
                    if o < first {
                        m.rows[o as usize] = Some(row.clone());
                    } else {
                        m.rows.push(Some(row.clone()));
                    }
                }
            }
        }
        Op::InsertRels(t, picks) => {
            let t = *t;
            let ends: Vec<(u64, u64)> = picks
                .iter()
                .map(|(a, b, _)| (pick_node(m, *a), pick_node(m, *b)))
                .collect();
            let mut ok = ends.iter().all(|(s, d)| m.live(*s) && m.live(*d));
            if t == 1 {
                // MANY_ONE: one outgoing rel per source.
                let mut seen = std::collections::HashSet::new();
                ok &= ends
                    .iter()
                    .all(|(s, _)| seen.insert(*s) && !m.rels[1].values().any(|r| r.0 == *s));
            }
            let src: Vec<u64> = ends.iter().map(|e| e.0).collect();
            let dst: Vec<u64> = ends.iter().map(|e| e.1).collect();
            let props: Vec<Vec<Value>> = if t == 0 {
                picks
                    .iter()
                    .map(|(_, _, w)| {
                        vec![
                            w.map_or(Value::Null, Value::Int64),
                            w.map_or(Value::Null, |w| Value::String(format!("s{w}"))),
                        ]
                    })
                    .collect()
            } else {
                vec![]
            };
            let res = txn.insert_rels(ids.rel[t], &src, &dst, &props);
            assert_eq!(res.is_ok(), ok, "{op:?} {ends:?}: {res:?}");
            if let Ok(new_ids) = res {
                for (i, id) in new_ids.into_iter().enumerate() {
                    assert_eq!(id, m.next_id[t] + i as u64);
                    let w = if t == 0 { picks[i].2 } else { None };
                    m.rels[t].insert(id, (src[i], dst[i], w, w.map(|w| format!("s{w}"))));
                }
                m.next_id[t] += picks.len() as u64;
            }
        }
        Op::UpdateAge(p, age) => {
            let o = pick_node(m, *p);
            let ok = m.live(o);
            let res = txn.update_node_property(
                ids.p,
                o,
                PropertyId(2),
                &age.map_or(Value::Null, Value::Int64),
            );
            assert_eq!(res.is_ok(), ok, "{op:?}: {res:?}");
            if ok {
                m.rows[o as usize].as_mut().unwrap().2 = *age;
            }
        }
        Op::UpdateRel(p, w) => {
            if m.rels[0].is_empty() {
                return;
            }
            let (&id, &(s, d, _, _)) = m.rels[0].iter().nth(p % m.rels[0].len()).unwrap();
            txn.update_rel_property(
                ids.rel[0],
                s,
                d,
                id,
                PropertyId(0),
                &w.map_or(Value::Null, Value::Int64),
            )
            .unwrap();
            m.rels[0].get_mut(&id).unwrap().2 = *w;
        }
        Op::DeleteNodes(picks, detach) => {
            if m.rows.is_empty() {
                return;
            }
            let offs: Vec<u64> = picks.iter().map(|p| (p % m.rows.len()) as u64).collect();
            let ok = *detach || offs.iter().all(|&o| !m.live(o) || !m.has_rels(o));
            let res = txn.delete_nodes(ids.p, &offs, *detach);
            assert_eq!(res.is_ok(), ok, "{op:?}: {res:?}");
            if ok {
                for &o in &offs {
                    m.rows[o as usize] = None;
                    for rels in &mut m.rels {
                        rels.retain(|_, r| r.0 != o && r.1 != o);
                    }
                }
            }
        }
        Op::DeleteRels(t, picks) => {
            let t = *t;
            if m.rels[t].is_empty() {
                return;
            }
            let list: Vec<(u64, u64, u64)> = picks
                .iter()
                .map(|p| {
                    let (&id, r) = m.rels[t].iter().nth(p % m.rels[t].len()).unwrap();
                    (r.0, r.1, id)
                })
                .collect();
            let mut uniq: Vec<u64> = list.iter().map(|l| l.2).collect();
            uniq.sort();
            uniq.dedup();
            assert_eq!(
                txn.delete_rels(ids.rel[t], &list).unwrap(),
                uniq.len() as u64
            );
            for (_, _, id) in list {
                m.rels[t].remove(&id);
            }
        }
        Op::WrongType => {
            let res = txn.insert_nodes(
                ids.p,
                &[vec![Value::Int64(1000), Value::Int64(5), Value::Null]],
            );
            let err = res.unwrap_err().to_string();
            assert!(err.contains("'name'") && err.contains("'P'"), "{err}");
        }
    }
}

fn run_sequence(txns: &[Txn]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.kith");
    let mut storage = open(&path);
    setup(&storage);
    let mut model = Model::default();
    check(&storage, &model);
    for t in txns {
        let before = storage.snapshot().unwrap();
        let ids = ids(&before);
        let mut working = model.clone();
        {
            let mut txn = storage.begin_write().unwrap();
            for op in &t.ops {
                apply(&mut txn, &ids, &mut working, op);
            }
            if t.merge_pk {
                txn.merge_pk_deltas(true).unwrap();
            }
            // Nothing is visible before commit.
            assert_eq!(storage.snapshot().unwrap().seq, before.seq);
            if t.commit {
                txn.commit().unwrap();
                model = working;
            }
        }
        check(&storage, &model);
        if t.reopen > 0 {
            if t.reopen == 2 {
                storage.checkpoint().unwrap();
            }
            // Opening replays the WAL and checkpoints when it holds a
            // commit; without one, every deleted row was freed by the last
            // checkpoint already. Either way all deleted rows are free.
            model.checkpointed();
            drop(storage);
            storage = open(&path);
            check(&storage, &model);
        }
    }
    drop(storage);
    let storage = open(&path);
    check(&storage, &model);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn random_write_sequences(txns in prop::collection::vec(txn_strategy(), 1..14)) {
        run_sequence(&txns);
    }
}

#[test]
fn errors_are_clear_and_leave_nothing_behind() {
    let (_dir, _, storage, ids) = fresh();
    let mut txn = storage.begin_write().unwrap();
    let row = |k: i64| vec![Value::Int64(k), Value::String(format!("n{k}")), Value::Null];
    assert_eq!(
        txn.insert_nodes(ids.p, &[row(1), row(2)]).unwrap(),
        vec![0, 1]
    );
    let e = txn
        .insert_nodes(ids.p, &[row(3), row(1)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("duplicate primary key 1"), "{e}");
    let e = txn
        .insert_nodes(ids.p, &[row(4), row(4)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("duplicate primary key 4"), "{e}");
    let e = txn
        .insert_nodes(ids.p, &[vec![Value::Null, Value::Null, Value::Null]])
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be NULL"), "{e}");
    let e = txn
        .insert_nodes(
            ids.p,
            &[vec![
                Value::Int64(9),
                Value::Null,
                Value::String("x".into()),
            ]],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("'age'") && e.contains("INT64"), "{e}");
    // Narrower integers are accepted.
    txn.insert_nodes(ids.p, &[vec![Value::Int32(3), Value::Null, Value::Int8(4)]])
        .unwrap();
    let e = txn
        .insert_rels(ids.rel[0], &[0], &[7], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("destination node 7 does not exist"), "{e}");
    txn.insert_rels(ids.rel[1], &[0], &[1], &[]).unwrap();
    let e = txn
        .insert_rels(ids.rel[1], &[0], &[2], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("MANY_ONE"), "{e}");
    let e = txn
        .delete_nodes(ids.p, &[1], false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("DETACH"), "{e}");
    let e = txn
        .update_node_property(ids.p, 0, PropertyId(0), &Value::Int64(5))
        .unwrap_err()
        .to_string();
    assert!(e.contains("primary key"), "{e}");
    assert_eq!(txn.delete_nodes(ids.p, &[1], true).unwrap(), 1);
    // A deleted key can be inserted again (new offset).
    assert_eq!(txn.insert_nodes(ids.p, &[row(2)]).unwrap(), vec![3]);
    assert_eq!(txn.lookup_pk(ids.p, &Value::Int64(2)).unwrap(), Some(3));
    txn.commit().unwrap();
    let v = storage.snapshot().unwrap();
    let nd = v.node_table(ids.p).unwrap();
    assert_eq!((nd.num_rows, nd.num_live_rows()), (4, 3));
    assert_eq!(v.rel_table(ids.rel[1]).unwrap().num_rels, 0);
}

#[test]
fn snapshots_are_isolated_and_rollback_discards() {
    let storage = Storage::open(None, StorageConfig::default()).unwrap();
    setup(&storage);
    let ids = ids(&storage.snapshot().unwrap());
    let old = storage.snapshot().unwrap();
    {
        let mut txn = storage.begin_write().unwrap();
        txn.insert_nodes(ids.p, &[vec![Value::Int64(1), Value::Null, Value::Null]])
            .unwrap();
        // Rollback by drop.
    }
    assert_eq!(
        storage
            .snapshot()
            .unwrap()
            .node_table(ids.p)
            .unwrap()
            .num_rows,
        0
    );
    let mut txn = storage.begin_write().unwrap();
    txn.insert_nodes(ids.p, &[vec![Value::Int64(1), Value::Null, Value::Null]])
        .unwrap();
    txn.commit().unwrap();
    assert_eq!(old.node_table(ids.p).unwrap().num_rows, 0);
    assert_eq!(
        storage
            .snapshot()
            .unwrap()
            .node_table(ids.p)
            .unwrap()
            .num_rows,
        1
    );
}

/// Many rows across several node groups, rels between groups, deletes and
/// updates; then a "crash" (drop without checkpoint) and WAL replay.
#[test]
fn multi_group_writes_survive_wal_replay() {
    let (_dir, path, storage, ids) = fresh();
    let n = (NODE_GROUP_SIZE * 2 + NODE_GROUP_SIZE / 2) as i64;
    let mut model = Model::default();
    let mut txn = storage.begin_write().unwrap();
    // In several batches, so the last group is rewritten.
    for chunk in (0..n)
        .collect::<Vec<_>>()
        .chunks((NODE_GROUP_SIZE / 3) as usize + 1)
    {
        let rows: Vec<Vec<Value>> = chunk
            .iter()
            .map(|&k| {
                vec![
                    Value::Int64(k * 3),
                    Value::String(format!("p{k}")),
                    Value::Int64(k % 7),
                ]
            })
            .collect();
        txn.insert_nodes(ids.p, &rows).unwrap();
        model.rows.extend(
            chunk
                .iter()
                .map(|&k| Some((k * 3, Some(format!("p{k}")), Some(k % 7)))),
        );
    }
    let src: Vec<u64> = (0..n as u64).step_by(5).collect();
    let dst: Vec<u64> = src.iter().map(|s| (s * 7 + 1) % n as u64).collect();
    let props: Vec<Vec<Value>> = src
        .iter()
        .map(|s| vec![Value::Int64(*s as i64), Value::Null])
        .collect();
    let rel_ids = txn.insert_rels(ids.rel[0], &src, &dst, &props).unwrap();
    for (i, id) in rel_ids.iter().enumerate() {
        model.rels[0].insert(*id, (src[i], dst[i], Some(src[i] as i64), None));
    }
    model.next_id[0] = rel_ids.len() as u64;
    txn.commit().unwrap();
    check(&storage, &model);

    let mut txn = storage.begin_write().unwrap();
    let victim = src[3];
    txn.delete_nodes(ids.p, &[victim], true).unwrap();
    model.rows[victim as usize] = None;
    model.rels[0].retain(|_, r| r.0 != victim && r.1 != victim);
    txn.update_node_property(ids.p, 1, PropertyId(2), &Value::Int64(99))
        .unwrap();
    model.rows[1].as_mut().unwrap().2 = Some(99);
    let (&id, &(s, d, _, _)) = model.rels[0].iter().nth(10).unwrap();
    txn.update_rel_property(
        ids.rel[0],
        s,
        d,
        id,
        PropertyId(1),
        &Value::String("hi".into()),
    )
    .unwrap();
    model.rels[0].get_mut(&id).unwrap().3 = Some("hi".into());
    txn.commit().unwrap();
    check(&storage, &model);
    drop(storage); // no checkpoint: the reopen replays the WAL
    let storage = open(&path);
    check(&storage, &model);
}

/// Rough cost of the copy-on-write design (`cargo test --release -- --ignored
/// write_costs --nocapture`): single-row inserts rewrite the last node group.
#[test]
#[ignore]
fn write_costs() {
    let (_dir, _, storage, ids) = fresh();
    let row = |k: i64| {
        vec![
            Value::Int64(k),
            Value::String(format!("n{k}")),
            Value::Int64(k),
        ]
    };
    let base = 100_000i64;
    let mut txn = storage.begin_write().unwrap();
    txn.insert_nodes(ids.p, &(0..base).map(row).collect::<Vec<_>>())
        .unwrap();
    txn.commit().unwrap();
    let t = std::time::Instant::now();
    let mut txn = storage.begin_write().unwrap();
    for k in 0..1000 {
        txn.insert_nodes(ids.p, &[row(base + k)]).unwrap();
    }
    txn.commit().unwrap();
    println!(
        "1000 single-row inserts in one txn over {base} rows: {:?}",
        t.elapsed()
    );
    let t = std::time::Instant::now();
    for k in 0..100 {
        let mut txn = storage.begin_write().unwrap();
        txn.insert_nodes(ids.p, &[row(base + 1000 + k)]).unwrap();
        txn.commit().unwrap();
    }
    println!("100 auto-commit single-row inserts: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let mut txn = storage.begin_write().unwrap();
    for k in 0..1000u64 {
        txn.insert_rels(ids.rel[0], &[k], &[k + 1], &[]).unwrap();
    }
    txn.commit().unwrap();
    println!("1000 single-rel inserts in one txn: {:?}", t.elapsed());
}

/// Pages the version references, in all.
fn page_count(v: &Version) -> u64 {
    v.pages().iter().map(|r| u64::from(r.count)).sum()
}

/// A checkpoint clears the values of deleted nodes: the pages of their
/// strings are given back, the live rows read the same before and after,
/// through a reopen, and a second checkpoint has nothing to clear.
#[test]
fn checkpoint_reclaims_deleted_rows() {
    let (_dir, path, storage, ids) = fresh();
    let n = 2000i64;
    let mut model = Model::default();
    let mut txn = storage.begin_write().unwrap();
    let rows: Vec<Vec<Value>> = (0..n)
        .map(|k| {
            vec![
                Value::Int64(k),
                Value::String(format!("{k:0>200}")),
                Value::Int64(k % 7),
            ]
        })
        .collect();
    txn.insert_nodes(ids.p, &rows).unwrap();
    txn.commit().unwrap();
    for k in 0..n {
        model
            .rows
            .push(Some((k, Some(format!("{k:0>200}")), Some(k % 7))));
    }
    // Every node but each tenth.
    let doomed: Vec<u64> = (0..n as u64).filter(|o| o % 10 != 0).collect();
    let mut txn = storage.begin_write().unwrap();
    txn.delete_nodes(ids.p, &doomed, false).unwrap();
    txn.commit().unwrap();
    for &o in &doomed {
        model.rows[o as usize] = None;
    }
    check(&storage, &model);
    let before = page_count(&storage.snapshot().unwrap());
    storage.checkpoint().unwrap();
    let after = page_count(&storage.snapshot().unwrap());
    check(&storage, &model);
    // Tiny node groups keep a page or two of NULL bitmaps per column each.
    let factor = if NODE_GROUP_SIZE >= 1024 { 3 } else { 1 };
    assert!(
        after * factor < before,
        "clearing {} of {n} rows left {after} of {before} pages",
        doomed.len()
    );
    let snapshot = storage.snapshot().unwrap();
    let group = &snapshot.node_table(ids.p).unwrap().groups[0];
    assert_eq!(group.free, group.deleted);
    drop(snapshot);
    let seq = storage.snapshot().unwrap().seq;
    storage.checkpoint().unwrap();
    assert_eq!(
        storage.snapshot().unwrap().seq,
        seq,
        "nothing left to clear"
    );
    drop(storage);
    let storage = open(&path);
    check(&storage, &model);
    model.checkpointed();

    // Inserts take the freed offsets, lowest first, then new ones; a key of
    // a deleted row may come back, and no lookup finds a freed row's old
    // key at its reused offset.
    let again: Vec<i64> = (1..n).filter(|k| k % 10 != 0).chain(n..n + 5).collect();
    assert_eq!(again.len(), doomed.len() + 5);
    let mut txn = storage.begin_write().unwrap();
    let rows: Vec<Vec<Value>> = again
        .iter()
        .map(|&k| vec![Value::Int64(k), Value::Null, Value::Int64(1)])
        .collect();
    let offsets = txn.insert_nodes(ids.p, &rows).unwrap();
    let expected: Vec<u64> = doomed
        .iter()
        .copied()
        .chain(n as u64..n as u64 + 5)
        .collect();
    assert_eq!(offsets, expected);
    txn.commit().unwrap();
    for (&o, &k) in offsets.iter().zip(&again) {
        let row = Some((k, None, Some(1)));
        if o < n as u64 {
            model.rows[o as usize] = row;
        } else {
            model.rows.push(row);
        }
    }
    model.free.clear();
    check(&storage, &model);
    drop(storage);
    let storage = open(&path);
    check(&storage, &model);
}

/// A node inserted into a freed offset and deleted in the same transaction
/// takes its key with it (the key is still a buffered SET when the delete
/// reads it), and the offset is free again after the next checkpoint.
#[test]
fn reused_row_deleted_in_its_transaction() {
    let (_dir, path, storage, ids) = fresh();
    let row = |k: i64| vec![Value::Int64(k), Value::String(format!("n{k}")), Value::Null];
    let mut txn = storage.begin_write().unwrap();
    txn.insert_nodes(ids.p, &[row(1), row(2), row(3)]).unwrap();
    txn.commit().unwrap();
    let mut txn = storage.begin_write().unwrap();
    txn.delete_nodes(ids.p, &[1], false).unwrap();
    txn.commit().unwrap();
    storage.checkpoint().unwrap();

    let mut txn = storage.begin_write().unwrap();
    assert_eq!(txn.insert_nodes(ids.p, &[row(7)]).unwrap(), vec![1]);
    assert_eq!(txn.lookup_pk(ids.p, &Value::Int64(7)).unwrap(), Some(1));
    txn.delete_nodes(ids.p, &[1], false).unwrap();
    assert_eq!(txn.lookup_pk(ids.p, &Value::Int64(7)).unwrap(), None);
    // The key may be used again at once (by a new offset: 1 is not free
    // until the next checkpoint).
    assert_eq!(txn.insert_nodes(ids.p, &[row(7)]).unwrap(), vec![3]);
    txn.commit().unwrap();
    let model = Model {
        rows: vec![
            Some((1, Some("n1".into()), None)),
            None,
            Some((3, Some("n3".into()), None)),
            Some((7, Some("n7".into()), None)),
        ],
        ..Model::default()
    };
    check(&storage, &model);
    drop(storage);
    let storage = open(&path);
    check(&storage, &model);
    let mut txn = storage.begin_write().unwrap();
    assert_eq!(txn.insert_nodes(ids.p, &[row(8)]).unwrap(), vec![1]);
}
