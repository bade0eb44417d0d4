//! Freeing large intermediate results on the workers instead of the
//! calling thread.

use std::sync::Arc;

use parking_lot::Mutex;

use kith_sched::Scheduler;

use crate::operator::scan_rows::RowPieces;

/// A part's input rows holding at least this many values that own an
/// allocation each are freed on the workers.
#[cfg(not(kith_tiny))]
pub(crate) const FREE_ON_WORKERS_MIN_ROWS: usize = 8 * 1024;

#[cfg(kith_tiny)]
pub(crate) const FREE_ON_WORKERS_MIN_ROWS: usize = 2;

/// Frees rows a part has read, each chunk on a worker, when they hold
/// many values that own an allocation each (lists, maps, nodes: a
/// `Value` column): freeing the 65 Ki lists of `WITH a, collect(b.id)`
/// on the calling thread took longer than reading them (1.4 ms at
/// 1 thread, 2.6 ms at 2, where the workers had allocated them). Rows
/// someone still holds, or of one chunk, are left to their last owner.
pub(crate) fn free_rows(pieces: Arc<RowPieces>, sched: &Scheduler, threads: usize) {
    if threads < 2 {
        return;
    }
    let Ok(pieces) = Arc::try_unwrap(pieces) else {
        return;
    };
    let chunks = pieces.into_chunks();
    let values: usize = chunks
        .iter()
        .filter(|c| {
            c.columns
                .iter()
                .any(|v| matches!(v.data, kith_common::VectorData::Value(_)))
        })
        .map(|c| c.num_rows)
        .sum();
    if chunks.len() >= 2 && values >= FREE_ON_WORKERS_MIN_ROWS {
        drop_on_workers(chunks, sched, threads);
    }
}

/// Drops `items` on up to `threads` workers, one item per task.
pub(crate) fn drop_on_workers<T: Send + 'static>(items: Vec<T>, sched: &Scheduler, threads: usize) {
    let n = items.len();
    let slots: Arc<Vec<Mutex<Option<T>>>> =
        Arc::new(items.into_iter().map(|c| Mutex::new(Some(c))).collect());
    // Not the query's token: the rows are freed even after a LIMIT ended
    // the part. What a failed task leaves is dropped with `slots`.
    let _ = sched.parallel_map(threads, &kith_sched::CancelToken::new(), n, move |i| {
        drop(slots[i].lock().take());
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items dropped on the workers: some by a pool worker, not all by the
    /// calling thread, and every one of them.
    #[test]
    fn drop_on_workers_drops_every_item_and_not_all_on_the_caller() {
        struct Noted(Arc<Mutex<Vec<std::thread::ThreadId>>>);
        impl Drop for Noted {
            fn drop(&mut self) {
                // Slow enough that the caller cannot take every item.
                std::thread::sleep(std::time::Duration::from_millis(2));
                self.0.lock().push(std::thread::current().id());
            }
        }
        let sched = Scheduler::new(2);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let items: Vec<Noted> = (0..32).map(|_| Noted(Arc::clone(&seen))).collect();
        drop_on_workers(items, &sched, 2);
        let seen = seen.lock();
        assert_eq!(seen.len(), 32);
        let me = std::thread::current().id();
        assert!(
            seen.iter().any(|t| *t != me),
            "every item dropped by the caller"
        );
    }
}
