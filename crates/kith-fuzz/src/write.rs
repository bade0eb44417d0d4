//! The write oracle: random CREATE / MERGE / SET / REMOVE / DELETE
//! statements run one by one against the engine and against a small
//! reference model of the graph in Rust; after each statement both must
//! agree on whether it failed and on a canonical dump of every table.

use std::cmp::Ordering;

use kith::Value;

use crate::exec::{Outcome, Session};
use crate::graph::{Graph, NodeRow, RelRow};
use crate::results::{compare, render, Shape};
use crate::rng::Rng;
use crate::schema::{Lit, Schema, Ty};

/// A comparison in a WHERE of a write.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    True,
    /// Column (0 is `id` for nodes), operator, constant.
    Cmp(usize, &'static str, Lit),
    IsNull(usize),
}

/// The new value of a SET.
#[derive(Debug, Clone, PartialEq)]
pub enum NewValue {
    Lit(Lit),
    /// `x.p + k` (INT64), `x.p + 0.5` (DOUBLE), `x.p + 'z'` (STRING),
    /// `NOT x.p` (BOOLEAN).
    Bump,
}

#[derive(Debug, Clone, PartialEq)]
pub enum WriteStmt {
    CreateNode {
        table: usize,
        id: i64,
        props: Vec<Lit>,
    },
    CreateRel {
        table: usize,
        src: i64,
        dst: i64,
        props: Vec<Lit>,
    },
    SetNode {
        table: usize,
        cond: Cond,
        col: usize,
        value: NewValue,
    },
    SetRel {
        table: usize,
        cond: Cond,
        col: usize,
        value: NewValue,
    },
    RemoveNodeProp {
        table: usize,
        id: i64,
        col: usize,
    },
    DeleteRel {
        table: usize,
        cond: Cond,
    },
    DeleteNode {
        table: usize,
        cond: Cond,
        detach: bool,
    },
    MergeNode {
        table: usize,
        id: i64,
        create: (usize, Lit),
        matched: (usize, NewValue),
    },
    MergeRel {
        table: usize,
        src: i64,
        dst: i64,
        w: i64,
    },
}

/// One step: the thread count it runs with, and the statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub threads: u8,
    pub stmt: WriteStmt,
}

fn render_cond(var: &str, names: &[String], cond: &Cond) -> String {
    match cond {
        Cond::True => String::new(),
        Cond::Cmp(c, op, v) => format!(" WHERE {var}.{} {op} {v}", names[*c]),
        Cond::IsNull(c) => format!(" WHERE {var}.{} IS NULL", names[*c]),
    }
}

fn render_value(var: &str, name: &str, ty: &Ty, v: &NewValue) -> String {
    match v {
        NewValue::Lit(l) => l.to_string(),
        NewValue::Bump => match ty {
            Ty::Int => format!("{var}.{name} + 1"),
            Ty::Dbl => format!("{var}.{name} + 0.5"),
            Ty::Str => format!("{var}.{name} + 'z'"),
            _ => format!("NOT {var}.{name}"),
        },
    }
}

fn bump(ty: &Ty, v: &Lit) -> Lit {
    match (ty, v) {
        (_, Lit::Null) => Lit::Null,
        (_, Lit::Int(x)) => Lit::Int(x + 1),
        (_, Lit::Dbl(x)) => Lit::Dbl(x + 0.5),
        (_, Lit::Str(s)) => Lit::Str(format!("{s}z")),
        (_, Lit::Bool(b)) => Lit::Bool(!b),
    }
}

impl WriteStmt {
    pub fn render(&self, schema: &Schema) -> String {
        let node_names = |t: usize| -> Vec<String> {
            schema.nodes[t]
                .props
                .iter()
                .map(|p| p.name.clone())
                .collect()
        };
        let rel_names = |t: usize| -> Vec<String> {
            schema.rels[t]
                .props
                .iter()
                .map(|p| p.name.clone())
                .collect()
        };
        let map = |names: &[String], vals: &[Lit]| -> String {
            let f: Vec<String> = names
                .iter()
                .zip(vals)
                .filter(|(_, v)| !v.is_null())
                .map(|(n, v)| format!("{n}: {v}"))
                .collect();
            if f.is_empty() {
                String::new()
            } else {
                format!(" {{{}}}", f.join(", "))
            }
        };
        let ends = |t: usize| {
            let rt = &schema.rels[t];
            (
                &schema.nodes[rt.from].name,
                &schema.nodes[rt.to].name,
                &rt.name,
            )
        };
        match self {
            WriteStmt::CreateNode { table, id, props } => {
                let names = node_names(*table);
                let mut f = vec![format!("id: {id}")];
                for (n, v) in names[1..].iter().zip(props) {
                    f.push(format!("{n}: {v}"));
                }
                format!(
                    "CREATE (:{} {{{}}})",
                    schema.nodes[*table].name,
                    f.join(", ")
                )
            }
            WriteStmt::CreateRel {
                table,
                src,
                dst,
                props,
            } => {
                let (a, b, r) = ends(*table);
                format!(
                    "MATCH (x:{a} {{id: {src}}}), (y:{b} {{id: {dst}}}) CREATE (x)-[:{r}{}]->(y)",
                    map(&rel_names(*table), props)
                )
            }
            WriteStmt::SetNode {
                table,
                cond,
                col,
                value,
            } => {
                let t = &schema.nodes[*table];
                let names = node_names(*table);
                format!(
                    "MATCH (n:{}){} SET n.{} = {}",
                    t.name,
                    render_cond("n", &names, cond),
                    names[*col],
                    render_value("n", &names[*col], &t.props[*col].ty, value)
                )
            }
            WriteStmt::SetRel {
                table,
                cond,
                col,
                value,
            } => {
                let (a, b, r) = ends(*table);
                let names = rel_names(*table);
                format!(
                    "MATCH (:{a})-[e:{r}]->(:{b}){} SET e.{} = {}",
                    render_cond("e", &names, cond),
                    names[*col],
                    render_value(
                        "e",
                        &names[*col],
                        &schema.rels[*table].props[*col].ty,
                        value
                    )
                )
            }
            WriteStmt::RemoveNodeProp { table, id, col } => format!(
                "MATCH (n:{} {{id: {id}}}) REMOVE n.{}",
                schema.nodes[*table].name,
                node_names(*table)[*col]
            ),
            WriteStmt::DeleteRel { table, cond } => {
                let (a, b, r) = ends(*table);
                format!(
                    "MATCH (:{a})-[e:{r}]->(:{b}){} DELETE e",
                    render_cond("e", &rel_names(*table), cond)
                )
            }
            WriteStmt::DeleteNode {
                table,
                cond,
                detach,
            } => format!(
                "MATCH (n:{}){} {}DELETE n",
                schema.nodes[*table].name,
                render_cond("n", &node_names(*table), cond),
                if *detach { "DETACH " } else { "" }
            ),
            WriteStmt::MergeNode {
                table,
                id,
                create,
                matched,
            } => {
                let t = &schema.nodes[*table];
                let names = node_names(*table);
                format!(
                    "MERGE (n:{} {{id: {id}}}) ON CREATE SET n.{} = {} ON MATCH SET n.{} = {}",
                    t.name,
                    names[create.0],
                    create.1,
                    names[matched.0],
                    render_value("n", &names[matched.0], &t.props[matched.0].ty, &matched.1)
                )
            }
            WriteStmt::MergeRel { table, src, dst, w } => {
                let (a, b, r) = ends(*table);
                format!(
                    "MATCH (x:{a} {{id: {src}}}), (y:{b} {{id: {dst}}}) MERGE (x)-[:{r} {{w: {w}}}]->(y)"
                )
            }
        }
    }
}

/// The reference model: the graph's rows, changed statement by statement.
#[derive(Debug, Clone)]
pub struct Model {
    pub schema: Schema,
    pub nodes: Vec<NodeRow>,
    pub rels: Vec<RelRow>,
}

fn cmp_lit(a: &Lit, b: &Lit) -> Option<Ordering> {
    match (a, b) {
        (Lit::Int(x), Lit::Int(y)) => Some(x.cmp(y)),
        (Lit::Int(x), Lit::Dbl(y)) => (*x as f64).partial_cmp(y),
        (Lit::Dbl(x), Lit::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Lit::Dbl(x), Lit::Dbl(y)) => x.partial_cmp(y),
        (Lit::Str(x), Lit::Str(y)) => Some(x.cmp(y)),
        (Lit::Bool(x), Lit::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Three-valued: `None` is NULL.
fn eval_cond(cond: &Cond, col: impl Fn(usize) -> Lit) -> Option<bool> {
    match cond {
        Cond::True => Some(true),
        Cond::IsNull(c) => Some(col(*c).is_null()),
        Cond::Cmp(c, op, v) => {
            let o = cmp_lit(&col(*c), v)?;
            Some(match *op {
                "=" => o == Ordering::Equal,
                "<>" => o != Ordering::Equal,
                "<" => o == Ordering::Less,
                "<=" => o != Ordering::Greater,
                ">" => o == Ordering::Greater,
                _ => o != Ordering::Less,
            })
        }
    }
}

impl NodeRow {
    /// Column `c` (0 is `id`).
    fn col(&self, c: usize) -> Lit {
        if c == 0 {
            Lit::Int(self.id)
        } else {
            self.props[c - 1].clone()
        }
    }
}

impl Model {
    pub fn new(graph: &Graph) -> Model {
        Model {
            schema: graph.schema.clone(),
            nodes: graph.nodes.clone(),
            rels: graph.rels.clone(),
        }
    }

    fn has_node(&self, table: usize, id: i64) -> bool {
        self.nodes.iter().any(|n| n.table == table && n.id == id)
    }

    /// Whether a node has a rel in any table, either direction.
    fn has_rels(&self, table: usize, id: i64) -> bool {
        self.rels.iter().any(|r| {
            let rt = &self.schema.rels[r.table];
            (rt.from == table && r.src == id) || (rt.to == table && r.dst == id)
        })
    }

    /// Applies a statement; `Err` when the engine must reject it (the
    /// model is then unchanged).
    pub fn apply(&mut self, stmt: &WriteStmt) -> Result<(), String> {
        match stmt {
            WriteStmt::CreateNode { table, id, props } => self.create_node(*table, *id, props)?,
            WriteStmt::CreateRel {
                table,
                src,
                dst,
                props,
            } => self.create_rel(*table, *src, *dst, props),
            WriteStmt::SetNode {
                table,
                cond,
                col,
                value,
            } => self.set_node(*table, cond, *col, value),
            WriteStmt::SetRel {
                table,
                cond,
                col,
                value,
            } => self.set_rel(*table, cond, *col, value),
            WriteStmt::RemoveNodeProp { table, id, col } => {
                for n in self
                    .nodes
                    .iter_mut()
                    .filter(|n| n.table == *table && n.id == *id)
                {
                    n.props[*col - 1] = Lit::Null;
                }
            }
            WriteStmt::DeleteRel { table, cond } => {
                self.rels.retain(|r| {
                    !(r.table == *table && eval_cond(cond, |c| r.props[c].clone()) == Some(true))
                });
            }
            WriteStmt::DeleteNode {
                table,
                cond,
                detach,
            } => self.delete_nodes(*table, cond, *detach)?,
            WriteStmt::MergeNode {
                table,
                id,
                create,
                matched,
            } => self.merge_node(*table, *id, create, matched),
            WriteStmt::MergeRel { table, src, dst, w } => self.merge_rel(*table, *src, *dst, *w),
        }
        Ok(())
    }

    /// CREATE of a node; a duplicate id is an error.
    fn create_node(&mut self, table: usize, id: i64, props: &[Lit]) -> Result<(), String> {
        if self.has_node(table, id) {
            return Err(format!("duplicate primary key {id}"));
        }
        self.nodes.push(NodeRow {
            table,
            id,
            props: props.to_vec(),
        });
        Ok(())
    }

    /// MATCH ... CREATE of a rel: nothing when an end node is missing.
    fn create_rel(&mut self, table: usize, src: i64, dst: i64, props: &[Lit]) {
        let rt = &self.schema.rels[table];
        if self.has_node(rt.from, src) && self.has_node(rt.to, dst) {
            self.rels.push(RelRow {
                table,
                src,
                dst,
                props: props.to_vec(),
            });
        }
    }

    /// SET of node column `col` on every node of `table` where `cond` holds.
    fn set_node(&mut self, table: usize, cond: &Cond, col: usize, value: &NewValue) {
        let ty = self.schema.nodes[table].props[col].ty.clone();
        for n in self.nodes.iter_mut().filter(|n| n.table == table) {
            if eval_cond(cond, |c| n.col(c)) == Some(true) {
                let new = match value {
                    NewValue::Lit(l) => l.clone(),
                    NewValue::Bump => bump(&ty, &n.col(col)),
                };
                n.props[col - 1] = new;
            }
        }
    }

    /// SET of rel property `col` on every rel of `table` where `cond` holds.
    fn set_rel(&mut self, table: usize, cond: &Cond, col: usize, value: &NewValue) {
        let ty = self.schema.rels[table].props[col].ty.clone();
        for r in self.rels.iter_mut().filter(|r| r.table == table) {
            if eval_cond(cond, |c| r.props[c].clone()) == Some(true) {
                let new = match value {
                    NewValue::Lit(l) => l.clone(),
                    NewValue::Bump => bump(&ty, &r.props[col]),
                };
                r.props[col] = new;
            }
        }
    }

    /// DELETE (or DETACH DELETE) of the nodes of `table` where `cond` holds;
    /// without `detach`, a node that still has rels is an error.
    fn delete_nodes(&mut self, table: usize, cond: &Cond, detach: bool) -> Result<(), String> {
        let doomed: Vec<i64> = self
            .nodes
            .iter()
            .filter(|n| n.table == table && eval_cond(cond, |c| n.col(c)) == Some(true))
            .map(|n| n.id)
            .collect();
        if !detach {
            if let Some(id) = doomed.iter().find(|id| self.has_rels(table, **id)) {
                return Err(format!("node {id} still has rels"));
            }
        }
        let schema = &self.schema;
        self.rels.retain(|r| {
            let rt = &schema.rels[r.table];
            !(rt.from == table && doomed.contains(&r.src)
                || rt.to == table && doomed.contains(&r.dst))
        });
        self.nodes
            .retain(|n| !(n.table == table && doomed.contains(&n.id)));
        Ok(())
    }

    /// MERGE of node `id`: ON MATCH sets `matched`, ON CREATE creates it with
    /// only `create` set.
    fn merge_node(
        &mut self,
        table: usize,
        id: i64,
        create: &(usize, Lit),
        matched: &(usize, NewValue),
    ) {
        let ty = self.schema.nodes[table].props[matched.0].ty.clone();
        let width = self.schema.nodes[table].props.len() - 1;
        match self
            .nodes
            .iter_mut()
            .find(|n| n.table == table && n.id == id)
        {
            Some(n) => {
                let new = match &matched.1 {
                    NewValue::Lit(l) => l.clone(),
                    NewValue::Bump => bump(&ty, &n.col(matched.0)),
                };
                n.props[matched.0 - 1] = new;
            }
            None => {
                let mut props = vec![Lit::Null; width];
                props[create.0 - 1] = create.1.clone();
                self.nodes.push(NodeRow { table, id, props });
            }
        }
    }

    /// MERGE of a rel with weight `w` between existing nodes (nothing when an
    /// end node is missing or such a rel exists).
    fn merge_rel(&mut self, table: usize, src: i64, dst: i64, w: i64) {
        let rt = &self.schema.rels[table];
        if self.has_node(rt.from, src) && self.has_node(rt.to, dst) {
            let exists = self.rels.iter().any(|r| {
                r.table == table && r.src == src && r.dst == dst && r.props[0] == Lit::Int(w)
            });
            if !exists {
                let mut props = vec![Lit::Null; rt.props.len()];
                props[0] = Lit::Int(w);
                self.rels.push(RelRow {
                    table,
                    src,
                    dst,
                    props,
                });
            }
        }
    }

    /// The dump queries, one per table, and the rows the model expects.
    pub fn dump(&self) -> Vec<(String, Vec<Vec<Value>>)> {
        let mut out = Vec::new();
        for (t, nt) in self.schema.nodes.iter().enumerate() {
            let cols: Vec<String> = nt.props.iter().map(|p| format!("n.{}", p.name)).collect();
            let q = format!("MATCH (n:{}) RETURN {}", nt.name, cols.join(", "));
            let rows = self
                .nodes
                .iter()
                .filter(|n| n.table == t)
                .map(|n| (0..nt.props.len()).map(|c| to_value(&n.col(c))).collect())
                .collect();
            out.push((q, rows));
        }
        for (t, rt) in self.schema.rels.iter().enumerate() {
            let mut cols = vec!["x.id".to_string(), "y.id".to_string()];
            cols.extend(rt.props.iter().map(|p| format!("e.{}", p.name)));
            let q = format!(
                "MATCH (x:{})-[e:{}]->(y:{}) RETURN {}",
                self.schema.nodes[rt.from].name,
                rt.name,
                self.schema.nodes[rt.to].name,
                cols.join(", ")
            );
            let rows = self
                .rels
                .iter()
                .filter(|r| r.table == t)
                .map(|r| {
                    let mut row = vec![Value::Int64(r.src), Value::Int64(r.dst)];
                    row.extend(r.props.iter().map(to_value));
                    row
                })
                .collect();
            out.push((q, rows));
        }
        out
    }
}

pub fn to_value(l: &Lit) -> Value {
    match l {
        Lit::Null => Value::Null,
        Lit::Int(v) => Value::Int64(*v),
        Lit::Dbl(v) => Value::Double(*v),
        Lit::Str(s) => Value::String(s.clone()),
        Lit::Bool(b) => Value::Bool(*b),
    }
}

/// Random write steps against the model's evolving state (the model is
/// advanced as they are generated).
pub fn generate(rng: &mut Rng, graph: &Graph, count: usize) -> Vec<Step> {
    let mut model = Model::new(graph);
    let mut out = Vec::new();
    for _ in 0..count {
        let stmt = random_stmt(rng, &model);
        let _ = model.apply(&stmt);
        out.push(Step {
            threads: if rng.chance(0.5) { 1 } else { 2 },
            stmt,
        });
    }
    out
}

fn some_id(rng: &mut Rng, model: &Model, table: usize) -> i64 {
    let ids: Vec<i64> = model
        .nodes
        .iter()
        .filter(|n| n.table == table)
        .map(|n| n.id)
        .collect();
    if ids.is_empty() || rng.chance(0.15) {
        rng.range(0, 220)
    } else {
        *rng.pick(&ids)
    }
}

fn random_cond(rng: &mut Rng, props: &[crate::schema::Prop], first: usize, ids: &[i64]) -> Cond {
    match rng.weighted(&[1, 5, 1]) {
        0 => Cond::True,
        1 => {
            let c = first + rng.below(props.len() - first);
            let ty = &props[c].ty;
            let v = if c == 0 && !ids.is_empty() && rng.chance(0.7) {
                Lit::Int(*rng.pick(ids))
            } else {
                Lit::random(rng, ty)
            };
            let op = if *ty == Ty::Bool || c == 0 && rng.chance(0.6) {
                "="
            } else {
                *rng.pick(&["=", "<>", "<", "<=", ">", ">="])
            };
            Cond::Cmp(c, op, v)
        }
        _ => Cond::IsNull(first.max(1) + rng.below(props.len() - first.max(1))),
    }
}

fn new_value(rng: &mut Rng, ty: &Ty) -> NewValue {
    match rng.weighted(&[3, 1, 2]) {
        0 => NewValue::Lit(Lit::random(rng, ty)),
        1 => NewValue::Lit(Lit::Null),
        _ => NewValue::Bump,
    }
}

fn random_stmt(rng: &mut Rng, model: &Model) -> WriteStmt {
    let schema = &model.schema;
    let nt = rng.below(schema.nodes.len());
    let rt = rng.below(schema.rels.len());
    let node_props = &schema.nodes[nt].props;
    let rel_props = &schema.rels[rt].props;
    let ids: Vec<i64> = model
        .nodes
        .iter()
        .filter(|n| n.table == nt)
        .map(|n| n.id)
        .collect();
    match rng.weighted(&[3, 4, 3, 2, 1, 2, 2, 1, 2, 2]) {
        0 => {
            let id = if !ids.is_empty() && rng.chance(0.1) {
                *rng.pick(&ids)
            } else {
                rng.range(200, 400)
            };
            let props = node_props[1..]
                .iter()
                .map(|p| Lit::random_or_null(rng, &p.ty, 0.2))
                .collect();
            WriteStmt::CreateNode {
                table: nt,
                id,
                props,
            }
        }
        1 => {
            let r = &schema.rels[rt];
            let (src, dst) = (some_id(rng, model, r.from), some_id(rng, model, r.to));
            let props = rel_props
                .iter()
                .map(|p| Lit::random_or_null(rng, &p.ty, 0.2))
                .collect();
            WriteStmt::CreateRel {
                table: rt,
                src,
                dst,
                props,
            }
        }
        2 => {
            let col = 1 + rng.below(node_props.len() - 1);
            WriteStmt::SetNode {
                table: nt,
                cond: random_cond(rng, node_props, 0, &ids),
                col,
                value: new_value(rng, &node_props[col].ty),
            }
        }
        3 => {
            let col = rng.below(rel_props.len());
            WriteStmt::SetRel {
                table: rt,
                cond: random_cond(rng, rel_props, 0, &[]),
                col,
                value: new_value(rng, &rel_props[col].ty),
            }
        }
        4 => WriteStmt::RemoveNodeProp {
            table: nt,
            id: some_id(rng, model, nt),
            col: 1 + rng.below(node_props.len() - 1),
        },
        5 => WriteStmt::DeleteRel {
            table: rt,
            cond: match random_cond(rng, rel_props, 0, &[]) {
                // Deleting every rel of a table leaves little to test.
                Cond::True => Cond::Cmp(0, ">", Lit::Int(rng.range(0, 25))),
                c => c,
            },
        },
        6 | 7 => {
            let id = some_id(rng, model, nt);
            let cond = if rng.chance(0.8) {
                Cond::Cmp(0, "=", Lit::Int(id))
            } else {
                Cond::Cmp(1, ">", Lit::Int(rng.range(20, 30)))
            };
            WriteStmt::DeleteNode {
                table: nt,
                cond,
                detach: rng.chance(0.75),
            }
        }
        8 => {
            let id = if ids.is_empty() || rng.chance(0.4) {
                rng.range(200, 400)
            } else {
                *rng.pick(&ids)
            };
            let c1 = 1 + rng.below(node_props.len() - 1);
            let c2 = 1 + rng.below(node_props.len() - 1);
            WriteStmt::MergeNode {
                table: nt,
                id,
                create: (c1, Lit::random(rng, &node_props[c1].ty)),
                matched: (c2, new_value(rng, &node_props[c2].ty)),
            }
        }
        _ => {
            let r = &schema.rels[rt];
            let existing: Vec<&RelRow> = model.rels.iter().filter(|x| x.table == rt).collect();
            let (src, dst, w) = if !existing.is_empty() && rng.chance(0.5) {
                let e = *rng.pick(&existing);
                let w = match &e.props[0] {
                    Lit::Int(w) if rng.chance(0.7) => *w,
                    _ => rng.range(-10, 30),
                };
                (e.src, e.dst, w)
            } else {
                (
                    some_id(rng, model, r.from),
                    some_id(rng, model, r.to),
                    rng.range(-10, 30),
                )
            };
            WriteStmt::MergeRel {
                table: rt,
                src,
                dst,
                w,
            }
        }
    }
}

/// Why a write sequence failed: the step, what was expected and seen.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteMismatch {
    pub step: usize,
    pub statement: String,
    pub expected: String,
    pub actual: String,
}

/// Runs the steps on the session, checking each against the model.
pub fn check(session: &mut Session, graph: &Graph, steps: &[Step]) -> Result<(), WriteMismatch> {
    let mut model = Model::new(graph);
    for (i, step) in steps.iter().enumerate() {
        session.set("threads", &step.threads.to_string());
        let text = step.stmt.render(&graph.schema);
        let out = session.write(&text);
        let expected = model.apply(&step.stmt);
        let mismatch = |expected: String, actual: String| WriteMismatch {
            step: i,
            statement: text.clone(),
            expected,
            actual,
        };
        match (&expected, &out) {
            (Ok(()), Outcome::Err { .. }) => {
                return Err(mismatch("the statement succeeds".into(), out.describe()));
            }
            (Err(why), Outcome::Ok(_)) => {
                return Err(mismatch(format!("an error ({why})"), "success".into()));
            }
            _ => {}
        }
        // Dump under the other thread count.
        session.set("threads", if step.threads == 1 { "2" } else { "1" });
        for (q, rows) in model.dump() {
            match session.run(&q) {
                Outcome::Ok(actual) => {
                    if let Some(diff) = compare(&rows, &actual.rows, Shape::Bag) {
                        return Err(mismatch(
                            format!("after it, {q} returns:\n{}", render(&rows, 40)),
                            format!("{}\n{diff}", render(&actual.rows, 40)),
                        ));
                    }
                }
                other => {
                    return Err(mismatch(format!("{q} succeeds"), other.describe()));
                }
            }
        }
    }
    session.set("threads", "2");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_detach_delete_drops_incident_rels() {
        let g = Graph::generate(&mut Rng::new(11));
        let mut m = Model::new(&g);
        let r = g.rels[0].clone();
        let from = g.schema.rels[r.table].from;
        let stmt = WriteStmt::DeleteNode {
            table: from,
            cond: Cond::Cmp(0, "=", Lit::Int(r.src)),
            detach: false,
        };
        assert!(
            m.apply(&stmt).is_err(),
            "DELETE of a node with rels must fail"
        );
        let stmt = WriteStmt::DeleteNode {
            table: from,
            cond: Cond::Cmp(0, "=", Lit::Int(r.src)),
            detach: true,
        };
        m.apply(&stmt).expect("detach delete");
        assert!(!m.has_node(from, r.src));
        assert!(!m.has_rels(from, r.src));
    }

    #[test]
    fn generation_is_deterministic() {
        let g = Graph::generate(&mut Rng::new(12));
        let a = generate(&mut Rng::new(5), &g, 20);
        let b = generate(&mut Rng::new(5), &g, 20);
        assert_eq!(a, b);
        let texts: Vec<String> = a.iter().map(|s| s.stmt.render(&g.schema)).collect();
        assert!(texts.iter().all(|t| !t.is_empty()));
    }

    #[test]
    fn null_comparisons_select_nothing() {
        let n = NodeRow {
            table: 0,
            id: 1,
            props: vec![Lit::Null],
        };
        assert_eq!(
            eval_cond(&Cond::Cmp(1, "=", Lit::Int(1)), |c| n.col(c)),
            None
        );
        assert_eq!(eval_cond(&Cond::IsNull(1), |c| n.col(c)), Some(true));
    }
}
