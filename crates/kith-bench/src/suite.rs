//! Named benchmark suites: DDL, bulk loads and query sets, written once in
//! Cypher and run unchanged on every engine.
//!
//! Query text may hold placeholders in braces that the runner binds before
//! running (see [`bind`]): `{DATA}` is the data directory; any other
//! `{NAME}` is looked up in the data set's parameters (`meta.json` key
//! `params`, plus the values [`derived_params`] computes from the node
//! count). A query whose placeholder has no value is reported as an error.

use std::collections::BTreeMap;

use crate::networkit::{Nk, NkQuery, NkWalk, NK_MAX_HOPS};
use crate::parquet_out::{Col, FileSpec};
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
    /// `persons.csv` + `knows.csv` from `gen rmat` (or `gen er`).
    PersonKnows,
    /// The same files from `gen er` (for suites that need a graph without
    /// hubs).
    Er,
    /// The LDBC-SNB-like network of `gen social`.
    Social,
    /// Seed 004's next-neighbours graph of `gen nn50`.
    Nn50,
}

const PERSON_KNOWS_FILES: &[FileSpec] = &[
    FileSpec {
        stem: "persons",
        columns: &[("id", Col::I64), ("name", Col::Str), ("age", Col::I32)],
    },
    FileSpec {
        stem: "knows",
        columns: &[
            ("from", Col::I64),
            ("to", Col::I64),
            ("since", Col::I32),
            ("weight", Col::F64),
        ],
    },
];

const MESSAGE_COLUMNS: &[(&str, Col)] = &[
    ("id", Col::I64),
    ("creationDate", Col::Timestamp),
    ("content", Col::Str),
    ("length", Col::I32),
];
const FROM_TO: &[(&str, Col)] = &[("from", Col::I64), ("to", Col::I64)];
const FROM_TO_DATE: &[(&str, Col)] = &[
    ("from", Col::I64),
    ("to", Col::I64),
    ("creationDate", Col::Timestamp),
];

const SOCIAL_FILES: &[FileSpec] = &[
    FileSpec {
        stem: "person",
        columns: &[
            ("id", Col::I64),
            ("firstName", Col::Str),
            ("lastName", Col::Str),
            ("gender", Col::Str),
            ("birthday", Col::Date),
            ("creationDate", Col::Timestamp),
        ],
    },
    FileSpec {
        stem: "knows",
        columns: FROM_TO_DATE,
    },
    FileSpec {
        stem: "post",
        columns: MESSAGE_COLUMNS,
    },
    FileSpec {
        stem: "comment",
        columns: MESSAGE_COLUMNS,
    },
    FileSpec {
        stem: "post_hascreator",
        columns: FROM_TO,
    },
    FileSpec {
        stem: "comment_hascreator",
        columns: FROM_TO,
    },
    FileSpec {
        stem: "comment_replyof",
        columns: FROM_TO,
    },
    FileSpec {
        stem: "likes",
        columns: FROM_TO_DATE,
    },
];

const NN50_NODE_COLUMNS: &[(&str, Col)] = &[("id", Col::I64), ("idMod7", Col::I64)];

const NN50_FILES: &[FileSpec] = &[
    FileSpec {
        stem: "nodes",
        columns: NN50_NODE_COLUMNS,
    },
    FileSpec {
        stem: "nodes10",
        columns: NN50_NODE_COLUMNS,
    },
    FileSpec {
        stem: "edges",
        columns: FROM_TO,
    },
];

impl Dataset {
    /// The files of the data set with their column types (the DDL's).
    pub fn files(self) -> &'static [FileSpec] {
        match self {
            Dataset::PersonKnows | Dataset::Er => PERSON_KNOWS_FILES,
            Dataset::Social => SOCIAL_FILES,
            Dataset::Nn50 => NN50_FILES,
        }
    }
    /// Files that must exist in the data directory to load it from `format`.
    pub fn required_files(self, format: LoadFormat) -> Vec<String> {
        self.files()
            .iter()
            .map(|f| format!("{}.{}", f.stem, format.ext()))
            .collect()
    }
    pub fn name(self) -> &'static str {
        match self {
            Dataset::PersonKnows => "person-knows (gen rmat / gen er)",
            Dataset::Er => "person-knows on an Erdős–Rényi graph (gen er)",
            Dataset::Social => "social (gen social)",
            Dataset::Nn50 => "nn50 (gen nn50)",
        }
    }
}

/// Which files the loads read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadFormat {
    Csv,
    Parquet,
}

impl LoadFormat {
    pub fn parse(s: &str) -> Option<LoadFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "csv" => Some(LoadFormat::Csv),
            "parquet" => Some(LoadFormat::Parquet),
            _ => None,
        }
    }
    pub fn ext(self) -> &'static str {
        match self {
            LoadFormat::Csv => "csv",
            LoadFormat::Parquet => "parquet",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Query {
    pub name: &'static str,
    pub cypher: &'static str,
    pub scans: Scans,
    /// The same query in SQL over the suite's `sql_ddl` tables (for the
    /// DuckDB reference); `None` where the suite has no SQL version.
    pub sql: Option<&'static str>,
    /// The same query as BFS runs (for the NetworKit reference); `None`
    /// where NetworKit has no equivalent.
    pub networkit: Option<NkQuery>,
}

impl Query {
    const fn sql(self, sql: &'static str) -> Query {
        Query {
            sql: Some(sql),
            ..self
        }
    }
    /// NetworKit's form: `op` over a BFS from each id of the list
    /// `sources` (the Cypher text's placeholder), walking `walk`, up to
    /// the suites' 30 hops.
    const fn networkit(self, op: Nk, walk: NkWalk, sources: &'static str) -> Query {
        Query {
            networkit: Some(NkQuery {
                op,
                walk,
                sources,
                max_hops: NK_MAX_HOPS,
            }),
            ..self
        }
    }
}

/// A bulk load: `COPY table FROM '{DATA}/file.csv' (HEADER=true)`, or the
/// `.parquet` file under `--load-format parquet`.
#[derive(Clone, Debug)]
pub struct Load {
    pub table: &'static str,
    /// File name without extension, in the data directory.
    pub file: &'static str,
}

impl Load {
    /// Reported name, e.g. "COPY Person".
    pub fn name(&self) -> String {
        format!("COPY {}", self.table)
    }
    /// The statement, with `{DATA}` standing for the data directory.
    /// The SQL form (DuckDB's COPY) of the load.
    pub fn sql(&self, format: LoadFormat) -> String {
        match format {
            LoadFormat::Csv => format!(
                "COPY {} FROM '{{DATA}}/{}.csv' (HEADER true)",
                self.table, self.file
            ),
            LoadFormat::Parquet => format!(
                "COPY {} FROM '{{DATA}}/{}.parquet' (FORMAT parquet)",
                self.table, self.file
            ),
        }
    }
    pub fn cypher(&self, format: LoadFormat) -> String {
        match format {
            LoadFormat::Csv => format!(
                "COPY {} FROM '{{DATA}}/{}.csv' (HEADER=true)",
                self.table, self.file
            ),
            LoadFormat::Parquet => {
                format!("COPY {} FROM '{{DATA}}/{}.parquet'", self.table, self.file)
            }
        }
    }
}

const fn load(table: &'static str, file: &'static str) -> Load {
    Load { table, file }
}

#[derive(Clone, Debug)]
pub struct Suite {
    pub name: &'static str,
    pub description: &'static str,
    pub dataset: Dataset,
    pub ddl: &'static [&'static str],
    pub loads: &'static [Load],
    pub queries: &'static [Query],
    /// SQL tables named like the node and rel tables, loaded by the same
    /// files (empty: the suite has no SQL version).
    pub sql_ddl: &'static [&'static str],
}

impl Suite {
    /// How the NetworKit reference walks this suite's graph (every query
    /// with a NetworKit form walks it the same way: the loads build one
    /// graph); `None` when no query has a NetworKit form.
    pub fn networkit_walk(&self) -> Option<NkWalk> {
        self.queries
            .iter()
            .find_map(|q| q.networkit.map(|n| n.walk))
    }
}

const PERSON_KNOWS_DDL: &[&str] = &[
    "CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id))",
    "CREATE REL TABLE Knows(FROM Person TO Person, since INT32, weight DOUBLE)",
];

/// SQL tables for the DuckDB reference (edge endpoints as `src`, `dst`).
const PERSON_KNOWS_SQL_DDL: &[&str] = &[
    "CREATE TABLE Person(id BIGINT PRIMARY KEY, name VARCHAR, age INTEGER)",
    "CREATE TABLE Knows(src BIGINT, dst BIGINT, since INTEGER, weight DOUBLE)",
];

const PERSON_KNOWS_LOADS: &[Load] = &[load("Person", "persons"), load("Knows", "knows")];

const fn q(name: &'static str, cypher: &'static str) -> Query {
    Query {
        name,
        cypher,
        scans: Scans::Unknown,
        sql: None,
        networkit: None,
    }
}

const fn q_all(name: &'static str, cypher: &'static str) -> Query {
    Query {
        name,
        cypher,
        scans: Scans::AllEdges,
        sql: None,
        networkit: None,
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
    q("1hop-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person) WHERE a.age = 18 RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Person a ON a.id = k1.src WHERE a.age = 18"),
    q("1hop-sel9.5", "MATCH (a:Person)-[:Knows]->(b:Person) WHERE a.age < 24 RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Person a ON a.id = k1.src WHERE a.age < 24"),
    q_all("1hop-sel100", "MATCH (a:Person)-[:Knows]->(b:Person) RETURN count(*)")
        .sql("SELECT count(*) FROM Knows"),
    q("1hop-min-sel9.5", "MATCH (a:Person)-[:Knows]->(b:Person) WHERE a.age < 24 RETURN min(a.id), min(a.age), min(b.id), min(b.age)")
        .sql("SELECT min(a.id), min(a.age), min(b.id), min(b.age) FROM Knows k1 JOIN Person a ON a.id = k1.src JOIN Person b ON b.id = k1.dst WHERE a.age < 24"),
    q("2hop-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person) WHERE b.age = 18 RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Person b ON b.id = k1.dst JOIN Knows k2 ON k2.src = b.id WHERE b.age = 18"),
    q("2hop-sel9.5", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person) WHERE b.age < 24 RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Person b ON b.id = k1.dst JOIN Knows k2 ON k2.src = b.id WHERE b.age < 24"),
    q("2hop-sel100", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person) RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Knows k2 ON k2.src = k1.dst"),
    q("2hop-filter-agg", "MATCH (a:Person)-[:Knows]->(b:Person)-[k:Knows]->(c:Person) WHERE b.age < 24 AND c.age > 60 RETURN count(*), min(a.age), max(c.id), sum(k.since)")
        .sql("SELECT count(*), min(a.age), max(c.id), sum(k2.since) FROM Knows k1 JOIN Person b ON b.id = k1.dst JOIN Knows k2 ON k2.src = b.id JOIN Person a ON a.id = k1.src JOIN Person c ON c.id = k2.dst WHERE b.age < 24 AND c.age > 60"),
    q("3hop-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person) WHERE b.age = 18 RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Person b ON b.id = k1.dst JOIN Knows k2 ON k2.src = b.id JOIN Knows k3 ON k3.src = k2.dst WHERE b.age = 18"),
    q("3hop-sel9.5", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person) WHERE b.age < 24 RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Person b ON b.id = k1.dst JOIN Knows k2 ON k2.src = b.id JOIN Knows k3 ON k3.src = k2.dst WHERE b.age < 24"),
    q("3hop-sel100", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person) RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Knows k2 ON k2.src = k1.dst JOIN Knows k3 ON k3.src = k2.dst"),
    q("triangle-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(a) WHERE a.age = 18 RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Person a ON a.id = k1.src JOIN Knows k2 ON k2.src = k1.dst JOIN Knows k3 ON k3.src = k2.dst AND k3.dst = k1.src WHERE a.age = 18"),
    q("triangle-sel100", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(a) RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Knows k2 ON k2.src = k1.dst JOIN Knows k3 ON k3.src = k2.dst AND k3.dst = k1.src"),
    q("4cycle-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person)-[:Knows]->(a) WHERE a.age = 18 RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Person a ON a.id = k1.src JOIN Knows k2 ON k2.src = k1.dst JOIN Knows k3 ON k3.src = k2.dst JOIN Knows k4 ON k4.src = k3.dst AND k4.dst = k1.src WHERE a.age = 18"),
    q("4cycle-sel100", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person)-[:Knows]->(a) RETURN count(*)")
        .sql("SELECT count(*) FROM Knows k1 JOIN Knows k2 ON k2.src = k1.dst JOIN Knows k3 ON k3.src = k2.dst JOIN Knows k4 ON k4.src = k3.dst AND k4.dst = k1.src"),
    q("4clique-sel1.6", "MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person)-[:Knows]->(d:Person), (a)-[:Knows]->(c), (a)-[:Knows]->(d), (b)-[:Knows]->(d) WHERE a.age = 18 RETURN count(*)")
        .sql("SELECT count(*) FROM Knows ab JOIN Person a ON a.id = ab.src JOIN Knows bc ON bc.src = ab.dst JOIN Knows cd ON cd.src = bc.dst JOIN Knows ac ON ac.src = ab.src AND ac.dst = bc.dst JOIN Knows ad ON ad.src = ab.src AND ad.dst = cd.dst JOIN Knows bd ON bd.src = ab.dst AND bd.dst = cd.dst WHERE a.age = 18"),
];

/// Clauses beyond pattern counts on Person/Knows: OPTIONAL MATCH (left
/// outer), EXISTS subqueries, DISTINCT, collect and grouping over all
/// edges, the shapes a user's queries take beside the seed's micro set.
const CLAUSE_QUERIES: &[Query] = &[
    q("optional-count", "MATCH (a:Person) OPTIONAL MATCH (a)-[:Knows]->(b:Person) RETURN count(*), count(b)")
        .sql("SELECT count(*), count(k.dst) FROM Person a LEFT JOIN Knows k ON k.src = a.id"),
    q("optional-filter", "MATCH (a:Person) OPTIONAL MATCH (a)-[:Knows]->(b:Person) WHERE b.age > 50 RETURN count(*), count(b)")
        .sql("SELECT count(*), count(m.dst) FROM Person a LEFT JOIN (SELECT k.src, k.dst FROM Knows k JOIN Person b ON b.id = k.dst WHERE b.age > 50) m ON m.src = a.id"),
    q("optional-top5", "MATCH (a:Person) OPTIONAL MATCH (a)-[:Knows]->(b:Person) RETURN a.id, count(b) AS c ORDER BY c DESC, a.id LIMIT 5")
        .sql("SELECT a.id, count(k.dst) AS c FROM Person a LEFT JOIN Knows k ON k.src = a.id GROUP BY a.id ORDER BY c DESC, a.id LIMIT 5"),
    q("optional-value-join", "MATCH (a:Person) OPTIONAL MATCH (b:Person) WHERE b.id = a.id * 2 AND b.age > 50 RETURN count(*), count(b), sum(b.age)")
        .sql("SELECT count(*), count(b.id), sum(b.age) FROM Person a LEFT JOIN Person b ON b.id = a.id * 2 AND b.age > 50"),
    q("not-exists", "MATCH (a:Person) WHERE NOT EXISTS { MATCH (a)-[:Knows]->(:Person) } RETURN count(*)")
        .sql("SELECT count(*) FROM Person a WHERE NOT EXISTS (SELECT 1 FROM Knows k WHERE k.src = a.id)"),
    q("exists-filter", "MATCH (a:Person) WHERE EXISTS { MATCH (a)-[:Knows]->(b:Person) WHERE b.age > 70 } RETURN count(*)")
        .sql("SELECT count(*) FROM Person a WHERE EXISTS (SELECT 1 FROM Knows k JOIN Person b ON b.id = k.dst WHERE k.src = a.id AND b.age > 70)"),
    q("distinct-dst", "MATCH (a:Person)-[:Knows]->(b:Person) RETURN count(DISTINCT b)")
        .sql("SELECT count(DISTINCT dst) FROM Knows"),
    q("collect-per-src", "MATCH (a:Person)-[:Knows]->(b:Person) WITH a, collect(b.id) AS l RETURN sum(size(l))")
        .sql("SELECT sum(len(l)) FROM (SELECT src, list(dst) AS l FROM Knows GROUP BY src)"),
    q("indegree-over-100", "MATCH (a:Person)-[:Knows]->(b:Person) WITH b, count(*) AS indeg WHERE indeg > 100 RETURN count(*)")
        .sql("SELECT count(*) FROM (SELECT dst FROM Knows GROUP BY dst HAVING count(*) > 100)"),
    q("group-age-top3", "MATCH (a:Person)-[:Knows]->(b:Person) RETURN a.age, count(*) AS c ORDER BY c DESC, a.age LIMIT 3")
        .sql("SELECT a.age, count(*) AS c FROM Knows k JOIN Person a ON a.id = k.src GROUP BY a.age ORDER BY c DESC, a.age LIMIT 3"),
];

/// Seed 000 (recursive query parallelism, VLDB 2025) workloads, the seed
/// 003 variable-length query and weighted shortest paths (on the generated
/// `weight` column), in Kùzu's recursive syntax. Sources are
/// `{SRC1}`, `{SRC8}`, `{SRC64}`: 1, 8 and 64 ids drawn from the seed
/// (see [`derived_params`]).
const RECURSIVE_QUERIES: &[Query] = &[
    q("sp-count-1src", "MATCH (a:Person)-[:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*)")
        .networkit(Nk::BfsCount, NkWalk::Out, "{SRC1}"),
    q("sp-count-8src", "MATCH (a:Person)-[:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*)")
        .networkit(Nk::BfsCount, NkWalk::Out, "{SRC8}"),
    q("sp-count-64src", "MATCH (a:Person)-[:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC64} RETURN count(*)")
        .networkit(Nk::BfsCount, NkWalk::Out, "{SRC64}"),
    q("sp-lengths-1src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*), sum(length(e))")
        .networkit(Nk::BfsLengths, NkWalk::Out, "{SRC1}"),
    q("sp-lengths-8src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*), sum(length(e))")
        .networkit(Nk::BfsLengths, NkWalk::Out, "{SRC8}"),
    q("sp-lengths-64src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC64} RETURN count(*), sum(length(e))")
        .networkit(Nk::BfsLengths, NkWalk::Out, "{SRC64}"),
    q("sp-paths-1src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*), sum(size(nodes(e)))"),
    q("sp-paths-8src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*), sum(size(nodes(e)))"),
    q("sp-paths-64src", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC64} RETURN count(*), sum(size(nodes(e)))"),
    q("varlen-1..3-1src", "MATCH (a:Person)-[:Knows*1..3]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*)"),
    q("varlen-1..3-8src", "MATCH (a:Person)-[:Knows*1..3]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*)"),
    q("varlen-1..3-64src", "MATCH (a:Person)-[:Knows*1..3]->(b:Person) WHERE a.id IN {SRC64} RETURN count(*)"),
    q("wsp-cost-1src", "MATCH (a:Person)-[e:Knows* WSHORTEST(weight)]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*), sum(cost(e))"),
    q("wsp-cost-8src", "MATCH (a:Person)-[e:Knows* WSHORTEST(weight)]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*), sum(cost(e))"),
    q("wsp-paths-1src", "MATCH (a:Person)-[e:Knows* WSHORTEST(weight)]->(b:Person) WHERE a.id IN {SRC1} RETURN count(*), sum(cost(e)), sum(size(rels(e)))"),
    q("wsp-paths-8src", "MATCH (a:Person)-[e:Knows* WSHORTEST(weight)]->(b:Person) WHERE a.id IN {SRC8} RETURN count(*), sum(cost(e)), sum(size(rels(e)))"),
];

/// Seed 000's shortest-path workloads on the LDBC-like network (the
/// paper's second kind of graph): KNOWS walked in both directions, as LDBC
/// friendships are, so `gen social --knows-per-person 20` gives the average
/// degree of about 40 the issue asks for. Every person has friends there,
/// so the derived sources all reach several levels.
const RECURSIVE_SOCIAL_QUERIES: &[Query] = &[
    q("sp-lengths-1src", "MATCH (a:Person)-[e:KNOWS* SHORTEST 1..30]-(b:Person) WHERE a.id IN {SRC1} RETURN count(*), sum(length(e))")
        .networkit(Nk::BfsLengths, NkWalk::Both, "{SRC1}"),
    q("sp-lengths-8src", "MATCH (a:Person)-[e:KNOWS* SHORTEST 1..30]-(b:Person) WHERE a.id IN {SRC8} RETURN count(*), sum(length(e))")
        .networkit(Nk::BfsLengths, NkWalk::Both, "{SRC8}"),
    q("sp-lengths-64src", "MATCH (a:Person)-[e:KNOWS* SHORTEST 1..30]-(b:Person) WHERE a.id IN {SRC64} RETURN count(*), sum(length(e))")
        .networkit(Nk::BfsLengths, NkWalk::Both, "{SRC64}"),
    q("sp-paths-1src", "MATCH (a:Person)-[e:KNOWS* SHORTEST 1..30]-(b:Person) WHERE a.id IN {SRC1} RETURN count(*), sum(size(nodes(e)))"),
    q("sp-paths-8src", "MATCH (a:Person)-[e:KNOWS* SHORTEST 1..30]-(b:Person) WHERE a.id IN {SRC8} RETURN count(*), sum(size(nodes(e)))"),
    q("sp-paths-64src", "MATCH (a:Person)-[e:KNOWS* SHORTEST 1..30]-(b:Person) WHERE a.id IN {SRC64} RETURN count(*), sum(size(nodes(e)))"),
];

const SOCIAL_KNOWS_DDL: &[&str] = &[SOCIAL_DDL[0], SOCIAL_DDL[3]];
const SOCIAL_KNOWS_LOADS: &[Load] = &[load("Person", "person"), load("KNOWS", "knows")];

/// Seed 003's variable-length query: walks of 1..5 hops between 50 sources
/// and 500 destinations (`{SRC50}`, `{DST500}`), counted and with their
/// paths built, plus the shortest paths between the same ends. On an
/// Erdős–Rényi graph: R-MAT's hubs make the walk count explode (about
/// 1.8e10 walks at scale 16).
const VARLEN_QUERIES: &[Query] = &[
    q("walks-1..5-count", "MATCH (a:Person)-[:Knows*1..5]->(b:Person) WHERE a.id IN {SRC50} AND b.id IN {DST500} RETURN count(*)"),
    q("walks-1..5-paths", "MATCH p = (a:Person)-[:Knows*1..5]->(b:Person) WHERE a.id IN {SRC50} AND b.id IN {DST500} RETURN count(*), sum(size(nodes(p))), sum(size(rels(p)))"),
    q("shortest-lengths", "MATCH (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC50} AND b.id IN {DST500} RETURN count(*), sum(length(e))"),
    q("shortest-paths", "MATCH p = (a:Person)-[e:Knows* SHORTEST 1..30]->(b:Person) WHERE a.id IN {SRC50} AND b.id IN {DST500} RETURN count(*), sum(size(nodes(p)))"),
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
    load("Person", "person"),
    load("Post", "post"),
    load("Comment", "comment"),
    load("KNOWS", "knows"),
    load("POST_HAS_CREATOR", "post_hascreator"),
    load("COMMENT_HAS_CREATOR", "comment_hascreator"),
    load("REPLY_OF", "comment_replyof"),
    load("LIKES", "likes"),
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

const NN50_DDL: &[&str] = &[
    "CREATE NODE TABLE LBL_ALL(id INT64, idMod7 INT64, PRIMARY KEY(id))",
    "CREATE NODE TABLE LBL_10M(id INT64, idMod7 INT64, PRIMARY KEY(id))",
    "CREATE REL TABLE REL_ONE(FROM LBL_ALL TO LBL_ALL)",
];

/// SQL tables for the DuckDB reference (edge endpoints as `src`, `dst`).
const NN50_SQL_DDL: &[&str] = &[
    "CREATE TABLE LBL_ALL(id BIGINT PRIMARY KEY, idMod7 BIGINT)",
    "CREATE TABLE LBL_10M(id BIGINT PRIMARY KEY, idMod7 BIGINT)",
    "CREATE TABLE REL_ONE(src BIGINT, dst BIGINT)",
];

const NN50_LOADS: &[Load] = &[
    load("LBL_ALL", "nodes"),
    load("LBL_10M", "nodes10"),
    load("REL_ONE", "edges"),
];

/// Seed 004's small queries SQ1–SQ5 on the next-neighbours graph, with the
/// seed's label and property names. The seed returns whole nodes (`RETURN
/// n`, up to 10^8 rows); here every query returns a few rows that still
/// need the full work, so that result transfer through the drivers (JSON,
/// Python) does not dominate: SQ1–SQ3 aggregate over every result row,
/// SQ4 and SQ5 sort every row (with tie-breakers, so the answer is unique)
/// and return 10 of them via SKIP. `{START}` is 777 (the seed's), the
/// SKIPs come from `meta.json`. `-[]-` is undirected, as the seed's `--`.
/// Two GROUP BYs over all 50 M edges follow (not the seed's): by a
/// property of the destination (7 groups) and by the destination node
/// (1 M groups, every in-degree is 50).
const SQ_QUERIES: &[Query] = &[
    q("SQ1-scan", "MATCH (n:LBL_ALL) RETURN count(*), sum(n.id), sum(n.idMod7)")
        .sql("SELECT count(*), sum(id), sum(idMod7) FROM LBL_ALL"),
    q("SQ2-filter", "MATCH (n:LBL_ALL) WHERE (n.id % 7) / (n.id % 5 + 1) > n.id % 3 RETURN count(*), sum(n.id)")
        .sql("SELECT count(*), sum(id) FROM LBL_ALL WHERE (id % 7) // (id % 5 + 1) > id % 3"),
    q("SQ3-expand", "MATCH (:LBL_ALL {id: {START}})-[:REL_ONE]-(:LBL_ALL)-[:REL_ONE]-(:LBL_ALL)-[:REL_ONE]-(:LBL_ALL)-[:REL_ONE]-(n:LBL_ALL) RETURN count(*), sum(n.id)")
        .sql("WITH e AS (SELECT src AS a, dst AS b FROM REL_ONE UNION ALL SELECT dst, src FROM REL_ONE) SELECT count(*), sum(e4.b) FROM e e1 JOIN e e2 ON e2.a = e1.b JOIN e e3 ON e3.a = e2.b JOIN e e4 ON e4.a = e3.b WHERE e1.a = {START}"),
    q("SQ3-expand-out", "MATCH (a:LBL_ALL)-[:REL_ONE]->(:LBL_ALL)-[:REL_ONE]->(:LBL_ALL)-[:REL_ONE]->(:LBL_ALL)-[:REL_ONE]->(n:LBL_ALL) WHERE a.id = {START} RETURN count(*), sum(n.id)")
        .sql("SELECT count(*), sum(e4.dst) FROM REL_ONE e1 JOIN REL_ONE e2 ON e2.src = e1.dst JOIN REL_ONE e3 ON e3.src = e2.dst JOIN REL_ONE e4 ON e4.src = e3.dst WHERE e1.src = {START}"),
    q("SQ4-sort", "MATCH (n:LBL_10M) RETURN n.id, n.idMod7 ORDER BY n.idMod7 DESC, n.id ASC SKIP {SQ4_SKIP} LIMIT 10")
        .sql("SELECT id, idMod7 FROM LBL_10M ORDER BY idMod7 DESC, id ASC LIMIT 10 OFFSET {SQ4_SKIP}"),
    q("SQ5-mixed", "MATCH (m:LBL_ALL)-[:REL_ONE]-(n:LBL_ALL) WHERE m.id % 1113 = 7 RETURN n.id, n.idMod7, m.id ORDER BY m.idMod7 DESC, m.id ASC, n.id ASC SKIP {SQ5_SKIP} LIMIT 10")
        .sql("WITH e AS (SELECT src AS a, dst AS b FROM REL_ONE UNION ALL SELECT dst, src FROM REL_ONE) SELECT n.id, n.idMod7, m.id FROM LBL_ALL m JOIN e ON e.a = m.id JOIN LBL_ALL n ON n.id = e.b WHERE m.id % 1113 = 7 ORDER BY m.idMod7 DESC, m.id ASC, n.id ASC LIMIT 10 OFFSET {SQ5_SKIP}"),
    q("group-dst-mod7", "MATCH (a:LBL_ALL)-[:REL_ONE]->(b:LBL_ALL) RETURN b.idMod7 AS k, count(*) AS c ORDER BY k")
        .sql("SELECT b.idMod7 AS k, count(*) AS c FROM REL_ONE e JOIN LBL_ALL b ON b.id = e.dst GROUP BY b.idMod7 ORDER BY k"),
    q("indegree-50", "MATCH (a:LBL_ALL)-[:REL_ONE]->(b:LBL_ALL) WITH b, count(*) AS c WHERE c >= 50 RETURN count(*), sum(c)")
        .sql("SELECT count(*), sum(c) FROM (SELECT dst, count(*) AS c FROM REL_ONE GROUP BY dst HAVING count(*) >= 50)"),
];

/// LDBC SNB interactive complex reads that the schema and the engine can
/// express, adapted like the short reads (`{PERSON}` is the hub person;
/// Post only where LDBC says Message). Not here: IC1, IC13, IC14 (they
/// bind the path of an undirected shortest/variable-length pattern, which
/// KithDB does not support yet), IC4–IC6, IC11, IC12 (tags, forums,
/// places, organisations are not generated). IC3 and IC9 ask for friends
/// and friends of friends (`-[:KNOWS*1..2]-`, undirected variable length,
/// not supported yet); here they use friends of friends at exactly two
/// hops (`WITH DISTINCT`). IC10 drops the "not already a friend" pattern
/// predicate and the interest score.
const IC_QUERIES: &[Query] = &[
    q("IC2-friends-recent-posts", "MATCH (p:Person)-[:KNOWS]-(f:Person)<-[:POST_HAS_CREATOR]-(m:Post) WHERE p.id = {PERSON} AND m.creationDate < timestamp('2012-06-01 00:00:00') RETURN f.id, f.firstName, f.lastName, m.id, m.content, m.creationDate ORDER BY m.creationDate DESC, m.id ASC LIMIT 20"),
    q("IC3-fof-comments-in-window", "MATCH (p:Person)-[:KNOWS]-(:Person)-[:KNOWS]-(f:Person) WHERE p.id = {PERSON} AND f.id <> {PERSON} WITH DISTINCT f MATCH (f)<-[:COMMENT_HAS_CREATOR]-(c:Comment) WHERE c.creationDate >= timestamp('2011-01-01 00:00:00') AND c.creationDate < timestamp('2011-07-01 00:00:00') RETURN f.id, f.firstName, f.lastName, count(*) AS n ORDER BY n DESC, f.id ASC LIMIT 20"),
    q("IC7-recent-likers", "MATCH (p:Person)<-[:POST_HAS_CREATOR]-(m:Post)<-[l:LIKES]-(liker:Person) WHERE p.id = {PERSON} WITH liker, max(l.creationDate) AS latest RETURN liker.id, liker.firstName, liker.lastName, latest ORDER BY latest DESC, liker.id ASC LIMIT 20"),
    q("IC8-recent-replies", "MATCH (p:Person)<-[:POST_HAS_CREATOR]-(m:Post)<-[:REPLY_OF]-(c:Comment)-[:COMMENT_HAS_CREATOR]->(a:Person) WHERE p.id = {PERSON} RETURN a.id, a.firstName, a.lastName, c.creationDate, c.id, c.content ORDER BY c.creationDate DESC, c.id ASC LIMIT 20"),
    q("IC9-fof-recent-posts", "MATCH (p:Person)-[:KNOWS]-(:Person)-[:KNOWS]-(f:Person) WHERE p.id = {PERSON} AND f.id <> {PERSON} WITH DISTINCT f MATCH (f)<-[:POST_HAS_CREATOR]-(m:Post) WHERE m.creationDate < timestamp('2012-06-01 00:00:00') RETURN f.id, f.firstName, f.lastName, m.id, m.content, m.creationDate ORDER BY m.creationDate DESC, m.id ASC LIMIT 20"),
    q("IC10-fof-birthday", "MATCH (p:Person)-[:KNOWS]-(:Person)-[:KNOWS]-(f:Person) WHERE p.id = {PERSON} AND f.id <> {PERSON} AND date_part('month', f.birthday) = 6 RETURN f.id, f.firstName, f.lastName, f.gender, count(*) AS c ORDER BY c DESC, f.id ASC LIMIT 10"),
    // LDBC forms the engine gained since (the second person of IC13/IC14
    // is a fixed function of {PERSON} that is never {PERSON} itself).
    q("IC1-friends-by-name", "MATCH (p:Person)-[e:KNOWS* SHORTEST 1..3]-(f:Person) WHERE p.id = {PERSON} AND f.firstName = 'Anna' RETURN f.id, f.lastName, length(e) AS distance ORDER BY distance ASC, f.lastName ASC, f.id ASC LIMIT 20"),
    q("IC3-varlen-fof-comments", "MATCH (p:Person)-[:KNOWS*1..2]-(f:Person) WHERE p.id = {PERSON} AND f.id <> {PERSON} WITH DISTINCT f MATCH (f)<-[:COMMENT_HAS_CREATOR]-(c:Comment) WHERE c.creationDate >= timestamp('2011-01-01 00:00:00') AND c.creationDate < timestamp('2011-07-01 00:00:00') RETURN f.id, f.firstName, f.lastName, count(*) AS n ORDER BY n DESC, f.id ASC LIMIT 20"),
    q("IC10-not-friend-birthday", "MATCH (p:Person)-[:KNOWS]-(:Person)-[:KNOWS]-(f:Person) WHERE p.id = {PERSON} AND f.id <> {PERSON} AND date_part('month', f.birthday) = 6 AND NOT EXISTS { MATCH (p)-[:KNOWS]-(f) } RETURN f.id, f.firstName, f.lastName, f.gender, count(*) AS c ORDER BY c DESC, f.id ASC LIMIT 10"),
    q("IC13-shortest-length", "MATCH (a:Person)-[e:KNOWS* SHORTEST 1..30]-(b:Person) WHERE a.id = {PERSON} AND b.id = ({PERSON} + 1) % 100 + 100 RETURN length(e)"),
    q("IC14-all-shortest", "MATCH (a:Person)-[e:KNOWS* ALL SHORTEST 1..30]-(b:Person) WHERE a.id = {PERSON} AND b.id = ({PERSON} + 1) % 100 + 100 RETURN count(*), min(length(e))"),
];

pub const SUITES: &[Suite] = &[
    Suite {
        name: "foundation",
        description: "Bulk load of a Person/Knows graph from CSV, then one-hop scans with a node filter and aggregates.",
        dataset: Dataset::PersonKnows,
        ddl: PERSON_KNOWS_DDL,
        loads: PERSON_KNOWS_LOADS,
        queries: &[
            q_all("one-hop-count", "MATCH (a:Person)-[:Knows]->(b:Person) RETURN count(*)")
                .sql("SELECT count(*) FROM Knows"),
            q_all("one-hop-filter-agg", "MATCH (a:Person)-[k:Knows]->(b:Person) WHERE a.age > 30 RETURN count(*), sum(k.weight)")
                .sql("SELECT count(*), sum(k.weight) FROM Knows k JOIN Person a ON a.id = k.src WHERE a.age > 30"),
        ],
        sql_ddl: PERSON_KNOWS_SQL_DDL,
    },
    Suite {
        name: "micro",
        description: "Seed 001 (Kùzu, CIDR 2023) micro-benchmarks: 1/2/3-hop counts at node selectivities ≈1.6 %, ≈9.5 % and 100 % (predicate on `age`, uniform and independent of degree; on the 2nd node for 2/3 hops as in the paper), a filtered 2-hop aggregate, triangles, 4-cycles and 4-cliques.",
        dataset: Dataset::PersonKnows,
        ddl: PERSON_KNOWS_DDL,
        loads: PERSON_KNOWS_LOADS,
        queries: MICRO_QUERIES,
        sql_ddl: PERSON_KNOWS_SQL_DDL,
    },
    Suite {
        name: "clauses",
        description: "OPTIONAL MATCH (counted, filtered, grouped with a top 5), NOT EXISTS and EXISTS subqueries, count(DISTINCT), collect per node and grouped counts over every edge of the Person/Knows graph.",
        dataset: Dataset::PersonKnows,
        ddl: PERSON_KNOWS_DDL,
        loads: PERSON_KNOWS_LOADS,
        queries: CLAUSE_QUERIES,
        sql_ddl: PERSON_KNOWS_SQL_DDL,
    },
    Suite {
        name: "recursive",
        description: "Seed 000 recursive workloads (shortest-path lengths and paths from 1, 8 and 64 sources, up to 30 hops), the seed 003 variable-length query (1..3 hops) and weighted shortest paths (costs, and paths with their lengths, from 1 and 8 sources), in Kùzu's recursive-pattern syntax.",
        dataset: Dataset::PersonKnows,
        ddl: PERSON_KNOWS_DDL,
        loads: PERSON_KNOWS_LOADS,
        queries: RECURSIVE_QUERIES,
        sql_ddl: &[],
    },
    Suite {
        name: "recursive-social",
        description: "Seed 000 shortest-path lengths and paths from 1, 8 and 64 sources (up to 30 hops) on the LDBC-like network's Person/KNOWS graph, KNOWS walked in both directions (`gen social --knows-per-person 20` for an average degree of about 40).",
        dataset: Dataset::Social,
        ddl: SOCIAL_KNOWS_DDL,
        loads: SOCIAL_KNOWS_LOADS,
        queries: RECURSIVE_SOCIAL_QUERIES,
        sql_ddl: &[],
    },
    Suite {
        name: "varlen",
        description: "Seed 003 variable-length query on an Erdős–Rényi graph (gen er): walks of 1..5 hops from 50 sources to 500 destinations, counted and with paths built, and the shortest paths between the same ends.",
        dataset: Dataset::Er,
        ddl: PERSON_KNOWS_DDL,
        loads: PERSON_KNOWS_LOADS,
        queries: VARLEN_QUERIES,
        sql_ddl: &[],
    },
    Suite {
        name: "social",
        description: "LDBC-SNB-like social network (gen social): bulk load, then the interactive short reads IS1–IS7 adapted to the schema, plus two small aggregates.",
        dataset: Dataset::Social,
        ddl: SOCIAL_DDL,
        loads: SOCIAL_LOADS,
        queries: SOCIAL_QUERIES,
        sql_ddl: &[],
    },
    Suite {
        name: "ic",
        description: "LDBC SNB interactive complex reads (IC1, IC2, IC3, IC7, IC8, IC9, IC10, IC13, IC14) that the engine and the generated schema can express, adapted to `gen social` (see BENCHMARKS.md for what was changed or left out and why).",
        dataset: Dataset::Social,
        ddl: SOCIAL_DDL,
        loads: SOCIAL_LOADS,
        queries: IC_QUERIES,
        sql_ddl: &[],
    },
    Suite {
        name: "sq",
        description: "Seed 004 small queries on its 50-next-neighbours graph (gen nn50): SQ1 scan, SQ2 filter, SQ3 4-hop expand from one node (undirected as in the seed, and outgoing only), SQ4 sort of the first tenth of the nodes, SQ5 filter + expand + sort; then GROUP BY over all edges by a destination property and by the destination node.",
        dataset: Dataset::Nn50,
        ddl: NN50_DDL,
        loads: NN50_LOADS,
        queries: SQ_QUERIES,
        sql_ddl: NN50_SQL_DDL,
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
    sources_where(nodes, k, |_| true)
}

/// The ids [`sources`] draws, skipping those `keep` rejects (a generator
/// that knows the edges keeps the sources reaching a few levels, as seed
/// 000 picks them). Gives up after `64 * nodes` draws, so it can return
/// fewer than `k` ids.
pub fn sources_where(nodes: u64, k: u64, keep: impl FnMut(u64) -> bool) -> Vec<u64> {
    sample_ids_where(nodes, k, 0x5352_4353, keep)
}

/// A Cypher list literal of ids: `[1,2,3]`.
pub fn id_list(ids: &[u64]) -> String {
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!("[{}]", ids.join(","))
}

/// `k` distinct ids below `nodes`, drawn deterministically from `salt`.
fn sample_ids(nodes: u64, k: u64, salt: u64) -> Vec<u64> {
    sample_ids_where(nodes, k, salt, |_| true)
}

fn sample_ids_where(nodes: u64, k: u64, salt: u64, mut keep: impl FnMut(u64) -> bool) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::with_capacity(k as usize);
    let mut rejected = std::collections::HashSet::new();
    let mut i = 0u64;
    while (out.len() as u64) < k.min(nodes) && i < nodes.saturating_mul(64) {
        let id = mix(salt, i) % nodes.max(1);
        if !out.contains(&id) && !rejected.contains(&id) {
            if keep(id) {
                out.push(id);
            } else {
                rejected.insert(id);
            }
        }
        i += 1;
    }
    out
}

/// Parameters every data set has, computed from its node count:
/// `SRC1`, `SRC8`, `SRC50`, `SRC64` (Cypher lists of source ids; each
/// list starts with the smaller ones) and `DST500` (500 destination ids
/// drawn independently of the sources).
pub fn derived_params(nodes: u64) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for k in [1u64, 8, 50, 64] {
        m.insert(format!("SRC{k}"), id_list(&sources(nodes, k)));
    }
    m.insert(
        "DST500".to_string(),
        id_list(&sample_ids(nodes, 500, 0x4453_5430)),
    );
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
    fn sql_versions_are_complete_and_bindable() {
        let mut p = derived_params(1000);
        for k in ["START", "SQ4_SKIP", "SQ5_SKIP", "PERSON", "POST", "COMMENT"] {
            p.insert(k.to_string(), "7".to_string());
        }
        for s in SUITES {
            for q in s.queries {
                assert!(bind(q.cypher, "/d", &p).is_ok(), "{}", q.name);
                if s.sql_ddl.is_empty() {
                    assert!(q.sql.is_none(), "{}: SQL without SQL tables", q.name);
                } else {
                    let sql = q.sql.unwrap_or_else(|| panic!("{}: no SQL", q.name));
                    assert!(bind(sql, "/d", &p).is_ok(), "{}", q.name);
                }
            }
        }
        let l = load("T", "f");
        assert_eq!(
            l.cypher(LoadFormat::Csv),
            "COPY T FROM '{DATA}/f.csv' (HEADER=true)"
        );
        assert_eq!(
            l.cypher(LoadFormat::Parquet),
            "COPY T FROM '{DATA}/f.parquet'"
        );
        assert_eq!(
            l.sql(LoadFormat::Parquet),
            "COPY T FROM '{DATA}/f.parquet' (FORMAT parquet)"
        );
        assert_eq!(
            Dataset::Nn50.required_files(LoadFormat::Parquet),
            ["nodes.parquet", "nodes10.parquet", "edges.parquet"]
        );
    }

    /// Each NetworKit form says what its Cypher query says: the same
    /// source list, direction, hop bound and aggregate; and every
    /// shortest-path count or length query of the recursive suites has one.
    #[test]
    fn networkit_forms_match_their_cypher() {
        let mut forms = 0;
        for s in SUITES {
            for q in s.queries {
                let Some(n) = q.networkit else {
                    let sp = q.name.starts_with("sp-count") || q.name.starts_with("sp-lengths");
                    assert!(
                        !(sp && s.name.starts_with("recursive")),
                        "{}/{}: no NetworKit form",
                        s.name,
                        q.name
                    );
                    continue;
                };
                forms += 1;
                let c = q.cypher;
                assert!(c.contains(&format!(" IN {} ", n.sources)), "{}", q.name);
                assert!(
                    c.contains(&format!("* SHORTEST 1..{}]", n.max_hops)),
                    "{}",
                    q.name
                );
                let arrow = match n.walk {
                    NkWalk::Out => "]->(b:",
                    NkWalk::Both => "]-(b:",
                };
                assert!(c.contains(arrow) && !c.contains("<-["), "{}", q.name);
                let ret = match n.op {
                    Nk::BfsCount => " RETURN count(*)",
                    Nk::BfsLengths => " RETURN count(*), sum(length(e))",
                };
                assert!(c.ends_with(ret), "{}", q.name);
                assert_eq!(s.networkit_walk(), Some(n.walk), "{}", s.name);
            }
        }
        assert_eq!(forms, 9);
        assert_eq!(
            get("recursive").unwrap().networkit_walk(),
            Some(NkWalk::Out)
        );
        assert_eq!(
            get("recursive-social").unwrap().networkit_walk(),
            Some(NkWalk::Both)
        );
        assert_eq!(get("micro").unwrap().networkit_walk(), None);
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
