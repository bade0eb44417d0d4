//! NetworKit's form of a suite: the reference engine of issue 4 ("never
//! slower than NetworKit's BFS for the same sources") runs no Cypher, so a
//! query it can answer carries a structured form ([`NkQuery`]) and the
//! loads become requests that build one in-memory `nk.Graph`
//! ([`load_request`]). Both travel to `bench/networkit_driver.py` as JSON
//! text in the `query` field of the usual `exec` request.
//!
//! The forms mean exactly what the Cypher queries they stand beside return
//! on KithDB (the reference for the semantics): `(a)-[e* SHORTEST
//! 1..max_hops]->(b) WHERE a.id IN [...]` yields one row per source and
//! per node other than the source that the source reaches in 1..=max_hops
//! hops (a source reaching itself through a cycle is not a row: its
//! distance is 0), so over a list of distinct sources `count(*)` and
//! `sum(length(e))` add up over the sources, and `sum` of no rows is 0.

use std::collections::BTreeMap;

use crate::json::{self, Json};
use crate::parquet_out::FileSpec;
use crate::suite::{self, LoadFormat};

/// What a NetworKit query computes from a BFS per source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nk {
    /// `[[count]]`: summed over the sources, the nodes each reaches in
    /// 1..=max_hops hops (`RETURN count(*)`).
    BfsCount,
    /// `[[count, sum of their distances]]` (`RETURN count(*),
    /// sum(length(e))`).
    BfsLengths,
}

impl Nk {
    pub fn name(self) -> &'static str {
        match self {
            Nk::BfsCount => "bfs-count",
            Nk::BfsLengths => "bfs-lengths",
        }
    }
}

/// Which way the edges are walked: along their direction (`-[]->`, the
/// graph is loaded directed) or both ways (`-[]-`, loaded undirected).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NkWalk {
    Out,
    Both,
}

impl NkWalk {
    pub fn name(self) -> &'static str {
        match self {
            NkWalk::Out => "out",
            NkWalk::Both => "both",
        }
    }
    /// Whether the graph the loads build is directed.
    pub fn directed(self) -> bool {
        self == NkWalk::Out
    }
}

/// The upper bound of the suites' `SHORTEST 1..30`.
pub const NK_MAX_HOPS: u32 = 30;

/// A query in NetworKit's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NkQuery {
    pub op: Nk,
    pub walk: NkWalk,
    /// The placeholder of the source id list, as the Cypher text names it
    /// (`{SRC8}`), bound the same way.
    pub sources: &'static str,
    pub max_hops: u32,
}

impl NkQuery {
    /// Unbound, for listings: `bfs-lengths out from {SRC8}, 1..30 hops`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} from {}, 1..{} hops",
            self.op.name(),
            self.walk.name(),
            self.sources,
            self.max_hops
        )
    }

    /// The request text sent as the `exec` query, with the sources bound
    /// from the data set's parameters: `{"op":"bfs-count","walk":"out",
    /// "sources":[1,2],"max_hops":30}`.
    pub fn bind(
        &self,
        data_dir: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<String, String> {
        let list = suite::bind(self.sources, data_dir, params)?;
        let sources = json::parse(&list)
            .ok()
            .filter(|v| {
                v.as_arr()
                    .is_some_and(|ids| ids.iter().all(|id| matches!(id, Json::Int(_))))
            })
            .ok_or_else(|| format!("{} is not a list of ids: {list}", self.sources))?;
        Ok(Json::Obj(vec![
            ("op".into(), Json::str(self.op.name())),
            ("walk".into(), Json::str(self.walk.name())),
            ("sources".into(), sources),
            ("max_hops".into(), Json::Int(i64::from(self.max_hops))),
        ])
        .to_string())
    }
}

/// The request that loads `file` (a stem of `files`) into the driver's
/// graph: a node file maps its first column's ids to dense node ids, an
/// edge file (columns `from`, `to` first) adds its edges, directed or not.
/// `Err` for Parquet (the driver reads CSV) and unknown files.
pub fn load_request(
    files: &[FileSpec],
    file: &str,
    walk: NkWalk,
    format: LoadFormat,
    data_dir: &str,
) -> Result<String, String> {
    if format != LoadFormat::Csv {
        return Err("the NetworKit driver loads CSV files only".into());
    }
    let spec = files
        .iter()
        .find(|f| f.stem == file)
        .ok_or_else(|| format!("{file} is not a file of this data set"))?;
    let path = Json::str(format!("{data_dir}/{file}.csv"));
    let cols: Vec<&str> = spec.columns.iter().map(|(name, _)| *name).collect();
    let req = match cols.as_slice() {
        ["from", "to", ..] => vec![
            ("load".into(), Json::str("edges")),
            ("path".into(), path),
            ("from".into(), Json::str("from")),
            ("to".into(), Json::str("to")),
            ("directed".into(), Json::Bool(walk.directed())),
        ],
        [id, ..] => vec![
            ("load".into(), Json::str("nodes")),
            ("path".into(), path),
            ("id".into(), Json::str(*id)),
        ],
        [] => return Err(format!("{file} has no columns")),
    };
    Ok(Json::Obj(req).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Dataset;

    #[test]
    fn bind_renders_the_sources_as_json() {
        let mut p = BTreeMap::new();
        p.insert("SRC8".to_string(), "[3,1,4]".to_string());
        let q = NkQuery {
            op: Nk::BfsLengths,
            walk: NkWalk::Both,
            sources: "{SRC8}",
            max_hops: NK_MAX_HOPS,
        };
        assert_eq!(
            q.bind("/d", &p).unwrap(),
            r#"{"op":"bfs-lengths","walk":"both","sources":[3,1,4],"max_hops":30}"#
        );
        assert_eq!(q.describe(), "bfs-lengths both from {SRC8}, 1..30 hops");
        p.insert("SRC8".to_string(), "[a]".to_string());
        assert!(q.bind("/d", &p).unwrap_err().contains("not a list of ids"));
        assert!(q.bind("/d", &BTreeMap::new()).is_err());
    }

    #[test]
    fn loads_name_the_id_and_endpoint_columns() {
        let files = Dataset::Social.files();
        let csv = LoadFormat::Csv;
        assert_eq!(
            load_request(files, "person", NkWalk::Both, csv, "/d").unwrap(),
            r#"{"load":"nodes","path":"/d/person.csv","id":"id"}"#
        );
        assert_eq!(
            load_request(files, "knows", NkWalk::Both, csv, "/d").unwrap(),
            r#"{"load":"edges","path":"/d/knows.csv","from":"from","to":"to","directed":false}"#
        );
        let pk = Dataset::PersonKnows.files();
        assert!(load_request(pk, "knows", NkWalk::Out, csv, "/d")
            .unwrap()
            .ends_with(r#""directed":true}"#));
        assert!(load_request(pk, "nope", NkWalk::Out, csv, "/d").is_err());
        assert!(load_request(pk, "knows", NkWalk::Out, LoadFormat::Parquet, "/d").is_err());
    }
}
