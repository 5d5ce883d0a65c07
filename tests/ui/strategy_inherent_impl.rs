struct S;

#[gridtest::strategy(name = "s")]
impl S {
    fn go(&self) {}
}

fn main() {}
