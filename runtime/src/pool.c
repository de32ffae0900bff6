/*
 * ptec's thread pool: the one definition of how a kernel's range is split
 * across threads. It is compiled into the runtime crate (for code the JIT
 * generates in this process) and into every shared object `ptec compile`
 * links (which then needs libc with pthreads, nothing else).
 *
 * A kernel computes the part [start, end) of its outermost parallel loop;
 * `ptec_parallel_for` splits [0, count) into at most `chunks` contiguous
 * parts, one per thread, runs the first on the calling thread and the
 * others on the pool's workers, and waits for all of them. Workers spin
 * briefly after a part (the next kernel of the method usually follows at
 * once) and then sleep on a condition variable until the next call.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define PTEC_HIDDEN __attribute__((visibility("hidden")))

/* How many times a thread polls before it sleeps. */
#define PTEC_SPINS 2000

typedef int32_t (*ptec_kernel)(uint8_t *arena, const uint8_t *const *constants, int64_t *dims,
                               uint8_t *scratch, int64_t start, int64_t end);

struct ptec_worker {
    struct ptec_pool *pool;
    int32_t index;
    pthread_t thread;
};

struct ptec_pool {
    int32_t threads;
    /* Scratch memory of workers 1.. (worker 0, the caller, uses the
     * arena's), `scratch_stride` bytes each. */
    uint8_t *scratch;
    uint64_t scratch_stride;
    struct ptec_worker *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    /* Incremented for every call (and to stop); workers run a part when it
     * changes. */
    _Atomic uint64_t generation;
    /* Workers that have not finished the current call (every worker
     * answers every call, with a part or without, so none lags behind into
     * the next). */
    _Atomic int32_t pending;
    int stop;
    /* The current call. */
    ptec_kernel kernel;
    uint8_t *arena;
    const uint8_t *const *constants;
    int64_t *dims;
    int64_t count;
    int32_t parts;
    int32_t *status;
};

static inline void ptec_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void ptec_run_part(struct ptec_pool *pool, int32_t part, uint8_t *scratch) {
    int64_t start = pool->count * part / pool->parts;
    int64_t end = pool->count * (part + 1) / pool->parts;
    pool->status[part] =
        pool->kernel(pool->arena, pool->constants, pool->dims, scratch, start, end);
}

static void *ptec_worker_main(void *argument) {
    struct ptec_worker *worker = argument;
    struct ptec_pool *pool = worker->pool;
    uint8_t *scratch = pool->scratch + (uint64_t)(worker->index - 1) * pool->scratch_stride;
    uint64_t seen = 0;
    for (;;) {
        uint64_t generation = atomic_load_explicit(&pool->generation, memory_order_acquire);
        for (int spin = 0; generation == seen && spin < PTEC_SPINS; spin++) {
            ptec_relax();
            generation = atomic_load_explicit(&pool->generation, memory_order_acquire);
        }
        if (generation == seen) {
            pthread_mutex_lock(&pool->lock);
            while ((generation = atomic_load_explicit(&pool->generation, memory_order_acquire)) ==
                   seen)
                pthread_cond_wait(&pool->wake, &pool->lock);
            pthread_mutex_unlock(&pool->lock);
        }
        seen = generation;
        if (pool->stop)
            return NULL;
        if (worker->index < pool->parts)
            ptec_run_part(pool, worker->index, scratch);
        if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
}

/* Stops and joins the first `started` workers and frees the pool. */
static void ptec_pool_free(struct ptec_pool *pool, int32_t started) {
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_acq_rel);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
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
 * below 2 or memory or threads run out. */
PTEC_HIDDEN struct ptec_pool *ptec_pool_create(int32_t threads, uint64_t scratch_bytes) {
    if (threads < 2)
        return NULL;
    struct ptec_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pool->threads = threads;
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
    if (!pool || parts < 2)
        return kernel(arena, constants, dims, scratch, 0, count);
    if (parts > pool->threads)
        parts = pool->threads;
    pool->kernel = kernel;
    pool->arena = arena;
    pool->constants = constants;
    pool->dims = dims;
    pool->count = count;
    pool->parts = (int32_t)parts;
    atomic_store_explicit(&pool->pending, pool->threads - 1, memory_order_relaxed);
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_acq_rel);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    ptec_run_part(pool, 0, scratch);
    for (int spin = 0;
         atomic_load_explicit(&pool->pending, memory_order_acquire) != 0 && spin < PTEC_SPINS;
         spin++)
        ptec_relax();
    if (atomic_load_explicit(&pool->pending, memory_order_acquire) != 0) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load_explicit(&pool->pending, memory_order_acquire) != 0)
            pthread_cond_wait(&pool->done, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
    }
    for (int32_t part = 0; part < parts; part++)
        if (pool->status[part] != 0)
            return pool->status[part];
    return 0;
}
