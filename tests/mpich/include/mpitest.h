/*
 * mpitest.h — quay's own stand-in for the header of MPICH's test harness
 * ("mtest"), so that the programs of MPICH's test/mpi build unmodified
 * against quay's MPI binding (tests/mpich/run.sh). Written for quay from
 * the interface the tests use; no MPICH text. The functions are in
 * tests/mpich/mtest.c, the main() of tests that define run() in
 * tests/mpich/run_main.c; mpicolltest.h and mtest_dtp.h (beside this
 * file) stand in for MPICH's headers of those names.
 *
 * Only what the binding's subset can back is here: there are no
 * intercommunicators, windows, threads beyond FUNNELED or GPU memory, so
 * the generators offer none of those (see mtest.c).
 */
#ifndef QUAY_MPICH_MPITEST_H
#define QUAY_MPICH_MPITEST_H

#include "mpitestconf.h"
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Tests written as `int run(const char *arg)` get main() from
 * run_main.c; MULTI_TESTS (MPICH's all-in-one binary) is not supported. */
#ifndef MULTI_TESTS
int run(const char *arg);
#endif
typedef int (*run_fn)(const char *arg);
struct mpitest {
    const char *name;
    run_fn run;
};

/* Start and end: MTest_Finalize sums errs over MPI_COMM_WORLD and rank 0
 * prints " No Errors" or " Found N errors" (what MPICH's runtests reads). */
void MTest_Init(int *argc, char ***argv);
void MTest_Init_thread(int *argc, char ***argv, int required, int *provided);
void MTest_Finalize(int errs);
int MTestReturnValue(int errs);
void MTestPrintError(int errcode);
void MTestPrintErrorMsg(const char msg[], int errcode);
void MTestPrintfMsg(int level, const char format[], ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void MTestError(const char msg[]);
int MTestGetStressLevel(void);
void MTestSleep(int seconds);
void MTestGetDbgInfo(int *dbgflag, int *verbose);

/* Communicator generators: call until they return 0 (then *comm is
 * MPI_COMM_NULL and the next call starts over). A rank outside the
 * communicator offered gets MPI_COMM_NULL with a non-zero return. */
int MTestGetIntracomm(MPI_Comm *comm, int min_size);
int MTestGetIntracommGeneral(MPI_Comm *comm, int min_size, int allow_smaller);
int MTestGetIntercomm(MPI_Comm *comm, int *is_left_group, int min_size);
int MTestGetComm(MPI_Comm *comm, int min_size);
const char *MTestGetIntracommName(void);
const char *MTestGetIntercommName(void);
int MTestTestIntercomm(MPI_Comm comm);
int MTestTestIntracomm(MPI_Comm comm);
int MTestTestComm(MPI_Comm comm);
void MTestFreeComm(MPI_Comm *comm);
void MTestCommRandomize(void);
int MTestSpawnPossible(int *can_spawn);
int MTestIsBasicDtype(MPI_Datatype type);

/* Memory kinds: only host memory exists here; the others map to it. */
typedef enum {
    MTEST_MEM_TYPE__UNSET,
    MTEST_MEM_TYPE__UNREGISTERED_HOST,
    MTEST_MEM_TYPE__REGISTERED_HOST,
    MTEST_MEM_TYPE__DEVICE,
    MTEST_MEM_TYPE__SHARED,
    MTEST_MEM_TYPE__RANDOM,
    MTEST_MEM_TYPE__ALL,
} mtest_mem_type_e;

MPI_Aint MTestDefaultMaxBufferSize(void);
void MTestAlloc(size_t size, mtest_mem_type_e type, void **hostbuf, void **devicebuf,
                bool is_calloc, int device);
#define MTestMalloc(size, type, hostbuf, devicebuf, device)                                \
    MTestAlloc(size, type, hostbuf, devicebuf, false, device)
#define MTestCalloc(size, type, hostbuf, devicebuf, device)                                \
    MTestAlloc(size, type, hostbuf, devicebuf, true, device)
void MTestFree(mtest_mem_type_e type, void *hostbuf, void *devicebuf);
void MTestCopyContent(const void *sbuf, void *dbuf, size_t size, mtest_mem_type_e type);
mtest_mem_type_e MTest_memtype_random(void);
const char *MTest_memtype_name(mtest_mem_type_e memtype);
void MTest_init_visibility_gpu(void);
void MTest_finalize_gpu(void);

/* Options of the form -key=value (-key alone means -key=1). */
typedef void MTestArgList;
MTestArgList *MTestArgListCreate(int argc, char *argv[]);
MTestArgList *MTestArgListCreate_arg(const char *arg);
char *MTestArgListSearch(MTestArgList *list, const char *key);
char *MTestArgListGetString(MTestArgList *list, const char *key);
const char *MTestArgListGetString_with_default(MTestArgList *list, const char *key,
                                               const char *dflt);
int MTestArgListGetInt(MTestArgList *list, const char *key);
int MTestArgListGetInt_with_default(MTestArgList *list, const char *key, int dflt);
long MTestArgListGetLong(MTestArgList *list, const char *key);
long MTestArgListGetLong_with_default(MTestArgList *list, const char *key, long dflt);
mtest_mem_type_e MTestArgListGetMemType(MTestArgList *list, const char *key);
void MTestArgListDestroy(MTestArgList *list);
int *MTestParseIntList(const char *str, int *num);
char **MTestParseStringList(const char *str, int *num);
void MTestFreeStringList(char **strs, int num);

/* Version gates the tests use; overridable with -DMTEST_MPI_VERSION=... */
#ifndef MTEST_MPI_VERSION
#define MTEST_MPI_VERSION MPI_VERSION
#endif
#ifndef MTEST_MPI_SUBVERSION
#define MTEST_MPI_SUBVERSION MPI_SUBVERSION
#endif
#define MTEST_HAVE_MIN_MPI_VERSION(major_, minor_)                                         \
    (MTEST_MPI_VERSION > (major_) ||                                                       \
     (MTEST_MPI_VERSION == (major_) && MTEST_MPI_SUBVERSION >= (minor_)))

#define MTEST_VG_MEM_INIT(addr_, size_) memset((addr_), 0, (size_))

/* Errors in a receive's status against what was expected (count only for
 * predefined types; MPI_ANY_SOURCE / MPI_ANY_TAG skip that check). */
static inline int MTestCheckStatus(MPI_Status *st, MPI_Datatype type, int count, int source,
                                   int tag, bool verbose)
{
    int errs = 0;
    if (MTestIsBasicDtype(type)) {
        int got;
        MPI_Get_count(st, type, &got);
        if (got != count) {
            errs++;
            if (verbose)
                printf("status: count %d, expected %d\n", got, count);
        }
    }
    if (source != MPI_ANY_SOURCE && st->MPI_SOURCE != source) {
        errs++;
        if (verbose)
            printf("status: source %d, expected %d\n", st->MPI_SOURCE, source);
    }
    if (tag != MPI_ANY_TAG && st->MPI_TAG != tag) {
        errs++;
        if (verbose)
            printf("status: tag %d, expected %d\n", st->MPI_TAG, tag);
    }
    return errs;
}

#endif /* QUAY_MPICH_MPITEST_H */
