//! The worker pool: threads that join running tasks.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use kith_common::{Error, Result};

use crate::cancel::CancelToken;

/// Work that several workers run concurrently, each pulling morsels until
/// none are left. Implementations keep per-worker state keyed by
/// `ctx.worker_idx` or in locals and merge it at the end.
pub trait Task: Send + Sync {
    fn run_worker(&self, ctx: &WorkerContext) -> Result<()>;
}

/// What a worker knows about its place in a running task.
pub struct WorkerContext {
    /// 0 for the thread that called [`Scheduler::run`], then 1, 2, ...
    pub worker_idx: usize,
    /// Upper bound on the number of workers of this task.
    pub num_workers: usize,
    pub cancel: CancelToken,
}

struct JobState {
    /// Pool workers that may still join.
    open_slots: usize,
    /// Pool workers currently running the task.
    active: usize,
    next_idx: usize,
    error: Option<Error>,
}

struct Job {
    /// Taken by [`Scheduler::run`] once every worker is done: a pool worker
    /// still holds its `Arc<Job>` for a moment after it reports, and the
    /// task (with what it owns: the query's memory charges, pinned pages)
    /// must be gone when `run` returns, not whenever that worker gets to
    /// drop its handle.
    task: Mutex<Option<Arc<dyn Task>>>,
    num_workers: usize,
    cancel: CancelToken,
    state: Mutex<JobState>,
    done: Condvar,
}

impl Job {
    fn record(&self, result: Result<()>) {
        if let Err(e) = result {
            // Stop the other workers of this task; keep the first error.
            self.cancel.cancel();
            let mut st = self.state.lock();
            if st.error.is_none() {
                st.error = Some(e);
            }
        }
    }

    /// Runs the task as worker `worker_idx`; the worker's handle on the
    /// task is dropped before this returns.
    fn run_as(&self, worker_idx: usize) {
        let Some(task) = self.task.lock().clone() else {
            return;
        };
        let ctx = WorkerContext {
            worker_idx,
            num_workers: self.num_workers,
            cancel: self.cancel.clone(),
        };
        let result = catch_unwind(AssertUnwindSafe(|| task.run_worker(&ctx)))
            .unwrap_or_else(|panic| Err(Error::internal(panic_message(&panic))));
        drop(task);
        self.record(result);
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("a worker panicked: {what}")
}

/// How long a pool worker that finished a task, or was woken by
/// [`Scheduler::anticipate`], watches for the next task before it sleeps.
/// Waking a sleeping thread takes tens of microseconds (more in a virtual
/// machine), as much as a small query's whole parallel phase; a query runs
/// its pipelines, merges and sorts as tasks one after another.
const WORKER_SPIN: Duration = Duration::from_micros(300);

/// How long [`Scheduler::run`]'s caller, done with its own share, watches
/// for the pool workers to finish before it sleeps: they are at most a
/// morsel behind, and waking the caller costs as much as waking a worker.
const CALLER_SPIN: Duration = Duration::from_micros(200);

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Tasks ever queued: a spinning worker watches it without the lock.
    posted: AtomicU64,
    /// Times a worker went to sleep (tests check that spinning avoids it).
    sleeps: AtomicU64,
    worker_spin: Duration,
}

struct Queue {
    jobs: VecDeque<Arc<Job>>,
    shutdown: bool,
    /// Until when woken workers watch for a task ([`Scheduler::anticipate`]).
    anticipated: Option<Instant>,
}

/// The database's shared thread pool.
pub struct Scheduler {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    num_threads: usize,
    caller_spin: Duration,
}

impl Scheduler {
    /// A pool for `num_threads` concurrent workers per task (the caller counts
    /// as one, so `num_threads - 1` threads are spawned).
    pub fn new(num_threads: usize) -> Arc<Scheduler> {
        Self::with_spins(num_threads, WORKER_SPIN, CALLER_SPIN)
    }

    /// [`Scheduler::new`] with other busy-wait times than
    /// [`WORKER_SPIN`] and [`CALLER_SPIN`].
    fn with_spins(
        num_threads: usize,
        worker_spin: Duration,
        caller_spin: Duration,
    ) -> Arc<Scheduler> {
        let num_threads = num_threads.max(1);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                shutdown: false,
                anticipated: None,
            }),
            wake: Condvar::new(),
            posted: AtomicU64::new(0),
            sleeps: AtomicU64::new(0),
            worker_spin,
        });
        let threads = (1..num_threads)
            .filter_map(|i| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("kith-worker-{i}"))
                    .spawn(move || worker_loop(&shared))
                    .ok()
            })
            .collect();
        Arc::new(Scheduler {
            shared,
            threads: Mutex::new(threads),
            num_threads,
            caller_spin,
        })
    }

    pub fn num_threads(&self) -> usize {
        self.num_threads
    }

    /// Says that a task for up to `max_threads` workers is about to come
    /// (a query being planned): sleeping pool workers wake now and watch
    /// for it a while, so that their wake-up overlaps the planning instead
    /// of delaying the task.
    pub fn anticipate(&self, max_threads: usize) {
        let wanted = max_threads.clamp(1, self.num_threads) - 1;
        if wanted == 0 {
            return;
        }
        self.shared.queue.lock().anticipated = Some(Instant::now() + self.shared.worker_spin);
        for _ in 0..wanted {
            self.shared.wake.notify_one();
        }
    }

    /// Runs `task` on the calling thread plus up to `max_threads - 1` pool
    /// workers and returns when all of them are done: the first error, or a
    /// panic turned into an internal error.
    pub fn run(&self, task: Arc<dyn Task>, max_threads: usize, cancel: &CancelToken) -> Result<()> {
        let num_workers = max_threads.clamp(1, self.num_threads);
        // A child token so that one task's failure stops its own workers
        // without cancelling the caller's token.
        let job = Arc::new(Job {
            task: Mutex::new(Some(task)),
            num_workers,
            cancel: cancel.child(),
            state: Mutex::new(JobState {
                open_slots: num_workers - 1,
                active: 0,
                next_idx: 1,
                error: None,
            }),
            done: Condvar::new(),
        });
        if num_workers > 1 {
            let mut q = self.shared.queue.lock();
            q.jobs.push_back(Arc::clone(&job));
            self.shared.posted.fetch_add(1, Ordering::Release);
            drop(q);
            for _ in 1..num_workers {
                self.shared.wake.notify_one();
            }
        }
        job.run_as(0);
        // Close the job to late joiners and wait for the ones that joined.
        let spin_until = Instant::now() + self.caller_spin;
        let mut st = job.state.lock();
        st.open_slots = 0;
        while st.active > 0 {
            if Instant::now() < spin_until {
                MutexGuard::unlocked(&mut st, spin_a_little);
                continue;
            }
            job.done.wait(&mut st);
        }
        let error = st.error.take();
        drop(st);
        // No worker runs the task any more: drop it here, on the caller's
        // thread, before returning.
        drop(job.task.lock().take());
        if num_workers > 1 {
            self.shared
                .queue
                .lock()
                .jobs
                .retain(|j| !Arc::ptr_eq(j, &job));
        }
        match error {
            Some(e) => Err(e),
            // A failure elsewhere cancels our child token too; report the
            // caller's own interrupt or timeout if that is what happened.
            None => cancel.check(),
        }
    }
}

/// A few dozen cycles of busy waiting.
fn spin_a_little() {
    for _ in 0..32 {
        std::hint::spin_loop();
    }
}

fn worker_loop(shared: &Shared) {
    // Until when to watch for a task before sleeping: set after a task.
    let mut spin_until: Option<Instant> = None;
    loop {
        let (job, idx) = {
            let mut q = shared.queue.lock();
            loop {
                if q.shutdown {
                    return;
                }
                let mut claimed = None;
                while let Some(job) = q.jobs.front().cloned() {
                    let mut st = job.state.lock();
                    if st.open_slots == 0 {
                        drop(st);
                        q.jobs.pop_front();
                        continue;
                    }
                    st.open_slots -= 1;
                    st.active += 1;
                    let idx = st.next_idx;
                    st.next_idx += 1;
                    let exhausted = st.open_slots == 0;
                    drop(st);
                    if exhausted {
                        q.jobs.pop_front();
                    }
                    claimed = Some((job, idx));
                    break;
                }
                if let Some(c) = claimed {
                    break c;
                }
                // Nothing queued: watch for a task without the lock a
                // while, then sleep. Tasks are queued under the lock, so
                // one queued since this check changes `posted`.
                match spin_until.filter(|&t| Instant::now() < t) {
                    Some(until) => {
                        let seen = shared.posted.load(Ordering::Acquire);
                        MutexGuard::unlocked(&mut q, || {
                            while shared.posted.load(Ordering::Acquire) == seen
                                && Instant::now() < until
                            {
                                spin_a_little();
                            }
                        });
                    }
                    None => {
                        shared.sleeps.fetch_add(1, Ordering::Relaxed);
                        shared.wake.wait(&mut q);
                        spin_until = q.anticipated;
                    }
                }
            }
        };
        job.run_as(idx);
        let mut st = job.state.lock();
        st.active -= 1;
        if st.active == 0 {
            job.done.notify_all();
        }
        drop(st);
        spin_until = Some(Instant::now() + shared.worker_spin);
        // Tests widen the moment in which a worker still holds the job after
        // reporting (under load it can last a time slice), so that anything
        // the job keeps alive past `run` shows.
        #[cfg(test)]
        std::thread::sleep(std::time::Duration::from_micros(300));
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.shared.queue.lock().shutdown = true;
        // Spinning workers watch `posted`, sleeping ones the condvar.
        self.shared.posted.fetch_add(1, Ordering::Release);
        self.shared.wake.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MorselDispenser;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    struct Sum {
        morsels: MorselDispenser,
        total: AtomicU64,
        workers_seen: Mutex<Vec<usize>>,
    }
    impl Task for Sum {
        fn run_worker(&self, ctx: &WorkerContext) -> Result<()> {
            self.workers_seen.lock().push(ctx.worker_idx);
            while let Some(r) = self.morsels.next(ctx.worker_idx) {
                ctx.cancel.check()?;
                self.total.fetch_add(r.sum::<u64>(), Ordering::Relaxed);
            }
            Ok(())
        }
    }

    /// When `run` returns, no pool worker holds the task any more (a
    /// query's memory charges are given back when its tasks drop, and the
    /// next query may need that memory at once).
    #[test]
    fn run_returns_after_every_worker_let_go_of_the_task() {
        let s = Scheduler::new(4);
        for i in 0..200u64 {
            let task = sum_task(64 + i % 7);
            s.run(task.clone(), 4, &CancelToken::new()).unwrap();
            assert_eq!(Arc::strong_count(&task), 1, "run {i}");
        }
    }

    fn sum_task(n: u64) -> Arc<Sum> {
        Arc::new(Sum {
            morsels: MorselDispenser::new(n, 7),
            total: AtomicU64::new(0),
            workers_seen: Mutex::new(Vec::new()),
        })
    }

    /// A task whose caller waits (up to 10 s) for pool worker 1 to join:
    /// whether it joins at once or only after sleeping and being woken,
    /// the pool's sleep count tells.
    struct Rendezvous(Mutex<Vec<usize>>);
    impl Task for Rendezvous {
        fn run_worker(&self, ctx: &WorkerContext) -> Result<()> {
            self.0.lock().push(ctx.worker_idx);
            let start = Instant::now();
            while ctx.worker_idx == 0
                && !self.0.lock().contains(&1)
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::yield_now();
            }
            Ok(())
        }
    }

    fn rendezvous(s: &Scheduler) {
        let t = Arc::new(Rendezvous(Mutex::new(Vec::new())));
        s.run(t.clone(), 2, &CancelToken::new()).unwrap();
        assert!(t.0.lock().contains(&1), "pool worker 1 never joined");
    }

    /// A worker done with a task watches for the next (a query's next
    /// pipeline) instead of sleeping and being woken.
    #[test]
    fn a_worker_done_with_a_task_takes_the_next_without_sleeping() {
        let s = Scheduler::with_spins(2, Duration::from_secs(5), CALLER_SPIN);
        rendezvous(&s);
        let sleeps = s.shared.sleeps.load(Ordering::Relaxed);
        // A moment between tasks (a query planning its next part).
        std::thread::sleep(Duration::from_millis(20));
        rendezvous(&s);
        assert_eq!(s.shared.sleeps.load(Ordering::Relaxed), sleeps);
    }

    /// `anticipate` wakes a sleeping worker, which then waits awake for
    /// the task; without a task it goes back to sleep.
    #[test]
    fn anticipated_workers_wait_awake_for_the_task() {
        let s = Scheduler::with_spins(2, Duration::from_secs(5), CALLER_SPIN);
        // Worker 1 asleep: it went to sleep once at start.
        while s.shared.sleeps.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        s.anticipate(2);
        std::thread::sleep(Duration::from_millis(20));
        let sleeps = s.shared.sleeps.load(Ordering::Relaxed);
        assert_eq!(sleeps, 1, "the worker slept again while anticipating");
        rendezvous(&s);
        assert_eq!(s.shared.sleeps.load(Ordering::Relaxed), sleeps);

        // A short watch: the worker sleeps again when nothing comes, and
        // the pool still runs tasks and shuts down.
        let s = Scheduler::with_spins(2, Duration::from_micros(50), CALLER_SPIN);
        while s.shared.sleeps.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        s.anticipate(2);
        let start = Instant::now();
        while s.shared.sleeps.load(Ordering::Relaxed) < 2 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "never slept again"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let t = sum_task(1000);
        s.run(t.clone(), 2, &CancelToken::new()).unwrap();
        assert_eq!(t.total.load(Ordering::Relaxed), 499_500);
    }

    #[test]
    fn runs_all_morsels_with_several_workers() {
        let s = Scheduler::new(4);
        for threads in [1, 2, 4, 9] {
            let t = sum_task(10_000);
            s.run(t.clone(), threads, &CancelToken::new()).unwrap();
            assert_eq!(t.total.load(Ordering::Relaxed), 10_000 * 9_999 / 2);
            let seen = t.workers_seen.lock();
            assert!(seen.contains(&0));
            assert!(seen.iter().all(|&w| w < threads.min(4)));
        }
    }

    #[test]
    fn concurrent_callers_share_the_pool() {
        let s = Scheduler::new(3);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                let s = &s;
                scope.spawn(move || {
                    for _ in 0..50 {
                        let t = sum_task(1000);
                        s.run(t.clone(), 3, &CancelToken::new()).unwrap();
                        assert_eq!(t.total.load(Ordering::Relaxed), 499_500);
                    }
                });
            }
        });
    }

    struct Failing(AtomicUsize);
    impl Task for Failing {
        fn run_worker(&self, ctx: &WorkerContext) -> Result<()> {
            if ctx.worker_idx == 0 {
                return Err(Error::runtime("boom"));
            }
            // Other workers spin until the failure cancels them.
            loop {
                self.0.fetch_add(1, Ordering::Relaxed);
                ctx.cancel.check()?;
                std::thread::yield_now();
            }
        }
    }

    #[test]
    fn first_error_wins_and_stops_others() {
        let s = Scheduler::new(3);
        let parent = CancelToken::new();
        let err = s
            .run(Arc::new(Failing(AtomicUsize::new(0))), 3, &parent)
            .unwrap_err();
        assert_eq!(err.message, "boom");
        // The caller's own token is untouched.
        assert!(parent.check().is_ok());
    }

    struct Panicking;
    impl Task for Panicking {
        fn run_worker(&self, _ctx: &WorkerContext) -> Result<()> {
            panic!("bad state");
        }
    }

    #[test]
    fn panics_become_internal_errors() {
        let s = Scheduler::new(2);
        let err = s
            .run(Arc::new(Panicking), 2, &CancelToken::new())
            .unwrap_err();
        assert!(err.message.contains("bad state"), "{}", err.message);
        // The pool still works afterwards.
        let t = sum_task(100);
        s.run(t.clone(), 2, &CancelToken::new()).unwrap();
        assert_eq!(t.total.load(Ordering::Relaxed), 4950);
    }

    #[test]
    fn interrupt_reports_interrupted() {
        let s = Scheduler::new(2);
        let token = CancelToken::new();
        token.cancel();
        let t = sum_task(1_000_000);
        let err = s.run(t, 2, &token).unwrap_err();
        assert_eq!(err.kind, kith_common::ErrorKind::Interrupted);
    }
}
