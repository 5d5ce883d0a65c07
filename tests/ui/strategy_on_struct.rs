#[gridtest::strategy(name = "s")]
struct S {
    fast: usize,
}

fn main() {}
