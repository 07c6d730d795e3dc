/* The flight recorder (include/accel/trace.h): a ring of this rank's last collectives, written to
 * dist.trace_dir when a wait times out (or on SIGUSR2), and the report that compares the ranks'
 * rings. A communicator is known by its Fortran handle (MPI_Comm_c2f): communicators are created
 * collectively and in the same order on every rank, so the handle names the same one everywhere. */
#include "build_config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/timer.h"
#include "accel/trace.h"

#define MAX_COMMS 64                /* communicators tracked by handle (beyond: not recorded) */

#define NAME_LEN 48                 /* a communicator's name as the report shows it */

typedef struct {
    unsigned long seq;              /* on its communicator, from 1; 0 = empty slot */
    int comm, comm_size;
    const char *what;               /* a string literal */
    size_t bytes;
    double t0, t1;                  /* t1 < 0: not finished */
} record_t;

static record_t g_ring[ACCEL_TRACE_RING];
static unsigned long g_total;       /* records ever made: the next slot is g_total % RING */
static unsigned long g_seq[MAX_COMMS];
static int g_size[MAX_COMMS];
static char g_name[MAX_COMMS][NAME_LEN];   /* MPI_Comm_get_name, blanks as '_'; "" = none */
static char g_dir[1024] = "accel-trace";
static double g_timeout = 600;

static void dump_ring(const char *waiting_what, int token);

static void on_sigusr2(int sig)
{
    (void)sig;
    dump_ring(NULL, -1);
}

void accel_trace_configure(const char *dir, double timeout_s)
{
    if (dir && dir[0]) snprintf(g_dir, sizeof g_dir, "%s", dir);
    g_timeout = timeout_s;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigusr2;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, NULL);
}

double accel_trace_timeout(void) { return g_timeout; }

int accel_trace_begin(MPI_Comm comm, const char *what, size_t bytes)
{
    int id = (int)MPI_Comm_c2f(comm), size = 0;
    if (id < 0 || id >= MAX_COMMS) return -1;
    MPI_Comm_size(comm, &size);
    g_size[id] = size;
    /* looked up each time, not cached: a freed communicator's handle may name a new one */
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;
    MPI_Comm_get_name(comm, name, &len);
    for (int i = 0; i < NAME_LEN - 1; i++) {      /* one word in the ring's lines */
        g_name[id][i] = name[i] == ' ' ? '_' : name[i];
        if (!name[i]) break;
    }
    g_name[id][NAME_LEN - 1] = '\0';
    /* the writer thread of ckpt.async records too: slots are taken atomically (each communicator
     * is used by one thread, so its sequence number is not contended) */
    unsigned long slot = __atomic_fetch_add(&g_total, 1, __ATOMIC_RELAXED) % ACCEL_TRACE_RING;
    g_ring[slot] = (record_t){ ++g_seq[id], id, size, what, bytes, accel_now(), -1.0 };
    return (int)slot;
}

void accel_trace_end(int token)
{
    if (token >= 0 && token < ACCEL_TRACE_RING) g_ring[token].t1 = accel_now();
}

/* trace-rank<R>.txt, oldest record first; `waiting` names the collective this rank waits in. */
static void dump_ring(const char *waiting_what, int token)
{
    int rank = 0, size = 1, inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    mkdir(g_dir, 0777);
    char path[1100], tmp[1120];
    snprintf(path, sizeof path, "%s/trace-rank%d.txt", g_dir, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    struct timespec wall;                       /* comparable across nodes, unlike accel_now */
    clock_gettime(CLOCK_REALTIME, &wall);
    fprintf(f, "accel-trace 1 rank %d size %d host %s pid %ld now %.6f\n", rank, size, host,
            (long)getpid(), (double)wall.tv_sec + 1e-9 * (double)wall.tv_nsec);
    for (int c = 0; c < MAX_COMMS; c++)
        if (g_size[c]) fprintf(f, "comm %d size %d name %s\n", c, g_size[c], g_name[c][0] ? g_name[c] : "-");
    unsigned long first = g_total > ACCEL_TRACE_RING ? g_total - ACCEL_TRACE_RING : 0;
    for (unsigned long i = first; i < g_total; i++) {
        const record_t *r = &g_ring[i % ACCEL_TRACE_RING];
        fprintf(f, "op %d %lu %s %zu %.6f %.6f\n", r->comm, r->seq, r->what, r->bytes, r->t0, r->t1);
    }
    if (waiting_what && token >= 0)
        fprintf(f, "waiting %d %lu %s\n", g_ring[token].comm, g_ring[token].seq, waiting_what);
    fclose(f);
    rename(tmp, path);
}

static int count_rings(void)
{
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, "trace-rank", 10) && strstr(e->d_name, ".txt") &&
            !strstr(e->d_name, ".tmp"))
            n++;
    if (d) closedir(d);
    return n;
}

/* The lowest rank whose ring is in the directory. */
static int lowest_ring(void)
{
    DIR *d = opendir(g_dir);
    int low = -1;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int r;
        char tail[8];
        if (sscanf(e->d_name, "trace-rank%d.tx%1s", &r, tail) == 2 && !strstr(e->d_name, ".tmp") &&
            (low < 0 || r < low))
            low = r;
    }
    if (d) closedir(d);
    return low;
}

void accel_trace_hang(int token, double waited_s)
{
    const record_t *r = token >= 0 ? &g_ring[token] : NULL;
    const char *what = r ? r->what : "a collective";
    const char *name = r && g_name[r->comm][0] ? g_name[r->comm] : "unnamed";
    ACCEL_ERROR("timed out after %.0f s in %s #%lu on communicator %d (%s, %d ranks, %zu bytes): "
                "at least one rank never joined; writing the flight recorder to %s/ and aborting the "
                "job\n--> hint: the report below names the ranks that never entered it; raise "
                "dist.timeout if they legitimately take longer (e.g. a slow file system)",
                waited_s, what, r ? r->seq : 0UL, r ? r->comm : -1, name, r ? r->comm_size : 0,
                r ? r->bytes : (size_t)0, g_dir);
    dump_ring(what, token);
    /* The other ranks that wait time out within moments of this one: wait until every rank has
     * written its ring, or none has been added for a second (3 s at most). */
    int size = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int seen = count_rings();
    double last = accel_now(), begin = last;
    while (seen < size && accel_now() - last < 1.0 && accel_now() - begin < 3.0) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        int n = count_rings();
        if (n != seen) { seen = n; last = accel_now(); }
    }
    if (lowest_ring() == rank) {
        (void)accel_trace_report(g_dir, stderr);
        fflush(stderr);
    } else {
        /* The reporter's abort ends this rank; abort anyway should it not come. */
        struct timespec ts = { 5, 0 };
        nanosleep(&ts, NULL);
    }
    accel_abort(124);
}

/* The one way the wrappers below wait: the nonblocking collective `rc` started (req), recorded
 * under token, tested until done or the timeout. */
static accel_status_t timed_wait(int rc, MPI_Request *req, int token, const char *what)
{
    ACCEL_CHECK(accel_mpi_status(rc, what));
    double start = accel_now();
    for (long spins = 0;; spins++) {
        int done = 0;
        ACCEL_CHECK(accel_mpi_status(MPI_Test(req, &done, MPI_STATUS_IGNORE), what));
        if (done) break;
        if (g_timeout > 0 && (spins & 63) == 0 && accel_now() - start > g_timeout)
            accel_trace_hang(token, accel_now() - start);
        accel_wait_backoff(spins);
    }
    accel_trace_end(token);
    return ACCEL_OK;
}

static size_t type_bytes(MPI_Datatype type, int count)
{
    int tsize = 0;
    MPI_Type_size(type, &tsize);
    return (size_t)count * (size_t)tsize;
}

accel_status_t accel_mpi_allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                                   MPI_Op op, MPI_Comm comm, const char *what)
{
    int token = accel_trace_begin(comm, what, type_bytes(type, count));
    MPI_Request req;
    return timed_wait(MPI_Iallreduce(send, recv, count, type, op, comm, &req), &req, token, what);
}

accel_status_t accel_mpi_reduce(const void *send, void *recv, int count, MPI_Datatype type,
                                MPI_Op op, int root, MPI_Comm comm, const char *what)
{
    int token = accel_trace_begin(comm, what, type_bytes(type, count));
    MPI_Request req;
    return timed_wait(MPI_Ireduce(send, recv, count, type, op, root, comm, &req), &req, token, what);
}

accel_status_t accel_mpi_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                               const char *what)
{
    int token = accel_trace_begin(comm, what, type_bytes(type, count));
    MPI_Request req;
    return timed_wait(MPI_Ibcast(buf, count, type, root, comm, &req), &req, token, what);
}

accel_status_t accel_mpi_allgather(const void *send, int count, MPI_Datatype type, void *recv,
                                   MPI_Comm comm, const char *what)
{
    int token = accel_trace_begin(comm, what, type_bytes(type, count));
    MPI_Request req;
    return timed_wait(MPI_Iallgather(send, count, type, recv, count, type, comm, &req), &req, token,
                      what);
}

accel_status_t accel_mpi_gather(const void *send, int count, MPI_Datatype type, void *recv, int root,
                                MPI_Comm comm, const char *what)
{
    int token = accel_trace_begin(comm, what, type_bytes(type, count));
    MPI_Request req;
    return timed_wait(MPI_Igather(send, count, type, recv, count, type, root, comm, &req), &req, token,
                      what);
}

accel_status_t accel_mpi_barrier(MPI_Comm comm, const char *what)
{
    int token = accel_trace_begin(comm, what, 0);
    MPI_Request req;
    return timed_wait(MPI_Ibarrier(comm, &req), &req, token, what);
}

/* ------------------------------------------------------------------ the report */

typedef struct {
    int present, size;
    int member[MAX_COMMS];
    char name[MAX_COMMS][NAME_LEN];
    unsigned long last_seq[MAX_COMMS];      /* highest sequence started on each communicator */
    char last_what[MAX_COMMS][32];
    int last_done[MAX_COMMS];
    int waiting, wait_comm;
    unsigned long wait_seq;
    char wait_what[32];
    double written;                         /* when the rank wrote its ring (wall clock, s) */
} ring_t;

static void read_ring(const char *path, ring_t *r)
{
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        int c, n;
        unsigned long seq;
        char what[32];
        double t0, t1;
        size_t bytes;
        double now;
        if (sscanf(line, "accel-trace 1 rank %*d size %d host %*s pid %*d now %lf", &n, &now) == 2) {
            r->present = 1;
            r->size = n;
            r->written = now;
        } else if (sscanf(line, "comm %d size %d", &c, &n) == 2 && c >= 0 && c < MAX_COMMS) {
            r->member[c] = n;
            char name[NAME_LEN];
            if (sscanf(line, "comm %*d size %*d name %47s", name) == 1 && strcmp(name, "-"))
                snprintf(r->name[c], sizeof r->name[c], "%s", name);
        } else if (sscanf(line, "op %d %lu %31s %zu %lf %lf", &c, &seq, what, &bytes, &t0, &t1) == 6 &&
                   c >= 0 && c < MAX_COMMS && seq >= r->last_seq[c]) {
            r->last_seq[c] = seq;
            snprintf(r->last_what[c], sizeof r->last_what[c], "%s", what);
            r->last_done[c] = t1 >= 0;
        } else if (sscanf(line, "waiting %d %lu %31s", &c, &seq, what) == 3 && c >= 0 && c < MAX_COMMS) {
            r->waiting = 1;
            r->wait_comm = c;
            r->wait_seq = seq;
            snprintf(r->wait_what, sizeof r->wait_what, "%s", what);
        }
    }
    fclose(f);
}

static accel_status_t report(const char *dir, FILE *out);

static const char *comm_name(const ring_t *r, int c) { return r->name[c][0] ? r->name[c] : "unnamed"; }

/* The report is built in memory and written at once: the ranks are about to be killed, and a
 * launcher forwards whole writes more reliably than many small ones. */
accel_status_t accel_trace_report(const char *dir, FILE *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) return report(dir, out);
    accel_status_t st = report(dir, mem);
    fclose(mem);
    if (text) {
        fwrite(text, 1, len, out);
        fflush(out);
    }
    free(text);
    return st;
}

static accel_status_t report(const char *dir, FILE *out)
{
    DIR *d = opendir(dir);
    if (!d) return ACCEL_ERR_NOT_FOUND;
    int size = 0, maxrank = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        int r;
        char tail[8];
        if (sscanf(e->d_name, "trace-rank%d.tx%1s", &r, tail) == 2 && !strstr(e->d_name, ".tmp") && r > maxrank)
            maxrank = r;
    }
    closedir(d);
    if (maxrank < 0) return ACCEL_ERR_NOT_FOUND;
    /* The world size from any ring's header. */
    ring_t *rings = NULL;
    for (int pass = 0; pass < 2; pass++) {
        int n = pass == 0 ? maxrank + 1 : size;
        rings = calloc((size_t)n, sizeof *rings);
        if (!rings) return ACCEL_ERR_NOMEM;
        for (int r = 0; r < n; r++) {
            char path[1200];
            snprintf(path, sizeof path, "%s/trace-rank%d.txt", dir, r);
            read_ring(path, &rings[r]);
            if (rings[r].present && rings[r].size > size) size = rings[r].size;
        }
        if (pass == 0) {
            if (size <= maxrank) size = maxrank + 1;
            free(rings);
        }
    }
    /* The collective the most ranks wait in: (communicator, sequence). */
    int best = -1, best_count = 0;
    for (int r = 0; r < size; r++) {
        if (!rings[r].waiting) continue;
        int count = 0;
        for (int q = 0; q < size; q++)
            count += rings[q].waiting && rings[q].wait_comm == rings[r].wait_comm &&
                     rings[q].wait_seq == rings[r].wait_seq;
        if (count > best_count) { best = r; best_count = count; }
    }
    int present = 0;
    for (int r = 0; r < size; r++) present += rings[r].present;
    fprintf(out, "flight recorder (%s): rings of %d of %d ranks\n", dir, present, size);
    if (best < 0) {
        fprintf(out, "  no rank was waiting when it wrote its ring (written on SIGUSR2?)\n");
        for (int r = 0; r < size; r++)
            if (rings[r].present)
                for (int c = 0; c < MAX_COMMS; c++)
                    if (rings[r].member[c])
                        fprintf(out, "  rank %d: communicator %d (%s), last %s #%lu (%s)\n", r, c,
                                comm_name(&rings[r], c), rings[r].last_what[c], rings[r].last_seq[c],
                                rings[r].last_done[c] ? "done" : "in flight");
        free(rings);
        return ACCEL_OK;
    }
    /* A rank that wrote its ring long after the first one was not running while the others
     * waited (stopped, or starved of its core): it timed out only once it ran again. */
    double first = 0;
    for (int r = 0; r < size; r++)
        if (rings[r].present && (first == 0 || rings[r].written < first)) first = rings[r].written;
    const int c = rings[best].wait_comm;
    const unsigned long seq = rings[best].wait_seq;
    const char *what = rings[best].wait_what;
    fprintf(out, "  waiting in %s #%lu on communicator %d (%s, %d ranks):", what, seq, c,
            comm_name(&rings[best], c), rings[best].member[c]);
    for (int r = 0; r < size; r++)
        if (rings[r].waiting && rings[r].wait_comm == c && rings[r].wait_seq == seq &&
            rings[r].written - first <= 0.5)
            fprintf(out, " %d", r);
    fprintf(out, "\n");
    int behind = 0;
    for (int r = 0; r < size; r++) {
        const ring_t *g = &rings[r];
        if (g->present && g->written - first > 0.5) {
            fprintf(out, "  rank %d wrote its ring %.1f s after the first: it was stalled (stopped, "
                    "or starved of its core) while the others waited%s\n", r, g->written - first,
                    g->waiting && g->wait_comm == c && g->wait_seq == seq ? " in this collective" : "");
            behind++;
            continue;
        }
        if (g->waiting && g->wait_comm == c && g->wait_seq == seq) continue;
        if (!g->present) {
            fprintf(out, "  rank %d left no ring: it never timed out in a collective (stopped, "
                    "killed, or stuck outside the communication layer) and did not complete %s #%lu\n",
                    r, what, seq);
            behind++;
        } else if (g->member[c] && g->last_seq[c] < seq && g->waiting) {
            /* Stuck in an earlier collective that the silent rank left unfinished, after the
             * others' part of it completed and they moved on. */
            fprintf(out, "  rank %d never entered %s #%lu: it waits in %s #%lu on communicator %d (%s)\n",
                    r, what, seq, g->wait_what, g->wait_seq, g->wait_comm, comm_name(g, g->wait_comm));
            behind++;
        } else if (g->member[c] && g->last_seq[c] < seq) {
            fprintf(out, "  rank %d never entered %s #%lu: its last on communicator %d was %s #%lu (%s)\n",
                    r, what, seq, c, g->last_what[c], g->last_seq[c], g->last_done[c] ? "done" : "in flight");
            behind++;
        } else if (g->member[c]) {
            fprintf(out, "  rank %d entered %s #%lu%s\n", r, what, seq,
                    g->waiting ? " but waits elsewhere" : "");
        }
    }
    if (!behind) fprintf(out, "  every rank with a ring entered it: the hang is inside the collective\n");
    free(rings);
    return ACCEL_OK;
}
