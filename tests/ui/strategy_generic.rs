use gridtest::prelude::*;

#[derive(Params)]
struct P {
    fast: usize,
}

struct S<T>(T);

#[gridtest::strategy(name = "s")]
impl<T: Send + 'static> Strategy for S<T> {
    type Params = P;
    type Feed = Ticks;
    fn new(_: &P) -> Self {
        unimplemented!()
    }
    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        0.0
    }
}

fn main() {}
