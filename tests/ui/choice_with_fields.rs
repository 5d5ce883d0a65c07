#[derive(gridtest::Choice)]
enum Side {
    Long,
    Short(f64),
    Both { weight: f64 },
}

fn main() {}
