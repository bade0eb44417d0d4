//! A connection's plans of read queries by statement text, as Neo4j keeps
//! its query cache: a query run again with the same text, parameter values
//! and binding settings on the same committed version skips parsing,
//! binding and planning. Those take several microseconds, on the calling
//! thread only, while the pool's workers wait: for a selective query that
//! is a large part of its time, and the part that more threads cannot cut.
//!
//! A plan is kept for one committed version (its sequence number and
//! catalog): the join order was costed with that version's table sizes,
//! and the catalog names what the text means. Statements inside a write
//! transaction, which read their own uncommitted state, are not cached.

use std::collections::HashMap;
use std::sync::Arc;

use kith_catalog::Catalog;
use kith_common::Value;
use kith_planner::bound::VarLengthSemantics;
use kith_planner::plan::QueryPlan;
use kith_planner::procedure::Procedures;

/// The most plans a connection keeps; the least recently used goes first.
pub(crate) const PLAN_CACHE_ENTRIES: usize = 128;

/// The most values (list elements and map entries counted, nested ones
/// too) the parameters of a kept plan may hold: the key keeps a copy of
/// them and every lookup compares them, so a query run with a large list
/// each time (`UNWIND $ids ...`) is planned again rather than kept.
pub(crate) const PLAN_CACHE_PARAM_VALUES: usize = 4096;

/// Whether `params` hold at most [`PLAN_CACHE_PARAM_VALUES`] values.
pub(crate) fn params_are_small(params: &HashMap<String, Value>) -> bool {
    /// Takes `n` values from the budget; false when it has fewer.
    fn take(budget: &mut usize, n: usize) -> bool {
        budget.checked_sub(n).map(|left| *budget = left).is_some()
    }
    fn count(v: &Value, budget: &mut usize) -> bool {
        take(budget, 1)
            && match v {
                // An integer list is counted without building its values.
                Value::List(l) => match l.ints() {
                    Some(ints) => take(budget, ints.len()),
                    None => l.iter().all(|x| count(x, budget)),
                },
                Value::Struct(fields) => fields.iter().all(|(_, x)| count(x, budget)),
                Value::Map(entries) => entries
                    .iter()
                    .all(|(k, x)| count(k, budget) && count(x, budget)),
                _ => true,
            }
    }
    let mut budget = PLAN_CACHE_PARAM_VALUES;
    params.values().all(|v| count(v, &mut budget))
}

/// What besides the text a plan was made from.
pub(crate) struct PlanKey {
    /// The committed version planned against.
    pub seq: u64,
    pub catalog: Arc<Catalog>,
    /// The procedures the statement was bound against (`CALL`).
    pub procedures: Arc<Procedures>,
    /// The binder reads parameter values (a `LIMIT $n`, a parameter's type).
    pub params: HashMap<String, Value>,
    pub var_length: VarLengthSemantics,
}

impl PlanKey {
    fn matches(&self, other: &PlanKeyRef<'_>) -> bool {
        self.seq == other.seq
            && Arc::ptr_eq(&self.catalog, other.catalog)
            && Arc::ptr_eq(&self.procedures, other.procedures)
            && self.var_length == other.var_length
            && self.params == *other.params
    }
}

/// A [`PlanKey`] of borrowed parts, to look up without copying the
/// parameters.
pub(crate) struct PlanKeyRef<'a> {
    pub seq: u64,
    pub catalog: &'a Arc<Catalog>,
    pub procedures: &'a Arc<Procedures>,
    pub params: &'a HashMap<String, Value>,
    pub var_length: VarLengthSemantics,
}

/// A kept plan, and whether the statement matches patterns (so runs
/// pipelines on the pool's workers, which are woken while it starts).
#[derive(Clone)]
pub(crate) struct CachedPlan {
    pub plan: Arc<QueryPlan>,
    pub matches_patterns: bool,
}

struct Entry {
    key: PlanKey,
    plan: CachedPlan,
    /// The cache's clock when the entry was last used.
    used: u64,
}

#[derive(Default)]
pub(crate) struct PlanCache {
    entries: HashMap<String, Entry>,
    clock: u64,
}

impl PlanCache {
    /// The plan of `text` made under `key`, if kept.
    pub fn get(&mut self, text: &str, key: &PlanKeyRef<'_>) -> Option<CachedPlan> {
        self.clock += 1;
        let entry = self.entries.get_mut(text)?;
        if !entry.key.matches(key) {
            return None;
        }
        entry.used = self.clock;
        Some(entry.plan.clone())
    }

    /// Keeps `plan` for `text` (replacing a stale one), dropping the least
    /// recently used plan when full.
    pub fn insert(&mut self, text: &str, key: PlanKey, plan: CachedPlan) {
        self.clock += 1;
        if !self.entries.contains_key(text) && self.entries.len() >= PLAN_CACHE_ENTRIES {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(t, _)| t.clone());
            if let Some(t) = oldest {
                self.entries.remove(&t);
            }
        }
        let used = self.clock;
        self.entries
            .insert(text.to_string(), Entry { key, plan, used });
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(name: &str) -> CachedPlan {
        CachedPlan {
            plan: Arc::new(QueryPlan {
                parts: Vec::new(),
                subqueries: Vec::new(),
                names: vec![name.to_string()],
                types: Vec::new(),
            }),
            matches_patterns: true,
        }
    }

    struct Parts {
        catalog: Arc<Catalog>,
        procedures: Arc<Procedures>,
        params: HashMap<String, Value>,
    }

    impl Parts {
        fn new() -> Parts {
            Parts {
                catalog: Arc::new(Catalog::default()),
                procedures: Arc::new(Procedures::new()),
                params: HashMap::new(),
            }
        }

        fn key(&self, seq: u64) -> PlanKey {
            PlanKey {
                seq,
                catalog: Arc::clone(&self.catalog),
                procedures: Arc::clone(&self.procedures),
                params: self.params.clone(),
                var_length: VarLengthSemantics::default(),
            }
        }

        fn lookup(&self, seq: u64) -> PlanKeyRef<'_> {
            PlanKeyRef {
                seq,
                catalog: &self.catalog,
                procedures: &self.procedures,
                params: &self.params,
                var_length: VarLengthSemantics::default(),
            }
        }
    }

    #[test]
    fn a_plan_serves_only_its_own_version_and_parameters() {
        let mut parts = Parts::new();
        parts.params.insert("n".into(), Value::Int64(1));
        let mut cache = PlanCache::default();
        cache.insert("q", parts.key(7), plan("a"));
        assert_eq!(cache.get("q", &parts.lookup(7)).unwrap().plan.names, ["a"]);
        assert!(cache.get("other", &parts.lookup(7)).is_none());
        // A commit since, or another catalog, procedure set or parameter value.
        assert!(cache.get("q", &parts.lookup(8)).is_none());
        let other_catalog = Parts {
            catalog: Arc::new(Catalog::default()),
            ..Parts::new()
        };
        let mut same_params = other_catalog;
        same_params.params = parts.params.clone();
        assert!(cache.get("q", &same_params.lookup(7)).is_none());
        let fresh_procedures = Arc::new(Procedures::new());
        let by_procedures = PlanKeyRef {
            procedures: &fresh_procedures,
            ..parts.lookup(7)
        };
        assert!(cache.get("q", &by_procedures).is_none());
        parts.params.insert("n".into(), Value::Int64(2));
        assert!(cache.get("q", &parts.lookup(7)).is_none());
        let walk = PlanKeyRef {
            var_length: VarLengthSemantics::Trail,
            ..parts.lookup(7)
        };
        assert!(cache.get("q", &walk).is_none());
        // Replanned, the new plan replaces the stale one.
        cache.insert("q", parts.key(8), plan("b"));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get("q", &parts.lookup(8)).unwrap().plan.names, ["b"]);
    }

    #[test]
    fn large_parameters_are_not_kept() {
        let list = |n: i64, ints: bool| {
            let l = match ints {
                true => kith_common::ListValue::from_ints((0..n).collect()),
                false => kith_common::ListValue::from_values((0..n).map(Value::Int64).collect()),
            };
            HashMap::from([("l".to_string(), Value::List(Arc::new(l)))])
        };
        for ints in [true, false] {
            assert!(params_are_small(&list(100, ints)));
            assert!(params_are_small(&list(4000, ints)));
            assert!(!params_are_small(&list(5000, ints)));
        }
        let nested = Value::List(Arc::new(kith_common::ListValue::from_values(
            (0..100)
                .map(|_| Value::Struct(vec![("x".into(), list(50, false)["l"].clone())]))
                .collect(),
        )));
        assert!(!params_are_small(&HashMap::from([(
            "n".to_string(),
            nested
        )])));
        assert!(params_are_small(&HashMap::new()));
    }

    #[test]
    fn the_least_recently_used_plan_goes_first() {
        let parts = Parts::new();
        let mut cache = PlanCache::default();
        for i in 0..PLAN_CACHE_ENTRIES {
            cache.insert(&format!("q{i}"), parts.key(1), plan(&i.to_string()));
        }
        // q0 is used again, so q1 is now the oldest.
        assert!(cache.get("q0", &parts.lookup(1)).is_some());
        cache.insert("new", parts.key(1), plan("new"));
        assert_eq!(cache.len(), PLAN_CACHE_ENTRIES);
        assert!(cache.get("q0", &parts.lookup(1)).is_some());
        assert!(cache.get("q1", &parts.lookup(1)).is_none());
        assert!(cache.get("q2", &parts.lookup(1)).is_some());
        assert!(cache.get("new", &parts.lookup(1)).is_some());
    }

    /// The plan kept under a text is the one its next run uses: swapping
    /// another plan in shows it (and would fail if the text were planned
    /// again); a commit makes it stale.
    #[test]
    fn a_repeated_text_runs_its_kept_plan() {
        use crate::{Config, Connection, Database};
        let db = Database::open(":memory:", Config::default()).unwrap();
        let conn = Connection::new(&db);
        conn.query("CREATE NODE TABLE P(id INT64, PRIMARY KEY(id))")
            .unwrap();
        conn.query("CREATE (:P {id: 1}), (:P {id: 2}), (:P {id: 3})")
            .unwrap();
        let count = |q: &str| {
            let r = conn.query(q).unwrap();
            let v = r.rows().next().unwrap()[0].clone();
            (r.names[0].clone(), v)
        };
        let (q, other) = (
            "MATCH (p:P) RETURN count(*) AS n",
            "MATCH (p:P) WHERE p.id > 1 RETURN count(*) AS m",
        );
        assert_eq!(count(q), ("n".into(), Value::Int64(3)));
        assert_eq!(count(other), ("m".into(), Value::Int64(2)));
        {
            let mut plans = conn.plans.lock();
            assert_eq!(plans.len(), 2);
            let swapped = plans.entries[other].plan.clone();
            plans.entries.get_mut(q).unwrap().plan = swapped;
        }
        assert_eq!(count(q), ("m".into(), Value::Int64(2)));
        conn.query("CREATE (:P {id: 4})").unwrap();
        assert_eq!(count(q), ("n".into(), Value::Int64(4)));
        // Off, the cache is emptied and not filled.
        conn.query("CALL plan_cache=false").unwrap();
        assert_eq!(count(q), ("n".into(), Value::Int64(4)));
        assert_eq!(conn.plans.lock().len(), 0);
        // Scripts of several statements and EXPLAIN are not kept.
        conn.query("CALL plan_cache=true").unwrap();
        conn.query("RETURN 1; RETURN 2").unwrap();
        conn.query("EXPLAIN MATCH (p:P) RETURN p").unwrap();
        assert_eq!(conn.plans.lock().len(), 0);
    }
}
