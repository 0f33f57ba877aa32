/*
 * e2e_wildcard — every other rank sends a stream of numbered messages to
 * rank 0, eager and rendezvous sizes mixed, tags cycling; rank 0 takes
 * them with wildcard receives and checks MPI's non-overtaking rule: from
 * one sender, messages that match the same receives arrive in send order.
 *
 *   phase 1  all receives ANY_SOURCE / ANY_TAG, posted at once before the
 *            messages come: in post order, each sender's numbers rise
 *   phase 2  ANY_SOURCE with tag 2 first, then ANY_TAG for the rest: per
 *            (sender, tag) the numbers rise, nothing is lost or doubled
 *   phase 3  a specific source with ANY_TAG, one receive at a time
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define K 40         /* messages per sender per phase */
#define BIG 20000    /* rendezvous size */
#define NTAGS 3

typedef struct msg {
    int32_t sender;
    int32_t seq;
} msg;

static size_t size_of(int32_t seq)
{
    return seq % 7 == 3 ? BIG : sizeof(msg) + (size_t)(seq % 5) * 100;
}

static void send_stream(e2e *t, uint8_t *buf)
{
    quay_req *r[K];
    for (int32_t i = 0; i < K; i++) {
        msg m = {t->rank, i};
        uint8_t *b = buf + (size_t)i * BIG;
        size_t n = size_of(i);
        e2e_fill(b, n, (uint64_t)(t->rank * 1000 + i));
        memcpy(b, &m, sizeof m);
        E2E_OK(quay_isend(t->e, t->world, b, n, 0, i % NTAGS, QUAY_SEND_STANDARD, &r[i]));
    }
    for (int i = 0; i < K; i++)
        E2E_CHECK(e2e_wait(t, r[i]).error == 0);
}

/* Check one received message; returns its sequence number. */
static int32_t check_msg(const uint8_t *b, const quay_status *st)
{
    msg m;
    E2E_CHECK(st->error == 0 && st->count >= sizeof m);
    memcpy(&m, b, sizeof m);
    E2E_CHECK(m.sender == st->source && m.seq >= 0 && m.seq < K);
    E2E_CHECK(st->tag == m.seq % NTAGS && st->count == size_of(m.seq));
    /* The payload after the header is the sender's pattern. */
    uint8_t ref[BIG];
    e2e_fill(ref, st->count, (uint64_t)(m.sender * 1000 + m.seq));
    E2E_CHECK(memcmp(b + sizeof m, ref + sizeof m, st->count - sizeof m) == 0);
    return m.seq;
}

static void phase1(e2e *t, uint8_t *buf, int32_t *last)
{
    int total = (t->size - 1) * K;
    quay_req **r = malloc((size_t)total * sizeof *r);
    E2E_CHECK(r != NULL);
    for (int i = 0; i < total; i++)
        E2E_OK(quay_irecv(t->e, t->world, buf + (size_t)i * BIG, BIG, QUAY_ANY_SOURCE,
                          QUAY_ANY_TAG, &r[i]));
    e2e_barrier(t); /* receives posted: the senders may go */
    for (int i = 0; i < total; i++) {
        quay_status st = e2e_wait(t, r[i]);
        int32_t seq = check_msg(buf + (size_t)i * BIG, &st);
        E2E_CHECK(seq == last[st.source] + 1);
        last[st.source] = seq;
    }
    free(r);
}

static void phase2(e2e *t, uint8_t *buf, int32_t *last)
{
    int total = (t->size - 1) * K, got = 0;
    int32_t (*lt)[NTAGS] = calloc((size_t)t->size, sizeof *lt);
    E2E_CHECK(lt != NULL);
    for (int32_t s = 0; s < t->size; s++)
        for (int k = 0; k < NTAGS; k++)
            lt[s][k] = -1;
    e2e_barrier(t); /* the senders go; messages arrive unexpected */
    int tag2 = (t->size - 1) * ((K + NTAGS - 1 - 2) / NTAGS);
    for (int pass = 0; pass < 2; pass++) {
        int n = pass == 0 ? tag2 : total - tag2;
        for (int i = 0; i < n; i++, got++) {
            quay_status st = e2e_recv(t, buf, BIG, QUAY_ANY_SOURCE, pass == 0 ? 2 : QUAY_ANY_TAG);
            int32_t seq = check_msg(buf, &st);
            E2E_CHECK(pass == 1 || st.tag == 2);
            E2E_CHECK(seq > lt[st.source][st.tag]);
            lt[st.source][st.tag] = seq;
            last[st.source]++;
        }
    }
    E2E_CHECK(got == total);
    free(lt);
}

static void phase3(e2e *t, uint8_t *buf)
{
    e2e_barrier(t);
    for (int32_t s = t->size - 1; s >= 1; s--) {
        for (int32_t i = 0; i < K; i++) {
            quay_status st = e2e_recv(t, buf, BIG, s, QUAY_ANY_TAG);
            E2E_CHECK(st.source == s && check_msg(buf, &st) == i);
        }
    }
}

int main(void)
{
    e2e t;
    e2e_init(&t);
    E2E_CHECK(t.size >= 2);
    size_t slots = t.rank == 0 ? (size_t)(t.size - 1) * K : K;
    uint8_t *buf = malloc(slots * BIG);
    int32_t *last = calloc((size_t)t.size, sizeof *last);
    E2E_CHECK(buf != NULL && last != NULL);
    for (int32_t s = 0; s < t.size; s++)
        last[s] = -1;
    if (t.rank == 0) {
        phase1(&t, buf, last);
        phase2(&t, buf, last);
        phase3(&t, buf);
        for (int32_t s = 1; s < t.size; s++)
            E2E_CHECK(last[s] == 2 * K - 1); /* phases 1 and 2 took all */
    } else {
        for (int p = 0; p < 3; p++) {
            e2e_barrier(&t);
            send_stream(&t, buf);
        }
    }
    e2e_barrier(&t);
    printf("rank %d: wildcard done\n", (int)t.rank);
    free(last);
    free(buf);
    return e2e_finish(&t);
}
