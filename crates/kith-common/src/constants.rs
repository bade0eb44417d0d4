//! Sizes that matter for correctness. Under `--cfg kith_tiny` they shrink so that
//! boundary bugs show up in small tests.

/// Values per vector.
#[cfg(not(kith_tiny))]
pub const VECTOR_CAPACITY: usize = 2048;
#[cfg(kith_tiny)]
pub const VECTOR_CAPACITY: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_capacity_is_power_of_two() {
        assert!(VECTOR_CAPACITY.is_power_of_two());
    }
}
