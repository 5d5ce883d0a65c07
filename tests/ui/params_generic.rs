use gridtest::prelude::*;

#[derive(Params)]
struct P<T> {
    fast: T,
}

fn main() {}
