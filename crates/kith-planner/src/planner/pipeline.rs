//! The pipeline of one table choice: where it starts (a scan, a PK lookup
//! or a counted leaf), the order and direction of its extends,
//! intersections for cycles, hash joins for disconnected components, and
//! where each predicate runs.

use super::*;

/// After the step that bound undirected rel `ri` walking it from node
/// `from` in `direction`: its stored ends ([`QueryRel::ends`]) name the
/// vectors of the nodes it joins, source first.
pub(super) fn alias_ends(
    g: &QueryGraph,
    ri: usize,
    from: usize,
    direction: ExtendDirection,
    used: &SlotUses,
    available: &mut HashSet<SlotId>,
    steps: &mut Vec<Step>,
) {
    let r = &g.rels[ri];
    // Only a rel whose value is read needs them (its far end is then
    // bound, see the extend's `to`).
    let Some((src, dst)) = r.ends.filter(|(s, d)| used.contains(s) || used.contains(d)) else {
        return;
    };
    let to = if r.left == from { r.right } else { r.left };
    let (s, d) = match direction {
        ExtendDirection::Fwd => (from, to),
        ExtendDirection::Bwd => (to, from),
    };
    for (slot, node) in [(src, s), (dst, d)] {
        steps.push(Step::Alias {
            slot,
            of: g.nodes[node].id_slot,
        });
        available.insert(slot);
    }
}

/// The estimated fraction of a scan's rows its own filters may keep at
/// most for the properties no filter reads to be read after the filters
/// (for the kept rows) instead of by the scan (for every row).
pub(super) const LATE_READ_SELECTIVITY: f64 = 0.1;

/// The pipeline (source and steps) of one table choice.
pub(super) fn plan_pipeline(
    q: &BoundPart,
    choice: &TableChoice,
    null_tables: &[Option<TableId>],
    (from_rows, counts_last): (bool, bool),
    used: &SlotUses,
    catalog: &Catalog,
    cardinality: &dyn Fn(TableId) -> u64,
) -> Result<SubPlan> {
    let g: &QueryGraph = &q.graph;
    let mut used = used.clone();
    for e in &choice.predicates {
        used.add(e);
    }
    let used = &used;
    let mut st = Progress::new(q, choice);
    let estimates = Estimates::new(
        g,
        catalog,
        &choice.node_tables,
        &choice.rel_tables,
        st.pending
            .iter()
            .flatten()
            .filter(|e| isomorphism_pair(g, e).is_none()),
        cardinality,
    )
    .count_only(if counts_last {
        counted_leaves(q, used)
    } else {
        0
    });
    let ctx = ExtendCtx {
        g,
        catalog,
        node_tables: &choice.node_tables,
        rel_tables: &choice.rel_tables,
        directions: &choice.directions,
        used,
        estimates: &estimates,
        chosen: Default::default(),
    };
    let starts = Starts::new(q, &choice.node_tables, cardinality);
    let source = first_source(&ctx, q, &starts, from_rows, null_tables, &mut st)?;
    let mut estimate = ctx.take_estimate(matches!(source, Source::Rows { .. }));
    let single = matches!(source, Source::Single);
    let slot_types: HashMap<SlotId, LogicalType> = g.slot_types().collect();
    join_components(&ctx, &starts, &mut st, &slot_types, single, &mut estimate)?;
    plan_optional_patterns(&ctx, q, &mut st, &slot_types)?;
    if let Some(e) = st.pending.iter().flatten().next() {
        return Err(Error::internal(format!(
            "predicate at {:?} could not be placed",
            e.span
        )));
    }
    Ok(SubPlan {
        source,
        steps: st.steps,
        estimate,
    })
}

/// Where a pipeline starts: the part's input rows, or one tuple when a
/// node is found by its key (the lookups then start from it), or a scan.
fn first_source(
    ctx: &ExtendCtx,
    q: &BoundPart,
    starts: &Starts,
    from_rows: bool,
    null_tables: &[Option<TableId>],
    st: &mut Progress,
) -> Result<Source> {
    Ok(if from_rows {
        rows_source(ctx, q, null_tables, st)?
    } else if ctx
        .find_lookup(&st.bound, &st.available, &st.pending)
        .is_some()
    {
        // A node found by its key: `join_components` starts from it.
        Source::Single
    } else {
        match starts.pick(ctx, &st.bound) {
            None => Source::Single,
            Some(start) => ctx.scan_from(
                start,
                &mut st.bound,
                &mut st.done,
                &mut st.available,
                &mut st.pending,
                &mut st.steps,
            )?,
        }
    })
}

/// A pipeline while it is planned.
struct Progress {
    /// Per node: bound (or held back, see [`Progress::new`]).
    bound: Vec<bool>,
    /// Per rel: added (or held back).
    done: Vec<bool>,
    /// The slots the steps so far write.
    available: HashSet<SlotId>,
    /// The predicates not yet placed (as filters, or taken by a step).
    pending: Vec<Option<BoundExpr>>,
    steps: Vec<Step>,
}

impl Progress {
    fn new(q: &BoundPart, choice: &TableChoice) -> Self {
        let g = &q.graph;
        let mut bound = vec![false; g.nodes.len()];
        let mut done = vec![false; g.rels.len()];
        // An in-pipeline OPTIONAL MATCH's pattern (a left outer hash join's
        // build side, or a chain) is planned last: held bound until then.
        let held = q
            .optional_join
            .as_ref()
            .map(|j| (j.first_node, j.first_rel))
            .or(q
                .optional_chain
                .as_ref()
                .map(|c| (c.first_node, c.first_rel)));
        if let Some((first_node, first_rel)) = held {
            bound[first_node..].iter_mut().for_each(|b| *b = true);
            done[first_rel..].iter_mut().for_each(|d| *d = true);
        }
        let pending = q
            .predicates
            .iter()
            .chain(&choice.predicates)
            .cloned()
            .map(Some)
            .collect();
        Progress {
            bound,
            done,
            available: HashSet::new(),
            pending,
            steps: Vec::new(),
        }
    }
}

/// Where a scan starts when the estimates cannot tell (see
/// `join_order.rs`): most predicates of its own, then the node the part
/// groups by, then the smallest table, then the most rels: the middle of
/// `(a)->(b)->(c)`, whose two extends then both run from one flat node
/// (and, when only counted, multiply its two degrees: `CountExtend::pair`).
struct Starts {
    /// The nodes, most preferred first.
    by_preference: Vec<usize>,
    /// Per node: its place in `by_preference`.
    start_rank: Vec<usize>,
}

impl Starts {
    fn new(q: &BoundPart, node_tables: &[TableId], cardinality: &dyn Fn(TableId) -> u64) -> Self {
        let g = &q.graph;
        let mut by_preference: Vec<usize> = (0..g.nodes.len()).collect();
        by_preference.sort_by_key(|&i| {
            (
                std::cmp::Reverse(own_predicates(q, i)),
                !groups_by(q, i),
                cardinality(node_tables[i]),
                std::cmp::Reverse(pattern_degree(g, i)),
                i,
            )
        });
        let mut start_rank = vec![0; g.nodes.len()];
        for (rank, &i) in by_preference.iter().enumerate() {
            start_rank[i] = rank;
        }
        Starts {
            by_preference,
            start_rank,
        }
    }

    /// The unbound node to scan next: the start of the cheapest order of
    /// the component of the most preferred unbound node.
    fn pick(&self, ctx: &ExtendCtx, bound: &[bool]) -> Option<usize> {
        let first = self.by_preference.iter().copied().find(|&i| !bound[i])?;
        let prefer = |order: &[usize]| -> Vec<usize> {
            std::iter::once(self.start_rank[order[0]])
                .chain(order.iter().copied())
                .collect()
        };
        let nodes = ctx.reachable(bit(first)) & !ctx.mask(bound);
        let best = ctx
            .estimates
            .best_order(ctx.g, 0, nodes, &prefer, &|y, set| {
                ctx.intersect_rels(y, &|n| set & bit(n) != 0, &|_| false)
            });
        Some(best.map_or(first, |o| o.order[0]))
    }
}

/// How many of the part's predicates read only node `i`'s id and
/// properties.
fn own_predicates(q: &BoundPart, i: usize) -> usize {
    let mine = own_slots(&q.graph.nodes[i]);
    q.predicates
        .iter()
        .filter(|e| {
            let v = expr_slots(e);
            !v.is_empty() && v.iter().all(|s| mine.contains(s))
        })
        .count()
}

/// The fixed-length rels at node `i`.
fn pattern_degree(g: &QueryGraph, i: usize) -> usize {
    g.rels
        .iter()
        .filter(|r| r.recursive.is_none() && (r.left == i || r.right == i))
        .count()
}

/// Whether the part groups by node `i` alone (its value or its
/// properties): started there, the keys are flat while the extends after
/// them run, so a count reads degrees instead of neighbours
/// (`CountMode::Degrees`, `CountMode::Collapse`) and a key is read once per node
/// instead of once per match.
fn groups_by(q: &BoundPart, i: usize) -> bool {
    let n = &q.graph.nodes[i];
    !q.group_keys.is_empty()
        && q.group_keys.iter().all(|(e, _)| {
            let mut v = Vec::new();
            e.slots(&mut v);
            !v.is_empty()
                && v.iter()
                    .all(|s| *s == n.id_slot || n.properties.iter().any(|p| p.1 == *s))
        })
}

/// The source of a pipeline that starts from the part's input rows (and
/// its unwound lists): the imported nodes are bound (the rows of this
/// choice's table kept, their properties read), then everything connected
/// to them.
fn rows_source(
    ctx: &ExtendCtx,
    q: &BoundPart,
    null_tables: &[Option<TableId>],
    st: &mut Progress,
) -> Result<Source> {
    let node_tables = ctx.node_tables;
    let columns: Vec<(SlotId, LogicalType)> = q
        .inputs
        .iter()
        .cloned()
        .chain(q.unwinds.iter().map(|u| (u.slot, u.ty.clone())))
        .collect();
    st.available.extend(columns.iter().map(|c| c.0));
    for (i, n) in ctx.g.nodes.iter().enumerate() {
        if !n.imported {
            continue;
        }
        st.bound[i] = true;
        if n.tables.len() > 1 {
            // The input holds ids of several tables: this pipeline takes
            // those of its table (and, for the node's smallest table, the
            // NULLs of an OPTIONAL MATCH).
            let nulls = null_tables[i] == Some(node_tables[i]);
            st.steps
                .push(Step::Filter(table_filter(n.id_slot, node_tables[i], nulls)));
        }
        if !n.properties.is_empty() {
            st.steps.push(Step::ScanProperties {
                node: n.id_slot,
                table: node_tables[i],
                properties: reads(ctx.catalog, node_tables[i], &n.properties)?,
            });
            st.available.extend(n.properties.iter().map(|p| p.1));
        }
    }
    place_filters(&st.available, &mut st.pending, &mut st.steps);
    ctx.extend_all(
        &mut st.bound,
        &mut st.done,
        &mut st.available,
        &mut st.pending,
        &mut st.steps,
    )?;
    Ok(Source::Rows { columns })
}

/// Binds whatever is not connected to the bound part: a node whose primary
/// key what is bound fixes is looked up per tuple (an index nested-loop
/// join), any other component joined by a cross product (or hash join)
/// with its materialized rows. `single`: the pipeline starts from one
/// tuple, and `estimate` then shows the order of the first lookup.
fn join_components(
    ctx: &ExtendCtx,
    starts: &Starts,
    st: &mut Progress,
    slot_types: &HashMap<SlotId, LogicalType>,
    single: bool,
    estimate: &mut Option<crate::plan::JoinEstimate>,
) -> Result<()> {
    loop {
        if let Some((i, key)) = ctx.find_lookup(&st.bound, &st.available, &st.pending) {
            ctx.lookup_from(
                i,
                key,
                &mut st.bound,
                &mut st.done,
                &mut st.available,
                &mut st.pending,
                &mut st.steps,
            )?;
            // A key lookup that starts the pipeline shows its order.
            let found = ctx.take_estimate(false);
            if estimate.is_none() && single {
                *estimate = found;
            }
            continue;
        }
        let Some(start) = starts.pick(ctx, &st.bound) else {
            return Ok(());
        };
        cross_product(ctx, start, st, slot_types)?;
    }
}

/// Scans the component of node `start` on its own and joins its rows to
/// the pipeline's: by a hash join on an equality between the two sides,
/// else by a cross product.
fn cross_product(
    ctx: &ExtendCtx,
    start: usize,
    st: &mut Progress,
    slot_types: &HashMap<SlotId, LogicalType>,
) -> Result<()> {
    let mut sub_available = HashSet::new();
    let mut sub_steps = Vec::new();
    let before = st.pending.clone();
    let sub_source = ctx.scan_from(
        start,
        &mut st.bound,
        &mut st.done,
        &mut sub_available,
        &mut st.pending,
        &mut sub_steps,
    )?;
    let key = hash_join_key(&st.available, &sub_available, &mut st.pending);
    // The predicates the build side and its key took (not the isomorphism
    // tests, which `used` may not count).
    let consumed = before
        .iter()
        .zip(&st.pending)
        .filter_map(|(e, p)| e.as_ref().filter(|_| p.is_none()))
        .filter(|e| isomorphism_pair(ctx.g, e).is_none());
    let columns = build_columns(ctx.used, &sub_available, consumed, slot_types);
    st.available.extend(columns.iter().map(|c| c.0));
    st.steps.push(Step::CrossProduct {
        build: Box::new(SubPlan {
            source: sub_source,
            steps: sub_steps,
            estimate: ctx.take_estimate(false),
        }),
        columns,
        key,
        optional: false,
    });
    place_filters(&st.available, &mut st.pending, &mut st.steps);
    Ok(())
}

/// Plans the part's in-pipeline OPTIONAL MATCH pattern, held back until
/// now: a chain, or a left outer hash join. A WITH's WHERE over its
/// variables (`WITH a, b WHERE b IS NULL`) filters the padded rows.
fn plan_optional_patterns(
    ctx: &ExtendCtx,
    q: &BoundPart,
    st: &mut Progress,
    slot_types: &HashMap<SlotId, LogicalType>,
) -> Result<()> {
    if let Some(c) = &q.optional_chain {
        let chain = optional_chain_steps(ctx, c, &mut st.bound, &mut st.done, &mut st.available)?;
        st.steps.push(Step::OptionalChain(chain));
        place_filters(&st.available, &mut st.pending, &mut st.steps);
    }
    if let Some(j) = &q.optional_join {
        optional_join_steps(
            ctx,
            j,
            &mut st.bound,
            &mut st.done,
            &mut st.available,
            slot_types,
            &mut st.steps,
        )?;
        place_filters(&st.available, &mut st.pending, &mut st.steps);
    }
    Ok(())
}

pub(super) fn place_filters(
    available: &HashSet<SlotId>,
    pending: &mut [Option<BoundExpr>],
    steps: &mut Vec<Step>,
) {
    for p in pending.iter_mut() {
        let ready = p.as_ref().is_some_and(|e| {
            let mut v = Vec::new();
            e.slots(&mut v);
            v.iter().all(|s| available.contains(s))
        });
        if ready {
            if let Some(e) = p.take() {
                steps.push(Step::Filter(e));
            }
        }
    }
}

/// What a primary-key lookup probes the index with (see
/// [`ExtendCtx::lookup_key`]).
pub(super) struct LookupKey {
    pub(super) key: BoundExpr,
    /// The key is a list: each distinct item's node is bound.
    pub(super) each_item: bool,
}

/// What adding the rels of a query graph needs.
pub(super) struct ExtendCtx<'a> {
    pub(super) g: &'a QueryGraph,
    pub(super) catalog: &'a Catalog,
    pub(super) node_tables: &'a [TableId],
    pub(super) rel_tables: &'a [TableId],
    /// Per rel: the direction it is matched in (never `Both`).
    pub(super) directions: &'a [Direction],
    pub(super) used: &'a SlotUses,
    pub(super) estimates: &'a Estimates,
    /// The order the last `extend_all` followed, for EXPLAIN.
    pub(super) chosen: std::cell::RefCell<Option<JoinOrder>>,
}

impl ExtendCtx<'_> {
    /// The order the last `scan_from`, `lookup_from` or `extend_all`
    /// followed, as EXPLAIN shows it (None: the greedy order, or one node).
    pub(super) fn take_estimate(&self, per_input_row: bool) -> Option<crate::plan::JoinEstimate> {
        let o = self.chosen.take()?;
        (o.order.len() >= 2).then(|| crate::plan::JoinEstimate {
            order: o
                .order
                .iter()
                .map(|&i| self.g.nodes[i].name.clone())
                .collect(),
            cost: o.cost,
            rows: o.rows,
            per_input_row,
        })
    }

    /// `bound` as a bit set (see `join_order.rs`).
    pub(super) fn mask(&self, bound: &[bool]) -> u64 {
        (0..bound.len().min(64))
            .filter(|&i| bound[i])
            .fold(0, |m, i| m | bit(i))
    }

    /// The nodes connected to `from` (a bit set) through fixed-length rels,
    /// `from` included.
    pub(super) fn reachable(&self, from: u64) -> u64 {
        reachable(self.g, from)
    }

    /// The rels an intersection would bind unbound node `x` through: those
    /// not `done`, without property reads, from `x` to a `bound` node.
    pub(super) fn intersect_rels(
        &self,
        x: usize,
        bound: &dyn Fn(usize) -> bool,
        done: &dyn Fn(usize) -> bool,
    ) -> Vec<usize> {
        (0..self.g.rels.len())
            .filter(|&i| {
                let r = &self.g.rels[i];
                !done(i)
                    && r.recursive.is_none()
                    && r.properties.is_empty()
                    && r.left != r.right
                    && ((r.left == x && bound(r.right)) || (r.right == x && bound(r.left)))
            })
            .collect()
    }

    /// Scans node `start` and adds everything connected to it.
    pub(super) fn scan_from(
        &self,
        start: usize,
        bound: &mut [bool],
        done: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<Source> {
        let n = &self.g.nodes[start];
        available.insert(n.id_slot);
        // The properties the scan's own filters read are scanned; when
        // those filters keep few rows, the others are read after them, for
        // the rows kept only (`m.idMod7` of SQ5's `WHERE m.id % 1113 = 7`
        // for 1 row in 1,113 instead of every row).
        let mine = own_slots(n);
        let mut filtered = HashSet::new();
        for v in pending.iter().flatten().map(expr_slots) {
            if v.iter().all(|s| mine.contains(s)) {
                filtered.extend(v);
            }
        }
        let (early, late): (Vec<_>, Vec<_>) = n
            .properties
            .iter()
            .cloned()
            .partition(|p| filtered.contains(&p.1));
        let selective = self.estimates.ready_selectivity(0, bit(start)) <= LATE_READ_SELECTIVITY;
        let (scan_reads, late) = if !filtered.is_empty() && !late.is_empty() && selective {
            (early, late)
        } else {
            (n.properties.clone(), Vec::new())
        };
        available.extend(scan_reads.iter().map(|p| p.1));
        place_filters(available, pending, steps);
        if !late.is_empty() {
            steps.push(Step::ScanProperties {
                node: n.id_slot,
                table: self.node_tables[start],
                properties: reads(self.catalog, self.node_tables[start], &late)?,
            });
            available.extend(late.iter().map(|p| p.1));
            place_filters(available, pending, steps);
        }
        bound[start] = true;
        self.extend_all(bound, done, available, pending, steps)?;
        // From one tuple to the scan's rows.
        let scanned = self.chosen.take().and_then(|o| {
            let intersect =
                |y, set: u64| self.intersect_rels(y, &|n| set & bit(n) != 0, &|_| false);
            self.estimates.evaluate(self.g, 0, &o.order, &intersect)
        });
        self.chosen.replace(scanned);
        Ok(Source::ScanNodes {
            table: self.node_tables[start],
            id_slot: n.id_slot,
            properties: reads(self.catalog, self.node_tables[start], &scan_reads)?,
        })
    }

    /// The primary-key equality `n.pk = key` among `pending` of unbound node
    /// `i` whose key reads only `available` slots (and can equal a key of
    /// the primary key's type), if any; or, when nothing is bound yet, a
    /// membership `n.pk IN list` whose list reads no slot (a literal or a
    /// parameter: `WHERE a.id IN $ids`), each of its items looked up.
    pub(super) fn lookup_key(
        &self,
        i: usize,
        available: &HashSet<SlotId>,
        pending: &[Option<BoundExpr>],
    ) -> Option<LookupKey> {
        use crate::expr::{BinaryOp, BoundExprKind};
        let table = self.node_tables[i];
        if table == NO_TABLE {
            return None;
        }
        let entry = self.catalog.table(table)?;
        let pk = entry.primary_key().filter(|p| !entry.is_serial_key(p))?;
        let pk_slot = self.g.nodes[i]
            .properties
            .iter()
            .find(|p| p.0 == pk.name)
            .map(|p| p.1)?;
        let fits = |ty: &LogicalType| {
            *ty == LogicalType::Any
                || (pk.ty.is_integer() && ty.is_numeric())
                || (*ty == pk.ty && matches!(ty, LogicalType::String | LogicalType::Date))
        };
        let reads_only = |key: &BoundExpr, allowed: &HashSet<SlotId>| {
            let mut slots = Vec::new();
            key.slots(&mut slots);
            slots.iter().all(|s| allowed.contains(s)) && !key.calls("rand")
        };
        pending.iter().flatten().find_map(|e| match &e.kind {
            BoundExprKind::Binary(BinaryOp::Eq, l, r) => {
                let key = match (&l.kind, &r.kind) {
                    (BoundExprKind::Slot(s), _) if *s == pk_slot => r,
                    (_, BoundExprKind::Slot(s)) if *s == pk_slot => l,
                    _ => return None,
                };
                (reads_only(key, available) && fits(&key.ty)).then(|| LookupKey {
                    key: (**key).clone(),
                    each_item: false,
                })
            }
            BoundExprKind::Binary(BinaryOp::In, l, r)
                if matches!(l.kind, BoundExprKind::Slot(s) if s == pk_slot)
                    && available.is_empty() =>
            {
                let item_fits = match &r.ty {
                    LogicalType::List(item) => fits(item),
                    t => *t == LogicalType::Any,
                };
                (item_fits && reads_only(r, &HashSet::new())).then(|| LookupKey {
                    key: (**r).clone(),
                    each_item: true,
                })
            }
            _ => None,
        })
    }

    /// The first unbound node with a [`ExtendCtx::lookup_key`].
    pub(super) fn find_lookup(
        &self,
        bound: &[bool],
        available: &HashSet<SlotId>,
        pending: &[Option<BoundExpr>],
    ) -> Option<(usize, LookupKey)> {
        (0..self.g.nodes.len())
            .filter(|&i| !bound[i])
            .find_map(|i| self.lookup_key(i, available, pending).map(|k| (i, k)))
    }

    /// Binds node `i` by a primary-key lookup of `key`, then adds
    /// everything connected to it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lookup_from(
        &self,
        i: usize,
        key: LookupKey,
        bound: &mut [bool],
        done: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let n = &self.g.nodes[i];
        let table = self.node_tables[i];
        steps.push(Step::LookupNode {
            table,
            key: key.key,
            each_item: key.each_item,
            id_slot: n.id_slot,
        });
        available.insert(n.id_slot);
        if !n.properties.is_empty() {
            steps.push(Step::ScanProperties {
                node: n.id_slot,
                table,
                properties: reads(self.catalog, table, &n.properties)?,
            });
            available.extend(n.properties.iter().map(|p| p.1));
        }
        bound[i] = true;
        place_filters(available, pending, steps);
        self.extend_all(bound, done, available, pending, steps)
    }

    /// Takes the relationship-isomorphism predicates (`r1 <> r2`, see the
    /// binder) between rel `ri`, about to be extended, and rels extended
    /// before it: those whose tables differ in this choice always hold and
    /// are dropped; those whose rel shares the table become the extend's
    /// exclusions.
    pub(super) fn isomorphism(
        &self,
        ri: usize,
        from_is_src: bool,
        done: &[bool],
        available: &HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
    ) -> Vec<(SlotId, SlotId)> {
        let g = self.g;
        let me = g.rels[ri].id_slot;
        let mut exclude = Vec::new();
        for p in pending.iter_mut() {
            let Some((x, y)) = p.as_ref().and_then(|e| isomorphism_pair(g, e)) else {
                continue;
            };
            let other = match (x == me, y == me) {
                (true, false) => y,
                (false, true) => x,
                _ => continue,
            };
            let Some(j) = g.rels.iter().position(|r| r.id_slot == other) else {
                continue;
            };
            if j == ri || !done[j] || g.rels[j].recursive.is_some() {
                continue;
            }
            if self.rel_tables[j] != self.rel_tables[ri] {
                *p = None;
                continue;
            }
            // The earlier rel is in this extend's range only when its end on
            // this side (its source for a forward extend) is the node
            // extended from.
            let rj = &g.rels[j];
            let (src, dst) = if self.directions[j] == Direction::Left {
                (rj.right, rj.left)
            } else {
                (rj.left, rj.right)
            };
            let gate = g.nodes[if from_is_src { src } else { dst }].id_slot;
            // Both must be in this pipeline (not on a cross product's other
            // side); otherwise the test stays a filter.
            if !available.contains(&other) || !available.contains(&gate) {
                continue;
            }
            exclude.push((other, gate));
            *p = None;
        }
        exclude
    }

    /// The CSR that walks rel `ri` from its end `from`: forward when `from`
    /// is the rel's source in this choice of directions.
    pub(super) fn direction_from(&self, ri: usize, from: usize) -> ExtendDirection {
        let r = &self.g.rels[ri];
        if (from == r.left) == (self.directions[ri] != Direction::Left) {
            ExtendDirection::Fwd
        } else {
            ExtendDirection::Bwd
        }
    }

    /// Whether rel `ri`'s id must be written: it is read downstream, or by
    /// an isomorphism test with a rel added later (or placed as a filter).
    pub(super) fn rel_id_needed(&self, ri: usize, pending: &[Option<BoundExpr>]) -> bool {
        let id = self.g.rels[ri].id_slot;
        self.used.contains(&id)
            || pending
                .iter()
                .flatten()
                .any(|e| isomorphism_pair(self.g, e).is_some_and(|(x, y)| x == id || y == id))
    }

    /// Marks node `to` bound (its id just written by a step) and reads its
    /// properties. Late materialization: the properties a filter that becomes
    /// ready here reads are scanned first, the rest only for the tuples that
    /// pass.
    pub(super) fn bind_node(
        &self,
        to: usize,
        bound: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let (catalog, node_tables) = (self.catalog, self.node_tables);
        bound[to] = true;
        let tn = &self.g.nodes[to];
        // Conjuncts over the new node's properties alone: a mask of the
        // nodes that pass them, built from a scan of the table when enough
        // tuples arrive (sideways information passing); they stay filters.
        let conjuncts: Vec<BoundExpr> = pending.iter().flatten().cloned().collect();
        if let Some(predicate) = recursive::node_predicate(&conjuncts, tn) {
            steps.push(Step::SemiMask {
                node: tn.id_slot,
                table: node_tables[to],
                predicate,
            });
        }
        available.insert(tn.id_slot);
        let mut with_props = available.clone();
        with_props.extend(tn.properties.iter().map(|p| p.1));
        let filtered: HashSet<SlotId> = pending
            .iter()
            .flatten()
            .map(expr_slots)
            .filter(|slots| slots.iter().all(|s| with_props.contains(s)))
            .flatten()
            .collect();
        let (first, rest): (Vec<_>, Vec<_>) = tn
            .properties
            .iter()
            .cloned()
            .partition(|p| filtered.contains(&p.1));
        let batches = if first.is_empty() || rest.is_empty() {
            vec![tn.properties.clone()]
        } else {
            vec![first, rest]
        };
        for props in batches.into_iter().filter(|b| !b.is_empty()) {
            steps.push(Step::ScanProperties {
                node: tn.id_slot,
                table: node_tables[to],
                properties: reads(catalog, node_tables[to], &props)?,
            });
            available.extend(props.iter().map(|p| p.1));
            place_filters(available, pending, steps);
        }
        Ok(())
    }

    /// An unbound node that two or more rels (not yet added, without
    /// property reads) tie to bound nodes, with those rels: bound by
    /// intersecting the bound nodes' neighbour lists instead of extending
    /// one rel and filtering on the others. The node with the most such
    /// rels wins.
    pub(super) fn intersect_candidate(
        &self,
        bound: &[bool],
        done: &[bool],
    ) -> Option<(usize, Vec<usize>)> {
        (0..self.g.nodes.len())
            .filter(|&x| !bound[x])
            .filter_map(|x| {
                let rels = self.intersect_rels(x, &|n| bound[n], &|i| done[i]);
                (rels.len() >= 2).then_some((x, rels))
            })
            .max_by_key(|(x, rels)| (rels.len(), std::cmp::Reverse(*x)))
    }

    /// Adds the [`Step::Intersect`] that binds node `x` through `rels`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn intersect(
        &self,
        x: usize,
        rels: &[usize],
        bound: &mut [bool],
        done: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let g = self.g;
        for &ri in rels {
            done[ri] = true;
        }
        // Relationship isomorphism between these rels and with rels added
        // before: tested by the step (rels of different tables always differ).
        let mut distinct = Vec::new();
        let mut exclude = Vec::new();
        for p in pending.iter_mut() {
            let Some((a, b)) = p.as_ref().and_then(|e| isomorphism_pair(g, e)) else {
                continue;
            };
            let index = |s: SlotId| rels.iter().position(|&ri| g.rels[ri].id_slot == s);
            let (i, other) = match (index(a), index(b)) {
                (Some(i), Some(j)) => {
                    if self.rel_tables[rels[i]] == self.rel_tables[rels[j]] {
                        distinct.push((i, j));
                    }
                    *p = None;
                    continue;
                }
                (Some(i), None) => (i, b),
                (None, Some(i)) => (i, a),
                (None, None) => continue,
            };
            let Some(j) = g.rels.iter().position(|r| r.id_slot == other) else {
                continue;
            };
            if self.rel_tables[j] != self.rel_tables[rels[i]] {
                *p = None;
            } else if done[j] && available.contains(&other) {
                exclude.push((i, other));
                *p = None;
            }
        }
        let mut lists = Vec::with_capacity(rels.len());
        for &ri in rels {
            let r = &g.rels[ri];
            let from = if r.left == x { r.right } else { r.left };
            lists.push(IntersectRel {
                rel_table: self.rel_tables[ri],
                direction: self.direction_from(ri, from),
                from: g.nodes[from].id_slot,
                rel_id: self.rel_id_needed(ri, pending).then_some(r.id_slot),
            });
            available.insert(r.id_slot);
        }
        let directions: Vec<ExtendDirection> = lists.iter().map(|l| l.direction).collect();
        steps.push(Step::Intersect {
            to: g.nodes[x].id_slot,
            to_table: self.node_tables[x],
            rels: lists,
            distinct,
            exclude,
        });
        self.bind_node(x, bound, available, pending, steps)?;
        for (&ri, direction) in rels.iter().zip(directions) {
            let r = &g.rels[ri];
            let from = if r.left == x { r.right } else { r.left };
            alias_ends(g, ri, from, direction, self.used, available, steps);
        }
        place_filters(available, pending, steps);
        Ok(())
    }

    /// Adds every rel reachable from the bound nodes, in the cheapest order
    /// the estimates find (else by the rules of `next_rel`), each predicate
    /// right after the step that makes its last slot available.
    pub(super) fn extend_all(
        &self,
        bound: &mut [bool],
        done: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let g = self.g;
        // The cheapest order of the nodes reachable from what is bound (None:
        // too many nodes, or nothing to add: the greedy rules below).
        let mask = self.mask(bound);
        let order = self.estimates.best_order(
            g,
            mask,
            self.reachable(mask) & !mask,
            &|order| order.to_vec(),
            &|y, set| self.intersect_rels(y, &|n| set & bit(n) != 0, &|_| false),
        );
        self.chosen.replace(order.clone().map(|o| JoinOrder {
            order: bits(mask).chain(o.order).collect(),
            ..o
        }));
        while done.iter().any(|d| !d) {
            let closing = (0..g.rels.len())
                .any(|i| !done[i] && bound[g.rels[i].left] && bound[g.rels[i].right]);
            // The next node of the order, if any is left.
            let next = order
                .as_ref()
                .and_then(|o| o.order.iter().copied().find(|&y| !bound[y]));
            if !closing {
                let candidate = match next {
                    Some(y) => {
                        let rels = self.intersect_rels(y, &|n| bound[n], &|i| done[i]);
                        (rels.len() >= 2).then_some((y, rels))
                    }
                    None => self.intersect_candidate(bound, done),
                };
                if let Some((x, rels)) = candidate {
                    self.intersect(x, &rels, bound, done, available, pending, steps)?;
                    continue;
                }
            }
            let guided = next.filter(|_| !closing);
            let Some(ri) = self.next_rel(guided, bound, done, available, pending) else {
                // The rest is not connected to what is bound.
                return Ok(());
            };
            self.extend_rel(ri, bound, done, available, pending, steps)?;
        }
        Ok(())
    }

    /// The rel to extend next: to node `guided` (the order's next), through
    /// its rel with the fewest rels per tuple (as the estimate assumed);
    /// else one closing a cycle (both ends bound), then any rel with one end
    /// bound, filtering early: one after which a predicate (on the new node
    /// or the rel) becomes ready before the others.
    fn next_rel(
        &self,
        guided: Option<usize>,
        bound: &[bool],
        done: &[bool],
        available: &HashSet<SlotId>,
        pending: &[Option<BoundExpr>],
    ) -> Option<usize> {
        let g = self.g;
        let filtered = |i: usize| {
            let r = &g.rels[i];
            let n = &g.nodes[if bound[r.left] { r.right } else { r.left }];
            let new: HashSet<SlotId> = std::iter::once(n.id_slot)
                .chain(n.properties.iter().map(|p| p.1))
                .chain(r.properties.iter().map(|p| p.1))
                .collect();
            pending.iter().flatten().any(|e| {
                let slots = expr_slots(e);
                isomorphism_pair(g, e).is_none()
                    && slots.iter().any(|s| new.contains(s))
                    && slots
                        .iter()
                        .all(|s| new.contains(s) || available.contains(s))
            })
        };
        let from_bound = |i: usize| {
            let r = &g.rels[i];
            if bound[r.left] {
                r.left
            } else {
                r.right
            }
        };
        let to_guided = guided.and_then(|y| {
            (0..g.rels.len())
                .filter(|&i| !done[i])
                .filter(|&i| {
                    let r = &g.rels[i];
                    (r.left == y && bound[r.right]) || (r.right == y && bound[r.left])
                })
                .min_by(|&a, &b| {
                    let degree = |i| self.estimates.degree(g, i, from_bound(i));
                    degree(a).total_cmp(&degree(b)).then(a.cmp(&b))
                })
        });
        to_guided.or_else(|| {
            (0..g.rels.len())
                .filter(|&i| !done[i])
                .filter(|&i| bound[g.rels[i].left] || bound[g.rels[i].right])
                .max_by_key(|&i| {
                    let closing = bound[g.rels[i].left] && bound[g.rels[i].right];
                    (closing, !closing && filtered(i), std::cmp::Reverse(i))
                })
        })
    }

    /// Adds the [`Step::Extend`] of rel `ri` from its bound end (its CSR
    /// forward when that end is the source), and binds the other end: or,
    /// when that is bound too, filters on the cycle closing there.
    fn extend_rel(
        &self,
        ri: usize,
        bound: &mut [bool],
        done: &mut [bool],
        available: &mut HashSet<SlotId>,
        pending: &mut [Option<BoundExpr>],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let g = self.g;
        done[ri] = true;
        let r = &g.rels[ri];
        let (from, to) = if bound[r.left] {
            (r.left, r.right)
        } else {
            (r.right, r.left)
        };
        let direction = self.direction_from(ri, from);
        let closes_cycle = bound[to];
        let exclude = self.isomorphism(
            ri,
            direction == ExtendDirection::Fwd,
            done,
            available,
            pending,
        );
        let id_needed = self.rel_id_needed(ri, pending);
        let to_slot = self.extend_target(ri, to, closes_cycle, id_needed);
        steps.push(Step::Extend {
            rel_table: self.rel_tables[ri],
            direction,
            from: g.nodes[from].id_slot,
            to: to_slot,
            to_table: self.node_tables[to],
            rel_id: id_needed.then_some(r.id_slot),
            properties: reads(self.catalog, self.rel_tables[ri], &r.properties)?,
            exclude,
            optional: false,
        });
        available.insert(r.id_slot);
        available.extend(r.properties.iter().map(|p| p.1));
        if closes_cycle {
            let (Some(tmp), id) = (to_slot, g.nodes[to].id_slot) else {
                return Err(Error::internal("cycle extend without a slot"));
            };
            let span = kith_common::Span::new(0, 0);
            steps.push(Step::Filter(BoundExpr {
                kind: crate::expr::BoundExprKind::Binary(
                    crate::expr::BinaryOp::Eq,
                    Box::new(BoundExpr::slot(tmp, LogicalType::InternalId, span)),
                    Box::new(BoundExpr::slot(id, LogicalType::InternalId, span)),
                ),
                ty: LogicalType::Bool,
                span,
            }));
        } else {
            self.bind_node(to, bound, available, pending, steps)?;
        }
        alias_ends(g, ri, from, direction, self.used, available, steps);
        place_filters(available, pending, steps);
        Ok(())
    }

    /// Where the extend of rel `ri` to node `to` writes the neighbour's id:
    /// a fresh slot when it closes a cycle (filtered against the bound id),
    /// the node's slot when anything needs it, else nowhere.
    fn extend_target(
        &self,
        ri: usize,
        to: usize,
        closes_cycle: bool,
        id_needed: bool,
    ) -> Option<SlotId> {
        let g = self.g;
        let used = self.used;
        if closes_cycle {
            return Some(SlotId(u32::MAX - ri as u32));
        }
        let needed = used.contains(&g.nodes[to].id_slot)
            || !g.nodes[to].properties.is_empty()
            || g.rels
                .iter()
                .filter(|r| r.left == to || r.right == to)
                .count()
                > 1
            // A later rel's isomorphism test may read this rel's
            // endpoints (the node it was extended to).
            || id_needed
            // An undirected rel's value names its stored ends.
            || g.rels[ri]
                .ends
                .is_some_and(|(s, d)| used.contains(&s) || used.contains(&d));
        needed.then_some(g.nodes[to].id_slot)
    }
}

/// An equality among `pending` between an expression over the bound part
/// (`probe`) and one over a new component (`build`), with hashable types:
/// the cross product with that component becomes a hash join. The equality
/// leaves `pending`: the join index finds exactly the rows it holds for
/// (Cypher's equality, NULL equal to nothing; `hash_join.rs`).
pub(super) fn hash_join_key(
    probe: &HashSet<SlotId>,
    build: &HashSet<SlotId>,
    pending: &mut [Option<BoundExpr>],
) -> Option<crate::plan::HashJoinKey> {
    use crate::expr::{BinaryOp, BoundExprKind};
    let within = |e: &BoundExpr, side: &HashSet<SlotId>| {
        let mut v = Vec::new();
        e.slots(&mut v);
        !v.is_empty() && v.iter().all(|s| side.contains(s))
    };
    let hashable = |a: &LogicalType, b: &LogicalType| {
        (a.is_numeric() && b.is_numeric())
            || (a == b
                && matches!(
                    a,
                    LogicalType::String
                        | LogicalType::Bool
                        | LogicalType::Date
                        | LogicalType::InternalId
                ))
    };
    let (i, key) = pending.iter().enumerate().find_map(|(i, e)| {
        let BoundExprKind::Binary(BinaryOp::Eq, l, r) = &e.as_ref()?.kind else {
            return None;
        };
        let (p, b) = if within(l, probe) && within(r, build) {
            (l, r)
        } else if within(r, probe) && within(l, build) {
            (r, l)
        } else {
            return None;
        };
        let deterministic = !p.calls("rand") && !b.calls("rand");
        (hashable(&p.ty, &b.ty) && deterministic).then(|| {
            let key = crate::plan::HashJoinKey {
                probe: (**p).clone(),
                build: (**b).clone(),
            };
            (i, key)
        })
    })?;
    pending[i] = None;
    Some(key)
}
