/*
 * qrt_tcp.h — the TCP transport's constructor, for the runtime (quay_rt),
 * and the address helpers quayrun shares with it.
 *
 * Every pair of ranks has one TCP connection (the higher rank connects to
 * the lower one, so no pair ever has two), established at open: each rank
 * listens, publishes its address list through a directory, waits until
 * all have published, connects to the lower ranks and accepts the higher
 * ones. A handshake both ways (magic, version, job cookie, both ranks)
 * rejects strays, so a rank may try several addresses of a peer in turn.
 *
 * Directories: quayrun's (addresses known before the ranks start, one
 * listening socket per rank made by quayrun itself) and PMI-1's (Hydra's
 * mpiexec: put / barrier / get of "quay-tcp-<rank>").
 *
 * Knobs (environment, read by every rank):
 *   QUAY_TCP_ADDR        address this rank listens on and publishes (an
 *                        IPv4 address; default: all interfaces, publishing
 *                        every up IPv4 address with loopback last)
 *   QUAY_TCP_CONNECT_MS  start-up limit: connect + handshake with every
 *                        peer (default 30000); past it, QUAY_EPEER
 *   QUAY_TCP_BUF_KB      SO_SNDBUF / SO_RCVBUF (default: the kernel's);
 *                        also applied by qrt_tcp_listen, so that accepted
 *                        connections have it from their first segment
 *   QUAY_TCP_RDMA=0      no software GET / PUT (rendezvous data in DATA
 *                        packets); atomics stay. Default: GET / PUT /
 *                        atomics, served by the target rank's transport
 * Set by quayrun (not by hand): QUAY_TCP_FD (this rank's listening
 * socket), QUAY_TCP_PEERS (every rank's address list, rank order, ';'
 * between ranks, ',' between one rank's addresses), QUAY_TCP_JOB_FD (a
 * pipe holding the job cookie, hex, read once at start-up and closed: the
 * cookie is never in the environment, where /proc/PID/environ shows it),
 * QUAY_TCP_DEAD_FD (a pipe on which quayrun writes the number of every
 * rank that ends, one uint32_t each, host order; read until connected).
 */
#ifndef QRT_TCP_H
#define QRT_TCP_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay_adapter.h>

struct qpmi;

/** Longest address list of one rank ("a.b.c.d:port,..." + NUL). */
#define QRT_TCP_ADDR_MAX 256

/** Where the ranks' addresses come from. */
typedef struct qrt_tcp_dir {
    void *ctx;
    /** A 64-bit cookie naming this job, equal at every rank. */
    uint64_t job;
    /** Publish this rank's address list. 0 or a QUAY_E* code. */
    int (*publish)(void *ctx, const char *addrs);
    /** Return once every rank has published. 0 or a QUAY_E* code. */
    int (*fence)(void *ctx);
    /** Rank r's address list into buf[cap]. 0 or a QUAY_E* code. */
    int (*lookup)(void *ctx, int32_t r, char *buf, size_t cap);
    /** The listening socket made for this rank by its launcher (best with
     *  qrt_tcp_listen), or -1: the transport makes its own (QUAY_TCP_ADDR,
     *  any port). qrt_tcp_open takes it over and closes it, whatever
     *  happens. */
    int listen_fd;
    /** The launcher's news of ranks that ended (quayrun's QUAY_TCP_DEAD_FD:
     *  their numbers, one uint32_t each), or -1. A rank named there that is
     *  not connected yet fails start-up at once (QUAY_EPEER) instead of
     *  leaving it to the connect limit. qrt_tcp_open takes it over and
     *  closes it, whatever happens. */
    int dead_fd;
} qrt_tcp_dir;

/** quayrun's directory, from QUAY_TCP_FD / QUAY_TCP_PEERS / QUAY_TCP_JOB_FD
 *  / QUAY_TCP_DEAD_FD (size entries are checked against `size`). Reads the
 *  cookie and closes its descriptor. 0, or QUAY_EINVAL with a message on
 *  stderr. The peer list is read from the environment in place. */
int qrt_tcp_dir_env(int32_t size, qrt_tcp_dir *d);

/** PMI-1's directory over an initialised handle (adapters/pmi); the job
 *  cookie is derived from the KVS name. Does not take ownership. */
int qrt_tcp_dir_pmi(struct qpmi *p, qrt_tcp_dir *d);

/**
 * Open the TCP transport for `rank` of `size` using directory `dir`
 * (copied; its ctx must outlive the call only). Returns once connected to
 * every peer. 0, QUAY_EINVAL (bad environment or directory; message on
 * stderr), QUAY_EPEER (a peer did not show up in time, or died), or
 * QUAY_ENOMEM.
 */
int qrt_tcp_open(int32_t rank, int32_t size, const qrt_tcp_dir *dir, const quay_transport_sink *sink,
                 quay_transport **pt);

/**
 * A non-blocking listening socket on `host` (an IPv4 address, or NULL /
 * "" for all interfaces), any free port, with its address list written to
 * addrs[cap] (the host itself, or every up IPv4 address of this machine,
 * loopback last, each with the port). QUAY_TCP_BUF_KB, if set, is applied
 * before listen (connections take their buffer sizes from the listener).
 * For quayrun and the transport. Returns the descriptor (close-on-exec,
 * non-blocking), or a negative errno value (-EINVAL: a bad host or a bad
 * QUAY_TCP_BUF_KB, -ENOSPC: cap too small for one address).
 */
int qrt_tcp_listen(const char *host, char *addrs, size_t cap);

#endif /* QRT_TCP_H */
