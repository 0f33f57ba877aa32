/*
 * pmi_fakerun — run a PMI-1 program under the fake process manager
 * (fake_pmi.h), like `mpiexec -n N prog` would under Hydra.
 *
 *   pmi_fakerun -n N [--port] [--new-style] [--dribble] [--verbose]
 *               [--timeout S] [--expect-abort CODE] [--] prog [args...]
 *
 * Exit status 0 when the job went as expected and the server saw no
 * protocol violation: every rank exited 0 after finalize, or, with
 * --expect-abort, some rank aborted with exitcode CODE. 1 otherwise, 2
 * for a usage error.
 */
#include "fake_pmi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    fprintf(stderr, "usage: pmi_fakerun -n N [--port] [--new-style] [--dribble] [--verbose]\n"
                    "                   [--timeout S] [--expect-abort CODE] [--] prog [args...]\n");
}

static int num(const char *s, long min, long max, int *out)
{
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : 0;
    if (s == NULL || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    fps_opts o;
    memset(&o, 0, sizeof o);
    int expect_abort = 0, abort_code = 0;
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (strcmp(a, "-n") == 0) {
            if (num(i + 1 < argc ? argv[++i] : NULL, 1, FPS_MAX_PROCS, &o.nprocs) != 0)
                goto bad;
        } else if (strcmp(a, "--timeout") == 0) {
            if (num(i + 1 < argc ? argv[++i] : NULL, 1, 3600, &o.timeout_s) != 0)
                goto bad;
        } else if (strcmp(a, "--expect-abort") == 0) {
            if (num(i + 1 < argc ? argv[++i] : NULL, -1000000, 1000000, &abort_code) != 0)
                goto bad;
            expect_abort = 1;
        } else if (strcmp(a, "--port") == 0) {
            o.use_port = 1;
        } else if (strcmp(a, "--new-style") == 0) {
            o.new_style = 1;
        } else if (strcmp(a, "--dribble") == 0) {
            o.dribble = 1;
        } else if (strcmp(a, "--verbose") == 0) {
            o.verbose = 1;
        } else {
            goto bad;
        }
    }
    if (o.nprocs < 1 || i >= argc)
        goto bad;

    fps_result res;
    if (fps_run(&o, argv + i, &res) != 0)
        return 1;
    int ok = res.violations == 0 && !res.timed_out;
    if (expect_abort) {
        if (!res.aborted || res.abort_code != abort_code) {
            fprintf(stderr, "pmi_fakerun: expected an abort with exitcode %d, got %s%d\n",
                    abort_code, res.aborted ? "" : "none; ", res.abort_code);
            ok = 0;
        }
    } else {
        if (res.aborted) {
            fprintf(stderr, "pmi_fakerun: unexpected abort (exitcode %d)\n", res.abort_code);
            ok = 0;
        }
        for (int r = 0; r < o.nprocs; r++) {
            if (res.status[r] != 0) {
                fprintf(stderr, "pmi_fakerun: rank %d exited with status %d\n", r,
                        res.status[r]);
                ok = 0;
            }
        }
        if (res.finalized != o.nprocs) {
            fprintf(stderr, "pmi_fakerun: %d of %d ranks finalized\n", res.finalized, o.nprocs);
            ok = 0;
        }
    }
    if (res.violations)
        fprintf(stderr, "pmi_fakerun: %d protocol violation(s)\n", res.violations);
    if (res.timed_out)
        fprintf(stderr, "pmi_fakerun: timed out\n");
    printf("pmi_fakerun: %d rank(s)%s%s%s: %s\n", o.nprocs, o.use_port ? ", PMI_PORT" : ", PMI_FD",
           o.new_style ? ", Hydra 4.1+ answers" : ", Hydra 4.0 answers",
           o.dribble ? ", dribbled" : "", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;

bad:
    usage();
    return 2;
}
