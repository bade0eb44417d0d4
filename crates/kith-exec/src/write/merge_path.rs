//! MERGE of any other pattern with rels: a depth-first search for every
//! match of the whole path from an anchor node, or, when there is none, the
//! path created.

use std::collections::HashMap;

use kith_catalog::TableEntry;
use kith_common::{Error, InternalId, Result, TableId, Value};
use kith_planner::bound::{CreateNode, MergePathNode, MergePathRel, MergeThen, WriteTable};
use kith_storage::{RelDirection, WriteTxn};

use super::create::{create_nodes, create_rels};
use super::implicit_schema::{self, entry};
use super::merge::{
    apply_merge_then, check_merge_properties, fan_out, node_candidates, node_fits, probe,
};
use super::resolve::resolve;
use super::{ClauseCtx, Node};

/// `MERGE` of a path: per row, every match of the pattern or else the
/// pattern created; then `then`.
pub(super) fn apply_merge_path(
    ctx: ClauseCtx<'_, '_>,
    nodes: &[MergePathNode],
    chain: &[usize],
    rels: &[MergePathRel],
    then: &MergeThen,
) -> Result<()> {
    let ClauseCtx {
        run,
        txn,
        rows,
        env,
        rel_env,
    } = ctx;
    // New nodes with their tables, made when missing (once, not
    // per row).
    let news: Vec<Option<(&CreateNode, TableId)>> = nodes
        .iter()
        .map(|n| {
            n.new
                .as_ref()
                .map(|c| Ok((c, implicit_schema::node_table(txn, &c.table)?)))
                .transpose()
        })
        .collect::<Result<_>>()?;
    let mut bound = Vec::with_capacity(rows.len());
    let mut created = Vec::with_capacity(rows.len());
    for i in 0..rows.len() {
        let (found, new) = merge_path(
            txn,
            nodes,
            chain,
            rels,
            &news,
            &rows[i],
            &mut env[i],
            &mut rel_env[i],
        )?;
        created.extend(std::iter::repeat_n(new, found.len()));
        bound.push(found);
    }
    fan_out(rows, env, rel_env, bound, |env, rel_env, m| {
        for (n, &node) in nodes.iter().zip(&m.nodes) {
            if let Some(c) = &n.new {
                env.insert(c.var.clone(), node);
            }
        }
        for (r, ids) in rels.iter().zip(&m.rels) {
            if let (Some(var), Some(ids)) = (&r.rel.var, ids) {
                rel_env.insert(var.clone(), *ids);
            }
        }
    });
    apply_merge_then(run, txn, then, &created, rows, env, rel_env)
}

/// One match of a path MERGE: a node per pattern node, a rel (id, source,
/// destination) per pattern rel; rels are None where the path was just
/// created (they are bound already).
struct PathMatch {
    nodes: Vec<Node>,
    rels: Vec<Option<[InternalId; 3]>>,
}

/// The search for matches of one row's path MERGE: a depth-first walk from
/// an anchor node along the chain, right then left, extending through each
/// rel's CSR from the node already placed.
struct PathSearch<'a> {
    nodes: &'a [MergePathNode],
    chain: &'a [usize],
    rels: &'a [MergePathRel],
    /// Each new node with its resolved table (None: a bound node).
    news: &'a [Option<(&'a CreateNode, TableId)>],
    row: &'a [Value],
    /// (rel, from position, to position) in walk order.
    steps: Vec<(usize, usize, usize)>,
    placed: Vec<Option<Node>>,
    /// Rels of the partial match, by step; a match uses each rel once.
    used: Vec<[InternalId; 3]>,
    found: Vec<PathMatch>,
}

impl PathSearch<'_> {
    fn walk(&mut self, txn: &mut WriteTxn<'_>, step: usize) -> Result<()> {
        let Some(&(r, from, to)) = self.steps.get(step) else {
            let nodes = self
                .placed
                .iter()
                .map(|n| n.ok_or_else(|| Error::internal("path MERGE match with an unplaced node")))
                .collect::<Result<_>>()?;
            let mut rels = vec![None; self.rels.len()];
            for (&(r, _, _), ids) in self.steps.iter().zip(&self.used) {
                rels[r] = Some(*ids);
            }
            self.found.push(PathMatch { nodes, rels });
            return Ok(());
        };
        let (a, b) = (self.chain[from], self.chain[to]);
        let Some(here) = self.placed[a] else {
            return Err(Error::internal("path MERGE step from an unplaced node"));
        };
        let there = self.placed[b];
        let spec = &self.rels[r];
        // Rel r's source is at position r (`from` walks rightwards) unless
        // the pattern points left; undirected, both ways.
        let src_is_left = spec.rel.src == self.nodes[self.chain[r]].node;
        let rightwards = to > from;
        let mut dirs = vec![if rightwards == src_is_left {
            RelDirection::Fwd
        } else {
            RelDirection::Bwd
        }];
        if spec.either_direction && a != b {
            dirs.push(match dirs[0] {
                RelDirection::Fwd => RelDirection::Bwd,
                RelDirection::Bwd => RelDirection::Fwd,
            });
        }
        let mut hits: Vec<([InternalId; 3], Node)> = Vec::new();
        for dir in dirs {
            let candidates: Vec<TableEntry> = match &spec.rel.table {
                WriteTable::Declared(t) => vec![entry(txn, *t)?],
                WriteTable::Implicit(ty) => txn.catalog.rel_tables_typed(ty).cloned().collect(),
            };
            for e in candidates {
                let Some(info) = e.rel_info() else {
                    continue;
                };
                let (near, far) = match dir {
                    RelDirection::Fwd => (info.src, info.dst),
                    RelDirection::Bwd => (info.dst, info.src),
                };
                if near != here.0 || there.is_some_and(|t| t.0 != far) {
                    continue;
                }
                let Some(probe) = probe(&e, &spec.rel.properties, self.row) else {
                    continue;
                };
                for (nbr, id) in txn.find_rels(e.id, dir, here.1, there.map(|t| t.1), &probe)? {
                    let (s, d) = match dir {
                        RelDirection::Fwd => (here, (far, nbr)),
                        RelDirection::Bwd => ((far, nbr), here),
                    };
                    let ids = [
                        InternalId::new(e.id, id),
                        InternalId::new(s.0, s.1),
                        InternalId::new(d.0, d.1),
                    ];
                    hits.push((ids, (far, nbr)));
                }
            }
        }
        for (ids, next) in hits {
            if self.used.iter().any(|u| u[0] == ids[0]) {
                continue;
            }
            if there.is_none() {
                let Some((new, table)) = self.news[b] else {
                    return Err(Error::internal("unplaced bound node in a path MERGE"));
                };
                if !node_fits(txn, new, table, next, self.row)? {
                    continue;
                }
                self.placed[b] = Some(next);
            }
            self.used.push(ids);
            self.walk(txn, step + 1)?;
            self.used.pop();
            if there.is_none() {
                self.placed[b] = None;
            }
        }
        Ok(())
    }
}

/// One row of a path MERGE: every match of the pattern, or (when none)
/// the pattern created, its new nodes and named rels bound in `env` /
/// `rel_env`; and whether it was created.
#[allow(clippy::too_many_arguments)]
fn merge_path(
    txn: &mut WriteTxn<'_>,
    nodes: &[MergePathNode],
    chain: &[usize],
    rels: &[MergePathRel],
    news: &[Option<(&CreateNode, TableId)>],
    row: &[Value],
    env: &mut HashMap<String, Node>,
    rel_env: &mut HashMap<String, [InternalId; 3]>,
) -> Result<(Vec<PathMatch>, bool)> {
    let mut placed = Vec::with_capacity(nodes.len());
    for (n, new) in nodes.iter().zip(news) {
        match new {
            Some((c, _)) => {
                check_merge_properties("node", &c.properties, row)?;
                placed.push(None);
            }
            None => match resolve(&n.node, row, env)? {
                Some(node) => placed.push(Some(node)),
                None => return Err(Error::runtime("cannot MERGE a path through a NULL node")),
            },
        }
    }
    for r in rels {
        check_merge_properties("rel", &r.rel.properties, row)?;
    }
    // The anchor: a bound node, else a new node found by primary key, else
    // the one with the most properties (fewest candidates, likely).
    let anchor = (0..chain.len())
        .max_by_key(|&p| match (news[chain[p]], &placed[chain[p]]) {
            (_, Some(_)) => (2, 0, std::cmp::Reverse(p)),
            (Some((c, t)), None) => {
                let keyed = txn
                    .catalog
                    .table(t)
                    .and_then(|e| e.primary_key())
                    .is_some_and(|pk| c.properties.iter().any(|(name, _)| *name == pk.name));
                (usize::from(keyed), c.properties.len(), std::cmp::Reverse(p))
            }
            (None, None) => (0, 0, std::cmp::Reverse(p)),
        })
        .unwrap_or(0);
    let starts: Vec<Option<Node>> = match (news[chain[anchor]], placed[chain[anchor]]) {
        (_, Some(n)) => vec![Some(n)],
        (Some((c, table)), None) => node_candidates(txn, c, table, row)?
            .into_iter()
            .map(Some)
            .collect(),
        (None, None) => Vec::new(),
    };
    let mut steps: Vec<(usize, usize, usize)> =
        (anchor..rels.len()).map(|r| (r, r, r + 1)).collect();
    steps.extend((0..anchor).rev().map(|r| (r, r + 1, r)));
    let mut search = PathSearch {
        nodes,
        chain,
        rels,
        news,
        row,
        steps,
        placed,
        used: Vec::with_capacity(rels.len()),
        found: Vec::new(),
    };
    for start in starts {
        search.placed[chain[anchor]] = start;
        search.walk(txn, 0)?;
    }
    if !search.found.is_empty() {
        return Ok((search.found, false));
    }
    let row = vec![row.to_vec()];
    for n in nodes {
        if let Some(c) = &n.new {
            create_nodes(txn, c, &row, std::slice::from_mut(env))?;
        }
    }
    for r in rels {
        create_rels(
            txn,
            &r.rel,
            &row,
            std::slice::from_ref(env),
            std::slice::from_mut(rel_env),
        )?;
    }
    let mut placed = Vec::with_capacity(nodes.len());
    for n in nodes {
        let node = resolve(&n.node, &row[0], env)?;
        placed.push(node.ok_or_else(|| Error::internal("path MERGE created no node"))?);
    }
    Ok((
        vec![PathMatch {
            nodes: placed,
            rels: vec![None; rels.len()],
        }],
        true,
    ))
}
