//! Random graph data over a [`Schema`]: small node and rel sets with about a
//! fifth of the properties NULL, self loops, parallel rels and a few hubs;
//! rendered as the script that loads it (DDL, then CREATE statements).

use crate::rng::Rng;
use crate::schema::{Lit, Schema};

/// One node: its table, primary key and the values of the table's
/// properties after `id` (in declaration order).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRow {
    pub table: usize,
    pub id: i64,
    pub props: Vec<Lit>,
}

/// One rel: its table, the primary keys of its endpoints (the tables are
/// the rel table's FROM and TO) and its property values.
#[derive(Debug, Clone, PartialEq)]
pub struct RelRow {
    pub table: usize,
    pub src: i64,
    pub dst: i64,
    pub props: Vec<Lit>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    pub schema: Schema,
    pub nodes: Vec<NodeRow>,
    pub rels: Vec<RelRow>,
    /// Leave NULL properties out of CREATE maps instead of writing `NULL`.
    pub omit_nulls: bool,
    /// Nodes per CREATE statement.
    pub batch: usize,
    /// Run CHECKPOINT after loading.
    pub checkpoint: bool,
}

/// The fraction of NULL property values.
pub const NULL_P: f64 = 0.2;

impl Graph {
    pub fn generate(rng: &mut Rng) -> Graph {
        let schema = Schema::generate(rng);
        let total_nodes = rng.range(10, 60) as usize;
        let mut nodes = Vec::new();
        let mut per_table: Vec<Vec<i64>> = vec![Vec::new(); schema.nodes.len()];
        for i in 0..total_nodes {
            // Every table gets a node before any gets a second.
            let table = if i < schema.nodes.len() {
                i
            } else {
                rng.below(schema.nodes.len())
            };
            let id = loop {
                let id = rng.range(0, 199);
                if !per_table[table].contains(&id) {
                    break id;
                }
            };
            per_table[table].push(id);
            let props = schema.nodes[table].props[1..]
                .iter()
                .map(|p| Lit::random_or_null(rng, &p.ty, NULL_P))
                .collect();
            nodes.push(NodeRow { table, id, props });
        }
        // At most three rels per node: denser graphs make var-length and
        // multi-hop results explode past the timeout.
        let total_rels = (rng.range(20, 150) as usize).min(3 * total_nodes);
        let mut rels: Vec<RelRow> = Vec::new();
        for _ in 0..total_rels {
            let table = rng.below(schema.rels.len());
            let rt = &schema.rels[table];
            let (src, dst) = if !rels.is_empty() && rng.chance(0.08) {
                // A parallel rel: the endpoints of an earlier one of this table.
                match rels.iter().rev().find(|r| r.table == table) {
                    Some(r) => (r.src, r.dst),
                    None => (
                        skewed(rng, &per_table[rt.from]),
                        skewed(rng, &per_table[rt.to]),
                    ),
                }
            } else {
                let src = skewed(rng, &per_table[rt.from]);
                let dst = if rt.from == rt.to && rng.chance(0.1) {
                    src
                } else {
                    skewed(rng, &per_table[rt.to])
                };
                (src, dst)
            };
            let props = rt
                .props
                .iter()
                .map(|p| Lit::random_or_null(rng, &p.ty, NULL_P))
                .collect();
            rels.push(RelRow {
                table,
                src,
                dst,
                props,
            });
        }
        Graph {
            schema,
            nodes,
            rels,
            omit_nulls: rng.chance(0.3),
            batch: *rng.pick(&[1, 5, 20]),
            checkpoint: rng.chance(0.3),
        }
    }

    /// The statements that create the schema and load the data.
    pub fn script(&self) -> Vec<String> {
        let mut out = self.schema.ddl();
        let mut pending: Vec<String> = Vec::new();
        for n in &self.nodes {
            pending.push(self.node_pattern(n));
            if pending.len() >= self.batch.max(1) {
                out.push(format!("CREATE {}", pending.join(", ")));
                pending.clear();
            }
        }
        if !pending.is_empty() {
            out.push(format!("CREATE {}", pending.join(", ")));
        }
        for r in &self.rels {
            out.push(self.rel_statement(r));
        }
        if self.checkpoint {
            out.push("CHECKPOINT".to_string());
        }
        out
    }

    fn node_pattern(&self, n: &NodeRow) -> String {
        let t = &self.schema.nodes[n.table];
        let mut fields = vec![format!("id: {}", n.id)];
        for (p, v) in t.props[1..].iter().zip(&n.props) {
            if !(self.omit_nulls && v.is_null()) {
                fields.push(format!("{}: {v}", p.name));
            }
        }
        format!("(:{} {{{}}})", t.name, fields.join(", "))
    }

    pub fn rel_statement(&self, r: &RelRow) -> String {
        let rt = &self.schema.rels[r.table];
        let mut fields = Vec::new();
        for (p, v) in rt.props.iter().zip(&r.props) {
            if !(self.omit_nulls && v.is_null()) {
                fields.push(format!("{}: {v}", p.name));
            }
        }
        let map = if fields.is_empty() {
            String::new()
        } else {
            format!(" {{{}}}", fields.join(", "))
        };
        format!(
            "MATCH (x:{} {{id: {}}}), (y:{} {{id: {}}}) CREATE (x)-[:{}{map}]->(y)",
            self.schema.nodes[rt.from].name, r.src, self.schema.nodes[rt.to].name, r.dst, rt.name
        )
    }

    /// The graph with only the nodes and rels whose flags are set; a rel
    /// whose endpoint is dropped goes too.
    pub fn retain(&self, keep_nodes: &[bool], keep_rels: &[bool]) -> Graph {
        let nodes: Vec<NodeRow> = self
            .nodes
            .iter()
            .zip(keep_nodes)
            .filter(|(_, k)| **k)
            .map(|(n, _)| n.clone())
            .collect();
        let has = |table: usize, id: i64| nodes.iter().any(|n| n.table == table && n.id == id);
        let rels = self
            .rels
            .iter()
            .zip(keep_rels)
            .filter(|(r, k)| {
                let rt = &self.schema.rels[r.table];
                **k && has(rt.from, r.src) && has(rt.to, r.dst)
            })
            .map(|(r, _)| r.clone())
            .collect();
        Graph {
            nodes,
            rels,
            ..self.clone()
        }
    }

    /// The primary keys of one table's nodes.
    pub fn ids(&self, table: usize) -> Vec<i64> {
        self.nodes
            .iter()
            .filter(|n| n.table == table)
            .map(|n| n.id)
            .collect()
    }
}

/// A key biased towards the front of the list: the first few nodes of a
/// table become hubs.
fn skewed(rng: &mut Rng, ids: &[i64]) -> i64 {
    let u = rng.below(1 << 16) as f64 / (1u64 << 16) as f64;
    let i = ((u * u) * ids.len() as f64) as usize;
    ids[i.min(ids.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_sized() {
        for seed in 0..20 {
            let a = Graph::generate(&mut Rng::new(seed));
            let b = Graph::generate(&mut Rng::new(seed));
            assert_eq!(a, b);
            assert!((10..=60).contains(&a.nodes.len()));
            assert!((20..=150).contains(&a.rels.len()) && a.rels.len() <= 3 * a.nodes.len());
            let nulls = a
                .nodes
                .iter()
                .flat_map(|n| &n.props)
                .filter(|v| v.is_null())
                .count();
            assert!(nulls > 0, "seed {seed}: no NULLs");
        }
    }

    #[test]
    fn retain_drops_dangling_rels() {
        let g = Graph::generate(&mut Rng::new(3));
        let keep_nodes: Vec<bool> = (0..g.nodes.len()).map(|i| i % 2 == 0).collect();
        let keep_rels = vec![true; g.rels.len()];
        let small = g.retain(&keep_nodes, &keep_rels);
        for r in &small.rels {
            let rt = &small.schema.rels[r.table];
            assert!(small.ids(rt.from).contains(&r.src));
            assert!(small.ids(rt.to).contains(&r.dst));
        }
    }
}
