//! Parallel map over item indices: the simplest task shape (parse morsel i,
//! build group i), with results returned in index order.

use std::sync::Arc;

use parking_lot::Mutex;

use kith_common::{Error, Result};

use crate::{CancelToken, MorselDispenser, Scheduler, Task, WorkerContext};

struct MapTask<T, F> {
    items: MorselDispenser,
    f: F,
    out: Mutex<Vec<Option<T>>>,
}

impl<T: Send, F: Fn(usize) -> Result<T> + Send + Sync> Task for MapTask<T, F> {
    fn run_worker(&self, ctx: &WorkerContext) -> Result<()> {
        while let Some(range) = self.items.next(ctx.worker_idx) {
            ctx.cancel.check()?;
            for i in range {
                let v = (self.f)(i as usize)?;
                self.out.lock()[i as usize] = Some(v);
            }
        }
        Ok(())
    }
}

impl Scheduler {
    /// Runs `f(i)` for every `i` in `0..n` on up to `threads` workers and
    /// returns the results in order; the first error wins.
    pub fn parallel_map<T, F>(
        &self,
        threads: usize,
        cancel: &CancelToken,
        n: usize,
        f: F,
    ) -> Result<Vec<T>>
    where
        T: Send + 'static,
        F: Fn(usize) -> Result<T> + Send + Sync + 'static,
    {
        let task = Arc::new(MapTask {
            items: MorselDispenser::new(n as u64, 1),
            f,
            out: Mutex::new((0..n).map(|_| None).collect()),
        });
        self.run(Arc::clone(&task) as Arc<dyn Task>, threads, cancel)?;
        let out = std::mem::take(&mut *task.out.lock());
        out.into_iter()
            .map(|v| v.ok_or_else(|| Error::internal("parallel map left an item unprocessed")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_in_order() {
        let s = Scheduler::new(3);
        let v = s
            .parallel_map(3, &CancelToken::new(), 100, |i| Ok(i * 2))
            .unwrap();
        assert_eq!(v, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        let err = s
            .parallel_map(3, &CancelToken::new(), 10, |i| {
                if i == 7 {
                    Err(Error::runtime("seven"))
                } else {
                    Ok(i)
                }
            })
            .unwrap_err();
        assert_eq!(err.message, "seven");
    }
}
