//! Time per kernel, for `ptec bench --profile`: a method compiled by the JIT
//! with profiling calls [`PROFILE_MARK`] as it starts (kernel -1) and after
//! each kernel (its index), and the thread recording adds the time since
//! the previous mark to that kernel. Marks on a thread that records nothing
//! cost a clock read and are dropped.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// The symbol profiled code calls after each kernel.
pub const PROFILE_MARK_SYMBOL: &str = "ptec_profile_mark";

/// The address the JIT binds [`PROFILE_MARK_SYMBOL`] to.
pub const PROFILE_MARK: extern "C" fn(i64) = ptec_profile_mark;

/// One kernel's time, summed over the calls recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelTime {
    pub total: Duration,
    pub calls: u64,
}

struct Recording {
    last: Instant,
    kernels: Vec<KernelTime>,
}

thread_local! {
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// Starts recording, on this thread, the times of a method's `kernels`
/// kernels (what was recorded before is dropped).
pub fn start(kernels: usize) {
    RECORDING.with_borrow_mut(|recording| {
        *recording = Some(Recording {
            last: Instant::now(),
            kernels: vec![KernelTime::default(); kernels],
        });
    });
}

/// Stops recording on this thread and returns each kernel's time, by
/// index; `None` when nothing was being recorded.
pub fn stop() -> Option<Vec<KernelTime>> {
    RECORDING.with_borrow_mut(|recording| recording.take().map(|recording| recording.kernels))
}

/// Called by profiled code: -1 as a method starts, then each kernel's
/// index after it returns. An index beyond what is recorded is dropped.
extern "C" fn ptec_profile_mark(kernel: i64) {
    let now = Instant::now();
    RECORDING.with_borrow_mut(|recording| {
        let Some(recording) = recording else {
            return;
        };
        let since = now - recording.last;
        recording.last = now;
        if let Some(time) = usize::try_from(kernel)
            .ok()
            .and_then(|index| recording.kernels.get_mut(index))
        {
            time.total += since;
            time.calls += 1;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_add_the_time_since_the_last_to_their_kernel() {
        assert_eq!(stop(), None);
        start(2);
        PROFILE_MARK(-1);
        std::thread::sleep(Duration::from_millis(2));
        PROFILE_MARK(1);
        PROFILE_MARK(0);
        PROFILE_MARK(7);
        let times = stop().expect("a recording");
        assert_eq!(times.len(), 2);
        assert_eq!((times[0].calls, times[1].calls), (1, 1));
        assert!(times[1].total >= Duration::from_millis(2));
        assert!(times[0].total < times[1].total);
        assert_eq!(stop(), None);
    }
}
