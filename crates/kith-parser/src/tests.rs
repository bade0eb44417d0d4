//! Parser tests: AST shapes per construct, error messages and spans, no panics.

use kith_common::{ErrorKind, Span};

use crate::ast::*;
use crate::{parse, parse_one, parse_type};

fn one(text: &str) -> Statement {
    match parse_one(text) {
        Ok(s) => s,
        Err(e) => panic!("{text:?} failed: {}", e.with_source(text)),
    }
}

fn query(text: &str) -> Query {
    match one(text) {
        Statement::Query(q) => q,
        other => panic!("not a query: {other:?}"),
    }
}

fn clauses(text: &str) -> Vec<Clause> {
    let mut q = query(text);
    assert_eq!(q.parts.len(), 1);
    q.parts.remove(0).clauses
}

fn ret(text: &str) -> Projection {
    match clauses(text).pop() {
        Some(Clause::Projection(p)) => p,
        other => panic!("no projection: {other:?}"),
    }
}

/// The first RETURN item's expression.
fn expr(text: &str) -> Expr {
    ret(&format!("RETURN {text}")).items.remove(0).expr
}

fn err(text: &str) -> kith_common::Error {
    match parse(text) {
        Ok(s) => panic!("{text:?} should fail, got {s:?}"),
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::Syntax);
            assert!(e.span.is_some(), "no span: {e:?}");
            e
        }
    }
}

fn first_pattern(text: &str) -> PathPattern {
    match clauses(text).remove(0) {
        Clause::Match { mut patterns, .. } => patterns.remove(0),
        other => panic!("not a match: {other:?}"),
    }
}

/// A compact rendering of expressions to check precedence.
fn show(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Literal(Literal::Integer(i)) => i.to_string(),
        ExprKind::Literal(Literal::Float(f)) => format!("{f:?}"),
        ExprKind::Literal(Literal::String(s)) => format!("'{s}'"),
        ExprKind::Literal(Literal::Bool(b)) => b.to_string(),
        ExprKind::Literal(Literal::Null) => "null".into(),
        ExprKind::Variable(v) => v.clone(),
        ExprKind::Parameter(p) => format!("${p}"),
        ExprKind::Property(b, k) => format!("{}.{}", show(b), k.name),
        ExprKind::Binary(op, l, r) => format!("({} {op:?} {})", show(l), show(r)),
        ExprKind::Unary(op, x) => format!("({op:?} {})", show(x)),
        ExprKind::Function {
            name,
            args,
            star,
            distinct,
        } => format!(
            "{}({}{}{})",
            name.name,
            if *distinct { "DISTINCT " } else { "" },
            if *star { "*" } else { "" },
            args.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::List(items) => format!(
            "[{}]",
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Index(b, i) => format!("{}[{}]", show(b), show(i)),
        ExprKind::HasLabels(b, l) => format!(
            "{}:{}",
            show(b),
            l.iter()
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(":")
        ),
        other => format!("{other:?}"),
    }
}

// ---- the issue's examples --------------------------------------------------------

#[test]
fn issue_examples() {
    let Statement::CreateNodeTable(t) =
        one("CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id))")
    else {
        panic!()
    };
    assert_eq!(t.name.name, "Person");
    assert!(!t.if_not_exists);
    let cols: Vec<_> = t
        .columns
        .iter()
        .map(|c| match &c.ty {
            TypeName::Named(n, _) => (c.name.name.as_str(), n.as_str()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        cols,
        vec![("id", "INT64"), ("name", "STRING"), ("age", "INT32")]
    );
    assert_eq!(t.primary_key.unwrap().name, "id");

    let Statement::CreateRelTable(r) =
        one("CREATE REL TABLE Knows(FROM Person TO Person, since INT32, weight DOUBLE)")
    else {
        panic!()
    };
    assert_eq!(r.connections.len(), 1);
    assert_eq!(r.connections[0].0.name, "Person");
    assert_eq!(r.connections[0].1.name, "Person");
    assert_eq!(r.columns.len(), 2);
    assert!(r.multiplicity.is_none());

    let Statement::Copy(c) = one("COPY Person FROM 'persons.csv' (HEADER=true)") else {
        panic!()
    };
    let CopyDirection::From { table, source, .. } = &c.direction else {
        panic!()
    };
    assert_eq!(table.name, "Person");
    assert_eq!(source, &CopySource::Files(vec!["persons.csv".into()]));
    assert_eq!(c.options[0].0.name, "HEADER");
    assert_eq!(c.options[0].1.kind, ExprKind::Literal(Literal::Bool(true)));

    let cl = clauses(
        "MATCH (a:Person)-[k:Knows]->(b:Person) WHERE a.age > 30 RETURN count(*), sum(k.weight)",
    );
    assert_eq!(cl.len(), 2);
    let Clause::Match {
        patterns,
        where_,
        optional,
        ..
    } = &cl[0]
    else {
        panic!()
    };
    assert!(!optional);
    let p = &patterns[0];
    assert_eq!(p.start.variable.as_ref().unwrap().name, "a");
    assert!(matches!(&p.start.labels, LabelExpr::All(l) if l[0].name == "Person"));
    let (rel, b) = &p.chain[0];
    assert_eq!(rel.direction, Direction::Right);
    assert_eq!(rel.types[0].name, "Knows");
    assert_eq!(b.variable.as_ref().unwrap().name, "b");
    assert_eq!(show(where_.as_ref().unwrap()), "(a.age Gt 30)");
    let Clause::Projection(r) = &cl[1] else {
        panic!()
    };
    assert_eq!(r.items[0].text, "count(*)");
    assert_eq!(show(&r.items[0].expr), "count(*)");
    assert_eq!(r.items[1].text, "sum(k.weight)");
}

// ---- DDL ---------------------------------------------------------------------------

#[test]
fn ddl_forms() {
    let Statement::CreateNodeTable(t) =
        one("create node table if not exists `My T`(id SERIAL PRIMARY KEY, tags STRING[], v INT64[3], s STRUCT(a INT64, b MAP(STRING, DOUBLE)), d DATE DEFAULT date('2020-01-01'))")
    else {
        panic!()
    };
    assert!(t.if_not_exists);
    assert_eq!(t.name.name, "My T");
    assert_eq!(t.primary_key.as_ref().unwrap().name, "id");
    assert!(
        matches!(&t.columns[1].ty, TypeName::List(inner) if matches!(&**inner, TypeName::Named(n, _) if n == "STRING"))
    );
    assert!(matches!(&t.columns[2].ty, TypeName::Array(_, 3)));
    assert!(
        matches!(&t.columns[3].ty, TypeName::Struct(f) if f.len() == 2 && matches!(f[1].1, TypeName::Map(..)))
    );
    assert!(t.columns[4].default.is_some());

    let Statement::CreateRelTable(r) =
        one("CREATE REL TABLE IF NOT EXISTS Likes(FROM A TO B, FROM B TO C, w DOUBLE, MANY_ONE)")
    else {
        panic!()
    };
    assert_eq!(r.connections.len(), 2);
    assert_eq!(r.multiplicity.unwrap().name, "MANY_ONE");

    assert_eq!(
        one("DROP TABLE IF EXISTS T"),
        Statement::DropTable {
            name: Ident {
                name: "T".into(),
                span: Span::new(21, 22)
            },
            if_exists: true
        }
    );
    let alter = |s: &str| match one(s) {
        Statement::AlterTable { action, .. } => action,
        other => panic!("{other:?}"),
    };
    assert!(
        matches!(alter("ALTER TABLE T ADD c INT64 DEFAULT 1"), AlterAction::AddColumn { column, .. } if column.default.is_some())
    );
    assert!(
        matches!(alter("ALTER TABLE T DROP c"), AlterAction::DropColumn { name, .. } if name.name == "c")
    );
    assert!(
        matches!(alter("ALTER TABLE T RENAME c TO d"), AlterAction::RenameColumn { from, to } if from.name == "c" && to.name == "d")
    );
    assert!(
        matches!(alter("ALTER TABLE T RENAME TO U"), AlterAction::RenameTable { to } if to.name == "U")
    );
}

#[test]
fn copy_forms() {
    let Statement::Copy(c) = one(
        r#"COPY T FROM ['a.csv', "b.csv"] (HEADER=true, delim='|', QUOTE='"', ESCAPE='\\', SKIP=1)"#,
    ) else {
        panic!()
    };
    let CopyDirection::From { source, .. } = &c.direction else {
        panic!()
    };
    assert_eq!(
        source,
        &CopySource::Files(vec!["a.csv".into(), "b.csv".into()])
    );
    let keys: Vec<_> = c.options.iter().map(|(k, _)| k.name.as_str()).collect();
    assert_eq!(keys, vec!["HEADER", "DELIM", "QUOTE", "ESCAPE", "SKIP"]);
    assert_eq!(
        c.options[3].1.kind,
        ExprKind::Literal(Literal::String("\\".into()))
    );
    let Statement::Copy(c) = one("COPY (MATCH (a) RETURN a.x) TO 'out.csv'") else {
        panic!()
    };
    assert!(
        matches!(c.direction, CopyDirection::To { source: CopyToSource::Query(_), ref path } if path == "out.csv")
    );
    let Statement::Copy(c) = one("COPY T FROM df") else {
        panic!()
    };
    assert!(matches!(
        c.direction,
        CopyDirection::From {
            source: CopySource::Variable(_),
            ..
        }
    ));
}

#[test]
fn misc_statements() {
    assert!(
        matches!(one("CALL threads=4"), Statement::SetOption { name, value } if name.name == "threads" && value.kind == ExprKind::Literal(Literal::Integer(4)))
    );
    assert!(matches!(
        one("CALL recursive_policy='nT1S'"),
        Statement::SetOption { .. }
    ));
    let cl = clauses("CALL show_tables() RETURN *");
    assert!(
        matches!(&cl[0], Clause::Call { procedure, args: Some(args), .. } if procedure.name == "show_tables" && args.is_empty())
    );
    assert!(matches!(&cl[1], Clause::Projection(p) if p.star));
    let cl = clauses("CALL table_info('Person') YIELD name AS n, type RETURN n");
    assert!(
        matches!(&cl[0], Clause::Call { yields: Some(y), args: Some(args), .. } if y.len() == 2 && args.len() == 1)
    );
    let cl = clauses("CALL test.my.proc YIELD *");
    assert!(
        matches!(&cl[0], Clause::Call { procedure, args: None, yield_star: true, yields: None, .. } if procedure.name == "test.my.proc")
    );
    assert!(matches!(
        one("EXPLAIN MATCH (a) RETURN a"),
        Statement::Explain { profile: false, .. }
    ));
    assert!(matches!(
        one("PROFILE RETURN 1"),
        Statement::Explain { profile: true, .. }
    ));
    assert_eq!(
        one("BEGIN TRANSACTION READ ONLY"),
        Statement::Begin { read_only: true }
    );
    assert_eq!(
        one("begin transaction"),
        Statement::Begin { read_only: false }
    );
    assert_eq!(one("COMMIT"), Statement::Commit);
    assert_eq!(one("ROLLBACK;"), Statement::Rollback);
    assert_eq!(one("CHECKPOINT"), Statement::Checkpoint);
}

#[test]
fn scripts() {
    let s = parse(
        ";; CREATE NODE TABLE A(id INT64, PRIMARY KEY(id)); MATCH (a) RETURN a ;;\n// done\n",
    )
    .unwrap();
    assert_eq!(s.len(), 2);
    assert!(parse("").unwrap().is_empty());
    assert!(parse("  -- ").is_err());
    let e = parse_one("RETURN 1; RETURN 2").unwrap_err();
    assert_eq!(e.span, Some(Span::new(10, 16)));
    assert!(parse_one("").is_err());
}

// ---- queries -------------------------------------------------------------------------

#[test]
fn patterns() {
    let p = first_pattern("MATCH p = (a)-[r:A|B*1..3]->(b) RETURN p");
    assert_eq!(p.variable.unwrap().name, "p");
    let (r, _) = &p.chain[0];
    assert_eq!(r.types.len(), 2);
    let range = r.range.as_ref().unwrap();
    assert_eq!(
        (range.kind, range.min, range.max),
        (RecursiveKind::Walk, Some(1), Some(3))
    );

    let p = first_pattern(
        "MATCH (a:Person:Student {name: 'x'})<-[r]-(b)-[]-(c)-->(d)<--(e)--(f)<-->(g) RETURN a",
    );
    assert!(matches!(&p.start.labels, LabelExpr::All(l) if l.len() == 2));
    assert!(
        matches!(&p.start.properties, Some(Expr { kind: ExprKind::Map(m), .. }) if m[0].0.name == "name")
    );
    let dirs: Vec<_> = p.chain.iter().map(|(r, _)| r.direction).collect();
    use Direction::*;
    assert_eq!(dirs, vec![Left, Both, Right, Left, Both, Both]);

    let p = first_pattern("MATCH (a:A|B|:C WHERE a.x > 1) RETURN a");
    assert!(matches!(&p.start.labels, LabelExpr::Any(l) if l.len() == 3));
    assert!(p.start.where_.is_some());

    let specs = [
        ("*", RecursiveKind::Walk, None, None),
        ("*2", RecursiveKind::Walk, Some(2), Some(2)),
        ("*..3", RecursiveKind::Walk, None, Some(3)),
        ("*2..", RecursiveKind::Walk, Some(2), None),
        ("* SHORTEST 1..5", RecursiveKind::Shortest, Some(1), Some(5)),
        ("* ALL SHORTEST", RecursiveKind::AllShortest, None, None),
        (
            "* WSHORTEST(weight)",
            RecursiveKind::WeightedShortest,
            None,
            None,
        ),
        (
            "* ALL WSHORTEST(weight) 1..4",
            RecursiveKind::AllWeightedShortest,
            Some(1),
            Some(4),
        ),
        ("* TRAIL 1..3", RecursiveKind::Trail, Some(1), Some(3)),
        ("*ACYCLIC", RecursiveKind::Acyclic, None, None),
        // Unbounded as openCypher writes it, and empty intervals (they
        // match nothing; not a syntax error).
        ("*..", RecursiveKind::Walk, None, None),
        ("*3..1", RecursiveKind::Walk, Some(3), Some(1)),
        ("*..0", RecursiveKind::Walk, None, Some(0)),
    ];
    for (spec, kind, min, max) in specs {
        let q = format!("MATCH (a)-[r:T{spec}]->(b) RETURN a");
        let p = first_pattern(&q);
        let s = p.chain[0].0.range.clone().unwrap();
        assert_eq!((s.kind, s.min, s.max), (kind, min, max), "{spec}");
        if kind == RecursiveKind::WeightedShortest {
            assert_eq!(s.weight.unwrap().name, "weight");
        }
    }
    let p = first_pattern(
        "MATCH (a)-[r:Knows*1..3 (e, n | WHERE e.since > 2000 AND n.x = 1)]->(b) RETURN a",
    );
    let s = p.chain[0].0.range.clone().unwrap();
    assert_eq!(s.rel_var.unwrap().name, "e");
    assert_eq!(s.node_var.unwrap().name, "n");
    assert!(s.predicate.is_some());

    let p = first_pattern("MATCH p = shortestPath((a)-[*]-(b)) RETURN p");
    assert_eq!(p.shortest, Some(ShortestKind::Shortest));
    assert_eq!(p.variable.unwrap().name, "p");
    let p = first_pattern("MATCH allShortestPaths((a)-[*..5]->(b)) RETURN 1");
    assert_eq!(p.shortest, Some(ShortestKind::AllShortest));

    let cl = clauses("OPTIONAL MATCH (a), (b)-[:R {w: 1}]->(c) RETURN a");
    assert!(
        matches!(&cl[0], Clause::Match { optional: true, patterns, .. } if patterns.len() == 2)
    );
}

#[test]
fn projections() {
    let cl = clauses("MATCH (a) WITH DISTINCT a, a.x AS x ORDER BY x DESC, a.y SKIP 1 LIMIT $n WHERE x > 1 RETURN *, x ORDER BY x ASC LIMIT 10");
    let Clause::Projection(w) = &cl[1] else {
        panic!()
    };
    assert!(w.is_with && w.distinct);
    assert_eq!(w.items[1].alias.as_ref().unwrap().name, "x");
    assert_eq!(w.items[1].text, "a.x");
    assert_eq!(w.order_by.len(), 2);
    assert!(w.order_by[0].descending && !w.order_by[1].descending);
    assert!(w.skip.is_some());
    assert_eq!(
        w.limit.as_ref().unwrap().kind,
        ExprKind::Parameter("n".into())
    );
    assert!(w.where_.is_some());
    let Clause::Projection(r) = &cl[2] else {
        panic!()
    };
    assert!(r.star && !r.is_with);
    assert_eq!(r.items.len(), 1);
    let p = ret("RETURN  (1 + 2) * 3 ,  a . b AS c");
    assert_eq!(p.items[0].text, "(1 + 2) * 3");
    assert_eq!(p.items[1].text, "a . b");

    let q = query("MATCH (a) RETURN a UNION ALL MATCH (b) RETURN b UNION RETURN 1 AS a");
    assert_eq!(q.parts.len(), 3);
    assert_eq!(q.union_all, vec![true, false]);
    let cl = clauses("UNWIND [1, 2, 3] AS x RETURN x");
    assert!(matches!(&cl[0], Clause::Unwind { alias, .. } if alias.name == "x"));
}

#[test]
fn updates() {
    let cl = clauses("CREATE (a:Person {id: 1})-[:Knows {since: 2000}]->(b:Person {id: 2}), (c)");
    assert!(matches!(&cl[0], Clause::Create { patterns, .. } if patterns.len() == 2));
    let cl = clauses(
        "MERGE (a:P {id: 1}) ON CREATE SET a.created = timestamp() ON MATCH SET a.seen = a.seen + 1, a:Seen",
    );
    let Clause::Merge {
        on_create,
        on_match,
        ..
    } = &cl[0]
    else {
        panic!()
    };
    assert_eq!(on_create.len(), 1);
    assert_eq!(on_match.len(), 2);
    let cl = clauses(
        "MATCH (a) SET a.p = 1, a += {x: 1}, a = {y: 2}, a:L:M REMOVE a.p, a:L DETACH DELETE a, b",
    );
    let Clause::Set { items, .. } = &cl[1] else {
        panic!()
    };
    assert!(matches!(&items[0], SetItem::Property { target, .. } if show(target) == "a.p"));
    assert!(matches!(&items[1], SetItem::Merge { variable, .. } if variable.name == "a"));
    assert!(matches!(&items[2], SetItem::Replace { .. }));
    assert!(matches!(&items[3], SetItem::Labels { labels, .. } if labels.len() == 2));
    let Clause::Remove { items, .. } = &cl[2] else {
        panic!()
    };
    assert!(matches!(&items[0], RemoveItem::Property(_)));
    assert!(matches!(&items[1], RemoveItem::Labels { .. }));
    assert!(matches!(&cl[3], Clause::Delete { detach: true, exprs, .. } if exprs.len() == 2));
    assert!(matches!(
        &clauses("MATCH (a) DELETE a")[1],
        Clause::Delete { detach: false, .. }
    ));
}

// ---- expressions -----------------------------------------------------------------------

#[test]
fn precedence() {
    let cases = [
        ("1 + 2 * 3", "(1 Add (2 Mul 3))"),
        ("1 - 2 - 3", "((1 Sub 2) Sub 3)"),
        ("a OR b XOR c AND NOT d", "(a Or (b Xor (c And (Not d))))"),
        ("NOT a = b", "(Not (a Eq b))"),
        ("a < b + 1", "(a Lt (b Add 1))"),
        ("-2 ^ 2", "((Neg 2) Pow 2)"),
        ("2 ^ 3 * 4", "((2 Pow 3) Mul 4)"),
        ("a.b.c[0]", "a.b.c[0]"),
        (
            "x IS NOT NULL AND y IS NULL",
            "((IsNotNull x) And (IsNull y))",
        ),
        ("a = b IN [1, 2]", "(a Eq (b In [1, 2]))"),
        (
            "s STARTS WITH 'a' OR s ENDS WITH 'b' OR s CONTAINS 'c'",
            "(((s StartsWith 'a') Or (s EndsWith 'b')) Or (s Contains 'c'))",
        ),
        ("s =~ 'a.*'", "(s RegexMatch 'a.*')"),
        ("a <> b AND a != c", "((a Ne b) And (a Ne c))"),
        ("10 % 3 / 2", "((10 Mod 3) Div 2)"),
        ("n:Person", "n:Person"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("1e3 + .5", "(1000.0 Add 0.5)"),
        ("count(DISTINCT a.x)", "count(DISTINCT a.x)"),
        ("date.truncate('month', d)", "date.truncate('month', d)"),
        ("$p + $1", "($p Add $1)"),
        ("[1, 'a', null, true]", "[1, 'a', null, true]"),
        ("a<-1", "(a Lt (Neg 1))"),
        ("0x1F + 0o17 + 0X1f + 0O17", "(((31 Add 15) Add 31) Add 15)"),
        ("-0x8000000000000000", "-9223372036854775808"),
        ("-0o1000000000000000000000", "-9223372036854775808"),
    ];
    for (text, want) in cases {
        assert_eq!(show(&expr(text)), want, "{text}");
    }
}

#[test]
fn compound_expressions() {
    assert!(
        matches!(expr("CASE WHEN a THEN 1 WHEN b THEN 2 ELSE 3 END").kind, ExprKind::Case { operand: None, ref whens, else_: Some(_) } if whens.len() == 2)
    );
    assert!(matches!(
        expr("CASE x WHEN 1 THEN 'a' END").kind,
        ExprKind::Case {
            operand: Some(_),
            ..
        }
    ));
    assert!(matches!(
        expr("[x IN l WHERE x > 1 | x * 2]").kind,
        ExprKind::ListComprehension {
            predicate: Some(_),
            projection: Some(_),
            ..
        }
    ));
    assert!(matches!(
        expr("[x IN l | x]").kind,
        ExprKind::ListComprehension {
            predicate: None,
            ..
        }
    ));
    assert!(matches!(
        expr("all(x IN l WHERE x > 0)").kind,
        ExprKind::Quantifier {
            kind: Quantifier::All,
            ..
        }
    ));
    assert!(matches!(
        expr("single(x IN l WHERE x > 0)").kind,
        ExprKind::Quantifier {
            kind: Quantifier::Single,
            ..
        }
    ));
    assert!(matches!(
        expr("reduce(s = 0, x IN l | s + x)").kind,
        ExprKind::Reduce { .. }
    ));
    assert!(
        matches!(expr("{a: 1, `b c`: [2]}").kind, ExprKind::Map(ref m) if m.len() == 2 && m[1].0.name == "b c")
    );
    assert!(matches!(
        expr("l[1..2]").kind,
        ExprKind::Slice(_, Some(_), Some(_))
    ));
    assert!(matches!(
        expr("l[..2]").kind,
        ExprKind::Slice(_, None, Some(_))
    ));
    assert!(matches!(
        expr("l[1..]").kind,
        ExprKind::Slice(_, Some(_), None)
    ));
    assert!(matches!(
        expr("[(a)-[:R]->(b) WHERE b.x > 1 | b.name]").kind,
        ExprKind::PatternComprehension {
            predicate: Some(_),
            ..
        }
    ));
    assert!(
        matches!(expr("[p = (a)-->(b) | p]").kind, ExprKind::PatternComprehension { ref pattern, .. } if pattern.variable.is_some())
    );
    assert!(matches!(expr("[(1), (2)]").kind, ExprKind::List(ref l) if l.len() == 2));
    assert!(matches!(
        expr("((1 + 2))").kind,
        ExprKind::Binary(BinaryOp::Add, ..)
    ));
    assert!(
        matches!(expr("'a\\tb\\u0041'").kind, ExprKind::Literal(Literal::String(ref s)) if s == "a\tbA")
    );

    let cl = clauses("MATCH (a) WHERE (a)-[:R]->(:B) AND NOT (a)<--() RETURN a");
    let Clause::Match {
        where_: Some(w), ..
    } = &cl[0]
    else {
        panic!()
    };
    let ExprKind::Binary(BinaryOp::And, l, r) = &w.kind else {
        panic!("{w:?}")
    };
    assert!(matches!(l.kind, ExprKind::PatternPredicate(_)));
    assert!(
        matches!(&r.kind, ExprKind::Unary(UnaryOp::Not, x) if matches!(x.kind, ExprKind::PatternPredicate(_)))
    );

    let cl = clauses("MATCH (a) WHERE EXISTS { MATCH (a)-->(b) WHERE b.x = 1 } AND EXISTS { (a)-[:R]->() } AND COUNT { (a)--() } > 2 RETURN a");
    let Clause::Match {
        where_: Some(w), ..
    } = &cl[0]
    else {
        panic!()
    };
    let s = format!("{w:?}");
    assert_eq!(s.matches("Exists(").count(), 2, "{s}");
    assert!(s.contains("CountSubquery("));
}

#[test]
fn cast_forms() {
    // `CAST(x AS type)`: any type name the DDL takes, in any case.
    let e = expr("CAST(a.x AS INT64)");
    let ExprKind::Cast(inner, TypeName::Named(name, span)) = &e.kind else {
        panic!("{e:?}")
    };
    assert_eq!(show(inner), "a.x");
    assert_eq!(name, "INT64");
    assert_eq!(*span, Span::new(19, 24));
    assert_eq!(e.span, Span::new(7, 25));
    assert_eq!(
        ret("RETURN CAST(1 AS STRING)").items[0].text,
        "CAST(1 AS STRING)"
    );
    assert!(matches!(
        expr("cast(1 + 2 as string[])").kind,
        ExprKind::Cast(ref x, TypeName::List(ref t))
            if show(x) == "(1 Add 2)" && matches!(**t, TypeName::Named(ref n, _) if n == "STRING")
    ));
    assert!(matches!(
        expr("Cast('x' AS MAP(STRING, INT64))").kind,
        ExprKind::Cast(_, TypeName::Map(..))
    ));
    // Kùzu's `CAST(x, 'type')` stays a call (the binder reads the text).
    assert_eq!(show(&expr("CAST(x, 'INT64')")), "CAST(x, 'INT64')");
    // CAST is no keyword: a name like any other.
    assert_eq!(show(&expr("cast")), "cast");
    assert_eq!(show(&expr("cast.x + 1")), "(cast.x Add 1)");
    assert_eq!(show(&expr("cast(x)")), "cast(x)");

    let e = err("RETURN CAST(1 AS)");
    assert_eq!(e.span, Some(Span::new(16, 17)));
    assert!(e.message.contains("expected a type name"), "{}", e.message);
    let e = err("RETURN CAST(1 AS INT64");
    assert_eq!(e.span, Some(Span::new(22, 22)));
    assert!(
        e.message
            .contains("expected ')' to close CAST(... AS type)"),
        "{}",
        e.message
    );
    let e = err("RETURN CAST(1 AS INT64, 2)");
    assert_eq!(e.span, Some(Span::new(22, 23)));
    // AS belongs to CAST only, and not after DISTINCT or a second argument.
    assert!(err("RETURN toString(1 AS STRING)")
        .message
        .contains("unexpected 'AS'"));
    assert!(err("RETURN CAST(DISTINCT 1 AS INT64)")
        .message
        .contains("unexpected 'AS'"));
    assert!(err("RETURN CAST(1, 2 AS INT64)")
        .message
        .contains("unexpected 'AS'"));
}

#[test]
fn type_names_on_their_own() {
    assert!(matches!(parse_type("int64"), Ok(TypeName::Named(ref n, _)) if n == "INT64"));
    assert!(matches!(
        parse_type(" STRUCT(a INT64, b STRING[]) "),
        Ok(TypeName::Struct(ref f)) if f.len() == 2
    ));
    let e = parse_type("INT64 x").unwrap_err();
    assert_eq!(e.span, Some(Span::new(6, 7)));
    assert!(parse_type("").is_err());
    assert!(parse_type("INT64[").is_err());
    assert!(parse_type("'x'").is_err());
}

#[test]
fn spans_of_expressions() {
    let e = expr("a.name + 1");
    assert_eq!(e.span, Span::new(7, 17));
    let p = ret("RETURN count(*) AS c, f(x)");
    assert_eq!(p.items[0].text, "count(*)");
    assert_eq!(p.items[1].text, "f(x)");
}

// ---- errors ---------------------------------------------------------------------------

#[test]
fn error_messages_and_spans() {
    let e = err("MATCH (a:Person RETURN a");
    assert_eq!(e.span, Some(Span::new(16, 22)));
    assert!(
        e.message.contains("unexpected 'RETURN'") && e.message.contains("expected ')'"),
        "{}",
        e.message
    );

    let e = err("RETRN 1");
    assert_eq!(e.span, Some(Span::new(0, 5)));
    assert!(
        e.message
            .starts_with("unexpected 'RETRN', expected a statement: MATCH"),
        "{}",
        e.message
    );

    let e = err("MATCH (a) RETRN a");
    assert_eq!(e.span, Some(Span::new(10, 15)));
    assert!(
        e.message.contains("expected MATCH") && e.message.contains("RETURN"),
        "{}",
        e.message
    );

    let e = err("RETURN 'abc");
    assert_eq!(e.span, Some(Span::new(7, 11)));
    assert!(e.message.contains("unterminated string"));

    let e = err("RETURN 1 )");
    assert_eq!(e.span, Some(Span::new(9, 10)));

    let e = err("RETURN 1 +");
    assert_eq!(e.span, Some(Span::new(10, 10)));
    assert!(
        e.message.contains("end of input") && e.message.contains("expected an expression"),
        "{}",
        e.message
    );

    let e = err("RETURN 9223372036854775808");
    assert_eq!(e.message, "integer literal out of range");
    assert_eq!(e.span, Some(Span::new(7, 26)));
    assert!(err("RETURN 99999999999999999999999")
        .message
        .contains("out of range"));
    // Hex and octal literals: missing or invalid digits, range.
    let e = err("RETURN 0o18");
    assert_eq!(e.message, "invalid number '0o18'");
    assert_eq!(e.span, Some(Span::new(7, 11)));
    let e = err("RETURN 0x");
    assert_eq!(e.message, "invalid number '0x'");
    assert_eq!(e.span, Some(Span::new(7, 9)));
    assert!(err("RETURN 0o9").message.contains("invalid number '0o9'"));
    assert!(err("RETURN 0o1000000000000000000000")
        .message
        .contains("out of range"));
    assert!(err("RETURN -0x8000000000000001")
        .message
        .contains("out of range"));

    let e = err("RETURN count(*");
    assert_eq!(e.span, Some(Span::new(14, 14)));
    assert!(e.message.contains("expected ')'"), "{}", e.message);

    let e = err("RETURN f(1, 2");
    assert!(e.message.contains("expected ')'"), "{}", e.message);

    let e = err("CREATE NODE TABLE T(id INT64,)");
    assert_eq!(e.span, Some(Span::new(29, 30)));

    let e = err("MATCH (a) RETURN a\nLIMIT");
    let rendered = e.with_source("MATCH (a) RETURN a\nLIMIT").to_string();
    assert!(rendered.contains("line 2"), "{rendered}");

    let e = err("MATCH (a) WHERE RETURN a");
    assert!(
        e.message
            .contains("unexpected 'RETURN', expected an expression"),
        "{}",
        e.message
    );

    let e = err("RETURN 1 /* open");
    assert!(e.message.contains("unterminated comment"));
    let e = err("RETURN #");
    assert_eq!(e.span, Some(Span::new(7, 8)));
    err("CALL threads=");
    err("COPY T FROM 'x' (HEADER=)");
    err("CREATE REL TABLE R(a INT64)");
    err("MATCH (a:A:B|C) RETURN a");
    err(&"(".repeat(10_000));
    err(&format!("RETURN {}", vec!["1"; 5000].join(" + ")));
    err(&format!("RETURN a{}", ".b".repeat(5000)));
    parse(&format!("RETURN {}", vec!["1"; 500].join(" OR "))).unwrap();
    parse(&format!("RETURN {}1{}", "(".repeat(20), ")".repeat(20))).unwrap();
    // Right at the nesting limit, none of these may overflow the stack (debug builds
    // included); they either parse or report "nested too deeply".
    for n in [20, 25, 50, 90, 99, 100, 101, 150] {
        let _ = parse(&format!("RETURN {}1{}", "(".repeat(n), ")".repeat(n)));
        let _ = parse(&format!("RETURN {}1{}", "[".repeat(n), "]".repeat(n)));
        let _ = parse(&format!("RETURN {}1{}", "{a: ".repeat(n), "}".repeat(n)));
        let _ = parse(&format!("RETURN {}1{}", "f(-NOT ".repeat(n), ")".repeat(n)));
        let _ = parse(&format!(
            "MATCH {}(b){} RETURN 1",
            "(a {k: ".repeat(n),
            "})".repeat(n)
        ));
        let _ = parse(&format!(
            "MATCH (a) WHERE {}(a)-->(b){} RETURN 1",
            "EXISTS { MATCH (x) WHERE ".repeat(n),
            "}".repeat(n)
        ));
        let _ = parse(&format!(
            "RETURN {}1{}",
            "CASE WHEN ".repeat(n),
            " THEN 1 END".repeat(n)
        ));
    }
    err(&format!("RETURN {}1", "-".repeat(10_000)));
}

#[test]
fn no_panic_on_truncations_and_mutations() {
    let corpus = [
        "CREATE NODE TABLE Person(id INT64, name STRING, age INT32, PRIMARY KEY(id))",
        "CREATE REL TABLE Knows(FROM Person TO Person, since INT32, weight DOUBLE, MANY_ONE)",
        "COPY Person FROM ['a.csv','b.csv'] (HEADER=true, DELIM='|')",
        "MATCH p = (a:Person)-[k:Knows*1..3 (r, n | WHERE r.since > 2000)]->(b) WHERE a.age > 30 RETURN count(*), sum(k.weight) ORDER BY 1 DESC LIMIT 3",
        "MATCH (a) WHERE EXISTS { (a)-->() } AND [x IN [1,2] WHERE x > 1 | x][0] = 2 RETURN CASE WHEN a.x THEN 'é' ELSE \"b\" END",
        "MERGE (a {id: $id}) ON CREATE SET a += {x: -1.5e3} WITH a UNWIND range(1, 3) AS i RETURN i UNION ALL RETURN 2",
    ];
    for q in corpus {
        assert!(parse(q).is_ok(), "{q}");
        for (i, _) in q.char_indices() {
            let _ = parse(&q[..i]);
            let _ = parse(&q[i..]);
            let mut s = q.to_string();
            s.remove(i);
            let _ = parse(&s);
        }
    }
}

mod prop {
    use proptest::prelude::*;

    const PIECES: &[&str] = &[
        "MATCH",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "-",
        "->",
        "<-",
        "*",
        "..",
        "1",
        "a",
        ":",
        ",",
        "RETURN",
        "WHERE",
        "=",
        "'s'",
        "$p",
        "|",
        "CASE",
        "END",
        "EXISTS",
        "CREATE",
        "NODE",
        "TABLE",
        "COPY",
        "FROM",
        "AS",
        ".",
        "x",
        "IN",
        "WITH",
        ";",
        "NOT",
        "9223372036854775808",
        "2.5",
        "SHORTEST",
        "`q`",
        "OPTIONAL",
        "ALL",
        "count",
        "ON",
        "SET",
        "+",
        "=~",
        "IS",
        "NULL",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = crate::parse(&text);
        }

        #[test]
        fn random_token_soup_never_panics(idx in proptest::collection::vec(0..PIECES.len(), 0..40)) {
            let text: Vec<&str> = idx.iter().map(|&i| PIECES[i]).collect();
            let text = text.join(" ");
            if let Err(e) = crate::parse(&text) {
                let span = e.span.expect("syntax errors carry a span");
                prop_assert!(span.end as usize <= text.len());
                let _ = e.with_source(&text).to_string();
            }
        }
    }
}

#[test]
fn map_projections() {
    let ExprKind::MapProjection(base, items) = expr("n {.name, .*, k: 1 + 2, m}").kind else {
        panic!("not a map projection");
    };
    assert!(matches!(base.kind, ExprKind::Variable(ref v) if v == "n"));
    assert!(matches!(&items[0], MapProjectionItem::Property(k) if k.name == "name"));
    assert!(matches!(&items[1], MapProjectionItem::AllProperties(_)));
    assert!(matches!(&items[2], MapProjectionItem::Literal(k, e)
        if k.name == "k" && matches!(e.kind, ExprKind::Binary(..))));
    assert!(matches!(&items[3], MapProjectionItem::Variable(v) if v.name == "m"));
    assert!(matches!(expr("n {}").kind, ExprKind::MapProjection(_, ref i) if i.is_empty()));
    // Only a variable is projected: a map literal after another
    // expression is not a projection.
    err("RETURN n.x {.a}");
    err("RETURN n {.a");
    err("RETURN n {.}");
}
