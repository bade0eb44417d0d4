//! Cooperative cancellation shared by every worker of a statement.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kith_common::{Error, ErrorKind, Result};

const RUNNING: u8 = 0;
/// Stop quietly: a LIMIT was satisfied, the result is complete.
const FINISHED: u8 = 1;
const INTERRUPTED: u8 = 2;

#[derive(Debug)]
struct Inner {
    state: AtomicU8,
    deadline: Option<(Instant, Duration)>,
    parent: Option<CancelToken>,
}

/// Checked once per morsel. Clones share state; [`CancelToken::child`] makes a
/// token that also stops when its parent does, but whose own `finish` (LIMIT)
/// does not stop the parent.
#[derive(Debug, Clone)]
pub struct CancelToken(Arc<Inner>);

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken::new()
    }
}

impl CancelToken {
    pub fn new() -> CancelToken {
        CancelToken(Arc::new(Inner {
            state: AtomicU8::new(RUNNING),
            deadline: None,
            parent: None,
        }))
    }

    /// A token that times out `timeout` from now.
    pub fn with_timeout(timeout: Duration) -> CancelToken {
        CancelToken(Arc::new(Inner {
            state: AtomicU8::new(RUNNING),
            deadline: Some((Instant::now() + timeout, timeout)),
            parent: None,
        }))
    }

    pub fn child(&self) -> CancelToken {
        CancelToken(Arc::new(Inner {
            state: AtomicU8::new(RUNNING),
            deadline: None,
            parent: Some(self.clone()),
        }))
    }

    /// Interrupt: workers stop with an error.
    pub fn cancel(&self) {
        self.0.state.store(INTERRUPTED, Ordering::Relaxed);
    }

    /// The result is complete (LIMIT reached): workers stop without error.
    pub fn finish(&self) {
        let _ =
            self.0
                .state
                .compare_exchange(RUNNING, FINISHED, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Err when interrupted or past the deadline (here or in an ancestor).
    pub fn check(&self) -> Result<()> {
        if self.0.state.load(Ordering::Relaxed) == INTERRUPTED {
            return Err(Error::interrupted());
        }
        if let Some((deadline, timeout)) = self.0.deadline {
            if Instant::now() >= deadline {
                return Err(Error::new(
                    ErrorKind::Interrupted,
                    format!("the query timed out after {} ms", timeout.as_millis()),
                ));
            }
        }
        match &self.0.parent {
            Some(p) => p.check(),
            None => Ok(()),
        }
    }

    /// Ok(true) when the workers should stop quietly (a satisfied LIMIT), Err
    /// when interrupted or timed out.
    pub fn should_stop(&self) -> Result<bool> {
        self.check()?;
        Ok(self.is_finished())
    }

    pub fn is_finished(&self) -> bool {
        self.0.state.load(Ordering::Relaxed) == FINISHED
            || self.0.parent.as_ref().is_some_and(|p| p.is_finished())
    }

    pub fn is_cancelled(&self) -> bool {
        self.check().is_err()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        let t = CancelToken::new();
        assert!(t.check().is_ok());
        let c = t.child();
        c.finish();
        assert_eq!(c.should_stop().ok(), Some(true));
        assert_eq!(t.should_stop().ok(), Some(false));
        t.cancel();
        assert!(c.check().is_err());
        assert_eq!(c.check().unwrap_err().kind, ErrorKind::Interrupted);
        let d = CancelToken::with_timeout(Duration::from_millis(0));
        assert!(d.check().unwrap_err().message.contains("timed out"));
    }
}
