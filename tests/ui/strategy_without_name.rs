use gridtest::prelude::*;

#[derive(Params)]
struct P {
    fast: usize,
}

struct S;

#[gridtest::strategy]
impl Strategy for S {
    type Params = P;
    type Feed = Ticks;
    fn new(_: &P) -> Self {
        S
    }
    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        0.0
    }
}

fn main() {}
