//! Locks that outlive a panic.
//!
//! A lock is poisoned when a thread panics while holding it. The host holds
//! its locks only around short, self-contained updates (a map insert, a
//! push, a swap), so the data behind a poisoned lock is still whole; refusing
//! every later call because one thread panicked would turn one fault into a
//! host that no longer serves. These extension traits take the guard either
//! way, in one place instead of at every lock.

use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// [`Mutex`] access that ignores poisoning (see the module docs for why).
pub trait MutexExt<T> {
    /// Locks the mutex, taking the guard even if a panicking thread held it.
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T>;
    /// Consumes the mutex and returns its data, poisoned or not.
    fn into_inner_unpoisoned(self) -> T;
}

impl<T> MutexExt<T> for Mutex<T> {
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn into_inner_unpoisoned(self) -> T {
        self.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// [`RwLock`] access that ignores poisoning (see the module docs for why).
pub trait RwLockExt<T> {
    /// Takes a read guard, even if a panicking thread held the lock.
    fn read_unpoisoned(&self) -> RwLockReadGuard<'_, T>;
    /// Takes the write guard, even if a panicking thread held the lock.
    fn write_unpoisoned(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T> RwLockExt<T> for RwLock<T> {
    fn read_unpoisoned(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_unpoisoned(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// [`Condvar`] waiting that ignores poisoning (see the module docs for why).
pub trait CondvarExt {
    /// Waits on the condition variable, taking the guard back poisoned or not.
    fn wait_unpoisoned<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T>;
}

impl CondvarExt for Condvar {
    fn wait_unpoisoned<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_lock_held_by_a_panicking_thread_still_serves() {
        let mutex = Arc::new(Mutex::new(vec![1]));
        let rwlock = Arc::new(RwLock::new(1));
        let (m, r) = (Arc::clone(&mutex), Arc::clone(&rwlock));
        let _ = std::thread::spawn(move || {
            let _m = m.lock().unwrap();
            let _r = r.write().unwrap();
            panic!("poison both");
        })
        .join();
        assert!(mutex.is_poisoned() && rwlock.is_poisoned());
        mutex.lock_unpoisoned().push(2);
        *rwlock.write_unpoisoned() += 1;
        assert_eq!(*rwlock.read_unpoisoned(), 2);
        let mutex = Arc::try_unwrap(mutex).unwrap();
        assert_eq!(mutex.into_inner_unpoisoned(), vec![1, 2]);
    }
}
