/* bf16 matrix products on oneDNN's matmul primitive (see gemm_cpu.h): whatever oneDNN finds fastest
 * on the CPU it runs on, AMX tiles (brg:avx512_core_amx) on Sapphire Rapids and later, its
 * AVX512-BF16 brgemm kernels elsewhere. Creating a primitive generates code (about a millisecond),
 * so each product shape gets one, made on first use and kept in the caller's cache; a model's step
 * has a few dozen shapes. Operands arrive as dense bf16 (the caller converts while copying), the
 * transposes are told to oneDNN through strides, alpha is an output scale and beta a sum post-op.
 * The primitives share one scratchpad (oneDNN's user scratchpad mode), grown to the largest any of
 * them asks for: by default each primitive would keep its own for as long as it lives. */
#include "build_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "gemm_cpu.h"

#if ACCEL_HAVE_ONEDNN

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define CACHE_SLOTS 64              /* product shapes kept; a model's step needs a few dozen */

typedef struct {
    int transA, transB, M, N, K, ldc;
    float alpha, beta;
} shape_key_t;

typedef struct {
    shape_key_t key;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, scratch; /* created without storage; pointed at the data per call */
    size_t scratch_bytes;           /* the scratchpad this primitive needs */
    const char *impl;               /* oneDNN's name for the implementation it picked */
} slot_t;

struct accel_gemm_onednn_cache {
    slot_t slot[CACHE_SLOTS];
    int used, next_evict;
    void *scratch;                  /* shared by every primitive of this cache */
    size_t scratch_bytes;
};

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static bool engine_ok;

#if defined(__x86_64__) && defined(__linux__)
/* Linux hands out AMX tile state only to processes that ask for it (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XTILEDATA, kernel 5.16+); without it the first tile instruction kills
 * the process. oneDNN asks too, but only after it has chosen AMX: asking first makes the choice
 * and the permission agree. A CPU or kernel without AMX answers no, and oneDNN then does not pick
 * AMX. */
static bool cpu_has_amx(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (d & (1u << 24)) && (d & (1u << 22));        /* AMX-TILE and AMX-BF16 */
}

static void request_amx(void)
{
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if (cpu_has_amx() && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        ACCEL_WARN0("the kernel refused AMX tile state (arch_prctl): bf16 products run without AMX");
}
#else
static bool cpu_has_amx(void) { return false; }
static void request_amx(void) {}
#endif

bool accel_gemm_cpu_amx(void) { return cpu_has_amx(); }

static void init_engine(void)
{
    request_amx();
    engine_ok = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success &&
                dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success;
}

static bool engine_ready(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_engine);
    return engine_ok;
}

static void slot_free(slot_t *s)
{
    if (s->prim) dnnl_primitive_destroy(s->prim);
    if (s->a) dnnl_memory_destroy(s->a);
    if (s->b) dnnl_memory_destroy(s->b);
    if (s->c) dnnl_memory_destroy(s->c);
    if (s->scratch) dnnl_memory_destroy(s->scratch);
    memset(s, 0, sizeof *s);
}

/* The primitive of one shape: A is stored M x K (K x M when transA), B K x N (N x K when transB),
 * both dense; C is M x N with leading dimension ldc. */
static accel_status_t slot_make(slot_t *s, const shape_key_t *k)
{
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    const dnnl_dims_t a_dims = { k->M, k->K }, b_dims = { k->K, k->N }, c_dims = { k->M, k->N };
    const dnnl_dims_t a_str = { k->transA ? 1 : k->K, k->transA ? k->M : 1 };
    const dnnl_dims_t b_str = { k->transB ? 1 : k->N, k->transB ? k->K : 1 };
    const dnnl_dims_t c_str = { k->ldc, 1 };
    dnnl_matmul_desc_t desc;
    dnnl_status_t e = dnnl_memory_desc_init_by_strides(&a_md, 2, a_dims, dnnl_bf16, a_str);
    if (e == dnnl_success) e = dnnl_memory_desc_init_by_strides(&b_md, 2, b_dims, dnnl_bf16, b_str);
    if (e == dnnl_success) e = dnnl_memory_desc_init_by_strides(&c_md, 2, c_dims, dnnl_f32, c_str);
    if (e == dnnl_success) e = dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md);
    if (e == dnnl_success) e = dnnl_primitive_attr_create(&attr);
    if (e == dnnl_success) e = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (e == dnnl_success && k->alpha != 1.0f)
        e = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &k->alpha);
    if (e == dnnl_success && k->beta != 0.0f) {
        e = dnnl_post_ops_create(&ops);
        if (e == dnnl_success) e = dnnl_post_ops_append_sum(ops, k->beta);
        if (e == dnnl_success) e = dnnl_primitive_attr_set_post_ops(attr, ops);
    }
    if (e == dnnl_success) e = dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL);
    if (e == dnnl_success) e = dnnl_primitive_create(&s->prim, pd);
    if (e == dnnl_success) e = dnnl_memory_create(&s->a, &a_md, engine, DNNL_MEMORY_NONE);
    if (e == dnnl_success) e = dnnl_memory_create(&s->b, &b_md, engine, DNNL_MEMORY_NONE);
    if (e == dnnl_success) e = dnnl_memory_create(&s->c, &c_md, engine, DNNL_MEMORY_NONE);
    if (e == dnnl_success) {
        const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        s->scratch_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
        if (s->scratch_bytes) e = dnnl_memory_create(&s->scratch, sp, engine, DNNL_MEMORY_NONE);
    }
    if (e == dnnl_success) {
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        s->impl = impl ? impl : "unknown";      /* a static string of oneDNN's */
        s->key = *k;
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (ops) dnnl_post_ops_destroy(ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (e != dnnl_success) {
        slot_free(s);
        ACCEL_ERROR("oneDNN cannot make a bf16 matmul of %d x %d x %d (transA %d, transB %d): "
                    "status %d\n--> hint: ACCEL_BF16_GEMM=kernel or emulate runs it without oneDNN",
                    k->M, k->N, k->K, k->transA, k->transB, (int)e);
        return ACCEL_ERR_UNSUPPORTED;
    }
    return ACCEL_OK;
}

static accel_status_t find_slot(accel_gemm_onednn_cache_t **cachep, const shape_key_t *k,
                                slot_t **out)
{
    if (!engine_ready()) {
        ACCEL_ERROR0("oneDNN cannot create its CPU engine\n--> hint: ACCEL_BF16_GEMM=kernel or "
                     "emulate runs bf16 products without oneDNN");
        return ACCEL_ERR_UNSUPPORTED;
    }
    accel_gemm_onednn_cache_t *c = *cachep;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c) return ACCEL_ERR_NOMEM;
        *cachep = c;
    }
    for (int i = 0; i < c->used; i++)
        if (!memcmp(&c->slot[i].key, k, sizeof *k)) {
            *out = &c->slot[i];
            return ACCEL_OK;
        }
    slot_t *s;
    if (c->used < CACHE_SLOTS) {
        s = &c->slot[c->used];
    } else {                        /* more shapes than slots: replace them in turn */
        s = &c->slot[c->next_evict];
        c->next_evict = (c->next_evict + 1) % CACHE_SLOTS;
        slot_free(s);
    }
    ACCEL_CHECK(slot_make(s, k));
    if (s == &c->slot[c->used]) c->used++;
    if (s->scratch_bytes > c->scratch_bytes) {
        void *p = NULL;
        if (posix_memalign(&p, 64, s->scratch_bytes)) {
            ACCEL_ERROR("cannot allocate %zu bytes of oneDNN scratchpad", s->scratch_bytes);
            return ACCEL_ERR_NOMEM;
        }
        free(c->scratch);
        c->scratch = p;
        c->scratch_bytes = s->scratch_bytes;
    }
    *out = s;
    return ACCEL_OK;
}

size_t accel_gemm_onednn_scratch_bytes(const accel_gemm_onednn_cache_t *cache)
{
    return cache ? cache->scratch_bytes : 0;
}

bool accel_gemm_onednn_available(void)
{
#if defined(__x86_64__)
    /* oneDNN's bf16 matmul needs AVX512-BF16 or AMX to be fast; elsewhere it emulates slowly. */
    __builtin_cpu_init();
    return cpu_has_amx() || (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw"));
#else
    return false;
#endif
}

accel_status_t accel_gemm_onednn_bf16(accel_gemm_onednn_cache_t **cache, bool transA, bool transB,
                                      int M, int N, int K, float alpha, const uint16_t *A,
                                      const uint16_t *B, float beta, float *C, int ldc,
                                      const char **impl)
{
    /* A key has no padding (ints and floats), so memcmp compares it whole. */
    const shape_key_t key = { transA, transB, M, N, K, ldc, alpha, beta };
    slot_t *s;
    ACCEL_CHECK(find_slot(cache, &key, &s));
    if (impl) *impl = s->impl;
    dnnl_status_t e = dnnl_memory_set_data_handle(s->a, (void *)A);
    if (e == dnnl_success) e = dnnl_memory_set_data_handle(s->b, (void *)B);
    if (e == dnnl_success) e = dnnl_memory_set_data_handle(s->c, C);
    if (e == dnnl_success && s->scratch) e = dnnl_memory_set_data_handle(s->scratch, (*cache)->scratch);
    const dnnl_exec_arg_t args[] = {
        { DNNL_ARG_SRC, s->a }, { DNNL_ARG_WEIGHTS, s->b }, { DNNL_ARG_DST, s->c },
        { DNNL_ARG_SCRATCHPAD, s->scratch },
    };
    if (e == dnnl_success) e = dnnl_primitive_execute(s->prim, stream, s->scratch ? 4 : 3, args);
    if (e == dnnl_success) e = dnnl_stream_wait(stream);
    if (e != dnnl_success) {
        ACCEL_ERROR("oneDNN's bf16 matmul of %d x %d x %d failed: status %d", M, N, K, (int)e);
        return ACCEL_ERR_UNSUPPORTED;
    }
    return ACCEL_OK;
}

void accel_gemm_onednn_free(accel_gemm_onednn_cache_t *cache)
{
    if (!cache) return;
    for (int i = 0; i < cache->used; i++) slot_free(&cache->slot[i]);
    free(cache->scratch);
    free(cache);
}

#else /* built without oneDNN */

bool accel_gemm_cpu_amx(void) { return false; }
bool accel_gemm_onednn_available(void) { return false; }
size_t accel_gemm_onednn_scratch_bytes(const accel_gemm_onednn_cache_t *cache) { (void)cache; return 0; }
accel_status_t accel_gemm_onednn_bf16(accel_gemm_onednn_cache_t **cache, bool transA, bool transB,
                                      int M, int N, int K, float alpha, const uint16_t *A,
                                      const uint16_t *B, float beta, float *C, int ldc,
                                      const char **impl)
{
    (void)cache, (void)transA, (void)transB, (void)M, (void)N, (void)K, (void)alpha, (void)A;
    (void)B, (void)beta, (void)C, (void)ldc, (void)impl;
    ACCEL_ERROR0("accel was built without oneDNN\n--> hint: ACCEL_BF16_GEMM=kernel or emulate");
    return ACCEL_ERR_UNSUPPORTED;
}
void accel_gemm_onednn_free(accel_gemm_onednn_cache_t *cache) { (void)cache; }

#endif
