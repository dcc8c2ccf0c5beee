/* Internal helpers shared by the src/ir files: use-list maintenance with
 * outer-scope (implicit) uses, subtree walks and graph teardown. */
#ifndef ONNXSCOPE_IR_INTERNAL_H
#define ONNXSCOPE_IR_INTERNAL_H

#include "onnxscope/ir.h"

/* Every allocation of src/ir goes through these (failure injection for
 * tests: ox_ir_test_fail_after). ox__ir_strdup(NULL) is NULL, not a failure. */
void *ox__ir_malloc(size_t n);
void *ox__ir_calloc(size_t n, size_t size);
void *ox__ir_realloc(void *p, size_t n);
void *ox__ir_xcalloc(size_t n, size_t size);
char *ox__ir_strdup(const char *s);
/* Marks g's model (if any) as having lost an edit to out of memory. */
void ox__oom(const ox_graph *g);

/* Adds a use record; on out of memory marks the model (ox__oom). */
bool ox__use_add(ox_value *v, ox_node *n, int input);
/* Removes one record (node, input); false if none. */
bool ox__use_del(ox_value *v, ox_node *n, int input);
/* Records / unrecords the read of v by node input i (resolves outer-scope
 * reads to an implicit use by the ancestor node living in v's graph). */
void ox__link_input(ox_node *n, int i, ox_value *v);
void ox__unlink_input(ox_node *n, int i, ox_value *v);
/* The node in v's graph that (transitively) owns g, for a subgraph output
 * or read of an outer value; NULL if unresolvable. */
ox_node *ox__output_reader(ox_graph *g, ox_value *v);
/* True if vg is root or nested (through parents) under root. */
bool ox__graph_in_tree(const ox_graph *vg, const ox_graph *root);
/* Adds / removes the use records for reads inside root's subtree of values
 * defined outside it. */
void ox__attach_outer(ox_graph *root);
void ox__detach_outer(ox_graph *root);
/* Frees a graph; detach: drop outer-scope records first; unreg: keep the
 * model name registries up to date (false while the model is torn down). */
void ox__graph_destroy(ox_graph *g, bool detach, bool unreg);
void ox__attr_free(ox_attr *a, bool detach, bool unreg);
/* Deep copy; subgraphs are cloned under parent_scope and owned by owner
 * (may be NULL); keep_ids preserves node ids (model clone). */
bool ox__attr_copy(ox_attr *dst, const ox_attr *src, ox_graph *parent_scope,
                   ox_node *owner, bool keep_ids);
ox_graph *ox__graph_clone(const ox_graph *src, ox_model *m, ox_graph *parent,
                          ox_node *owner, bool keep_ids);
/* Creates a value in g's scope without looking up (name must be free). */
ox_value *ox__value_new(ox_graph *g, const char *name);
void ox__name_reg(struct ox_strmap *map, const char *name);
void ox__name_unreg(struct ox_strmap *map, const char *name);

#endif
