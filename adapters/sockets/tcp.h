/*
 * tcp.h — the TCP transport's private state and wire format, shared by
 * its files:
 *
 *   tcp.c       open / close, the send queues, poll and blocking
 *   tcp_rx.c    frames in: the per-peer reader, held packets, failures
 *   tcp_rdma.c  software RDMA: the initiator's table of actions in flight
 *               and the target's side (mem_resolve / mem_atomic)
 *   tcp_conn.c  start-up: listening, address lists, connect + handshake
 *   tcp_dir.c   the directories (quayrun's environment, PMI-1)
 *
 * Wire format, all integers little-endian, decoded field by field (never
 * a struct laid over received bytes):
 *
 *   hello (32 bytes, each way once, at start-up):
 *     0 u32 magic "QTCP"   4 u16 version   6 u16 zero   8 u64 job cookie
 *     16 u32 sender rank   20 u32 receiver rank   24 u32 size   28 u32 zero
 *
 *   frame = 12-byte prefix, a fixed extension per type, then the body:
 *     0 u8 type   1 u8 flags (zero)   2 u16 zero   4 u64 body length
 *   type          extension (after the prefix)               body
 *   PKT           -                                          the packet
 *   BYE           -                                          none
 *   GET_REQ       u64 cookie, key, offset, len                none
 *   GET_REPLY     u64 cookie, i32 status, u32 zero           data (status 0)
 *   PUT           u64 cookie, key, offset                    data
 *   PUT_DONE      u64 cookie, i32 status, u32 zero           none
 *   ATOMIC_REQ    u64 cookie, key, offset, operand, compare,  none
 *                 u32 op, u32 zero
 *   ATOMIC_REPLY  u64 cookie, u64 old, i32 status, u32 zero  none
 *
 * Everything from the wire is checked before use; a frame that breaks a
 * rule fails its sender alone (tcp_peer_fail).
 *
 * What a peer can make this rank keep is bounded: frames read but not
 * taken in (the carry, TCP_RBUF), one packet being read (TCP_PKT_MAX),
 * held packets (TCP_HOLD_*) and the replies queued toward it
 * (TCP_REPLY_MAX); at a bound it is no longer read. The queue of this
 * rank's own frames holds what its engine started (max_out sends;
 * requests past TCP_RDMA_DEPTH wait unsent).
 */
#ifndef QUAY_TCP_H
#define QUAY_TCP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "qrt_optab.h"
#include "qrt_tcp.h"

struct sockaddr_in;

/* ---- wire ----------------------------------------------------------------------------- */

#define TCP_MAGIC 0x50435451u /* "QTCP" as little-endian bytes */
#define TCP_VERSION 1u
#define TCP_HELLO_LEN 32u

/** Frame types. */
enum {
    TCP_PKT = 1,
    TCP_BYE = 2,
    TCP_GET_REQ = 3,
    TCP_GET_REPLY = 4,
    TCP_PUT = 5,
    TCP_PUT_DONE = 6,
    TCP_ATOMIC_REQ = 7,
    TCP_ATOMIC_REPLY = 8,
    TCP_TYPE_MAX = TCP_ATOMIC_REPLY
};

#define TCP_PREFIX 12u
/** Largest frame header (ATOMIC_REQ: prefix + 48). */
#define TCP_HDR_MAX 64u

/** Largest engine packet: 64 MiB of payload plus room for the engine's
 *  own header. The engine's packets stay far below (eager_max and
 *  frag_size default to 8 KiB and 512 KiB); a larger one is refused by
 *  send and, from the wire, fails its sender. */
#define TCP_PKT_MAX ((64u << 20) + (64u << 10))

/** Extension length of a frame type (0 for PKT / BYE). */
static inline size_t tcp_ext_len(unsigned type)
{
    static const uint8_t ext[TCP_TYPE_MAX + 1] = {0, 0, 0, 32, 16, 24, 16, 48, 24};
    return type <= TCP_TYPE_MAX ? ext[type] : 0;
}

static inline void tcp_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void tcp_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void tcp_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t tcp_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t tcp_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t tcp_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/** Write a frame prefix into h[0..TCP_PREFIX). */
static inline void tcp_prefix(uint8_t *h, unsigned type, uint64_t body)
{
    h[0] = (uint8_t)type;
    h[1] = 0;
    tcp_put16(h + 2, 0);
    tcp_put64(h + 4, body);
}

/* ---- limits --------------------------------------------------------------------------- */

/** The shared receive buffer: one recv takes up to this much, so many
 *  small frames cost one system call. */
#define TCP_RBUF (256u << 10)
/** Packets up to this size are assembled in the receive buffer and
 *  delivered from it; larger ones are read straight into their own
 *  buffer (tcp_peer.big). */
#define TCP_PKT_INLINE (64u << 10)
/** A body still missing at least this much is read straight into its
 *  destination; a smaller rest comes through the receive buffer (one
 *  recv then also brings the frames behind it). */
#define TCP_DIRECT_MIN (16u << 10)
/** recv calls per peer per poll: one busy peer cannot starve the rest. */
#define TCP_RX_RECVS 4
/** Packets held behind one the engine refused (QUAY_EAGAIN): at either
 *  bound the peer is no longer read (TCP back-pressure) until the FIFO is
 *  empty. Checked before each frame, so the FIFO holds at most
 *  TCP_HOLD_FRAMES packets and TCP_HOLD_BYTES plus one packet. */
#define TCP_HOLD_BYTES (8u << 20)
#define TCP_HOLD_FRAMES 4096u
/** RDMA requests this rank keeps in flight toward one peer (its initiator
 *  depth, as verbs' max_rd_atomic): more wait unsent, in order
 *  (tcp_peer.whead), until replies come back. So an honest peer never has
 *  more replies queued at a target than this. */
#define TCP_RDMA_DEPTH 1024u
/** iovecs per sendmsg when flushing a queue (many small frames per call). */
#define TCP_IOV_BATCH 64
/** Queue items kept for reuse. */
#define TCP_ITEM_CACHE 256u
/** Addresses per rank. */
#define TCP_ADDRS_MAX 32

/* ---- state ---------------------------------------------------------------------------- */

/** A frame waiting for room in its socket. The header is copied into
 *  `hdr`; the data iovecs point at the engine's memory (a packet: until
 *  op_done), the action's buffer (PUT) or a resolved region (GET reply). */
typedef struct tcp_item {
    struct tcp_item *next;
    uint64_t token;
    uint8_t has_token; /* op_done(token, 0) once written */
    uint8_t reply;     /* answers the peer's request: counts in reply_bytes */
    uint8_t first;     /* iov[first..niov) are left */
    uint8_t niov;
    struct iovec iov[1 + QUAY_ACTION_IOV_MAX];
    uint8_t hdr[TCP_HDR_MAX];
} tcp_item;

/** Replies queued toward one peer, in bytes of queue memory (each costs
 *  one tcp_item; a GET reply's data is written from the region, no
 *  copy). Once no other reply fits, the peer has broken TCP_RDMA_DEPTH:
 *  it is no longer read until the queue is down to TCP_REPLY_LOW. An
 *  honest peer's replies always leave room for one more, so it is always
 *  read, and two ranks never both wait for the other to read. */
#define TCP_REPLY_MAX ((size_t)(TCP_RDMA_DEPTH + 1) * sizeof(tcp_item))
#define TCP_REPLY_LOW (TCP_REPLY_MAX / 2)

/** A packet kept in memory: refused by the engine (held), or being read
 *  past the receive buffer. */
typedef struct tcp_held {
    struct tcp_held *next;
    size_t len;
    size_t cap;
    uint8_t data[];
} tcp_held;

/** Peer states. DONE: said bye, then closed (normal end). FAILED: closed
 *  without a bye, reset, or sent garbage. */
enum { TCP_LIVE = 0, TCP_DONE = 1, TCP_FAILED = 2 };

/** Reader modes: a frame header next, or the rest of a body going to
 *  rx_dst (RX_DISCARD: nowhere). */
enum { RX_HDR = 0, RX_BIG, RX_GET, RX_PUT, RX_DISCARD };

/** Why a peer is not read (tcp_peer.rx_paused bits): its hold FIFO is
 *  full, or its replies fill TCP_REPLY_MAX. Set only between frames. */
enum { TCP_PAUSE_HOLD = 1, TCP_PAUSE_REPLY = 2 };

typedef struct tcp_peer {
    int fd;              /* -1 once closed (and for this rank) */
    uint8_t state;       /* TCP_LIVE, TCP_DONE, TCP_FAILED */
    uint8_t got_bye;     /* its BYE frame came in */
    uint8_t bye_told;    /* sink->peer_bye called */
    uint8_t fail_owed;   /* sink->peer_failed waits for held packets */
    uint8_t rx_paused;   /* TCP_PAUSE_* bits: not read */
    uint32_t ep_events;  /* registered with epoll (0: not registered) */
    int wr_err;          /* errno of a write that failed outside poll */
    /* out */
    tcp_item *qhead, *qtail;
    size_t reply_bytes;  /* replies in the queue (TCP_REPLY_MAX) */
    tcp_item *whead, *wtail; /* RDMA requests past TCP_RDMA_DEPTH, unsent */
    uint32_t rdma_out;   /* RDMA requests sent toward it, not yet answered */
    /* in */
    uint8_t *carry;      /* frames left from the last read: a partial one,
                            or all not taken in once paused (<= TCP_RBUF) */
    size_t carry_len, carry_cap;
    uint8_t rx_mode;     /* RX_* */
    uint8_t *rx_dst;
    uint64_t rx_left;    /* body bytes still to come */
    uint64_t rx_cookie;  /* RX_PUT / RX_DISCARD: the PUT to answer */
    int32_t rx_status;   /* RX_DISCARD: the refusal to answer with */
    uint32_t rx_op;      /* RX_GET: the action */
    tcp_held *big;       /* RX_BIG target; kept for reuse */
    tcp_held *hold_head, *hold_tail;
    size_t hold_bytes;
    uint32_t hold_n;
} tcp_peer;

typedef struct tcp_t {
    quay_transport base;
    tcp_peer *peers;
    int ep;              /* epoll: peers' sockets and the wake eventfd */
    int evfd;            /* wake */
    int woke;            /* poll saw a wake: it must not block */
    uint8_t *rbuf;       /* TCP_RBUF bytes, shared by all peers */
    uint32_t nqueued;    /* peers with a non-empty queue (busy) */
    uint32_t nheld;      /* peers with held packets */
    uint32_t nwr_err;    /* peers with wr_err to handle */
    int buf_bytes;       /* QUAY_TCP_BUF_KB * 1024, or 0 */
    uint64_t connect_ms; /* QUAY_TCP_CONNECT_MS */
    tcp_item *free_items;
    uint32_t nfree_items;
    qrt_optab optab; /* RDMA actions this rank started, awaiting their reply */
} tcp_t;

/* tcp.c */
/**
 * Send one frame to `peer`: the header hdr[0..hlen) (copied) and iov[0..
 * iovcnt) (read until written). Written now if nothing is queued and the
 * socket takes it all: 1. Else queued (the rest of it): 0; if has_token,
 * op_done(token, 0) follows once written. QUAY_EPEER (peer not live),
 * QUAY_ENOMEM. Never calls the sink (send may run outside poll).
 */
int tcp_out_frame(tcp_t *t, int32_t peer, const uint8_t *hdr, size_t hlen, const quay_iov *iov,
                  uint32_t iovcnt, int has_token, uint64_t token);
/** tcp_out_frame for a reply to the peer's request (no token): counted
 *  in its reply_bytes while queued. */
int tcp_out_reply(tcp_t *t, int32_t peer, const uint8_t *hdr, size_t hlen, const quay_iov *iov,
                  uint32_t iovcnt);
/** The frame as a queue item, not sent yet (NULL: no memory); then
 *  tcp_out_item sends or queues it (answers as tcp_out_frame; the item
 *  is taken in every case), or tcp_item_free drops it. */
tcp_item *tcp_item_frame(tcp_t *t, const uint8_t *hdr, size_t hlen, const quay_iov *iov,
                         uint32_t iovcnt, int has_token, uint64_t token);
int tcp_out_item(tcp_t *t, int32_t peer, tcp_item *it);
void tcp_item_free(tcp_t *t, tcp_item *it);
/** Register peer's socket with epoll for what it needs now: reading
 *  unless paused, writing while its queue is non-empty. */
void tcp_peer_arm(tcp_t *t, int32_t peer);
/** Close peer's connection and free its queue, answering op_done(
 *  QUAY_EPEER) for queued sends and RDMA actions toward it; state becomes
 *  `state` (DONE or FAILED). Inside poll only. */
void tcp_peer_close(tcp_t *t, int32_t peer, uint8_t state);
/** QUAY_TCP_BUF_KB in bytes into *bytes (0: unset). 0, or QUAY_EINVAL
 *  (message on stderr). */
int tcp_env_buf(int *bytes);
/** Socket options every connection gets: TCP_NODELAY, buffer sizes (the
 *  receive buffer only on sockets not yet connected: `accepted` = 0). */
void tcp_sock_opts(const tcp_t *t, int fd, int accepted);
/** Monotonic clock, milliseconds. */
uint64_t tcp_now_ms(void);

/* tcp_rx.c */
/** Read and take in what `peer` sent, up to TCP_RX_RECVS reads. Returns
 *  the frames handled. */
int tcp_rx_peer(tcp_t *t, int32_t peer);
/** Offer peer's held packets to the engine again, in order; then its
 *  owed bye or failure once none is left. Returns packets delivered. */
int tcp_rx_held(tcp_t *t, int32_t peer);
/** The reason `why` (TCP_PAUSE_*) to leave peer unread is gone: if no
 *  other is left, read what waits (carried frames, then the socket).
 *  Inside poll only. Returns the frames handled. */
int tcp_rx_resume(tcp_t *t, int32_t peer, uint8_t why);
/** `peer` broke the protocol or the connection: message on stderr
 *  ("quay rank R: tcp: peer P <why>"), connection closed, its actions
 *  finished with QUAY_EPEER, then sink->peer_failed (after any packets
 *  still held from it). After its bye, no failure is reported. */
void tcp_peer_fail(tcp_t *t, int32_t peer, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/** Free the reader state of every peer. */
void tcp_rx_free(tcp_t *t);

/* tcp_rdma.c */
/** Start an RDMA action (quay_transport_ops.rdma). */
int tcp_rdma_start(tcp_t *t, const quay_action *a);
/** Target side of a GET_REQ / ATOMIC_REQ: execute and queue the reply.
 *  0, or QUAY_ENOMEM / QUAY_EPEER (no reply could be queued). */
int tcp_rdma_serve_get(tcp_t *t, int32_t peer, uint64_t cookie, uint64_t key, uint64_t offset,
                       uint64_t len);
int tcp_rdma_serve_atomic(tcp_t *t, int32_t peer, uint64_t cookie, uint64_t key,
                          uint64_t offset, uint64_t operand, uint64_t compare, uint32_t op);
/** Queue a PUT_DONE (the target finished or refused a PUT). */
int tcp_rdma_put_done(tcp_t *t, int32_t peer, uint64_t cookie, int32_t status);
/** The action a reply of frame type `type` from `peer` names by
 *  `cookie`: its index, or -1 (no such action, or one whose request
 *  still waits unsent: the peer is broken). */
int64_t tcp_rdma_find(tcp_t *t, int32_t peer, uint64_t cookie, unsigned type);
/** Finish action `idx` with `status` (op_done); a request waiting for
 *  the depth it freed is sent. */
void tcp_rdma_finish(tcp_t *t, uint32_t idx, int status);
/** Finish every action toward `peer` with QUAY_EPEER (waiting ones too). */
void tcp_rdma_fail_peer(tcp_t *t, int32_t peer);
void tcp_rdma_free(tcp_t *t);

/* tcp_conn.c */
/** Listen, publish, fence, then connect to the lower ranks and accept the
 *  higher ones (one loop, deadline t->connect_ms); peers[r].fd set for
 *  every r. Closes the listener. 0, QUAY_EINVAL, QUAY_EPEER, QUAY_ENOMEM. */
int tcp_connect_all(tcp_t *t, const qrt_tcp_dir *dir);
/** Parse "a.b.c.d:port,..." strictly into out[0..max): the count, or -1. */
int tcp_parse_addrs(const char *s, size_t len, struct sockaddr_in *out, int max);

#endif /* QUAY_TCP_H */
