/*
 * ptec's thread pool: the one definition of how a kernel's range is split
 * across threads. It is compiled into the runtime crate (for code the JIT
 * generates in this process) and into every shared object `ptec compile`
 * links (which then needs libc with pthreads, nothing else).
 *
 * A kernel computes the part [start, end) of its outermost parallel loop;
 * `ptec_parallel_for` splits [0, count) into at most `chunks` contiguous
 * parts, which the calling thread and the pool's workers claim one at a
 * time until none is left, and waits for those claimed to finish. A worker
 * that is not running when a call comes (the machine is busy) claims
 * nothing and holds nobody up: the caller runs what is left. Which thread
 * runs a part changes nothing in its result. Workers spin briefly after a
 * call (the next kernel of the method usually follows at once) and then
 * sleep on a condition variable until the next one.
 *
 * A pool notices when it does not get its cores: when the workers' parts
 * of a call ran on for more than twice what they would have taken at the
 * pace of the parts the caller ran itself (a worker was descheduled while
 * it held a part: another process keeps the cores busy), twice in a row,
 * the next calls run on the caller alone, after which the pool tries its
 * workers again. Each time the workers fall behind again, it waits twice
 * as many calls before the next try (PTEC_SERIAL_CALLS at first,
 * PTEC_MAX_SERIAL_CALLS at most); a call the workers share without holding
 * the caller up starts over from the first. A worker that only woke late,
 * and claimed its part as the caller finished its own, ends within that
 * margin; with no margin, such calls (the first after every pause) kept a
 * pool on its caller alone, by chance, for thousands of calls at a time
 * (squeezenet on two threads: 0.61 ms in some runs, 0.36 in others).
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

typedef int32_t (*ptec_kernel)(uint8_t *arena, const uint8_t *const *constants, int64_t *dims,
                               uint8_t *scratch, int64_t start, int64_t end);

struct ptec_worker {
    struct ptec_pool *pool;
    int32_t index;
    pthread_t thread;
};

/* A call's ticket: its generation (bits 32-63), its number of parts (bits
 * 16-31) and the next part to claim (bits 0-15). */
#define PTEC_GENERATION(ticket) ((ticket) >> 32)
#define PTEC_PARTS(ticket) (((ticket) >> 16) & 0xffff)
#define PTEC_NEXT(ticket) ((ticket)&0xffff)

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
    /* The current call's ticket; claiming a part increments it. */
    _Atomic uint64_t ticket;
    /* Parts of the current call not finished yet. */
    _Atomic int32_t remaining;
    _Atomic int stop;
    /* The current call, written before its ticket is published and read
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

/* Claims and runs parts of call `generation` with `scratch` until none is
 * left to claim; returns how many it ran. */
static int64_t ptec_run_parts(struct ptec_pool *pool, uint64_t generation, uint8_t *scratch) {
    uint64_t ticket = atomic_load_explicit(&pool->ticket, memory_order_acquire);
    for (int64_t ran = 0;; ran++) {
        if (PTEC_GENERATION(ticket) != generation || PTEC_NEXT(ticket) >= PTEC_PARTS(ticket))
            return ran;
        if (!atomic_compare_exchange_weak_explicit(&pool->ticket, &ticket, ticket + 1,
                                                   memory_order_acq_rel, memory_order_acquire)) {
            ran--;
            continue;
        }
        int64_t part = (int64_t)PTEC_NEXT(ticket), parts = (int64_t)PTEC_PARTS(ticket);
        int64_t start = pool->count * part / parts;
        int64_t end = pool->count * (part + 1) / parts;
        pool->status[part] =
            pool->kernel(pool->arena, pool->constants, pool->dims, scratch, start, end);
        if (atomic_fetch_sub_explicit(&pool->remaining, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
        ticket = atomic_load_explicit(&pool->ticket, memory_order_acquire);
    }
}

static void *ptec_worker_main(void *argument) {
    struct ptec_worker *worker = argument;
    struct ptec_pool *pool = worker->pool;
    uint8_t *scratch = pool->scratch + (uint64_t)(worker->index - 1) * pool->scratch_stride;
    uint64_t seen = 0;
    for (;;) {
        uint64_t generation =
            PTEC_GENERATION(atomic_load_explicit(&pool->ticket, memory_order_acquire));
        for (int spin = 0; generation == seen && spin < PTEC_SPINS; spin++) {
            ptec_relax();
            generation =
                PTEC_GENERATION(atomic_load_explicit(&pool->ticket, memory_order_acquire));
        }
        if (generation == seen) {
            pthread_mutex_lock(&pool->lock);
            while ((generation = PTEC_GENERATION(atomic_load_explicit(
                        &pool->ticket, memory_order_acquire))) == seen)
                pthread_cond_wait(&pool->wake, &pool->lock);
            pthread_mutex_unlock(&pool->lock);
        }
        seen = generation;
        if (atomic_load_explicit(&pool->stop, memory_order_acquire))
            return NULL;
        ptec_run_parts(pool, generation, scratch);
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
        PTEC_GENERATION(atomic_load_explicit(&pool->ticket, memory_order_relaxed)) + 1;
    pthread_mutex_lock(&pool->lock);
    atomic_store_explicit(&pool->ticket, generation << 32 | parts << 16, memory_order_release);
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
    free(pool->status);
    free(pool->workers);
    free(pool->scratch);
    free(pool);
}

/* A pool of `threads` threads (the caller and `threads - 1` workers), each
 * worker with `scratch_bytes` of scratch memory; NULL when `threads` is
 * below 2 or above 65535, or memory or threads run out. */
PTEC_HIDDEN struct ptec_pool *ptec_pool_create(int32_t threads, uint64_t scratch_bytes) {
    /* A ticket counts parts, one per thread at most, in 16 bits. */
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
    if (pool->scratch_stride > 0 &&
        posix_memalign((void **)&pool->scratch, 64,
                       pool->scratch_stride * (uint64_t)(threads - 1)) != 0)
        pool->scratch = NULL;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    if (!pool->workers || !pool->status || (pool->scratch_stride > 0 && !pool->scratch)) {
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
    uint64_t generation =
        PTEC_GENERATION(atomic_load_explicit(&pool->ticket, memory_order_relaxed));
    int64_t started = ptec_now_ns();
    int64_t ran = ptec_run_parts(pool, generation, scratch);
    int64_t worked = ptec_now_ns();
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
    /* A call the caller ran whole says nothing about the workers. Else,
     * at the pace of the caller's own parts, its `ran` parts took `own` and
     * the workers' should take `own * (parts - ran) / ran` more: the
     * workers fell behind when the call ran on for over twice that. */
    if (ran < parts) {
        int64_t took = ptec_now_ns() - started, own = worked - started;
        ptec_judge_workers(pool, took * ran > own * (2 * parts - ran));
    }
    for (int32_t part = 0; part < parts; part++)
        if (pool->status[part] != 0)
            return pool->status[part];
    return 0;
}
