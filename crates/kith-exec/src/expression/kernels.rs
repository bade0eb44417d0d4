//! Value-at-a-time semantics of the operators: Cypher comparison and equality,
//! three-valued logic, checked arithmetic, temporal arithmetic, string
//! predicates, `IN` and regular expressions. The typed fast paths in
//! `typed.rs` must agree with these functions (a proptest checks it).

use std::cmp::Ordering;

use kith_common::temporal::{civil_from_days, days_from_civil, days_in_month, MICROS_PER_DAY};
use kith_common::{Date, Error, Interval, Result, Timestamp, Value};
use kith_planner::expr::{BinaryOp, UnaryOp};
use regex::Regex;

pub use kith_function::comparison::{compare, equals, is_int, is_num};

/// A value's key under Cypher equality (hash joins, `IN` over a constant
/// list): values that compare equal (`1 = 1.0`,
/// `0.0 = -0.0`) have the same key; NULL and NaN have none (they equal
/// nothing).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EqKey {
    Int(i64),
    /// Integers beyond i64 (UINT64, or floats that big and integral).
    UInt(u64),
    /// Non-integral floats, by bits.
    Float(u64),
    Str(String),
    Bool(bool),
    Date(i32),
    Id(u64),
}

impl EqKey {
    pub fn of(v: &Value) -> Option<EqKey> {
        let float = |f: f64| -> Option<EqKey> {
            if f.is_nan() {
                None
            } else if f.fract() == 0.0
                && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f)
            {
                Some(EqKey::Int(f as i64))
            } else if f.fract() == 0.0 && (0.0..1.844_674_407_370_955_2e19).contains(&f) {
                Some(EqKey::UInt(f as u64))
            } else {
                Some(EqKey::Float(f.to_bits()))
            }
        };
        match v {
            Value::Null => None,
            Value::Float(f) => float(*f as f64),
            Value::Double(f) => float(*f),
            Value::UInt64(u) => Some(match i64::try_from(*u) {
                Ok(i) => EqKey::Int(i),
                Err(_) => EqKey::UInt(*u),
            }),
            Value::String(s) => Some(EqKey::Str(s.clone())),
            Value::Bool(b) => Some(EqKey::Bool(*b)),
            Value::Date(d) => Some(EqKey::Date(d.0)),
            Value::InternalId(id) => Some(EqKey::Id(id.0)),
            other => other.as_i64().map(EqKey::Int),
        }
    }
}

pub fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

pub fn or3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

pub fn xor3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    Some(a? != b?)
}

/// A value as a three-valued boolean (non-booleans are a runtime error).
pub fn truth(v: &Value) -> Result<Option<bool>> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        other => Err(Error::runtime(format!(
            "expected a BOOL, got {} '{other}'",
            other.logical_type()
        ))),
    }
}

pub fn bool_value(b: Option<bool>) -> Value {
    b.map_or(Value::Null, Value::Bool)
}

fn op_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "addition",
        BinaryOp::Sub => "subtraction",
        BinaryOp::Mul => "multiplication",
        BinaryOp::Div => "division",
        BinaryOp::Mod => "modulo",
        _ => "arithmetic",
    }
}

/// Checked i64 arithmetic with Cypher's errors.
#[inline]
pub fn int_arith(op: BinaryOp, a: i64, b: i64) -> Result<i64> {
    let r = match op {
        BinaryOp::Add => a.checked_add(b),
        BinaryOp::Sub => a.checked_sub(b),
        BinaryOp::Mul => a.checked_mul(b),
        BinaryOp::Div | BinaryOp::Mod if b == 0 => return Err(Error::runtime("division by zero")),
        BinaryOp::Div => a.checked_div(b),
        BinaryOp::Mod => a.checked_rem(b),
        _ => return Err(Error::internal(format!("{op:?} is not integer arithmetic"))),
    };
    r.ok_or_else(|| overflow(op))
}

#[cold]
pub fn overflow(op: BinaryOp) -> Error {
    Error::runtime(format!("integer overflow in {}", op_name(op)))
}

#[inline]
pub fn float_arith(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Mod => a % b,
        _ => a.powf(b),
    }
}

/// Whether a comparison operator holds for ordering `o`.
#[inline]
pub fn cmp_holds(op: BinaryOp, o: Ordering) -> bool {
    match op {
        BinaryOp::Eq => o == Ordering::Equal,
        BinaryOp::Ne => o != Ordering::Equal,
        BinaryOp::Lt => o == Ordering::Less,
        BinaryOp::Le => o != Ordering::Greater,
        BinaryOp::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }
}

fn add_months_days(days: i64, months: i32) -> i64 {
    if months == 0 {
        return days;
    }
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + (m as i64 - 1) + months as i64;
    let ny = total.div_euclid(12);
    let nm = (total.rem_euclid(12) + 1) as u32;
    days_from_civil(ny, nm, d.min(days_in_month(ny, nm)))
}

fn neg_interval(i: Interval) -> Interval {
    Interval {
        months: -i.months,
        days: -i.days,
        micros: -i.micros,
    }
}

pub fn date_add(d: Date, i: Interval) -> Result<Date> {
    let days =
        add_months_days(d.0 as i64, i.months) + i.days as i64 + i.micros.div_euclid(MICROS_PER_DAY);
    i32::try_from(days)
        .map(Date)
        .map_err(|_| Error::runtime("date out of range"))
}

pub fn timestamp_add(t: Timestamp, i: Interval) -> Result<Timestamp> {
    let days = t.0.div_euclid(MICROS_PER_DAY);
    let rem = t.0.rem_euclid(MICROS_PER_DAY);
    let days = add_months_days(days, i.months) + i.days as i64;
    days.checked_mul(MICROS_PER_DAY)
        .and_then(|x| x.checked_add(rem))
        .and_then(|x| x.checked_add(i.micros))
        .map(Timestamp)
        .ok_or_else(|| Error::runtime("timestamp out of range"))
}

/// Arithmetic on two values (`+ - * / % ^`), NULL-propagating.
pub fn arith(op: BinaryOp, a: &Value, b: &Value) -> Result<Value> {
    use Value::*;
    if a.is_null() || b.is_null() {
        return Ok(Null);
    }
    if op == BinaryOp::Pow {
        return match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => Ok(Double(x.powf(y))),
            _ => Err(type_mismatch(op, a, b)),
        };
    }
    if is_num(a) && is_num(b) {
        if is_int(a) && is_int(b) {
            let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) else {
                return Err(overflow(op));
            };
            return Ok(Int64(int_arith(op, x, y)?));
        }
        return Ok(Double(float_arith(
            op,
            a.as_f64().unwrap_or(0.0),
            b.as_f64().unwrap_or(0.0),
        )));
    }
    Ok(match (op, a, b) {
        (BinaryOp::Add, List(x), List(y)) => {
            Value::list(x.iter().chain(y.iter()).cloned().collect())
        }
        (BinaryOp::Add, List(x), y) => Value::list(x.iter().chain([y]).cloned().collect()),
        (BinaryOp::Add, x, List(y)) => {
            Value::list([x].into_iter().chain(y.iter()).cloned().collect())
        }
        (BinaryOp::Add, String(x), String(y)) => String(format!("{x}{y}")),
        (BinaryOp::Add, String(x), y) => String(format!("{x}{y}")),
        (BinaryOp::Add, x, String(y)) => String(format!("{x}{y}")),
        (BinaryOp::Add, Date(d), Interval(i)) | (BinaryOp::Add, Interval(i), Date(d)) => {
            Date(date_add(*d, *i)?)
        }
        (BinaryOp::Sub, Date(d), Interval(i)) => Date(date_add(*d, neg_interval(*i))?),
        (BinaryOp::Add, Timestamp(t), Interval(i)) | (BinaryOp::Add, Interval(i), Timestamp(t)) => {
            Timestamp(timestamp_add(*t, *i)?)
        }
        (BinaryOp::Sub, Timestamp(t), Interval(i)) => {
            Timestamp(timestamp_add(*t, neg_interval(*i))?)
        }
        (BinaryOp::Add | BinaryOp::Sub, Interval(x), Interval(y)) => {
            let y = if op == BinaryOp::Sub {
                neg_interval(*y)
            } else {
                *y
            };
            Interval(kith_common::Interval {
                months: x.months.checked_add(y.months).ok_or_else(|| overflow(op))?,
                days: x.days.checked_add(y.days).ok_or_else(|| overflow(op))?,
                micros: x.micros.checked_add(y.micros).ok_or_else(|| overflow(op))?,
            })
        }
        (BinaryOp::Sub, Date(x), Date(y)) => Int64(x.0 as i64 - y.0 as i64),
        (BinaryOp::Sub, Timestamp(x), Timestamp(y)) => Interval(kith_common::Interval {
            months: 0,
            days: 0,
            micros: x.0.checked_sub(y.0).ok_or_else(|| overflow(op))?,
        }),
        _ => match duration_op(op).and_then(|d| kith_function::temporal::arith(d, a, b)) {
            Some(r) => r?,
            None => return Err(type_mismatch(op, a, b)),
        },
    })
}

/// The duration arithmetic `op` stands for, if any.
fn duration_op(op: BinaryOp) -> Option<kith_function::temporal::DurationOp> {
    use kith_function::temporal::DurationOp as D;
    Some(match op {
        BinaryOp::Add => D::Add,
        BinaryOp::Sub => D::Sub,
        BinaryOp::Mul => D::Mul,
        BinaryOp::Div => D::Div,
        _ => return None,
    })
}

fn type_mismatch(op: BinaryOp, a: &Value, b: &Value) -> Error {
    Error::runtime(format!(
        "cannot apply {op:?} to {} and {}",
        a.logical_type(),
        b.logical_type()
    ))
}

/// Comparison operators on two values.
pub fn comparison(op: BinaryOp, a: &Value, b: &Value) -> Option<bool> {
    match op {
        BinaryOp::Eq => equals(a, b),
        BinaryOp::Ne => equals(a, b).map(|e| !e),
        _ => {
            if a.is_null() || b.is_null() {
                return None;
            }
            match compare(a, b) {
                Some(o) => Some(cmp_holds(op, o)),
                // Numbers always order; only NaN does not: every ordering
                // with NaN is false.
                None if is_num(a) && is_num(b) => Some(false),
                None => None,
            }
        }
    }
}

/// `x IN list`.
pub fn in_list(x: &Value, list: &Value) -> Result<Option<bool>> {
    let items = match list {
        Value::Null => return Ok(None),
        Value::List(items) => items,
        other => {
            return Err(Error::runtime(format!(
                "IN expects a LIST on its right, got {}",
                other.logical_type()
            )))
        }
    };
    let mut unknown = false;
    for item in items.iter() {
        match equals(x, item) {
            Some(true) => return Ok(Some(true)),
            None => unknown = true,
            Some(false) => {}
        }
    }
    Ok(if unknown { None } else { Some(false) })
}

/// `x IN list` for one list and many `x`: the list's items hashed once
/// ([`EqKey`]), so each test is a lookup instead of a scan of the list.
pub struct InList {
    keys: hashbrown::HashSet<EqKey>,
    has_null: bool,
    list: Value,
}

impl InList {
    /// None when `list` is not a list of NULLs and hashable scalars (then
    /// [`in_list`] decides each test).
    pub fn of(list: &Value) -> Option<InList> {
        let Value::List(items) = list else {
            return None;
        };
        let mut keys = hashbrown::HashSet::with_capacity(items.len());
        let mut has_null = false;
        for item in items.iter() {
            match (item, EqKey::of(item)) {
                (Value::Null, _) => has_null = true,
                (_, Some(k)) => {
                    keys.insert(k);
                }
                (_, None) => return None,
            }
        }
        Some(InList {
            keys,
            has_null,
            list: list.clone(),
        })
    }

    /// The same as `in_list(x, list)`.
    pub fn test(&self, x: &Value) -> Result<Option<bool>> {
        if x.is_null() {
            // NULL IN [] is false; against any item it is unknown.
            let empty = self.keys.is_empty() && !self.has_null;
            return Ok(if empty { Some(false) } else { None });
        }
        match EqKey::of(x) {
            Some(k) if self.keys.contains(&k) => Ok(Some(true)),
            Some(_) => Ok(if self.has_null { None } else { Some(false) }),
            None => in_list(x, &self.list),
        }
    }
}

/// Compiles a Cypher regular expression (matches the whole string).
pub fn compile_regex(pattern: &str) -> Result<Regex> {
    Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| Error::runtime(format!("invalid regular expression '{pattern}': {e}")))
}

/// String predicates and `=~`; `regex` is a precompiled pattern when the
/// right side is a literal.
pub fn string_pred(
    op: BinaryOp,
    a: &Value,
    b: &Value,
    regex: Option<&Regex>,
) -> Result<Option<bool>> {
    let (Value::String(s), Value::String(p)) = (a, b) else {
        return Ok(None);
    };
    Ok(Some(match op {
        BinaryOp::StartsWith => s.starts_with(p.as_str()),
        BinaryOp::EndsWith => s.ends_with(p.as_str()),
        BinaryOp::Contains => s.contains(p.as_str()),
        _ => match regex {
            Some(r) => r.is_match(s),
            None => compile_regex(p)?.is_match(s),
        },
    }))
}

/// Any binary operator on two values (generic path).
pub fn binary(op: BinaryOp, a: &Value, b: &Value, regex: Option<&Regex>) -> Result<Value> {
    Ok(match op {
        BinaryOp::And => bool_value(and3(truth(a)?, truth(b)?)),
        BinaryOp::Or => bool_value(or3(truth(a)?, truth(b)?)),
        BinaryOp::Xor => bool_value(xor3(truth(a)?, truth(b)?)),
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            bool_value(comparison(op, a, b))
        }
        BinaryOp::Add
        | BinaryOp::Sub
        | BinaryOp::Mul
        | BinaryOp::Div
        | BinaryOp::Mod
        | BinaryOp::Pow => arith(op, a, b)?,
        BinaryOp::In => bool_value(in_list(a, b)?),
        BinaryOp::StartsWith | BinaryOp::EndsWith | BinaryOp::Contains | BinaryOp::RegexMatch => {
            bool_value(string_pred(op, a, b, regex)?)
        }
    })
}

/// `value.key`: a map's entry or a node's or rel's property (NULL when
/// absent or when `value` is NULL).
pub fn field(v: &Value, key: &str) -> Result<Value> {
    let find = |fields: &[(std::string::String, Value)]| {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .map_or(Value::Null, |(_, v)| v.clone())
    };
    Ok(match v {
        Value::Null => Value::Null,
        Value::Struct(fields) => find(fields),
        Value::Node(n) => find(&n.properties),
        Value::Rel(r) => find(&r.properties),
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map_or(Value::Null, |(_, v)| v.clone()),
        Value::Date(_)
        | Value::Timestamp(_)
        | Value::LocalTime(_)
        | Value::Time(_)
        | Value::LocalDateTime(_)
        | Value::DateTime(_)
        | Value::Duration(_) => kith_function::temporal::component(v, key)?,
        other => {
            return Err(Error::type_error(format!(
                "cannot read '{key}' of a {} value (expected a map, node or rel)",
                other.logical_type()
            )))
        }
    })
}

/// The position `i` (negative: from the end) designates in a list of `len`
/// elements, if any.
fn list_position(len: usize, i: i64) -> Option<usize> {
    let i = if i < 0 { i.checked_add(len as i64)? } else { i };
    usize::try_from(i).ok().filter(|&i| i < len)
}

/// `list[i]` (NULL when out of range) and `map[key]`; NULL when either side
/// is NULL.
pub fn index(v: &Value, i: &Value) -> Result<Value> {
    if v.is_null() || i.is_null() {
        return Ok(Value::Null);
    }
    match v {
        Value::List(items) => {
            if !is_int(i) {
                return Err(Error::type_error(format!(
                    "a list index must be an INTEGER, got {}",
                    i.logical_type()
                )));
            }
            // An index beyond i64 is out of range either way.
            Ok(i.as_i64()
                .and_then(|i| list_position(items.len(), i))
                .map_or(Value::Null, |p| items[p].clone()))
        }
        Value::Struct(_) | Value::Map(_) | Value::Node(_) | Value::Rel(_) => match i {
            Value::String(key) => field(v, key),
            other => Err(Error::type_error(format!(
                "a map key must be a STRING, got {}",
                other.logical_type()
            ))),
        },
        other => Err(Error::type_error(format!(
            "cannot index a {} value (expected a list or map)",
            other.logical_type()
        ))),
    }
}

/// `list[from..to]`: a missing bound (`None`) is open, negative bounds count
/// from the end, bounds beyond the list are clamped; NULL when the list or a
/// given bound is NULL.
pub fn slice(v: &Value, from: Option<&Value>, to: Option<&Value>) -> Result<Value> {
    if v.is_null() || from.is_some_and(Value::is_null) || to.is_some_and(Value::is_null) {
        return Ok(Value::Null);
    }
    let Value::List(items) = v else {
        return Err(Error::type_error(format!(
            "cannot slice a {} value (expected a list)",
            v.logical_type()
        )));
    };
    let len = items.len() as i64;
    let bound = |b: Option<&Value>, default: i64| -> Result<i64> {
        let Some(b) = b else { return Ok(default) };
        if !is_int(b) {
            return Err(Error::type_error(format!(
                "a slice bound must be an INTEGER, got {}",
                b.logical_type()
            )));
        }
        let i = b.as_i64().unwrap_or(i64::MAX);
        let i = if i < 0 { i.saturating_add(len) } else { i };
        Ok(i.clamp(0, len))
    };
    let (a, b) = (bound(from, 0)?, bound(to, len)?);
    Ok(Value::list(if a < b {
        items[a as usize..b as usize].to_vec()
    } else {
        Vec::new()
    }))
}

/// Unary operators on one value.
pub fn unary(op: UnaryOp, v: &Value) -> Result<Value> {
    Ok(match op {
        UnaryOp::IsNull => Value::Bool(v.is_null()),
        UnaryOp::IsNotNull => Value::Bool(!v.is_null()),
        UnaryOp::Not => bool_value(truth(v)?.map(|b| !b)),
        UnaryOp::Plus => match v {
            Value::Null => Value::Null,
            x if is_int(x) => Value::Int64(
                x.as_i64()
                    .ok_or_else(|| Error::runtime("integer overflow in negation"))?,
            ),
            x => x.clone(),
        },
        UnaryOp::Neg => match v {
            Value::Null => Value::Null,
            Value::Float(f) => Value::Float(-f),
            Value::Double(f) => Value::Double(-f),
            Value::Interval(i) => Value::Interval(neg_interval(*i)),
            Value::Duration(d) => Value::Duration(
                d.checked_neg()
                    .ok_or_else(|| Error::runtime("duration overflow in negation"))?,
            ),
            x if is_int(x) => Value::Int64(
                x.as_i64()
                    .and_then(i64::checked_neg)
                    .ok_or_else(|| Error::runtime("integer overflow in negation"))?,
            ),
            x => {
                return Err(Error::runtime(format!(
                    "cannot negate a value of type {}",
                    x.logical_type()
                )))
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_in_equals_in_list() {
        let pool = [
            Value::Null,
            Value::Int64(1),
            Value::Int32(2),
            Value::Double(1.0),
            Value::Double(2.5),
            Value::Double(-0.0),
            Value::Int64(0),
            Value::String("a".into()),
            Value::String("1".into()),
            Value::Bool(true),
            Value::UInt64(7),
            Value::Double(f64::NAN),
        ];
        let mut seed = 7u64;
        let mut next = |m: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            ((seed >> 33) as usize) % m
        };
        for _ in 0..3000 {
            let n = next(5);
            let list = Value::list((0..n).map(|_| pool[next(pool.len())].clone()).collect());
            let x = pool[next(pool.len())].clone();
            let want = in_list(&x, &list).unwrap();
            match InList::of(&list) {
                Some(set) => assert_eq!(set.test(&x).unwrap(), want, "{x} IN {list}"),
                None => assert!(
                    matches!(&list, Value::List(v) if v.iter().any(|i| matches!(i, Value::Double(f) if f.is_nan())))
                ),
            }
        }
    }

    #[test]
    fn eq_keys_follow_cypher_equality() {
        let k = |v: Value| EqKey::of(&v);
        assert_eq!(k(Value::Int32(3)), k(Value::Double(3.0)));
        assert_eq!(k(Value::Int64(3)), k(Value::UInt64(3)));
        assert_eq!(k(Value::Double(0.0)), k(Value::Double(-0.0)));
        assert_ne!(k(Value::Double(3.5)), k(Value::Int64(3)));
        assert_eq!(k(Value::Double(f64::NAN)), None);
        assert_eq!(k(Value::Null), None);
        assert_eq!(
            k(Value::UInt64(1 << 63)),
            k(Value::Double(9_223_372_036_854_775_808.0))
        );
        assert_ne!(k(Value::String("1".into())), k(Value::Int64(1)));
        assert_eq!(k(Value::list(vec![])), None);
    }

    #[test]
    fn three_valued_truth_tables() {
        let vals = [Some(true), Some(false), None];
        let expect_and = [
            [Some(true), Some(false), None],
            [Some(false), Some(false), Some(false)],
            [None, Some(false), None],
        ];
        let expect_or = [
            [Some(true), Some(true), Some(true)],
            [Some(true), Some(false), None],
            [Some(true), None, None],
        ];
        let expect_xor = [
            [Some(false), Some(true), None],
            [Some(true), Some(false), None],
            [None, None, None],
        ];
        for (i, a) in vals.iter().enumerate() {
            for (j, b) in vals.iter().enumerate() {
                assert_eq!(and3(*a, *b), expect_and[i][j], "{a:?} AND {b:?}");
                assert_eq!(or3(*a, *b), expect_or[i][j], "{a:?} OR {b:?}");
                assert_eq!(xor3(*a, *b), expect_xor[i][j], "{a:?} XOR {b:?}");
                let (va, vb) = (bool_value(*a), bool_value(*b));
                assert_eq!(
                    binary(BinaryOp::And, &va, &vb, None).unwrap(),
                    bool_value(expect_and[i][j])
                );
            }
        }
        assert_eq!(unary(UnaryOp::Not, &Value::Null).unwrap(), Value::Null);
        assert_eq!(
            unary(UnaryOp::Not, &Value::Bool(true)).unwrap(),
            Value::Bool(false)
        );
    }

    #[test]
    fn null_propagation_and_errors() {
        assert_eq!(
            arith(BinaryOp::Add, &Value::Null, &Value::Int64(1)).unwrap(),
            Value::Null
        );
        assert_eq!(
            comparison(BinaryOp::Lt, &Value::Null, &Value::Int64(1)),
            None
        );
        let e = arith(BinaryOp::Add, &Value::Int64(i64::MAX), &Value::Int32(1)).unwrap_err();
        assert!(
            e.message.contains("integer overflow in addition"),
            "{}",
            e.message
        );
        let e = arith(BinaryOp::Div, &Value::Int64(1), &Value::Int64(0)).unwrap_err();
        assert!(e.message.contains("division by zero"));
        assert!(arith(BinaryOp::Mod, &Value::Int64(1), &Value::Int64(0)).is_err());
        assert!(arith(BinaryOp::Div, &Value::Int64(i64::MIN), &Value::Int64(-1)).is_err());
        assert_eq!(
            arith(BinaryOp::Div, &Value::Double(1.0), &Value::Int64(0)).unwrap(),
            Value::Double(f64::INFINITY)
        );
        assert_eq!(
            arith(BinaryOp::Mod, &Value::Int64(7), &Value::Int64(3)).unwrap(),
            Value::Int64(1)
        );
        assert_eq!(
            arith(BinaryOp::Pow, &Value::Int64(2), &Value::Int64(3)).unwrap(),
            Value::Double(8.0)
        );
        assert!(unary(UnaryOp::Neg, &Value::Int64(i64::MIN)).is_err());
    }

    #[test]
    fn comparisons_across_types() {
        assert_eq!(
            comparison(BinaryOp::Eq, &Value::Int32(3), &Value::Double(3.0)),
            Some(true)
        );
        assert_eq!(
            comparison(BinaryOp::Lt, &Value::Int8(3), &Value::Int64(4)),
            Some(true)
        );
        assert_eq!(
            comparison(BinaryOp::Eq, &Value::Int64(1), &Value::String("1".into())),
            Some(false)
        );
        assert_eq!(
            comparison(BinaryOp::Ne, &Value::Int64(1), &Value::String("1".into())),
            Some(true)
        );
        assert_eq!(
            comparison(BinaryOp::Lt, &Value::Int64(1), &Value::String("1".into())),
            None
        );
        assert_eq!(
            comparison(
                BinaryOp::Lt,
                &Value::String("B".into()),
                &Value::String("a".into())
            ),
            Some(true)
        );
        let d = Date::from_ymd(2020, 1, 31).unwrap();
        let one_month = Interval {
            months: 1,
            days: 0,
            micros: 0,
        };
        assert_eq!(
            arith(BinaryOp::Add, &Value::Date(d), &Value::Interval(one_month)).unwrap(),
            Value::Date(Date::from_ymd(2020, 2, 29).unwrap())
        );
        assert_eq!(
            comparison(BinaryOp::Lt, &Value::Date(d), &Value::Date(Date(d.0 + 1))),
            Some(true)
        );
        let l = Value::list(vec![Value::Int64(1), Value::Null]);
        assert_eq!(in_list(&Value::Int64(1), &l).unwrap(), Some(true));
        assert_eq!(in_list(&Value::Int64(2), &l).unwrap(), None);
        assert_eq!(
            in_list(&Value::Int64(2), &Value::list(vec![Value::Int64(1)])).unwrap(),
            Some(false)
        );
    }

    #[test]
    fn string_predicates_and_regex() {
        let s = |x: &str| Value::String(x.into());
        assert_eq!(
            string_pred(BinaryOp::StartsWith, &s("abc"), &s("ab"), None).unwrap(),
            Some(true)
        );
        assert_eq!(
            string_pred(BinaryOp::EndsWith, &s("abc"), &s("ab"), None).unwrap(),
            Some(false)
        );
        assert_eq!(
            string_pred(BinaryOp::Contains, &s("abc"), &s("b"), None).unwrap(),
            Some(true)
        );
        assert_eq!(
            string_pred(BinaryOp::RegexMatch, &s("abc"), &s("a.c"), None).unwrap(),
            Some(true)
        );
        assert_eq!(
            string_pred(BinaryOp::RegexMatch, &s("abcd"), &s("a.c"), None).unwrap(),
            Some(false)
        );
        assert!(string_pred(BinaryOp::RegexMatch, &s("abc"), &s("("), None).is_err());
        assert_eq!(
            string_pred(BinaryOp::Contains, &Value::Null, &s("b"), None).unwrap(),
            None
        );
    }
}
