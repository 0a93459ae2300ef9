/* tinyflow's own thread pool: the kernels' parallel loops run here, not on an OpenMP runtime.
 *
 * Why not OpenMP: an OpenMP runtime is one per process, chosen by whoever loads it first.
 * PyTorch's wheel ships its own libgomp.so.1 (same soname as the system's), so after
 * `import torch` every -fopenmp library runs on torch's copy, with torch's settings:
 * its threads spin after each parallel region and took the cores from numpy's BLAS
 * (a 784-1024-1024-10 training step 2.5x slower), and OMP_WAIT_POLICY or GOMP_SPINCOUNT
 * set by anyone change tinyflow's speed. A pool of our own behaves the same whatever
 * was imported before it.
 *
 * How it works: tf_parallel_for(n, cost, fn, ctx) cuts [0, n) into contiguous chunks, up to
 * CHUNKS_PER_THREAD per thread and none below CHUNK_MIN_COST, and calls fn(ctx, start, stop) on each.
 * Each thread taking part owns a contiguous range of them; it claims its own chunks one at a time from
 * the front, then what is left of the others' ranges from their backs, until none are left, and the caller
 * returns when every chunk is done. Claiming, rather than one fixed chunk per thread,
 * is what keeps a kernel fast when a core is busy: another runtime's threads (torch's libgomp spins
 * for milliseconds after each parallel region, OpenBLAS's idle threads yield in a loop) can keep a
 * worker from running for a whole time slice, and a worker woken on an idle virtual CPU may start a
 * millisecond late; the caller then does that work itself instead of waiting (a 10M-element Adam step
 * after a torch call: 9.2 ms with fixed halves, 5.5 ms with 8 claimed chunks, 5.2 ms on one thread).
 * Small chunks bound the wait for the one a late worker holds. Chunks are fixed by index, whoever runs
 * them, so results never depend on the schedule. Workers are started on first use. A worker between jobs
 * spins, then sleeps on a condition variable: a training step calls kernels a few microseconds apart, and
 * waking a sleeping thread costs 10-60 µs (in a VM up to a millisecond), but a spin takes the core from
 * whatever else wants it. So the spin adapts: TF_QUIET_SPIN_MICROSECONDS while the worker's CPU is its own,
 * TF_SPIN_MICROSECONDS once the scheduler has preempted one of the process's threads within about the last
 * millisecond (the process's involuntary context switches went up: another thread wanted a CPU). Measured: an imported MobileNetV2 at batch 1 beside a busy
 * process, 21 ms with the short spin and 31 ms with a 1 ms one; idle, the long spin saves a wake-up before
 * each matrix product. A caller waiting for the last chunks of its own job spins
 * for up to TF_CALLER_SPIN_MICROSECONDS, then sleeps as a worker does: they run on the other cores and end
 * within a chunk's time, the caller has nothing else to do, and being woken cost it more in a VM (a
 * 10M-element Adam step, 2.1 ms: 1.08-1.10x the OpenMP loop with the 20 µs spin, 1.04-1.05x with this
 * one). With more threads than CPUs it spins no longer than a worker: the last chunk may need its CPU.
 * No spin calls sched_yield: OpenBLAS's idle threads spin with it, and two yielding loops made a 50 µs
 * kernel after a matmul take 2 ms (the scheduler ping-pongs them).
 * Small jobs (cost below TF_PARALLEL_MIN) and calls made while the pool is busy (another
 * Python thread's kernel, a kernel called from inside a chunk) run on the calling thread.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/resource.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "tinyflow_kernels.h"

/* A job number carries the number of parts in its low bits, so a worker learns at once whether it takes part. */
enum { TF_SPIN_MICROSECONDS = 20, TF_QUIET_SPIN_MICROSECONDS = 1000, TF_CALLER_SPIN_MICROSECONDS = 1000, PARTS_BITS = 11, CHUNKS_PER_THREAD = 32,
       CHUNK_MIN_COST = 32768 };

/* A counter threads can wait on until it changes; bump() changes it and wakes the sleepers. */
typedef struct {
    long value;
    int sleepers;
    pthread_cond_t changed;
} counter;

static struct {
    pthread_mutex_t busy;  /* held by the thread whose job the pool runs */
    pthread_mutex_t lock;  /* guards the condition variables' waits */
    counter job;           /* (job number << PARTS_BITS) + parts; workers wait for a new value */
    counter done;          /* bumped by the worker that finishes a job's last chunk */
    long chunks;           /* the current job's chunk count */
    long finished;         /* chunks of the current job done */
    int threads;           /* threads a job may use, the caller included */
    int started;           /* workers running */
    int cannot_start;      /* pthread_create failed once: do not try again at every call */
    tf_chunk_fn fn;
    void *args;
    long n;
    int steered_from;      /* the CPU the workers were last kept off (-1: none yet), see steer_workers */
    int cpus;              /* the CPUs the process may use, when the pool was configured */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, {0, 0, PTHREAD_COND_INITIALIZER},
          {0, 0, PTHREAD_COND_INITIALIZER}, 0, 0, 0, 0, 0, NULL, NULL, 0, -1};

/* Each part's range of the current job's chunks, as a cursor word (see cursor_word), one per cache line so that
 * claims on different ranges do not move one line between cores; part k claims from its own range first, then
 * from the others'. */
static struct {
    uint64_t word __attribute__((aligned(64)));
} cursors[TF_MAX_THREADS];

static pthread_t worker_threads[TF_MAX_THREADS]; /* the started workers, for steer_workers */
#ifdef CPU_COUNT
static cpu_set_t process_cpus; /* the CPUs the process may use, read when the pool is configured */
static int process_cpus_known;
#endif

static __thread int inside_pool; /* set on workers, and on a caller while it runs a job */
static __thread long home_part;  /* a worker's part number (its range of a job's chunks); 0 on callers */

static void chunk_bounds(long n, long parts, long part, long *start, long *stop) {
    /* contiguous chunks, cut at multiples of 16 elements so two threads rarely share a cache line */
    long blocks = (n + 15) / 16;
    if (n < 16 * parts) {
        *start = n * part / parts, *stop = n * (part + 1) / parts;
    } else {
        *start = 16 * (blocks * part / parts);
        *stop = part + 1 == parts ? n : 16 * (blocks * (part + 1) / parts);
    }
}

static double now_microseconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Wait while c->value == seen (spin, then sleep); returns the new value. The sequentially consistent
 * "count myself a sleeper, then look again" here and "change the value, then count sleepers" in bump()
 * mean that either bump() sees this thread asleep and wakes it, or this thread sees the change. */
static long wait_for_change(counter *c, long seen, double spin_microseconds) {
    double deadline = now_microseconds() + spin_microseconds;
    for (int i = 1;; i++) {
        long value = __atomic_load_n(&c->value, __ATOMIC_ACQUIRE);
        if (value != seen) return value;
        if ((i & 63) == 0 && now_microseconds() > deadline) break;
        cpu_relax();
    }
    pthread_mutex_lock(&pool.lock);
    __atomic_add_fetch(&c->sleepers, 1, __ATOMIC_SEQ_CST);
    long value;
    while ((value = __atomic_load_n(&c->value, __ATOMIC_SEQ_CST)) == seen) pthread_cond_wait(&c->changed, &pool.lock);
    __atomic_sub_fetch(&c->sleepers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&pool.lock);
    return value;
}

/* Change c->value by `step` and wake the threads waiting for a change. */
static void bump(counter *c, long step) {
    __atomic_add_fetch(&c->value, step, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&c->sleepers, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&c->changed);
        pthread_mutex_unlock(&pool.lock);
    }
}

/* A cursor word: (job number mod 2^31) << 32 | the end of the range still unclaimed << 16 | its first chunk. One
 * word, so one compare-and-swap checks the job and the range together; the owner takes chunks from the front,
 * others from the back. */
_Static_assert(TF_MAX_THREADS * CHUNKS_PER_THREAD <= 0xffff, "chunk numbers must fit the cursor's 16-bit fields");
_Static_assert(TF_MAX_THREADS < (1 << PARTS_BITS), "part counts must fit the job word's low bits");

static uint64_t cursor_word(long job, long end, long next) {
    return ((uint64_t)job & 0x7fffffffu) << 32 | (uint64_t)end << 16 | (uint64_t)next;
}

/* Claim a chunk of part q's range in job `job`, its first one (`front`) or its last; -1 when the range is done or
 * the job is another one. */
static long claim(long job, long q, int front) {
    uint64_t cursor = __atomic_load_n(&cursors[q].word, __ATOMIC_ACQUIRE), claimed;
    long chunk;
    do {
        long end = (long)(cursor >> 16 & 0xffff), next = (long)(cursor & 0xffff);
        if (cursor >> 32 != ((uint64_t)job & 0x7fffffffu) || next >= end) return -1;
        chunk = front ? next : end - 1;
        claimed = front ? cursor + 1 : cursor - (1u << 16);
    } while (!__atomic_compare_exchange_n(&cursors[q].word, &cursor, claimed, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    return chunk;
}

/* Run chunks of job `job` (of `parts` parts) until none is left unclaimed, as part `home`: the chunks of its own
 * range from its front, then what is left of the others' ranges, each from its back (so their owners keep
 * streaming from the front). Returns whether this thread finished the job's last chunk. A thread that wakes after
 * its job ended finds another job number in the cursors and claims nothing.
 * Why ranges: a thread that streams one contiguous stretch keeps the hardware prefetchers running; chunks handed
 * out in turn make both threads jump every chunk, and a 10M-element Adam step went from 2.0 to 2.8 ms where the
 * VM's two CPUs each had a memory path of their own (the loop with static halves: 2.5 ms). A late part's range
 * is still done by the others, chunk by chunk. */
static int run_chunks(long job, long home, long parts) {
    int finished_last = 0;
    for (long turn = 0; turn < parts; turn++) {
        long q = (home + turn) % parts, chunk;
        while ((chunk = claim(job, q, turn == 0)) >= 0) {
            /* a claimed chunk keeps its job from ending, so pool.fn, args, n and chunks stay this job's until it is
             * counted finished; after that the caller may already be setting up the next job */
            long chunks = pool.chunks, start, stop;
            chunk_bounds(pool.n, chunks, chunk, &start, &stop);
            if (start < stop) pool.fn(pool.args, start, stop);
            finished_last = __atomic_add_fetch(&pool.finished, 1, __ATOMIC_ACQ_REL) == chunks;
        }
    }
    return finished_last;
}

struct worker_start {
    long id, job; /* the worker's part number, and the last job it must not run */
};

/* How long a worker spins before it sleeps: long while no thread of the process has been preempted lately,
 * short once one was (another thread wanted its CPU; see the top of this file). The process's count of
 * involuntary context switches is read at most once a millisecond, by whichever worker comes first: getrusage
 * walks every thread of the process under a lock that all of them would otherwise queue on. */
static double worker_spin_microseconds(void) {
#ifdef RUSAGE_SELF
    static long checked_at = -1000000, preemptions_seen = -1;
    static int quiet;
    if (pool.threads > pool.cpus) return TF_SPIN_MICROSECONDS; /* some thread of the pool always waits for a CPU */
    long now = (long)now_microseconds(), last = __atomic_load_n(&checked_at, __ATOMIC_RELAXED);
    if (now - last >= 1000 && __atomic_compare_exchange_n(&checked_at, &last, now, 0, __ATOMIC_RELAXED,
                                                          __ATOMIC_RELAXED)) {
        struct rusage usage;
        long preemptions = getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_nivcsw : -2;
        long seen = __atomic_exchange_n(&preemptions_seen, preemptions, __ATOMIC_RELAXED);
        __atomic_store_n(&quiet, preemptions == seen, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&quiet, __ATOMIC_RELAXED) ? TF_QUIET_SPIN_MICROSECONDS : TF_SPIN_MICROSECONDS;
#else
    return TF_SPIN_MICROSECONDS;
#endif
}

static void *worker_main(void *arg) {
    struct worker_start *start = arg;
    long id = start->id, seen = start->job;
    free(start);
#ifdef __linux__
    pthread_setname_np(pthread_self(), "tinyflow-pool"); /* for top -H, /proc and the tests */
#endif
    inside_pool = 1;
    home_part = id;
    for (;;) {
        seen = wait_for_change(&pool.job, seen, worker_spin_microseconds());
        long parts = seen & ((1 << PARTS_BITS) - 1);
        if (id < parts) { /* workers beyond the parts (after a smaller thread count) rest */
            if (run_chunks(seen >> PARTS_BITS, id, parts)) bump(&pool.done, 1);
        }
    }
    return NULL;
}

/* Start workers until `threads - 1` run (called with pool.busy held); returns how many run. */
static int start_workers(int threads) {
    while (pool.started < threads - 1 && !pool.cannot_start) {
        struct worker_start *start = malloc(sizeof *start);
        if (!start) break;
        start->id = pool.started + 1;
        start->job = __atomic_load_n(&pool.job.value, __ATOMIC_RELAXED);
        pthread_t thread;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attr, worker_main, start);
        pthread_attr_destroy(&attr);
        if (failed) { /* no more threads allowed: use the ones we have */
            free(start);
            pool.cannot_start = 1;
            break;
        }
        worker_threads[pool.started++] = thread;
        pool.steered_from = -1; /* a new worker may run anywhere: steer it at the next job */
    }
    return pool.started;
}

/* Keep the workers off the CPU the caller runs on (called with pool.busy held, before a job is published).
 * Why: in a virtual machine a CPU left idle for a while looks "preempted" to the guest (the host took the
 * virtual CPU away), and the scheduler then wakes a worker on the waker's own CPU instead, where it waits for
 * the caller to be preempted: measured 0.7-1.3 ms late (median; up to 4 ms) for a 5 ms kernel run after 50 ms
 * of idleness, 7 to 9 times in 12 on the caller's CPU. With that CPU out of its mask, a worker wakes on
 * another one within tens of microseconds. One syscall per worker when the caller has changed CPU, none
 * otherwise. The mask is the process's CPUs (taskset, cgroups) when the pool started, without the caller's:
 * not the caller's own mask, which is one CPU when the caller is pinned (and workers it starts inherit it). */
static void steer_workers(void) {
#ifdef CPU_COUNT
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu == pool.steered_from || cpu >= CPU_SETSIZE || !process_cpus_known) return;
    cpu_set_t mask = process_cpus;
    if (!CPU_ISSET(cpu, &mask) || CPU_COUNT(&mask) < 2) return;
    CPU_CLR(cpu, &mask);
    for (int i = 0; i < pool.started; i++) pthread_setaffinity_np(worker_threads[i], sizeof mask, &mask);
    pool.steered_from = cpu;
#endif
}

/* fork() while another thread runs a job would copy its locks held: wait for the job, hold them across. */
static void lock_before_fork(void) {
    pthread_mutex_lock(&pool.busy);
    pthread_mutex_lock(&pool.lock);
}

static void unlock_after_fork(void) {
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.busy);
}

/* In a child made by fork() only the forking thread exists: forget the parent's workers. */
static void forget_workers_after_fork(void) {
    pthread_mutex_init(&pool.busy, NULL);
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.job.changed, NULL);
    pthread_cond_init(&pool.done.changed, NULL);
    pool.job.sleepers = pool.done.sleepers = 0;
    pool.started = 0;
    pool.steered_from = -1;
    inside_pool = 0;
}

static int default_threads(void) {
#ifdef CPU_COUNT
    process_cpus_known = sched_getaffinity(0, sizeof process_cpus, &process_cpus) == 0;
    if (process_cpus_known && CPU_COUNT(&process_cpus) > 0) return CPU_COUNT(&process_cpus);
#endif
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

static void configure(void) {
    pthread_atfork(lock_before_fork, unlock_after_fork, forget_workers_after_fork);
    pool.threads = pool.cpus = default_threads();
}

static void ensure_configured(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, configure);
}

void tf_parallel_for(long n, long cost, tf_chunk_fn fn, void *args) {
    if (n <= 0) return;
    ensure_configured();
    if (cost < TF_PARALLEL_MIN || pool.threads <= 1 || n < 2 || inside_pool || pthread_mutex_trylock(&pool.busy)) {
        fn(args, 0, n); /* small, single-threaded, nested, or another thread's job is running */
        return;
    }
    int workers = start_workers(pool.threads);
    steer_workers();
    long threads = tf_threads_for(cost), parts = workers + 1 < threads ? workers + 1 : threads;
    parts = parts < n ? parts : n;
    /* many small chunks, so a caller whose worker is late (descheduled, waking on an idle core) does the
     * rest itself without waiting long for a chunk the worker holds; but none under CHUNK_MIN_COST */
    long chunks = cost / CHUNK_MIN_COST > parts ? cost / CHUNK_MIN_COST : parts;
    chunks = chunks < parts * CHUNKS_PER_THREAD ? chunks : parts * CHUNKS_PER_THREAD;
    chunks = chunks < n ? chunks : n;
    long job = (__atomic_load_n(&pool.job.value, __ATOMIC_RELAXED) >> PARTS_BITS) + 1;
    long done = __atomic_load_n(&pool.done.value, __ATOMIC_RELAXED);
    pool.fn = fn;
    pool.args = args;
    pool.n = n;
    pool.chunks = chunks;
    pool.finished = 0;
    /* opens this job's chunks: part q's range is [q chunks/parts, (q+1) chunks/parts) */
    for (long q = 0; q < parts; q++)
        __atomic_store_n(&cursors[q].word, cursor_word(job, chunks * (q + 1) / parts, chunks * q / parts),
                         __ATOMIC_RELEASE);
    if (parts > 1) /* publishes the job: workers 1 .. parts-1 take part */
        bump(&pool.job, ((job << PARTS_BITS) + parts) - __atomic_load_n(&pool.job.value, __ATOMIC_RELAXED));
    inside_pool = 1;
    int finished_last = run_chunks(job, 0, parts);
    inside_pool = 0;
    /* the last chunks may still run on workers: wait for them (whoever finishes the last one bumps pool.done;
     * a late bump from an earlier job only wakes this loop once more) */
    double spin = pool.threads <= pool.cpus ? TF_CALLER_SPIN_MICROSECONDS : TF_SPIN_MICROSECONDS;
    while (!finished_last && __atomic_load_n(&pool.finished, __ATOMIC_ACQUIRE) < chunks)
        done = wait_for_change(&pool.done, done, spin);
    pthread_mutex_unlock(&pool.busy);
}

/* The number of threads a parallel kernel uses (the caller included). */
int tf_max_threads(void) {
    ensure_configured();
    return pool.threads;
}

/* The threads a job of this cost runs on (the caller included): the pool's count, but no more than the job pays
 * for, one per TF_PARALLEL_MIN / 2 of cost. Why: waking a thread costs 5-60 µs, and a job just over
 * TF_PARALLEL_MIN cut 16 ways gave each thread a few microseconds of work; beside other runtimes' spinning
 * threads each extra thread is one more that may start late. A job of TF_PARALLEL_MIN takes two threads, as on
 * the two cores where that threshold was measured. */
int tf_threads_for(long cost) {
    ensure_configured();
    long affordable = cost / (TF_PARALLEL_MIN / 2);
    return affordable < pool.threads ? (affordable > 1 ? (int)affordable : 1) : pool.threads;
}

/* Use n threads from the next parallel kernel on (1 .. TF_MAX_THREADS; n < 1 is ignored). */
void tf_set_num_threads(int n) {
    ensure_configured();
    if (n < 1) return;
    pthread_mutex_lock(&pool.busy); /* never while a job runs; workers beyond the count just rest */
    pool.threads = n > TF_MAX_THREADS ? TF_MAX_THREADS : n;
    pthread_mutex_unlock(&pool.busy);
}

/* How many worker threads have been started (for `tinyflow info` and the tests). */
int tf_pool_workers(void) { return __atomic_load_n(&pool.started, __ATOMIC_RELAXED); }

/* For the tests: one parallel job over n elements of cost `cost` whose chunks log, as they run, the part of the
 * thread running them and their first element: log[2 k], log[2 k + 1] for the k-th chunk to start (room for
 * 2 n values), and then take 20 us each, so that the workers take part. Returns the number of chunks. Each
 * thread's entries are in the order it ran its chunks. */
typedef struct {
    long *log;
    long next;
} trace_args;

static void trace_chunk(void *p, long start, long stop) {
    trace_args *t = p;
    long k = __atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED);
    t->log[2 * k] = home_part, t->log[2 * k + 1] = start;
    double until = now_microseconds() + 20;
    while (now_microseconds() < until) cpu_relax();
    (void)stop;
}

long tf_parallel_trace(long n, long cost, long *log) {
    trace_args t = {log, 0};
    tf_parallel_for(n, cost, trace_chunk, &t);
    return t.next;
}
