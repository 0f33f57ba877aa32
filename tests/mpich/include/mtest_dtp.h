/*
 * mtest_dtp.h — quay's stand-in for the argument iteration of MPICH's
 * test harness (struct dtp_args), for the collective tests that use it
 * only to pick counts and memory kinds (coll/allred2, coll/reduce).
 * Written for quay; no MPICH text.
 *
 * Not here: the datatype pools (DTP_pool_s, DTP_obj_s and the MTest_dtp_*
 * functions), which build derived datatypes the binding does not have; a
 * test that uses them fails to build naming them.
 *
 * Options read: -count=N (MTEST_COLL_COUNT), -counts=a,b,... (one round
 * each), -repeat=N, -memtype=, -evenmemtype=, -oddmemtype=. Every memory
 * kind is host memory here, so -memtype=all is one round, not one a kind.
 */
#ifndef QUAY_MPICH_MTEST_DTP_H
#define QUAY_MPICH_MTEST_DTP_H

#include "mpitest.h"

typedef enum {
    MTEST_COLL_NOCOUNT, /* the test picks its counts */
    MTEST_COLL_COUNT,   /* dtp_args.count each round */
} mtest_dtp_arg_type_e;

struct dtp_args {
    mtest_dtp_arg_type_e dtp_arg_type;
    int count;
    mtest_mem_type_e memtype;
    union {
        struct {
            mtest_mem_type_e oddmem, evenmem;
        } coll;
    } u;
    int *counts, num_counts, num_repeats; /* counts: NULL unless -counts= */
    int idx, num_total_tests;
};

static inline void dtp_args_init_ArgList(struct dtp_args *a, mtest_dtp_arg_type_e kind,
                                         MTestArgList *list)
{
    memset(a, 0, sizeof *a);
    a->dtp_arg_type = kind;
    a->memtype = MTestArgListGetMemType(list, "memtype");
    a->u.coll.evenmem = MTestArgListGetMemType(list, "evenmemtype");
    a->u.coll.oddmem = MTestArgListGetMemType(list, "oddmemtype");
    const char *counts = MTestArgListSearch(list, "counts");
    if (counts)
        a->counts = MTestParseIntList(counts, &a->num_counts);
    else if (kind == MTEST_COLL_COUNT)
        a->count = (int)MTestArgListGetLong(list, "count");
    a->num_repeats = MTestArgListGetInt_with_default(list, "repeat", 1);
    a->num_total_tests = (a->counts ? a->num_counts : 1) * a->num_repeats;
}

static inline void dtp_args_init(struct dtp_args *a, mtest_dtp_arg_type_e kind, int argc,
                                 char *argv[])
{
    MTestArgList *list = MTestArgListCreate(argc, argv);
    dtp_args_init_ArgList(a, kind, list);
    MTestArgListDestroy(list);
}

static inline void dtp_args_init_arg(struct dtp_args *a, mtest_dtp_arg_type_e kind,
                                     const char *arg)
{
    MTestArgList *list = MTestArgListCreate_arg(arg);
    dtp_args_init_ArgList(a, kind, list);
    MTestArgListDestroy(list);
}

/* The next round's count and memory kinds; false after the last. */
static inline bool dtp_args_get_next(struct dtp_args *a)
{
    if (a->idx >= a->num_total_tests)
        return false;
    if (a->counts)
        a->count = a->counts[a->idx / a->num_repeats];
    a->idx++;
    return true;
}

static inline void dtp_args_finalize(struct dtp_args *a)
{
    free(a->counts);
    a->counts = NULL;
}

#endif /* QUAY_MPICH_MTEST_DTP_H */
