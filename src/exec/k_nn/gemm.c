/* Packed, cache-blocked SGEMM (GotoBLAS-style: B packed into KCxNR panels,
 * A into MRxKC panels, a register-tiled micro-kernel the compiler vectorizes)
 * and the matrix-product kernels built on it: MatMul, Gemm, FusedMatMul,
 * MatMulInteger and QLinearMatMul. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nn_common.h"
#include "exec/dnnl_backend.h"
#include "onnxscope/threadpool.h"
#include "exec/env_flag.h"

#define MR 6
#define NR 16
#define KC 256
#define MC 120
#define NC 2048

/* 8-lane float vectors through GCC/clang vector extensions: one ymm with
 * AVX, two xmm on plain x86-64, NEON pairs on arm64. */
typedef float v8f __attribute__((vector_size(32)));

/* x86-64: an AVX2+FMA clone is picked at load time when the CPU has it. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
/* fp-contract lets the clone use FMA (ISO C mode turns contraction off). */
#define NN_CLONES __attribute__((target_clones("arch=x86-64-v3", "default"), \
                                 optimize("fp-contract=fast")))
#else
#define NN_CLONES
#endif

/* Unaligned loads/stores as macros: passing vectors by value to helper
 * functions would change the ABI between the clones. */
#define V8_LOAD(v, p) memcpy(&(v), (p), sizeof(v8f))
#define V8_STORE(p, v) memcpy((p), &(v), sizeof(v8f))

/* C[0:mr,0:nr] += alpha * Ap(MRxkc) * Bp(kcxNR). The 6x16 tile lives in
 * twelve vector accumulators (fits the 16 AVX registers with B and A). */
NN_CLONES
static void micro_kernel(int64_t kc, const float *restrict Ap, const float *restrict Bp,
                         float *restrict C, int64_t ldc, int mr, int nr, float alpha)
{
    v8f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
    v8f c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};
    for (int64_t k = 0; k < kc; k++) {
        v8f b0, b1;
        V8_LOAD(b0, Bp);
        V8_LOAD(b1, Bp + 8);
        c00 += Ap[0] * b0; c01 += Ap[0] * b1;
        c10 += Ap[1] * b0; c11 += Ap[1] * b1;
        c20 += Ap[2] * b0; c21 += Ap[2] * b1;
        c30 += Ap[3] * b0; c31 += Ap[3] * b1;
        c40 += Ap[4] * b0; c41 += Ap[4] * b1;
        c50 += Ap[5] * b0; c51 += Ap[5] * b1;
        Ap += MR;
        Bp += NR;
    }
    float acc[MR][NR];
    V8_STORE(acc[0], c00); V8_STORE(acc[0] + 8, c01);
    V8_STORE(acc[1], c10); V8_STORE(acc[1] + 8, c11);
    V8_STORE(acc[2], c20); V8_STORE(acc[2] + 8, c21);
    V8_STORE(acc[3], c30); V8_STORE(acc[3] + 8, c31);
    V8_STORE(acc[4], c40); V8_STORE(acc[4] + 8, c41);
    V8_STORE(acc[5], c50); V8_STORE(acc[5] + 8, c51);
    if (mr == MR && nr == NR) {
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++) C[r * ldc + j] += alpha * acc[r][j];
        return;
    }
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) C[r * ldc + j] += alpha * acc[r][j];
}

/* Packs rows [i0,i0+mc) x cols [k0,k0+kc) of op(A) into MR-row panels,
 * zero-padding the last panel so the micro-kernel never branches. */
static void pack_a(bool ta, const float *A, int64_t lda, int64_t i0, int64_t mc,
                   int64_t k0, int64_t kc, float *Ap)
{
    for (int64_t ip = 0; ip < mc; ip += MR) {
        int mr = (int)(mc - ip < MR ? mc - ip : MR);
        for (int64_t k = 0; k < kc; k++) {
            for (int r = 0; r < mr; r++) {
                int64_t i = i0 + ip + r, kk = k0 + k;
                Ap[k * MR + r] = ta ? A[kk * lda + i] : A[i * lda + kk];
            }
            for (int r = mr; r < MR; r++) Ap[k * MR + r] = 0.0f;
        }
        Ap += kc * MR;
    }
}

static void pack_b(bool tb, const float *B, int64_t ldb, int64_t k0, int64_t kc,
                   int64_t j0, int64_t nc, float *Bp)
{
    for (int64_t jp = 0; jp < nc; jp += NR) {
        int nr = (int)(nc - jp < NR ? nc - jp : NR);
        for (int64_t k = 0; k < kc; k++) {
            int64_t kk = k0 + k;
            float *dst = Bp + k * NR;
            if (!tb && nr == NR) {
                /* Fixed-size copies inline (a loop here becomes a memcpy call). */
                const float *src = B + kk * ldb + j0 + jp;
                v8f lo, hi;
                V8_LOAD(lo, src);
                V8_LOAD(hi, src + 8);
                V8_STORE(dst, lo);
                V8_STORE(dst + 8, hi);
                continue;
            } else if (!tb) {
                const float *src = B + kk * ldb + j0 + jp;
                for (int j = 0; j < nr; j++) dst[j] = src[j];
            } else {
                for (int j = 0; j < nr; j++) dst[j] = B[(j0 + jp + j) * ldb + kk];
            }
            for (int j = nr; j < NR; j++) dst[j] = 0.0f;
        }
        Bp += kc * NR;
    }
}

/* Fallback when packing buffers cannot be allocated: still i-k-j order so
 * the inner loop runs over contiguous C and B rows when B is not transposed. */
static void sgemm_simple(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t lda, const float *B, int64_t ldb,
                         float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++) {
        float *c = C + i * ldc;
        for (int64_t k = 0; k < K; k++) {
            float a = alpha * (ta ? A[k * lda + i] : A[i * lda + k]);
            if (!tb) {
                const float *b = B + k * ldb;
                for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
            } else {
                for (int64_t j = 0; j < N; j++) c[j] += a * B[j * ldb + k];
            }
        }
    }
}

/* ONNXSCOPE_NO_GEMV=1: one-row products take the GEMM path as before
 * (read once; for comparisons). */
static bool getenv_gemv_off(void)
{
    static atomic_int off = -1;
    int v = atomic_load_explicit(&off, memory_order_relaxed);
    if (v < 0) {
        v = ox__env_on("ONNXSCOPE_NO_GEMV");
        atomic_store_explicit(&off, v, memory_order_relaxed);
    }
    return v;
}

void nn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0) return;
    for (int64_t i = 0; i < M; i++) {
        float *c = C + i * ldc;
        if (beta == 0.0f) memset(c, 0, (size_t)N * sizeof(float));
        else if (beta != 1.0f) for (int64_t j = 0; j < N; j++) c[j] *= beta;
    }
    if (K <= 0 || alpha == 0.0f) return;
    /* One row: a matrix-vector product (gemv.c), no packing, no library call. */
    if (M == 1 && !ta && !getenv_gemv_off()) {
        nn_sgemv(NULL, tb, N, K, alpha, A, B, ldb, C);
        return;
    }
    /* With oneDNN, its AVX-512 GEMM (beta 1: C was prepared above). */
    if (M * N * K >= 4096 && ox_dnnl_sgemm(1, ta, tb, M, N, K, alpha, A, lda, B, ldb, 1.0f, C, ldc))
        return;
    /* Tiny products and one- or two-row ones are dominated by packing. */
    if (M * N * K < 4096 || (M < 3 && !tb)) {
        sgemm_simple(ta, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc);
        return;
    }
    int64_t nc_max = N < NC ? N : NC, kc_max = K < KC ? K : KC, mc_max = M < MC ? M : MC;
    /* The panels live in this thread's reusable scratch (nn_sgemm never
     * nests on one thread). */
    size_t nb = (size_t)(kc_max * ((nc_max + NR - 1) / NR * NR));
    size_t na = (size_t)(kc_max * ((mc_max + MR - 1) / MR * MR));
    float *Bp = nn_scratch(0, nb);
    float *Ap = Bp ? nn_scratch(2, na) : NULL;
    if (!Ap) {
        sgemm_simple(ta, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc);
        return;
    }
    for (int64_t jc = 0; jc < N; jc += NC) {
        int64_t nc = N - jc < NC ? N - jc : NC;
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = K - pc < KC ? K - pc : KC;
            pack_b(tb, B, ldb, pc, kc, jc, nc, Bp);
            for (int64_t ic = 0; ic < M; ic += MC) {
                int64_t mc = M - ic < MC ? M - ic : MC;
                pack_a(ta, A, lda, ic, mc, pc, kc, Ap);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    int nr = (int)(nc - jr < NR ? nc - jr : NR);
                    const float *bp = Bp + (jr / NR) * kc * NR;
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        int mr = (int)(mc - ir < MR ? mc - ir : MR);
                        micro_kernel(kc, Ap + (ir / MR) * kc * MR, bp,
                                     C + (ic + ir) * ldc + jc + jr, ldc, mr, nr, alpha);
                    }
                }
            }
        }
    }
}

typedef struct sgemm_job {
    bool ta, tb, split_m;
    int64_t M, N, K, lda, ldb, ldc, block;
    float alpha, beta;
    const float *A, *B;
    float *C;
} sgemm_job;

static void sgemm_chunk(void *ctx, int64_t b, int64_t e)
{
    const sgemm_job *j = ctx;
    int64_t lo = b * j->block, hi = e * j->block;
    if (j->split_m) {
        if (hi > j->M) hi = j->M;
        const float *A = j->ta ? j->A + lo : j->A + lo * j->lda;
        nn_sgemm(j->ta, j->tb, hi - lo, j->N, j->K, j->alpha, A, j->lda, j->B, j->ldb, j->beta,
                 j->C + lo * j->ldc, j->ldc);
    } else {
        if (hi > j->N) hi = j->N;
        const float *B = j->tb ? j->B + lo * j->ldb : j->B + lo;
        nn_sgemm(j->ta, j->tb, j->M, hi - lo, j->K, j->alpha, j->A, j->lda, B, j->ldb, j->beta,
                 j->C + lo, j->ldc);
    }
}

void nn_sgemm_mt(ox_thread_pool *pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                 float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                 float beta, float *C, int64_t ldc)
{
    int threads = ox_thread_pool_size(pool);
    if (M == 1 && !ta && N > 0 && K > 0 && !getenv_gemv_off()) {
        if (beta == 0.0f) memset(C, 0, (size_t)N * sizeof(float));
        else if (beta != 1.0f) for (int64_t j = 0; j < N; j++) C[j] *= beta;
        nn_sgemv(pool, tb, N, K, alpha, A, B, ldb, C);
        return;
    }
    if (M > 0 && N > 0 && K > 0 && M * N * K >= 262144LL &&
        ox_dnnl_sgemm(threads, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        return;
    /* Below ~1 MFLOP per thread the fork/join costs more than it saves. */
    if (threads <= 1 || M * N * K < 262144LL * threads) {
        nn_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    sgemm_job j = {ta, tb, M >= N, M, N, K, lda, ldb, ldc, 0, alpha, beta, A, B, C};
    int64_t dim = j.split_m ? M : N, unit = j.split_m ? MR : NR;
    /* About 4 chunks per thread for balance, aligned to the register tile. */
    int64_t block = (dim + 4 * threads - 1) / (4 * threads);
    block = (block + unit - 1) / unit * unit;
    if (block < unit) block = unit;
    j.block = block;
    ox_parallel_for(pool, (dim + block - 1) / block, 1, sgemm_chunk, &j);
}

void nn_igemm(int64_t M, int64_t N, int64_t K, const int32_t *A, const int32_t *B,
              int32_t *C)
{
    for (int64_t i = 0; i < M; i++) {
        int32_t *c = C + i * N;
        for (int64_t j = 0; j < N; j++) c[j] = 0;
        for (int64_t k = 0; k < K; k++) {
            int32_t a = A[i * K + k];
            if (!a) continue;
            const int32_t *b = B + k * N;
            for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
        }
    }
}

/* ---- broadcasting batched matmul --------------------------------------------- */

ox_status nn_matmul_shape(ox_kernel_ctx *c, int ra, const int64_t *da, int rb,
                          const int64_t *db, int *out_rank, int64_t *od)
{
    int r = ra > rb ? ra : rb;
    if (ra < 2 || rb < 2 || r > OX_MAX_RANK) return NN_FAIL(c, "bad operand ranks %d, %d", ra, rb);
    for (int i = 0; i < r - 2; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t x = ia >= 0 ? da[ia] : 1, y = ib >= 0 ? db[ib] : 1;
        if (x != y && x != 1 && y != 1)
            return NN_FAIL(c, "batch dims %lld and %lld do not broadcast", (long long)x, (long long)y);
        od[i] = x == 1 ? y : x;
    }
    od[r - 2] = da[ra - 2];
    od[r - 1] = db[rb - 1];
    *out_rank = r;
    return OX_OK;
}

/* Operand shapes after 1-D promotion and optional last-two-dims swap. */
typedef struct mm_plan {
    int ra, rb, ro, out_rank;
    int64_t da[OX_MAX_RANK], db[OX_MAX_RANK], dout[OX_MAX_RANK], dfinal[OX_MAX_RANK];
    int64_t M, N, K, batch;
    int64_t sa[OX_MAX_RANK], sb[OX_MAX_RANK]; /* batch strides (elements), 0 = broadcast */
} mm_plan;

static ox_status mm_prepare(ox_kernel_ctx *c, const ox_tensor *a, const ox_tensor *b,
                            bool ta, bool tb, mm_plan *p)
{
    memset(p, 0, sizeof *p);
    if (a->rank == 0 || b->rank == 0) return NN_FAIL(c, "MatMul operands must not be scalars");
    bool a1 = a->rank == 1, b1 = b->rank == 1;
    if ((a1 && ta) || (b1 && tb)) return NN_FAIL(c, "transpose of a 1-D operand");
    p->ra = a1 ? 2 : a->rank;
    p->rb = b1 ? 2 : b->rank;
    if (a1) { p->da[0] = 1; p->da[1] = a->dims[0]; }
    else memcpy(p->da, a->dims, sizeof(int64_t) * (size_t)a->rank);
    if (b1) { p->db[0] = b->dims[0]; p->db[1] = 1; }
    else memcpy(p->db, b->dims, sizeof(int64_t) * (size_t)b->rank);
    /* Logical (post-transpose) matrix dims. */
    int64_t am = p->da[p->ra - 2], ak = p->da[p->ra - 1];
    int64_t bk = p->db[p->rb - 2], bn = p->db[p->rb - 1];
    if (ta) { int64_t t = am; am = ak; ak = t; }
    if (tb) { int64_t t = bk; bk = bn; bn = t; }
    if (ak != bk)
        return NN_FAIL(c, "inner dimensions differ (%lld vs %lld)", (long long)ak, (long long)bk);
    p->M = am; p->N = bn; p->K = ak;
    int64_t la[OX_MAX_RANK], lb[OX_MAX_RANK];
    memcpy(la, p->da, sizeof la);
    memcpy(lb, p->db, sizeof lb);
    la[p->ra - 2] = am; la[p->ra - 1] = ak;
    lb[p->rb - 2] = bk; lb[p->rb - 1] = bn;
    ox_status st = nn_matmul_shape(c, p->ra, la, p->rb, lb, &p->ro, p->dout);
    if (st) return st;
    p->batch = nn_prod(p->dout, p->ro - 2);
    /* Batch strides of each operand aligned to the output's batch dims. */
    int64_t stride_a = p->M * p->K, stride_b = p->K * p->N;
    for (int i = p->ro - 3; i >= 0; i--) {
        int ia = i - (p->ro - p->ra), ib = i - (p->ro - p->rb);
        int64_t xa = ia >= 0 ? p->da[ia] : 1, xb = ib >= 0 ? p->db[ib] : 1;
        p->sa[i] = xa == 1 ? 0 : stride_a;
        p->sb[i] = xb == 1 ? 0 : stride_b;
        stride_a *= xa;
        stride_b *= xb;
    }
    /* Final output shape drops the promoted dims of 1-D operands. */
    p->out_rank = 0;
    for (int i = 0; i < p->ro - 2; i++) p->dfinal[p->out_rank++] = p->dout[i];
    if (!a1) p->dfinal[p->out_rank++] = p->M;
    if (!b1) p->dfinal[p->out_rank++] = p->N;
    return OX_OK;
}

/* Offsets of batch b within A and B, from its multi-index over dout. */
static void mm_offsets(const mm_plan *p, int64_t b, int64_t *oa, int64_t *ob)
{
    int64_t a = 0, bb = 0;
    for (int i = p->ro - 3; i >= 0; i--) {
        int64_t d = p->dout[i], idx = b % d;
        b /= d;
        a += idx * p->sa[i];
        bb += idx * p->sb[i];
    }
    *oa = a;
    *ob = bb;
}

static ox_status matmul_float(ox_kernel_ctx *c, const ox_tensor *a, const ox_tensor *b,
                              bool ta, bool tb, float alpha)
{
    mm_plan p;
    ox_status st = mm_prepare(c, a, b, ta, tb, &p);
    if (st) return st;
    float *ta_buf = NULL, *tb_buf = NULL;
    const float *A = nn_load_f32(c, a, &ta_buf);
    const float *B = A ? nn_load_f32(c, b, &tb_buf) : NULL;
    if (!A || !B) {
        free(ta_buf);
        return NN_ST(c);
    }
    nn_fout o;
    st = nn_fout_new(c, 0, a->dtype, p.out_rank, p.dfinal, &o);
    if (st) goto done;
    int64_t lda = ta ? p.M : p.K, ldb = tb ? p.K : p.N;
    bool b_shared = true;
    for (int i = 0; i < p.ro - 2; i++) if (p.sb[i]) b_shared = false;
    if (b_shared && !ta && p.batch > 0) {
        /* [.., M, K] x [K, N]: one tall GEMM over all batches (A's batches are
         * contiguous when B is broadcast; A broadcast too means batch of A = 1
         * for dims where B is 1, so check A is fully batched). */
        bool a_full = true;
        for (int i = 0; i < p.ro - 2; i++) if (!p.sa[i] && p.dout[i] != 1) a_full = false;
        if (a_full) {
            nn_sgemm_mt(c->pool, false, tb, p.batch * p.M, p.N, p.K, alpha, A, lda, B, ldb, 0.0f,
                        o.f, p.N);
            goto finish;
        }
    }
    for (int64_t bi = 0; bi < p.batch; bi++) {
        int64_t oa, ob;
        mm_offsets(&p, bi, &oa, &ob);
        nn_sgemm_mt(c->pool, ta, tb, p.M, p.N, p.K, alpha, A + oa, lda, B + ob, ldb, 0.0f,
                    o.f + bi * p.M * p.N, p.N);
    }
finish:
    nn_fout_done(&o);
done:
    free(ta_buf);
    free(tb_buf);
    return st;
}

/* Integer MatMul (int32/int64/uint32/uint64): exact 64-bit accumulation. */
static ox_status matmul_int(ox_kernel_ctx *c, const ox_tensor *a, const ox_tensor *b)
{
    mm_plan p;
    ox_status st = mm_prepare(c, a, b, false, false, &p);
    if (st) return st;
    ox_tensor *y = nn_out(c, 0, a->dtype, p.out_rank, p.dfinal);
    if (!y) return NN_ST(c);
    for (int64_t bi = 0; bi < p.batch; bi++) {
        int64_t oa, ob;
        mm_offsets(&p, bi, &oa, &ob);
        for (int64_t i = 0; i < p.M; i++)
            for (int64_t j = 0; j < p.N; j++) {
                int64_t s = 0;
                for (int64_t k = 0; k < p.K; k++)
                    s += nn_get_i(a, oa + i * p.K + k) * nn_get_i(b, ob + k * p.N + j);
                nn_set_i(y, (bi * p.M + i) * p.N + j, s);
            }
    }
    return OX_OK;
}

NN_KERNEL(matmul)
{
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1);
    if (!a || !b) return NN_FAIL(c, "needs two inputs");
    if (a->dtype != b->dtype) return NN_FAIL(c, "operand types differ");
    if (nn_is_float_dt(a->dtype)) return matmul_float(c, a, b, false, false, 1.0f);
    if (ox_dtype_is_int(a->dtype)) return matmul_int(c, a, b);
    return NN_FAIL(c, "unsupported type %s", ox_dtype_name(a->dtype));
}

/* com.microsoft FusedMatMul: alpha * op(A) op(B). transBatch* reorder the
 * batch axes, which our optimizer never emits. */
NN_KERNEL(fused_matmul)
{
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1);
    if (!a || !b) return NN_FAIL(c, "needs two inputs");
    if (!nn_is_float_dt(a->dtype) || a->dtype != b->dtype) return NN_FAIL(c, "needs float inputs");
    if (nn_attr_i(c, "transBatchA", 0) || nn_attr_i(c, "transBatchB", 0))
        return nn_fail(c, OX_EUNSUPPORTED, "transBatchA/transBatchB are not supported");
    return matmul_float(c, a, b, nn_attr_i(c, "transA", 0) != 0, nn_attr_i(c, "transB", 0) != 0,
                        nn_attr_f(c, "alpha", 1.0f));
}

NN_KERNEL(gemm)
{
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1), *cc = ox_kernel_in(c, 2);
    if (!a || !b) return NN_FAIL(c, "needs A and B");
    if (a->rank != 2 || b->rank != 2) return NN_FAIL(c, "A and B must be 2-D");
    if (!nn_is_float_dt(a->dtype) && !ox_dtype_is_int(a->dtype))
        return NN_FAIL(c, "unsupported type %s", ox_dtype_name(a->dtype));
    bool ta = nn_attr_i(c, "transA", 0) != 0, tb = nn_attr_i(c, "transB", 0) != 0;
    float alpha = nn_attr_f(c, "alpha", 1.0f), beta = nn_attr_f(c, "beta", 1.0f);
    int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    int64_t K2 = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    if (K != K2) return NN_FAIL(c, "inner dimensions differ (%lld vs %lld)", (long long)K, (long long)K2);
    int64_t cm = 1, cn = 1;
    if (cc) {
        if (cc->rank > 2) return NN_FAIL(c, "C must have rank <= 2");
        if (cc->rank >= 1) cn = cc->dims[cc->rank - 1];
        if (cc->rank == 2) cm = cc->dims[0];
        if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
            return NN_FAIL(c, "C does not broadcast to [%lld,%lld]", (long long)M, (long long)N);
    }
    float *t0 = NULL, *t1 = NULL, *t2 = NULL;
    const float *A = nn_load_f32(c, a, &t0);
    const float *B = A ? nn_load_f32(c, b, &t1) : NULL;
    const float *C = (B && cc) ? nn_load_f32(c, cc, &t2) : NULL;
    ox_status st = OX_OK;
    if (!A || !B || (cc && !C)) { st = NN_ST(c); goto done; }
    int64_t od[2] = {M, N};
    nn_fout o;
    st = nn_fout_new(c, 0, a->dtype, 2, od, &o);
    if (st) goto done;
    if (C && beta != 0.0f) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                o.f[i * N + j] = C[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
    } else {
        beta = 0.0f;
    }
    nn_sgemm_mt(c->pool, ta, tb, M, N, K, alpha, A, ta ? M : K, B, tb ? K : N, beta, o.f, N);
    if (!nn_is_float_dt(a->dtype)) {
        /* Integer Gemm: round the float result back. */
        for (int64_t i = 0; i < M * N; i++) o.f[i] = nearbyintf(o.f[i]);
    }
    nn_fout_done(&o);
done:
    free(t0);
    free(t1);
    free(t2);
    return st;
}

/* ---- integer matrix products ---------------------------------------------------- */

/* Batches of a plan that can run as one product: B is the same matrix for
 * every batch and A's batches follow each other (x[B,S,K] times w[K,N]). */
static bool mm_foldable(const mm_plan *p)
{
    for (int64_t bi = 0; bi < p->batch; bi++) {
        int64_t oa, ob;
        mm_offsets(p, bi, &oa, &ob);
        if (ob != 0 || oa != bi * p->M * p->K)
            return false;
    }
    return true;
}

/* Zero point of row/column idx: scalar, per index, or 0 when absent. */
static int32_t zp_of(const ox_tensor *zp, int64_t idx)
{
    if (!zp || !zp->numel) return 0;
    return (int32_t)nn_get_i(zp, zp->numel == 1 ? 0 : idx < zp->numel ? idx : 0);
}

/* One batch (or the folded batches) on the VNNI path: raw u8 x s8 sums,
 * then the zero points taken out. */
static ox_status vnni_batch(ox_kernel_ctx *c, const ox_tensor *a, int64_t oa, int64_t M,
                            const ox_tensor *azp, const int8_t *Bp, const int32_t *colsum,
                            const ox_tensor *bzp, const mm_plan *p, int32_t *Y)
{
    int64_t lda = nn_qgemm_vnni_lda(p->K);
    uint8_t *A = calloc((size_t)(M * lda + 64), 1);
    int32_t *rowsum = malloc((size_t)(M + 1) * sizeof *rowsum);
    if (!A || !rowsum) {
        free(A);
        free(rowsum);
        return NN_NOMEM(c);
    }
    nn_qgemm_u8_rows((const uint8_t *)ox_tensor_data(a) + oa, M, p->K, lda, A, rowsum);
    nn_qgemm_vnni(c->pool, M, p->N, p->K, A, Bp, Y);
    bool has_bz = bzp && bzp->numel;
    for (int64_t i = 0; i < M; i++) {
        int32_t za = zp_of(azp, i % p->M);
        int32_t *y = Y + i * p->N;
        if (!has_bz) {
            nn_qgemm_sub_colsum(y, p->N, za, colsum);
        } else {
            for (int64_t j = 0; j < p->N; j++) {
                int32_t zb = zp_of(bzp, j);
                /* int32 wrap-around, as the products themselves. */
                y[j] = (int32_t)((uint32_t)y[j] - (uint32_t)za * (uint32_t)colsum[j] -
                                 (uint32_t)zb * (uint32_t)rowsum[i] +
                                 (uint32_t)p->K * (uint32_t)za * (uint32_t)zb);
            }
        }
    }
    free(A);
    free(rowsum);
    return OX_OK;
}

/* Packed constant weights kept in the node's plan slot across runs
 * (ox_kernel_ctx.state): packing B costs as much as a small product. */
typedef struct qpack_state {
    ox_kernel_state base;
    const void *bdata, *zdata;   /* what they were packed from */
    int64_t ob, K, N;
    bool vnni;
    int16_t *Bp;
    int8_t *Bv;
    int32_t *colsum;
} qpack_state;

static void qpack_free(ox_kernel_state *s)
{
    qpack_state *q = (qpack_state *)s;
    free(q->Bp);
    free(q->Bv);
    free(q->colsum);
    free(q);
}

/* B (and its zero point) are initializers the run cannot override, and
 * the node has a plan slot: packing them once pays. */
static bool b_cacheable(const ox_kernel_ctx *c)
{
    const ox_node *n = c->node;
    const ox_value *bv = n && n->n_inputs > 1 ? n->inputs[1] : NULL;
    const ox_value *zv = n && n->n_inputs > 3 ? n->inputs[3] : NULL;
    return c->state && bv && bv->init && !bv->is_input && (!zv || (zv->init && !zv->is_input));
}

/* B packed for the chosen path: from the node's cache when b_cacheable,
 * else freshly (*owned: the caller frees it). */
static bool packed_b(ox_kernel_ctx *c, const ox_tensor *b, const ox_tensor *bzp, int64_t ob,
                     const mm_plan *p, bool vnni, qpack_state *out, bool *owned)
{
    bool konst = b_cacheable(c);
    qpack_state *q = konst ? (qpack_state *)*c->state : NULL;
    const void *zd = bzp ? ox_tensor_data(bzp) : NULL;
    if (q && q->base.free == qpack_free && q->bdata == ox_tensor_data(b) && q->zdata == zd &&
        q->ob == ob && q->K == p->K && q->N == p->N && q->vnni == vnni) {
        *out = *q;
        *owned = false;
        return true;
    }
    memset(out, 0, sizeof *out);
    if (vnni) {
        out->colsum = malloc((size_t)(p->N + 1) * sizeof *out->colsum);
        out->Bv = out->colsum ? nn_qgemm_vnni_pack_b((const int8_t *)ox_tensor_data(b) + ob, p->K,
                                                     p->N, out->colsum) : NULL;
    } else {
        out->Bp = nn_qgemm_pack_b(b, ob, p->K, p->N, bzp);
    }
    if (vnni ? !out->Bv : !out->Bp) {
        free(out->colsum);
        free(out->Bp);
        return false;
    }
    *owned = true;
    if (!konst)
        return true;
    qpack_state *nq = malloc(sizeof *nq);
    if (!nq)
        return true;   /* no cache: still correct */
    *nq = *out;
    nq->base.free = qpack_free;
    nq->bdata = ox_tensor_data(b);
    nq->zdata = zd;
    nq->ob = ob;
    nq->K = p->K;
    nq->N = p->N;
    nq->vnni = vnni;
    if (*c->state)
        (*c->state)->free(*c->state);
    *c->state = &nq->base;
    *owned = false;
    return true;
}

/* Computes the int32 products of a and b (with zero points) into *out for
 * plan p; caller frees *out. uint8 x int8 runs on AVX-512 VNNI when the
 * CPU has it, everything else on the int16 pmaddwd kernel (qgemm.c). */
static ox_status int_matmul_run(ox_kernel_ctx *c, const ox_tensor *a, const ox_tensor *azp,
                                const ox_tensor *b, const ox_tensor *bzp, const mm_plan *p,
                                int32_t **out)
{
    *out = NULL;
    int32_t *Y = malloc((size_t)(p->batch * p->M * p->N + 1) * sizeof(int32_t));
    if (!Y) return NN_NOMEM(c);
    /* A per-row a_zero_point indexes rows within one batch. */
    bool fold = mm_foldable(p) && !(azp && azp->numel > 1);
    bool vnni = nn_qgemm_vnni_ok(a->dtype, b->dtype), cacheable = b_cacheable(c);
    int16_t *Ab = NULL;
    qpack_state pk = {0};
    bool owned = false;
    int64_t packed_ob = -1;
    ox_status st = OX_OK;
    for (int64_t bi = 0; bi < (fold ? 1 : p->batch) && !st; bi++) {
        int64_t oa, ob, M = fold ? p->M * p->batch : p->M;
        mm_offsets(p, bi, &oa, &ob);
        int32_t *Yb = Y + bi * p->M * p->N;
        /* Below 4 rows packing B per run costs more than the product; a
         * constant B is packed once (the plan keeps it), so it still pays. */
        bool small = M < 4 && !cacheable;
        if (!small && ob != packed_ob) {
            if (owned) {
                free(pk.Bp);
                free(pk.Bv);
                free(pk.colsum);
            }
            owned = false;
            if (!packed_b(c, b, bzp, ob, p, vnni, &pk, &owned)) { st = NN_NOMEM(c); break; }
            packed_ob = ob;
        }
        if (!small && vnni) {
            st = vnni_batch(c, a, oa, M, azp, pk.Bv, pk.colsum, bzp, p, Yb);
            continue;
        }
        free(Ab);
        Ab = nn_qgemm_pack_a(a, oa, M, p->K, azp);
        if (!Ab) { st = NN_NOMEM(c); break; }
        if (small)
            nn_qgemm_small(M, p->N, p->K, Ab, b, ob, bzp, Yb);
        else
            nn_qgemm(c->pool, M, p->N, p->K, Ab, pk.Bp, Yb);
    }
    if (owned) {
        free(pk.Bp);
        free(pk.Bv);
        free(pk.colsum);
    }
    free(Ab);
    if (st) {
        free(Y);
        return st;
    }
    *out = Y;
    return OX_OK;
}

static ox_status int_matmul(ox_kernel_ctx *c, const ox_tensor *a, const ox_tensor *azp,
                            const ox_tensor *b, const ox_tensor *bzp, mm_plan *p,
                            int32_t **out)
{
    *out = NULL;
    if (!a || !b) return NN_FAIL(c, "needs A and B");
    if ((a->dtype != OX_DT_INT8 && a->dtype != OX_DT_UINT8) ||
        (b->dtype != OX_DT_INT8 && b->dtype != OX_DT_UINT8))
        return NN_FAIL(c, "A and B must be int8 or uint8");
    ox_status st = mm_prepare(c, a, b, false, false, p);
    if (st) return st;
    return int_matmul_run(c, a, azp, b, bzp, p, out);
}

NN_KERNEL(matmul_integer)
{
    mm_plan p;
    int32_t *Y;
    ox_status st = int_matmul(c, ox_kernel_in(c, 0), ox_kernel_in(c, 2), ox_kernel_in(c, 1),
                              ox_kernel_in(c, 3), &p, &Y);
    if (st) return st;
    ox_tensor *y = nn_out(c, 0, OX_DT_INT32, p.out_rank, p.dfinal);
    if (!y) { free(Y); return NN_ST(c); }
    memcpy(ox_tensor_data(y), Y, (size_t)y->numel * sizeof(int32_t));
    free(Y);
    return OX_OK;
}

/* com.microsoft DynamicQuantizeMatMul: A (float) quantized as
 * DynamicQuantizeLinear does (uint8, one scale and zero point for the whole
 * tensor), times int8/uint8 B with b_scale (scalar or per column) and an
 * optional b_zero_point, then Y = acc * (a_scale * b_scale[j]) + bias[j]:
 * the same float operations, in the same order, as the standard form
 * MatMulInteger -> Cast -> Mul(a_scale * b_scale). */
NN_KERNEL(dynamic_quantize_matmul)
{
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1);
    const ox_tensor *bs = ox_kernel_in(c, 2), *bzp = ox_kernel_in(c, 3), *bias = ox_kernel_in(c, 4);
    if (!a || !b || !bs) return NN_FAIL(c, "needs A, B and b_scale");
    if (a->dtype != OX_DT_FLOAT || (b->dtype != OX_DT_INT8 && b->dtype != OX_DT_UINT8))
        return NN_FAIL(c, "A must be float and B int8 or uint8");
    mm_plan p;
    ox_status st = mm_prepare(c, a, b, false, false, &p);
    if (st) return st;
    if (bs->numel != 1 && bs->numel != p.N)
        return NN_FAIL(c, "b_scale must be a scalar or have %lld (N) elements", (long long)p.N);
    if (bias && bias->numel != p.N)
        return NN_FAIL(c, "bias must have %lld (N) elements", (long long)p.N);
    float *t0 = NULL, *t1 = NULL, *t2 = NULL;
    const float *A = nn_load_f32(c, a, &t0);
    const float *BS = A ? nn_load_f32(c, bs, &t1) : NULL;
    const float *BI = BS && bias ? nn_load_f32(c, bias, &t2) : NULL;
    if (!BS || (bias && !BI)) { free(t0); free(t1); free(t2); return NN_ST(c); }
    float as;
    uint8_t azp;
    /* A quantized as DynamicQuantizeLinear does, then the integer product. */
    ox_tensor *aq = ox_tensor_new(OX_DT_UINT8, a->rank, a->dims);
    ox_tensor *zt = aq ? ox_tensor_new(OX_DT_UINT8, 0, NULL) : NULL;
    int32_t *Y = NULL;
    if (!zt) st = NN_NOMEM(c);
    if (!st) {
        nn_dyn_quant(A, a->numel, ox_tensor_mutable_data(aq), &as, &azp);
        *(uint8_t *)ox_tensor_mutable_data(zt) = azp;
        st = int_matmul_run(c, aq, zt, b, bzp, &p, &Y);
    }
    ox_tensor_free(aq);
    ox_tensor_free(zt);
    ox_tensor *y = st ? NULL : nn_out(c, 0, OX_DT_FLOAT, p.out_rank, p.dfinal);
    if (!st && !y) st = NN_ST(c);
    if (!st) {
        float *o = ox_tensor_data(y);
        float *mul = malloc((size_t)p.N * sizeof *mul);
        if (!mul) st = NN_NOMEM(c);
        for (int64_t j = 0; mul && j < p.N; j++)
            mul[j] = as * BS[bs->numel == 1 ? 0 : j];
        if (mul) nn_qgemm_dequant(Y, p.batch * p.M, p.N, mul, BI, o);
        free(mul);
    }
    free(Y);
    free(t0);
    free(t1);
    free(t2);
    return st;
}

/* Scale for row i / column j: scalar or 1-D per-row/per-column. */
static float scale_at(const float *s, int64_t n, int64_t idx)
{
    return n == 1 ? s[0] : (idx < n ? s[idx] : s[0]);
}

NN_KERNEL(qlinear_matmul)
{
    const ox_tensor *as = ox_kernel_in(c, 1), *bs = ox_kernel_in(c, 4), *ys = ox_kernel_in(c, 6);
    const ox_tensor *yzp = ox_kernel_in(c, 7);
    if (!as || !bs || !ys) return NN_FAIL(c, "missing scales");
    mm_plan p;
    int32_t *Y;
    ox_status st = int_matmul(c, ox_kernel_in(c, 0), ox_kernel_in(c, 2), ox_kernel_in(c, 3),
                              ox_kernel_in(c, 5), &p, &Y);
    if (st) return st;
    ox_dtype odt = yzp ? yzp->dtype : OX_DT_UINT8;
    int64_t lo, hi;
    if (!nn_q_range(odt, &lo, &hi)) { free(Y); return NN_FAIL(c, "bad output type"); }
    float *t0 = NULL, *t1 = NULL, *t2 = NULL;
    const float *AS = nn_load_f32(c, as, &t0);
    const float *BS = AS ? nn_load_f32(c, bs, &t1) : NULL;
    const float *YS = BS ? nn_load_f32(c, ys, &t2) : NULL;
    ox_tensor *y = YS ? nn_out(c, 0, odt, p.out_rank, p.dfinal) : NULL;
    if (!y) st = NN_ST(c);
    else {
        int64_t z = yzp ? nn_get_i(yzp, 0) : 0;
        for (int64_t bi = 0; bi < p.batch; bi++)
            for (int64_t i = 0; i < p.M; i++)
                for (int64_t j = 0; j < p.N; j++) {
                    int64_t k = (bi * p.M + i) * p.N + j;
                    double m = (double)scale_at(AS, as->numel, i) * scale_at(BS, bs->numel, j) /
                               YS[0];
                    nn_set_i(y, k, nn_q_round_sat((double)(float)(Y[k] * m) + (double)z, lo, hi));
                }
    }
    free(Y);
    free(t0);
    free(t1);
    free(t2);
    return st;
}

/* ---- contrib fusions over the products ------------------------------------------ */

/* Applies fn(x, bias[i % nb]) to output 0 in place (any float dtype). */
static ox_status post_op(ox_kernel_ctx *c, const nn_act *act, const float *bias, int64_t nb,
                         bool fast_gelu)
{
    ox_tensor *t = c->out[0] && c->out[0]->kind == OX_RV_TENSOR ? c->out[0]->t : NULL;
    if (!t) return NN_FAIL(c, "missing output");
    float *tmp = NULL;
    const float *src = nn_load_f32(c, t, &tmp);
    if (!src) return NN_ST(c);
    float *v = tmp ? tmp : ox_tensor_mutable_data(t);
    if (!v && t->numel) return NN_NOMEM(c);
    for (int64_t i = 0; i < t->numel; i++) {
        float x = v[i] + (nb ? bias[i % nb] : 0.0f);
        if (fast_gelu) {
            double d = x;
            x = (float)(0.5 * d * (1.0 + tanh(0.7978845608028654 * (d + 0.044715 * d * d * d))));
        } else if (act) {
            x = nn_act_apply(act, x);
        }
        v[i] = x;
    }
    if (tmp) {
        nn_store_f32(t, tmp, t->numel);
        free(tmp);
    }
    return OX_OK;
}

/* com.microsoft FusedGemm: Gemm followed by the named activation. */
NN_KERNEL(fused_gemm)
{
    const char *an = nn_attr_s(c, "activation", "");
    nn_act act;
    bool ha = c->node && ox_node_attr(c->node, "activation_alpha");
    bool hb = c->node && ox_node_attr(c->node, "activation_beta");
    if (!nn_act_parse(an, nn_attr_f(c, "activation_alpha", 0), nn_attr_f(c, "activation_beta", 0),
                      ha, hb, &act))
        return nn_fail(c, OX_EUNSUPPORTED, "activation '%s' unsupported", an);
    ox_status st = ox_nn_k_gemm(c);
    if (st || !an[0]) return st;
    return post_op(c, &act, NULL, 0, false);
}

/* com.microsoft GemmFastGelu: FastGelu(X W + bias). */
NN_KERNEL(gemm_fast_gelu)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *w = ox_kernel_in(c, 1), *b = ox_kernel_in(c, 2);
    if (!x || !w || !nn_is_float_dt(x->dtype) || x->dtype != w->dtype) return NN_FAIL(c, "needs float X and W");
    if (b && (w->rank < 1 || b->numel != w->dims[w->rank - 1])) return NN_FAIL(c, "bias size mismatch");
    ox_status st = matmul_float(c, x, w, false, false, 1.0f);
    if (st) return st;
    float *tb = NULL;
    const float *B = b ? nn_load_f32(c, b, &tb) : NULL;
    if (b && !B) return NN_ST(c);
    st = post_op(c, NULL, B, b ? b->numel : 0, true);
    free(tb);
    return st;
}
