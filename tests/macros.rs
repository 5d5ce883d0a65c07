//! Misuse of `#[derive(Params)]` and `#[gridtest::strategy]` is a compile error with a clear
//! message at the right place; the messages are pinned in `ui/*.stderr`.

#[test]
fn macro_misuse_is_a_clear_compile_error() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/*.rs");
}
