//! Panic containment at the boundary, module side: [`Guarded`] runs every call of a module
//! instance inside `catch_unwind` and poisons the instance after a panic; the helpers drop and
//! read panic payloads without letting a second panic escape.
//!
//! The interfaces' impls for `Guarded` are written by `boundary_mirror!` where each interface
//! is declared; they reach `inner`, `poisoned` and `guard` from there.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

use abi_stable::std_types::RResult;

use crate::error::{ErrorKind, ModuleError, Result};

/// Wraps a [`Sorter`] or [`Allocator`] so that it can cross the boundary: every call runs
/// inside `catch_unwind`; a panic becomes [`ErrorKind::PANICKED`] and poisons the instance, so
/// that later calls fail with [`ErrorKind::POISONED`] instead of running on broken state.
///
/// Dropping it drops the inner value inside `catch_unwind` too: a module whose `Drop` panics
/// (or panics with a payload that panics when dropped) cannot unwind into the host.
///
/// [`Sorter`]: crate::Sorter
/// [`Allocator`]: crate::Allocator
pub struct Guarded<T> {
    pub(super) inner: std::mem::ManuallyDrop<T>,
    pub(super) poisoned: AtomicBool,
}

impl<T> Guarded<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Guarded<T> {
        Guarded { inner: std::mem::ManuallyDrop::new(inner), poisoned: AtomicBool::new(false) }
    }
}

impl<T> Drop for Guarded<T> {
    fn drop(&mut self) {
        // SAFETY: `inner` is taken once, here, and `self` is never used again.
        let inner = unsafe { std::mem::ManuallyDrop::take(&mut self.inner) };
        if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(inner))) {
            let message = contained_message(payload);
            log::error!("a module instance panicked while being dropped: {message}");
        }
    }
}

/// Drops a panic payload without letting a second panic escape: a payload whose own `Drop`
/// panics is dropped inside `catch_unwind`, and the second payload is leaked.
pub fn drop_payload(payload: Box<dyn std::any::Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}

/// The message of a caught panic, with the payload dropped safely (see [`drop_payload`]).
pub(super) fn contained_message(payload: Box<dyn std::any::Any + Send>) -> String {
    let message = catch_unwind(AssertUnwindSafe(|| panic_message(&*payload))).unwrap_or_else(|p| {
        drop_payload(p);
        "panic with a payload that panicked when read".to_owned()
    });
    drop_payload(payload);
    message
}

/// Turns a panic payload into a message.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_owned()
    }
}

/// Runs `f`, catching a panic; `poisoned` is set on panic and checked before running.
pub(super) fn guard<R>(
    poisoned: &AtomicBool,
    call: &str,
    f: impl FnOnce() -> Result<R>,
) -> RResult<R, ModuleError> {
    if poisoned.load(Ordering::Relaxed) {
        return RResult::RErr(ModuleError {
            kind: ErrorKind::POISONED,
            message: format!("{call}: the instance panicked earlier and is no longer used").into(),
        });
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.into(),
        Err(payload) => {
            poisoned.store(true, Ordering::Relaxed);
            RResult::RErr(ModuleError {
                kind: ErrorKind::PANICKED,
                message: format!("{call}: {}", contained_message(payload)).into(),
            })
        }
    }
}
