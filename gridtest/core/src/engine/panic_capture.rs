//! Catching strategy panics per cell, with their message and location, without printing them.
//!
//! A process-wide panic hook is installed once; on a thread that is inside [`catch`] it records
//! the location instead of printing, and everywhere else it defers to the previous hook.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CAPTURING.get() {
                let at = info.location().map(ToString::to_string);
                LOCATION.with_borrow_mut(|l| *l = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into `Err("message (at file:line:col)")`.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    let was = CAPTURING.replace(true);
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CAPTURING.set(was);
    result.map_err(|payload| {
        let msg = message(payload.as_ref());
        match LOCATION.with_borrow_mut(Option::take) {
            Some(at) => format!("{msg} (at {at})"),
            None => msg,
        }
    })
}

fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}
