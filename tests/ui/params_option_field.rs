use gridtest::prelude::*;

#[derive(Params)]
struct P {
    fast: usize,
    stop: Option<usize>,
}

fn main() {}
