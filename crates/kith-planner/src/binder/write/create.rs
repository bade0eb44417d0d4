//! Binding of CREATE: nodes and rels with their properties, named paths,
//! and the splitting of a CREATE whose patterns read what it creates.

use super::*;

/// A CREATE whose property values read a node or rel an earlier pattern
/// of the same clause creates (`CREATE (a {id: 0}), (b {ref: a.id})`), as
/// consecutive CREATE clauses that each create before the next reads:
/// CREATE neither filters nor multiplies rows, so the patterns of one
/// clause and of consecutive clauses make the same graph. None when the
/// clause is no such CREATE.
pub(super) fn split_create(clause: &Clause) -> Option<Vec<Clause>> {
    let Clause::Create { patterns, span } = clause else {
        return None;
    };
    let mut anon = 0;
    let patterns: Vec<ast::PathPattern> = patterns
        .iter()
        .flat_map(|p| split_self_reads(p, &mut anon).unwrap_or_else(|| vec![p.clone()]))
        .collect();
    let mut groups: Vec<Vec<ast::PathPattern>> = vec![Vec::new()];
    let mut names: HashSet<&str> = HashSet::new();
    for p in &patterns {
        let mut values: Vec<&ast::Expr> = p.start.properties.iter().collect();
        for (r, n) in &p.chain {
            values.extend(r.properties.as_ref());
            values.extend(n.properties.as_ref());
        }
        let reads_earlier = values
            .iter()
            .any(|v| mentions(v, &|name| names.contains(name)));
        if reads_earlier {
            groups.push(Vec::new());
            names.clear();
        }
        names.extend(p.start.variable.iter().map(|v| v.name.as_str()));
        for (r, n) in &p.chain {
            names.extend(r.variable.iter().map(|v| v.name.as_str()));
            names.extend(n.variable.iter().map(|v| v.name.as_str()));
        }
        if let Some(g) = groups.last_mut() {
            g.push(p.clone());
        }
    }
    (groups.len() > 1).then(|| {
        groups
            .into_iter()
            .map(|patterns| Clause::Create {
                patterns,
                span: *span,
            })
            .collect()
    })
}

/// A CREATE pattern whose property values read a node of the same pattern
/// (`(z {v: 1})-[:R {w: z.v}]->(x)`), as one pattern per node (each named,
/// `_anon_split_K` when anonymous) followed by one pattern per rel between
/// those names, so that [`split_create`] creates the nodes before the
/// values reading them. None for other patterns (named paths stay whole).
pub(super) fn split_self_reads(
    p: &ast::PathPattern,
    anon: &mut usize,
) -> Option<Vec<ast::PathPattern>> {
    if p.variable.is_some() || p.chain.is_empty() {
        return None;
    }
    let nodes: Vec<&ast::NodePattern> = std::iter::once(&p.start)
        .chain(p.chain.iter().map(|(_, n)| n))
        .collect();
    let names: HashSet<&str> = nodes
        .iter()
        .filter_map(|n| n.variable.as_ref())
        .map(|v| v.name.as_str())
        .collect();
    let reads_own = nodes
        .iter()
        .filter_map(|n| n.properties.as_ref())
        .chain(p.chain.iter().filter_map(|(r, _)| r.properties.as_ref()))
        .any(|v| mentions(v, &|name| names.contains(name)));
    if !reads_own {
        return None;
    }
    let named: Vec<ast::NodePattern> = nodes
        .iter()
        .map(|n| {
            let mut n = (*n).clone();
            if n.variable.is_none() {
                n.variable = Some(ast::Ident {
                    name: format!("{SPLIT_NODE_PREFIX}{anon}"),
                    span: n.span,
                });
                *anon += 1;
            }
            n
        })
        .collect();
    let reference = |n: &ast::NodePattern| ast::NodePattern {
        variable: n.variable.clone(),
        labels: ast::LabelExpr::None,
        properties: None,
        where_: None,
        span: n.span,
    };
    let single = |start: ast::NodePattern, chain| ast::PathPattern {
        variable: None,
        shortest: None,
        start,
        chain,
        span: p.span,
    };
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for n in &named {
        let name = n.variable.as_ref().map_or("", |v| v.name.as_str());
        // A name repeated in the pattern is one node, created once.
        if seen.insert(name) {
            out.push(single(n.clone(), Vec::new()));
        }
    }
    for (i, (r, _)) in p.chain.iter().enumerate() {
        let chain = vec![(r.clone(), reference(&named[i + 1]))];
        out.push(single(reference(&named[i]), chain));
    }
    Some(out)
}

impl Binder<'_> {
    /// `CREATE (a)` with `a` already bound creates nothing; openCypher
    /// rejects it (VariableAlreadyBound) instead of ignoring it. Checked on
    /// the clauses as written, before [`split_create`] adds such patterns
    /// of its own.
    pub(super) fn check_bare_creates(&self, clauses: &[Clause], scope: &WriteScope) -> Result<()> {
        let mut earlier: HashSet<&str> = HashSet::new();
        // Until a WITH narrows the scope, the variables bound before the
        // writes are in it too.
        let mut outer = true;
        for clause in clauses {
            let (patterns, create): (&[ast::PathPattern], bool) =
                match clause {
                    Clause::Create { patterns, .. } => (patterns, true),
                    Clause::Merge { pattern, .. } => (std::slice::from_ref(pattern), false),
                    Clause::Unwind { alias, .. } => {
                        earlier.insert(&alias.name);
                        continue;
                    }
                    Clause::Projection(p) => {
                        if !p.star {
                            outer = false;
                            earlier.clear();
                        }
                        earlier.extend(p.items.iter().filter_map(|i| {
                            match (&i.alias, &i.expr.kind) {
                                (Some(a), _) => Some(a.name.as_str()),
                                (None, ExprKind::Variable(v)) => Some(v.as_str()),
                                _ => None,
                            }
                        }));
                        continue;
                    }
                    _ => continue,
                };
            for p in patterns {
                if let (true, true, Some(v)) = (create, p.chain.is_empty(), &p.start.variable) {
                    if earlier.contains(v.name.as_str()) || (outer && self.is_bound(&v.name, scope))
                    {
                        return Err(semantic(
                            v.span,
                            format!(
                                "variable '{}' is already bound: CREATE needs a new node or a rel",
                                v.name
                            ),
                        ));
                    }
                }
                earlier.extend(
                    p.variable
                        .iter()
                        .chain(&p.start.variable)
                        .map(|v| v.name.as_str()),
                );
                for (r, n) in &p.chain {
                    earlier.extend(
                        r.variable
                            .iter()
                            .chain(&n.variable)
                            .map(|v| v.name.as_str()),
                    );
                }
            }
        }
        Ok(())
    }

    /// A node of a CREATE pattern: a reference to a bound variable, or a new node.
    pub(super) fn create_node(
        &self,
        node: &ast::NodePattern,
        nodes: &mut Vec<CreateNode>,
        scope: &mut WriteScope,
    ) -> Result<NodeRef> {
        if let Some(w) = &node.where_ {
            return Err(semantic(w.span, "WHERE is not allowed in a CREATE pattern"));
        }
        if let Some(v) = &node.variable {
            if self.is_bound(&v.name, scope) {
                if node.properties.is_some() || !matches!(node.labels, ast::LabelExpr::None) {
                    return Err(semantic(
                        v.span,
                        format!("variable '{}' is already defined", v.name),
                    ));
                }
                return self.node_ref(&v.name, v.span, scope);
            }
        }
        let new = self.new_node(node, false, scope)?;
        let var = new.var.clone();
        scope.created.insert(var.clone());
        nodes.push(new);
        Ok(NodeRef::Created(var))
    }

    /// A node a CREATE makes, or a MERGE matches and makes (`merge`): its
    /// table, labels, properties and variable (hidden when anonymous).
    pub(super) fn new_node(
        &self,
        node: &ast::NodePattern,
        merge: bool,
        scope: &mut WriteScope,
    ) -> Result<CreateNode> {
        let clause = if merge { "MERGE" } else { "CREATE" };
        if let Some(w) = &node.where_ {
            return Err(semantic(
                w.span,
                format!("WHERE is not allowed in a {clause} pattern"),
            ));
        }
        let table = self.write_label(node)?;
        let properties = if merge {
            self.merge_properties(node.properties.as_ref(), scope)?
        } else {
            self.write_properties(node.properties.as_ref(), scope)?
        };
        self.check_properties(&table, &properties, node.span)?;
        let var = match &node.variable {
            Some(v) => v.name.clone(),
            None => {
                scope.anon += 1;
                format!("_anon_{}_{}", clause.to_lowercase(), scope.anon)
            }
        };
        Ok(CreateNode {
            var,
            table,
            labels: node_labels(node),
            properties,
        })
    }

    pub(super) fn bind_create(
        &self,
        patterns: &[ast::PathPattern],
        scope: &mut WriteScope,
    ) -> Result<WriteClause> {
        let mut nodes = Vec::new();
        let mut rels = Vec::new();
        for p in patterns {
            let path = self.path_name(p, scope)?;
            let mut elems = Vec::new();
            let mut left = self.create_node(&p.start, &mut nodes, scope)?;
            elems.push(node_ref_name(&left, &p.start));
            for (i, (rel, node)) in p.chain.iter().enumerate() {
                let right = self.create_node(node, &mut nodes, scope)?;
                if rel.range.is_some() {
                    return Err(semantic(
                        rel.span,
                        "CREATE cannot make a variable-length rel",
                    ));
                }
                if let Some(v) = &rel.variable {
                    if self.is_bound(&v.name, scope) {
                        return Err(semantic(
                            v.span,
                            format!("variable '{}' is already defined", v.name),
                        ));
                    }
                }
                let [ty] = rel.types.as_slice() else {
                    return Err(semantic(
                        rel.span,
                        "a rel to create needs exactly one rel type",
                    ));
                };
                let table = self.write_rel_type(ty)?;
                let (src, dst) = match rel.direction {
                    Direction::Right => (left.clone(), right.clone()),
                    Direction::Left => (right.clone(), left.clone()),
                    _ => return Err(semantic(rel.span, "a rel to create needs a direction")),
                };
                let properties = self.write_properties(rel.properties.as_ref(), scope)?;
                self.check_properties(&table, &properties, rel.span)?;
                let var = path_rel_var(rel, path.as_deref(), i);
                if let Some(v) = &var {
                    scope.created_rels.push(v.clone());
                    elems.push(v.clone());
                }
                elems.push(node_ref_name(&right, node));
                rels.push(CreateRel {
                    var,
                    table,
                    src,
                    dst,
                    properties,
                });
                left = right;
            }
            if let Some(name) = path {
                scope.paths.push((name, elems));
            }
        }
        Ok(WriteClause::Create { nodes, rels })
    }

    /// The name of path pattern `p` when it is named (checked to be new).
    pub(super) fn path_name(
        &self,
        p: &ast::PathPattern,
        scope: &WriteScope,
    ) -> Result<Option<String>> {
        let Some(v) = &p.variable else {
            return Ok(None);
        };
        if self.is_bound(&v.name, scope) {
            return Err(semantic(
                v.span,
                format!("variable '{}' is already defined", v.name),
            ));
        }
        Ok(Some(v.name.clone()))
    }
}
