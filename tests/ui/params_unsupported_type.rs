use gridtest::prelude::*;

#[derive(Params)]
struct P {
    fast: usize,
    weights: Vec<f64>,
}

fn main() {}
