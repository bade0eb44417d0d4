//! Binding of `UNION` / `UNION ALL` queries.

use super::*;

impl Binder<'_> {
    /// `q1 UNION [ALL] q2 ...`: each single query bound on its own (fresh
    /// scope and slots); all must be read queries returning the same
    /// column names, joined all by UNION or all by UNION ALL.
    pub(super) fn bind_union(&mut self, q: &ast::Query) -> Result<BoundStatement> {
        let all = q.union_all.first().copied().unwrap_or(false);
        if q.union_all.iter().any(|a| *a != all) {
            return Err(Error::at(
                ErrorKind::Semantic,
                q.span,
                "UNION and UNION ALL cannot be mixed in one query",
            ));
        }
        let mut queries = Vec::with_capacity(q.parts.len());
        let mut columns: Option<Vec<String>> = None;
        for part in &q.parts {
            let single = ast::Query {
                parts: vec![part.clone()],
                union_all: Vec::new(),
                span: part.span,
            };
            let mut binder = self.child();
            let query = match binder.bind_query(&single)? {
                BoundStatement::Query(query) => *query,
                _ => {
                    return Err(not_supported(
                        part.span,
                        "UNION of queries with writing clauses or CALL",
                    ))
                }
            };
            let names: Vec<String> = query
                .parts
                .last()
                .map(|p| p.outputs.iter().map(|(n, _)| n.clone()).collect())
                .unwrap_or_default();
            match &columns {
                None => columns = Some(names),
                Some(first) if *first != names => {
                    return Err(Error::at(
                        ErrorKind::Semantic,
                        part.span,
                        format!(
                            "all queries of a UNION must return the same columns: ({}) here, ({}) in the first query",
                            names.join(", "),
                            first.join(", ")
                        ),
                    ))
                }
                Some(_) => {}
            }
            queries.push(query);
        }
        Ok(BoundStatement::Union { queries, all })
    }
}
