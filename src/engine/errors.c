/*
 * errors.c — error strings and the names of request states (packet types
 * are named by their registry: packets.c).
 */
#include <quay/quay.h>

const char *quay_strerror(int code)
{
    switch (code) {
    case QUAY_OK: return "success";
    case QUAY_EINVAL: return "invalid argument";
    case QUAY_ERANK: return "rank out of range";
    case QUAY_ETAG: return "invalid tag";
    case QUAY_ECOMM: return "invalid communicator or context id";
    case QUAY_EAGAIN: return "resource temporarily exhausted, retry after progress";
    case QUAY_ETRUNCATE: return "message truncated";
    case QUAY_ECANCELLED: return "request cancelled";
    case QUAY_EPEER: return "peer failed";
    case QUAY_ENOTPOSTED: return "ready send found no posted receive";
    case QUAY_EPROTO: return "malformed packet";
    case QUAY_ESTATE: return "packet not valid in the current state";
    case QUAY_ENOBUFS: return "attached buffer too small";
    case QUAY_EBUSY: return "object still in use";
    case QUAY_EVERSION: return "unsupported version";
    case QUAY_ENOTSUP: return "not supported";
    case QUAY_ECORRUPT: return "saved context damaged";
    case QUAY_EFOREIGN: return "saved context belongs to another engine";
    case QUAY_ENOMEM: return "out of memory";
    case QUAY_EINTERNAL: return "internal invariant violated";
    default: return "unknown error";
    }
}

int quay_err_is_fatal(int code) { return code <= QUAY_ERR_FATAL; }

const char *quay_state_name(int state)
{
    static const char *const names[QUAY_RS_COUNT_] = {
        [QUAY_RS_FREE] = "FREE",
        [QUAY_RS_SEND_EAGER] = "SEND_EAGER",
        [QUAY_RS_SEND_WAIT_ACK] = "SEND_WAIT_ACK",
        [QUAY_RS_SEND_RTS] = "SEND_RTS",
        [QUAY_RS_SEND_DATA] = "SEND_DATA",
        [QUAY_RS_SEND_PUT] = "SEND_PUT",
        [QUAY_RS_SEND_WRITE] = "SEND_WRITE",
        [QUAY_RS_SEND_CANCEL] = "SEND_CANCEL",
        [QUAY_RS_SEND_ANY] = "SEND_ANY",
        [QUAY_RS_SEND_QUEUED] = "SEND_QUEUED",
        [QUAY_RS_RECV_POSTED] = "RECV_POSTED",
        [QUAY_RS_RECV_RNDV] = "RECV_RNDV",
        [QUAY_RS_RECV_GET] = "RECV_GET",
        [QUAY_RS_RECV_PUT] = "RECV_PUT",
        [QUAY_RS_RECV_RTR] = "RECV_RTR",
        [QUAY_RS_RECV_ANY] = "RECV_ANY",
        [QUAY_RS_RDMA] = "RDMA",
        [QUAY_RS_COLL] = "COLL",
        [QUAY_RS_DONE] = "DONE",
    };
    if (state < 0 || state >= QUAY_RS_COUNT_)
        return "?";
    return names[state];
}
