/*
 * mtest.c — quay's own stand-in for MPICH's test harness library (mtest),
 * the part that the programs of MPICH's test/mpi call, implemented with
 * the MPI binding's subset only. Written for quay from the interface in
 * include/mpitest.h; no MPICH code. Built and linked by tests/mpich/run.sh.
 *
 * Where the binding has no backing (intercommunicators, spawn, GPU
 * memory), the harness offers none: the intercommunicator generator is
 * empty and every memory kind is host memory. A test that would iterate
 * over those sees an empty set, as it would under an MPI without them.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, sleep */

#include "mpitest.h"

#include <ctype.h>
#include <stdarg.h>

static int verbose;       /* MPITEST_VERBOSE: level for MTestPrintfMsg */
static int dbgflag;       /* MPITEST_DEBUG set */
static int stress;        /* MPITEST_STRESS set */
static int return_status = 1; /* MPITEST_RETURN_WITH_CODE: errors in exit status */

/* ---- start and end ---------------------------------------------------------- */

/* A non-negative integer from the environment, or dflt. */
static int env_level(const char *name, int dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    long v = strtol(s, &end, 0);
    if (end == s || v < 0 || v > 1000) {
        fprintf(stderr, "mtest: %s=%s ignored (not a level)\n", name, s);
        return dflt;
    }
    return (int)v;
}

static int is_word(const char *s, const char *a, const char *b)
{
    return strcmp(s, a) == 0 || strcmp(s, b) == 0;
}

void MTest_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int flag = 0;
    MPI_Initialized(&flag);
    if (!flag)
        MPI_Init_thread(argc, argv, required, provided);
    else
        MPI_Query_thread(provided);

    dbgflag = getenv("MPITEST_DEBUG") != NULL;
    stress = getenv("MPITEST_STRESS") != NULL;
    verbose = env_level("MPITEST_VERBOSE", 0);
    const char *rc = getenv("MPITEST_RETURN_WITH_CODE");
    if (rc && (is_word(rc, "yes", "YES") || is_word(rc, "true", "TRUE")))
        return_status = 1;
    else if (rc && (is_word(rc, "no", "NO") || is_word(rc, "false", "FALSE")))
        return_status = 0;
}

void MTest_Init(int *argc, char ***argv)
{
    /* The suite lets the environment pick the thread level a test asks
     * for; the binding grants at most FUNNELED, which the tests accept. */
    static const struct {
        const char *up, *low;
        int level;
    } levels[] = {
        { "SINGLE", "single", MPI_THREAD_SINGLE },
        { "FUNNELED", "funneled", MPI_THREAD_FUNNELED },
        { "SERIALIZED", "serialized", MPI_THREAD_SERIALIZED },
        { "MULTIPLE", "multiple", MPI_THREAD_MULTIPLE },
    };
    int required = MPI_THREAD_SINGLE, provided;
    const char *s = getenv("MTEST_THREADLEVEL_DEFAULT");
    if (!s)
        s = getenv("MPITEST_THREADLEVEL_DEFAULT");
    if (s && *s) {
        size_t i, n = sizeof levels / sizeof levels[0];
        for (i = 0; i < n && !is_word(s, levels[i].up, levels[i].low); i++)
            ;
        if (i == n) {
            fprintf(stderr, "mtest: unknown thread level %s\n", s);
            exit(1); /* before MPI_Init: no MPI_Abort yet */
        }
        required = levels[i].level;
    }
    MTest_Init_thread(argc, argv, required, &provided);
}

static void randomize_cleanup(void);

void MTest_Finalize(int errs)
{
    int rank = 0, total = 0, rc;
    rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rc != MPI_SUCCESS)
        MTestPrintError(rc);
    rc = MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        MTestPrintError(rc);
    /* These two lines are what MPICH's runtests looks for. */
    if (rank == 0) {
        if (total)
            printf(" Found %d errors\n", total);
        else
            printf(" No Errors\n");
        fflush(stdout);
    }
    randomize_cleanup();
    MPI_Finalize();
}

int MTestReturnValue(int errs)
{
    return return_status && errs ? 1 : 0;
}

int MTestGetStressLevel(void)
{
    return stress;
}

void MTestGetDbgInfo(int *dbg, int *verb)
{
    *dbg = dbgflag;
    *verb = verbose;
}

void MTestSleep(int seconds)
{
    sleep((unsigned)seconds);
}

/* ---- messages --------------------------------------------------------------- */

void MTestPrintErrorMsg(const char msg[], int errcode)
{
    char text[MPI_MAX_ERROR_STRING];
    int cls = 0, len = 0;
    MPI_Error_class(errcode, &cls);
    MPI_Error_string(errcode, text, &len);
    if (msg)
        printf("%s: Error class %d (%s)\n", msg, cls, text);
    else
        printf("Error class %d (%s)\n", cls, text);
    fflush(stdout);
}

void MTestPrintError(int errcode)
{
    MTestPrintErrorMsg(NULL, errcode);
}

void MTestPrintfMsg(int level, const char format[], ...)
{
    if (verbose == 0 || level > verbose)
        return;
    va_list ap;
    va_start(ap, format);
    vprintf(format, ap);
    va_end(ap);
    fflush(stdout);
}

void MTestError(const char msg[])
{
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- communicators ---------------------------------------------------------- */

/* The harness checks its own calls: a test may have set MPI_ERRORS_RETURN. */
static void check(int rc)
{
    if (rc != MPI_SUCCESS)
        MTestPrintError(rc);
}

static int world_rank(void)
{
    int r = 0;
    check(MPI_Comm_rank(MPI_COMM_WORLD, &r));
    return r;
}

static int world_size(void)
{
    int n = 1;
    check(MPI_Comm_size(MPI_COMM_WORLD, &n));
    return n;
}

/* MPI_Comm_split of MPI_COMM_WORLD, or MPI_COMM_NULL where color is
 * MPI_UNDEFINED. */
static MPI_Comm split_world(int color, int key)
{
    MPI_Comm c = MPI_COMM_NULL;
    check(MPI_Comm_split(MPI_COMM_WORLD, color, key, &c));
    return c;
}

static int intra_next;               /* candidate the next call starts at */
static const char *intra_name = "";

/* Candidate idx, made on every rank (collective over MPI_COMM_WORLD):
 * the communicator or MPI_COMM_NULL where this rank is not in it. Returns
 * 0 past the last one. Those smaller than MPI_COMM_WORLD come only with
 * allow_smaller, except MPI_COMM_SELF, which min_size filters. */
static int intra_candidate(int idx, int allow_smaller, MPI_Comm *comm)
{
    int rank = world_rank(), size = world_size();
    *comm = MPI_COMM_NULL;
    switch (idx) {
    case 0:
        *comm = MPI_COMM_WORLD;
        intra_name = "MPI_COMM_WORLD";
        return 1;
    case 1:
        check(MPI_Comm_dup(MPI_COMM_WORLD, comm));
        intra_name = "Dup of MPI_COMM_WORLD";
        return 1;
    case 2:
        *comm = split_world(0, size - rank);
        intra_name = "MPI_COMM_WORLD in reverse rank order";
        return 1;
    case 3:
        *comm = MPI_COMM_SELF;
        intra_name = "MPI_COMM_SELF";
        return 1;
    }
    if (!allow_smaller)
        return 0;
    switch (idx) {
    case 4: /* two disjoint communicators made at once: their context ids
             * are agreed on separately */
        *comm = split_world(rank % 2, rank);
        intra_name = "Even or odd ranks of MPI_COMM_WORLD";
        return 1;
    case 5:
        *comm = split_world(rank < (size + 1) / 2 ? 0 : MPI_UNDEFINED, size - rank);
        intra_name = "Lower half of MPI_COMM_WORLD, reversed";
        return 1;
    case 6:
        *comm = split_world(rank < size - 1 ? 0 : MPI_UNDEFINED, rank);
        intra_name = "MPI_COMM_WORLD without its last rank";
        return 1;
    }
    return 0;
}

static int is_predefined(MPI_Comm c)
{
    return c == MPI_COMM_WORLD || c == MPI_COMM_SELF || c == MPI_COMM_NULL;
}

int MTestGetIntracommGeneral(MPI_Comm *comm, int min_size, int allow_smaller)
{
    for (;;) {
        if (!intra_candidate(intra_next, allow_smaller, comm)) {
            intra_next = 0;
            intra_name = "MPI_COMM_NULL";
            *comm = MPI_COMM_NULL;
            return 0;
        }
        intra_next++;
        int ok = 1;
        if (*comm == MPI_COMM_NULL) {
            intra_name = "MPI_COMM_NULL";
        } else {
            int n = 0;
            check(MPI_Comm_size(*comm, &n));
            ok = n >= min_size;
        }
        /* Every rank takes the same candidate or none does, so the callers'
         * collectives on it line up. */
        check(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
        if (ok)
            return intra_next;
        if (!is_predefined(*comm))
            check(MPI_Comm_free(comm));
    }
}

int MTestGetIntracomm(MPI_Comm *comm, int min_size)
{
    return MTestGetIntracommGeneral(comm, min_size, 0);
}

const char *MTestGetIntracommName(void)
{
    return intra_name;
}

/* The binding has no intercommunicators: the set is empty. */
int MTestGetIntercomm(MPI_Comm *comm, int *is_left_group, int min_size)
{
    (void)min_size;
    *comm = MPI_COMM_NULL;
    *is_left_group = 0;
    return 0;
}

const char *MTestGetIntercommName(void)
{
    return "MPI_COMM_NULL";
}

int MTestGetComm(MPI_Comm *comm, int min_size)
{
    return MTestGetIntracomm(comm, min_size);
}

/* Each rank sends its rank to the next one round a ring and checks what
 * the previous one sent: the communicator carries messages, in order. */
int MTestTestIntracomm(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL)
        return 0;
    int rank, size, errs = 0;
    check(MPI_Comm_rank(comm, &rank));
    check(MPI_Comm_size(comm, &size));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int round = 0; round < 2; round++) {
        int out = rank * 2 + round, in = -1;
        MPI_Status st;
        check(MPI_Sendrecv(&out, 1, MPI_INT, next, 123, &in, 1, MPI_INT, prev, 123, comm, &st));
        if (in != prev * 2 + round || st.MPI_SOURCE != prev) {
            errs++;
            fprintf(stderr, "mtest: ring on %s: rank %d got %d from %d, expected %d from %d\n",
                    intra_name, rank, in, st.MPI_SOURCE, prev * 2 + round, prev);
        }
    }
    return errs;
}

int MTestTestIntercomm(MPI_Comm comm)
{
    return MTestTestIntracomm(comm); /* never given one: none are made */
}

int MTestTestComm(MPI_Comm comm)
{
    return MTestTestIntracomm(comm);
}

void MTestFreeComm(MPI_Comm *comm)
{
    if (!is_predefined(*comm))
        check(MPI_Comm_free(comm));
}

/* Rank-dependent numbers of duplicates of MPI_COMM_SELF, so that the
 * ranks' lowest free context ids differ before a test makes its own. */
#define RANDOMIZE_MAX 4
static MPI_Comm self_dups[RANDOMIZE_MAX];
static int n_self_dups;

void MTestCommRandomize(void)
{
    int want = world_rank() % RANDOMIZE_MAX;
    while (n_self_dups < want)
        check(MPI_Comm_dup(MPI_COMM_SELF, &self_dups[n_self_dups++]));
}

static void randomize_cleanup(void)
{
    while (n_self_dups > 0)
        check(MPI_Comm_free(&self_dups[--n_self_dups]));
}

int MTestSpawnPossible(int *can_spawn)
{
    *can_spawn = 0; /* no MPI_Comm_spawn in the binding */
    return MPI_SUCCESS;
}

/* The binding has no type constructors: every valid type is predefined. */
int MTestIsBasicDtype(MPI_Datatype type)
{
    return type != MPI_DATATYPE_NULL;
}

/* ---- memory ----------------------------------------------------------------- */

MPI_Aint MTestDefaultMaxBufferSize(void)
{
    const char *s = getenv("MPITEST_MAXBUFFER");
    if (s && *s)
        return (MPI_Aint)atol(s);
    return sizeof(void *) == 4 ? (MPI_Aint)256 << 20 : (MPI_Aint)1 << 30;
}

/* Host memory whatever the kind asked for: both pointers are the same. */
void MTestAlloc(size_t size, mtest_mem_type_e type, void **hostbuf, void **devicebuf,
                bool is_calloc, int device)
{
    (void)type;
    (void)device;
    void *p = is_calloc ? calloc(size ? size : 1, 1) : malloc(size ? size : 1);
    if (!p) {
        fprintf(stderr, "mtest: out of memory (%zu bytes)\n", size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (hostbuf)
        *hostbuf = p;
    if (devicebuf)
        *devicebuf = p;
}

void MTestFree(mtest_mem_type_e type, void *hostbuf, void *devicebuf)
{
    (void)type;
    free(hostbuf ? hostbuf : devicebuf);
}

void MTestCopyContent(const void *sbuf, void *dbuf, size_t size, mtest_mem_type_e type)
{
    (void)type;
    memcpy(dbuf, sbuf, size);
}

static const char *const memtype_names[] = {
    [MTEST_MEM_TYPE__UNREGISTERED_HOST] = "host",
    [MTEST_MEM_TYPE__REGISTERED_HOST] = "reg_host",
    [MTEST_MEM_TYPE__DEVICE] = "device",
    [MTEST_MEM_TYPE__SHARED] = "shared",
    [MTEST_MEM_TYPE__RANDOM] = "random",
    [MTEST_MEM_TYPE__ALL] = "all",
};

const char *MTest_memtype_name(mtest_mem_type_e memtype)
{
    if (memtype > MTEST_MEM_TYPE__UNSET && memtype <= MTEST_MEM_TYPE__ALL)
        return memtype_names[memtype];
    return "INVALID";
}

mtest_mem_type_e MTest_memtype_random(void)
{
    return MTEST_MEM_TYPE__UNREGISTERED_HOST; /* the only kind there is */
}

void MTest_init_visibility_gpu(void)
{
}

void MTest_finalize_gpu(void)
{
}

/* ---- options ---------------------------------------------------------------- */

typedef struct arg_entry {
    char *key, *val;
    struct arg_entry *next;
} arg_entry;

static char *dup_range(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) {
        fprintf(stderr, "mtest: out of memory\n");
        exit(1);
    }
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Appends one option word (n bytes at w) to the list at *tail. */
static arg_entry **arg_add(arg_entry **tail, const char *w, size_t n)
{
    if (n < 2 || w[0] != '-' || w[1] == '-') {
        fprintf(stderr, "mtest: argument '%.*s' is not -key or -key=value\n", (int)n, w);
        exit(1);
    }
    w++, n--;
    const char *eq = memchr(w, '=', n);
    arg_entry *e = malloc(sizeof *e);
    if (!e) {
        fprintf(stderr, "mtest: out of memory\n");
        exit(1);
    }
    if (eq) {
        e->key = dup_range(w, (size_t)(eq - w));
        e->val = dup_range(eq + 1, n - (size_t)(eq - w) - 1);
    } else {
        e->key = dup_range(w, n);
        e->val = dup_range("1", 1); /* -key means -key=1 */
    }
    e->next = NULL;
    *tail = e;
    return &e->next;
}

MTestArgList *MTestArgListCreate(int argc, char *argv[])
{
    arg_entry *head = NULL, **tail = &head;
    for (int i = 1; i < argc; i++)
        tail = arg_add(tail, argv[i], strlen(argv[i]));
    return head;
}

MTestArgList *MTestArgListCreate_arg(const char *arg)
{
    arg_entry *head = NULL, **tail = &head;
    const char *s = arg ? arg : "";
    for (;;) {
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        const char *w = s;
        while (*s && !isspace((unsigned char)*s))
            s++;
        tail = arg_add(tail, w, (size_t)(s - w));
    }
    return head;
}

char *MTestArgListSearch(MTestArgList *list, const char *key)
{
    for (arg_entry *e = list; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e->val;
    return NULL;
}

char *MTestArgListGetString(MTestArgList *list, const char *key)
{
    char *v = MTestArgListSearch(list, key);
    if (!v) {
        fprintf(stderr, "mtest: option -%s= is required\n", key);
        exit(1);
    }
    return v;
}

const char *MTestArgListGetString_with_default(MTestArgList *list, const char *key,
                                               const char *dflt)
{
    const char *v = MTestArgListSearch(list, key);
    return v ? v : dflt;
}

int MTestArgListGetInt(MTestArgList *list, const char *key)
{
    return atoi(MTestArgListGetString(list, key));
}

int MTestArgListGetInt_with_default(MTestArgList *list, const char *key, int dflt)
{
    const char *v = MTestArgListSearch(list, key);
    return v ? atoi(v) : dflt;
}

long MTestArgListGetLong(MTestArgList *list, const char *key)
{
    return atol(MTestArgListGetString(list, key));
}

long MTestArgListGetLong_with_default(MTestArgList *list, const char *key, long dflt)
{
    const char *v = MTestArgListSearch(list, key);
    return v ? atol(v) : dflt;
}

mtest_mem_type_e MTestArgListGetMemType(MTestArgList *list, const char *key)
{
    const char *v = MTestArgListSearch(list, key);
    if (!v)
        return MTEST_MEM_TYPE__UNREGISTERED_HOST;
    for (int t = MTEST_MEM_TYPE__UNREGISTERED_HOST; t <= MTEST_MEM_TYPE__ALL; t++)
        if (strcmp(v, memtype_names[t]) == 0)
            return (mtest_mem_type_e)t;
    return MTEST_MEM_TYPE__UNSET;
}

void MTestArgListDestroy(MTestArgList *list)
{
    arg_entry *e = list;
    while (e) {
        arg_entry *next = e->next;
        free(e->key);
        free(e->val);
        free(e);
        e = next;
    }
}

/* "a,b,c": the number of comma-separated fields, and the fields. */
static int count_fields(const char *s)
{
    int n = 1;
    for (; *s; s++)
        n += *s == ',';
    return n;
}

int *MTestParseIntList(const char *str, int *num)
{
    int n = count_fields(str);
    int *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        fprintf(stderr, "mtest: out of memory\n");
        exit(1);
    }
    const char *s = str;
    for (int i = 0; i < n; i++) {
        v[i] = atoi(s);
        s = strchr(s, ',');
        s = s ? s + 1 : "";
    }
    *num = n;
    return v;
}

char **MTestParseStringList(const char *str, int *num)
{
    int n = count_fields(str);
    char **v = malloc((size_t)n * sizeof *v);
    if (!v) {
        fprintf(stderr, "mtest: out of memory\n");
        exit(1);
    }
    const char *s = str;
    for (int i = 0; i < n; i++) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        v[i] = dup_range(s, len);
        s = end ? end + 1 : s + len;
    }
    *num = n;
    return v;
}

void MTestFreeStringList(char **strs, int num)
{
    for (int i = 0; i < num; i++)
        free(strs[i]);
    free(strs);
}
