//! Finishing a part's rows: projection, DISTINCT, ORDER BY (merging sorted
//! runs), SKIP and LIMIT, and the padding of unmatched OPTIONAL rows.

use std::collections::HashSet;
use std::sync::Arc;

use kith_common::{Chunk, LogicalType, Result, ValueVector};
use kith_planner::expr::BoundExprKind;
use kith_planner::plan::PartPlan;
use kith_sched::Scheduler;

use crate::expression::{EvalContext, Evaluated, Evaluator};
use crate::operator::hash_aggregate::GroupKey;
use crate::operator::order_by::{cut_sorted_runs, sort_chunk};
use crate::operator::QueryContext;
use crate::result_set::{ChunkState, DataChunk, ResultSet, SlotLayout};

use crate::run::*;

/// The rows SKIP + LIMIT can reach (None without a LIMIT): what a sort
/// keeps.
pub(crate) fn rows_to_keep(plan: &PartPlan) -> Option<usize> {
    let skip = plan.skip.unwrap_or(0);
    plan.limit
        .map(|l| skip.saturating_add(l).min(usize::MAX as u64) as usize)
}

/// Sorted runs of at least this many rows in all merge on the workers.
#[cfg(not(kith_tiny))]
pub(crate) const PARALLEL_MERGE_MIN_ROWS: usize = 16 * 1024;

#[cfg(kith_tiny)]
pub(crate) const PARALLEL_MERGE_MIN_ROWS: usize = 2;

/// How a part's rows stand against its ORDER BY before `finish_rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowOrder {
    Unsorted,
    /// Each chunk is sorted.
    Runs,
    /// The chunks, in order, are sorted, and the first `skipped` rows of
    /// SKIP are already left out.
    Sorted {
        skipped: usize,
    },
}

/// Sorted runs merged, except under DISTINCT (which rebuilds the rows):
/// the runs are cut at exact ranks of their merged order
/// (`cut_sorted_runs`) and only the stretch SKIP + LIMIT reaches is
/// sorted, in pieces on the workers when it holds thousands of rows and
/// there are several threads (`ORDER BY ... SKIP 45000 LIMIT 10` sorts
/// ten rows).
pub(crate) fn merge_sorted_runs(
    runs: Vec<Chunk>,
    plan: &PartPlan,
    ctx: &Arc<QueryContext>,
    sched: &Scheduler,
    threads: usize,
) -> Result<(Vec<Chunk>, RowOrder)> {
    let runs: Vec<Chunk> = runs.into_iter().filter(|c| c.num_rows > 0).collect();
    if runs.len() <= 1 {
        return Ok((runs, RowOrder::Sorted { skipped: 0 }));
    }
    if plan.distinct {
        return Ok((runs, RowOrder::Runs));
    }
    let total: usize = runs.iter().map(|c| c.num_rows).sum();
    let end = rows_to_keep(plan).map_or(total, |k| k.min(total));
    let skip = (plan.skip.unwrap_or(0).min(end as u64)) as usize;
    let parts = if threads > 1 && end - skip >= PARALLEL_MERGE_MIN_ROWS {
        2 * threads
    } else {
        1
    };
    let ranks: Vec<usize> = (0..=parts)
        .map(|i| skip + (end - skip) * i / parts)
        .collect();
    let (first_key, descending) = (plan.num_visible, plan.descending.clone());
    let cuts = cut_sorted_runs(&runs, first_key, &descending, &ranks);
    let types = plan.types.clone();
    let runs = Arc::new(runs);
    let pieces = sched.parallel_map(threads, &ctx.cancel, parts, move |i| {
        let slices = runs
            .iter()
            .zip(cuts[i].iter().zip(&cuts[i + 1]))
            .map(|(run, (&from, &to))| run.rows_in(from..to.max(from)))
            .collect();
        Ok(sort_chunk(
            &concat(slices, &types),
            first_key,
            &descending,
            None,
        ))
    })?;
    Ok((pieces, RowOrder::Sorted { skipped: skip }))
}

/// `n` NULLs of type `ty`.
pub(crate) fn null_vector(ty: &LogicalType, n: usize) -> ValueVector {
    let mut v = ValueVector::new(ty.clone(), n);
    (0..n).for_each(|p| v.set_null(p, true));
    v
}

/// Evaluates `outputs` over the rows of `input` (one unflat chunk).
pub(crate) fn project_rows(
    input: Chunk,
    layout: &SlotLayout,
    outputs: &[kith_planner::expr::BoundExpr],
    types: &[LogicalType],
    ctx: &QueryContext,
) -> Result<Chunk> {
    let n = input.num_rows;
    let rs = ResultSet {
        chunks: vec![DataChunk {
            vectors: input.columns,
            state: ChunkState {
                len: n,
                sel: None,
                flat: None,
                generation: 0,
            },
        }],
        multiplicity: 1,
        weights: None,
    };
    let ectx = EvalContext {
        rs: &rs,
        layout,
        params: &ctx.params,
        subqueries: &ctx.subqueries,
    };
    let mut out = Chunk::new(types, 0);
    // A plain slot of the column's type is the input column itself: taken
    // by its last such output once every expression is evaluated, copied
    // for the others (a GROUP BY's million keys are not copied).
    let plain: Vec<Option<usize>> = outputs
        .iter()
        .zip(&out.columns)
        .map(|(e, col)| match &e.kind {
            BoundExprKind::Slot(slot) => layout.get(*slot).map(|(_, v)| v).filter(|&v| {
                rs.chunks[0]
                    .vectors
                    .get(v)
                    .is_some_and(|s| s.ty == col.ty && s.len() == n)
            }),
            _ => None,
        })
        .collect();
    for ((col, e), plain) in out.columns.iter_mut().zip(outputs).zip(&plain) {
        if plain.is_some() {
            continue;
        }
        let mut ev = Evaluator::new(e)?;
        let mut v = ValueVector::new(e.ty.clone(), 0);
        match ev.evaluate(&ectx, &mut v)? {
            Evaluated::Flat => (0..n).for_each(|_| col.push_value(&v.get_value(0))),
            // Every row, in order, of the column's type: the vector is the
            // column (no value per row).
            Evaluated::Unflat(_) if v.ty == col.ty && v.len() == n => *col = v,
            Evaluated::Unflat(_) => (0..n).for_each(|p| col.push_value(&v.get_value(p))),
        }
    }
    let mut inputs = rs
        .chunks
        .into_iter()
        .next()
        .map(|c| c.vectors)
        .unwrap_or_default();
    for (i, col) in out.columns.iter_mut().enumerate() {
        let Some(v) = plain[i] else {
            continue;
        };
        let used_later = plain[i + 1..].contains(&Some(v));
        *col = match used_later {
            true => inputs[v].clone(),
            false => std::mem::replace(&mut inputs[v], ValueVector::new(col.ty.clone(), 0)),
        };
    }
    out.num_rows = n;
    Ok(out)
}

/// DISTINCT (on the visible columns), ORDER BY (merging the sorted runs),
/// then SKIP and LIMIT over the collected rows; drops the sort-key columns.
pub(crate) fn finish_rows(
    chunks: Vec<Chunk>,
    plan: &PartPlan,
    input: Option<&Chunk>,
    order: RowOrder,
) -> Vec<Chunk> {
    let skipped = match order {
        RowOrder::Sorted { skipped } => skipped as u64,
        _ => 0,
    };
    let skip = plan.skip.unwrap_or(0).saturating_sub(skipped);
    let limit = plan.limit.unwrap_or(u64::MAX);
    let ordered = !plan.descending.is_empty();
    // Decided before DISTINCT, which puts the rows in one chunk.
    let needs_sort = ordered
        && match order {
            RowOrder::Unsorted => true,
            RowOrder::Runs => chunks.iter().filter(|c| c.num_rows > 0).count() > 1,
            RowOrder::Sorted { .. } => false,
        };
    if !plan.distinct && !ordered && skip == 0 && limit == u64::MAX {
        return chunks.into_iter().filter(|c| c.num_rows > 0).collect();
    }
    let mut chunks = chunks;
    if plan.distinct {
        let mut seen: HashSet<GroupKey> = HashSet::new();
        let mut out = Chunk::new(&plan.types, 0);
        for c in &chunks {
            for pos in 0..c.num_rows {
                let row = c.row(pos);
                if !seen.insert(GroupKey(row[..plan.num_visible].to_vec())) {
                    continue;
                }
                for (dst, v) in out.columns.iter_mut().zip(&row) {
                    dst.push_value(v);
                }
                out.num_rows += 1;
            }
        }
        chunks = vec![out];
    }
    if let (Some(map), Some(input)) = (&plan.optional, input) {
        // Its one sort key is the row number, which the padding groups by.
        return vec![pad_unmatched(chunks, input, map, plan)];
    }
    if needs_sort {
        // The runs are sorted; a stable sort of their concatenation merges
        // them.
        let all = concat(chunks, &plan.types);
        chunks = vec![sort_chunk(
            &all,
            plan.num_visible,
            &plan.descending,
            rows_to_keep(plan),
        )];
    }
    // The rows SKIP and LIMIT keep, a typed copy of each chunk's share.
    let (from, to) = (skip, skip.saturating_add(limit));
    let mut out = Vec::new();
    let mut index = 0u64;
    for mut c in chunks {
        let n = c.num_rows as u64;
        let (lo, hi) = (
            from.saturating_sub(index).min(n),
            to.saturating_sub(index).min(n),
        );
        index += n;
        if lo < hi {
            if hi - lo < n {
                c = c.rows_in(lo as usize..hi as usize);
            }
            c.columns.truncate(plan.num_visible);
            out.push(c);
        }
    }
    out
}

/// OPTIONAL MATCH: the matches grouped by input row number (the column
/// after the visible ones; each worker's rows of one input row keep their
/// order), with one NULL-padded row for each input row that has none. The
/// numbers are `0..input rows`, so a counting sort groups them, and each
/// column is one typed gather across the collected chunks plus the few
/// padded values.
pub(crate) fn pad_unmatched(
    chunks: Vec<Chunk>,
    input: &Chunk,
    map: &[Option<usize>],
    plan: &PartPlan,
) -> Chunk {
    let visible = &plan.types[..plan.num_visible];
    let chunks: Vec<Chunk> = chunks.into_iter().filter(|c| c.num_rows > 0).collect();
    let n_in = input.num_rows;
    // Each match's (chunk, position) and input row.
    let mut matches: Vec<((u32, u32), usize)> = Vec::new();
    for (c, chunk) in chunks.iter().enumerate() {
        let Some(col) = chunk.columns.get(plan.num_visible) else {
            continue;
        };
        let mut add = |p: usize, r: Option<i64>| {
            if let Some(r) = r
                .and_then(|r| usize::try_from(r).ok())
                .filter(|&r| r < n_in)
            {
                matches.push(((c as u32, p as u32), r));
            }
        };
        // The numbers are INT64 (typed); anything else value by value.
        match &col.data {
            kith_common::VectorData::I64(v) => {
                (0..chunk.num_rows).for_each(|p| add(p, Some(v[p])));
            }
            _ => (0..chunk.num_rows).for_each(|p| add(p, col.get_value(p).as_i64())),
        }
    }
    // start[r]..start[r + 1]: the matches of input row r in `order`.
    let mut start = vec![0usize; n_in + 1];
    for &(_, r) in &matches {
        start[r + 1] += 1;
    }
    for r in 0..n_in {
        start[r + 1] += start[r];
    }
    let mut cursor = start.clone();
    let mut order = vec![(0u32, 0u32); matches.len()];
    for &(at, r) in &matches {
        order[cursor[r]] = at;
        cursor[r] += 1;
    }
    drop(matches);
    let mut idx: Vec<(u32, u32)> = Vec::with_capacity(order.len() + n_in);
    let mut pads: Vec<(usize, usize)> = Vec::new();
    for r in 0..n_in {
        if start[r] == start[r + 1] {
            pads.push((idx.len(), r));
            // Any position: the padded value overwrites it.
            idx.push((0, 0));
        } else {
            idx.extend_from_slice(&order[start[r]..start[r + 1]]);
        }
    }
    let mut out = Chunk::new(visible, 0);
    for (i, col) in out.columns.iter_mut().enumerate() {
        let sources: Vec<&ValueVector> = chunks.iter().filter_map(|c| c.columns.get(i)).collect();
        *col = if sources.len() == chunks.len() && !sources.is_empty() {
            ValueVector::gather_across(&visible[i], &sources, &idx)
        } else {
            ValueVector::new(visible[i].clone(), idx.len())
        };
        for &(p, r) in &pads {
            match map.get(i).copied().flatten() {
                Some(j) => col.set_value(p, &input.columns[j].get_value(r)),
                None => col.set_null(p, true),
            }
        }
    }
    out.num_rows = idx.len();
    out
}
