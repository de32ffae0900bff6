/*
 * ptec's thread pool: the one definition of how a kernel's range is split
 * across threads. It is compiled into the runtime crate (for code the JIT
 * generates in this process) and into every shared object `ptec compile`
 * links (which then needs libc with pthreads, nothing else).
 *
 * A kernel computes the part [start, end) of its outermost parallel loop;
 * `ptec_parallel_for` splits [0, count) into at most one contiguous part
 * per thread, and part k is thread k's (the caller is thread 0): kernels
 * that split the same loop the same way (a convolution's output rows, then
 * the next one's) find their part's data in their own core's cache, where
 * a part claimed by whichever thread came first read half its input from
 * the other core. The caller runs a worker's part itself when that worker
 * sleeps (waking it takes longer than most parts run), or has not claimed
 * its part within a grace of the time the caller's own part took (it was
 * descheduled: the machine is busy), and waits for those claimed to
 * finish. Which thread runs a part changes nothing in its result. Workers
 * spin briefly after a call (the next kernel of the method usually follows
 * at once) and then sleep on a condition variable until the next one.
 *
 * A pool notices when it does not get its cores: when the caller ran the
 * part of a worker that was awake, or the workers' parts of a call ran on
 * for more than twice what they would have taken at the pace of the parts
 * the caller ran itself (a worker was descheduled while it held a part:
 * another process keeps the cores busy), twice in a row, the next calls
 * run on the caller alone, after which the pool tries its workers again.
 * Each time the workers fall behind again, it waits twice as many calls
 * before the next try (PTEC_SERIAL_CALLS at first, PTEC_MAX_SERIAL_CALLS at
 * most); a call the workers share without holding the caller up starts
 * over from the first. A worker that slept when the call came (the first
 * after every pause) says nothing about the cores, and does not count:
 * counted, such calls kept a pool on its caller alone, by chance, for
 * thousands of calls at a time (squeezenet on two threads: 0.61 ms in some
 * runs, 0.36 in others).
 * Whether a call ran on one thread or several changes nothing in its
 * result.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign, clock_gettime, with a strict -std */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define PTEC_HIDDEN __attribute__((visibility("hidden")))

/* How many times a thread polls before it sleeps: some tens of
 * microseconds, about the time between two kernels of a method, so that a
 * worker is awake for the next one (waking one from its condition variable
 * takes longer than many kernels run). */
#define PTEC_SPINS 5000

/* How many calls run on the caller alone once the workers fell behind,
 * the first time and at most. */
#define PTEC_SERIAL_CALLS 64
#define PTEC_MAX_SERIAL_CALLS 8192

/* How many calls in a row whose workers fell behind switch a pool to
 * running on its caller alone. */
#define PTEC_STRIKES 2

/* How long past the time its own part took the caller waits for a worker
 * to claim its part before running it itself, in nanoseconds: about what a
 * polling worker takes to see a call. */
#define PTEC_GRACE_NS 2000

typedef int32_t (*ptec_kernel)(uint8_t *arena, const uint8_t *const *constants, int64_t *dims,
                               uint8_t *scratch, int64_t start, int64_t end);

struct ptec_worker {
    struct ptec_pool *pool;
    int32_t index;
    pthread_t thread;
    /* Whether the worker sleeps (or has been woken and not run yet). */
    _Atomic int asleep;
};

/* A call's word: its generation (bits 32-63) and its number of parts (bits
 * 0-31). */
#define PTEC_GENERATION(call) ((call) >> 32)
#define PTEC_PARTS(call) ((call)&0xffffffff)

struct ptec_pool {
    int32_t threads;
    /* Scratch memory of workers 1.. (the caller uses the arena's),
     * `scratch_stride` bytes each. */
    uint8_t *scratch;
    uint64_t scratch_stride;
    struct ptec_worker *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    /* The current call's word. */
    _Atomic uint64_t call;
    /* For each part, the generation of the last call whose part it was
     * claimed in: generations only grow, so a claim succeeds once per call
     * and never for a call that is over. */
    _Atomic uint64_t *claims;
    /* Parts of the current call not finished yet. */
    _Atomic int32_t remaining;
    _Atomic int stop;
    /* The current call, written before its word is published and read
     * only by threads holding a claim on it (so it cannot end meanwhile). */
    ptec_kernel kernel;
    uint8_t *arena;
    const uint8_t *const *constants;
    int64_t *dims;
    int64_t count;
    int32_t *status;
    /* Touched by the caller only: its calls so far, the call before which
     * it runs alone, how many calls it runs alone the next time, and how
     * many calls in a row its workers fell behind. */
    int64_t calls;
    int64_t serial_until;
    int64_t serial_calls;
    int32_t strikes;
};

static int64_t ptec_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static inline void ptec_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Whether this thread claimed `part` of call `generation`. */
static int ptec_claim(struct ptec_pool *pool, int64_t part, uint64_t generation) {
    uint64_t claimed = atomic_load_explicit(&pool->claims[part], memory_order_relaxed);
    return claimed < generation &&
           atomic_compare_exchange_strong_explicit(&pool->claims[part], &claimed, generation,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

/* Runs `part` of the `parts` of the current call, which this thread has
 * claimed (part 0 is the caller's without a claim), with `scratch`. */
static void ptec_run_part(struct ptec_pool *pool, int64_t part, int64_t parts, uint8_t *scratch) {
    int64_t start = pool->count * part / parts;
    int64_t end = pool->count * (part + 1) / parts;
    pool->status[part] = pool->kernel(pool->arena, pool->constants, pool->dims, scratch, start, end);
    if (atomic_fetch_sub_explicit(&pool->remaining, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&pool->lock);
        pthread_cond_signal(&pool->done);
        pthread_mutex_unlock(&pool->lock);
    }
}

static void *ptec_worker_main(void *argument) {
    struct ptec_worker *worker = argument;
    struct ptec_pool *pool = worker->pool;
    uint8_t *scratch = pool->scratch + (uint64_t)(worker->index - 1) * pool->scratch_stride;
    uint64_t seen = 0;
    for (;;) {
        uint64_t call = atomic_load_explicit(&pool->call, memory_order_acquire);
        for (int spin = 0; PTEC_GENERATION(call) == seen && spin < PTEC_SPINS; spin++) {
            ptec_relax();
            call = atomic_load_explicit(&pool->call, memory_order_acquire);
        }
        if (PTEC_GENERATION(call) == seen) {
            pthread_mutex_lock(&pool->lock);
            atomic_store_explicit(&worker->asleep, 1, memory_order_relaxed);
            while (PTEC_GENERATION(call = atomic_load_explicit(&pool->call,
                                                               memory_order_acquire)) == seen)
                pthread_cond_wait(&pool->wake, &pool->lock);
            atomic_store_explicit(&worker->asleep, 0, memory_order_relaxed);
            pthread_mutex_unlock(&pool->lock);
        }
        seen = PTEC_GENERATION(call);
        if (atomic_load_explicit(&pool->stop, memory_order_acquire))
            return NULL;
        int64_t parts = (int64_t)PTEC_PARTS(call);
        if (worker->index < parts && ptec_claim(pool, worker->index, seen))
            ptec_run_part(pool, worker->index, parts, scratch);
    }
}

/* Counts a call whose workers fell `behind` (or did not), and switches the
 * pool to its caller alone after PTEC_STRIKES of them in a row. */
static void ptec_judge_workers(struct ptec_pool *pool, int behind) {
    if (!behind) {
        pool->strikes = 0;
        pool->serial_calls = PTEC_SERIAL_CALLS;
        return;
    }
    if (++pool->strikes < PTEC_STRIKES)
        return;
    pool->strikes = 0;
    pool->serial_until = pool->calls + pool->serial_calls;
    if (pool->serial_calls < PTEC_MAX_SERIAL_CALLS)
        pool->serial_calls *= 2;
}

/* Publishes a new generation of `parts` parts and wakes the workers. */
static void ptec_publish(struct ptec_pool *pool, uint64_t parts) {
    uint64_t generation =
        PTEC_GENERATION(atomic_load_explicit(&pool->call, memory_order_relaxed)) + 1;
    pthread_mutex_lock(&pool->lock);
    atomic_store_explicit(&pool->call, generation << 32 | parts, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
}

/* Stops and joins the first `started` workers and frees the pool. */
static void ptec_pool_free(struct ptec_pool *pool, int32_t started) {
    atomic_store_explicit(&pool->stop, 1, memory_order_release);
    ptec_publish(pool, 0);
    for (int32_t index = 1; index < started; index++)
        pthread_join(pool->workers[index].thread, NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool->claims);
    free(pool->status);
    free(pool->workers);
    free(pool->scratch);
    free(pool);
}

/* A pool of `threads` threads (the caller and `threads - 1` workers), each
 * worker with `scratch_bytes` of scratch memory; NULL when `threads` is
 * below 2 or above 65535, or memory or threads run out. */
PTEC_HIDDEN struct ptec_pool *ptec_pool_create(int32_t threads, uint64_t scratch_bytes) {
    /* More threads than any machine has cores is a mistake, refused before
     * the workers' scratch memory (threads - 1 times scratch_bytes) and
     * their claim words are asked for. */
    if (threads < 2 || threads > 0xffff)
        return NULL;
    struct ptec_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pool->threads = threads;
    pool->serial_calls = PTEC_SERIAL_CALLS;
    pool->scratch_stride = (scratch_bytes + 63) / 64 * 64;
    pool->workers = calloc((size_t)threads, sizeof *pool->workers);
    pool->status = calloc((size_t)threads, sizeof *pool->status);
    pool->claims = calloc((size_t)threads, sizeof *pool->claims);
    if (pool->scratch_stride > 0 &&
        posix_memalign((void **)&pool->scratch, 64,
                       pool->scratch_stride * (uint64_t)(threads - 1)) != 0)
        pool->scratch = NULL;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    if (!pool->workers || !pool->status || !pool->claims || (pool->scratch_stride > 0 && !pool->scratch)) {
        ptec_pool_free(pool, 1);
        return NULL;
    }
    for (int32_t index = 1; index < threads; index++) {
        struct ptec_worker *worker = &pool->workers[index];
        worker->pool = pool;
        worker->index = index;
        if (pthread_create(&worker->thread, NULL, ptec_worker_main, worker) != 0) {
            ptec_pool_free(pool, index);
            return NULL;
        }
    }
    return pool;
}

/* Stops the workers and frees everything; NULL is ignored. */
PTEC_HIDDEN void ptec_pool_destroy(struct ptec_pool *pool) {
    if (pool)
        ptec_pool_free(pool, pool->threads);
}

/* Runs `kernel` over [0, count), split into at most `chunks` parts; returns
 * the status of the first part (in range order) that failed, or 0. Without
 * a pool the caller runs the whole range. */
PTEC_HIDDEN int32_t ptec_parallel_for(struct ptec_pool *pool, ptec_kernel kernel, uint8_t *arena,
                                      const uint8_t *const *constants, int64_t *dims,
                                      uint8_t *scratch, int64_t count, int64_t chunks) {
    int64_t parts = chunks < count ? chunks : count;
    if (!pool || parts < 2 || pool->calls++ < pool->serial_until)
        return kernel(arena, constants, dims, scratch, 0, count);
    if (parts > pool->threads)
        parts = pool->threads;
    pool->kernel = kernel;
    pool->arena = arena;
    pool->constants = constants;
    pool->dims = dims;
    pool->count = count;
    atomic_store_explicit(&pool->remaining, (int32_t)parts, memory_order_relaxed);
    ptec_publish(pool, (uint64_t)parts);
    uint64_t generation = PTEC_GENERATION(atomic_load_explicit(&pool->call, memory_order_relaxed));
    int64_t started = ptec_now_ns();
    ptec_run_part(pool, 0, parts, scratch);
    int64_t own = ptec_now_ns() - started, ran = 1, ran_ns = own;
    /* Part k is thread k's, so that the data a thread's part writes is in
     * its cache when the next kernel's part k reads it. The caller runs a
     * worker's part itself when the worker sleeps (it would take longer to
     * wake than the part to run), or has not claimed it within a grace of
     * the caller's own part's time: the worker is awake but was
     * descheduled, and fell behind. */
    int64_t deadline = started + 2 * own + PTEC_GRACE_NS;
    int behind = 0;
    for (int64_t part = 1; part < parts; part++) {
        while (atomic_load_explicit(&pool->claims[part], memory_order_acquire) < generation) {
            int asleep = atomic_load_explicit(&pool->workers[part].asleep, memory_order_relaxed);
            if (asleep || ptec_now_ns() >= deadline) {
                if (ptec_claim(pool, part, generation)) {
                    int64_t before = ptec_now_ns();
                    ptec_run_part(pool, part, parts, scratch);
                    ran_ns += ptec_now_ns() - before;
                    ran++;
                    behind |= !asleep;
                }
                break;
            }
            ptec_relax();
        }
    }
    for (int spin = 0;
         atomic_load_explicit(&pool->remaining, memory_order_acquire) != 0 && spin < PTEC_SPINS;
         spin++)
        ptec_relax();
    if (atomic_load_explicit(&pool->remaining, memory_order_acquire) != 0) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load_explicit(&pool->remaining, memory_order_acquire) != 0)
            pthread_cond_wait(&pool->done, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
    }
    /* At the pace of the caller's parts, its `ran` parts took `ran_ns` and
     * the workers' should take `ran_ns * (parts - ran) / ran` more: the
     * workers also fell behind when the call ran on for over twice that. */
    int64_t took = ptec_now_ns() - started;
    ptec_judge_workers(pool, behind || (ran < parts && took * ran > ran_ns * (2 * parts - ran)));
    for (int32_t part = 0; part < parts; part++)
        if (pool->status[part] != 0)
            return pool->status[part];
    return 0;
}
