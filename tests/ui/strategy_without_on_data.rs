use gridtest::prelude::*;

#[derive(Params)]
struct P {
    fast: usize,
}

struct S;

#[gridtest::strategy(name = "s")]
impl Strategy for S {
    type Params = P;
    type Feed = Ticks;
    fn new(_: &P) -> Self {
        S
    }
}

fn main() {}
