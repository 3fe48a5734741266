/* buggy_opt.c: a deliberately wrong optimiser, the planted bug that
 * raf-reduce's tests reduce.
 *
 *   buggy-opt in.raf -o out.raf
 *
 * It stands for a peephole with a bug: where the incoming gradient of a
 * `gelu_grad` comes straight from a `matmul` with `transpose_b` (as the
 * backward pass of GPT-2's MLP writes it), it swaps gelu_grad's two
 * operands. Types agree (both are the activation's shape), so the output
 * verifies and only its values are wrong. Everything else is printed
 * unchanged. It is built for the tests only and is no pass of the registry.
 *
 * Exit status: 0 when the output was written, 1 when the input does not
 * parse or verify.
 */
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

/* Whether s is the pattern: gelu_grad(matmul(..) {transpose_b}, x). */
static bool is_pattern(const raf_stmt *s) {
  if (s->op != RAF_OP_GELU_GRAD || s->noperands != 2)
    return false;
  const raf_stmt *dy = s->operands[0].value->def;
  return dy && dy->op == RAF_OP_MATMUL &&
         raf_stmt_attr_bool(dy, "transpose_b");
}

static int miscompile(raf_module *m) {
  int n = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next)
      if (is_pattern(s)) {
        raf_value *dy = s->operands[0].value, *x = s->operands[1].value;
        raf_use_set(&s->operands[0], x);
        raf_use_set(&s->operands[1], dy);
        n++;
      }
  return n;
}

int main(int argc, char **argv) {
  const char *input = NULL, *output = "-";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
      output = argv[++i];
    else
      input = argv[i];
  }
  if (!input) {
    fprintf(stderr, "usage: buggy-opt in.raf [-o out.raf]\n");
    return 1;
  }
  FILE *in = fopen(input, "rb");
  size_t len = 0;
  char *text = in ? raf_read_stream(in, &len) : NULL;
  if (in)
    fclose(in);
  if (!text) {
    fprintf(stderr, "buggy-opt: cannot read '%s'\n", input);
    return 1;
  }
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_parse_module(ctx, input, text, len, 1);
  int status = 1;
  if (m && raf_verify_module(ctx, m) == RAF_OK) {
    miscompile(m);
    FILE *out = strcmp(output, "-") == 0 ? stdout : fopen(output, "wb");
    if (out) {
      raf_print_module(m, out, 0);
      status = out == stdout ? fflush(out) != 0 : fclose(out) != 0;
    }
  } else {
    raf_diag_render(ctx, stderr);
  }
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  free(text);
  return status;
}
