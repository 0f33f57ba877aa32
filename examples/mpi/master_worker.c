/*
 * master_worker.c — dynamic load balancing: a master hands out tasks,
 * workers ask for more as soon as they finish.
 *
 *   master_worker [limit [chunk]]     (defaults: 500000, 5000)
 *
 * The job counts the primes below `limit` by trial division, a cost that
 * grows with the numbers tested, so tasks take unequal time. The range is
 * cut into tasks of `chunk` numbers. Rank 0 (the master) sends one task
 * to every worker, then waits for a result from *any* worker
 * (MPI_ANY_SOURCE, MPI_ANY_TAG) and gives that worker the next task; when
 * none are left it sends a STOP message instead. Fast workers therefore
 * do more tasks: nobody waits for a fixed share.
 *
 * The message tag says what a message is (work, result or stop): the
 * worker receives with MPI_ANY_TAG and looks at status.MPI_TAG.
 *
 * Check: the master counts the same primes with a sieve of Eratosthenes
 * (a different algorithm) and verifies that every task came back exactly
 * once. With a single rank there are no workers and the master does
 * every task itself.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

enum { TAG_WORK = 1, TAG_RESULT = 2, TAG_STOP = 3 };

static void fail(int rank, const char *what)
{
    fprintf(stderr, "master_worker: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The work: how many primes in [lo, hi), by trial division. */
static long long count_primes(long long lo, long long hi)
{
    long long count = 0;
    for (long long n = lo < 2 ? 2 : lo; n < hi; n++) {
        int prime = 1;
        for (long long d = 2; d * d <= n; d++) {
            if (n % d == 0) {
                prime = 0;
                break;
            }
        }
        count += prime;
    }
    return count;
}

/* The reference: primes below limit with a sieve. */
static long long sieve_count(long long limit)
{
    char *composite = calloc((size_t)limit + 1, 1);
    if (!composite)
        fail(0, "out of memory");
    long long count = 0;
    for (long long n = 2; n < limit; n++) {
        if (composite[n])
            continue;
        count++;
        for (long long m = n * n; m < limit; m += n)
            composite[m] = 1;
    }
    free(composite);
    return count;
}

/* Task t covers [t * chunk, min((t + 1) * chunk, limit)). */
static void make_task(long long t, long long chunk, long long limit, long long task[3])
{
    task[0] = t;
    task[1] = t * chunk;
    task[2] = (t + 1) * chunk < limit ? (t + 1) * chunk : limit;
}

/* The master's side: send worker w task *next (and advance *next), or
 * STOP if there is none left. Returns 1 if w got a task. */
static int give_work(int w, long long *next, long long ntasks, long long chunk, long long limit)
{
    if (*next >= ntasks) {
        MPI_Send(NULL, 0, MPI_LONG_LONG, w, TAG_STOP, MPI_COMM_WORLD);
        return 0;
    }
    long long task[3];
    make_task((*next)++, chunk, limit, task);
    MPI_Send(task, 3, MPI_LONG_LONG, w, TAG_WORK, MPI_COMM_WORLD);
    return 1;
}

/* A worker: receive a task, compute, send the result; until STOP.
 * A task is {index, lo, hi}; a result is {index, count}. */
static void worker(int rank)
{
    for (;;) {
        long long task[3];
        MPI_Status st;
        MPI_Recv(task, 3, MPI_LONG_LONG, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_STOP)
            return;
        if (st.MPI_TAG != TAG_WORK)
            fail(rank, "unexpected tag from the master");
        long long result[2] = {task[0], count_primes(task[1], task[2])};
        MPI_Send(result, 2, MPI_LONG_LONG, 0, TAG_RESULT, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);

    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long long limit = argc > 1 ? strtoll(argv[1], NULL, 10) : 500000;
    long long chunk = argc > 2 ? strtoll(argv[2], NULL, 10) : 5000;
    if (limit < 2 || chunk < 1 || limit > 1000000000) {
        if (rank == 0)
            fprintf(stderr, "usage: master_worker [limit 2..1e9 [chunk >= 1]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    if (rank != 0) {
        worker(rank);
        MPI_Finalize();
        return 0;
    }

    /* ---- the master ---------------------------------------------------- */
    double t0 = MPI_Wtime();
    long long ntasks = (limit + chunk - 1) / chunk;
    long long *counts = malloc((size_t)ntasks * sizeof *counts);
    char *done = calloc((size_t)ntasks, 1);
    int *per_worker = calloc((size_t)size, sizeof *per_worker); /* tasks each */
    if (!counts || !done || !per_worker)
        fail(rank, "out of memory");

    long long next = 0; /* the next task to hand out */
    if (size == 1) {
        /* Nobody to delegate to: do the tasks here. */
        for (; next < ntasks; next++) {
            long long task[3];
            make_task(next, chunk, limit, task);
            counts[next] = count_primes(task[1], task[2]);
            done[next] = 1;
            per_worker[0]++;
        }
    } else {
        /* One task (or STOP, if there are more workers than tasks) to
         * every worker to start with. */
        int busy = 0; /* workers with a task out */
        for (int w = 1; w < size; w++)
            busy += give_work(w, &next, ntasks, chunk, limit);
        /* Collect results in whatever order they come; refill the worker
         * that just answered (status.MPI_SOURCE says who it was). */
        while (busy > 0) {
            long long result[2];
            MPI_Status st;
            MPI_Recv(result, 2, MPI_LONG_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                     &st);
            if (st.MPI_TAG != TAG_RESULT || result[0] < 0 || result[0] >= ntasks ||
                done[result[0]])
                fail(rank, "bad or duplicate result");
            counts[result[0]] = result[1];
            done[result[0]] = 1;
            per_worker[st.MPI_SOURCE]++;
            if (!give_work(st.MPI_SOURCE, &next, ntasks, chunk, limit))
                busy--; /* that worker has stopped */
        }
    }
    double elapsed = MPI_Wtime() - t0;

    /* ---- check ---------------------------------------------------------- */
    long long total = 0;
    for (long long t = 0; t < ntasks; t++) {
        if (!done[t])
            fail(rank, "a task never came back");
        total += counts[t];
    }
    long long reference = sieve_count(limit);
    if (total != reference)
        fail(rank, "prime count differs from the sieve");

    printf("master_worker: %d ranks, %lld tasks: %lld primes below %lld "
           "(sieve: %lld): OK in %.3f s; tasks per %s:",
           size, ntasks, total, limit, reference, elapsed,
           size == 1 ? "rank (master alone)" : "worker");
    for (int w = size == 1 ? 0 : 1; w < size; w++)
        printf(" %d", per_worker[w]);
    printf("\n");

    free(counts);
    free(done);
    free(per_worker);
    MPI_Finalize();
    return 0;
}
