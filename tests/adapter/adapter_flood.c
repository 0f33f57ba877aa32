/*
 * adapter_flood — rank 0 sends rank 1 far more small messages than rank
 * 1's engine has room for while rank 1 progresses without receiving: its
 * engine refuses packets (QUAY_EAGAIN), so the transport must hold one
 * and stop reading that peer until the engine takes it (the sink's
 * contract, <quay/quay_adapter.h>). Every message must still arrive,
 * once and in order, and the refusals must have happened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "e2e.h"

#define MSGS 3000
#define LEN 512
#define WINDOW 256

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int main(void)
{
    static uint8_t buf[WINDOW][LEN];
    quay_req *req[WINDOW];
    quay_config cfg;
    e2e t = {0};
    quay_config_default(&cfg);
    cfg.max_unexpected = 32;
    cfg.unexpected_bytes_max = 16u << 10;
    E2E_OK(qrt_init(&cfg, &t.rt));
    t.e = qrt_engine(t.rt);
    t.world = qrt_world(t.rt);
    t.rank = qrt_rank(t.rt);
    t.size = qrt_size(t.rt);
    E2E_CHECK(t.size == 2);

    if (t.rank == 0) {
        for (int base = 0; base < MSGS; base += WINDOW) {
            int n = MSGS - base < WINDOW ? MSGS - base : WINDOW;
            for (int i = 0; i < n; i++) {
                e2e_fill(buf[i], LEN, (uint64_t)(base + i));
                E2E_OK(quay_isend(t.e, t.world, buf[i], LEN, 1, (base + i) % 100,
                                  QUAY_SEND_STANDARD, &req[i]));
            }
            for (int i = 0; i < n; i++)
                E2E_CHECK(e2e_wait(&t, req[i]).error == 0);
        }
    } else {
        /* Take packets in, but post nothing: the engine fills up. */
        uint64_t until = now_ms() + 300;
        while (now_ms() < until)
            E2E_CHECK(qrt_progress(t.rt, 10 * 1000 * 1000) >= 0);
        for (int i = 0; i < MSGS; i++) {
            quay_status st = e2e_recv(&t, buf[0], LEN, 0, i % 100);
            E2E_CHECK(st.error == 0 && st.count == LEN);
            if (e2e_verify(buf[0], LEN, (uint64_t)i) >= 0)
                e2e_fail(__FILE__, __LINE__, "message %d arrived wrong or out of order", i);
        }
        quay_stats s;
        quay_engine_stats(t.e, &s);
        printf("rank 1: %d messages in order; %llu packets refused and offered again\n", MSGS,
               (unsigned long long)s.pkts_deferred);
        E2E_CHECK(s.pkts_deferred > 0);
    }
    return e2e_finish(&t);
}
