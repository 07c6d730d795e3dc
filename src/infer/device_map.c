/* Device maps: which tier (gpu, cpu, disk) holds each layer of a model, chosen automatically
 * within per-tier budgets (max_memory) or spelled out by the user, and the memory it implies:
 * resident weights, the ring of disk-layer slots and the workspace, all counted in the cpu budget. */
#include "build_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/infer.h"
#include "accel/log.h"
#include "infer_internal.h"

static const char *const g_tier_names[ACCEL_NTIERS] = { "gpu", "cpu", "disk" };

const char *accel_tier_name(accel_tier_t tier)
{
    return (unsigned)tier < ACCEL_NTIERS ? g_tier_names[tier] : "?";
}

int accel_tier_parse(const char *name)
{
    for (int i = 0; i < ACCEL_NTIERS; i++)
        if (!strcasecmp(name, g_tier_names[i])) return i;
    return -1;
}

const char *accel_infer_fmt_bytes(size_t bytes, char *out, size_t outlen)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
    if (bytes == SIZE_MAX) {
        snprintf(out, outlen, "unlimited");
        return out;
    }
    if (bytes < 1024) {
        snprintf(out, outlen, "%zu B", bytes);
        return out;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 3) { v /= 1024.0; u++; }
    snprintf(out, outlen, "%.*f %s", v < 10 ? 2 : 1, v, units[u]);
    return out;
}

accel_status_t accel_infer_layer_ranges(const accel_layout_t *layout, size_t *begin, size_t *end,
                                        int *tbeg, int *tend)
{
    const int L = layout->nlayers;
    long pg = sysconf(_SC_PAGESIZE);
    const size_t page = pg > 0 ? (size_t)pg / sizeof(float) : 1024;
    for (int l = 0; l < L; l++) {
        if (begin) begin[l] = 0;
        if (end) end[l] = 0;
        if (tbeg) tbeg[l] = 0;
        if (tend) tend[l] = 0;
    }
    int prev = -1;
    size_t last_end = 0;                /* end of the previous layer's last tensor */
    for (int i = 0; i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        if (t->layer < 0 || t->layer < prev) {
            ACCEL_ERROR("tensor '%s' (layer %d) is %s: layer-by-layer inference needs every "
                        "tensor in a layer, registered in layer order", t->name, t->layer,
                        t->layer < 0 ? "in no layer" : "registered after a later layer");
            return ACCEL_ERR_INVALID;
        }
        if (t->layer != prev) {
            /* A layer ends at its last tensor, rounded up to a page (not beyond the next layer):
             * the gap up to the next layer's start (huge-page alignment) is never touched. */
            if (prev >= 0 && end) {
                size_t e = (last_end + page - 1) / page * page;
                end[prev] = e < t->offset ? e : t->offset;
            }
            /* Layers skipped in between have no tensors: empty ranges here. */
            for (int l = prev + 1; l <= t->layer; l++) {
                if (begin) begin[l] = t->offset;
                if (end) end[l] = t->offset;
                if (tbeg) tbeg[l] = i;
                if (tend) tend[l] = i;
            }
            prev = t->layer;
        }
        last_end = t->offset + t->numel;
        if (tend) tend[t->layer] = i + 1;
    }
    if (prev >= 0 && end) {
        size_t e = (last_end + page - 1) / page * page;
        end[prev] = e < layout->numel ? e : layout->numel;
    }
    return ACCEL_OK;
}

accel_status_t accel_infer_pad_layout(accel_layout_t *layout)
{
    long page = sysconf(_SC_PAGESIZE);
    const size_t small = page > 0 ? (size_t)page / sizeof(float) : 1024;
    const size_t huge = ACCEL_INFER_HUGE_BYTES / sizeof(float);
    ACCEL_CHECK(accel_infer_layer_ranges(layout, NULL, NULL, NULL, NULL));
    /* Each layer starts on a page and the next one starts on a page after its end: a 2 MiB
     * (huge page) boundary for layers of at least ACCEL_INFER_HUGE_MIN bytes, so that streaming
     * them faults 2 MiB at a time (several times faster than 4 KiB pages). The gap after a layer
     * is address space only, never touched (accel_infer_layer_ranges ends the layer at its last
     * page). */
    size_t off = 0;
    for (int i = 0; i < layout->ntensors;) {
        int layer = layout->tensors[i].layer, j = i;
        size_t bytes = 0;
        for (; j < layout->ntensors && layout->tensors[j].layer == layer; j++)
            bytes += (layout->tensors[j].numel + ACCEL_ARENA_ALIGN - 1) / ACCEL_ARENA_ALIGN *
                     ACCEL_ARENA_ALIGN * sizeof(float);
        size_t a = bytes >= ACCEL_INFER_HUGE_MIN ? huge : small;
        off = (off + a - 1) / a * a;
        for (int k = i; k < j; k++) {
            layout->tensors[k].offset = off;
            off += (layout->tensors[k].numel + ACCEL_ARENA_ALIGN - 1) / ACCEL_ARENA_ALIGN *
                   ACCEL_ARENA_ALIGN;
        }
        off = (off + small - 1) / small * small;
        i = j;
    }
    layout->numel = off;
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ sizes */

accel_status_t accel_parse_max_memory(const char *spec, size_t max_memory[ACCEL_NTIERS], char *err,
                                      size_t errlen)
{
    char *copy = strdup(spec ? spec : "");
    if (!copy) return ACCEL_ERR_NOMEM;
    accel_status_t st = ACCEL_OK;
    char *save = NULL;
    int items = 0;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        items++;
        char *eq = strchr(item, '=');
        if (!eq) {
            snprintf(err, errlen, "--max-memory item '%s' is not TIER=SIZE\n--> hint: e.g. "
                     "--max-memory cpu=64MiB,disk=10GiB", item);
            st = ACCEL_ERR_INVALID;
            break;
        }
        *eq = '\0';
        int tier = accel_tier_parse(item);
        size_t b;
        if (tier < 0) {
            snprintf(err, errlen, "--max-memory: unknown tier '%s'\n--> hint: the tiers are gpu, "
                     "cpu and disk", item);
            st = ACCEL_ERR_INVALID;
            break;
        }
        if (!strcasecmp(eq + 1, "unlimited") || !strcasecmp(eq + 1, "inf")) {
            b = SIZE_MAX;
        } else if (accel_parse_bytes(eq + 1, &b) != ACCEL_OK) {
            snprintf(err, errlen, "--max-memory: '%s' is not a size for tier %s\n--> hint: write "
                     "sizes like 64MiB, 1.5GiB, 800MB or a number of bytes", eq + 1, item);
            st = ACCEL_ERR_INVALID;
            break;
        }
        max_memory[tier] = b;
    }
    if (st == ACCEL_OK && !items) {
        snprintf(err, errlen, "--max-memory needs at least one TIER=SIZE item");
        st = ACCEL_ERR_INVALID;
    }
    free(copy);
    return st;
}

/* ------------------------------------------------------------------ maps */

static accel_status_t map_alloc(accel_device_map_t *map, const accel_layout_t *layout,
                                const accel_map_opts_t *o)
{
    memset(map, 0, sizeof *map);
    map->nlayers = layout->nlayers;
    size_t n = (size_t)(layout->nlayers ? layout->nlayers : 1);
    map->tier = calloc(n, sizeof *map->tier);
    map->bytes = calloc(n, sizeof *map->bytes);
    size_t *begin = calloc(n, sizeof *begin), *end = calloc(n, sizeof *end);
    accel_status_t st = ACCEL_OK;
    if (!map->tier || !map->bytes || !begin || !end) st = ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK) st = accel_infer_layer_ranges(layout, begin, end, NULL, NULL);
    for (int l = 0; st == ACCEL_OK && l < layout->nlayers; l++)
        map->bytes[l] = (end[l] - begin[l]) * sizeof(float);
    free(begin);
    free(end);
    if (st != ACCEL_OK) {
        accel_device_map_free(map);
        return st;
    }
    map->ring_slots = o->ring_slots > 0 ? o->ring_slots : 2;
    map->workspace = o->workspace;
    memcpy(map->max_memory, o->max_memory, sizeof map->max_memory);
    return ACCEL_OK;
}

/* Totals of a filled map: bytes per tier, the ring (sized for the largest disk layer). */
static void map_totals(accel_device_map_t *map)
{
    size_t largest_disk = 0;
    memset(map->tier_bytes, 0, sizeof map->tier_bytes);
    for (int l = 0; l < map->nlayers; l++) {
        map->tier_bytes[map->tier[l]] += map->bytes[l];
        if (map->tier[l] == ACCEL_TIER_DISK && map->bytes[l] > largest_disk) largest_disk = map->bytes[l];
    }
    map->ring_bytes = (size_t)map->ring_slots * largest_disk;
    map->cpu_total = map->tier_bytes[ACCEL_TIER_CPU] + map->ring_bytes + map->workspace;
}

static void warn_gpu(const accel_map_opts_t *o)
{
    if (o->max_memory[ACCEL_TIER_GPU] > 0)
        ACCEL_WARN("max_memory gpu is ignored: the gpu tier is not available (accel's GPT computes "
                   "on the CPU; see docs/inference.md, 'GPU tier'); its budget counts as 0");
}

/* Check a filled map against the budgets; messages say which budget and by how much. */
static accel_status_t map_check(const accel_device_map_t *map, char *err, size_t errlen)
{
    char a[32], b[32], c[32], d[32], e[32];
    if (map->tier_bytes[ACCEL_TIER_GPU] > 0) {
        snprintf(err, errlen, "the device map puts layers on the gpu tier, which is not available "
                 "(accel's GPT computes on the CPU)\n--> hint: use cpu and disk");
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (map->ring_slots < 2) {
        snprintf(err, errlen, "the disk ring needs at least 2 slots (got %d): one layer computes "
                 "while the next one is read", map->ring_slots);
        return ACCEL_ERR_INVALID;
    }
    if (map->cpu_total > map->max_memory[ACCEL_TIER_CPU]) {
        snprintf(err, errlen, "the cpu budget %s is too small for this map: resident weights %s + "
                 "disk ring %d x %s + workspace %s = %s\n--> hint: raise --max-memory cpu=..., "
                 "put more layers on disk, or use --device-map auto",
                 accel_infer_fmt_bytes(map->max_memory[ACCEL_TIER_CPU], a, sizeof a),
                 accel_infer_fmt_bytes(map->tier_bytes[ACCEL_TIER_CPU], b, sizeof b),
                 map->ring_slots,
                 accel_infer_fmt_bytes(map->ring_slots ? map->ring_bytes / (size_t)map->ring_slots : 0, c, sizeof c),
                 accel_infer_fmt_bytes(map->workspace, d, sizeof d),
                 accel_infer_fmt_bytes(map->cpu_total, e, sizeof e));
        return ACCEL_ERR_NOMEM;
    }
    if (map->tier_bytes[ACCEL_TIER_DISK] > map->max_memory[ACCEL_TIER_DISK]) {
        snprintf(err, errlen, "the disk budget %s is smaller than the %s of layers that do not fit "
                 "in memory\n--> hint: raise --max-memory disk=... (disk layers are read from the "
                 "weights file itself; nothing is copied) or the cpu budget",
                 accel_infer_fmt_bytes(map->max_memory[ACCEL_TIER_DISK], a, sizeof a),
                 accel_infer_fmt_bytes(map->tier_bytes[ACCEL_TIER_DISK], b, sizeof b));
        return ACCEL_ERR_NOMEM;
    }
    return ACCEL_OK;
}

accel_status_t accel_device_map_auto(const accel_layout_t *layout, const accel_map_opts_t *o,
                                     accel_device_map_t *map)
{
    ACCEL_CHECK(map_alloc(map, layout, o));
    warn_gpu(o);
    const int L = map->nlayers, S = map->ring_slots;
    const size_t B = o->max_memory[ACCEL_TIER_CPU], W = o->workspace;
    size_t total = 0, largest = 0;
    for (int l = 0; l < L; l++) {
        total += map->bytes[l];
        if (map->bytes[l] > largest) largest = map->bytes[l];
    }
    char err[1024];
    if (W <= B && total <= B - W) {                  /* everything resident */
        for (int l = 0; l < L; l++) map->tier[l] = ACCEL_TIER_CPU;
        map_totals(map);
        goto check;
    }
    /* Some layers stream from disk through a ring of S slots of size s, s being one of the layer
     * sizes; layers larger than s must be resident. Try each s and keep the map with the most
     * resident bytes (then the smallest ring). In layer order, first fit: a layer goes to cpu
     * when it fits in what the ring and the workspace leave, else to disk. */
    {
        size_t best_used = 0, best_ring = SIZE_MAX, min_need = SIZE_MAX;
        accel_tier_t *cand = malloc(sizeof *cand * (L > 0 ? (size_t)L : 1));
        if (!cand) { accel_device_map_free(map); return ACCEL_ERR_NOMEM; }
        int found = 0;
        for (int ls = 0; ls < L; ls++) {
            size_t s = map->bytes[ls];
            if (!s) continue;
            int dup = 0;                             /* each distinct size once */
            for (int k = 0; k < ls && !dup; k++) dup = map->bytes[k] == s;
            if (dup) continue;
            size_t must = 0;                         /* layers the ring cannot carry */
            for (int l = 0; l < L; l++)
                if (map->bytes[l] > s) must += map->bytes[l];
            size_t need = W + (size_t)S * s + must;
            if (need < min_need) min_need = need;
            if (need > B) continue;
            size_t used = 0, ring = 0;
            int ndisk = 0;
            for (int l = 0; l < L; l++) {
                size_t bl = map->bytes[l];
                /* Room for this layer besides the ring, the workspace and the layers that must
                 * stay resident later on (larger than s). */
                size_t later_must = 0;
                for (int k = l + 1; k < L; k++)
                    if (map->bytes[k] > s) later_must += map->bytes[k];
                if (bl > s || W + (size_t)S * s + used + bl + later_must <= B) {
                    cand[l] = ACCEL_TIER_CPU;
                    used += bl;
                } else {
                    cand[l] = ACCEL_TIER_DISK;
                    ndisk++;
                    if ((size_t)S * bl > ring) ring = (size_t)S * bl;
                }
            }
            if (!ndisk) continue;
            if (!found || used > best_used || (used == best_used && ring < best_ring)) {
                found = 1;
                best_used = used;
                best_ring = ring;
                memcpy(map->tier, cand, sizeof *cand * (size_t)L);
            }
        }
        free(cand);
        if (!found) {
            char a[32], b[32], c[32], d[32];
            ACCEL_ERROR("max_memory cpu=%s cannot run this model: it needs at least %s (workspace "
                        "%s + a ring of %d slots for the disk layers + the layers too large to "
                        "stream; the largest layer is %s)\n--> hint: raise --max-memory cpu=...",
                        accel_infer_fmt_bytes(B, a, sizeof a),
                        accel_infer_fmt_bytes(min_need, b, sizeof b),
                        accel_infer_fmt_bytes(W, c, sizeof c), S,
                        accel_infer_fmt_bytes(largest, d, sizeof d));
            accel_device_map_free(map);
            return ACCEL_ERR_NOMEM;
        }
        map_totals(map);
    }
check:;
    accel_status_t st = map_check(map, err, sizeof err);
    if (st != ACCEL_OK) {
        ACCEL_ERROR("%s", err);
        accel_device_map_free(map);
    }
    return st;
}

static int parse_int(const char *s, const char *e, int *out)
{
    if (s == e) return -1;
    long v = 0;
    for (const char *p = s; p < e; p++) {
        if (!isdigit((unsigned char)*p) || v > 100000000) return -1;
        v = v * 10 + (*p - '0');
    }
    *out = (int)v;
    return 0;
}

accel_status_t accel_device_map_parse(const char *spec, const accel_layout_t *layout,
                                      const accel_map_opts_t *o, accel_device_map_t *map,
                                      char *err, size_t errlen)
{
    ACCEL_CHECK(map_alloc(map, layout, o));
    warn_gpu(o);
    const int L = map->nlayers;
    int *set = calloc((size_t)(L ? L : 1), sizeof *set);
    char *copy = strdup(spec ? spec : "");
    accel_status_t st = (!set || !copy) ? ACCEL_ERR_NOMEM : ACCEL_OK;
    int star = -1;
    char *save = NULL;
    for (char *item = st == ACCEL_OK ? strtok_r(copy, ",", &save) : NULL; item && st == ACCEL_OK;
         item = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*item)) item++;
        char *eq = strchr(item, '=');
        int tier = eq ? accel_tier_parse(eq + 1) : -1;
        if (!eq || tier < 0) {
            snprintf(err, errlen, "--device-map item '%s' is not LAYERS=TIER (TIER: gpu, cpu or "
                     "disk)\n--> hint: e.g. --device-map 0-3=cpu,4-=disk (layers 0..%d)", item,
                     L - 1);
            st = ACCEL_ERR_INVALID;
            break;
        }
        if (eq - item == 1 && item[0] == '*') {
            star = tier;
            continue;
        }
        char *dash = memchr(item, '-', (size_t)(eq - item));
        int a, b;
        int bad = dash ? parse_int(item, dash, &a) || (dash + 1 == eq ? (b = L - 1, 0)
                                                                      : parse_int(dash + 1, eq, &b))
                       : parse_int(item, eq, &a);
        if (!dash) b = a;
        if (bad || a > b || b >= L) {
            snprintf(err, errlen, "--device-map: '%.*s' is not a layer or a range of layers of "
                     "this model (layers 0..%d: 0 = embeddings, 1..%d = blocks, %d = final norm for "
                     "the GPT)", (int)(eq - item), item, L - 1, L - 2, L - 1);
            st = ACCEL_ERR_INVALID;
            break;
        }
        for (int l = a; l <= b && st == ACCEL_OK; l++) {
            if (set[l]) {
                snprintf(err, errlen, "--device-map names layer %d twice", l);
                st = ACCEL_ERR_INVALID;
            }
            set[l] = 1;
            map->tier[l] = (accel_tier_t)tier;
        }
    }
    for (int l = 0; l < L && st == ACCEL_OK; l++) {
        if (set[l]) continue;
        if (star < 0) {
            snprintf(err, errlen, "--device-map gives no tier to layer %d\n--> hint: name every "
                     "layer 0..%d, or end with *=TIER for the rest", l, L - 1);
            st = ACCEL_ERR_INVALID;
        }
        map->tier[l] = (accel_tier_t)star;
    }
    free(set);
    free(copy);
    if (st == ACCEL_OK) {
        map_totals(map);
        st = map_check(map, err, errlen);
    }
    if (st != ACCEL_OK) accel_device_map_free(map);
    return st;
}

void accel_device_map_free(accel_device_map_t *map)
{
    free(map->tier);
    free(map->bytes);
    map->tier = NULL;
    map->bytes = NULL;
    map->nlayers = 0;
}

/* "wte, wpe", "h.3.* (12 tensors)", "lnf.*": a short name for a layer's tensors. */
static void layer_label(const accel_layout_t *layout, int tb, int te, char *out, size_t outlen)
{
    if (te <= tb) {
        snprintf(out, outlen, "(no tensors)");
        return;
    }
    const char *first = layout->tensors[tb].name;
    size_t common = strlen(first);
    for (int i = tb + 1; i < te; i++) {
        const char *n = layout->tensors[i].name;
        size_t k = 0;
        while (k < common && n[k] == first[k]) k++;
        common = k;
    }
    while (common > 0 && first[common - 1] != '.') common--;  /* up to a dot */
    if (te - tb == 1) snprintf(out, outlen, "%s", first);
    else if (common > 0) snprintf(out, outlen, "%.*s* (%d tensors)", (int)common, first, te - tb);
    else if (te - tb == 2) snprintf(out, outlen, "%s, %s", first, layout->tensors[tb + 1].name);
    else snprintf(out, outlen, "%s, ... (%d tensors)", first, te - tb);
}

void accel_device_map_print(const accel_device_map_t *map, const accel_layout_t *layout, FILE *out)
{
    int n = map->nlayers ? map->nlayers : 1;
    int *tb = calloc((size_t)n, sizeof *tb), *te = calloc((size_t)n, sizeof *te);
    if (tb && te) accel_infer_layer_ranges(layout, NULL, NULL, tb, te);
    char a[32], b[32], c[32], d[32], e[32];
    fprintf(out, "device map (layer -> tier, bytes):\n");
    fprintf(out, "  %5s  %-28s %-5s %12s\n", "layer", "tensors", "tier", "bytes");
    for (int l = 0; l < map->nlayers; l++) {
        char label[160] = "";
        if (tb && te) layer_label(layout, tb[l], te[l], label, sizeof label);
        fprintf(out, "  %5d  %-28s %-5s %12s\n", l, label, accel_tier_name(map->tier[l]),
                accel_infer_fmt_bytes(map->bytes[l], a, sizeof a));
    }
    free(tb);
    free(te);
    fprintf(out, "  gpu:  %s (no GPU tier: accel's GPT computes on the CPU)\n",
            accel_infer_fmt_bytes(map->tier_bytes[ACCEL_TIER_GPU], a, sizeof a));
    fprintf(out, "  cpu:  %s resident weights + disk ring %d x %s + workspace %s = %s of %s\n",
            accel_infer_fmt_bytes(map->tier_bytes[ACCEL_TIER_CPU], a, sizeof a), map->ring_slots,
            accel_infer_fmt_bytes(map->ring_slots ? map->ring_bytes / (size_t)map->ring_slots : 0,
                                  b, sizeof b),
            accel_infer_fmt_bytes(map->workspace, c, sizeof c),
            accel_infer_fmt_bytes(map->cpu_total, d, sizeof d),
            accel_infer_fmt_bytes(map->max_memory[ACCEL_TIER_CPU], e, sizeof e));
    fprintf(out, "  disk: %s read from the weights file when used, prefetched %d layer(s) ahead\n",
            accel_infer_fmt_bytes(map->tier_bytes[ACCEL_TIER_DISK], a, sizeof a),
            map->ring_slots - 1);
}
