//! Vectorized expression evaluation (being written).
