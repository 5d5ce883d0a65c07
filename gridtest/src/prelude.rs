//! Everything a strategy author needs: `use gridtest::prelude::*;`.

pub use crate::sweep::Sweep;
pub use gridtest_core::prelude::*;
