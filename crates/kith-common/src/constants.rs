//! Sizes that matter for correctness, in one place. Under `--cfg kith_tiny` they
//! shrink so that boundary bugs (vector, page, node-group and morsel edges) show up
//! in small tests.

/// Values per vector exchanged between operators.
#[cfg(not(kith_tiny))]
pub const VECTOR_CAPACITY: usize = 2048;
#[cfg(kith_tiny)]
pub const VECTOR_CAPACITY: usize = 4;

/// Bytes per page of the database file.
pub const PAGE_SIZE: usize = 4096;

/// Rows per node group (the unit of columnar storage and of CSR regions).
#[cfg(not(kith_tiny))]
pub const NODE_GROUP_SIZE: u64 = 1 << 17;
#[cfg(kith_tiny)]
pub const NODE_GROUP_SIZE: u64 = 64;

/// Rows per scan morsel (a multiple of `VECTOR_CAPACITY`).
#[cfg(not(kith_tiny))]
pub const MORSEL_SIZE: u64 = 2048;
#[cfg(kith_tiny)]
pub const MORSEL_SIZE: u64 = 4;

/// Rows per scan morsel of a pipeline that expands each row (an extend
/// reading neighbours, an intersection, a cross product) when several
/// threads run it: a skewed graph puts most of the work in the morsels of
/// its hubs (R-MAT's first 2,048 nodes hold half of a 2-hop pattern's
/// tuples), which one worker would otherwise run alone. One thread keeps
/// `MORSEL_SIZE`: smaller batches cost it about a quarter more per tuple on
/// a cheap 1-hop count and buy it nothing.
#[cfg(not(kith_tiny))]
pub const EXPAND_MORSEL_SIZE: u64 = 512;
#[cfg(kith_tiny)]
pub const EXPAND_MORSEL_SIZE: u64 = 2;

/// Bytes per morsel of an input file during a parallel COPY.
#[cfg(not(kith_tiny))]
pub const COPY_MORSEL_BYTES: usize = 4 << 20;
#[cfg(kith_tiny)]
pub const COPY_MORSEL_BYTES: usize = 64;

const _: () = assert!(VECTOR_CAPACITY.is_power_of_two());
const _: () = assert!(NODE_GROUP_SIZE.is_multiple_of(MORSEL_SIZE));
const _: () = assert!(MORSEL_SIZE.is_multiple_of(EXPAND_MORSEL_SIZE));
const _: () = assert!(
    (MORSEL_SIZE as usize).is_multiple_of(VECTOR_CAPACITY)
        || (VECTOR_CAPACITY as u64).is_multiple_of(MORSEL_SIZE)
);
