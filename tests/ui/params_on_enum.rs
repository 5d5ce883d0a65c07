use gridtest::prelude::*;

#[derive(Params)]
enum Mode {
    Fast,
    Slow,
}

fn main() {}
