/*
 * test_mpi_async.c — asynchronous progress (QUAY_ASYNC_PROGRESS=1): what
 * a rank started advances while it computes without calling MPI.
 *
 * Each rank in turn is the one that computes (C). Every rank starts, in
 * this order, an MPI_Ibcast from C (1 MiB), an MPI_Iallreduce (512 KiB of
 * doubles), an MPI_Ibarrier, and large messages to and from C
 * (rendezvous): C an MPI_Irecv from and an MPI_Isend to every other rank,
 * each other rank the matching MPI_Isend and MPI_Irecv. C starts its
 * part, says so in memory the ranks share (a file each maps), and then
 * computes with no MPI call at all. The others start theirs only then,
 * wait for all of it (MPI_Waitall) and report in the shared memory. Their
 * waits cannot finish unless C's side moves: C must match their
 * rendezvous sends and serve their reads of its messages, forward and
 * reduce. So C computes until every other rank has reported: with
 * asynchronous progress that happens; without it never (a limit of
 * LIMIT_S seconds turns a hang into a failure, it asserts no timing).
 * Then C tests its requests once (how many are complete is printed) and
 * waits for them, and every buffer is checked.
 *
 * Without QUAY_ASYNC_PROGRESS=1 (the control run) C computes until every
 * other rank has started its part, then as long again, and checks that
 * none of them has finished: without the thread nothing moves, so the
 * test above measures what it claims to. Then C waits and all finish.
 */
#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

#define BIG (1u << 20)           /* bytes per message and of the bcast */
#define NRED (64u * 1024u)       /* doubles reduced */
#define LIMIT_S 120              /* a hang becomes a failure after this */
#define MAX_RANKS 64

typedef struct shared {
    atomic_int computing;        /* phase whose C computes now (+1) */
    atomic_int started[MAX_RANKS]; /* phase + 1 once a rank started its part */
    atomic_int done[MAX_RANKS];    /* phase + 1 once its waits returned */
} shared;

static shared *sh;
static volatile double sink;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Some work that is not MPI. */
static void compute(void)
{
    double x = sink;
    for (int i = 0; i < 20000; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

static int count_of(atomic_int *flags, int phase, int except)
{
    int n = 0;
    for (int r = 0; r < size; r++)
        n += r != except && atomic_load(&flags[r]) == phase + 1;
    return n;
}

static void map_shared(void)
{
    char path[256] = "";
    if (rank == 0) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/quay_async_XXXXXX", dir != NULL && *dir ? dir : "/tmp");
        int fd = mkstemp(path);
        if (fd < 0 || ftruncate(fd, sizeof(shared)) != 0) {
            perror("test_mpi_async: shared file");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        close(fd);
    }
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        perror("test_mpi_async: open the shared file");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    sh = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (sh == MAP_FAILED) {
        perror("test_mpi_async: mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        unlink(path);
}

static unsigned char pattern(int from, int to, size_t i)
{
    return (unsigned char)(from * 31 + to * 7 + i * 13);
}

/* One phase: rank c computes while the others need it. */
static void phase(int c, int async)
{
    int peers = size - 1, nreq = 0;
    unsigned char *bc = malloc(BIG);
    unsigned char *in = malloc((size_t)BIG * (size_t)size);
    unsigned char *out = malloc((size_t)BIG * (size_t)size);
    double *red = malloc(NRED * sizeof *red), *sum = malloc(NRED * sizeof *sum);
    MPI_Request *req = malloc((size_t)(3 + 2 * size) * sizeof *req);
    if (!bc || !in || !out || !red || !sum || !req) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = 0; i < BIG; i++)
        bc[i] = rank == c ? pattern(c, c, i) : 0;
    for (size_t i = 0; i < NRED; i++)
        red[i] = (double)(rank + 1) * (double)(i % 1000);
    memset(in, 0, (size_t)BIG * (size_t)size);
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < BIG; i++)
            out[(size_t)r * BIG + i] = pattern(rank, r, i);

    if (rank != c) /* C's side first: the others start once it computes */
        while (atomic_load(&sh->computing) != c + 1)
            sched_yield();
    MPI_Ibcast(bc, BIG, MPI_BYTE, c, MPI_COMM_WORLD, &req[nreq++]);
    MPI_Iallreduce(red, sum, NRED, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[nreq++]);
    MPI_Ibarrier(MPI_COMM_WORLD, &req[nreq++]);
    for (int r = 0; r < size; r++) {
        if (r == rank || (rank != c && r != c))
            continue;
        MPI_Irecv(in + (size_t)r * BIG, BIG, MPI_BYTE, r, 5, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Isend(out + (size_t)r * BIG, BIG, MPI_BYTE, r, 5, MPI_COMM_WORLD, &req[nreq++]);
    }
    atomic_store(&sh->started[rank], c + 1);

    if (rank == c) {
        atomic_store(&sh->computing, c + 1);
        /* No MPI call from here until the others report (or fail to). */
        double t0 = now_s(), all_started = 0;
        long rounds = 0, extra = 0;
        for (;;) {
            compute();
            rounds++;
            int nd = count_of(sh->done, c, c);
            if (async && nd == peers)
                break;
            if (!async) {
                CHECK(nd == 0);
                if (nd != 0)
                    break;
                if (all_started == 0 && count_of(sh->started, c, c) == peers)
                    all_started = 1, extra = rounds;
                if (all_started != 0 && rounds >= 2 * extra + 1000)
                    break;
            }
            if (now_s() - t0 > LIMIT_S) {
                fprintf(stderr,
                        "rank %d: %d of %d ranks finished while it computed for %d s: "
                        "no asynchronous progress\n",
                        rank, nd, peers, LIMIT_S);
                errs++;
                break;
            }
        }
        int flags = 0;
        for (int i = 0; i < nreq; i++) {
            int f = 0;
            MPI_Test(&req[i], &f, MPI_STATUS_IGNORE);
            flags += f;
        }
        printf("phase %d: rank %d computed %ld rounds; %d of %d requests complete at the "
               "first MPI_Test\n",
               c, rank, rounds, flags, nreq);
    }
    EXPECT(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    if (rank != c)
        atomic_store(&sh->done[rank], c + 1);

    size_t bad = 0;
    for (size_t i = 0; i < BIG; i++)
        bad += bc[i] != pattern(c, c, i);
    for (size_t i = 0; i < NRED; i++)
        bad += sum[i] != (double)size * (size + 1) / 2 * (double)(i % 1000);
    for (int r = 0; r < size; r++) {
        if (r == rank || (rank != c && r != c))
            continue;
        for (size_t i = 0; i < BIG; i++)
            bad += in[(size_t)r * BIG + i] != pattern(r, rank, i);
    }
    CHECK(bad == 0);
    free(bc), free(in), free(out), free(red), free(sum), free(req);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_FUNNELED);
    if (size < 2 || size > MAX_RANKS) {
        if (rank == 0)
            fprintf(stderr, "test_mpi_async: 2 to %d ranks\n", MAX_RANKS);
        MPI_Finalize();
        return size < 2 ? 0 : 1;
    }
    const char *env = getenv("QUAY_ASYNC_PROGRESS");
    int async = env != NULL && strcmp(env, "1") == 0;
    map_shared();
    for (int c = 0; c < size; c++)
        phase(c, async);
    munmap(sh, sizeof(shared));
    int all = mpitest_total(async ? "test_mpi_async" : "test_mpi_async (control, no thread)");
    MPI_Finalize();
    return all != 0;
}
