//! A list value's elements, kept typed where the engine built them typed.
//!
//! `collect(x)` of INT64 values gathers plain `i64`s. Turning each into a
//! `Value` (32 bytes, dropped one by one) cost more than the aggregation
//! itself on a grouped collect, and most readers never look at the
//! elements as values: `size(l)` needs the length, the API and `UNWIND`
//! can read the integers directly. So an integer list keeps its `i64`s and
//! builds its values only when something first reads it as a slice of
//! values (`Deref`), once, kept beside the integers.

use std::fmt;
use std::ops::Deref;
use std::sync::OnceLock;

use crate::value::Value;

/// The elements of a `Value::List`. Reads as `&[Value]`; `len`, `ints`
/// and the comparisons work without building values.
#[derive(Clone)]
pub struct ListValue {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    Values(Vec<Value>),
    /// Non-NULL INT64 elements, and their values once something asked.
    Ints(Vec<i64>, OnceLock<Vec<Value>>),
}

impl ListValue {
    pub fn from_values(items: Vec<Value>) -> ListValue {
        ListValue {
            repr: Repr::Values(items),
        }
    }

    pub fn from_ints(items: Vec<i64>) -> ListValue {
        ListValue {
            repr: Repr::Ints(items, OnceLock::new()),
        }
    }

    /// The number of elements (without building values).
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Values(v) => v.len(),
            Repr::Ints(v, _) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as integers, when the list was built from integers.
    pub fn ints(&self) -> Option<&[i64]> {
        match &self.repr {
            Repr::Ints(v, _) => Some(v),
            Repr::Values(_) => None,
        }
    }

    /// The elements as values, owned (moves them out when they are built).
    pub fn into_values(self) -> Vec<Value> {
        match self.repr {
            Repr::Values(v) => v,
            Repr::Ints(v, built) => match built.into_inner() {
                Some(values) => values,
                None => v.into_iter().map(Value::Int64).collect(),
            },
        }
    }

    /// The elements as values, to change in place (an integer list becomes
    /// a list of values).
    pub fn values_mut(&mut self) -> &mut Vec<Value> {
        if let Repr::Ints(ints, built) = &mut self.repr {
            let values = built
                .take()
                .unwrap_or_else(|| ints.iter().map(|&i| Value::Int64(i)).collect());
            self.repr = Repr::Values(values);
        }
        match &mut self.repr {
            Repr::Values(v) => v,
            Repr::Ints(..) => unreachable!("replaced just above"),
        }
    }
}

impl Deref for ListValue {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        match &self.repr {
            Repr::Values(v) => v,
            Repr::Ints(v, built) => {
                built.get_or_init(|| v.iter().map(|&i| Value::Int64(i)).collect())
            }
        }
    }
}

impl PartialEq for ListValue {
    fn eq(&self, other: &ListValue) -> bool {
        match (self.ints(), other.ints()) {
            (Some(a), Some(b)) => a == b,
            _ => self.len() == other.len() && **self == **other,
        }
    }
}

impl fmt::Debug for ListValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ints() {
            Some(ints) => f
                .debug_list()
                .entries(ints.iter().map(|&i| Value::Int64(i)))
                .finish(),
            None => f.debug_list().entries(self.iter()).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_lists_read_like_value_lists() {
        let ints = ListValue::from_ints(vec![3, -1, 7]);
        let values =
            ListValue::from_values(vec![Value::Int64(3), Value::Int64(-1), Value::Int64(7)]);
        assert_eq!(ints.len(), 3);
        assert_eq!(ints.ints(), Some(&[3, -1, 7][..]));
        assert_eq!(values.ints(), None);
        assert_eq!(ints, values);
        assert_eq!(values, ints);
        assert_ne!(ints, ListValue::from_ints(vec![3, -1]));
        assert_ne!(
            ints,
            ListValue::from_values(vec![Value::Int64(3), Value::Int64(-1), Value::Null])
        );
        assert_eq!(&*ints, &*values);
        assert_eq!(format!("{ints:?}"), format!("{values:?}"));
        assert_eq!(ints.clone().into_values(), values.clone().into_values());
        // Built values are moved out, not rebuilt.
        let read = ListValue::from_ints(vec![5]);
        assert_eq!(read[0], Value::Int64(5));
        assert_eq!(read.into_values(), vec![Value::Int64(5)]);
        let mut changed = ListValue::from_ints(vec![1, 2]);
        changed.values_mut().push(Value::Null);
        assert_eq!(changed.ints(), None);
        assert_eq!(
            &*changed,
            &[Value::Int64(1), Value::Int64(2), Value::Null][..]
        );
    }
}
