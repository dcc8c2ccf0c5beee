/* Einsum: parses the equation (explicit or implicit output, repeated
 * indices, ellipsis with broadcasting) and evaluates it. Two-operand
 * contractions that reduce to a (batched) matrix product go through SGEMM
 * after a permutation; everything else runs a generic strided loop. */
#include <ctype.h>

#include "nn_common.h"

#define NL 64           /* 52 letters + ellipsis dims */
#define ELL0 52
#define MAXOPS 16

static int label_of(char ch)
{
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

typedef struct ein_term {
    int n;            /* number of dims */
    int lab[OX_MAX_RANK];
} ein_term;

/* Parses one term ("ab...c") for an operand of rank `rank` (-1 for the
 * output, where the ellipsis expands to E dims). */
static bool parse_term(const char *s, size_t len, int rank, int E, ein_term *t)
{
    int letters = 0;
    bool ell = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (ell || i + 2 >= len + 0 || s[i + 1] != '.' || s[i + 2] != '.') return false;
            ell = true;
            i += 2;
        } else if (label_of(s[i]) >= 0) letters++;
        else if (!isspace((unsigned char)s[i])) return false;
    }
    int e = ell ? (rank >= 0 ? rank - letters : E) : 0;
    if (e < 0 || (rank >= 0 && !ell && letters != rank) || letters + e > OX_MAX_RANK) return false;
    t->n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            for (int j = 0; j < e; j++) t->lab[t->n++] = ELL0 + (E - e + j);
            i += 2;
        } else if (label_of(s[i]) >= 0) {
            t->lab[t->n++] = label_of(s[i]);
        }
    }
    return true;
}

/* dst = src permuted: dst dim i is src dim perm[i]. */
static void permute(const float *src, int rank, const int64_t *dims, const int *perm, float *dst)
{
    int64_t sstr[OX_MAX_RANK], dd[OX_MAX_RANK], idx[OX_MAX_RANK] = {0};
    int64_t s = 1, n = 1;
    for (int i = rank - 1; i >= 0; i--) { sstr[i] = s; s *= dims[i]; }
    for (int i = 0; i < rank; i++) { dd[i] = dims[perm[i]]; n *= dd[i]; }
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        dst[i] = src[off];
        for (int d = rank - 1; d >= 0; d--) {
            idx[d]++;
            off += sstr[perm[d]];
            if (idx[d] < dd[d]) break;
            off -= sstr[perm[d]] * dd[d];
            idx[d] = 0;
        }
    }
}

/* Two-operand contraction as batched GEMM: labels are batch (A, B, out),
 * m (A, out), n (B, out) or k (A, B). Returns false (nothing written) when
 * the equation has another structure (diagonals, one-sided sums,
 * broadcasting), so the caller falls back to the generic loop. */
static bool einsum_gemm(ox_kernel_ctx *c, const ein_term *ta, const ein_term *tb,
                        const ein_term *to, const ox_tensor *a, const ox_tensor *b,
                        const float *A, const float *B, float *Y, ox_status *st)
{
    int where_a[NL], where_b[NL], where_o[NL];
    for (int l = 0; l < NL; l++) where_a[l] = where_b[l] = where_o[l] = -1;
    for (int i = 0; i < ta->n; i++) { if (where_a[ta->lab[i]] >= 0) return false; where_a[ta->lab[i]] = i; }
    for (int i = 0; i < tb->n; i++) { if (where_b[tb->lab[i]] >= 0) return false; where_b[tb->lab[i]] = i; }
    for (int i = 0; i < to->n; i++) where_o[to->lab[i]] = i;
    int bl[NL], ml[NL], nl[NL], kl[NL], nb = 0, nm = 0, nn = 0, nk = 0;
    int64_t Bs = 1, Ms = 1, Ns = 1, Ks = 1;
    for (int l = 0; l < NL; l++) {
        int ia = where_a[l], ib = where_b[l], io = where_o[l];
        if (ia < 0 && ib < 0) continue;
        if (ia >= 0 && ib >= 0 && a->dims[ia] != b->dims[ib]) return false;
        int64_t d = ia >= 0 ? a->dims[ia] : b->dims[ib];
        if (ia >= 0 && ib >= 0 && io >= 0) { bl[nb++] = l; Bs *= d; }
        else if (ia >= 0 && ib >= 0) { kl[nk++] = l; Ks *= d; }
        else if (io >= 0 && ia >= 0) { ml[nm++] = l; Ms *= d; }
        else if (io >= 0) { nl[nn++] = l; Ns *= d; }
        else return false; /* summed over one operand only */
    }
    /* Permutations: A -> [batch, m, k], B -> [batch, k, n]. */
    int pa[OX_MAX_RANK], pb[OX_MAX_RANK], pc[OX_MAX_RANK], r = 0;
    for (int i = 0; i < nb; i++) pa[r++] = where_a[bl[i]];
    for (int i = 0; i < nm; i++) pa[r++] = where_a[ml[i]];
    for (int i = 0; i < nk; i++) pa[r++] = where_a[kl[i]];
    r = 0;
    for (int i = 0; i < nb; i++) pb[r++] = where_b[bl[i]];
    for (int i = 0; i < nk; i++) pb[r++] = where_b[kl[i]];
    for (int i = 0; i < nn; i++) pb[r++] = where_b[nl[i]];
    /* C is [batch, m, n]; output dim i comes from C's dim holding its label. */
    int cl[OX_MAX_RANK];
    int64_t cd[OX_MAX_RANK];
    r = 0;
    for (int i = 0; i < nb; i++) cl[r++] = bl[i];
    for (int i = 0; i < nm; i++) cl[r++] = ml[i];
    for (int i = 0; i < nn; i++) cl[r++] = nl[i];
    for (int i = 0; i < r; i++) {
        int l = cl[i];
        cd[i] = where_a[l] >= 0 ? a->dims[where_a[l]] : b->dims[where_b[l]];
    }
    for (int i = 0; i < to->n; i++) {
        pc[i] = -1;
        for (int j = 0; j < r; j++) if (cl[j] == to->lab[i]) pc[i] = j;
        if (pc[i] < 0) return false;
    }
    float *Ap = malloc((size_t)(a->numel + 1) * sizeof(float));
    float *Bp = malloc((size_t)(b->numel + 1) * sizeof(float));
    float *Cm = malloc((size_t)(Bs * Ms * Ns + 1) * sizeof(float));
    if (!Ap || !Bp || !Cm) {
        free(Ap); free(Bp); free(Cm);
        *st = NN_NOMEM(c);
        return true;
    }
    permute(A, a->rank, a->dims, pa, Ap);
    permute(B, b->rank, b->dims, pb, Bp);
    for (int64_t i = 0; i < Bs; i++)
        nn_sgemm_mt(c->pool, false, false, Ms, Ns, Ks, 1.0f, Ap + i * Ms * Ks, Ks, Bp + i * Ks * Ns,
                    Ns, 0.0f, Cm + i * Ms * Ns, Ns);
    permute(Cm, r, cd, pc, Y);
    free(Ap); free(Bp); free(Cm);
    *st = OX_OK;
    return true;
}

NN_KERNEL(einsum)
{
    const char *eq = nn_attr_s(c, "equation", NULL);
    if (!eq) return NN_FAIL(c, "missing equation");
    int nops = c->n_in;
    if (nops < 1 || nops > MAXOPS) return NN_FAIL(c, "needs 1 to %d inputs", MAXOPS);
    const ox_tensor *in[MAXOPS];
    for (int k = 0; k < nops; k++) {
        in[k] = ox_kernel_in(c, k);
        if (!in[k]) return NN_FAIL(c, "missing input %d", k);
        if (in[k]->dtype != in[0]->dtype) return NN_FAIL(c, "input types differ");
    }
    if (!nn_is_float_dt(in[0]->dtype) && !ox_dtype_is_int(in[0]->dtype))
        return NN_FAIL(c, "unsupported type");
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    /* Split the left side at commas. */
    ein_term terms[MAXOPS];
    const char *p = eq;
    int E = 0;
    /* First pass: ellipsis rank E = max over operands. */
    for (int pass = 0; pass < 2; pass++) {
        p = eq;
        for (int k = 0; k < nops; k++) {
            const char *end = memchr(p, ',', (size_t)(eq + lhs_len - p));
            if (!end) end = eq + lhs_len;
            if (k < nops - 1 && end == eq + lhs_len) return NN_FAIL(c, "equation has too few operands");
            if (k == nops - 1 && end != eq + lhs_len) return NN_FAIL(c, "equation has too many operands");
            if (!parse_term(p, (size_t)(end - p), in[k]->rank, E, &terms[k]))
                return NN_FAIL(c, "bad term for operand %d", k);
            if (pass == 0 && memmem(p, (size_t)(end - p), "...", 3)) {
                int letters = 0;
                for (const char *q = p; q < end; q++) if (label_of(*q) >= 0) letters++;
                if (in[k]->rank - letters > E) E = in[k]->rank - letters;
            }
            p = end + 1;
        }
    }
    int64_t size[NL];
    for (int l = 0; l < NL; l++) size[l] = -1;
    int count[NL] = {0};
    for (int k = 0; k < nops; k++)
        for (int j = 0; j < terms[k].n; j++) {
            int l = terms[k].lab[j];
            int64_t d = in[k]->dims[j];
            count[l]++;
            if (size[l] < 0 || size[l] == 1) size[l] = d;
            else if (d != size[l] && d != 1) return NN_FAIL(c, "dimension mismatch for a label");
        }
    ein_term out;
    if (arrow) {
        const char *o = arrow + 2;
        if (!parse_term(o, strlen(o), -1, E, &out)) return NN_FAIL(c, "bad output term");
        bool once[NL] = {0};
        for (int j = 0; j < out.n; j++) {
            if (size[out.lab[j]] < 0) return NN_FAIL(c, "output label not in inputs");
            /* "ij->ii" has no meaning (numpy refuses it too); the GEMM
             * route's output permutation assumes distinct labels. */
            if (once[out.lab[j]]) return NN_FAIL(c, "output label repeated");
            once[out.lab[j]] = true;
        }
    } else {
        out.n = 0;
        for (int l = ELL0; l < ELL0 + E; l++) out.lab[out.n++] = l;
        /* Implicit: labels used once, in ASCII order (uppercase first). */
        for (int l = 26; l < 52; l++) if (count[l] == 1) out.lab[out.n++] = l;
        for (int l = 0; l < 26; l++) if (count[l] == 1) out.lab[out.n++] = l;
    }
    bool in_out[NL] = {0};
    for (int j = 0; j < out.n; j++) in_out[out.lab[j]] = true;
    int red[NL], nred = 0;
    for (int l = 0; l < NL; l++) if (size[l] >= 0 && !in_out[l]) red[nred++] = l;
    /* Per-operand strides per label (repeated labels add up: diagonals). */
    int64_t st[MAXOPS][NL];
    memset(st, 0, sizeof st);
    for (int k = 0; k < nops; k++) {
        int64_t s = 1;
        for (int j = terms[k].n - 1; j >= 0; j--) {
            int l = terms[k].lab[j];
            if (in[k]->dims[j] != 1) st[k][l] += s;
            s *= in[k]->dims[j];
        }
    }
    int64_t od[OX_MAX_RANK];
    for (int j = 0; j < out.n; j++) od[j] = size[out.lab[j]];
    float *tmp[MAXOPS] = {0};
    const float *X[MAXOPS];
    ox_status st_ = OX_OK;
    for (int k = 0; k < nops; k++) {
        X[k] = nn_load_f32(c, in[k], &tmp[k]);
        if (!X[k]) { st_ = NN_ST(c); goto done; }
    }
    nn_fout o;
    if ((st_ = nn_fout_new(c, 0, in[0]->dtype, out.n, od, &o))) goto done;
    if (nops == 2 && nn_is_float_dt(in[0]->dtype) &&
        einsum_gemm(c, &terms[0], &terms[1], &out, in[0], in[1], X[0], X[1], o.f, &st_)) {
        if (st_) nn_fout_drop(&o);
        else nn_fout_done(&o);
        goto done;
    }
    int64_t on = nn_prod(od, out.n), rn = 1;
    for (int r = 0; r < nred; r++) rn *= size[red[r]];
    for (int64_t oi = 0; oi < on; oi++) {
        int64_t base[MAXOPS] = {0}, rem = oi;
        for (int j = out.n - 1; j >= 0; j--) {
            int64_t idx = rem % od[j];
            rem /= od[j];
            for (int k = 0; k < nops; k++) base[k] += idx * st[k][out.lab[j]];
        }
        double acc = 0;
        int64_t ridx[NL] = {0}, off[MAXOPS];
        for (int k = 0; k < nops; k++) off[k] = base[k];
        for (int64_t ri = 0; ri < rn; ri++) {
            double prod = 1;
            for (int k = 0; k < nops; k++) prod *= X[k][off[k]];
            acc += prod;
            /* Odometer step over reduced labels. */
            for (int r = nred - 1; r >= 0; r--) {
                int l = red[r];
                ridx[r]++;
                for (int k = 0; k < nops; k++) off[k] += st[k][l];
                if (ridx[r] < size[l]) break;
                for (int k = 0; k < nops; k++) off[k] -= st[k][l] * size[l];
                ridx[r] = 0;
            }
        }
        o.f[oi] = (float)acc;
    }
    nn_fout_done(&o);
done:
    for (int k = 0; k < nops; k++) free(tmp[k]);
    return st_;
}
