//! The random schema a case runs on, the value types the generators reason
//! about, and literal values (the data, the write model and query constants).

use std::fmt;

use crate::rng::Rng;

/// The types generated expressions have. Lists are the only nested type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ty {
    Int,
    Dbl,
    Str,
    Bool,
    List(Box<Ty>),
}

impl Ty {
    pub fn is_numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Dbl)
    }

    pub fn ddl(&self) -> &'static str {
        match self {
            Ty::Int => "INT64",
            Ty::Dbl => "DOUBLE",
            Ty::Str => "STRING",
            Ty::Bool => "BOOLEAN",
            Ty::List(_) => "INT64[]",
        }
    }
}

/// A property column: name and scalar type.
#[derive(Debug, Clone, PartialEq)]
pub struct Prop {
    pub name: String,
    pub ty: Ty,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeTable {
    pub name: String,
    /// `id INT64` (the primary key) first, then the others.
    pub props: Vec<Prop>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RelTable {
    pub name: String,
    pub from: usize,
    pub to: usize,
    pub props: Vec<Prop>,
}

/// Node tables `L0..`, rel tables `R0..`. Every node table has the common
/// properties `id, a, b, c, d`; every rel table has `w, s`; some tables have
/// one more of their own, which queries only use on a variable whose label
/// they wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub nodes: Vec<NodeTable>,
    pub rels: Vec<RelTable>,
}

fn prop(name: &str, ty: Ty) -> Prop {
    Prop {
        name: name.to_string(),
        ty,
    }
}

/// The properties every node table has (after `id`).
pub fn common_node_props() -> Vec<Prop> {
    vec![
        prop("id", Ty::Int),
        prop("a", Ty::Int),
        prop("b", Ty::Str),
        prop("c", Ty::Dbl),
        prop("d", Ty::Bool),
    ]
}

/// The properties every rel table has.
pub fn common_rel_props() -> Vec<Prop> {
    vec![prop("w", Ty::Int), prop("s", Ty::Str)]
}

impl Schema {
    pub fn generate(rng: &mut Rng) -> Schema {
        let n_nodes = if rng.chance(0.5) { 2 } else { 3 };
        let extras = [Ty::Int, Ty::Str, Ty::Dbl, Ty::Bool];
        let nodes = (0..n_nodes)
            .map(|i| {
                let mut props = common_node_props();
                if rng.chance(0.5) {
                    props.push(prop(&format!("x{i}"), rng.pick(&extras).clone()));
                }
                NodeTable {
                    name: format!("L{i}"),
                    props,
                }
            })
            .collect();
        // A table between two labels, a table from L0 to itself (self loops),
        // one back from the last label, and sometimes a second self table.
        let last = n_nodes - 1;
        let mut pairs = vec![(0, 1), (0, 0), (last, 0)];
        if rng.chance(0.5) {
            pairs.push((last, last));
        }
        if n_nodes == 3 && rng.chance(0.5) {
            pairs.push((1, 2));
        }
        let rels = pairs
            .into_iter()
            .enumerate()
            .map(|(i, (from, to))| {
                let mut props = common_rel_props();
                if rng.chance(0.4) {
                    props.push(prop("f", Ty::Dbl));
                }
                RelTable {
                    name: format!("R{i}"),
                    from,
                    to,
                    props,
                }
            })
            .collect();
        Schema { nodes, rels }
    }

    pub fn ddl(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in &self.nodes {
            let cols: Vec<String> = t
                .props
                .iter()
                .map(|p| format!("{} {}", p.name, p.ty.ddl()))
                .collect();
            out.push(format!(
                "CREATE NODE TABLE {}({}, PRIMARY KEY(id))",
                t.name,
                cols.join(", ")
            ));
        }
        for r in &self.rels {
            let mut cols = vec![format!(
                "FROM {} TO {}",
                self.nodes[r.from].name, self.nodes[r.to].name
            )];
            cols.extend(r.props.iter().map(|p| format!("{} {}", p.name, p.ty.ddl())));
            out.push(format!("CREATE REL TABLE {}({})", r.name, cols.join(", ")));
        }
        out
    }
}

/// A constant value: graph data, the write model's state, query literals.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Null,
    Int(i64),
    Dbl(f64),
    Str(String),
    Bool(bool),
}

impl fmt::Display for Lit {
    /// The Cypher literal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lit::Null => write!(f, "NULL"),
            Lit::Int(v) => write!(f, "{v}"),
            Lit::Dbl(v) => write!(f, "{v:?}"),
            Lit::Str(s) => write!(f, "'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
            Lit::Bool(b) => write!(f, "{}", if *b { "true" } else { "false" }),
        }
    }
}

/// Strings drawn from a small alphabet so that equalities, prefixes and
/// ordering ties happen often.
pub const STRINGS: &[&str] = &["", "a", "b", "ab", "ba", "abc", "B", "x y", "aa", "bab"];

/// Doubles that are exact in binary, so sums in any order agree.
pub const DOUBLES: &[f64] = &[-2.5, -1.0, 0.0, 0.25, 0.5, 1.5, 2.0, 3.75, 10.125, -0.5];

impl Lit {
    /// A random value of `ty` (not NULL).
    pub fn random(rng: &mut Rng, ty: &Ty) -> Lit {
        match ty {
            Ty::Int => Lit::Int(rng.range(-10, 30)),
            Ty::Dbl => Lit::Dbl(*rng.pick(DOUBLES)),
            Ty::Str => Lit::Str(rng.pick(STRINGS).to_string()),
            Ty::Bool => Lit::Bool(rng.chance(0.5)),
            Ty::List(_) => Lit::Null,
        }
    }

    /// A random value of `ty`, NULL with probability `null_p`.
    pub fn random_or_null(rng: &mut Rng, ty: &Ty, null_p: f64) -> Lit {
        if rng.chance(null_p) {
            Lit::Null
        } else {
            Lit::random(rng, ty)
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Lit::Null)
    }
}
