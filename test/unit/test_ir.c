/* test_ir.c: unit tests of what lit tests cannot reach: the builder API and
 * use lists, fresh names, the string map, element conversions, and the
 * parse -> print -> parse fixed point of a module built in C. */
#include "ir/ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"

static char *print_to_string(const raf_module *m) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  raf_print_module(m, f, 0);
  fclose(f);
  return buf;
}

static void test_builder(void) {
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_module_create(ctx);
  raf_loc loc = {raf_ctx_intern(ctx, "unit.raf"), 1, 1};
  raf_func *f = raf_func_create(m, "f", loc);
  CHECK(f && !raf_func_create(m, "f", loc)); /* names are unique */
  int64_t dims[] = {2, 3};
  raf_type *t = raf_type_get(m, RAF_F32, 2, dims);
  CHECK(t == raf_type_get(m, RAF_F32, 2, dims)); /* interned */
  CHECK(t != raf_type_get(m, RAF_F16, 2, dims));
  raf_value *x = raf_func_add_arg(f, "x", t, loc);
  raf_value *ops[] = {x, x};
  raf_stmt *add = raf_stmt_create(m, RAF_OP_ADD, 2, ops, 1, &t, loc);
  raf_stmt_insert_before(f, add, NULL);
  CHECK(strcmp(add->results[0]->name, "0") == 0); /* a fresh name */
  raf_value *sum = add->results[0];
  raf_stmt *ret = raf_stmt_create(m, RAF_OP_RETURN, 1, &sum, 0, NULL, loc);
  raf_stmt_insert_before(f, ret, NULL);
  raf_func_set_results(f, 1, &t);
  raf_value *one[] = {x};
  raf_stmt *neg = raf_stmt_create(m, RAF_OP_NEG, 1, one, 1, &t, loc);
  raf_stmt_insert_before(f, neg, add); /* before the add */
  CHECK(f->first == neg && neg->next == add);
  raf_value_set_name(neg->results[0], raf_func_fresh_name(f, "x"));
  CHECK(strncmp(neg->results[0]->name, "x.", 2) == 0); /* x is taken */
  CHECK(raf_verify_module(ctx, m) == RAF_OK);

  /* Use lists follow edits. */
  int uses = 0;
  for (raf_use *u = x->uses; u; u = u->next)
    uses++;
  CHECK(uses == 3);
  raf_use_set(&add->operands[1], neg->results[0]);
  uses = 0;
  for (raf_use *u = x->uses; u; u = u->next)
    uses++;
  CHECK(uses == 2);
  raf_value_replace_uses(sum, x);
  CHECK(!raf_value_has_uses(sum) && ret->operands[0].value == x);
  raf_stmt_erase(add);
  CHECK(raf_module_stmt_count(m) == 2);
  CHECK(raf_verify_module(ctx, m) == RAF_OK);

  /* Printing a built module gives text that parses back to itself. */
  char *text = print_to_string(m);
  raf_module *back = raf_parse_module(ctx, "back.raf", text, strlen(text), 1);
  CHECK(back != NULL);
  if (back) {
    char *again = print_to_string(back);
    CHECK(strcmp(text, again) == 0);
    free(again);
  }
  free(text);
  raf_module_destroy(back);
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
}

static void test_dominance_after_edit(void) {
  /* Moving a use above its definition is caught by the verifier. */
  raf_ctx *ctx = raf_ctx_create();
  const char *src = "func @f(%x: f32[4]) -> f32[4] {\n"
                    "  %a = exp(%x)\n"
                    "  %b = log(%a)\n"
                    "  return %b\n"
                    "}\n";
  raf_module *m = raf_parse_module(ctx, "d.raf", src, strlen(src), 1);
  CHECK(m && raf_verify_module(ctx, m) == RAF_OK);
  raf_func *f = m->first;
  raf_stmt *b = f->first->next;
  /* unlink b and put it first, keeping its operand */
  raf_value *a = b->operands[0].value;
  raf_stmt *moved = raf_stmt_create(m, RAF_OP_LOG, 1, &a, 1,
                                    &b->results[0]->type, b->loc);
  raf_stmt_insert_before(f, moved, f->first);
  raf_value_replace_uses(b->results[0], moved->results[0]);
  raf_stmt_erase(b);
  CHECK(raf_verify_module(ctx, m) == RAF_ERROR);
  const char *msg = NULL;
  raf_diag_get(ctx, raf_diag_count(ctx) - 1, NULL, NULL, &msg);
  CHECK(msg && strstr(msg, "used before its definition"));
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
}

static void test_strmap(void) {
  raf_strmap map;
  raf_strmap_init(&map);
  char keys[2000][8];
  for (int i = 0; i < 2000; i++) {
    snprintf(keys[i], sizeof keys[i], "k%d", i);
    CHECK(raf_strmap_put(&map, keys[i], strlen(keys[i]), &keys[i]));
  }
  for (int i = 0; i < 2000; i += 2)
    raf_strmap_remove(&map, keys[i], strlen(keys[i]));
  for (int i = 0; i < 2000; i++) {
    void *v = raf_strmap_get(&map, keys[i], strlen(keys[i]));
    CHECK(i % 2 ? v == &keys[i] : v == NULL);
  }
  CHECK(map.count == 1000);
  raf_strmap_free(&map);
}

static void test_conversions(void) {
  /* Every half and bfloat16 value converts to float and back exactly. */
  int bad_half = 0, bad_bf16 = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = raf_half_to_float((uint16_t)h);
    if (!isnan(f) && raf_float_to_half(f) != h)
      bad_half++;
    float g = raf_bf16_to_float((uint16_t)h);
    if (!isnan(g) && raf_float_to_bf16(g) != h)
      bad_bf16++;
  }
  CHECK(bad_half == 0);
  CHECK(bad_bf16 == 0);
  CHECK(raf_float_to_half(65520.0f) == 0x7c00); /* rounds to infinity */
  CHECK(raf_float_to_half(1.0f + 1.0f / 4096) == 0x3c00); /* ties to even */
  CHECK(raf_float_to_bf16(1.00390625f) == 0x3f80);
}

static void test_set_attr(void) {
  /* raf_stmt_set_attr_ints replaces an attribute, or appends one, and
   * leaves the other attributes and any statement sharing the old array
   * alone. */
  raf_ctx *ctx = raf_ctx_create();
  const char *src = "func @f(%x: f32[2,3]) -> (f32[3,2], f32[]) {\n"
                    "  %t = transpose(%x) {perm = [1, 0]}\n"
                    "  %s = sum(%x) {keepdims = false}\n"
                    "  return %t, %s\n"
                    "}\n";
  raf_module *m = raf_parse_module(ctx, "a.raf", src, strlen(src), 1);
  CHECK(m && raf_verify_module(ctx, m) == RAF_OK);
  if (m) {
    raf_stmt *t = m->first->first, *s = t->next;
    const raf_attr *shared = t->attrs.v;
    int64_t perm[] = {0, 1}, axes[] = {1};
    CHECK(raf_stmt_set_attr_ints(m, t, "perm", perm, 2) == RAF_OK);
    CHECK(t->attrs.n == 1 && t->attrs.v != shared);
    CHECK(shared[0].val.u.ints.v[0] == 1); /* the old array is untouched */
    raf_attr_value v;
    CHECK(raf_stmt_attr(t, "perm", &v) && v.u.ints.n == 2 &&
          v.u.ints.v[0] == 0 && v.u.ints.v[1] == 1);
    CHECK(raf_stmt_set_attr_ints(m, s, "axes", axes, 1) == RAF_OK);
    CHECK(s->attrs.n == 2 && raf_stmt_attr(s, "axes", &v) &&
          v.u.ints.n == 1 && v.u.ints.v[0] == 1);
    /* The types no longer match the attributes: the verifier says so. */
    CHECK(raf_verify_module(ctx, m) == RAF_ERROR);
  }
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
}

int main(void) {
  test_builder();
  test_set_attr();
  test_dominance_after_edit();
  test_strmap();
  test_conversions();
  if (failures)
    fprintf(stderr, "test_ir: %d checks failed\n", failures);
  return failures != 0;
}
