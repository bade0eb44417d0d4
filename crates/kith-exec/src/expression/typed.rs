//! Typed fast paths for binary operators over unflat vectors: numeric
//! arithmetic and comparison (INT*/UINT8-32 in i64, floats in f64), string
//! comparison and predicates, and boolean logic. They run tight loops over the
//! selected positions without boxing values and must agree with `kernels`.

use kith_common::{InternalId, LogicalType, NullMask, Result, StringData, ValueVector, VectorData};
use kith_planner::expr::BinaryOp;
use regex::Regex;

use super::evaluator::{each_pos, Mode};
use super::kernels::{self, overflow};
use crate::result_set::ChunkState;

/// Widening buffers reused across calls.
#[derive(Default)]
pub(crate) struct Scratch {
    li: Vec<i64>,
    ri: Vec<i64>,
    lf: Vec<f64>,
    rf: Vec<f64>,
}

enum Opnd<'a, T> {
    Sc(T),
    Sl(&'a [T]),
}

trait At<T: Copy>: Copy {
    fn at(&self, p: usize) -> T;
    /// The operand over positions `0..n` only, None when it has fewer.
    fn cut(self, n: usize) -> Option<Self>;
}

#[derive(Clone, Copy)]
struct Sc<T>(T);
#[derive(Clone, Copy)]
struct Sl<'a, T>(&'a [T]);

impl<T: Copy> At<T> for Sc<T> {
    #[inline(always)]
    fn at(&self, _p: usize) -> T {
        self.0
    }

    #[inline(always)]
    fn cut(self, _n: usize) -> Option<Self> {
        Some(self)
    }
}

impl<T: Copy> At<T> for Sl<'_, T> {
    #[inline(always)]
    fn at(&self, p: usize) -> T {
        self.0[p]
    }

    #[inline(always)]
    fn cut(self, n: usize) -> Option<Self> {
        self.0.get(..n).map(Sl)
    }
}

/// [`each_pos!`] that, over a whole batch (no selection), first cuts the
/// operands and `out` to the batch's length: the loop then needs no bounds
/// checks and vectorizes.
macro_rules! each_pos_cut {
    ($state:expr, $l:ident, $r:ident, $out:ident, $p:ident => $body:block) => {{
        let n = $state.len;
        match ($state.sel.is_none(), $l.cut(n), $r.cut(n)) {
            (true, Some($l), Some($r)) if $out.len() >= n => {
                let $out = &mut $out[..n];
                for $p in 0..n {
                    $body
                }
            }
            _ => each_pos!($state, $p => $body),
        }
    }};
    ($state:expr, $l:ident, $r:ident, $p:ident => $body:block) => {{
        let n = $state.len;
        match ($state.sel.is_none(), $l.cut(n), $r.cut(n)) {
            (true, Some($l), Some($r)) => {
                for $p in 0..n {
                    $body
                }
            }
            _ => each_pos!($state, $p => $body),
        }
    }};
}

macro_rules! with_opnds {
    ($l:expr, $r:expr, |$a:ident, $b:ident| $body:expr) => {
        match ($l, $r) {
            (Opnd::Sc(x), Opnd::Sc(y)) => {
                let ($a, $b) = (Sc(x), Sc(y));
                $body
            }
            (Opnd::Sc(x), Opnd::Sl(y)) => {
                let ($a, $b) = (Sc(x), Sl(y));
                $body
            }
            (Opnd::Sl(x), Opnd::Sc(y)) => {
                let ($a, $b) = (Sl(x), Sc(y));
                $body
            }
            (Opnd::Sl(x), Opnd::Sl(y)) => {
                let ($a, $b) = (Sl(x), Sl(y));
                $body
            }
        }
    };
}

/// `Some(is_float)` for vectors the numeric fast path handles; `temporal`
/// admits DATE/TIMESTAMP (for comparisons between equal temporal types).
fn num_class(v: &ValueVector, temporal: bool) -> Option<bool> {
    let temporal_ok = temporal && matches!(v.ty, LogicalType::Date | LogicalType::Timestamp);
    if !(v.ty.is_numeric() || temporal_ok) {
        return None;
    }
    match &v.data {
        VectorData::I8(_)
        | VectorData::I16(_)
        | VectorData::I32(_)
        | VectorData::I64(_)
        | VectorData::U8(_)
        | VectorData::U16(_)
        | VectorData::U32(_) => Some(false),
        VectorData::F32(_) | VectorData::F64(_) => Some(true),
        _ => None,
    }
}

macro_rules! widen {
    ($v:expr, $m:expr, $state:expr, $buf:expr, $T:ty, $direct:ident) => {{
        macro_rules! numeric {
            ($data:expr, $s:ident => $e:expr) => {
                match $data {
                    VectorData::I8($s) => $e,
                    VectorData::I16($s) => $e,
                    VectorData::I32($s) => $e,
                    VectorData::I64($s) => $e,
                    VectorData::U8($s) => $e,
                    VectorData::U16($s) => $e,
                    VectorData::U32($s) => $e,
                    VectorData::F32($s) => $e,
                    VectorData::F64($s) => $e,
                    _ => unreachable!("checked by num_class"),
                }
            };
        }
        match $m {
            Mode::Flat(p) => Opnd::Sc(numeric!(&$v.data, s => s[p] as $T)),
            Mode::Unflat(_) => match &$v.data {
                VectorData::$direct(s) => Opnd::Sl(&s[..]),
                data => {
                    let buf = $buf;
                    buf.resize($state.len, <$T>::default());
                    numeric!(data, s => each_pos!($state, p => { buf[p] = s[p] as $T; }));
                    Opnd::Sl(&buf[..])
                }
            },
        }
    }};
}

fn is_cmp(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
    )
}

fn is_arith(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Mod
            | BinaryOp::Pow
    )
}

/// The null mask of an unflat operand that may hold NULLs.
fn nulls_of(v: &ValueVector, m: Mode) -> Option<&NullMask> {
    match m {
        Mode::Unflat(_) if v.nulls.may_have_nulls() => Some(&v.nulls),
        _ => None,
    }
}

fn flat_null(v: &ValueVector, m: Mode) -> bool {
    matches!(m, Mode::Flat(p) if v.is_null(p))
}

#[inline(always)]
fn either_null(ln: Option<&NullMask>, rn: Option<&NullMask>, p: usize) -> bool {
    ln.is_some_and(|n| n.is_null(p)) || rn.is_some_and(|n| n.is_null(p))
}

fn mark_nulls(
    out: &mut ValueVector,
    ln: Option<&NullMask>,
    rn: Option<&NullMask>,
    state: &ChunkState,
) {
    if ln.is_none() && rn.is_none() {
        return;
    }
    if state.sel.is_none() {
        for mask in [ln, rn].into_iter().flatten() {
            out.nulls.union_prefix(mask, state.len);
        }
        return;
    }
    each_pos!(state, p => {
        if either_null(ln, rn, p) {
            out.nulls.set(p, true);
        }
    });
}

fn all_null(out: &mut ValueVector, state: &ChunkState) {
    each_pos!(state, p => { out.nulls.set(p, true); });
}

/// Tries the typed path; returns false (leaving the caller to use the generic
/// path) when the operand types or the result type do not fit.
#[allow(clippy::too_many_arguments)]
pub(super) fn binary(
    op: BinaryOp,
    lv: &ValueVector,
    ml: Mode,
    rv: &ValueVector,
    mr: Mode,
    state: &ChunkState,
    regex: Option<&Regex>,
    scratch: &mut Scratch,
    out: &mut ValueVector,
) -> Result<bool> {
    let b = Operands {
        op,
        lv,
        ml,
        rv,
        mr,
        state,
    };
    let temporal = is_cmp(op) && lv.ty == rv.ty;
    if let (Some(lf), Some(rf)) = (num_class(lv, temporal), num_class(rv, temporal)) {
        return b.numeric(lf || rf, scratch, out);
    }
    match (&lv.data, &rv.data) {
        (VectorData::Str(ls), VectorData::Str(rs)) if out.ty == LogicalType::Bool => {
            b.strings(ls, rs, regex, out)
        }
        // Node and rel ids compare as their packed integers (the generic
        // order): `a <> b` between two pattern nodes, and the test that
        // keeps an undirected self-loop once, per tuple of an expansion.
        (VectorData::Id(ls), VectorData::Id(rs)) if out.ty == LogicalType::Bool && is_cmp(op) => {
            Ok(b.ids(ls, rs, out))
        }
        (VectorData::Bool(lb), VectorData::Bool(rb))
            if out.ty == LogicalType::Bool
                && matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor) =>
        {
            Ok(b.bools(lb, rb, out))
        }
        _ => Ok(false),
    }
}

/// A binary operator and its operands over one batch: the vectors, their
/// modes, and the state of the unflat chunk they are read at.
struct Operands<'a> {
    op: BinaryOp,
    lv: &'a ValueVector,
    ml: Mode,
    rv: &'a ValueVector,
    mr: Mode,
    state: &'a ChunkState,
}

impl Operands<'_> {
    /// Numeric arithmetic and comparison (`float`: an operand is a float),
    /// widened to i64 or f64 unless a narrow column meets a constant; false
    /// when the operator or result type does not fit.
    fn numeric(&self, float: bool, scratch: &mut Scratch, out: &mut ValueVector) -> Result<bool> {
        let Operands {
            op,
            lv,
            ml,
            rv,
            mr,
            state,
        } = *self;
        let float = float || op == BinaryOp::Pow;
        let want = if is_cmp(op) {
            LogicalType::Bool
        } else if !is_arith(op) {
            return Ok(false);
        } else if float {
            LogicalType::Double
        } else {
            LogicalType::Int64
        };
        if out.ty != want {
            return Ok(false);
        }
        out.reset(state.len);
        if flat_null(lv, ml) || flat_null(rv, mr) {
            all_null(out, state);
            return Ok(true);
        }
        let (ln, rn) = (nulls_of(lv, ml), nulls_of(rv, mr));
        if float {
            let l = widen!(lv, ml, state, &mut scratch.lf, f64, F64);
            let r = widen!(rv, mr, state, &mut scratch.rf, f64, F64);
            match &mut out.data {
                VectorData::Bool(o) => with_opnds!(l, r, |a, b| cmp_loop(op, a, b, state, o)),
                VectorData::F64(o) => with_opnds!(l, r, |a, b| float_loop(op, a, b, state, o)),
                _ => unreachable!(),
            }
        } else {
            if let VectorData::Bool(o) = &mut out.data {
                if narrow_cmp(op, lv, ml, rv, mr, state, o) {
                    mark_nulls(out, ln, rn, state);
                    return Ok(true);
                }
            }
            let l = widen!(lv, ml, state, &mut scratch.li, i64, I64);
            let r = widen!(rv, mr, state, &mut scratch.ri, i64, I64);
            match &mut out.data {
                VectorData::Bool(o) => with_opnds!(l, r, |a, b| cmp_loop(op, a, b, state, o)),
                VectorData::I64(o) => {
                    with_opnds!(l, r, |a, b| int_loop(op, a, b, state, o, ln, rn))?
                }
                _ => unreachable!(),
            }
        }
        mark_nulls(out, ln, rn, state);
        Ok(true)
    }

    /// String comparison and predicates (`=~` with a pattern compiled
    /// once, or read from a flat right side) into a boolean `out`; false
    /// for other operators and for patterns that vary by row.
    fn strings(
        &self,
        ls: &StringData,
        rs: &StringData,
        regex: Option<&Regex>,
        out: &mut ValueVector,
    ) -> Result<bool> {
        let Operands {
            op,
            lv,
            ml,
            rv,
            mr,
            state,
        } = *self;
        let pred = is_cmp(op)
            || matches!(
                op,
                BinaryOp::StartsWith
                    | BinaryOp::EndsWith
                    | BinaryOp::Contains
                    | BinaryOp::RegexMatch
            );
        if !pred {
            return Ok(false);
        }
        out.reset(state.len);
        if flat_null(lv, ml) || flat_null(rv, mr) {
            all_null(out, state);
            return Ok(true);
        }
        let owned;
        let regex = match (op, regex, mr) {
            (BinaryOp::RegexMatch, Some(r), _) => Some(r),
            (BinaryOp::RegexMatch, None, Mode::Flat(p)) => {
                owned = kernels::compile_regex(rs.get(p))?;
                Some(&owned)
            }
            (BinaryOp::RegexMatch, None, Mode::Unflat(_)) => return Ok(false),
            _ => None,
        };
        let (ln, rn) = (nulls_of(lv, ml), nulls_of(rv, mr));
        let lget = |p: usize| ls.get(if let Mode::Flat(f) = ml { f } else { p });
        let rget = |p: usize| rs.get(if let Mode::Flat(f) = mr { f } else { p });
        let VectorData::Bool(o) = &mut out.data else {
            unreachable!()
        };
        macro_rules! run {
            ($f:expr) => {
                each_pos!(state, p => { o[p] = $f(lget(p), rget(p)); })
            };
        }
        match op {
            BinaryOp::Eq => run!(|a: &str, b: &str| a == b),
            BinaryOp::Ne => run!(|a: &str, b: &str| a != b),
            BinaryOp::Lt => run!(|a: &str, b: &str| a < b),
            BinaryOp::Le => run!(|a: &str, b: &str| a <= b),
            BinaryOp::Gt => run!(|a: &str, b: &str| a > b),
            BinaryOp::Ge => run!(|a: &str, b: &str| a >= b),
            BinaryOp::StartsWith => run!(|a: &str, b: &str| a.starts_with(b)),
            BinaryOp::EndsWith => run!(|a: &str, b: &str| a.ends_with(b)),
            BinaryOp::Contains => run!(|a: &str, b: &str| a.contains(b)),
            _ => {
                let re = regex.expect("regex resolved above");
                run!(|a: &str, _b: &str| re.is_match(a))
            }
        }
        mark_nulls(out, ln, rn, state);
        Ok(true)
    }

    /// A comparison of node or rel ids into a boolean `out`.
    fn ids(&self, ls: &[InternalId], rs: &[InternalId], out: &mut ValueVector) -> bool {
        let Operands {
            op,
            lv,
            ml,
            rv,
            mr,
            state,
        } = *self;
        out.reset(state.len);
        if flat_null(lv, ml) || flat_null(rv, mr) {
            all_null(out, state);
            return true;
        }
        let (ln, rn) = (nulls_of(lv, ml), nulls_of(rv, mr));
        fn opnd(s: &[InternalId], m: Mode) -> Opnd<'_, InternalId> {
            match m {
                Mode::Flat(p) => Opnd::Sc(s[p]),
                Mode::Unflat(_) => Opnd::Sl(s),
            }
        }
        let VectorData::Bool(o) = &mut out.data else {
            unreachable!()
        };
        with_opnds!(opnd(ls, ml), opnd(rs, mr), |a, b| cmp_loop(
            op, a, b, state, o
        ));
        mark_nulls(out, ln, rn, state);
        true
    }

    /// Three-valued AND, OR or XOR of booleans into a boolean `out`.
    fn bools(&self, lb: &[bool], rb: &[bool], out: &mut ValueVector) -> bool {
        let Operands {
            op,
            lv,
            ml,
            rv,
            mr,
            state,
        } = *self;
        out.reset(state.len);
        let get = |v: &ValueVector, b: &[bool], m: Mode, p: usize| {
            let q = if let Mode::Flat(f) = m { f } else { p };
            if v.is_null(q) {
                None
            } else {
                Some(b[q])
            }
        };
        let f = match op {
            BinaryOp::And => kernels::and3,
            BinaryOp::Or => kernels::or3,
            _ => kernels::xor3,
        };
        each_pos!(state, p => {
            match f(get(lv, lb, ml, p), get(rv, rb, mr, p)) {
                Some(b) => {
                    if let VectorData::Bool(o) = &mut out.data {
                        o[p] = b;
                    }
                }
                None => out.nulls.set(p, true),
            }
        });
        true
    }
}

/// A column of a narrow integer type (or DATE) against a constant that
/// fits it: compared in the column's own type, without widening the
/// column to i64 first (`a.age = 18` over INT32 ages). False when the
/// operands are not of that shape.
fn narrow_cmp(
    op: BinaryOp,
    lv: &ValueVector,
    ml: Mode,
    rv: &ValueVector,
    mr: Mode,
    state: &ChunkState,
    out: &mut [bool],
) -> bool {
    fn constant(v: &ValueVector, p: usize) -> Option<i64> {
        match &v.data {
            VectorData::I8(s) => Some(s[p].into()),
            VectorData::I16(s) => Some(s[p].into()),
            VectorData::I32(s) => Some(s[p].into()),
            VectorData::I64(s) => Some(s[p]),
            VectorData::U8(s) => Some(s[p].into()),
            VectorData::U16(s) => Some(s[p].into()),
            VectorData::U32(s) => Some(s[p].into()),
            _ => None,
        }
    }
    // The column, the constant, and whether the constant is the left operand.
    let (column, c, flipped) = match (ml, mr) {
        (Mode::Unflat(_), Mode::Flat(p)) => (lv, constant(rv, p), false),
        (Mode::Flat(p), Mode::Unflat(_)) => (rv, constant(lv, p), true),
        _ => return false,
    };
    let Some(c) = c else {
        return false;
    };
    macro_rules! compare {
        ($s:expr) => {{
            let Ok(c) = c.try_into() else {
                return false;
            };
            match flipped {
                true => cmp_loop(op, Sc(c), Sl(&$s[..]), state, out),
                false => cmp_loop(op, Sl(&$s[..]), Sc(c), state, out),
            }
            true
        }};
    }
    match &column.data {
        VectorData::I8(s) => compare!(s),
        VectorData::I16(s) => compare!(s),
        VectorData::I32(s) => compare!(s),
        VectorData::U8(s) => compare!(s),
        VectorData::U16(s) => compare!(s),
        VectorData::U32(s) => compare!(s),
        _ => false,
    }
}

#[multiversion::multiversion(targets("x86_64+avx2+bmi1+bmi2+lzcnt+popcnt+fma"))]
fn cmp_loop<T: PartialOrd + Copy, L: At<T>, R: At<T>>(
    op: BinaryOp,
    l: L,
    r: R,
    state: &ChunkState,
    out: &mut [bool],
) {
    macro_rules! run {
        ($f:expr) => {
            each_pos_cut!(state, l, r, out, p => { out[p] = $f(l.at(p), r.at(p)); })
        };
    }
    match op {
        BinaryOp::Eq => run!(|a: T, b: T| a == b),
        BinaryOp::Ne => run!(|a: T, b: T| a != b),
        BinaryOp::Lt => run!(|a: T, b: T| a < b),
        BinaryOp::Le => run!(|a: T, b: T| a <= b),
        BinaryOp::Gt => run!(|a: T, b: T| a > b),
        _ => run!(|a: T, b: T| a >= b),
    }
}

#[multiversion::multiversion(targets("x86_64+avx2+bmi1+bmi2+lzcnt+popcnt+fma"))]
fn float_loop<L: At<f64>, R: At<f64>>(
    op: BinaryOp,
    l: L,
    r: R,
    state: &ChunkState,
    out: &mut [f64],
) {
    macro_rules! run {
        ($f:expr) => {
            each_pos!(state, p => { out[p] = $f(l.at(p), r.at(p)); })
        };
    }
    match op {
        BinaryOp::Add => run!(|a: f64, b: f64| a + b),
        BinaryOp::Sub => run!(|a: f64, b: f64| a - b),
        BinaryOp::Mul => run!(|a: f64, b: f64| a * b),
        BinaryOp::Div => run!(|a: f64, b: f64| a / b),
        BinaryOp::Mod => run!(|a: f64, b: f64| a % b),
        _ => run!(|a: f64, b: f64| a.powf(b)),
    }
}

/// For `a` and `d` that fit 32 bits (above `i32::MIN`) and `d` not zero:
/// both as doubles and `a / d` truncated, by a double division: exact
/// (see `div_loop`), and without the saturating conversion's NaN and
/// range tests, which keep a loop from vectorizing. Through i32, whose
/// conversions to and from doubles the baseline x86-64 vector unit has.
#[inline(always)]
fn narrow_division(a: i64, d: i64) -> (f64, f64, i32) {
    let (a, d) = ((a as i32) as f64, (d as i32) as f64);
    // SAFETY: `d` is not zero and both operands are integers of magnitude
    // below 2^31, so `a / d` is finite and |a / d| <= |a| < 2^31:
    // truncated toward zero it fits i32.
    (a, d, unsafe { (a / d).to_int_unchecked::<i32>() })
}

/// `a / d` for narrow operands (see [`narrow_division`]).
#[inline(always)]
fn quotient_of_narrow(a: i64, d: i64) -> i64 {
    i64::from(narrow_division(a, d).2)
}

/// `a % d` for narrow operands, all in doubles: `a - trunc(a / d) * d` is
/// exact there (every term is an integer below 2^32 in magnitude), and
/// the baseline vector unit has no 64-bit multiply (emulating one was a
/// third of SQ2's remainders).
#[inline(always)]
fn remainder_of_narrow(a: i64, d: i64) -> i64 {
    let (a, d, q) = narrow_division(a, d);
    // SAFETY: the remainder is an integer of magnitude below |d| < 2^31.
    i64::from(unsafe { (a - f64::from(q) * d).to_int_unchecked::<i32>() })
}

/// Integer `/` and `%` (truncating, the remainder taking the dividend's
/// sign): one pass checks the live divisors (zero is an error, as is
/// `i64::MIN / -1`) and whether every live operand is narrow (fits 32 bits;
/// without NULLs, lies in [-2^30, 2^30)), then a loop without branches
/// divides, through 32-bit doubles when they are (a 64-bit divide costs
/// several times as much). NULL positions divide by 1.
#[multiversion::multiversion(targets("x86_64+avx2+bmi1+bmi2+lzcnt+popcnt+fma"))]
fn div_loop<L: At<i64>, R: At<i64>>(
    op: BinaryOp,
    l: L,
    r: R,
    state: &ChunkState,
    out: &mut [i64],
    ln: Option<&NullMask>,
    rn: Option<&NullMask>,
) -> Result<()> {
    let has_nulls = ln.is_some() || rn.is_some();
    let fits = |v: i64| v > i32::MIN as i64 && v <= i32::MAX as i64;
    let (mut zero, mut ovf, mut narrow) = (false, false, true);
    if has_nulls {
        each_pos!(state, p => {
            if !either_null(ln, rn, p) {
                let (a, b) = (l.at(p), r.at(p));
                zero |= b == 0;
                ovf |= a == i64::MIN && b == -1;
                narrow &= fits(a) && fits(b);
            }
        });
    } else {
        // Shifts, ors and adds only: the baseline x86-64 vector unit has no
        // 64-bit compare, so a pass of `==` and `<` stays scalar (a quarter
        // of SQ2). `is_zero(x)` is 1 for 0, else 0 (the sign bit of
        // `x | -x` is set for any other x); an operand counts as narrow
        // when it lies in [-2^30, 2^30), a part of what fits 32 bits (the
        // others divide in 64 bits, as every wide operand does).
        let is_zero = |x: i64| (((x | x.wrapping_neg()) as u64) >> 63) ^ 1;
        let wide = |v: i64| (v as u64).wrapping_add(1 << 30) >> 31;
        let (mut zeros, mut overflows, mut wides) = (0u64, 0u64, 0u64);
        each_pos_cut!(state, l, r, p => {
            let (a, b) = (l.at(p), r.at(p));
            zeros |= is_zero(b);
            overflows |= is_zero((a ^ i64::MIN) | !b);
            wides |= wide(a) | wide(b);
        });
        (zero, ovf, narrow) = (zeros != 0, overflows != 0, wides == 0);
    }
    if zero {
        return Err(kith_common::Error::runtime("division by zero"));
    }
    if ovf {
        return Err(overflow(op));
    }
    // `d | (d == 0)` is `d`, or 1 for the zero a NULL position may hold.
    // Operands that fit 32 bits divide as doubles, which vectorizes: the
    // truncated quotient is exact, because a quotient of magnitude
    // below 2^31 / |d| is off by at most 2^-22 / |d| after rounding, less
    // than its distance 1 / |d| from any other integer.
    match (op == BinaryOp::Div, narrow) {
        (true, true) => each_pos_cut!(state, l, r, out, p => {
            let (a, d) = (l.at(p), r.at(p));
            out[p] = quotient_of_narrow(a, d | (d == 0) as i64);
        }),
        (false, true) => each_pos_cut!(state, l, r, out, p => {
            let (a, d) = (l.at(p), r.at(p));
            out[p] = remainder_of_narrow(a, d | (d == 0) as i64);
        }),
        (true, false) => each_pos_cut!(state, l, r, out, p => {
            let (a, d) = (l.at(p), r.at(p));
            out[p] = a.wrapping_div(d | (d == 0) as i64);
        }),
        (false, false) => each_pos_cut!(state, l, r, out, p => {
            let (a, d) = (l.at(p), r.at(p));
            out[p] = a.wrapping_rem(d | (d == 0) as i64);
        }),
    }
    Ok(())
}

#[multiversion::multiversion(targets("x86_64+avx2+bmi1+bmi2+lzcnt+popcnt+fma"))]
fn int_loop<L: At<i64>, R: At<i64>>(
    op: BinaryOp,
    l: L,
    r: R,
    state: &ChunkState,
    out: &mut [i64],
    ln: Option<&NullMask>,
    rn: Option<&NullMask>,
) -> Result<()> {
    let has_nulls = ln.is_some() || rn.is_some();
    macro_rules! wrapping {
        ($f:ident) => {{
            let mut ovf = false;
            if has_nulls {
                each_pos!(state, p => {
                    let (v, o) = l.at(p).$f(r.at(p));
                    out[p] = v;
                    ovf |= o && !either_null(ln, rn, p);
                });
            } else {
                each_pos_cut!(state, l, r, out, p => {
                    let (v, o) = l.at(p).$f(r.at(p));
                    out[p] = v;
                    ovf |= o;
                });
            }
            if ovf {
                return Err(overflow(op));
            }
        }};
    }
    match op {
        BinaryOp::Add => wrapping!(overflowing_add),
        BinaryOp::Sub => wrapping!(overflowing_sub),
        BinaryOp::Mul => wrapping!(overflowing_mul),
        BinaryOp::Div | BinaryOp::Mod => div_loop(op, l, r, state, out, ln, rn)?,
        _ => each_pos!(state, p => {
            if !(has_nulls && either_null(ln, rn, p)) {
                out[p] = kernels::int_arith(op, l.at(p), r.at(p))?;
            }
        }),
    }
    Ok(())
}
