/* test_epilogue.c: which fused functions ir/epilogue.c reads as one
 * cuBLASLt product with an epilogue, and what it reads in them: every
 * form, and the groups that look alike but cuBLASLt cannot take. */
#include "ir/epilogue.h"
#include "lang/lang.h"

#include <stdio.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"

static const char *text =
    /* forms */
    "func @gelu_aux(%x: f32[2,3,8], %w: f32[8,16], %b: f32[16]) -> "
    "(f32[2,3,16], f32[2,3,16]) {fused} {\n"
    "  %p = matmul(%x, %w)\n  %h = add(%p, %b)\n"
    "  %g = gelu(%h) {approximate = \"tanh\"}\n  return %h, %g\n}\n"
    "func @bias_res(%x: f32[4,8], %w: f32[8,16], %b: f32[16], "
    "%r: f32[4,16]) -> f32[4,16] {fused} {\n"
    "  %p = matmul(%x, %w)\n  %h = add(%r, %p)\n  %o = add(%b, %h)\n"
    "  return %o\n}\n"
    "func @dgelu(%dy: f32[4,16], %w: f32[8,16], %h: f32[4,8]) -> f32[4,8] "
    "{fused} {\n"
    "  %p = matmul(%dy, %w) {transpose_b}\n"
    "  %d = gelu_grad(%p, %h) {approximate = \"tanh\"}\n  return %d\n}\n"
    "func @bgrad(%x: f32[4,8], %dy: f32[4,16]) -> (f32[16], f32[8,16]) "
    "{fused} {\n"
    "  %db = sum(%dy) {axes = [0]}\n"
    "  %dw = matmul(%x, %dy) {transpose_a}\n  return %db, %dw\n}\n"
    /* look-alikes */
    "func @erf_gelu(%x: f32[4,8], %w: f32[8,16]) -> f32[4,16] {fused} {\n"
    "  %p = matmul(%x, %w)\n  %g = gelu(%p)\n  return %g\n}\n"
    "func @res_gelu(%x: f32[4,8], %w: f32[8,16], %r: f32[4,16]) -> "
    "f32[4,16] {fused} {\n"
    "  %p = matmul(%x, %w)\n  %h = add(%p, %r)\n"
    "  %g = gelu(%h) {approximate = \"tanh\"}\n  return %g\n}\n"
    "func @product_out(%x: f32[4,8], %w: f32[8,16], %b: f32[16]) -> "
    "(f32[4,16], f32[4,16]) {fused} {\n"
    "  %p = matmul(%x, %w)\n  %h = add(%p, %b)\n  return %p, %h\n}\n"
    "func @row_bias(%x: f32[4,8], %w: f32[8,4], %b: f32[4,1]) -> f32[4,4] "
    "{fused} {\n"
    "  %p = matmul(%x, %w)\n  %h = add(%p, %b)\n  return %h\n}\n"
    "func @after_gelu(%x: f32[4,8], %w: f32[8,16], %b: f32[16]) -> "
    "f32[4,16] {fused} {\n"
    "  %p = matmul(%x, %w)\n  %g = gelu(%p) {approximate = \"tanh\"}\n"
    "  %h = add(%g, %b)\n  return %h\n}\n"
    "func @bgrad_rows(%x: f32[4,8], %dy: f32[4,16]) -> (f32[4], f32[8,16]) "
    "{fused} {\n"
    "  %db = sum(%dy) {axes = [1]}\n"
    "  %dw = matmul(%x, %dy) {transpose_a}\n  return %db, %dw\n}\n"
    "func @batched(%x: f32[2,4,8], %w: f32[2,8,16], %b: f32[16]) -> "
    "f32[2,4,16] {fused} {\n"
    "  %p = matmul(%x, %w)\n  %h = add(%p, %b)\n  return %h\n}\n";

static bool read(raf_module *m, const char *name, raf_epilogue *e) {
  memset(e, 0, sizeof *e);
  return raf_epilogue_of_func(raf_module_find_func(m, name), e);
}

static const char *name_of(const raf_value *v) { return v ? v->name : ""; }

int main(void) {
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_parse_module(ctx, "t.raf", text, strlen(text), 1);
  CHECK(m != NULL);
  if (!m)
    return 1;
  raf_epilogue e;
  CHECK(read(m, "gelu_aux", &e) && e.kind == RAF_EPILOGUE_FORWARD && e.gelu);
  CHECK(strcmp(name_of(e.bias), "b") == 0 && !e.residual);
  CHECK(strcmp(name_of(e.aux), "h") == 0 && strcmp(name_of(e.out), "g") == 0);
  CHECK(read(m, "bias_res", &e) && !e.gelu && !e.aux);
  CHECK(strcmp(name_of(e.bias), "b") == 0);
  CHECK(strcmp(name_of(e.residual), "r") == 0);
  CHECK(read(m, "dgelu", &e) && e.kind == RAF_EPILOGUE_DGELU);
  CHECK(strcmp(name_of(e.aux), "h") == 0 && strcmp(name_of(e.out), "d") == 0);
  CHECK(read(m, "bgrad", &e) && e.kind == RAF_EPILOGUE_BIAS_GRAD);
  CHECK(strcmp(name_of(e.bias_grad), "db") == 0);
  CHECK(strcmp(name_of(e.out), "dw") == 0);
  /* gelu without tanh (cuBLASLt's is the tanh form); a residual under the
   * gelu; the product itself read outside; a bias that is not along the
   * rows; an add after the activation; a sum over the other axis; a
   * batched product. */
  CHECK(!read(m, "erf_gelu", &e));
  CHECK(!read(m, "res_gelu", &e));
  CHECK(!read(m, "product_out", &e));
  CHECK(!read(m, "row_bias", &e));
  CHECK(!read(m, "after_gelu", &e));
  CHECK(!read(m, "bgrad_rows", &e));
  CHECK(!read(m, "batched", &e));
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  if (failures)
    fprintf(stderr, "test_epilogue: %d failures\n", failures);
  return failures != 0;
}
