use gridtest::prelude::*;

#[derive(Params)]
struct P {
    period: u64,
}

struct S;

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

fn main() {
    let _ = Sweep::of::<S>().grid(Grid::new().axis("period", [7u64, 14]));
}
