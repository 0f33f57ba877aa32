/*
 * test_rt_env.c — the runtime's knobs from the environment (adapters/rt/
 * env.c): integers in a range, and collective algorithms by name. A value
 * that is refused leaves the output as it was.
 */
#include "harness.h"

#include <stdint.h>
#include <stdlib.h>

#include "qrt_env.h"

#include <quay/quay_coll.h>

#define VAR "QUAY_TEST_KNOB"

static void t_u64(void)
{
    uint64_t v = 77;
    unsetenv(VAR);
    is_int(qrt_env_u64(VAR, 0, 100, &v), 1);
    setenv(VAR, "", 1);
    is_int(qrt_env_u64(VAR, 0, 100, &v), 1);
    is_int((int)v, 77);
    setenv(VAR, "42", 1);
    is_int(qrt_env_u64(VAR, 0, 100, &v), 0);
    is_int((int)v, 42);
    setenv(VAR, "0x10", 1);
    is_int(qrt_env_u64(VAR, 0, 100, &v), 0);
    is_int((int)v, 16);
    v = 77;
    const char *bad[] = {"101", "-1", "12abc", "abc", " 5", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(VAR, bad[i], 1);
        is_int(qrt_env_u64(VAR, 0, 100, &v), -1);
        is_int((int)v, 77);
    }
    setenv(VAR, "3", 1);
    is_int(qrt_env_u64(VAR, 5, 100, &v), -1); /* below the range */
    unsetenv(VAR);
}

static void t_coll_alg(void)
{
    uint32_t v = 99;
    unsetenv(VAR);
    is_int(qrt_env_coll_alg(VAR, QUAY_OFF_BARRIER, &v), 1);
    is_int((int)v, 99);
    /* Accepted (want: the id), then refused (want: -1; v as it was): a
     * name of another operation's algorithm, a wrong case, a number, an
     * operation that does not exist. */
    const struct {
        const char *name;
        uint32_t kind;
        int want;
    } cases[] = {{"auto", QUAY_OFF_BCAST, QUAY_COLL_AUTO},
                 {"tree", QUAY_OFF_BARRIER, QUAY_BARRIER_TREE},
                 {"optimal_tree", QUAY_OFF_BCAST, QUAY_BCAST_OPTIMAL_TREE},
                 {"ring", QUAY_OFF_ALLREDUCE, QUAY_ALLREDUCE_RING},
                 {"ring", QUAY_OFF_BARRIER, -1},
                 {"Tree", QUAY_OFF_BARRIER, -1},
                 {"3", QUAY_OFF_BARRIER, -1},
                 {"binomial", 99, -1},
                 {"tree ", QUAY_OFF_BARRIER, -1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        v = 99;
        setenv(VAR, cases[i].name, 1);
        if (cases[i].want < 0) {
            is_int(qrt_env_coll_alg(VAR, cases[i].kind, &v), -1);
            is_int((int)v, 99);
        } else {
            is_int(qrt_env_coll_alg(VAR, cases[i].kind, &v), 0);
            is_int((int)v, cases[i].want);
        }
    }
    unsetenv(VAR);
}

int main(void)
{
    subtest("integers", t_u64);
    subtest("collective algorithms by name", t_coll_alg);
    return done_testing();
}
