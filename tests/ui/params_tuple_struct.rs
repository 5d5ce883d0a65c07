use gridtest::prelude::*;

#[derive(Params)]
struct Windows(usize, usize);

fn main() {}
