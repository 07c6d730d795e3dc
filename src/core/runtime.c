/* Process runtime: MPI start-up, the launch sanity check, topology communicators and the start-up
 * table. The device is chosen by the device layer (accel_device_setup); core only records it. */
#include "build_config.h"

#include <malloc.h>
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/trace.h"

extern char **environ;

/* Open MPI's non-blocking collectives malloc a scratch buffer the size of the message on every
 * call (megabytes per gradient bucket), and glibc serves such sizes with fresh mappings: every
 * step page-faulted and zeroed them again (~800 faults per rank per step for the benchmark GPT,
 * about 1% of its step). Freed memory stays in the heap for reuse instead, unless the user tunes
 * malloc. */
static void keep_freed_memory(void)
{
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)    /* glibc */
    if (getenv("GLIBC_TUNABLES") || getenv("MALLOC_MMAP_THRESHOLD_") ||
        getenv("MALLOC_TRIM_THRESHOLD_"))
        return;
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

/* Under srun, a world size that differs from the task count means MPI did not wire up through
 * Slurm's PMIx: each task came up as its own singleton. */
static accel_status_t check_launch(const accel_runtime_t *rt)
{
    const accel_launch_t *l = &rt->launch;
    if (l->launcher == ACCEL_LAUNCH_SRUN && l->expected_size > 0 && l->expected_size != rt->size) {
        ACCEL_ERROR("MPI reports %d rank(s) but srun started %d tasks (SLURM_NTASKS=%d): the tasks did "
                    "not join one MPI job, so every task would think it is rank 0 of %d.\n"
                    "--> hint: launch with 'srun --mpi=pmix' (or set MpiDefault=pmix in slurm.conf), "
                    "with accel built against the MPI that Slurm's PMIx plugin serves",
                    rt->size, l->expected_size, l->slurm_ntasks, rt->size);
        return ACCEL_ERR_LAUNCH;
    }
    if (l->launcher == ACCEL_LAUNCH_MPIRUN && l->expected_size > 0 && l->expected_size != rt->size) {
        ACCEL_ERROR("MPI reports %d rank(s) but mpirun announced %d (OMPI_COMM_WORLD_SIZE).\n"
                    "--> hint: the program and mpirun come from different MPI installations",
                    rt->size, l->expected_size);
        return ACCEL_ERR_LAUNCH;
    }
    return ACCEL_OK;
}

/* Before MPI_Init: srun tasks that got neither a PMIx nor a PMI environment (srun --mpi=none, or
 * MpiDefault=none) cannot join one MPI job. Open MPI aborts inside MPI_Init with a page about its
 * build; other MPIs start N singletons. Either way, say what happened in accel's words first. */
static accel_status_t check_launch_before_mpi(const accel_launch_t *l)
{
    if (l->launcher != ACCEL_LAUNCH_SRUN || l->pmix) return ACCEL_OK;
    /* Any PMI-1/2 or vendor PMI variable (PMI_FD, PMI_RANK, Cray's PMI_CONTROL_PORT...) means some
     * wire-up is there; --mpi=none sets none of them. */
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "PMI_", 4) || !strncmp(*e, "PMIX_", 5)) return ACCEL_OK;
#if defined(OPEN_MPI) && OPEN_MPI
    bool fatal = l->expected_size >= 1;         /* Open MPI cannot even start one task this way */
#else
    bool fatal = l->expected_size > 1;
#endif
    if (!fatal) return ACCEL_OK;
    /* MPI is not up: take the rank and size from Slurm so only task 0 prints. */
    const char *node = getenv("SLURMD_NODENAME");
    accel_log_set_identity(l->expected_rank > 0 ? l->expected_rank : 0, l->expected_size,
                           node && *node ? node : "?");
    if (l->expected_size > 1)
        ACCEL_ERROR0("srun started %d tasks without a PMIx or PMI environment (srun --mpi=none, or "
                     "MpiDefault=none in slurm.conf), so the tasks did not join one MPI job: each would "
                     "start alone as rank 0 of 1, or MPI_Init would abort.\n"
                     "--> hint: launch with 'srun --mpi=pmix' (or set MpiDefault=pmix in slurm.conf); "
                     "'srun --mpi=list' shows what this Slurm offers", l->expected_size);
    else
        ACCEL_ERROR0("srun started this task without a PMIx or PMI environment (srun --mpi=none, or "
                     "MpiDefault=none in slurm.conf), and Open MPI cannot start that way, so the task did "
                     "not join an MPI job.\n"
                     "--> hint: launch with 'srun --mpi=pmix' (or set MpiDefault=pmix in slurm.conf)");
    return ACCEL_ERR_LAUNCH;
}

void accel_mpi_defaults(void)
{
    /* Checkpoints write each rank's large contiguous slices: Open MPI's OMPIO then goes about 2-3x
     * faster with individual file writes than with two-phase collective buffering (bench/ckpt_bench:
     * 1.3 vs 0.35-1.1 GB/s on one rank), and unlike ROMIO it fails cleanly on a full disk. The
     * user's own setting wins. */
    setenv("OMPI_MCA_fcoll", "individual", 0);
}

/* After MPI_Init, before any MPI message: a PMIx fence that collects data. Open MPI 4.1 ends
 * MPI_Init with a PMIx barrier that collects none, and under Slurm's PMIx plugin that barrier can
 * release the ranks of one node before another node's ranks have reached it (2 virtual nodes of
 * Slurm 22.05: up to 70 ms early, in most launches). A rank that leaves early and sends while a
 * peer is still in MPI_Init's modex wait crashes that peer now and then (SIGSEGV in btl/tcp: no
 * handler registered yet for the message). Data-collecting fences are exchanged for real (never
 * once early in the same launches), so after this one every rank has finished MPI_Init
 * (tests/slurm_multinode.sh checks the order). Costs one fence at start-up; skipped where PMIx is
 * not up (a singleton). Should it fail, the job goes on as it would have without it. */
static void fence_after_mpi_init(void)
{
    if (!PMIx_Initialized()) return;
    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    pmix_status_t rc = PMIx_Fence(NULL, 0, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS)
        fprintf(stderr, "accel: warning: the PMIx fence after MPI_Init failed (%s)\n",
                PMIx_Error_string(rc));
}

accel_status_t accel_init(int *argc, char ***argv, accel_runtime_t **out)
{
    accel_runtime_t *rt = calloc(1, sizeof *rt);
    if (!rt) return ACCEL_ERR_NOMEM;
    rt->world = MPI_COMM_WORLD;
    rt->local = rt->cross = MPI_COMM_NULL;

    accel_launch_detect(NULL, &rt->launch);
    /* Slurm's CPUs per task is the thread budget unless the user chose one. */
    if (!getenv("OMP_NUM_THREADS") && rt->launch.slurm_cpus_per_task > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", rt->launch.slurm_cpus_per_task);
        setenv("OMP_NUM_THREADS", v, 0);
    }

    accel_mpi_defaults();
    keep_freed_memory();
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        accel_status_t st = check_launch_before_mpi(&rt->launch);
        if (st != ACCEL_OK) {
            *out = rt;       /* MPI never started: accel_finalize only frees */
            return st;
        }
        /* MULTIPLE for ckpt.async's writer thread (the configuration is read after MPI starts). */
        int provided;
        if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "accel: MPI_Init_thread failed\n");
            free(rt);
            return ACCEL_ERR_MPI;
        }
        rt->owns_mpi = true;
        rt->mpi_threads = provided >= MPI_THREAD_MULTIPLE;
        fence_after_mpi_init();
    }
    if (!rt->owns_mpi) {            /* the caller started MPI: whatever level it asked for */
        int level = MPI_THREAD_SINGLE;
        MPI_Query_thread(&level);
        rt->mpi_threads = level >= MPI_THREAD_MULTIPLE;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rt->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rt->size);

    const char *slurm_node = getenv("SLURMD_NODENAME");
    if (slurm_node && *slurm_node) {
        snprintf(rt->host, sizeof rt->host, "%s", slurm_node);
    } else {
        char name[MPI_MAX_PROCESSOR_NAME];
        int len = 0;
        MPI_Get_processor_name(name, &len);
        snprintf(rt->host, sizeof rt->host, "%.63s", name);
    }
    accel_log_set_identity(rt->rank, rt->size, rt->host);

    accel_status_t st = check_launch(rt);
    if (st == ACCEL_OK) st = accel_runtime_build_topology(rt, 0);
    rt->device.kind = ACCEL_DEVICE_CPU;
    rt->device.index = -1;
    snprintf(rt->device.name, sizeof rt->device.name, "cpu");
    *out = rt;       /* even on error, so the caller can finalize */
    return st;
}

accel_status_t accel_runtime_build_topology(accel_runtime_t *rt, int fake_nodes)
{
    if (rt->local != MPI_COMM_NULL) MPI_Comm_free(&rt->local);
    if (rt->cross != MPI_COMM_NULL) MPI_Comm_free(&rt->cross);
    if (fake_nodes > 0) {
        if (rt->size % fake_nodes) {
            ACCEL_ERROR0("dist.fake_nodes=%d does not divide the %d ranks into equal nodes\n"
                         "--> hint: use a divisor of the world size", fake_nodes, rt->size);
            return ACCEL_ERR_CONFIG;
        }
        int per_node = rt->size / fake_nodes;
        ACCEL_CHECK(accel_mpi_status(MPI_Comm_split(rt->world, rt->rank / per_node, rt->rank, &rt->local),
                               "MPI_Comm_split (fake nodes)"));
    } else {
        ACCEL_CHECK(accel_mpi_status(MPI_Comm_split_type(rt->world, MPI_COMM_TYPE_SHARED, rt->rank,
                                                   MPI_INFO_NULL, &rt->local),
                               "MPI_Comm_split_type(SHARED)"));
    }
    /* Names for the flight recorder's report, before their first collective (MPI_COMM_WORLD is
     * named by MPI). */
    MPI_Comm_set_name(rt->local, "node");
    MPI_Comm_rank(rt->local, &rt->local_rank);
    MPI_Comm_size(rt->local, &rt->local_size);

    /* A node is named by the world rank of its local rank 0; nodes are numbered in that order. */
    int leader = rt->rank;
    ACCEL_CHECK(accel_mpi_bcast(&leader, 1, MPI_INT, 0, rt->local, "bcast-topology"));
    int *leaders = malloc(sizeof(int) * (size_t)rt->size);
    if (!leaders) return ACCEL_ERR_NOMEM;
    ACCEL_CHECK(accel_mpi_allgather(&leader, 1, MPI_INT, leaders, rt->world, "allgather-topology"));
    rt->node = rt->nnodes = 0;
    for (int r = 0; r < rt->size; r++) {
        if (leaders[r] != r) continue;       /* r is a leader exactly when it names itself */
        if (r < leader) rt->node++;
        rt->nnodes++;
    }
    free(leaders);
    ACCEL_CHECK(accel_mpi_status(MPI_Comm_split(rt->world, rt->local_rank, rt->node, &rt->cross),
                           "MPI_Comm_split (cross-node)"));
    MPI_Comm_set_name(rt->cross, "cross-node");
    return ACCEL_OK;
}

accel_status_t accel_runtime_configure(accel_runtime_t *rt, const accel_config_t *cfg)
{
    int lvl = accel_log_parse_level(cfg->log.level);
    if (lvl >= 0 && !getenv("ACCEL_LOG_LEVEL")) accel_log_set_level((accel_log_level_t)lvl);
    accel_log_set_all_ranks(cfg->log.all_ranks);
    accel_trace_configure(cfg->dist.trace_dir, cfg->dist.timeout);
    if (cfg->dist.fake_nodes > 0) ACCEL_CHECK(accel_runtime_build_topology(rt, cfg->dist.fake_nodes));

    /* Threads: explicit setting, else OMP_NUM_THREADS, else share the node's cores. */
    int threads = cfg->threads;
    const char *omp = getenv("OMP_NUM_THREADS");
    if (threads <= 0 && omp) threads = atoi(omp);
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = (int)(cores / (rt->local_size > 0 ? rt->local_size : 1));
        if (threads < 1) threads = 1;
    }
    rt->threads = threads;
    accel_blas_set_threads(threads);
    return ACCEL_OK;
}

typedef struct {
    char host[ACCEL_HOST_MAX];
    char device[64];
    int local_rank, node;
} table_row_t;

accel_status_t accel_runtime_print_table(const accel_runtime_t *rt, FILE *out)
{
    table_row_t mine;
    memset(&mine, 0, sizeof mine);
    snprintf(mine.host, sizeof mine.host, "%s", rt->host);
    if (rt->device.kind == ACCEL_DEVICE_CUDA)
        snprintf(mine.device, sizeof mine.device, "cuda:%d %.50s", rt->device.index, rt->device.name);
    else
        snprintf(mine.device, sizeof mine.device, "cpu (%d thread%s)", rt->threads,
                 rt->threads == 1 ? "" : "s");
    mine.local_rank = rt->local_rank;
    mine.node = rt->node;
    table_row_t *rows = rt->rank == 0 ? malloc(sizeof *rows * (size_t)rt->size) : NULL;
    if (rt->rank == 0 && !rows) return ACCEL_ERR_NOMEM;
    accel_status_t st = accel_mpi_gather(&mine, (int)sizeof mine, MPI_BYTE, rows, 0, rt->world,
                                         "gather-rank-table");
    if (st != ACCEL_OK) { free(rows); return st; }
    if (rt->rank == 0) {
        fprintf(out, "accel: %d rank%s on %d node%s, launched by %s\n", rt->size, rt->size == 1 ? "" : "s",
                rt->nnodes, rt->nnodes == 1 ? "" : "s", accel_launcher_name(rt->launch.launcher));
        fprintf(out, "  %-6s %-20s %-5s %-11s %s\n", "rank", "host", "node", "local rank", "device");
        for (int r = 0; r < rt->size; r++)
            fprintf(out, "  %-6d %-20s %-5d %-11d %s\n", r, rows[r].host, rows[r].node,
                    rows[r].local_rank, rows[r].device);
        fflush(out);
    }
    free(rows);
    return ACCEL_OK;
}

/* The leader passes through begin and waits at end; everyone else waits at begin until the
 * leader has reached end. One barrier on each side, so a leader failure surfaces as the
 * leader's error, never a silent hang (barriers run under MPI_ERRORS_RETURN). Not under
 * dist.timeout: the others legitimately wait as long as the leader's work takes (a dataset
 * prepared once per node). */
accel_status_t accel_main_first_begin(const accel_runtime_t *rt, bool local)
{
    MPI_Comm c = local ? rt->local : rt->world;
    int r = local ? rt->local_rank : rt->rank;
    if (r != 0) return accel_mpi_status(MPI_Barrier(c), "MPI_Barrier (main process first)");
    return ACCEL_OK;
}

accel_status_t accel_main_first_end(const accel_runtime_t *rt, bool local)
{
    MPI_Comm c = local ? rt->local : rt->world;
    int r = local ? rt->local_rank : rt->rank;
    if (r == 0) return accel_mpi_status(MPI_Barrier(c), "MPI_Barrier (main process first)");
    return ACCEL_OK;
}

void accel_finalize(accel_runtime_t *rt)
{
    if (!rt) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        if (rt->local != MPI_COMM_NULL) MPI_Comm_free(&rt->local);
        if (rt->cross != MPI_COMM_NULL) MPI_Comm_free(&rt->cross);
        if (rt->owns_mpi) MPI_Finalize();
    }
    free(rt);
}

void accel_abort(int code)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    fflush(stdout);
    fflush(stderr);
    if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
}
