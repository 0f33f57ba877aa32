/*
 * tcptest.h — a small world for testing the TCP transport: ranks are
 * forked processes, each either a real transport (qrt_tcp_open, with a
 * sink that checks every packet) or a raw socket that speaks the wire
 * format by hand (tcp.h) to misbehave on purpose.
 *
 * The parent makes every rank's listening socket first (as quayrun does)
 * and hands the children a directory over them. Children report through
 * their exit status (0: every check passed) and stderr; each has an
 * alarm, so a hang ends as a failure, never as a stuck test. Nothing is
 * timed: waits are bounded by deadlines only.
 */
#ifndef QUAY_TCPTEST_H
#define QUAY_TCPTEST_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "qrt_tcp.h"

#define TT_MAX 4
#define TT_JOB 0x5eed5eedcafef00dull
/* Each real rank's registered memory: key 1 read/write, key 2 read-only. */
#define TT_MEM (2u << 20)
#define TT_KEY_RW 1u
#define TT_KEY_RO 2u
/* Tokens of RDMA actions have this bit; a SEND's token is its buffer. */
#define TT_RDMA_TOKEN (1ull << 63)
#define TT_DONES 8192

/** Every rank's listener and published address list. */
typedef struct tt_dir {
    int n;
    int fd[TT_MAX];
    int dead_fd[TT_MAX]; /* the launcher's news of ended ranks, or -1 */
    char addrs[TT_MAX][QRT_TCP_ADDR_MAX];
} tt_dir;

typedef struct tt_done {
    uint64_t token;
    int status;
    int ev; /* event number (order of callbacks) */
} tt_done;

/** A real rank: the transport and what its sink saw. */
typedef struct tt_rank {
    quay_transport *t;
    quay_transport_sink sink;
    int32_t rank, size;
    uint64_t sent_seq[TT_MAX]; /* next packet number toward each peer */
    uint64_t next_seq[TT_MAX]; /* next packet number expected from each */
    uint64_t bye_seq[TT_MAX];  /* next_seq when its bye came */
    int bye[TT_MAX], failed[TT_MAX];
    int fail_ev[TT_MAX];
    int ev;               /* callbacks so far */
    int bad;              /* packets that failed their check */
    int refuse;           /* answer QUAY_EAGAIN to every packet */
    uint64_t refused;     /* packets answered QUAY_EAGAIN */
    uint64_t queued;      /* sends that returned 0 */
    uint64_t outstanding; /* queued sends + RDMA actions not yet done */
    int ndone;
    tt_done done[TT_DONES];
    int nresolve, natomic;
    uint8_t *mem;
} tt_rank;

/** A failed check inside a child: message on stderr, *fail set. */
#define TT_CHECK(fail, cond) HARNESS_CHILD_CHECK(fail, cond)

/** Poll r until cond holds: ok = 1, or 0 after ms milliseconds or a
 *  broken transport. */
#define TT_POLL_UNTIL(r, cond, ms, ok)                                          \
    do {                                                                        \
        uint64_t dl_ = tt_now_ms() + (uint64_t)(ms);                            \
        (ok) = 1;                                                               \
        while (!(cond)) {                                                       \
            if (tt_now_ms() > dl_ || (r)->t->ops->poll((r)->t, 5000000) < 0) { \
                (ok) = 0;                                                       \
                break;                                                          \
            }                                                                   \
        }                                                                       \
    } while (0)

uint64_t tt_now_ms(void);

/** Listeners on 127.0.0.1 for n ranks. 0 or -1. */
int tt_dir_make(tt_dir *d, int n);
void tt_dir_close(tt_dir *d);
/** A transport directory over d for `rank` (its listener), job TT_JOB. */
qrt_tcp_dir tt_dir_for(tt_dir *d, int32_t rank);

typedef int (*tt_fn)(tt_dir *d, int32_t rank, void *arg);
/** Fork one child per rank running fn[rank] (alarm: timeout_s; a NULL
 *  fn: no process for that rank) and wait for all; st[rank] gets 0 if it exited 0, else its status (nonzero).
 *  Returns the number of ranks that failed. */
int tt_run(tt_dir *d, const tt_fn *fn, void *arg, int timeout_s, int *st);

/** Open a real rank (closes the other ranks' listeners first). */
int tt_open(tt_rank *r, tt_dir *d, int32_t rank);
/** Send a checked packet of len (>= 16) bytes to peer. Returns send's
 *  answer; the buffer is freed at once or at its op_done. */
int tt_send(tt_rank *r, int32_t peer, size_t len);
/** Start an RDMA action (token id | TT_RDMA_TOKEN). Returns rdma's answer. */
int tt_rdma(tt_rank *r, int kind, int32_t peer, uint64_t id, uint64_t key, uint64_t off,
            void *local, uint64_t len, uint32_t aop, uint64_t operand, uint64_t compare);
/** The status of RDMA action id, or 1 while not done. */
int tt_rdma_status(const tt_rank *r, uint64_t id);
/** Bye, then poll until every peer said bye or failed and nothing is
 *  queued; close. 0 or -1. */
int tt_finish(tt_rank *r);
/** The byte at offset i of rank's registered memory, as initialised. */
uint8_t tt_mem_byte(int32_t rank, size_t i);
/** The byte at offset i of a checked packet. */
uint8_t tt_pkt_byte(int32_t src, uint64_t seq, size_t i);

/** Raw ranks: connect to rank `to` and exchange hellos (job TT_JOB), or
 *  -1. Blocking socket. */
int tt_raw_connect(tt_dir *d, int32_t me, int32_t to, int32_t size);
/** Write all of b[0..len). 0 or -1. */
int tt_raw_write(int fd, const void *b, size_t len);
/** Read exactly len bytes. 0 or -1 (EOF / error). */
int tt_raw_read(int fd, void *b, size_t len);
/** A checked packet frame (header + body) into a malloc'd buffer. */
uint8_t *tt_raw_pkt(int32_t src, uint64_t seq, size_t len, size_t *flen);
/** Read one frame's header into h[TCP_HDR_MAX] and skip its body: its
 *  type, or -1. */
int tt_raw_frame(int fd, uint8_t *h);

/** Redirect this process's stderr to a temporary file (for checking
 *  messages); tt_stderr_end restores it, echoes what was printed, and
 *  returns it (malloc'd, "" if none; free it). */
void tt_stderr_capture(void);
char *tt_stderr_end(void);

#endif /* QUAY_TCPTEST_H */
