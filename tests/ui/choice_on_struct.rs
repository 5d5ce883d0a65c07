#[derive(gridtest::Choice)]
struct Side {
    long: bool,
}

fn main() {}
