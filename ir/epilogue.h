/* epilogue.h: a group of statements read as one cuBLASLt matmul with an
 * epilogue (ir/epilogue.c).
 *
 * cuBLASLt computes, in one kernel, a product and what follows it
 * elementwise: a bias along the rows, a residual added through its C
 * operand (beta = 1), GELU (keeping its input for the backward), GELU's
 * derivative against a saved input, or the bias gradient of its A operand.
 * Which statement groups it can take is decided here, once, for the fuse
 * pass's `matmul-epilogue` pattern (which groups only what this accepts),
 * the dispatch rule (the cublas dialect implements a call of a fused
 * function of this form) and the cublas dialect itself (which configures
 * the product from the description). The forms, in raf's row-major terms,
 * with p = matmul(a, b) [M, N] (or [..., M, N] where a's leading dims fold
 * into its rows, as in x [B, T, C] @ w [C, F]):
 *
 *   p + bias [+ c]       bias [N] along the rows; c of p's type (either
 *                        order)
 *   gelu(p [+ bias])     approximate = "tanh"; the gelu's input may also be
 *                        a result of the group (the aux output)
 *   p + c                the residual alone
 *   gelu_grad(p, x)      approximate = "tanh"; x of p's type (the aux
 *                        input)
 *   matmul(x, dy) {transpose_a} and sum(dy) {axes = [0]}, all 2-D
 *                        the weight and bias gradients of a linear layer
 *
 * Every value of the group is of the product's dtype, one of those the
 * cublas dialect's FUSED rows give matmul (f32, bf16, f16).
 */
#ifndef RAF_IR_EPILOGUE_H
#define RAF_IR_EPILOGUE_H

#include "ir/ir.h"

typedef enum raf_epilogue_kind {
  RAF_EPILOGUE_FORWARD,   /* bias, residual, gelu: some of them */
  RAF_EPILOGUE_DGELU,     /* gelu_grad(p, aux) */
  RAF_EPILOGUE_BIAS_GRAD, /* the product and sum(b) {axes = [0]} */
} raf_epilogue_kind;

/* What the group computes; every pointer is borrowed from the IR. */
typedef struct raf_epilogue {
  raf_epilogue_kind kind;
  const raf_stmt *matmul;
  const raf_value *bias;     /* the [N] vector added, or NULL */
  const raf_value *residual; /* the [M, N] value added, or NULL */
  bool gelu;
  /* gelu: the gelu's input when the group returns it too (else NULL);
   * dgelu: the saved input read. */
  const raf_value *aux;
  const raf_value *bias_grad; /* BIAS_GRAD: the sum's result */
  const raf_value *out;       /* the product's matrix after the epilogue */
} raf_epilogue;

/* Whether statements stmts[0..n) (any order) form one of the groups above,
 * where escapes(v, arg) says whether v is read outside them (a result of
 * the group); on true fills *out when out is not NULL. */
bool raf_epilogue_match(const raf_stmt *const *stmts, int n,
                        bool (*escapes)(const raf_value *v, void *arg),
                        void *arg, raf_epilogue *out);

/* The same for the statements of a fused function f (`{fused}`), whose
 * results are what its return reads. */
bool raf_epilogue_of_func(const raf_func *f, raf_epilogue *out);

#endif
