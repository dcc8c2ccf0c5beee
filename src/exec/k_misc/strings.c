/* String kernels: StringNormalizer, StringConcat, StringSplit and
 * RegexFullMatch (RE2 patterns translated to POSIX extended regexes with
 * the GNU \b \w escapes that glibc understands). */
#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "exec/k_misc/misc.h"

static bool set_str(ox_bytes *b, const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (!d)
        return false;
    if (len)
        memcpy(d, s, len);
    d[len] = 0;
    free(b->data);
    b->data = d;
    b->len = len;
    return true;
}

static bool in_stopwords(const ox_attr *sw, const ox_bytes *s, bool cs)
{
    if (!sw)
        return false;
    for (int i = 0; i < sw->n; i++) {
        const ox_bytes *w = &sw->strings[i];
        if (w->len != s->len)
            continue;
        if (cs ? memcmp(w->data, s->data, s->len) == 0
               : strncasecmp(w->data, s->data, s->len) == 0)
            return true;
    }
    return false;
}

ox_status ox_misc_string_normalizer(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->dtype != OX_DT_STRING || x->rank < 1 || x->rank > 2 ||
        (x->rank == 2 && x->dims[0] != 1))
        return ox_errorf(c->err, OX_EINVAL, "X must be a string tensor [C] or [1, C]");
    const char *action = ox_node_attr_s(c->node, "case_change_action", "NONE");
    bool cs = ox_node_attr_i(c->node, "is_case_sensitive", 0) != 0;
    const ox_attr *sw = ox_node_attr(c->node, "stopwords");
    if (sw && sw->type != OX_ATTR_STRINGS)
        sw = NULL;
    int64_t n = x->numel, kept = 0;
    for (int64_t i = 0; i < n; i++)
        if (!in_stopwords(sw, &x->strings[i], cs))
            kept++;
    int64_t dims[2];
    int rank = x->rank;
    /* Everything filtered: the output holds one empty string. */
    int64_t cnt = kept ? kept : 1;
    if (rank == 1)
        dims[0] = cnt;
    else {
        dims[0] = 1;
        dims[1] = cnt;
    }
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_STRING, rank, dims);
    if (!y)
        return c->err->status;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        const ox_bytes *s = &x->strings[i];
        if (in_stopwords(sw, s, cs))
            continue;
        if (!set_str(&y->strings[k], s->data, s->len))
            return ox_errorf(c->err, OX_ENOMEM, "out of memory");
        char *d = y->strings[k].data;
        if (strcmp(action, "LOWER") == 0)
            for (size_t j = 0; j < s->len; j++)
                d[j] = (char)tolower((unsigned char)d[j]);
        else if (strcmp(action, "UPPER") == 0)
            for (size_t j = 0; j < s->len; j++)
                d[j] = (char)toupper((unsigned char)d[j]);
        k++;
    }
    return OX_OK;
}

bool ox_misc_broadcast(int ra, const int64_t *da, int rb, const int64_t *db, int *ro,
                       int64_t *dout)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t a = i - (r - ra) >= 0 ? da[i - (r - ra)] : 1;
        int64_t b = i - (r - rb) >= 0 ? db[i - (r - rb)] : 1;
        if (a != b && a != 1 && b != 1)
            return false;
        dout[i] = a == 1 ? b : a;
    }
    *ro = r;
    return true;
}

int64_t ox_misc_bcast_index(int ro, const int64_t *idx, int r, const int64_t *d)
{
    int64_t off = 0;
    for (int i = 0; i < r; i++) {
        int64_t k = idx[i + ro - r];
        off = off * d[i] + (d[i] == 1 ? 0 : k);
    }
    return off;
}

static void next_index(int r, const int64_t *dims, int64_t *idx)
{
    for (int i = r - 1; i >= 0; i--) {
        if (++idx[i] < dims[i])
            return;
        idx[i] = 0;
    }
}

ox_status ox_misc_string_concat(ox_kernel_ctx *c)
{
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1);
    if (!a || !b || a->dtype != OX_DT_STRING || b->dtype != OX_DT_STRING)
        return ox_errorf(c->err, OX_EINVAL, "inputs must be string tensors");
    int r;
    int64_t dims[OX_MAX_RANK], idx[OX_MAX_RANK] = {0};
    if (!ox_misc_broadcast(a->rank, a->dims, b->rank, b->dims, &r, dims))
        return ox_errorf(c->err, OX_ESHAPE, "shapes do not broadcast");
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_STRING, r, dims);
    if (!y)
        return c->err->status;
    for (int64_t i = 0; i < y->numel; i++) {
        const ox_bytes *sa = &a->strings[ox_misc_bcast_index(r, idx, a->rank, a->dims)];
        const ox_bytes *sb = &b->strings[ox_misc_bcast_index(r, idx, b->rank, b->dims)];
        char *d = malloc(sa->len + sb->len + 1);
        if (!d)
            return ox_errorf(c->err, OX_ENOMEM, "out of memory");
        if (sa->len)
            memcpy(d, sa->data, sa->len);
        if (sb->len)
            memcpy(d + sa->len, sb->data, sb->len);
        d[sa->len + sb->len] = 0;
        free(y->strings[i].data);
        y->strings[i].data = d;
        y->strings[i].len = sa->len + sb->len;
        next_index(r, dims, idx);
    }
    return OX_OK;
}

/* Splits s like Python's str.split(delim, maxsplit): with no delimiter on
 * runs of whitespace (leading/trailing ignored). Calls emit per piece when
 * given; returns the count. */
static int64_t split_one(const ox_bytes *s, const char *delim, size_t dl, int64_t maxsplit,
                         ox_bytes *out, int64_t cap)
{
    int64_t n = 0;
    const char *p = s->data, *end = s->data + s->len;
    if (!dl) {
        while (p < end) {
            while (p < end && isspace((unsigned char)*p))
                p++;
            if (p >= end)
                break;
            const char *q = p;
            if (maxsplit >= 0 && n >= maxsplit) {
                q = end;   /* Python keeps the remainder's trailing spaces */
            } else {
                while (q < end && !isspace((unsigned char)*q))
                    q++;
            }
            if (out && n < cap && !set_str(&out[n], p, (size_t)(q - p)))
                return -1;
            n++;
            p = q;
        }
        return n;
    }
    for (;;) {
        const char *q = NULL;
        if (maxsplit < 0 || n < maxsplit)
            q = memmem(p, (size_t)(end - p), delim, dl);
        if (!q)
            q = end;
        if (out && n < cap && !set_str(&out[n], p, (size_t)(q - p)))
            return -1;
        n++;
        if (q == end)
            break;
        p = q + dl;
    }
    return n;
}

ox_status ox_misc_string_split(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->dtype != OX_DT_STRING || x->rank >= OX_MAX_RANK)
        return ox_errorf(c->err, OX_EINVAL, "X must be a string tensor");
    const char *delim = ox_node_attr_s(c->node, "delimiter", "");
    size_t dl = strlen(delim);
    int64_t maxsplit = ox_node_attr_i(c->node, "maxsplit", -1);
    int64_t widest = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = split_one(&x->strings[i], delim, dl, maxsplit, NULL, 0);
        if (k > widest)
            widest = k;
    }
    int64_t dims[OX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[x->rank] = widest;
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_STRING, x->rank + 1, dims);
    if (!y)
        return c->err->status;
    ox_tensor *z = c->n_out > 1 ? ox_kernel_output(c, 1, OX_DT_INT64, x->rank, x->dims) : NULL;
    if (c->n_out > 1 && !z)
        return c->err->status;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = split_one(&x->strings[i], delim, dl, maxsplit, &y->strings[i * widest],
                              widest);
        if (k < 0)
            return ox_errorf(c->err, OX_ENOMEM, "out of memory");
        if (z)
            ((int64_t *)ox_tensor_data(z))[i] = k;
    }
    return OX_OK;
}

/* RE2 -> POSIX ERE: class escapes become bracket classes, escapes inside
 * brackets are resolved (POSIX brackets take backslashes literally). */
static char *translate_re(const char *p)
{
    size_t n = strlen(p);
    char *o = malloc(n * 16 + 8);
    if (!o)
        return NULL;
    size_t k = 0;
    o[k++] = '^';
    o[k++] = '(';
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\' && i + 1 < n) {
            char e = p[++i];
            const char *rep = NULL;
            switch (e) {
            case 'd': rep = "[[:digit:]]"; break;
            case 'D': rep = "[^[:digit:]]"; break;
            case 'w': rep = "[[:alnum:]_]"; break;
            case 'W': rep = "[^[:alnum:]_]"; break;
            case 's': rep = "[[:space:]]"; break;
            case 'S': rep = "[^[:space:]]"; break;
            default: break;
            }
            if (rep) {
                memcpy(o + k, rep, strlen(rep));
                k += strlen(rep);
            } else {
                o[k++] = '\\';
                o[k++] = e;
            }
        } else if (p[i] == '[') {
            /* bracket expression */
            char items[1024];
            size_t ni = 0;
            bool neg = false, dash = false, close = false;
            i++;
            if (i < n && p[i] == '^') {
                neg = true;
                i++;
            }
            if (i < n && p[i] == ']') {
                close = true;
                i++;
            }
            for (; i < n && p[i] != ']' && ni < sizeof items - 32; i++) {
                if (p[i] == '\\' && i + 1 < n) {
                    char e = p[++i];
                    const char *rep = NULL;
                    switch (e) {
                    case 'd': rep = "[:digit:]"; break;
                    case 'w': rep = "[:alnum:]_"; break;
                    case 's': rep = "[:space:]"; break;
                    case '-': dash = true; break;
                    case ']': close = true; break;
                    case 'n': items[ni++] = '\n'; break;
                    case 't': items[ni++] = '\t'; break;
                    default: items[ni++] = e; break;
                    }
                    if (rep) {
                        memcpy(items + ni, rep, strlen(rep));
                        ni += strlen(rep);
                    }
                } else if (p[i] == '[' && i + 1 < n && p[i + 1] == ':') {
                    const char *end = strstr(p + i, ":]");
                    size_t l = end ? (size_t)(end - (p + i)) + 2 : 1;
                    if (ni + l < sizeof items) {
                        memcpy(items + ni, p + i, l);
                        ni += l;
                    }
                    i += l - 1;
                } else if (p[i] == '-' && (i + 1 >= n || p[i + 1] == ']')) {
                    dash = true;
                } else {
                    items[ni++] = p[i];
                }
            }
            o[k++] = '[';
            if (neg)
                o[k++] = '^';
            if (close)
                o[k++] = ']';
            memcpy(o + k, items, ni);
            k += ni;
            if (dash)
                o[k++] = '-';
            o[k++] = ']';
        } else {
            o[k++] = p[i];
        }
    }
    o[k++] = ')';
    o[k++] = '$';
    o[k] = 0;
    return o;
}

ox_status ox_misc_regex_full_match(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->dtype != OX_DT_STRING)
        return ox_errorf(c->err, OX_EINVAL, "X must be a string tensor");
    const char *pat = ox_node_attr_s(c->node, "pattern", NULL);
    if (!pat)
        return ox_errorf(c->err, OX_EINVAL, "missing pattern");
    char *tr = translate_re(pat);
    if (!tr)
        return ox_errorf(c->err, OX_ENOMEM, "out of memory");
    regex_t re;
    int rc = regcomp(&re, tr, REG_EXTENDED | REG_NOSUB);
    free(tr);
    if (rc != 0)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "pattern not supported: %s", pat);
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_BOOL, x->rank, x->dims);
    if (!y) {
        regfree(&re);
        return c->err->status;
    }
    uint8_t *d = ox_tensor_data(y);
    for (int64_t i = 0; i < x->numel; i++)
        d[i] = regexec(&re, x->strings[i].data ? x->strings[i].data : "", 0, NULL, 0) == 0;
    regfree(&re);
    return OX_OK;
}
