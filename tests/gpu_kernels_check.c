/* Every CUDA kernel of the GPT engine (src/nn/gpt_cuda_kernels.cu) against its host reference
 * (tests/gpu_mock.c's C implementation of the same contract), one kernel at a time, in fp32, bf16
 * and fp16, on awkward sizes (rows and widths that are not multiples of the warp or block size, a
 * vocabulary smaller than a block and one padded to 64). Prints the relative error of every output
 * buffer, so a failing gradient check can be traced to the kernel that is wrong.
 * Exits 77 ("SKIP: no CUDA device: <why>") where no GPU is usable.
 *
 * Built twice: gpu_kernels_check (the device kernels) and, with ACCEL_GPU_MOCK=1,
 * gpu_kernels_mockcheck (the emulated device, whose kernels ARE the reference: this only checks
 * the harness itself, on machines without a GPU). */
#include "build_config.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "gpu_ref.h"

#if ACCEL_HAVE_CUDA
#include <cuda_runtime.h>

/* buffer element types besides the activation dtypes */
enum { T_F32 = 100, T_I32, T_U8, T_F64, T_ACT };

typedef struct {
    const char *name;
    int type;                       /* T_*; T_ACT means the case's activation dtype */
    size_t n;
    int out;                        /* compared after the call */
    void *ref, *dev_host, *dev;
} buf_t;

typedef struct {
    int dt;
    buf_t b[16];
    int nb;
} kcase_t;

static unsigned long long g_rng = 88172645463325252ull;
static double urand(void)          /* [0, 1) */
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

static size_t esize(const kcase_t *c, int type)
{
    switch (type) {
    case T_F32: case T_I32: return 4;
    case T_U8: return 1;
    case T_F64: return 8;
    default: return accel_dtype_size((accel_dtype_t)c->dt);
    }
}

/* A buffer filled by `fill`: 'u' uniform(-scale, scale), 'p' uniform(0, scale), 'i' integers in
 * [0, scale), 'b' 0/1, 'z' zeros. Activation buffers hold values already rounded to the dtype. */
static void add(kcase_t *c, const char *name, int type, size_t n, int out, char fill, double scale)
{
    buf_t *b = &c->b[c->nb++];
    b->name = name;
    b->type = type;
    b->n = n;
    b->out = out;
    size_t bytes = esize(c, type) * (n ? n : 1);
    b->ref = calloc(1, bytes);
    b->dev_host = calloc(1, bytes);
    for (size_t i = 0; i < n; i++) {
        double v = fill == 'u' ? (2 * urand() - 1) * scale : fill == 'p' ? urand() * scale
                 : fill == 'i' ? floor(urand() * scale) : fill == 'b' ? (urand() < 0.5) : 0.0;
        switch (type) {
        case T_F32: ((float *)b->ref)[i] = (float)v; break;
        case T_I32: ((int32_t *)b->ref)[i] = (int32_t)v; break;
        case T_U8: ((unsigned char *)b->ref)[i] = (unsigned char)v; break;
        case T_F64: ((double *)b->ref)[i] = v; break;
        default: accel_dtype_store(b->ref, (accel_dtype_t)c->dt, i, v); break;
        }
    }
    memcpy(b->dev_host, b->ref, bytes);
    if (cudaMalloc(&b->dev, bytes) != cudaSuccess ||
        cudaMemcpy(b->dev, b->ref, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc/cudaMemcpy for %s failed\n", name);
        exit(1);
    }
}

static void *P(kcase_t *c, const char *name, int dev)
{
    for (int i = 0; i < c->nb; i++)
        if (!strcmp(c->b[i].name, name)) return dev ? c->b[i].dev : c->b[i].ref;
    fprintf(stderr, "no buffer %s\n", name);
    exit(1);
}

static double load(const kcase_t *c, const buf_t *b, const void *data, size_t i)
{
    switch (b->type) {
    case T_F32: return ((const float *)data)[i];
    case T_I32: return ((const int32_t *)data)[i];
    case T_U8: return ((const unsigned char *)data)[i];
    case T_F64: return ((const double *)data)[i];
    default: return accel_dtype_load(data, (accel_dtype_t)c->dt, i);
    }
}

static const char *dt_name(int dt) { return accel_dtype_name((accel_dtype_t)dt); }

/* Compare every output buffer; free everything. Returns the number of failures. */
static int finish(kcase_t *c, const char *kernel, int launch_err)
{
    int fails = 0;
    cudaError_t e = cudaDeviceSynchronize();
    if (launch_err || e != cudaSuccess) {
        printf("FAIL %-28s %-4s: launch %d, device %s\n", kernel, dt_name(c->dt), launch_err,
               cudaGetErrorString(e));
        fails++;
    }
    for (int i = 0; i < c->nb && !fails; i++) {
        buf_t *b = &c->b[i];
        if (!b->out) continue;
        cudaMemcpy(b->dev_host, b->dev, esize(c, b->type) * b->n, cudaMemcpyDeviceToHost);
        double d2 = 0, r2 = 0, worst = 0;
        size_t at = 0;
        for (size_t k = 0; k < b->n; k++) {
            double r = load(c, b, b->ref, k), g = load(c, b, b->dev_host, k), d = fabs(g - r);
            if (!(d <= worst)) { worst = d; at = k; }     /* NaN counts as worst */
            d2 += (g - r) * (g - r);
            r2 += r * r;
        }
        double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
        double tol = b->type != T_ACT || c->dt == ACCEL_F32 ? 1e-4 : c->dt == ACCEL_BF16 ? 1e-2 : 2e-3;
        int bad = !(rel <= tol);
        printf("%-4s %-28s %-4s %-9s relative error %.2e (tolerance %.0e), worst |diff| %.3g at %zu "
               "(ref %.6g, gpu %.6g)\n", bad ? "FAIL" : "ok", kernel, dt_name(c->dt), b->name, rel, tol,
               worst, at, load(c, b, b->ref, at), load(c, b, b->dev_host, at));
        fails += bad;
    }
    for (int i = 0; i < c->nb; i++) {
        free(c->b[i].ref);
        free(c->b[i].dev_host);
        cudaFree(c->b[i].dev);
    }
    c->nb = 0;
    return fails;
}

/* Run the call on the device, then on the host reference, then compare. */
#define RUN(kname, ...)                                                                         \
    do {                                                                                        \
        int dev = 1;                                                                            \
        int e_ = accel_gk_##kname(__VA_ARGS__);                                                 \
        dev = 0;                                                                                \
        ref_accel_gk_##kname(__VA_ARGS__);                                                      \
        (void)dev;                                                                              \
        fails += finish(&c, #kname, e_);                                                        \
    } while (0)
#define Q(name) P(&c, name, dev)

/* sizes: odd rows, widths off the warp size, heads of 16, a vocabulary padded from 1000 to 1024 */
enum { B_ = 2, T_ = 37, NH_ = 5, HS_ = 16, C_ = NH_ * HS_, V_ = 1000, VP_ = 1024 };

static int check_dtype(int dt)
{
    int fails = 0;
    kcase_t c = { .dt = dt };
    const size_t BT = (size_t)B_ * T_, BTC = BT * C_;
    const int stride = T_ + 1;

    add(&c, "x", T_ACT, BTC, 1, 'z', 0);
    add(&c, "tok", T_I32, (size_t)B_ * stride, 0, 'i', V_);
    add(&c, "wte", T_F32, (size_t)V_ * C_, 0, 'u', 1);
    add(&c, "wpe", T_F32, (size_t)T_ * C_, 0, 'u', 1);
    RUN(encoder_forward, dt, Q("x"), Q("tok"), stride, Q("wte"), Q("wpe"), B_, T_, C_, NULL);

    add(&c, "dwte", T_F32, (size_t)V_ * C_, 1, 'u', 1);
    add(&c, "dwpe", T_F32, (size_t)T_ * C_, 1, 'u', 1);
    add(&c, "d", T_ACT, BTC, 0, 'u', 1);
    add(&c, "tok", T_I32, (size_t)B_ * stride, 0, 'i', 7);    /* repeated ids: colliding atomics */
    RUN(encoder_backward, dt, Q("dwte"), Q("dwpe"), Q("d"), Q("tok"), stride, B_, T_, C_, NULL);

    const int widths[] = { C_, 768, 1531 };
    for (int wi = 0; wi < 3; wi++) {
        const int W = widths[wi];
        const size_t n = BT * (size_t)W;
        for (int fused = 0; fused < 2; fused++) {
            add(&c, "out", T_ACT, n, 1, 'z', 0);
            add(&c, "mean", T_F32, BT, 1, 'z', 0);
            add(&c, "rstd", T_F32, BT, 1, 'z', 0);
            add(&c, "res_out", T_ACT, n, fused, 'z', 0);
            add(&c, "res_in", T_ACT, n, 0, 'u', 2);
            add(&c, "y", T_ACT, n, 0, 'u', 1);
            add(&c, "bias", T_F32, (size_t)W, 0, 'u', 1);
            add(&c, "w", T_F32, (size_t)W, 0, 'u', 1);
            add(&c, "b", T_F32, (size_t)W, 0, 'u', 1);
            RUN(layernorm_forward, dt, Q("out"), Q("mean"), Q("rstd"), fused ? Q("res_out") : NULL,
                Q("res_in"), fused ? Q("y") : NULL, fused ? Q("bias") : NULL, Q("w"), Q("b"), (int)BT, W,
                NULL);
        }
        add(&c, "dx", T_ACT, n, 1, 'u', 1);
        add(&c, "dw", T_F32, (size_t)W, 1, 'u', 1);
        add(&c, "db", T_F32, (size_t)W, 1, 'u', 1);
        add(&c, "dout", T_ACT, n, 0, 'u', 1);
        add(&c, "xin", T_ACT, n, 0, 'u', 2);
        add(&c, "mean", T_F32, BT, 0, 'u', 0.5);
        add(&c, "rstd", T_F32, BT, 0, 'p', 2);
        add(&c, "w", T_F32, (size_t)W, 0, 'u', 1);
        RUN(layernorm_backward, dt, Q("dx"), Q("dw"), Q("db"), Q("dout"), Q("xin"), Q("mean"), Q("rstd"),
            Q("w"), (int)BT, W, NULL);
    }

    for (int nparts = 1; nparts <= 3; nparts += 2) {
        add(&c, "dst", T_ACT, BTC * nparts, 1, 'z', 0);
        add(&c, "src", T_ACT, BTC * nparts, 0, 'u', 1);
        add(&c, "bias", T_F32, (size_t)C_ * nparts, 0, 'u', 1);
        RUN(permute, dt, Q("dst"), Q("src"), nparts == 3 ? Q("bias") : NULL, B_, T_, NH_, HS_, nparts, NULL);
        add(&c, "dst", T_ACT, BTC * nparts, 1, 'z', 0);
        add(&c, "src", T_ACT, BTC * nparts, 0, 'u', 1);
        RUN(unpermute, dt, Q("dst"), Q("src"), B_, T_, NH_, HS_, nparts, NULL);
    }

    const int rows = B_ * NH_ * T_;
    const size_t tt = (size_t)rows * T_;
    add(&c, "P", T_ACT, tt, 1, 'z', 0);
    add(&c, "S", T_F32, tt, 0, 'u', 4);
    RUN(softmax_forward, dt, Q("P"), Q("S"), rows, T_, NULL);
    add(&c, "dS", T_ACT, tt, 1, 'z', 0);
    add(&c, "P", T_ACT, tt, 0, 'p', 0.2);
    add(&c, "dP", T_F32, tt, 0, 'u', 1);
    RUN(softmax_backward, dt, Q("dS"), Q("P"), Q("dP"), rows, T_, NULL);

    const size_t n4 = BT * 4 * C_;
    add(&c, "fch", T_ACT, n4, 1, 'u', 3);
    add(&c, "gelu", T_ACT, n4, 1, 'z', 0);
    add(&c, "bias", T_F32, (size_t)4 * C_, 0, 'u', 1);
    RUN(bias_gelu_forward, dt, Q("fch"), Q("gelu"), Q("bias"), n4, 4 * C_, NULL);
    add(&c, "d", T_ACT, n4, 1, 'u', 1);
    add(&c, "fch", T_ACT, n4, 0, 'u', 3);
    RUN(gelu_backward, dt, Q("d"), Q("fch"), n4, NULL);

    const int colw[] = { C_, 4 * C_, 33 };
    for (int i = 0; i < 3; i++) {
        add(&c, "db", T_F32, (size_t)colw[i], 1, 'u', 1);
        add(&c, "d", T_ACT, BT * colw[i], 0, 'u', 1);
        RUN(colsum_add, dt, Q("db"), Q("d"), (int)BT, colw[i], NULL);
    }

    const int vocab[][2] = { { V_, VP_ }, { 100, 128 } };     /* 100 < one block of threads */
    for (int vi = 0; vi < 2; vi++)
        for (int wg = 0; wg < 2; wg++) {
            const int V = vocab[vi][0], Vp = vocab[vi][1];
            add(&c, "logits", T_ACT, BT * Vp, wg, 'u', 6);
            add(&c, "losses", T_F32, BT, 1, 'z', 0);
            add(&c, "tok", T_I32, (size_t)B_ * stride, 0, 'i', V);
            RUN(classifier, dt, Q("logits"), Q("losses"), Q("tok"), stride, B_, T_, V, Vp,
                0.37f / T_, wg, NULL);
        }

    const size_t np = 100003;
    for (int adam = 0; adam < 2; adam++) {
        add(&c, "p", T_F32, np, 1, 'u', 1);
        add(&c, "lp", T_ACT, np, 1, 'z', 0);
        add(&c, "g", T_F32, np, 0, 'u', 1);
        add(&c, "m", T_F32, np, 1, 'u', 0.1);
        add(&c, "v", T_F32, np, 1, 'p', 0.01);
        add(&c, "decay", T_U8, np, 0, 'b', 0);
        if (adam)
            RUN(adamw, dt, Q("p"), Q("lp"), Q("g"), Q("m"), Q("v"), Q("decay"), np, 0.5f, 0.9f, 0.95f,
                1e-8f, 1e-3f / 0.1f, 1.0f / sqrtf(0.05f), 1e-3f * 0.1f, NULL);
        else
            RUN(sgd, dt, Q("p"), Q("lp"), Q("g"), Q("m"), Q("decay"), np, 0.5f, 1e-2f, 0.1f, 0.9f, NULL);
    }
    add(&c, "out", T_ACT, np, 1, 'z', 0);
    add(&c, "in", T_F32, np, 0, 'u', 3);
    RUN(cast, dt, Q("out"), Q("in"), np, NULL);
    if (dt == ACCEL_F32) {
        add(&c, "g", T_F32, np, 0, 'u', 1);
        add(&c, "sum", T_F64, 1, 1, 'u', 1);
        RUN(sumsq, Q("g"), np, Q("sum"), NULL);
    }
    return fails;
}
#endif

int main(int argc, char **argv)
{
    int provided;
    accel_mpi_defaults();
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    accel_log_set_identity(0, 1, "gpu_kernels_check");
    setvbuf(stdout, NULL, _IOLBF, 0);
#if !ACCEL_HAVE_CUDA
    printf("SKIP: accel was built without CUDA\n");
    MPI_Finalize();
    return 77;
#else
#if ACCEL_GPU_MOCK
    printf("device: emulated (its kernels are the reference: this checks the harness only)\n");
#else
    const char *why = NULL;
    if (accel_device_cuda_count(&why) == 0) {
        printf("SKIP: no CUDA device: %s\n", why ? why : "unknown reason");
        MPI_Finalize();
        return 77;
    }
    accel_device_t dev;
    if (accel_device_select("cuda", 0, &dev) != ACCEL_OK) {
        MPI_Finalize();
        return 1;
    }
    printf("device: %s\n", dev.name);
#endif
    int fails = 0;
    const int dts[] = { ACCEL_F32, ACCEL_BF16, ACCEL_F16 };
    for (int i = 0; i < 3; i++) fails += check_dtype(dts[i]);
    printf("%s: %d kernel output(s) outside tolerance\n", fails ? "FAIL" : "PASS", fails);
    MPI_Finalize();
    return fails ? 1 : 0;
#endif
}
