/* test_dialects.c: every (dialect, op) that lang/dialects.def promises has
 * a kernel, and the reference dialect has one for every op but call and
 * return (which the executor runs); a dialect with FUSED rows has a kernel
 * for call, and the call rule (raf_dialect_implements_call) follows its
 * rows. Fails when a row is added to ops.def or dialects.def without its
 * kernel. */
#include "runtime/dialects.h"
#include "runtime/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"

int main(void) {
  for (int d = 0; d < RAF_DIALECT_COUNT; d++) {
    const raf_dialect_info *info = raf_dialect_get((raf_dialect)d);
    for (int op = 0; op < RAF_OP_COUNT; op++) {
      bool promised = op == RAF_OP_CALL &&
                      raf_dialect_compiles_fused((raf_dialect)d);
      for (int dt = 0; dt < RAF_DTYPE_COUNT; dt++)
        promised |= raf_dialect_implements((raf_dialect)d, (raf_opcode)op,
                                           (raf_dtype)dt);
      bool has = raf_dialect_kernel((raf_dialect)d, (raf_opcode)op) != NULL;
      /* A dialect this build lacks (cuda without the CUDA toolkit) has no
       * table at all, and says why. */
      if (promised && !has && raf_dialect_unavailable((raf_dialect)d) &&
          !raf_dialect_kernel((raf_dialect)d, RAF_OP_CALL))
        continue;
      if (promised != has)
        fprintf(stderr, "dialect %s, op %s: %s\n", info->name,
                raf_op_table[op].name,
                promised ? "promised but no kernel" : "kernel not promised");
      CHECK(promised == has);
    }
  }
  /* Every row has a traits record (ir/dialect.h) that names its row and
   * answers every question; a pattern's name finds its dialect. */
  for (int d = 0; d < RAF_DIALECT_COUNT; d++) {
    const raf_dialect_traits *t = raf_dialect_traits_of((raf_dialect)d);
    CHECK(t != NULL);
    if (!t)
      continue;
    CHECK(t->dialect == (raf_dialect)d);
    CHECK(t->runs_stmt && t->runs_call && t->scratch && t->unavailable &&
          t->lacks);
    CHECK(t->npatterns == 0 || t->patterns);
    for (int i = 0; i < t->npatterns; i++) {
      const raf_fuse_pattern *p = &t->patterns[i], *found = NULL;
      CHECK(p->name && p->match);
      CHECK(raf_dialect_find_pattern(p->name, strlen(p->name), &found) ==
                (raf_dialect)d &&
            found == p);
    }
    CHECK(raf_dialect_unavailable((raf_dialect)d) == t->unavailable());
  }
  const raf_fuse_pattern *none;
  CHECK(raf_dialect_find_pattern("matmul-epilog", 13, &none) ==
        RAF_DIALECT_COUNT);
  /* The cuda device's convolutions, pooling, batch_norm and attention are
   * cudnn's, above cublas's attention; an inference-mode batch_norm_grad is
   * not (cuDNN's backward is the training form). */
  CHECK(raf_dialect_implements(RAF_DIALECT_CUDNN, RAF_OP_CONV2D, RAF_BF16));
  CHECK(raf_dialect_implements(RAF_DIALECT_CUDNN, RAF_OP_MAX_POOL2D_GRAD,
                               RAF_F16));
  CHECK(!raf_dialect_implements(RAF_DIALECT_CUDNN, RAF_OP_BATCH_NORM,
                                RAF_BF16));
  CHECK(raf_dialect_get(RAF_DIALECT_CUDNN)->priority >
        raf_dialect_get(RAF_DIALECT_CUBLAS)->priority);
  CHECK(raf_dialect_traits_of(RAF_DIALECT_CUDA)->lacks(RAF_OP_CONV2D) ==
        NULL);
  /* The reference covers everything but what the executor runs itself. */
  for (int op = 0; op < RAF_OP_COUNT; op++)
    CHECK(raf_dialect_implements(RAF_DIALECT_CPU_REF, (raf_opcode)op,
                                 RAF_F32) ==
          (op != RAF_OP_CALL && op != RAF_OP_RETURN));
  raf_dialect d;
  CHECK(raf_dialect_from_name("cblas", 5, &d) && d == RAF_DIALECT_CBLAS);
  CHECK(!raf_dialect_from_name("cbla", 4, &d));
  CHECK(raf_dialect_implements(RAF_DIALECT_CBLAS, RAF_OP_MATMUL, RAF_F32));
  CHECK(raf_dialect_implements(RAF_DIALECT_CBLAS, RAF_OP_MATMUL, RAF_F16));
  CHECK(!raf_dialect_implements(RAF_DIALECT_CBLAS, RAF_OP_MATMUL, RAF_I32));
  CHECK(!raf_dialect_implements(RAF_DIALECT_CBLAS, RAF_OP_ADD, RAF_F32));
  /* The llvm dialect compiles fused functions and runs nothing alone. */
  CHECK(raf_dialect_from_name("llvm", 4, &d) && d == RAF_DIALECT_LLVM);
  CHECK(raf_dialect_compiles_fused(RAF_DIALECT_LLVM));
  CHECK(!raf_dialect_compiles_fused(RAF_DIALECT_CPU_REF));
  CHECK(raf_dialect_fuses(RAF_DIALECT_LLVM, RAF_OP_EXP, RAF_BF16));
  CHECK(!raf_dialect_fuses(RAF_DIALECT_LLVM, RAF_OP_EXP, RAF_I32));
  CHECK(!raf_dialect_fuses(RAF_DIALECT_LLVM, RAF_OP_MATMUL, RAF_F32));
  CHECK(!raf_dialect_implements(RAF_DIALECT_LLVM, RAF_OP_ADD, RAF_F32));
  /* cuda compiles what llvm does, fused and as one-statement kernels, on
   * the cuda device; matmul is cublas's, conv2d nobody's there yet. */
  CHECK(raf_dialect_from_name("cuda", 4, &d) && d == RAF_DIALECT_CUDA);
  CHECK(strcmp(raf_dialect_get(RAF_DIALECT_CUDA)->device, "cuda") == 0);
  CHECK(raf_dialect_compiles_fused(RAF_DIALECT_CUDA));
  CHECK(raf_dialect_implements(RAF_DIALECT_CUDA, RAF_OP_ADD, RAF_F32));
  CHECK(raf_dialect_implements(RAF_DIALECT_CUDA, RAF_OP_SOFTMAX, RAF_F32));
  CHECK(!raf_dialect_implements(RAF_DIALECT_CUDA, RAF_OP_MATMUL, RAF_F32));
  CHECK(!raf_dialect_implements(RAF_DIALECT_CUDA, RAF_OP_CONV2D, RAF_F32));
  /* Beyond codegen's rows: the hand-written kernels (kernels.cu). */
  CHECK(raf_dialect_implements(RAF_DIALECT_CUDA, RAF_OP_TAKE_GRAD, RAF_F32));
  CHECK(!raf_dialect_implements(RAF_DIALECT_CUDA, RAF_OP_TAKE_GRAD, RAF_F64));
  CHECK(raf_dialect_implements(RAF_DIALECT_CUDA, RAF_OP_ARGMAX, RAF_F32));
  /* The collectives on the cuda device are nccl's, as mpi's on the cpu. */
  CHECK(raf_dialect_from_name("nccl", 4, &d) && d == RAF_DIALECT_NCCL);
  CHECK(strcmp(raf_dialect_get(RAF_DIALECT_NCCL)->device, "cuda") == 0);
  CHECK(raf_dialect_implements(RAF_DIALECT_NCCL, RAF_OP_REDUCE_SCATTER,
                               RAF_BF16));
  CHECK(raf_dialect_implements(RAF_DIALECT_NCCL, RAF_OP_ALL_GATHER, RAF_BOOL));
  CHECK(!raf_dialect_implements(RAF_DIALECT_NCCL, RAF_OP_ALL_REDUCE,
                                RAF_BOOL));
  CHECK(!raf_dialect_implements(RAF_DIALECT_NCCL, RAF_OP_ADD, RAF_F32));
  for (int op = 0; op < RAF_OP_COUNT; op++)
    for (int dt = 0; dt < RAF_DTYPE_COUNT; dt++)
      if (op != RAF_OP_TRANSPOSE && op != RAF_OP_CONCAT &&
          op != RAF_OP_SPLIT && op != RAF_OP_TAKE && op != RAF_OP_TAKE_GRAD &&
          op != RAF_OP_LAYER_NORM_GRAD && op != RAF_OP_ARGMAX &&
          op != RAF_OP_SLICE && op != RAF_OP_SLICE_GRAD &&
          op != RAF_OP_DROPOUT)
        CHECK(raf_dialect_implements(RAF_DIALECT_CUDA, (raf_opcode)op,
                                     (raf_dtype)dt) ==
              raf_dialect_fuses(RAF_DIALECT_LLVM, (raf_opcode)op,
                                (raf_dtype)dt));
  const char *text =
      "func @fused_0(%x: f32[4]) -> f32[4] {fused} {\n"
      "  %y = exp(%x)\n  return %y\n}\n"
      "func @plain(%x: f32[4]) -> f32[4] {\n  %y = exp(%x)\n  return %y\n}\n"
      "func @fused_1(%x: i32[4]) -> i32[4] {fused} {\n"
      "  %y = mul(%x, %x)\n  return %y\n}\n"
      "func @fused_2(%x: f32[4,4]) -> f32[4,4] {fused} {\n"
      "  %y = matmul(%x, %x)\n  return %y\n}\n"
      "func @fused_3(%x: f32[4,4], %b: f32[4]) -> f32[4,4] {fused} {\n"
      "  %y = matmul(%x, %x)\n  %z = add(%y, %b)\n  return %z\n}\n"
      "func @fused_4(%x: f32[4,4], %b: f32[4]) -> f32[4,4] {fused} {\n"
      "  %z = add(%x, %b)\n  return %z\n}\n";
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_parse_module(ctx, "t.raf", text, strlen(text), 1);
  CHECK(m != NULL);
  if (m) {
    CHECK(raf_dialect_implements_call(RAF_DIALECT_LLVM,
                                      raf_module_find_func(m, "fused_0")));
    CHECK(!raf_dialect_implements_call(RAF_DIALECT_LLVM,
                                       raf_module_find_func(m, "plain")));
    CHECK(raf_dialect_implements_call(RAF_DIALECT_LLVM,
                                      raf_module_find_func(m, "fused_1")));
    CHECK(!raf_dialect_implements_call(RAF_DIALECT_LLVM,
                                       raf_module_find_func(m, "fused_2")));
    CHECK(!raf_dialect_implements_call(RAF_DIALECT_CPU_REF,
                                       raf_module_find_func(m, "fused_0")));
    /* cublas takes a fused call only as a product and its epilogue
     * (ir/epilogue.h), though its FUSED rows admit a lone matmul or add. */
    CHECK(raf_dialect_compiles_fused(RAF_DIALECT_CUBLAS));
    CHECK(raf_dialect_implements_call(RAF_DIALECT_CUBLAS,
                                      raf_module_find_func(m, "fused_3")));
    CHECK(!raf_dialect_implements_call(RAF_DIALECT_CUBLAS,
                                       raf_module_find_func(m, "fused_2")));
    CHECK(!raf_dialect_implements_call(RAF_DIALECT_CUBLAS,
                                       raf_module_find_func(m, "fused_4")));
    CHECK(!raf_dialect_implements_call(RAF_DIALECT_LLVM,
                                       raf_module_find_func(m, "fused_3")));
  }
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);

  /* {dialect = "NAME"} is resolved when parsed: the statement holds the
   * enum, the printer writes the name back, and cublas's scratch (its
   * traits) follows from the mark alone. */
  const char *marked =
      "func @f(%a: f32[4,4]) -> f32[4,4] {\n"
      "  %y = matmul(%a, %a) {dialect = \"cublas\"}\n"
      "  %z = exp(%y) {dialect = \"cpu-ref\"}\n  return %z\n}\n";
  ctx = raf_ctx_create();
  m = raf_parse_module(ctx, "t.raf", marked, strlen(marked), 1);
  CHECK(m != NULL);
  if (m) {
    const raf_stmt *mm = raf_module_find_func(m, "f")->first;
    CHECK(raf_stmt_dialect(mm) == RAF_DIALECT_CUBLAS);
    CHECK(raf_attrs_find(&mm->attrs, "dialect")->kind == RAF_ATTR_DIALECT);
    CHECK(raf_stmt_dialect(mm->next) == RAF_DIALECT_CPU_REF);
    CHECK(raf_mem_scratch_of(mm).bytes > 0);
    CHECK(raf_mem_scratch_of(mm->next).bytes == 0);
    char *text2 = NULL;
    size_t len2 = 0;
    FILE *out = open_memstream(&text2, &len2);
    raf_print_module(m, out, 0);
    fclose(out);
    CHECK(text2 && strstr(text2, "{dialect = \"cublas\"}"));
    free(text2);
  }
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  if (failures)
    fprintf(stderr, "test_dialects: %d failures\n", failures);
  return failures != 0;
}
