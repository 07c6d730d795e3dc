/* accel env: everything a bug report needs, gathered from every rank when run under mpirun/srun. */
#include "build_config.h"

#include <hdf5.h>
#include <limits.h>
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"
#include "../nn/gemm_cpu.h"
#include "tool.h"

extern char **environ;

/* File-system type of a path: the longest mount point in /proc/mounts that prefixes it. */
static void fs_type(const char *path, char *out, size_t outlen)
{
    snprintf(out, outlen, "unknown");
    FILE *f = fopen("/proc/mounts", "r");
    if (!f) return;
    char dev[512], mnt[512], type[64];
    size_t best = 0;
    while (fscanf(f, "%511s %511s %63s %*[^\n]", dev, mnt, type) == 3) {
        size_t n = strlen(mnt);
        bool prefix = !strncmp(path, mnt, n) && (path[n] == '/' || path[n] == '\0' || n == 1);
        if (prefix && n >= best) {
            best = n;
            snprintf(out, outlen, "%s (mounted at %s)", type, mnt);
        }
    }
    fclose(f);
}

/* Who runs bf16 products (gemm_cpu.h): the path this process takes, and every path the machine
 * can run (what ACCEL_BF16_GEMM may force; the tests read this line). */
static void print_bf16_paths(void)
{
    accel_bf16_path_t path, p;
    accel_status_t st = accel_gemm_bf16_path(&path);
    if (st != ACCEL_OK) printf("bf16 products    refused: ACCEL_BF16_GEMM=%s (this machine runs:",
                               getenv("ACCEL_BF16_GEMM"));
    else printf("bf16 products    %s (%s; this machine runs:", accel_gemm_bf16_path_name(path),
                getenv("ACCEL_BF16_GEMM") ? "ACCEL_BF16_GEMM" : accel_gemm_cpu_amx() ? "auto, AMX" : "auto");
    for (p = ACCEL_BF16_ONEDNN; p <= ACCEL_BF16_EMULATE; p++)
        if (accel_gemm_bf16_path_available(p)) printf(" %s", accel_gemm_bf16_path_name(p));
    printf(")\n");
}

static void print_versions(void)
{
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, major = 0, minor = 0;
    MPI_Get_library_version(mpi, &len);
    mpi[strcspn(mpi, "\n")] = '\0';
    MPI_Get_version(&major, &minor);
    unsigned h5maj, h5min, h5rel;
    H5get_libversion(&h5maj, &h5min, &h5rel);
    printf("accel            %s (CUDA %s, NCCL %s)\n", accel_version(),
           accel_built_with_cuda() ? "built" : "not built", accel_built_with_nccl() ? "built" : "not built");
    printf("MPI              %s (MPI %d.%d)\n", mpi, major, minor);
    printf("HDF5             %u.%u.%u, parallel: %s\n", h5maj, h5min, h5rel, H5_HAVE_PARALLEL ? "yes" : "NO");
    printf("PMIx             %s\n", PMIx_Get_version());
    int nccl = accel_comm_nccl_version();
    if (nccl) printf("NCCL             %d.%d.%d\n", nccl / 10000, (nccl / 100) % 100, nccl % 100);
    else printf("NCCL             not built\n");
    const char *why = NULL;
    int ngpu = accel_device_cuda_count(&why);
    int rtv = accel_device_cuda_runtime_version(), drv = accel_device_cuda_driver_version();
    if (!accel_built_with_cuda()) printf("CUDA             not built\n");
    else printf("CUDA             runtime %d.%d, driver %d.%d\n", rtv / 1000, (rtv % 1000) / 10, drv / 1000, (drv % 1000) / 10);
    if (ngpu) printf("GPUs             %d visible\n", ngpu);
    else printf("GPUs             no GPU (%s)\n", why);
    printf("BLAS             %s, core %s\n", ACCEL_HAVE_OPENBLAS ? "OpenBLAS" : "CBLAS", accel_blas_core());
    const char *onednn = accel_blas_onednn_version();
    if (!onednn) printf("oneDNN           not built\n");
    else printf("oneDNN           %s, %s\n", onednn, getenv("ACCEL_NO_ONEDNN") ? "off (ACCEL_NO_ONEDNN)" : "large fp32 products on AVX-512 CPUs, bf16 on AMX");
    print_bf16_paths();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    printf("host             %ld cores, %.1f GiB memory\n", cores, (double)pages * (double)page / (1 << 30));
}

static void print_environment(void)
{
    static const char *const prefixes[] = { "SLURM_", "SLURMD_", "OMPI_", "PMIX_RANK", "PMIX_NAMESPACE",
                                            "CUDA_VISIBLE_DEVICES", "NCCL_", "OMP_", "OPENBLAS_", "ACCEL_",
                                            "UCX_", "HDF5_" };
    /* Sorted for stable, diffable reports. */
    size_t n = 0;
    for (char **e = environ; *e; e++) n++;
    char **sorted = malloc(sizeof *sorted * (n + 1));
    if (!sorted) return;
    size_t m = 0;
    for (char **e = environ; *e; e++)
        for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++)
            if (!strncmp(*e, prefixes[p], strlen(prefixes[p]))) { sorted[m++] = *e; break; }
    for (size_t i = 1; i < m; i++)
        for (size_t j = i; j > 0 && strcmp(sorted[j - 1], sorted[j]) > 0; j--) {
            char *t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t;
        }
    printf("environment (SLURM_*, OMPI_*, PMIx, CUDA, NCCL_*, OMP_*, OPENBLAS_*, ACCEL_*):\n");
    if (!m) printf("  (none set)\n");
    for (size_t i = 0; i < m; i++) printf("  %s\n", sorted[i]);
    free(sorted);
}

int accel_cmd_env(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel env\n"
                   "  Print versions (accel, MPI, HDF5, PMIx, NCCL, CUDA), the launcher, a rank/host/device\n"
                   "  table gathered from every rank, relevant environment variables and the working\n"
                   "  directory's file system. Run it the way you run training (srun/mpirun) and paste\n"
                   "  the output into bug reports.\n");
            return 0;
        }
        fprintf(stderr, "accel env: unexpected argument '%s' (see --help)\n", argv[i]);
        return 2;
    }
    accel_runtime_t *rt = NULL;
    accel_status_t st = accel_init(&argc, &argv, &rt);
    if (st == ACCEL_OK) {
        accel_config_t cfg;
        accel_config_defaults(&cfg);
        snprintf(cfg.log.level, sizeof cfg.log.level, "warn");  /* no device chatter in the report */
        st = accel_runtime_configure(rt, &cfg);
        if (st == ACCEL_OK) st = accel_device_setup(rt, &cfg);
    }
    if (st == ACCEL_OK && rt->rank == 0) {
        print_versions();
        const accel_launch_t *l = &rt->launch;
        printf("launcher         %s%s", accel_launcher_name(l->launcher), l->pmix ? " (PMIx)" : "");
        if (l->in_slurm_allocation) printf(", Slurm job %ld, SLURM_NTASKS=%d", l->slurm_job_id, l->slurm_ntasks);
        printf("\n");
        char cwd[PATH_MAX], fs[700];
        if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, ".");
        fs_type(cwd, fs, sizeof fs);
        printf("working dir      %s on %s\n", cwd, fs);
        fflush(stdout);
    }
    if (st == ACCEL_OK) st = accel_runtime_print_table(rt, stdout);
    if (st == ACCEL_OK && rt->rank == 0) {
        print_environment();
        fflush(stdout);
    }
    accel_finalize(rt);
    return accel_status_exit_code(st);
}
