//! Named benchmark suites: DDL, bulk loads and query sets, written once in
//! Cypher and run unchanged on every engine.
//!
//! Query text may hold placeholders in braces that the runner binds before
//! running (see [`bind`]): `{DATA}` is the data directory; any other
//! `{NAME}` is looked up in the data set's parameters (`meta.json` key
//! `params`, plus the values [`derived_params`] computes from the node
//! count). A query whose placeholder has no value is reported as an error.

use std::collections::BTreeMap;

use crate::rng::mix;

/// What a query scans, for throughput figures (edges/s per core).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scans {
    /// Every edge of the data set once.
    AllEdges,
    Unknown,
}

/// Which generated data set a suite runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataset {
    /// `persons.csv` + `knows.csv` from `gen rmat` / `gen er`.
    PersonKnows,
    /// The LDBC-SNB-like network of `gen social`.
    Social,
}

impl Dataset {
    /// Files that must exist in the data directory.
    pub fn required_files(self) -> &'static [&'static str] {
        match self {
            Dataset::PersonKnows => &["persons.csv", "knows.csv"],
            Dataset::Social => &[
                "person.csv",
                "knows.csv",
                "post.csv",
                "comment.csv",
                "post_hascreator.csv",
                "comment_hascreator.csv",
                "comment_replyof.csv",
                "likes.csv",
            ],
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Dataset::PersonKnows => "person-knows (gen rmat / gen er)",
            Dataset::Social => "social (gen social)",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Query {
    pub name: &'static str,
    pub cypher: &'static str,
    pub scans: Scans,
}

#[derive(Clone, Debug)]
pub struct Load {
    /// Reported name, e.g. "COPY Person".
    pub name: &'static str,
    /// Cypher with `{DATA}` standing for the data directory.
    pub cypher: &'static str,
}

#[derive(Clone, Debug)]
pub struct Suite {
    pub name: &'static str,
    pub description: &'static str,
    pub dataset: Dataset,
    pub ddl: &'static [&'static str],
    pub loads: &'static [Load],
    pub queries: &'static [Query],
}

const PERSON_KNOWS_DDL: &[&str] = &[
    "CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id))",
    "CREATE REL TABLE Knows(FROM Person TO Person, since INT32, weight DOUBLE)",
];

const PERSON_KNOWS_LOADS: &[Load] = &[
    Load {
        name: "COPY Person",
        cypher: "COPY Person FROM '{DATA}/persons.csv' (HEADER=true)",
    },
    Load {
        name: "COPY Knows",
        cypher: "COPY Knows FROM '{DATA}/knows.csv' (HEADER=true)",
    },
];

const fn q(name: &'static str, cypher: &'static str) -> Query {
    Query {
        name,
        cypher,
        scans: Scans::Unknown,
    }
}

const fn q_all(name: &'static str, cypher: &'static str) -> Query {
    Query {
        name,
        cypher,
        scans: Scans::AllEdges,
    }
}

/// Seed 001 (Kùzu, CIDR 2023) §4.2–4.3 micro-benchmarks on Person/Knows.
///
/// Selectivity predicates are on `age`, which the generators draw uniformly
/// from 18..=80 independently of the id, so a predicate selects the same
/// fraction of nodes AND (in expectation) of edges. A predicate on `id`
/// (the paper's form) would select the R-MAT hubs, whose ids are the lowest.
/// `age = 18` keeps 1/63 ≈ 1.6 %, `age < 24` 6/63 ≈ 9.5 %, no predicate 100 %.
/// As in the paper, the 2-hop and 3-hop predicates sit on the second node.
const MICRO_QUERIES: &[Query] = &[
    q("1hop-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person) WHERE a.age = 18 RETURN count(*)"),
    q("1hop-sel9.5", "MATCH (a:Person)-[:Knows]->(b:Person) WHERE a.age < 24 RETURN count(*)"),
    q_all("1hop-sel100", "MATCH (a:Person)-[:Knows]->(b:Person) RETURN count(*)"),
    q("1hop-min-sel9.5", "MATCH (a:Person)-[:Knows]->(b:Person) WHERE a.age < 24 RETURN min(a.id), min(a.age), min(b.id), min(b.age)"),
    q("2hop-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person) WHERE b.age = 18 RETURN count(*)"),
    q("2hop-sel9.5", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person) WHERE b.age < 24 RETURN count(*)"),
    q("2hop-sel100", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person) RETURN count(*)"),
    q("2hop-filter-agg", "MATCH (a:Person)-[:Knows]->(b:Person)-[k:Knows]->(c:Person) WHERE b.age < 24 AND c.age > 60 RETURN count(*), min(a.age), max(c.id), sum(k.since)"),
    q("3hop-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person) WHERE b.age = 18 RETURN count(*)"),
    q("3hop-sel9.5", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person) WHERE b.age < 24 RETURN count(*)"),
    q("3hop-sel100", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person) RETURN count(*)"),
    q("triangle-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(a) WHERE a.age = 18 RETURN count(*)"),
    q("triangle-sel100", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(a) RETURN count(*)"),
    q("4cycle-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person)-[:Knows]->(a) WHERE a.age = 18 RETURN count(*)"),
    q("4cycle-sel100", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person)-[:Knows]->(a) RETURN count(*)"),
    q("4clique-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person), (a)-[:Knows]->(c), (a)-[:Knows]->(d), (b)-[:Knows]->(d) WHERE a.age = 18 RETURN count(*)"),
];

/// Seed 000 (recursive query parallelism, VLDB 2025) workloads and the seed
/// 003 variable-length query, in Kùzu's recursive syntax. Sources are
/// `{SRC1}`, `{SRC8}`, `{SRC64}`: 1, 8 and 64 ids drawn from the seed
/// (see [`derived_params`]).
const RECURSIVE_QUERIES: &[Query] = &[
    q("sp-count-1src", "MATCH (a:Person)-[:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*)"),
    q("sp-count-8src", "MATCH (a:Person)-[:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*)"),
    q("sp-count-64src", "MATCH (a:Person)-[:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC64} RETURN count(*)"),
    q("sp-lengths-1src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*), sum(length(e))"),
    q("sp-lengths-8src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*), sum(length(e))"),
    q("sp-lengths-64src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC64} RETURN count(*), sum(length(e))"),
    q("sp-paths-1src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*), sum(size(nodes(e)))"),
    q("sp-paths-8src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*), sum(size(nodes(e)))"),
    q("sp-paths-64src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC64} RETURN count(*), sum(size(nodes(e)))"),
    q("varlen-1..3-1src", "MATCH (a:Person)-[:Knows*1..3]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*)"),
    q("varlen-1..3-8src", "MATCH (a:Person)-[:Knows*1..3]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*)"),
    q("varlen-1..3-64src", "MATCH (a:Person)-[:Knows*1..3]->(b:Person) WHERE a.id IN {SRC64} RETURN count(*)"),
];

const SOCIAL_DDL: &[&str] = &[
    "CREATE NODE TABLE Person(id INT64, firstName STRING, lastName STRING, gender STRING, birthday DATE, creationDate TIMESTAMP, PRIMARY KEY(id))",
    "CREATE NODE TABLE Post(id INT64, creationDate TIMESTAMP, content STRING, length INT32, PRIMARY KEY(id))",
    "CREATE NODE TABLE Comment(id INT64, creationDate TIMESTAMP, content STRING, length INT32, PRIMARY KEY(id))",
    "CREATE REL TABLE KNOWS(FROM Person TO Person, creationDate TIMESTAMP)",
    "CREATE REL TABLE POST_HAS_CREATOR(FROM Post TO Person)",
    "CREATE REL TABLE COMMENT_HAS_CREATOR(FROM Comment TO Person)",
    "CREATE REL TABLE REPLY_OF(FROM Comment TO Post)",
    "CREATE REL TABLE LIKES(FROM Person TO Post, creationDate TIMESTAMP)",
];

const SOCIAL_LOADS: &[Load] = &[
    Load {
        name: "COPY Person",
        cypher: "COPY Person FROM '{DATA}/person.csv' (HEADER=true)",
    },
    Load {
        name: "COPY Post",
        cypher: "COPY Post FROM '{DATA}/post.csv' (HEADER=true)",
    },
    Load {
        name: "COPY Comment",
        cypher: "COPY Comment FROM '{DATA}/comment.csv' (HEADER=true)",
    },
    Load {
        name: "COPY KNOWS",
        cypher: "COPY KNOWS FROM '{DATA}/knows.csv' (HEADER=true)",
    },
    Load {
        name: "COPY POST_HAS_CREATOR",
        cypher: "COPY POST_HAS_CREATOR FROM '{DATA}/post_hascreator.csv' (HEADER=true)",
    },
    Load {
        name: "COPY COMMENT_HAS_CREATOR",
        cypher: "COPY COMMENT_HAS_CREATOR FROM '{DATA}/comment_hascreator.csv' (HEADER=true)",
    },
    Load {
        name: "COPY REPLY_OF",
        cypher: "COPY REPLY_OF FROM '{DATA}/comment_replyof.csv' (HEADER=true)",
    },
    Load {
        name: "COPY LIKES",
        cypher: "COPY LIKES FROM '{DATA}/likes.csv' (HEADER=true)",
    },
];

/// LDBC SNB interactive short reads IS1–IS7, adapted to the generated
/// schema (no Forum; Post and Comment are separate labels, so IS2/IS4/IS5
/// come in a Post and a Comment form). Parameters come from `gen social`'s
/// `meta.json`: `{PERSON}` is a high-degree person, `{POST}` a post with
/// replies, `{COMMENT}` a comment.
const SOCIAL_QUERIES: &[Query] = &[
    q("IS1-profile", "MATCH (p:Person) WHERE p.id = {PERSON} RETURN p.firstName, p.lastName, p.birthday, p.creationDate, p.gender"),
    q("IS2-recent-posts", "MATCH (p:Person)<-[:POST_HAS_CREATOR]-(m:Post) WHERE p.id = {PERSON} RETURN m.id, m.content, m.creationDate ORDER BY m.creationDate DESC, m.id DESC LIMIT 10"),
    q("IS2-recent-comments", "MATCH (p:Person)<-[:COMMENT_HAS_CREATOR]-(c:Comment)-[:REPLY_OF]->(m:Post)-[:POST_HAS_CREATOR]->(o:Person) WHERE p.id = {PERSON} RETURN c.id, c.content, c.creationDate, m.id, o.id, o.firstName, o.lastName ORDER BY c.creationDate DESC, c.id DESC LIMIT 10"),
    q("IS3-friends", "MATCH (p:Person)-[k:KNOWS]-(f:Person) WHERE p.id = {PERSON} RETURN f.id, f.firstName, f.lastName, k.creationDate ORDER BY k.creationDate DESC, f.id ASC"),
    q("IS3-friends-out-count", "MATCH (p:Person)-[k:KNOWS]->(f:Person) WHERE p.id = {PERSON} RETURN count(*), min(f.id), max(f.id)"),
    q("IS4-post-content", "MATCH (m:Post) WHERE m.id = {POST} RETURN m.creationDate, m.content"),
    q("IS4-comment-content", "MATCH (m:Comment) WHERE m.id = {COMMENT} RETURN m.creationDate, m.content"),
    q("IS5-post-creator", "MATCH (m:Post)-[:POST_HAS_CREATOR]->(p:Person) WHERE m.id = {POST} RETURN p.id, p.firstName, p.lastName"),
    q("IS5-comment-creator", "MATCH (m:Comment)-[:COMMENT_HAS_CREATOR]->(p:Person) WHERE m.id = {COMMENT} RETURN p.id, p.firstName, p.lastName"),
    q("IS6-original-post-creator", "MATCH (c:Comment)-[:REPLY_OF]->(m:Post)-[:POST_HAS_CREATOR]->(p:Person) WHERE c.id = {COMMENT} RETURN m.id, p.id, p.firstName, p.lastName"),
    q("IS7-replies", "MATCH (m:Post)<-[:REPLY_OF]-(c:Comment)-[:COMMENT_HAS_CREATOR]->(p:Person) WHERE m.id = {POST} RETURN c.id, c.content, c.creationDate, p.id, p.firstName, p.lastName ORDER BY c.creationDate DESC, p.id ASC"),
    q("IS7-replies-unordered", "MATCH (m:Post)<-[:REPLY_OF]-(c:Comment)-[:COMMENT_HAS_CREATOR]->(p:Person) WHERE m.id = {POST} RETURN c.id, c.length, p.id, p.firstName"),
    q("likes-per-gender", "MATCH (p:Person)-[:LIKES]->(m:Post)-[:POST_HAS_CREATOR]->(c:Person) WHERE p.gender = 'female' RETURN count(*), sum(m.length), min(c.id)"),
    q("friends-of-friends", "MATCH (p:Person)-[:KNOWS]->(f:Person)-[:KNOWS]->(ff:Person) WHERE p.id = {PERSON} RETURN count(*), count(DISTINCT ff.id)"),
];

pub const SUITES: &[Suite] = &[
    Suite {
        name: "foundation",
        description: "Bulk load of a Person/Knows graph from CSV, then one-hop scans with a node filter and aggregates.",
        dataset: Dataset::PersonKnows,
        ddl: PERSON_KNOWS_DDL,
        loads: PERSON_KNOWS_LOADS,
        queries: &[
            q_all("one-hop-count", "MATCH (a:Person)-[:Knows]->(b:Person) RETURN count(*)"),
            q_all("one-hop-filter-agg", "MATCH (a:Person)-[k:Knows]->(b:Person) WHERE a.age > 30 RETURN count(*), sum(k.weight)"),
        ],
    },
    Suite {
        name: "micro",
        description: "Seed 001 (Kùzu, CIDR 2023) micro-benchmarks: 1/2/3-hop counts at node selectivities ≈1.6 %, ≈9.5 % and 100 % (predicate on `age`, uniform and independent of degree; on the 2nd node for 2/3 hops as in the paper), a filtered 2-hop aggregate, triangles, 4-cycles and 4-cliques.",
        dataset: Dataset::PersonKnows,
        ddl: PERSON_KNOWS_DDL,
        loads: PERSON_KNOWS_LOADS,
        queries: MICRO_QUERIES,
    },
    Suite {
        name: "recursive",
        description: "Seed 000 recursive workloads (shortest-path lengths and paths from 1, 8 and 64 sources, up to 30 hops) and the seed 003 variable-length query (1..3 hops), in Kùzu's recursive-pattern syntax.",
        dataset: Dataset::PersonKnows,
        ddl: PERSON_KNOWS_DDL,
        loads: PERSON_KNOWS_LOADS,
        queries: RECURSIVE_QUERIES,
    },
    Suite {
        name: "social",
        description: "LDBC-SNB-like social network (gen social): bulk load, then the interactive short reads IS1–IS7 adapted to the schema, plus two small aggregates.",
        dataset: Dataset::Social,
        ddl: SOCIAL_DDL,
        loads: SOCIAL_LOADS,
        queries: SOCIAL_QUERIES,
    },
];

pub fn get(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.name == name)
}

/// `{DATA}` replaced by the data directory (forward slashes, quotes escaped).
pub fn with_data_dir(cypher: &str, data_dir: &str) -> String {
    cypher.replace("{DATA}", &data_dir.replace('\\', "/").replace('\'', "\\'"))
}

/// Ids of `k` recursive-query sources out of `nodes`, a pure function of
/// `k` and `nodes` (distinct while `k <= nodes`).
pub fn sources(nodes: u64, k: u64) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::with_capacity(k as usize);
    let mut i = 0u64;
    while (out.len() as u64) < k.min(nodes) {
        let id = mix(0x5352_4353, i) % nodes.max(1);
        if !out.contains(&id) {
            out.push(id);
        }
        i += 1;
    }
    out
}

/// Parameters every data set has, computed from its node count:
/// `SRC1`, `SRC8`, `SRC64` (Cypher lists of source ids).
pub fn derived_params(nodes: u64) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for k in [1u64, 8, 64] {
        let ids: Vec<String> = sources(nodes, k).iter().map(u64::to_string).collect();
        m.insert(format!("SRC{k}"), format!("[{}]", ids.join(",")));
    }
    m
}

/// Binds `{DATA}` and `{NAME}` placeholders. `Err` names the first
/// placeholder without a value.
pub fn bind(
    cypher: &str,
    data_dir: &str,
    params: &BTreeMap<String, String>,
) -> Result<String, String> {
    let text = with_data_dir(cypher, data_dir);
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}');
        let name = close.map(|c| &after[..c]);
        match name {
            Some(n)
                if !n.is_empty()
                    && n.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') =>
            {
                let v = params
                    .get(n)
                    .ok_or_else(|| format!("no value for placeholder {{{n}}} in this data set"))?;
                out.push_str(v);
                rest = &after[n.len() + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_placeholders() {
        let mut p = BTreeMap::new();
        p.insert("PERSON".to_string(), "42".to_string());
        let s = bind("MATCH (p) WHERE p.id = {PERSON} RETURN {a: 1}", "/d", &p).unwrap();
        assert_eq!(s, "MATCH (p) WHERE p.id = 42 RETURN {a: 1}");
        assert!(bind("{POST}", "/d", &p).is_err());
        assert_eq!(bind("'{DATA}/x'", "/d", &p).unwrap(), "'/d/x'");
    }

    #[test]
    fn sources_are_distinct_and_deterministic() {
        let a = sources(1000, 64);
        assert_eq!(a.len(), 64);
        assert_eq!(a, sources(1000, 64));
        let mut b = a.clone();
        b.sort();
        b.dedup();
        assert_eq!(b.len(), 64);
        assert_eq!(sources(3, 8).len(), 3);
        assert!(derived_params(100)["SRC1"].starts_with('['));
    }

    #[test]
    fn suite_names_unique() {
        for (i, s) in SUITES.iter().enumerate() {
            assert!(SUITES[i + 1..].iter().all(|t| t.name != s.name));
            for (j, q) in s.queries.iter().enumerate() {
                assert!(
                    s.queries[j + 1..].iter().all(|r| r.name != q.name),
                    "{}",
                    q.name
                );
            }
        }
    }
}
