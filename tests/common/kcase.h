/* A hand-built node and kernel context for calling one kernel directly in
 * unit tests (shared by the kernel-family tests). */
#ifndef ONNXSCOPE_TEST_KCASE_H
#define ONNXSCOPE_TEST_KCASE_H

#include <string.h>

#include "onnxscope/exec.h"

#define MAXA 8

typedef struct {
    ox_node node;
    ox_attr attrs[MAXA];
    ox_rval *in[8];
    ox_rval *out[8];
    ox_kernel_ctx ctx;
    ox_error err;
} kcase;

static inline void kc_init(kcase *k, const char *op, int64_t opset)
{
    memset(k, 0, sizeof *k);
    k->node.op_type = (char *)op;
    k->node.domain = (char *)"";
    k->node.attrs = k->attrs;
    k->ctx.node = &k->node;
    k->ctx.opset = opset;
    k->ctx.in = k->in;
    k->ctx.out = k->out;
    k->ctx.err = &k->err;
    k->ctx.n_out = 1;
}

static inline ox_attr *kc_attr(kcase *k, const char *name, ox_attr_type t)
{
    ox_attr *a = &k->attrs[k->node.n_attrs++];
    a->name = (char *)name;
    a->type = t;
    return a;
}

static inline void attr_i(kcase *k, const char *name, int64_t v)
{
    kc_attr(k, name, OX_ATTR_INT)->i = v;
}

static inline void attr_f(kcase *k, const char *name, float v)
{
    kc_attr(k, name, OX_ATTR_FLOAT)->f = v;
}

static inline void attr_s(kcase *k, const char *name, const char *s)
{
    ox_attr *a = kc_attr(k, name, OX_ATTR_STRING);
    a->s.data = (char *)s;
    a->s.len = strlen(s);
}

#endif
