/*
 * fake_pmi.h — a fake PMI-1 process manager for tests: it starts N copies
 * of a program the way Hydra's proxy does and serves their PMI-1 requests.
 *
 * Each rank gets, like under `mpiexec -n N`, either
 *   PMI_FD (one end of a socketpair), PMI_RANK, PMI_SIZE     (default), or
 *   PMI_PORT=localhost:<port>, PMI_ID=<rank>                  (use_port),
 * and every other PMI_* variable removed. The server answers init,
 * initack (+ set size / rank / debug), get_maxes (256 / 64 / 1024, as
 * Hydra), get_appnum, get_my_kvsname, get_universe_size, put, get,
 * barrier_in, finalize and abort. As in Hydra, a put becomes visible (to
 * everyone, its author included) only when the next barrier completes;
 * "PMI_process_mapping" is answered as Hydra does on one node.
 *
 * Two answer styles: Hydra 4.0 ("cmd=get_result rc=0 msg=success
 * value=...", not found "rc=-1 msg=key_K_not_found value=unknown") and
 * Hydra 4.1+ ("cmd=get_result rc=0 value=...", not found "rc=1"). With
 * `dribble`, answers go out a few bytes at a time, to exercise partial
 * reads.
 *
 * Every request is checked against what a PMI-1 client must send (cmd=
 * first, the fields each command needs, kvsname matching, key and value
 * lengths within the maxes, order: init before anything else); each
 * departure is printed on stderr and counted as a violation.
 */
#ifndef QUAY_FAKE_PMI_H
#define QUAY_FAKE_PMI_H

typedef struct {
    int nprocs;      /* 1..FPS_MAX_PROCS */
    int use_port;    /* PMI_PORT + PMI_ID instead of PMI_FD */
    int new_style;   /* answer like Hydra 4.1+ instead of 4.0 */
    int dribble;     /* send answers in pieces of a few bytes */
    int timeout_s;   /* kill everything after this long (0: 60 s) */
    int verbose;     /* print every line received and sent */
} fps_opts;

typedef struct {
    int status[64];     /* per rank: exit code, 128+signal, or -1 */
    int violations;     /* protocol departures seen */
    int finalized;      /* ranks that sent finalize */
    int aborted;        /* an abort was received */
    int abort_code;     /* its exitcode */
    int timed_out;      /* the job was killed for taking too long */
} fps_result;

#define FPS_MAX_PROCS 64

/** Run argv (argv[0] looked up in PATH) as nprocs ranks, serve them until
 *  all have exited, fill *res. Returns 0, or -1 if the job could not be
 *  started (a message on stderr). On abort, the other ranks are killed. */
int fps_run(const fps_opts *o, char *const argv[], fps_result *res);

#endif /* QUAY_FAKE_PMI_H */
