/* LD_PRELOAD probe for tests/slurm_multinode.sh: prints when each rank's MPI_Init_thread returned and
 * when it first called an MPI function that communicates, so the test can check that no rank talks
 * to the others before every rank has finished MPI_Init (see fence_after_mpi_init in
 * src/core/runtime.c). Clock: CLOCK_REALTIME, comparable between the ranks of one host. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static int talked;

static void stamp(const char *event)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "startup-probe: rank %d %s %lld.%09ld\n", rank, event, (long long)t.tv_sec,
            t.tv_nsec);
}

static void first_talk(void)
{
    if (!talked) stamp("talks");
    talked = 1;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    stamp("initialized");
    return rc;
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    first_talk();
    return PMPI_Allreduce(s, r, n, t, op, c);
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
    first_talk();
    return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}

int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root,
               MPI_Comm c)
{
    first_talk();
    return PMPI_Gather(s, sn, st, r, rn, rt, root, c);
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    first_talk();
    return PMPI_Bcast(b, n, t, root, c);
}

int MPI_Barrier(MPI_Comm c)
{
    first_talk();
    return PMPI_Barrier(c);
}

int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm *out)
{
    first_talk();
    return PMPI_Comm_split(c, color, key, out);
}

int MPI_Comm_split_type(MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *out)
{
    first_talk();
    return PMPI_Comm_split_type(c, type, key, info, out);
}
