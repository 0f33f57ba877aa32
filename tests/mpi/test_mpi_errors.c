/*
 * test_mpi_errors.c — every argument check of the binding answers the
 * standard's error class under MPI_ERRORS_RETURN (and never crashes);
 * truncation and MPI_ERR_IN_STATUS from the multiple-completion calls;
 * error strings and classes. Standard MPI only; any number of ranks.
 */
#include "mpitest.h"
#include <stdio.h>
#include <string.h>

static void bad_arguments(void)
{
    int buf[4] = {0}, flag, count;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;
    MPI_Comm dup;
    MPI_Message msg;

    /* Communicators. */
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, 0, (MPI_Comm)12345), MPI_ERR_COMM);
    EXPECT(MPI_Recv(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL, &st), MPI_ERR_COMM);
    EXPECT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Comm_size(MPI_COMM_NULL, &count), MPI_ERR_COMM);
    EXPECT(MPI_Comm_dup(MPI_COMM_NULL, &dup), MPI_ERR_COMM);
    EXPECT(MPI_Comm_free(&(MPI_Comm){MPI_COMM_WORLD}), MPI_ERR_COMM);
    EXPECT(MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &dup), MPI_ERR_ARG);

    /* Ranks and tags. */
    EXPECT(MPI_Send(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Send(buf, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Irecv(buf, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, &req), MPI_ERR_RANK);
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, -1, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT(MPI_Irecv(buf, 1, MPI_INT, 0, -3, MPI_COMM_WORLD, &req), MPI_ERR_TAG);
    EXPECT(MPI_Iprobe(size, 0, MPI_COMM_WORLD, &flag, &st), MPI_ERR_RANK);
    EXPECT(MPI_Iprobe(0, -2, MPI_COMM_WORLD, &flag, &st), MPI_ERR_TAG);

    /* Counts, datatypes, buffers. */
    EXPECT(MPI_Send(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(buf, 1, (MPI_Datatype)0x4c0000ff, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(NULL, 2, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Sendrecv(buf, 2, MPI_INT, rank, 0, buf + 1, 2, MPI_INT, rank, 0, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE),
           MPI_ERR_BUFFER); /* overlapping buffers */
    EXPECT(MPI_Bcast(buf, -2, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Bcast(buf, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Type_size(MPI_DATATYPE_NULL, &count), MPI_ERR_TYPE);

    /* Requests. */
    req = (MPI_Request)0x2c0fffff;
    EXPECT(MPI_Wait(&req, &st), MPI_ERR_REQUEST);
    EXPECT(MPI_Test(&req, &flag, &st), MPI_ERR_REQUEST);
    EXPECT(MPI_Cancel(&req), MPI_ERR_REQUEST);
    EXPECT(MPI_Request_free(&req), MPI_ERR_REQUEST);
    req = MPI_REQUEST_NULL;
    EXPECT(MPI_Request_free(&req), MPI_ERR_REQUEST);
    EXPECT(MPI_Wait(&req, &st), MPI_SUCCESS); /* null: empty status */
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 0);
    MPI_Request two[2] = {MPI_REQUEST_NULL, (MPI_Request)0x2c0ffff0};
    EXPECT(MPI_Waitall(2, two, MPI_STATUSES_IGNORE), MPI_ERR_REQUEST);
    EXPECT(MPI_Waitall(-1, two, MPI_STATUSES_IGNORE), MPI_ERR_COUNT);
    int idx;
    EXPECT(MPI_Waitany(2, two, &idx, &st), MPI_ERR_REQUEST);

    /* A stale handle: completed and released, then used again. */
    MPI_Request stale;
    MPI_Isend(buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &stale);
    req = stale;
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(req == MPI_REQUEST_NULL);
    EXPECT(MPI_Wait(&stale, &st), MPI_ERR_REQUEST);

    /* Messages. */
    msg = (MPI_Message)0x30000fff;
    EXPECT(MPI_Mrecv(buf, 1, MPI_INT, &msg, &st), MPI_ERR_REQUEST);

    /* Ops. */
    EXPECT(MPI_Allreduce(buf, buf + 2, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(buf, buf + 2, 1, MPI_2INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(buf, buf + 2, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Op_free(&(MPI_Op){MPI_SUM}), MPI_ERR_OP);

    /* Error handlers, attributes. */
    EXPECT(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRHANDLER_NULL), MPI_ERR_ARG);
    void *v;
    EXPECT(MPI_Comm_get_attr(MPI_COMM_WORLD, 424242, &v, &flag), MPI_ERR_KEYVAL);
    EXPECT(MPI_Buffer_attach(NULL, 10), MPI_ERR_BUFFER);
    EXPECT(MPI_Buffer_attach(buf, -1), MPI_ERR_ARG);
}

/* A message longer than the receive buffer: MPI_ERR_TRUNCATE, and no byte
 * written past the buffer. */
static void truncation(void)
{
    int big[8] = {1, 2, 3, 4, 5, 6, 7, 8}, small[4] = {0}, guard[4];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    MPI_Request r;
    memset(guard, 0x5a, sizeof guard);
    int cls;
    MPI_Isend(big, 8, MPI_INT, right, 5, MPI_COMM_WORLD, &r);
    int rc = MPI_Recv(small, 3, MPI_INT, left, 5, MPI_COMM_WORLD, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE);
    CHECK(small[0] == 1 && small[2] == 3 && small[3] == 0);
    MPI_Wait(&r, MPI_STATUS_IGNORE);

    /* In Waitall: MPI_ERR_IN_STATUS, each status says how its went. */
    MPI_Request rs[3];
    MPI_Status sts[3];
    for (int i = 0; i < 3; i++)
        sts[i].MPI_ERROR = -99;
    MPI_Irecv(small, 2, MPI_INT, left, 6, MPI_COMM_WORLD, &rs[0]);
    MPI_Isend(big, 8, MPI_INT, right, 6, MPI_COMM_WORLD, &rs[1]);
    rs[2] = MPI_REQUEST_NULL;
    rc = MPI_Waitall(3, rs, sts);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_IN_STATUS);
    CHECK(sts[0].MPI_ERROR == MPI_ERR_TRUNCATE);
    CHECK(sts[1].MPI_ERROR == MPI_SUCCESS);
    CHECK(sts[2].MPI_ERROR == MPI_SUCCESS);
    CHECK(rs[0] == MPI_REQUEST_NULL && rs[1] == MPI_REQUEST_NULL);

    /* A successful Waitall leaves MPI_ERROR alone. */
    sts[0].MPI_ERROR = -99;
    MPI_Irecv(small, 4, MPI_INT, left, 7, MPI_COMM_WORLD, &rs[0]);
    MPI_Isend(big, 4, MPI_INT, right, 7, MPI_COMM_WORLD, &rs[1]);
    CHECK(MPI_Waitall(2, rs, sts) == MPI_SUCCESS);
    CHECK(sts[0].MPI_ERROR == -99);
}

static void strings(void)
{
    char s[MPI_MAX_ERROR_STRING];
    int len, cls;
    for (int c = MPI_SUCCESS; c <= MPI_ERR_PROC_FAILED; c++) {
        if (MPI_Error_class(c, &cls) != MPI_SUCCESS)
            continue;
        CHECK(cls == c);
        CHECK(MPI_Error_string(c, s, &len) == MPI_SUCCESS);
        CHECK(len > 0 && len == (int)strlen(s) && len < MPI_MAX_ERROR_STRING);
    }
    MPI_Error_string(MPI_ERR_RANK, s, &len);
    CHECK(strstr(s, "rank") != NULL);
    EXPECT(MPI_Error_class(-12345, &cls), MPI_ERR_ARG);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    CHECK(eh == MPI_ERRHANDLER_NULL);
    /* MPI_COMM_SELF keeps its own (fatal) handler. */
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL);
    int *tag_ub, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    CHECK(flag && *tag_ub >= 32767);
    /* The largest tag works. */
    int x = rank, y = -1;
    MPI_Sendrecv(&x, 1, MPI_INT, 0, *tag_ub, &y, 1, MPI_INT, 0, *tag_ub, MPI_COMM_SELF,
                 MPI_STATUS_IGNORE);
    CHECK(y == rank);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    bad_arguments();
    truncation();
    strings();
    int all = mpitest_total("test_mpi_errors");
    MPI_Finalize();
    return all != 0;
}
