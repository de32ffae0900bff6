//! The thread pool kernels split their work on (`pool.c`, compiled into
//! this crate by its build script and into every shared object by the
//! linker step): [`Pool`] owns one for an [`crate::Instance`], and
//! [`PARALLEL_FOR`] is the function generated code calls.

use std::ffi::c_void;
use std::ptr::NonNull;

/// The C source of the pool, which the linker step compiles into shared
/// objects: one definition for the JIT and the libraries.
pub const SOURCE: &str = include_str!("pool.c");

/// The symbol generated code calls to split a kernel across the pool.
pub const PARALLEL_FOR_SYMBOL: &str = "ptec_parallel_for";

/// A kernel as the pool calls it: `(arena, constants, dims, scratch,
/// start, end) -> status`, computing the part `[start, end)` of its
/// outermost parallel loop.
pub type KernelFn = unsafe extern "C" fn(
    arena: *mut u8,
    constants: *const *const u8,
    dims: *mut i64,
    scratch: *mut u8,
    start: i64,
    end: i64,
) -> i32;

/// `ptec_parallel_for`'s signature.
pub type ParallelForFn = unsafe extern "C" fn(
    pool: *mut c_void,
    kernel: KernelFn,
    arena: *mut u8,
    constants: *const *const u8,
    dims: *mut i64,
    scratch: *mut u8,
    count: i64,
    chunks: i64,
) -> i32;

unsafe extern "C" {
    fn ptec_pool_create(threads: i32, scratch_bytes: u64) -> *mut c_void;
    fn ptec_pool_destroy(pool: *mut c_void);
    fn ptec_parallel_for(
        pool: *mut c_void,
        kernel: KernelFn,
        arena: *mut u8,
        constants: *const *const u8,
        dims: *mut i64,
        scratch: *mut u8,
        count: i64,
        chunks: i64,
    ) -> i32;
}

/// The address the JIT binds [`PARALLEL_FOR_SYMBOL`] to.
pub const PARALLEL_FOR: ParallelForFn = ptec_parallel_for;

/// Worker threads parked on a condition variable between calls, with
/// scratch memory of their own.
#[derive(Debug)]
pub struct Pool {
    raw: NonNull<c_void>,
    threads: usize,
}

// SAFETY: the pool is only used through `&mut` of its owner (one call at a
// time), and its workers are threads of their own that it joins when dropped.
unsafe impl Send for Pool {}

impl Pool {
    /// A pool of `threads` threads in all (the caller is one of them), each
    /// worker with `scratch_bytes` of scratch memory; `None` for fewer than
    /// two threads, or when threads or memory cannot be had.
    pub fn new(threads: usize, scratch_bytes: u64) -> Option<Pool> {
        let count = i32::try_from(threads).ok()?;
        // SAFETY: plain values in; the pool returned is owned here.
        let raw = NonNull::new(unsafe { ptec_pool_create(count, scratch_bytes) })?;
        Some(Pool { raw, threads })
    }

    /// The pointer generated entry points take.
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw.as_ptr()
    }

    pub fn threads(&self) -> usize {
        self.threads
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: created by `ptec_pool_create` and dropped once; no call
        // is running (the owner holds `&mut`).
        unsafe { ptec_pool_destroy(self.raw.as_ptr()) }
    }
}

/// The number of physical cores of this machine (distinct core ids of
/// `/sys`'s CPU topology), or of logical CPUs where the topology cannot be
/// read: the default thread count.
pub fn physical_cores() -> usize {
    let logical = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cores = std::collections::HashSet::new();
    for cpu in 0..logical.max(1) * 2 {
        let topology = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        let read = |name: &str| std::fs::read_to_string(format!("{topology}/{name}")).ok();
        if let (Some(package), Some(core)) = (read("physical_package_id"), read("core_id")) {
            cores.insert((package.trim().to_string(), core.trim().to_string()));
        }
    }
    match cores.len() {
        0 => logical,
        found => found.min(logical),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes, for each unit of its range, the address of the scratch
    /// memory of the thread that computed it (each thread has its own);
    /// fails on unit 13 when `dims[0]` says so. Each part takes a while, so
    /// that workers have time to claim some.
    unsafe extern "C" fn mark(
        arena: *mut u8,
        _constants: *const *const u8,
        dims: *mut i64,
        scratch: *mut u8,
        start: i64,
        end: i64,
    ) -> i32 {
        std::thread::sleep(std::time::Duration::from_micros(300));
        for unit in start..end {
            // SAFETY: the test's arena holds 8 bytes per unit, and `dims`
            // one value.
            unsafe {
                if *dims == 1 && unit == 13 {
                    return 7;
                }
                let slot = arena.cast::<usize>().add(unit as usize);
                *slot = scratch as usize;
            }
        }
        0
    }

    /// The scratch address that computed each unit, the status, and the
    /// caller's scratch address.
    fn run(pool: Option<&Pool>, count: i64, chunks: i64, fail: i64) -> (Vec<usize>, i32, usize) {
        let mut arena = vec![0usize; count as usize];
        let mut dims = [fail];
        let mut scratch = [0u8; 64];
        // SAFETY: `mark` reads and writes only what this provides.
        let status = unsafe {
            PARALLEL_FOR(
                pool.map_or(std::ptr::null_mut(), Pool::as_ptr),
                mark,
                arena.as_mut_ptr().cast(),
                std::ptr::null(),
                dims.as_mut_ptr(),
                scratch.as_mut_ptr(),
                count,
                chunks,
            )
        };
        (arena, status, scratch.as_ptr() as usize)
    }

    /// The scratch areas that computed the units, in order of first use,
    /// once each.
    fn threads_used(marks: &[usize]) -> Vec<usize> {
        let mut used: Vec<usize> = Vec::new();
        for &mark in marks {
            if !used.contains(&mark) {
                used.push(mark);
            }
        }
        used
    }

    #[test]
    fn every_unit_runs_once_and_workers_take_parts() {
        let pool = Pool::new(3, 100).expect("a pool of three threads");
        assert_eq!(pool.threads(), 3);
        let mut most = 0;
        for _ in 0..40 {
            let (marks, status, _) = run(Some(&pool), 100, 8, 0);
            assert_eq!(status, 0);
            assert!(marks.iter().all(|&mark| mark != 0), "every unit ran");
            // Three parts (one per thread at most), each computed whole by one thread.
            for part in 0..3 {
                let units = &marks[part * 100 / 3..(part + 1) * 100 / 3];
                assert!(units.iter().all(|&mark| mark == units[0]));
            }
            let used = threads_used(&marks).len();
            assert!((1..=3).contains(&used));
            most = most.max(used);
        }
        assert!(most >= 2, "the workers never took a part");
    }

    /// Part k is thread k's: the caller runs the first part, and the k-th
    /// runs on worker k (whose scratch lies k - 1 strides into the pool's)
    /// or, where that worker slept or fell behind, on the caller; never on
    /// another worker. So kernels that split the same loop keep each
    /// part's data on one core.
    #[test]
    fn each_part_runs_on_its_own_thread() {
        let pool = Pool::new(3, 64).expect("a pool of three threads");
        let mut workers = [Vec::new(), Vec::new()];
        for _ in 0..40 {
            let (marks, status, caller) = run(Some(&pool), 30, 3, 0);
            assert_eq!(status, 0);
            assert_eq!(marks[0], caller, "the caller runs the first part");
            for (seen, part) in workers.iter_mut().zip([1, 2]) {
                if marks[part * 10] != caller && !seen.contains(&marks[part * 10]) {
                    seen.push(marks[part * 10]);
                }
            }
        }
        assert!(
            workers.iter().all(|seen| seen.len() <= 1),
            "a part ran on more than one worker: {workers:?}"
        );
        if let [&[first], &[second]] = [&workers[0][..], &workers[1][..]] {
            assert_eq!(
                second,
                first + 64,
                "the second part ran on the first worker"
            );
        }
    }

    #[test]
    fn without_a_pool_or_with_one_chunk_the_caller_runs_everything() {
        let pool = Pool::new(2, 0).expect("a pool of two threads");
        for pool in [None, Some(&pool)] {
            let chunks = if pool.is_some() { 1 } else { 4 };
            let (mut marks, status, _) = run(pool, 20, chunks, 0);
            assert_eq!(status, 0);
            marks.dedup();
            assert_eq!(marks.len(), 1);
        }
    }

    #[test]
    fn a_failing_part_returns_its_status() {
        let pool = Pool::new(2, 64).expect("a pool of two threads");
        assert_eq!(run(Some(&pool), 20, 2, 1).1, 7);
        assert_eq!(run(None, 20, 2, 1).1, 7);
    }

    #[test]
    fn fewer_than_two_threads_make_no_pool() {
        assert!(Pool::new(1, 0).is_none());
        assert!(Pool::new(0, 0).is_none());
        assert!(physical_cores() >= 1);
    }
}
