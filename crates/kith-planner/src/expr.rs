//! Bound expressions: names resolved, types inferred, ready for the executor.

use kith_common::{LogicalType, Span, Value};
pub use kith_parser::ast::{BinaryOp, UnaryOp};

/// A value computed by an operator (a property, a node or rel id, an aggregate
/// result, a projected column). Operators write slots into the result set; the
/// physical plan's layout says where each slot lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotId(pub u32);

#[derive(Debug, Clone, PartialEq)]
pub struct BoundExpr {
    pub kind: BoundExprKind,
    /// The result type. Binary arithmetic on integers is INT64, on any float
    /// DOUBLE; comparisons and logic are BOOL.
    pub ty: LogicalType,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BoundExprKind {
    Literal(Value),
    /// `$name`; the value is supplied at execution.
    Parameter(String),
    Slot(SlotId),
    Unary(UnaryOp, Box<BoundExpr>),
    Binary(BinaryOp, Box<BoundExpr>, Box<BoundExpr>),
    /// A scalar function by lower-case name (aggregates never appear here: the
    /// planner turns them into slots of an aggregate operator).
    Function(String, Vec<BoundExpr>),
    /// Convert the operand to `ty`.
    Cast(Box<BoundExpr>),
    Case {
        operand: Option<Box<BoundExpr>>,
        whens: Vec<(BoundExpr, BoundExpr)>,
        else_: Option<Box<BoundExpr>>,
    },
    List(Vec<BoundExpr>),
}

impl BoundExpr {
    pub fn literal(v: Value, span: Span) -> BoundExpr {
        let ty = v.logical_type();
        BoundExpr {
            kind: BoundExprKind::Literal(v),
            ty,
            span,
        }
    }

    pub fn slot(slot: SlotId, ty: LogicalType, span: Span) -> BoundExpr {
        BoundExpr {
            kind: BoundExprKind::Slot(slot),
            ty,
            span,
        }
    }

    /// Every slot the expression reads.
    pub fn slots(&self, out: &mut Vec<SlotId>) {
        match &self.kind {
            BoundExprKind::Slot(s) => out.push(*s),
            BoundExprKind::Literal(_) | BoundExprKind::Parameter(_) => {}
            BoundExprKind::Unary(_, e) | BoundExprKind::Cast(e) => e.slots(out),
            BoundExprKind::Binary(_, a, b) => {
                a.slots(out);
                b.slots(out);
            }
            BoundExprKind::Function(_, args) | BoundExprKind::List(args) => {
                args.iter().for_each(|a| a.slots(out))
            }
            BoundExprKind::Case {
                operand,
                whens,
                else_,
            } => {
                if let Some(o) = operand {
                    o.slots(out);
                }
                for (w, t) in whens {
                    w.slots(out);
                    t.slots(out);
                }
                if let Some(e) = else_ {
                    e.slots(out);
                }
            }
        }
    }
}
