/* The kernel registry: concatenates the family tables into one sorted
 * index and answers (domain, op_type, opset) with the entry of the highest
 * since_version not above the opset, as cONNXr's generated table does. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/exec.h"
#include "exec/kfamilies.h"

/* Families that have not listed any source file yet are left out (see
 * src/exec/meson.build), so the tree links while they are being written. */
static const ox_kernel_entry *const families[] = {
#if OX_HAVE_K_ELEMENTWISE
    ox_kernels_elementwise,
#endif
#if OX_HAVE_K_REDUCE
    ox_kernels_reduce,
#endif
#if OX_HAVE_K_NN
    ox_kernels_nn,
#endif
#if OX_HAVE_K_TENSOR
    ox_kernels_tensor,
#endif
#if OX_HAVE_K_CONTROL
    ox_kernels_control,
#endif
#if OX_HAVE_K_SEQUENCE
    ox_kernels_sequence,
#endif
#if OX_HAVE_K_MISC
    ox_kernels_misc,
#endif
    NULL,
};

static const ox_kernel_entry **index_;
static int n_index;
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

/* "ai.onnx" and "" name the same default domain. */
static const char *norm_domain(const char *d)
{
    if (!d || strcmp(d, "ai.onnx") == 0)
        return "";
    return d;
}

static int cmp_key(const char *da, const char *oa, const char *db, const char *ob)
{
    int c = strcmp(norm_domain(da), norm_domain(db));
    return c ? c : strcmp(oa, ob);
}

static int cmp_entry(const void *a, const void *b)
{
    const ox_kernel_entry *x = *(const ox_kernel_entry *const *)a;
    const ox_kernel_entry *y = *(const ox_kernel_entry *const *)b;
    int c = cmp_key(x->domain, x->op_type, y->domain, y->op_type);
    if (c)
        return c;
    return (x->since_version > y->since_version) - (x->since_version < y->since_version);
}

static void build_index(void)
{
    int n = 0;
    for (int f = 0; families[f]; f++)
        for (const ox_kernel_entry *e = families[f]; e->op_type; e++)
            n++;
    index_ = calloc(n ? (size_t)n : 1, sizeof *index_);
    if (!index_)
        return;
    for (int f = 0; families[f]; f++)
        for (const ox_kernel_entry *e = families[f]; e->op_type; e++)
            if (e->fn)
                index_[n_index++] = e;
    qsort(index_, (size_t)n_index, sizeof *index_, cmp_entry);
}

/* First index entry with key >= (domain, op). */
static int lower_bound(const char *domain, const char *op)
{
    int lo = 0, hi = n_index;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cmp_key(index_[mid]->domain, index_[mid]->op_type, domain, op) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

ox_kernel_fn ox_kernel_lookup(const char *domain, const char *op_type, int64_t opset)
{
    const ox_kernel_entry *e = ox_kernel_find(domain, op_type, opset);
    return e ? e->fn : NULL;
}

const ox_kernel_entry *ox_kernel_find(const char *domain, const char *op_type,
                                      int64_t opset)
{
    if (!op_type)
        return NULL;
    pthread_once(&index_once, build_index);
    if (!index_)
        return NULL;
    const ox_kernel_entry *best = NULL;
    for (int i = lower_bound(domain, op_type); i < n_index; i++) {
        if (cmp_key(index_[i]->domain, index_[i]->op_type, domain, op_type) != 0)
            break;
        if (index_[i]->since_version <= opset)
            best = index_[i];
    }
    return best;
}

bool ox_kernel_exists(const char *domain, const char *op_type)
{
    return ox_kernel_find(domain, op_type, INT64_MAX) != NULL;
}

int ox_kernel_count(void)
{
    pthread_once(&index_once, build_index);
    return n_index;
}

const ox_kernel_entry *ox_kernel_at(int i)
{
    pthread_once(&index_once, build_index);
    return (i >= 0 && i < n_index) ? index_[i] : NULL;
}
