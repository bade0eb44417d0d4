//! The scalar function table: one [`ScalarFunction`] per function, defined
//! in its family's module, found by name with [`scalar`]. The binder asks an
//! entry's type rule, the evaluator calls its body; both read the same entry,
//! so neither side can know a name the other does not.

use kith_common::{LogicalType, Result, Value};

use crate::{conversion, graph, list, numeric, string, temporal};

/// A scalar function body: argument values in, one value out.
pub type ScalarFn = fn(&[Value]) -> Result<Value>;

/// A type rule: the result type for these argument types (the name as
/// called, for messages), or a type error. Called once per call site when a
/// query is compiled.
pub type TypeRule = fn(&str, &[LogicalType]) -> Result<LogicalType>;

/// One built-in scalar function.
#[derive(Debug)]
pub struct ScalarFunction {
    /// Lower-case names it is called by; the first is its own.
    pub names: &'static [&'static str],
    pub result_type: TypeRule,
    pub func: ScalarFn,
    /// When true the evaluator returns NULL without calling `func` if any
    /// argument is NULL.
    pub propagate_nulls: bool,
    /// Written by the binder only (`_node`, `_path`, ...): its arguments are
    /// the binder's encoding, so a query cannot call it by name.
    pub internal: bool,
}

impl ScalarFunction {
    /// A function that is NULL when any argument is NULL.
    pub const fn strict(
        names: &'static [&'static str],
        result_type: TypeRule,
        func: ScalarFn,
    ) -> ScalarFunction {
        ScalarFunction {
            names,
            result_type,
            func,
            propagate_nulls: true,
            internal: false,
        }
    }

    /// A function that sees NULL arguments (`coalesce`, `_node`, ...).
    pub const fn null_aware(
        names: &'static [&'static str],
        result_type: TypeRule,
        func: ScalarFn,
    ) -> ScalarFunction {
        ScalarFunction {
            propagate_nulls: false,
            ..ScalarFunction::strict(names, result_type, func)
        }
    }

    /// The same function, callable by the binder only.
    pub const fn internal(self) -> ScalarFunction {
        ScalarFunction {
            internal: true,
            ..self
        }
    }

    /// Its own name.
    pub fn name(&self) -> &'static str {
        self.names[0]
    }
}

/// The families, each a table in its module.
const FAMILIES: [&[ScalarFunction]; 6] = [
    numeric::FUNCTIONS,
    string::FUNCTIONS,
    temporal::FUNCTIONS,
    list::FUNCTIONS,
    conversion::FUNCTIONS,
    graph::FUNCTIONS,
];

/// Every scalar function, internal ones included.
pub fn all() -> impl Iterator<Item = &'static ScalarFunction> {
    FAMILIES.into_iter().flatten()
}

/// The function called `lower_name` (internal ones included: the binder
/// decides who may call what).
pub fn scalar(lower_name: &str) -> Option<&'static ScalarFunction> {
    all().find(|f| f.names.contains(&lower_name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate;
    use kith_common::ErrorKind;
    use std::collections::HashSet;

    #[test]
    fn names_are_lower_case_and_unique_across_scalars_and_aggregates() {
        let mut seen = HashSet::new();
        let names = all()
            .flat_map(|f| f.names.iter())
            .chain(aggregate::all().flat_map(|a| a.names.iter()));
        for n in names {
            assert_eq!(*n, n.to_lowercase(), "{n} is not lower case");
            assert!(seen.insert(*n), "{n} is defined twice");
        }
        assert!(seen.len() > 100, "only {} names", seen.len());
    }

    /// Every function a query may call accepts some arity of unknown
    /// arguments (a rule that rejects everything would make it a name with
    /// no callable side), and the body then runs on NULLs without an
    /// internal error.
    #[test]
    fn every_callable_function_has_a_rule_that_accepts_and_a_body_that_runs() {
        for f in all().filter(|f| !f.internal) {
            let arity = (0..=4)
                .find(|&n| (f.result_type)(f.name(), &vec![LogicalType::Any; n]).is_ok())
                .unwrap_or_else(|| panic!("{}() accepts no arity of ANY arguments", f.name()));
            let nulls = vec![Value::Null; arity];
            if f.propagate_nulls && arity > 0 {
                continue;
            }
            if let Err(e) = (f.func)(&nulls) {
                assert_ne!(e.kind, ErrorKind::Internal, "{}(): {e}", f.name());
            }
        }
    }

    #[test]
    fn a_rule_checks_arity_and_classes() {
        use LogicalType as T;
        let rule = |n: &str, args: &[T]| (scalar(n).unwrap().result_type)(n, args);
        assert_eq!(rule("abs", &[T::Int32]).unwrap(), T::Int64);
        assert_eq!(rule("round", &[T::Double]).unwrap(), T::Double);
        assert_eq!(
            rule("substring", &[T::String, T::Int64, T::Int64]).unwrap(),
            T::String
        );
        assert_eq!(
            rule("coalesce", &[T::Any, T::Int32, T::Double]).unwrap(),
            T::Double
        );
        assert_eq!(
            rule("head", &[T::List(Box::new(T::String))]).unwrap(),
            T::String
        );
        let e = rule("lower", &[T::Int64]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Type);
        let e = rule("lower", &[]).unwrap_err();
        assert!(e.message.contains("takes 1 argument"), "{}", e.message);
    }
}
