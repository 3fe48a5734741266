/* test_dialects.c: every (dialect, op) that lang/dialects.def promises has
 * a kernel, and the reference dialect has one for every op but call and
 * return (which the executor runs). Fails when a row is added to ops.def or
 * dialects.def without its kernel. */
#include "runtime/kernel.h"

#include <stdio.h>

static int failures;
#include "test/unit/check.h"

int main(void) {
  for (int d = 0; d < RAF_DIALECT_COUNT; d++) {
    const raf_dialect_info *info = raf_dialect_get((raf_dialect)d);
    for (int op = 0; op < RAF_OP_COUNT; op++) {
      bool promised = false;
      for (int dt = 0; dt < RAF_DTYPE_COUNT; dt++)
        promised |= raf_dialect_implements((raf_dialect)d, (raf_opcode)op,
                                           (raf_dtype)dt);
      bool has = raf_dialect_kernel((raf_dialect)d, (raf_opcode)op) != NULL;
      if (promised != has)
        fprintf(stderr, "dialect %s, op %s: %s\n", info->name,
                raf_op_table[op].name,
                promised ? "promised but no kernel" : "kernel not promised");
      CHECK(promised == has);
    }
  }
  /* The reference covers everything but what the executor runs itself. */
  for (int op = 0; op < RAF_OP_COUNT; op++)
    CHECK(raf_dialect_implements(RAF_DIALECT_CPU_REF, (raf_opcode)op,
                                 RAF_F32) ==
          (op != RAF_OP_CALL && op != RAF_OP_RETURN));
  raf_dialect d;
  CHECK(raf_dialect_from_name("cblas", 5, &d) && d == RAF_DIALECT_CBLAS);
  CHECK(!raf_dialect_from_name("cbla", 4, &d));
  CHECK(raf_dialect_implements(RAF_DIALECT_CBLAS, RAF_OP_MATMUL, RAF_F32));
  CHECK(!raf_dialect_implements(RAF_DIALECT_CBLAS, RAF_OP_MATMUL, RAF_F16));
  CHECK(!raf_dialect_implements(RAF_DIALECT_CBLAS, RAF_OP_ADD, RAF_F32));
  if (failures)
    fprintf(stderr, "test_dialects: %d failures\n", failures);
  return failures != 0;
}
