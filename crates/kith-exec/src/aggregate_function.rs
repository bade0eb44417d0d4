//! Aggregate function states: count(*), count, sum, min, max, avg, collect and
//! stdev (sample standard deviation), each optionally DISTINCT.
//!
//! Input is factorized: `update` receives the physical positions of one vector
//! plus a multiplicity (how many tuples each position stands for). COUNT, SUM
//! and AVG multiply instead of looping; DISTINCT ignores multiplicity. Typed
//! loops handle fixed-width vectors without boxing values per row. Each
//! worker keeps its own states and `combine` merges them at the end.

use hashbrown::HashSet;
use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use kith_common::{
    Error, InternalId, LogicalType, Result, TableId, Value, ValueVector, VectorData,
};

use crate::expression::cast::coerce;
use crate::expression::kernels;
pub use kith_function::AggregateKind;

#[derive(Debug, Clone, PartialEq)]
pub struct AggregateSpec {
    pub func: AggregateKind,
    pub distinct: bool,
    pub input_type: Option<LogicalType>,
    pub result_type: LogicalType,
}

impl AggregateSpec {
    /// `lower_name` names an aggregate of the function registry
    /// (`count` without an argument is `count(*)`).
    pub fn from_name(
        lower_name: &str,
        distinct: bool,
        input_type: Option<LogicalType>,
        result_type: LogicalType,
    ) -> Result<AggregateSpec> {
        let func = match kith_function::aggregate::aggregate(lower_name) {
            Some(a) if a.kind == AggregateKind::Count && input_type.is_none() => {
                AggregateKind::CountStar
            }
            Some(a) => a.kind,
            None => {
                return Err(Error::semantic(format!(
                    "unknown aggregate function '{lower_name}'"
                )))
            }
        };
        Ok(AggregateSpec {
            func,
            distinct: distinct && func != AggregateKind::CountStar,
            input_type,
            result_type,
        })
    }

    pub fn new_state(&self) -> AggregateState {
        AggregateState {
            func: self.func,
            result_type: self.result_type.clone(),
            acc: Acc::default(),
            distinct: self.distinct.then(DistinctValues::default),
        }
    }
}

/// The distinct inputs of one aggregate. count(DISTINCT) keeps integers and
/// entity ids as bits (no `Value` built or hashed per input); the other
/// aggregates read the values back, so they keep them.
#[derive(Debug, Clone, Default)]
struct DistinctValues {
    /// (kind, bits): kind 0 an internal id, 1 an integer (or a double with
    /// an integral value, which Cypher equality makes the same), 2 a node,
    /// 3 a rel — the kinds `Value::total_cmp` keeps apart.
    bits: HashSet<(u8, u64)>,
    values: HashSet<DistinctKey>,
    /// Internal ids of the first table seen, a bit per offset (kind 0 ids
    /// of other tables, or past [`DENSE_IDS`], go to `bits`).
    ids: IdBits,
}

/// Offsets below this get a bit (8 MiB at most per state).
const DENSE_IDS: u64 = 1 << 26;

#[derive(Debug, Clone, Default)]
struct IdBits {
    table: Option<TableId>,
    words: Vec<u64>,
    count: usize,
}

impl IdBits {
    /// Sets `id`'s bit when it belongs here: Some(whether it was new).
    #[inline]
    fn insert(&mut self, id: u64) -> Option<bool> {
        let (table, offset) = (InternalId(id).table(), InternalId(id).offset());
        if *self.table.get_or_insert(table) != table || offset >= DENSE_IDS {
            return None;
        }
        let w = (offset / 64) as usize;
        if w >= self.words.len() {
            self.words.resize((w + 1).next_power_of_two(), 0);
        }
        let bit = 1u64 << (offset % 64);
        let new = self.words[w] & bit == 0;
        self.words[w] |= bit;
        self.count += usize::from(new);
        Some(new)
    }

    /// Adds another state's ids of the same table word by word (a worker's
    /// set merges in a pass over its words, not an insert per id); gives
    /// `other` back when its table differs.
    fn union(&mut self, other: IdBits) -> Option<IdBits> {
        let table = other.table?;
        if *self.table.get_or_insert(table) != table {
            return Some(other);
        }
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (w, o) in self.words.iter_mut().zip(&other.words) {
            *w |= o;
        }
        self.count = self.words.iter().map(|w| w.count_ones() as usize).sum();
        None
    }

    /// Every id set.
    fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        let table = self.table.unwrap_or(TableId(0));
        self.words.iter().enumerate().flat_map(move |(w, &word)| {
            (0..64)
                .filter(move |b| word >> b & 1 == 1)
                .map(move |b| InternalId::new(table, w as u64 * 64 + b).0)
        })
    }
}

impl DistinctValues {
    fn len(&self) -> usize {
        self.ids.count + self.bits.len() + self.values.len()
    }

    /// A distinct input's bits (see `bits`): ids of the dense table as a bit.
    #[inline]
    fn insert_bits(&mut self, bits: (u8, u64)) {
        if bits.0 != 0 || self.ids.insert(bits.1).is_none() {
            self.bits.insert(bits);
        }
    }

    fn combine(&mut self, other: DistinctValues) {
        self.values.extend(other.values);
        for b in other.bits {
            self.insert_bits(b);
        }
        if let Some(rest) = self.ids.union(other.ids) {
            for id in rest.ids() {
                self.insert_bits((0, id));
            }
        }
    }

    /// Adds the non-NULL values at `positions` of a typed integer or id
    /// vector as bits; false (nothing added) for any other vector.
    fn insert_typed(&mut self, input: &ValueVector, positions: &[u32]) -> bool {
        let live = |p: &&u32| !input.is_null(**p as usize);
        if let VectorData::Id(d) = &input.data {
            for &p in positions.iter().filter(live) {
                self.insert_bits((0, d[p as usize].0));
            }
            return true;
        }
        let bits = &mut self.bits;
        match &input.data {
            VectorData::I64(d) => bits.extend(
                positions
                    .iter()
                    .filter(live)
                    .map(|&p| (1, d[p as usize] as u64)),
            ),
            VectorData::I32(d) => bits
                .extend((positions.iter().filter(live)).map(|&p| (1, d[p as usize] as i64 as u64))),
            _ => return false,
        }
        true
    }

    /// A value as bits when it has such a form (see `bits`).
    fn value_bits(v: &Value) -> Option<(u8, u64)> {
        let int = |i: i64| Some((1, i as u64));
        match v {
            Value::InternalId(id) => Some((0, id.0)),
            Value::Node(n) => Some((2, n.id.0)),
            Value::Rel(r) => Some((3, r.id.0)),
            Value::Int8(i) => int(*i as i64),
            Value::Int16(i) => int(*i as i64),
            Value::Int32(i) => int(*i as i64),
            Value::Int64(i) => int(*i),
            Value::UInt8(i) => int(*i as i64),
            Value::UInt16(i) => int(*i as i64),
            Value::UInt32(i) => int(*i as i64),
            Value::UInt64(i) => i64::try_from(*i).ok().and_then(int),
            // The same split as `hash_value`: integral doubles within the
            // exact range are their integer.
            Value::Double(_) | Value::Float(_) => {
                let f = v.as_f64()?;
                (f.fract() == 0.0 && f.abs() < 9.0e15).then_some((1, f as i64 as u64))
            }
            _ => None,
        }
    }
}

/// A value with Cypher grouping equality (1 = 1.0, NULLs equal) for DISTINCT.
#[derive(Debug, Clone)]
struct DistinctKey(Value);

impl PartialEq for DistinctKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.total_cmp(&other.0) == Ordering::Equal
    }
}
impl Eq for DistinctKey {}

fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => b.hash(h),
        Value::String(s) => s.hash(h),
        Value::Float(_) | Value::Double(_) => {
            let f = v.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                (f as i64).hash(h)
            } else {
                f.to_bits().hash(h)
            }
        }
        Value::List(items) => {
            items.len().hash(h);
            items.iter().for_each(|i| hash_value(i, h));
        }
        // Entities by id (formatting one per value cost more than the rest
        // of count(DISTINCT n)).
        Value::InternalId(id) => id.0.hash(h),
        Value::Node(n) => n.id.0.hash(h),
        Value::Rel(r) => r.id.0.hash(h),
        _ => match v.as_i64() {
            Some(i) => i.hash(h),
            None => v.to_string().hash(h),
        },
    }
}

impl Hash for DistinctKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        hash_value(&self.0, h)
    }
}

#[derive(Debug, Clone, Default)]
struct Acc {
    /// Non-NULL inputs seen (count, avg, stdev), times multiplicity.
    count: u64,
    /// Exact integer part of sum/avg.
    isum: i128,
    /// Floating part of sum/avg.
    fsum: f64,
    saw_float: bool,
    /// Current min/max.
    best: Option<Value>,
    /// Collected values.
    items: Vec<Value>,
    /// Welford mean and sum of squared deviations (stdev).
    mean: f64,
    m2: f64,
}

/// How an aggregate takes a batch that it has just seen, seen again (an
/// extend handing the same neighbours on for another tuple of an earlier
/// group): min, max and DISTINCT aggregates gain nothing from it (`Skip`);
/// counts, sums and averages add what the batch alone added, times its
/// multiplicity (`Scale`); the rest (collect, stdev) read it again
/// (`Update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepeatRule {
    Skip,
    Scale,
    Update,
}

/// The running state of one aggregate over one group.
#[derive(Debug, Clone)]
pub struct AggregateState {
    func: AggregateKind,
    result_type: LogicalType,
    acc: Acc,
    distinct: Option<DistinctValues>,
}

macro_rules! int_like {
    ($data:expr, $s:ident => $e:expr, $other:expr) => {
        match $data {
            VectorData::I8($s) => $e,
            VectorData::I16($s) => $e,
            VectorData::I32($s) => $e,
            VectorData::I64($s) => $e,
            VectorData::U8($s) => $e,
            VectorData::U16($s) => $e,
            VectorData::U32($s) => $e,
            VectorData::U64($s) => $e,
            _ => $other,
        }
    };
}

/// The exact sum of integers, in loops the compiler vectorizes (an `i128`
/// accumulator is a scalar add-with-carry per value: a third of an
/// ungrouped `sum()` over a scan). Exact for any count; the fast loops
/// take up to 2^31 values, more than a batch holds.
trait ExactSum: Copy + Into<i128> {
    /// The sum of at most [`SPLIT_SUM_MAX`] values.
    fn fast_sum(values: impl Iterator<Item = Self>) -> i128;

    fn exact_sum<I: ExactSizeIterator<Item = Self>>(values: I) -> i128 {
        if values.len() > SPLIT_SUM_MAX {
            return values.map(Into::into).sum();
        }
        Self::fast_sum(values)
    }
}

const SPLIT_SUM_MAX: usize = 1 << 31;

macro_rules! narrow_exact_sum {
    ($($t:ty),*) => {$(
        impl ExactSum for $t {
            fn fast_sum(values: impl Iterator<Item = $t>) -> i128 {
                narrow_sum(values) as i128
            }
        }
    )*};
}
narrow_exact_sum!(i8, i16, i32, u8, u16, u32);

/// The sum of at most 2^31 values of 32 bits or less, which cannot
/// overflow an i64.
#[multiversion::multiversion(targets("x86_64+avx2+bmi1+bmi2+lzcnt+popcnt+fma"))]
fn narrow_sum<T: Into<i64>>(values: impl Iterator<Item = T>) -> i64 {
    values.map(Into::into).sum()
}

/// Each 64-bit value as its low and high 32-bit halves, summed apart as
/// unsigned words (2^31 halves cannot overflow a u64); a negative i64 is
/// its unsigned bits less 2^64, so each sign bit takes 2^64 off.
#[multiversion::multiversion(targets("x86_64+avx2+bmi1+bmi2+lzcnt+popcnt+fma"))]
fn split_sum(values: impl Iterator<Item = u64>, signed: bool) -> i128 {
    let (mut lo, mut hi, mut neg) = (0u64, 0u64, 0u64);
    for u in values {
        lo += u & 0xFFFF_FFFF;
        hi += u >> 32;
        neg += u >> 63;
    }
    let total = lo as i128 + ((hi as i128) << 32);
    if signed {
        total - ((neg as i128) << 64)
    } else {
        total
    }
}

impl ExactSum for u64 {
    fn fast_sum(values: impl Iterator<Item = u64>) -> i128 {
        split_sum(values, false)
    }
}

impl ExactSum for i64 {
    fn fast_sum(values: impl Iterator<Item = i64>) -> i128 {
        split_sum(values.map(|x| x as u64), true)
    }
}

/// The positions as a range when they are consecutive (they ascend).
fn run_of(positions: &[u32]) -> Option<std::ops::Range<usize>> {
    match (positions.first(), positions.last()) {
        (Some(&a), Some(&b)) if (b - a) as usize + 1 == positions.len() => {
            Some(a as usize..b as usize + 1)
        }
        _ => None,
    }
}

fn sum_overflow() -> Error {
    Error::runtime("integer overflow in sum()")
}

impl AggregateState {
    pub fn func(&self) -> AggregateKind {
        self.func
    }

    /// Adds the values at physical `positions` of `input` (`None` for
    /// count(*)), each counted `multiplicity` times. NULLs are skipped
    /// (count(*) counts positions).
    pub fn update(
        &mut self,
        input: Option<&ValueVector>,
        positions: &[u32],
        multiplicity: u64,
    ) -> Result<()> {
        let Some(input) = input else {
            if matches!(self.func, AggregateKind::CountStar | AggregateKind::Count) {
                self.acc.count += positions.len() as u64 * multiplicity;
            }
            return Ok(());
        };
        if self.func == AggregateKind::CountStar {
            self.acc.count += positions.len() as u64 * multiplicity;
            return Ok(());
        }
        if let Some(set) = &mut self.distinct {
            let count_only = self.func == AggregateKind::Count;
            if count_only && set.insert_typed(input, positions) {
                return Ok(());
            }
            for &p in positions {
                let v = input.get_value(p as usize);
                if v.is_null() {
                    continue;
                }
                match DistinctValues::value_bits(&v).filter(|_| count_only) {
                    Some(b) => set.insert_bits(b),
                    None => {
                        set.values.insert(DistinctKey(v));
                    }
                }
            }
            return Ok(());
        }
        let has_nulls = input.nulls.may_have_nulls();
        let live = |p: &&u32| !has_nulls || !input.is_null(**p as usize);
        let numeric_ty = input.ty.is_numeric();
        match self.func {
            AggregateKind::Count => {
                let n = if has_nulls {
                    positions.iter().filter(live).count()
                } else {
                    positions.len()
                };
                self.acc.count += n as u64 * multiplicity;
                Ok(())
            }
            AggregateKind::Sum | AggregateKind::Avg if numeric_ty => {
                let done = int_like!(&input.data, s => {
                    let mut local: i128 = 0;
                    let mut n = 0u64;
                    match run_of(positions) {
                        // A run without NULLs: a plain slice sum.
                        Some(r) if !has_nulls => {
                            local = ExactSum::exact_sum(s[r].iter().copied());
                            n = positions.len() as u64;
                        }
                        None if !has_nulls => {
                            local = ExactSum::exact_sum(positions.iter().map(|&p| s[p as usize]));
                            n = positions.len() as u64;
                        }
                        _ => {
                            for p in positions.iter().filter(live) {
                                local += s[*p as usize] as i128;
                                n += 1;
                            }
                        }
                    }
                    self.add_int(local, n, multiplicity)?;
                    true
                }, false);
                if done {
                    return Ok(());
                }
                let (local, n) = match &input.data {
                    VectorData::F64(s) => positions
                        .iter()
                        .filter(live)
                        .fold((0.0, 0u64), |(a, n), p| (a + s[*p as usize], n + 1)),
                    VectorData::F32(s) => positions
                        .iter()
                        .filter(live)
                        .fold((0.0, 0u64), |(a, n), p| (a + s[*p as usize] as f64, n + 1)),
                    _ => return self.update_generic(input, positions, multiplicity),
                };
                self.acc.saw_float = true;
                self.acc.fsum += local * multiplicity as f64;
                self.acc.count += n * multiplicity;
                Ok(())
            }
            AggregateKind::Min | AggregateKind::Max if !has_nulls => {
                // Integers without NULLs: the extreme value by a branch-free
                // fold (over a plain slice when the positions are a run).
                let min = self.func == AggregateKind::Min;
                let best = int_like!(&input.data, s => {
                    let run = run_of(positions).map(|r| &s[r]);
                    let best = match (run, min) {
                        (Some(r), true) => r.iter().copied().min(),
                        (Some(r), false) => r.iter().copied().max(),
                        (None, true) => positions.iter().map(|&p| s[p as usize]).min(),
                        (None, false) => positions.iter().map(|&p| s[p as usize]).max(),
                    };
                    // The value is read back through its position, so that
                    // it keeps the column's logical type.
                    Some(best.and_then(|v| positions.iter().find(|&&p| s[p as usize] == v)))
                }, None);
                match best {
                    Some(Some(&p)) => {
                        self.offer_best(input.get_value(p as usize));
                        Ok(())
                    }
                    Some(None) => Ok(()),
                    None => self.update_extreme(input, positions),
                }
            }
            AggregateKind::Min | AggregateKind::Max => self.update_extreme(input, positions),
            _ => self.update_generic(input, positions, multiplicity),
        }
    }

    /// Min or max of `positions` by comparing values in place, then one
    /// offer of the best.
    fn update_extreme(&mut self, input: &ValueVector, positions: &[u32]) -> Result<()> {
        let has_nulls = input.nulls.may_have_nulls();
        let live = |p: &&u32| !has_nulls || !input.is_null(**p as usize);
        let want = if self.func == AggregateKind::Min {
            Ordering::Less
        } else {
            Ordering::Greater
        };
        let mut arg: Option<usize> = None;
        macro_rules! scan {
            ($s:expr) => {{
                for p in positions.iter().filter(live) {
                    let p = *p as usize;
                    match arg {
                        Some(a) if $s[p].partial_cmp(&$s[a]) != Some(want) => {}
                        _ => arg = Some(p),
                    }
                }
            }};
        }
        match &input.data {
            VectorData::I8(s) => scan!(s),
            VectorData::I16(s) => scan!(s),
            VectorData::I32(s) => scan!(s),
            VectorData::I64(s) => scan!(s),
            VectorData::U8(s) => scan!(s),
            VectorData::U16(s) => scan!(s),
            VectorData::U32(s) => scan!(s),
            VectorData::U64(s) => scan!(s),
            VectorData::F32(s) => scan!(s),
            VectorData::F64(s) => scan!(s),
            VectorData::Str(s) => {
                for p in positions.iter().filter(live) {
                    let p = *p as usize;
                    match arg {
                        Some(a) if s.get(p).cmp(s.get(a)) != want => {}
                        _ => arg = Some(p),
                    }
                }
            }
            _ => return self.update_generic(input, positions, 1),
        }
        if let Some(p) = arg {
            self.offer_best(input.get_value(p));
        }
        Ok(())
    }

    fn add_int(&mut self, local: i128, n: u64, multiplicity: u64) -> Result<()> {
        let add = local
            .checked_mul(multiplicity as i128)
            .ok_or_else(sum_overflow)?;
        self.acc.isum = self.acc.isum.checked_add(add).ok_or_else(sum_overflow)?;
        self.acc.count += n * multiplicity;
        if self.func == AggregateKind::Sum
            && !self.acc.saw_float
            && i64::try_from(self.acc.isum).is_err()
        {
            return Err(sum_overflow());
        }
        Ok(())
    }

    fn offer_best(&mut self, v: Value) {
        let want = if self.func == AggregateKind::Min {
            Ordering::Less
        } else {
            Ordering::Greater
        };
        let better = match &self.acc.best {
            None => true,
            Some(b) => kernels::compare(&v, b).unwrap_or_else(|| v.total_cmp(b)) == want,
        };
        if better {
            self.acc.best = Some(v);
        }
    }

    fn update_generic(
        &mut self,
        input: &ValueVector,
        positions: &[u32],
        multiplicity: u64,
    ) -> Result<()> {
        for &p in positions {
            let v = input.get_value(p as usize);
            self.add_value(v, multiplicity)?;
        }
        Ok(())
    }

    /// Adds one value `multiplicity` times (slow path).
    fn add_value(&mut self, v: Value, multiplicity: u64) -> Result<()> {
        if v.is_null() || multiplicity == 0 {
            return Ok(());
        }
        match self.func {
            AggregateKind::CountStar | AggregateKind::Count => self.acc.count += multiplicity,
            AggregateKind::Sum | AggregateKind::Avg => {
                if let Some(i) = v.as_i64() {
                    self.add_int(i as i128, 1, multiplicity)?;
                } else if let Some(f) = v.as_f64() {
                    self.acc.saw_float = true;
                    self.acc.fsum += f * multiplicity as f64;
                    self.acc.count += multiplicity;
                } else {
                    return Err(Error::runtime(format!(
                        "{}() expects numbers, got {}",
                        if self.func == AggregateKind::Sum {
                            "sum"
                        } else {
                            "avg"
                        },
                        v.logical_type()
                    )));
                }
            }
            AggregateKind::Min | AggregateKind::Max => self.offer_best(v),
            AggregateKind::Collect => {
                for _ in 1..multiplicity {
                    self.acc.items.push(v.clone());
                }
                self.acc.items.push(v);
            }
            AggregateKind::Stdev | AggregateKind::StdevPop => {
                let x = v.as_f64().ok_or_else(|| {
                    Error::runtime(format!("stdev() expects numbers, got {}", v.logical_type()))
                })?;
                let w = multiplicity as f64;
                let n = self.acc.count as f64 + w;
                let delta = x - self.acc.mean;
                self.acc.mean += delta * w / n;
                self.acc.m2 += delta * w * (x - self.acc.mean);
                self.acc.count += multiplicity;
            }
        }
        Ok(())
    }

    /// count(*) fast path: `n` more tuples.
    pub fn update_count(&mut self, n: u64) {
        self.acc.count += n;
    }

    /// What a batch seen again does to this aggregate (see
    /// [`RepeatRule`]).
    pub fn repeat_rule(&self) -> RepeatRule {
        match (self.func, &self.distinct) {
            (_, Some(_)) | (AggregateKind::Min | AggregateKind::Max, None) => RepeatRule::Skip,
            (
                AggregateKind::CountStar
                | AggregateKind::Count
                | AggregateKind::Sum
                | AggregateKind::Avg,
                None,
            ) => RepeatRule::Scale,
            _ => RepeatRule::Update,
        }
    }

    /// Adds `batch` (a state of the same aggregate over one batch, with
    /// multiplicity 1) `times` times: [`RepeatRule::Scale`]'s counts and
    /// sums only.
    pub fn add_scaled(&mut self, batch: &AggregateState, times: u64) -> Result<()> {
        debug_assert_eq!(self.repeat_rule(), RepeatRule::Scale);
        let o = &batch.acc;
        self.acc.count += o.count * times;
        self.acc.saw_float |= o.saw_float;
        self.acc.fsum += o.fsum * times as f64;
        let add = o.isum.checked_mul(times as i128).ok_or_else(sum_overflow)?;
        self.acc.isum = self.acc.isum.checked_add(add).ok_or_else(sum_overflow)?;
        if self.func == AggregateKind::Sum
            && !self.acc.saw_float
            && i64::try_from(self.acc.isum).is_err()
        {
            return Err(sum_overflow());
        }
        Ok(())
    }

    /// Merges another state of the same aggregate into this one.
    pub fn combine(&mut self, other: AggregateState) -> Result<()> {
        if let (Some(mine), Some(theirs)) = (&mut self.distinct, other.distinct) {
            mine.combine(theirs);
            return Ok(());
        }
        let o = other.acc;
        match self.func {
            AggregateKind::Stdev | AggregateKind::StdevPop => {
                let (na, nb) = (self.acc.count as f64, o.count as f64);
                if o.count > 0 {
                    let n = na + nb;
                    let delta = o.mean - self.acc.mean;
                    self.acc.mean += delta * nb / n;
                    self.acc.m2 += o.m2 + delta * delta * na * nb / n;
                }
                self.acc.count += o.count;
            }
            AggregateKind::Min | AggregateKind::Max => {
                if let Some(b) = o.best {
                    self.offer_best(b);
                }
            }
            AggregateKind::Collect => self.acc.items.extend(o.items),
            _ => {
                self.acc.count += o.count;
                self.acc.saw_float |= o.saw_float;
                self.acc.fsum += o.fsum;
                self.acc.isum = self.acc.isum.checked_add(o.isum).ok_or_else(sum_overflow)?;
                if self.func == AggregateKind::Sum
                    && !self.acc.saw_float
                    && i64::try_from(self.acc.isum).is_err()
                {
                    return Err(sum_overflow());
                }
            }
        }
        Ok(())
    }

    /// [`AggregateState::finalize`] that moves a collected list out
    /// instead of cloning it (the last read of a group's state).
    pub fn into_value(mut self) -> Value {
        match (self.func, &self.distinct) {
            (AggregateKind::Collect, None) => Value::list(std::mem::take(&mut self.acc.items)),
            _ => self.finalize(),
        }
    }

    /// The aggregate's value: count of nothing is 0, sum of nothing 0,
    /// avg/min/max/stdev of nothing NULL, collect of nothing `[]`; stdev of
    /// one value is 0.0.
    pub fn finalize(&self) -> Value {
        if let Some(set) = &self.distinct {
            if self.func == AggregateKind::Count {
                return Value::Int64(set.len() as i64);
            }
            let mut plain = AggregateState {
                func: self.func,
                result_type: self.result_type.clone(),
                acc: Acc::default(),
                distinct: None,
            };
            let mut values: Vec<Value> = set.values.iter().map(|k| k.0.clone()).collect();
            values.sort_by(|a, b| a.total_cmp(b));
            for v in values {
                if plain.add_value(v, 1).is_err() {
                    return Value::Null;
                }
            }
            return plain.finalize();
        }
        let a = &self.acc;
        let v = match self.func {
            AggregateKind::CountStar | AggregateKind::Count => Value::Int64(a.count as i64),
            AggregateKind::Sum => {
                if a.saw_float || self.result_type == LogicalType::Double {
                    Value::Double(a.isum as f64 + a.fsum)
                } else {
                    Value::Int64(a.isum as i64)
                }
            }
            AggregateKind::Avg => {
                if a.count == 0 {
                    Value::Null
                } else {
                    Value::Double((a.isum as f64 + a.fsum) / a.count as f64)
                }
            }
            AggregateKind::Min | AggregateKind::Max => a.best.clone().unwrap_or(Value::Null),
            AggregateKind::Collect => Value::list(a.items.clone()),
            AggregateKind::Stdev => match a.count {
                0 => Value::Null,
                1 => Value::Double(0.0),
                n => Value::Double((a.m2.max(0.0) / (n - 1) as f64).sqrt()),
            },
            AggregateKind::StdevPop => match a.count {
                0 => Value::Null,
                n => Value::Double((a.m2.max(0.0) / n as f64).sqrt()),
            },
        };
        coerce(v.clone(), &self.result_type).unwrap_or(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(vals: &[Option<i64>], ty: LogicalType) -> ValueVector {
        let mut v = ValueVector::new(ty.clone(), vals.len());
        for (i, x) in vals.iter().enumerate() {
            let val = match x {
                Some(x) => crate::expression::cast::cast_value(&Value::Int64(*x), &ty).unwrap(),
                None => Value::Null,
            };
            v.set_value(i, &val);
        }
        v
    }

    fn spec(
        name: &str,
        distinct: bool,
        input: Option<LogicalType>,
        result: LogicalType,
    ) -> AggregateSpec {
        AggregateSpec::from_name(name, distinct, input, result).unwrap()
    }

    #[test]
    fn aggregates_with_multiplicity() {
        let v = ints(&[Some(1), None, Some(3), Some(5)], LogicalType::Int32);
        let all = [0u32, 1, 2, 3];
        let run = |name: &str, distinct: bool, result: LogicalType| {
            let mut s = spec(name, distinct, Some(LogicalType::Int32), result).new_state();
            s.update(Some(&v), &all, 3).unwrap();
            s.finalize()
        };
        assert_eq!(run("count", false, LogicalType::Int64), Value::Int64(9));
        assert_eq!(run("sum", false, LogicalType::Int64), Value::Int64(27));
        assert_eq!(run("avg", false, LogicalType::Double), Value::Double(3.0));
        assert_eq!(run("min", false, LogicalType::Int32), Value::Int32(1));
        assert_eq!(run("max", false, LogicalType::Int32), Value::Int32(5));
        assert_eq!(run("sum", true, LogicalType::Int64), Value::Int64(9));
        assert_eq!(run("count", true, LogicalType::Int64), Value::Int64(3));
        let c = run(
            "collect",
            false,
            LogicalType::List(Box::new(LogicalType::Int32)),
        );
        assert!(matches!(c, Value::List(ref l) if l.len() == 9));
        let sd = run("stdev", false, LogicalType::Double).as_f64().unwrap();
        // 1,1,1,3,3,3,5,5,5: mean 3, ss = 24, n-1 = 8
        assert!((sd - 3f64.sqrt()).abs() < 1e-12, "{sd}");
        // The population deviation divides by n = 9: sqrt(24 / 9).
        let sdp = run("stdevp", false, LogicalType::Double).as_f64().unwrap();
        assert!((sdp - (24f64 / 9.0).sqrt()).abs() < 1e-12, "{sdp}");
        let mut star = spec("count_star", false, None, LogicalType::Int64).new_state();
        star.update(None, &all, 2).unwrap();
        star.update_count(5);
        assert_eq!(star.finalize(), Value::Int64(13));
    }

    #[test]
    fn empty_aggregates() {
        let t = LogicalType::Int64;
        let fin = |name: &str, r: LogicalType| {
            spec(name, false, Some(t.clone()), r).new_state().finalize()
        };
        assert_eq!(fin("count", LogicalType::Int64), Value::Int64(0));
        assert_eq!(fin("sum", LogicalType::Int64), Value::Int64(0));
        assert_eq!(fin("avg", LogicalType::Double), Value::Null);
        assert_eq!(fin("min", LogicalType::Int64), Value::Null);
        assert_eq!(
            fin("collect", LogicalType::List(Box::new(t.clone()))),
            Value::list(vec![])
        );
        assert_eq!(fin("stdev", LogicalType::Double), Value::Null);
    }

    #[test]
    fn combine_and_distinct_merge() {
        let v = ints(&[Some(2), Some(2), Some(7)], LogicalType::Int64);
        for (name, distinct, expect) in [
            ("sum", false, Value::Int64(11 * 2)),
            ("sum", true, Value::Int64(9)),
            ("max", false, Value::Int64(7)),
            ("count", true, Value::Int64(2)),
        ] {
            let sp = spec(name, distinct, Some(LogicalType::Int64), LogicalType::Int64);
            let mut a = sp.new_state();
            let mut b = sp.new_state();
            a.update(Some(&v), &[0, 1, 2], 1).unwrap();
            b.update(Some(&v), &[0, 2], 1).unwrap();
            b.update(Some(&v), &[1], 1).unwrap();
            a.combine(b).unwrap();
            assert_eq!(a.finalize(), expect, "{name} distinct={distinct}");
        }
        // stdev combine equals the one-pass result
        let sp = spec(
            "stdev",
            false,
            Some(LogicalType::Int64),
            LogicalType::Double,
        );
        let w = ints(&[Some(1), Some(4), Some(9), Some(16)], LogicalType::Int64);
        let mut one = sp.new_state();
        one.update(Some(&w), &[0, 1, 2, 3], 1).unwrap();
        let mut a = sp.new_state();
        let mut b = sp.new_state();
        a.update(Some(&w), &[0, 1], 1).unwrap();
        b.update(Some(&w), &[2, 3], 1).unwrap();
        a.combine(b).unwrap();
        let (x, y) = (
            one.finalize().as_f64().unwrap(),
            a.finalize().as_f64().unwrap(),
        );
        assert!((x - y).abs() < 1e-9);
    }

    #[test]
    fn sum_overflow_is_an_error() {
        let v = ints(&[Some(i64::MAX), Some(1)], LogicalType::Int64);
        let mut s = spec("sum", false, Some(LogicalType::Int64), LogicalType::Int64).new_state();
        let e = s.update(Some(&v), &[0, 1], 1).unwrap_err();
        assert!(e.message.contains("overflow"));
        let mut s = spec("sum", false, Some(LogicalType::Int64), LogicalType::Int64).new_state();
        assert!(s.update(Some(&v), &[0], 2).is_err());
    }

    #[test]
    fn floats_strings_and_min_max() {
        let mut f = ValueVector::new(LogicalType::Double, 3);
        f.set_value(0, &Value::Double(1.5));
        f.set_value(1, &Value::Double(-2.0));
        f.set_null(2, true);
        let mut s = spec("sum", false, Some(LogicalType::Double), LogicalType::Double).new_state();
        s.update(Some(&f), &[0, 1, 2], 2).unwrap();
        assert_eq!(s.finalize(), Value::Double(-1.0));
        let mut m = spec("min", false, Some(LogicalType::Double), LogicalType::Double).new_state();
        m.update(Some(&f), &[0, 1, 2], 1).unwrap();
        assert_eq!(m.finalize(), Value::Double(-2.0));
        let mut strs = ValueVector::new(LogicalType::String, 0);
        for x in ["pear", "apple", "zoo"] {
            strs.push_value(&Value::String(x.into()));
        }
        let mut mx = spec("max", false, Some(LogicalType::String), LogicalType::String).new_state();
        mx.update(Some(&strs), &[0, 1], 1).unwrap();
        let mut mx2 =
            spec("max", false, Some(LogicalType::String), LogicalType::String).new_state();
        mx2.update(Some(&strs), &[2], 1).unwrap();
        mx.combine(mx2).unwrap();
        assert_eq!(mx.finalize(), Value::String("zoo".into()));
    }

    proptest::proptest! {
        /// Slice sums through split halves equal an `i128` accumulator,
        /// extremes and sign changes included.
        #[test]
        fn exact_sums_equal_wide_sums(
            ints in proptest::collection::vec(
                proptest::prop_oneof![proptest::num::i64::ANY, proptest::strategy::Just(i64::MIN), proptest::strategy::Just(i64::MAX), -3i64..3],
                0..300,
            ),
            narrow in proptest::collection::vec(proptest::num::i32::ANY, 0..300),
        ) {
            let wide: i128 = ints.iter().map(|&x| x as i128).sum();
            proptest::prop_assert_eq!(ExactSum::exact_sum(ints.iter().copied()), wide);
            let bits: Vec<u64> = ints.iter().map(|&x| x as u64).collect();
            let wide: i128 = bits.iter().map(|&x| x as i128).sum();
            proptest::prop_assert_eq!(ExactSum::exact_sum(bits.iter().copied()), wide);
            let wide: i128 = narrow.iter().map(|&x| x as i128).sum();
            proptest::prop_assert_eq!(ExactSum::exact_sum(narrow.iter().copied()), wide);
        }

        /// min and max of integer columns (with and without NULLs, over runs
        /// of positions and over scattered ones, in several batches) equal
        /// the extreme value of the live positions, with the column's type.
        #[test]
        fn min_max_match_a_scan(
            vals in proptest::collection::vec(proptest::option::weighted(0.9, -1000i64..1000), 1..60),
            picks in proptest::collection::vec(proptest::bool::ANY, 60),
            split in 0usize..60,
            ty_pick in 0usize..4,
            nulls in proptest::bool::ANY,
        ) {
            let ty = [LogicalType::Int64, LogicalType::Int32, LogicalType::Int16, LogicalType::Date][ty_pick].clone();
            // Without NULLs half the time: the typed fold's case.
            let vals: Vec<Option<i64>> = vals
                .into_iter()
                .enumerate()
                .map(|(i, v)| if nulls { v } else { Some(v.unwrap_or(i as i64)) })
                .collect();
            let v = if ty == LogicalType::Date {
                let mut v = ValueVector::new(ty.clone(), vals.len());
                for (i, x) in vals.iter().enumerate() {
                    let val = x.map_or(Value::Null, |x| Value::Date(kith_common::temporal::Date(x as i32)));
                    v.set_value(i, &val);
                }
                v
            } else {
                ints(&vals, ty.clone())
            };
            let scattered: Vec<u32> = (0..vals.len() as u32).filter(|&p| picks[p as usize]).collect();
            let run: Vec<u32> = (0..vals.len() as u32).collect();
            for positions in [scattered, run] {
                let cut = split.min(positions.len());
                for (name, want) in [("min", std::cmp::Ordering::Less), ("max", std::cmp::Ordering::Greater)] {
                    let mut st = spec(name, false, Some(ty.clone()), ty.clone()).new_state();
                    st.update(Some(&v), &positions[..cut], 1).unwrap();
                    st.update(Some(&v), &positions[cut..], 2).unwrap();
                    let mut best: Option<Value> = None;
                    for &p in &positions {
                        let x = v.get_value(p as usize);
                        if x.is_null() {
                            continue;
                        }
                        if best.as_ref().is_none_or(|b| x.total_cmp(b) == want) {
                            best = Some(x);
                        }
                    }
                    proptest::prop_assert_eq!(st.finalize(), best.unwrap_or(Value::Null));
                }
                if ty != LogicalType::Date {
                    let mut st = spec("sum", false, Some(ty.clone()), LogicalType::Int64).new_state();
                    st.update(Some(&v), &positions[..cut], 1).unwrap();
                    st.update(Some(&v), &positions[cut..], 2).unwrap();
                    let value = |p: &u32| vals[*p as usize].unwrap_or(0);
                    let want: i64 = positions[..cut].iter().map(value).sum::<i64>()
                        + 2 * positions[cut..].iter().map(value).sum::<i64>();
                    proptest::prop_assert_eq!(st.finalize(), Value::Int64(want));
                }
            }
        }
    }
}
