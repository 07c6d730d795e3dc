/* In-register transpose of a 16 x 16 block of 32-bit words on AVX-512 (private to libaccel;
 * x86-64 GCC only): the bf16 kernel's packing and accel_cpu_transpose share it. */
#ifndef ACCEL_NN_TRANSPOSE_X86_H
#define ACCEL_NN_TRANSPOSE_X86_H

#include <immintrin.h>

/* r[i] holds row i on entry and column i on return: unpack pairs of words, then pairs of pairs,
 * then a 4 x 4 transpose of the 128-bit quarters. */
__attribute__((target("avx512f"))) static inline void accel_transpose16(__m512i r[16])
{
    __m512i t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {   /* r[4i + j], quarter c: word 4c + j of rows 4i .. 4i+3 */
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        __m512i x0 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44);
        __m512i x1 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xee);
        __m512i y0 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44);
        __m512i y1 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xee);
        t[j] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        t[4 + j] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
        t[8 + j] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        t[12 + j] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

#endif
