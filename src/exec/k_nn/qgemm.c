/* Exact 8-bit integer matrix products with int32 accumulation: operands
 * minus their zero points fit int16 ([-255, 255]), B is packed in pairs
 * of rows interleaved per column, so that one pmaddwd (AVX2) computes
 * a[k]*b[k][j] + a[k+1]*b[k+1][j] for 8 columns at once (each pair sum is
 * at most 2 * 255 * 255, no saturation). A 4x16 tile lives in eight
 * accumulators. Without AVX2 a scalar loop reads the same layout.
 * MatMulInteger, ConvInteger's and com.microsoft DynamicQuantizeMatMul use
 * it (docs/EXECUTOR.md). */
#include "nn_common.h"
#include "onnxscope/threadpool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QG_X86 1
#endif

/* Vectorized clones of the element loops (no fp-contract: results must
 * equal the unfused Mul/Add of the standard form). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define QG_CLONES __attribute__((target_clones("arch=x86-64-v3", "default"), optimize("O3")))
#else
#define QG_CLONES
#endif

#define QNR 16  /* columns per packed panel */
#define QMR 4   /* rows per tile */

int64_t nn_qgemm_kp(int64_t K)
{
    return (K + 1) & ~(int64_t)1;
}

static int64_t zp_at(const ox_tensor *zp, int64_t idx)
{
    if (!zp || zp->numel == 0)
        return 0;
    return nn_get_i(zp, zp->numel == 1 ? 0 : idx < zp->numel ? idx : 0);
}

static inline int32_t q8(const void *d, bool is_signed, int64_t i)
{
    return is_signed ? ((const int8_t *)d)[i] : ((const uint8_t *)d)[i];
}

int16_t *nn_qgemm_pack_a(const ox_tensor *a, int64_t off, int64_t M, int64_t K,
                         const ox_tensor *zp)
{
    int64_t Kp = nn_qgemm_kp(K);
    int16_t *v = calloc((size_t)(M * Kp + 1), sizeof *v);
    if (!v)
        return NULL;
    const void *d = ox_tensor_data(a);
    bool s = a->dtype == OX_DT_INT8;
    for (int64_t i = 0; i < M; i++) {
        int32_t z = (int32_t)zp_at(zp, i);
        for (int64_t k = 0; k < K; k++)
            v[i * Kp + k] = (int16_t)(q8(d, s, off + i * K + k) - z);
    }
    return v;
}

int16_t *nn_qgemm_pack_b(const ox_tensor *b, int64_t off, int64_t K, int64_t N,
                         const ox_tensor *zp)
{
    int64_t Kp = nn_qgemm_kp(K), nb = (N + QNR - 1) / QNR;
    int16_t *v = calloc((size_t)(nb * Kp * QNR + 1), sizeof *v);
    int32_t *z = calloc((size_t)(N + 1), sizeof *z);
    if (!v || !z) {
        free(v);
        free(z);
        return NULL;
    }
    for (int64_t j = 0; j < N; j++)
        z[j] = (int32_t)zp_at(zp, j);
    const void *d = ox_tensor_data(b);
    bool s = b->dtype == OX_DT_INT8;
    for (int64_t k = 0; k < K; k++) {
        const int64_t row = off + k * N;
        int16_t *pk = v + (k & ~(int64_t)1) * QNR + (k & 1);
        for (int64_t jb = 0; jb < nb; jb++) {
            /* panel jb, pair k/2, column jj, slot k%2 */
            int16_t *dst = pk + jb * Kp * QNR;
            int64_t j0 = jb * QNR, n = N - j0 < QNR ? N - j0 : QNR;
            if (s) {
                const int8_t *src = (const int8_t *)d + row + j0;
                for (int64_t jj = 0; jj < n; jj++)
                    dst[jj * 2] = (int16_t)(src[jj] - z[j0 + jj]);
            } else {
                const uint8_t *src = (const uint8_t *)d + row + j0;
                for (int64_t jj = 0; jj < n; jj++)
                    dst[jj * 2] = (int16_t)(src[jj] - z[j0 + jj]);
            }
        }
    }
    free(z);
    return v;
}

/* C[0:mr, 0:nr] = A rows x panel, scalar. */
static void tile_c(int64_t kp2, const int16_t *const *ar, int mr, const int16_t *bp, int32_t *C,
                   int64_t ldc, int nr)
{
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) {
            /* int32 wrap-around like the vector paths (no signed overflow). */
            uint32_t acc = 0;
            for (int64_t k = 0; k < kp2; k++)
                acc += (uint32_t)(ar[r][2 * k] * bp[k * 2 * QNR + 2 * j] +
                                  ar[r][2 * k + 1] * bp[k * 2 * QNR + 2 * j + 1]);
            C[r * ldc + j] = (int32_t)acc;
        }
}

#ifdef QG_X86
__attribute__((target("avx2"))) static void tile_avx2(int64_t kp2, const int16_t *const *ar,
                                                      int mr, const int16_t *bp, int32_t *C,
                                                      int64_t ldc, int nr)
{
    const int16_t *a0 = ar[0], *a1 = ar[mr > 1 ? 1 : 0], *a2 = ar[mr > 2 ? 2 : 0],
                  *a3 = ar[mr > 3 ? 3 : 0];
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00;
    __m256i c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    for (int64_t k = 0; k < kp2; k++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(bp + k * 2 * QNR));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + k * 2 * QNR + 16));
        int32_t p0, p1, p2, p3;
        memcpy(&p0, a0 + 2 * k, 4);
        memcpy(&p1, a1 + 2 * k, 4);
        memcpy(&p2, a2 + 2 * k, 4);
        memcpy(&p3, a3 + 2 * k, 4);
        __m256i v0 = _mm256_set1_epi32(p0), v1 = _mm256_set1_epi32(p1);
        __m256i v2 = _mm256_set1_epi32(p2), v3 = _mm256_set1_epi32(p3);
        c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(v0, b0));
        c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(v0, b1));
        c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(v1, b0));
        c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(v1, b1));
        c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(v2, b0));
        c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(v2, b1));
        c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(v3, b0));
        c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(v3, b1));
    }
    int32_t acc[QMR][QNR];
    _mm256_storeu_si256((__m256i *)acc[0], c00);
    _mm256_storeu_si256((__m256i *)(acc[0] + 8), c01);
    _mm256_storeu_si256((__m256i *)acc[1], c10);
    _mm256_storeu_si256((__m256i *)(acc[1] + 8), c11);
    _mm256_storeu_si256((__m256i *)acc[2], c20);
    _mm256_storeu_si256((__m256i *)(acc[2] + 8), c21);
    _mm256_storeu_si256((__m256i *)acc[3], c30);
    _mm256_storeu_si256((__m256i *)(acc[3] + 8), c31);
    for (int r = 0; r < mr; r++)
        memcpy(C + r * ldc, acc[r], (size_t)nr * sizeof(int32_t));
}
#endif

/* Few rows (M = 1 decoding): packing B would cost more than the product,
 * so B is read in place, row by row: acc[j] += a[k] * b[k][j], which the
 * compiler vectorizes (8-bit loads widened to int32); B's zero point is
 * taken out at the end: sum a (b - zb) = sum a b - zb sum a. */

QG_CLONES
static void row_s8(uint32_t *restrict acc, const int8_t *restrict b, int32_t a, int64_t N)
{
    for (int64_t j = 0; j < N; j++)
        acc[j] += (uint32_t)(a * (int32_t)b[j]);
}

QG_CLONES
static void row_u8(uint32_t *restrict acc, const uint8_t *restrict b, int32_t a, int64_t N)
{
    for (int64_t j = 0; j < N; j++)
        acc[j] += (uint32_t)(a * (int32_t)b[j]);
}

void nn_qgemm_small(int64_t M, int64_t N, int64_t K, const int16_t *A, const ox_tensor *b,
                    int64_t off, const ox_tensor *zp, int32_t *C)
{
    int64_t Kp = nn_qgemm_kp(K);
    bool s = b->dtype == OX_DT_INT8;
    const uint8_t *d = (const uint8_t *)ox_tensor_data(b) + off;
    for (int64_t i = 0; i < M; i++) {
        /* Unsigned: int32 wrap-around as ONNX's int32 accumulation, no UB. */
        uint32_t *acc = (uint32_t *)(C + i * N);
        int32_t sum = 0;
        memset(acc, 0, (size_t)N * sizeof *acc);
        for (int64_t k = 0; k < K; k++) {
            int32_t a = A[i * Kp + k];
            sum += a;
            if (!a)
                continue;
            if (s)
                row_s8(acc, (const int8_t *)d + k * N, a, N);
            else
                row_u8(acc, d + k * N, a, N);
        }
        if (zp && zp->numel)
            for (int64_t j = 0; j < N; j++)
                acc[j] -= (uint32_t)zp_at(zp, j) * (uint32_t)sum;
    }
}


/* ---- AVX-512 VNNI: uint8 A x int8 B ------------------------------------------
 * vpdpbusd adds four u8*s8 products per int32 lane (no saturation), so the
 * raw operands go in unchanged and the zero points come out afterwards:
 * sum (a - za)(b - zb) = sum ab - za colsum(b) - zb rowsum(a) + K za zb.
 * B is packed in panels of 32 columns, [K/4][32][4] bytes; a 6x32 tile
 * lives in twelve zmm accumulators. */
#define VNR 32
#define VMR 6

#ifdef QG_X86
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
vnni_tile(int64_t kq, const uint8_t *const *ar, int mr, const int8_t *bp, int32_t *C,
          int64_t ldc, int nr)
{
    /* Twelve named accumulators: an array indexed in a loop would live in
     * memory at -O2. */
    __m512i z = _mm512_setzero_si512();
    __m512i c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z;
    __m512i c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
    const uint8_t *a0 = ar[0], *a1 = ar[1], *a2 = ar[2], *a3 = ar[3], *a4 = ar[4], *a5 = ar[5];
    for (int64_t k = 0; k < kq; k++) {
        __m512i b0 = _mm512_loadu_si512((const void *)(bp + k * VNR * 4));
        __m512i b1 = _mm512_loadu_si512((const void *)(bp + k * VNR * 4 + 64));
        int32_t p;
#define VSTEP(A, C0, C1)                                   \
        memcpy(&p, (A) + 4 * k, 4);                        \
        {                                                  \
            __m512i av = _mm512_set1_epi32(p);             \
            C0 = _mm512_dpbusd_epi32(C0, av, b0);          \
            C1 = _mm512_dpbusd_epi32(C1, av, b1);          \
        }
        VSTEP(a0, c00, c01)
        VSTEP(a1, c10, c11)
        VSTEP(a2, c20, c21)
        VSTEP(a3, c30, c31)
        VSTEP(a4, c40, c41)
        VSTEP(a5, c50, c51)
#undef VSTEP
    }
    int32_t acc[VMR][VNR];
    _mm512_storeu_si512((void *)acc[0], c00);
    _mm512_storeu_si512((void *)(acc[0] + 16), c01);
    _mm512_storeu_si512((void *)acc[1], c10);
    _mm512_storeu_si512((void *)(acc[1] + 16), c11);
    _mm512_storeu_si512((void *)acc[2], c20);
    _mm512_storeu_si512((void *)(acc[2] + 16), c21);
    _mm512_storeu_si512((void *)acc[3], c30);
    _mm512_storeu_si512((void *)(acc[3] + 16), c31);
    _mm512_storeu_si512((void *)acc[4], c40);
    _mm512_storeu_si512((void *)(acc[4] + 16), c41);
    _mm512_storeu_si512((void *)acc[5], c50);
    _mm512_storeu_si512((void *)(acc[5] + 16), c51);
    for (int r = 0; r < mr; r++)
        memcpy(C + r * ldc, acc[r], (size_t)nr * sizeof(int32_t));
}
#endif

bool nn_qgemm_vnni_ok(ox_dtype ta, ox_dtype tb)
{
#ifdef QG_X86
    return ta == OX_DT_UINT8 && tb == OX_DT_INT8 && !getenv("ONNXSCOPE_NO_SIMD_QGEMM") &&
           !getenv("ONNXSCOPE_NO_VNNI") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
#else
    (void)ta;
    (void)tb;
    return false;
#endif
}

static int64_t kq_of(int64_t K)
{
    return (K + 3) / 4;
}

int8_t *nn_qgemm_vnni_pack_b(const int8_t *b, int64_t K, int64_t N, int32_t *colsum)
{
    int64_t kq = kq_of(K), nb = (N + VNR - 1) / VNR;
    int8_t *v = calloc((size_t)(nb * kq * VNR * 4 + 64), 1);
    if (!v)
        return NULL;
    memset(colsum, 0, (size_t)N * sizeof *colsum);
    for (int64_t k = 0; k < K; k++) {
        const int8_t *src = b + k * N;
        for (int64_t j = 0; j < N; j++)
            colsum[j] += src[j];
    }
    /* Destination order: panel, group of 4 rows, column, row in group. */
    for (int64_t jb = 0; jb < nb; jb++) {
        int64_t j0 = jb * VNR, n = N - j0 < VNR ? N - j0 : VNR;
        for (int64_t q = 0; q < kq; q++) {
            int8_t *dst = v + (jb * kq + q) * VNR * 4;
            for (int t = 0; t < 4 && q * 4 + t < K; t++) {
                const int8_t *src = b + (q * 4 + t) * N + j0;
                for (int64_t jj = 0; jj < n; jj++)
                    dst[jj * 4 + t] = src[jj];
            }
        }
    }
    return v;
}

typedef struct vjob {
    int64_t M, N, K;
    const uint8_t *A;   /* rows padded to 4 * kq bytes */
    const int8_t *Bp;
    int32_t *C;
    bool by_rows;
} vjob;

static void vnni_block(const vjob *j, int64_t i0, int64_t i1, int64_t b0, int64_t b1)
{
#ifdef QG_X86
    int64_t kq = kq_of(j->K);
    for (int64_t jb = b0; jb < b1; jb++) {
        const int8_t *bp = j->Bp + jb * kq * VNR * 4;
        int nr = (int)(j->N - jb * VNR < VNR ? j->N - jb * VNR : VNR);
        for (int64_t i = i0; i < i1; i += VMR) {
            int mr = (int)(i1 - i < VMR ? i1 - i : VMR);
            const uint8_t *ar[VMR];
            for (int r = 0; r < VMR; r++)
                ar[r] = j->A + (i + (r < mr ? r : 0)) * kq * 4;
            vnni_tile(kq, ar, mr, bp, j->C + i * j->N + jb * VNR, j->N, nr);
        }
    }
#else
    (void)j, (void)i0, (void)i1, (void)b0, (void)b1;
#endif
}

static void vchunk(void *ctx, int64_t b, int64_t e)
{
    const vjob *j = ctx;
    int64_t nb = (j->N + VNR - 1) / VNR;
    if (j->by_rows) {
        int64_t i1 = e * VMR < j->M ? e * VMR : j->M;
        vnni_block(j, b * VMR, i1, 0, nb);
    } else {
        vnni_block(j, 0, j->M, b, e);
    }
}

void nn_qgemm_vnni(struct ox_thread_pool *pool, int64_t M, int64_t N, int64_t K,
                   const uint8_t *A, const int8_t *Bp, int32_t *C)
{
    vjob j = {.M = M, .N = N, .K = K, .A = A, .Bp = Bp, .C = C};
    int64_t nb = (N + VNR - 1) / VNR, mb = (M + VMR - 1) / VMR;
    int threads = ox_thread_pool_size(pool);
    if (threads <= 1 || M * N * K < 262144LL * threads) {
        vnni_block(&j, 0, M, 0, nb);
        return;
    }
    j.by_rows = mb >= nb;
    ox_parallel_for(pool, j.by_rows ? mb : nb, 1, vchunk, &j);
}

int64_t nn_qgemm_vnni_lda(int64_t K)
{
    return kq_of(K) * 4;
}

typedef void (*tile_fn)(int64_t, const int16_t *const *, int, const int16_t *, int32_t *,
                        int64_t, int);

static tile_fn pick_tile(void)
{
#ifdef QG_X86
    if (!getenv("ONNXSCOPE_NO_SIMD_QGEMM") && __builtin_cpu_supports("avx2"))
        return tile_avx2;
#endif
    return tile_c;
}

typedef struct qjob {
    int64_t M, N, Kp;
    const int16_t *A, *Bp;
    int32_t *C;
    tile_fn fn;
    bool by_rows;   /* chunks are row groups of QMR (else column panels) */
} qjob;

static void run_block(const qjob *j, int64_t i0, int64_t i1, int64_t b0, int64_t b1)
{
    for (int64_t jb = b0; jb < b1; jb++) {
        const int16_t *bp = j->Bp + jb * j->Kp * QNR;
        int nr = (int)(j->N - jb * QNR < QNR ? j->N - jb * QNR : QNR);
        for (int64_t i = i0; i < i1; i += QMR) {
            int mr = (int)(i1 - i < QMR ? i1 - i : QMR);
            const int16_t *ar[QMR];
            for (int r = 0; r < QMR; r++)
                ar[r] = j->A + (i + (r < mr ? r : 0)) * j->Kp;
            j->fn(j->Kp / 2, ar, mr, bp, j->C + i * j->N + jb * QNR, j->N, nr);
        }
    }
}

static void qchunk(void *ctx, int64_t b, int64_t e)
{
    const qjob *j = ctx;
    int64_t nb = (j->N + QNR - 1) / QNR;
    if (j->by_rows) {
        int64_t i1 = e * QMR < j->M ? e * QMR : j->M;
        run_block(j, b * QMR, i1, 0, nb);
    } else {
        run_block(j, 0, j->M, b, e);
    }
}

void nn_qgemm(struct ox_thread_pool *pool, int64_t M, int64_t N, int64_t K, const int16_t *A,
              const int16_t *Bp, int32_t *C)
{
    qjob j = {.M = M, .N = N, .Kp = nn_qgemm_kp(K), .A = A, .Bp = Bp, .C = C,
              .fn = pick_tile()};
    int64_t nb = (N + QNR - 1) / QNR, mb = (M + QMR - 1) / QMR;
    int threads = ox_thread_pool_size(pool);
    if (threads <= 1 || M * N * K < 262144LL * threads) {
        run_block(&j, 0, M, 0, nb);
        return;
    }
    /* Split the larger side; panels of B stay hot in each thread's cache. */
    j.by_rows = mb >= nb;
    ox_parallel_for(pool, j.by_rows ? mb : nb, 1, qchunk, &j);
}

QG_CLONES
void nn_qgemm_u8_rows(const uint8_t *restrict src, int64_t M, int64_t K, int64_t lda,
                      uint8_t *restrict dst, int32_t *restrict rowsum)
{
    for (int64_t i = 0; i < M; i++) {
        int32_t sum = 0;
        const uint8_t *s = src + i * K;
        for (int64_t k = 0; k < K; k++)
            sum += s[k];
        memcpy(dst + i * lda, s, (size_t)K);
        rowsum[i] = sum;
    }
}

QG_CLONES
void nn_qgemm_sub_colsum(int32_t *restrict Y, int64_t N, int32_t za,
                         const int32_t *restrict colsum)
{
    uint32_t *y = (uint32_t *)Y;
    for (int64_t j = 0; j < N; j++)
        y[j] -= (uint32_t)za * (uint32_t)colsum[j];
}

QG_CLONES
void nn_qgemm_dequant(const int32_t *restrict Y, int64_t rows, int64_t N,
                      const float *restrict mul, const float *restrict bias, float *restrict out)
{
    for (int64_t i = 0; i < rows; i++) {
        const int32_t *y = Y + i * N;
        float *o = out + i * N;
        if (bias)
            for (int64_t j = 0; j < N; j++) {
                float v = (float)y[j] * mul[j];
                o[j] = v + bias[j];
            }
        else
            for (int64_t j = 0; j < N; j++)
                o[j] = (float)y[j] * mul[j];
    }
}

/* ConvInteger's product (conv.c): int32 operands already minus their zero
 * points (so within int16), through the packed pmaddwd kernel. */
bool nn_qgemm_i32(struct ox_thread_pool *pool, int64_t M, int64_t N, int64_t K,
                  const int32_t *A, const int32_t *B, int32_t *C)
{
    int64_t Kp = nn_qgemm_kp(K), nb = (N + QNR - 1) / QNR;
    int16_t *a = calloc((size_t)(M * Kp + 1), sizeof *a);
    int16_t *b = calloc((size_t)(nb * Kp * QNR + 1), sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return false;
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++)
            a[i * Kp + k] = (int16_t)A[i * K + k];
    for (int64_t k = 0; k < K; k++) {
        int16_t *pk = b + (k & ~(int64_t)1) * QNR + (k & 1);
        for (int64_t j = 0; j < N; j++)
            pk[(j / QNR) * Kp * QNR + (j % QNR) * 2] = (int16_t)B[k * N + j];
    }
    nn_qgemm(pool, M, N, K, a, b, C);
    free(a);
    free(b);
    return true;
}
