//! Caches that live for one call: a thread-local slot holds a fresh value while the outermost
//! [`with_scoped`] on this thread runs, and nested calls share it. Used where one operation asks
//! the file system the same question many times (git roots, folder realpaths) but a
//! long-running app must not keep the answers past the operation.

use std::cell::RefCell;
use std::thread::LocalKey;

/// Runs `f` with `slot` holding `T::default()`, unless an outer call on this thread already
/// filled it (then `f` shares that value). The outermost call empties the slot when it returns,
/// also when `f` panics.
pub fn with_scoped<T: Default + 'static, R>(slot: &'static LocalKey<RefCell<Option<T>>>, f: impl FnOnce() -> R) -> R {
    struct Empty<T: 'static>(&'static LocalKey<RefCell<Option<T>>>);
    impl<T: 'static> Drop for Empty<T> {
        fn drop(&mut self) {
            self.0.with(|s| *s.borrow_mut() = None);
        }
    }
    let outer = slot.with(|s| s.borrow().is_some());
    if outer {
        return f();
    }
    slot.with(|s| *s.borrow_mut() = Some(T::default()));
    let _empty = Empty(slot);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static SLOT: RefCell<Option<Vec<u32>>> = const { RefCell::new(None) };
    }

    fn push(n: u32) {
        SLOT.with(|s| s.borrow_mut().as_mut().expect("inside a scope").push(n));
    }

    fn seen() -> Option<Vec<u32>> {
        SLOT.with(|s| s.borrow().clone())
    }

    #[test]
    fn nested_calls_share_the_value_and_the_outermost_empties_it() {
        assert_eq!(seen(), None);
        with_scoped(&SLOT, || {
            push(1);
            with_scoped(&SLOT, || push(2));
            assert_eq!(seen(), Some(vec![1, 2]));
        });
        assert_eq!(seen(), None);
        with_scoped(&SLOT, || assert_eq!(seen(), Some(vec![])));
    }

    #[test]
    fn a_panic_inside_still_empties_the_slot() {
        let r = std::panic::catch_unwind(|| with_scoped(&SLOT, || panic!("inside")));
        assert!(r.is_err());
        assert_eq!(seen(), None);
    }
}
