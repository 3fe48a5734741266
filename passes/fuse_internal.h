/* fuse_internal.h: what the two halves of the fuse pass share: the
 * statement graph (a node per statement, groups as union-find roots), the
 * groups chosen, and the helpers each half calls in the other. Internal to
 * passes/fuse.c (the walk: classifying, merging, patterns, the pass) and
 * passes/fuse_build.c (scheduling the groups and building their fused
 * functions); fuse.c's essay describes the pass.
 */
#ifndef RAF_PASSES_FUSE_INTERNAL_H
#define RAF_PASSES_FUSE_INTERNAL_H

#include "passes/fuse.h"
#include "passes/pass.h"

#define MAX_IO 64          /* operands and results of a call (executor) */
#define WALK_BUDGET 65536  /* statements one acyclicity walk may visit */
#define MAX_PATTERN_SIZE 16
/* A group whose reduction's input has this many times its output's
 * elements is placed at the reduction (placed_at). */
#define SHRINK 16

/* Classes of statements for the walk. */
enum { C_NONE, C_CONST, C_ELEM, C_RESHAPE, C_IMAP, C_RED };
/* Positions relative to a group's reduction. */
enum { P_NONE, P_PRE, P_POST, P_SIDE, P_ANCHOR };

/* One statement, and (at its root) a group in a union-find forest. */
typedef struct node {
  raf_stmt *s;
  int64_t numel; /* of its result */
  int parent;
  int next;      /* the next member of the group, -1 at the end */
  unsigned seen; /* walk stamp */
  unsigned char cls, phase;
  bool claimed; /* by a pattern */
  bool copied;  /* a constant copied into some group */
  bool pruned;  /* a reshape at the end of its group, left out */
  /* At the root of a group (rank: its place in a topological order of
   * the contracted graph, see the header): */
  int head, tail, size, anchor, rank;
  int64_t dom_in, dom_out; /* D, D for loop groups; I, O with an anchor */
  bool sealed;
  bool remat;   /* it has a {remat} member */
  bool forward; /* it has a member of the forward (raf_func_forward) */
} node;

typedef struct group {
  int first, nmem; /* the members: mem[first .. first + nmem), in order */
  raf_value *in[MAX_IO];
  raf_value *out[MAX_IO];
  int nin, nout;
  raf_stmt *call;
} group;

typedef struct frame {
  int node, j, i;
} frame;

typedef struct fuser {
  raf_ctx *ctx;
  raf_module *m;
  int64_t max_size;
  const raf_fuse_pattern **pats; /* enabled, highest priority first */
  int npats;
  int counter; /* for @fused_N */
  /* Per function: */
  raf_func *f;
  node *nd;
  int n;
  int64_t base; /* order of the first statement */
  int *tmp;
  int *fwd, *bwd; /* the groups a merge's walks reach */
  int64_t *keys;  /* for sorting groups by rank */
  unsigned stamp;
  bool failed;
} fuser;

void fuse_oom(fuser *F);
int fuse_index_of(const fuser *F, const raf_stmt *s);
int fuse_def_of(const fuser *F, const raf_value *v);
int fuse_find(node *nd, int k);
unsigned fuse_new_stamp(fuser *F);
bool fuse_schedule(fuser *F, const int *gid, const group *G, int ng,
                   const int *mem, int *order, int *norder);
bool fuse_group_io(fuser *F, const int *gid, group *g, const int *mem, int id);
bool fuse_build_group(fuser *F, const int *gid, group *g, const int *mem,
                      int id, raf_stmt **copy);

#endif
