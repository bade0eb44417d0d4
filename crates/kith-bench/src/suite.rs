//! Named benchmark suites: DDL, bulk loads and query sets, written once in
//! Cypher and run unchanged on every engine.

/// What a query scans, for throughput figures (edges/s per core).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scans {
    /// Every edge of the data set once.
    AllEdges,
    Unknown,
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

pub const SUITES: &[Suite] = &[Suite {
    name: "foundation",
    description: "Bulk load of a Person/Knows graph from CSV, then one-hop scans with a node filter and aggregates.",
    ddl: PERSON_KNOWS_DDL,
    loads: PERSON_KNOWS_LOADS,
    queries: &[
        Query {
            name: "one-hop-count",
            cypher: "MATCH (a:Person)-[:Knows]->(b:Person) RETURN count(*)",
            scans: Scans::AllEdges,
        },
        Query {
            name: "one-hop-filter-agg",
            cypher: "MATCH (a:Person)-[k:Knows]->(b:Person) WHERE a.age > 30 RETURN count(*), sum(k.weight)",
            scans: Scans::AllEdges,
        },
    ],
}];

pub fn get(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.name == name)
}

/// `{DATA}` replaced by the data directory (forward slashes, quotes escaped).
pub fn with_data_dir(cypher: &str, data_dir: &str) -> String {
    cypher.replace("{DATA}", &data_dir.replace('\\', "/").replace('\'', "\\'"))
}
