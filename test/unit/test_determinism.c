/* test_determinism.c: the property that every kernel's result is a pure
 * function of its inputs. Each program below runs on random inputs large
 * enough to be split into many parallel chunks, once with 1 thread and
 * once with 3; the results must be bit-identical, and a second call on the
 * same executor must give the same bits again (the cblas dialect too: its
 * gemms run single-threaded OpenBLAS calls on blocks fixed by the shapes).
 * Between them the programs
 * use every op of lang/ops.def, which the test checks against the op table,
 * so a new op without a case here fails it.
 *
 * Integer operands that must be in range (take's indices, cross_entropy's
 * labels) are made inside the program with argmax, since the harness fills
 * integer arguments with arbitrary bits. dropout's key is an argument, so
 * the check also covers "same seed, same mask". */
#include "ir/ir.h"
#include "runtime/exec.h"

#include <string.h>

static int failures;
#include "test/unit/check.h"
#include "test/unit/program.h"

typedef struct det_case {
  const char *dialects;
  const char *text;
  /* Repeatable at a given thread count but not across counts (no case
   * now: the cblas dialect's gemms no longer split by thread count). */
  bool per_thread_count;
} det_case;

static const det_case CASES[] = {
    {"cpu-ref",
     "func @f(%x: f32[64,1024], %y: f32[1024]) -> (f32[64,1024], "
     "f32[64,1024], f32[64,1024], bf16[64,1024]) {\n"
     "  %a = abs(%x)\n  %l = log(%a)\n  %e = exp(%l)\n  %s = sqrt(%e)\n"
     "  %r = rsqrt(%s)\n  %t = tanh(%r)\n  %g = sigmoid(%t)\n"
     "  %u = relu(%x)\n  %n = neg(%u)\n  %f = erf(%n)\n"
     "  %f1 = cos(%f)\n  %f2 = sin(%f1)\n  %g1 = gelu(%f2)\n  %g2 = gelu(%g1) {approximate = \"tanh\"}\n"
     "  %g3 = silu(%g2)\n"
     "  %b0 = add(%g3, %y)\n  %b1 = sub(%b0, %g)\n  %b2 = mul(%b1, %y)\n"
     "  %b3 = div(%b2, %y)\n  %b4 = pow(%a, %y)\n  %b5 = maximum(%b3, %b4)\n"
     "  %b6 = minimum(%b5, %x)\n"
     "  %c0 = eq(%x, %y)\n  %c1 = ne(%x, %y)\n  %c2 = lt(%x, %y)\n"
     "  %c3 = le(%x, %y)\n  %c4 = gt(%x, %y)\n  %c5 = ge(%x, %y)\n"
     "  %w0 = where(%c2, %b6, %x)\n  %w1 = where(%c3, %w0, %y)\n"
     "  %w2 = where(%c4, %w1, %b1)\n  %w3 = where(%c5, %w2, %b2)\n"
     "  %c6 = isfinite(%l)\n"
     "  %w4 = where(%c0, %w3, %y)\n  %w6 = where(%c6, %w4, %y)\n"
     "  %w5 = where(%c1, %w6, %x)\n"
     "  %h = cast(%w5) {dtype = bf16}\n"
     "  %k = stop_gradient(%w5)\n"
     "  return %w5, %b4, %k, %h\n}\n",
     false},
    {"cpu-ref",
     "func @f(%x: f32[64,512,4], %i: i32[64,1024]) -> (f32[], f32[64,4], "
     "f32[512], f32[64,1,4], f32[64,4], i64[64,4], i32[1024], i32[]) {\n"
     "  %s = sum(%x)\n  %m = mean(%x) {axes = [1]}\n"
     "  %mx = max(%x) {axes = [0, 2]}\n"
     "  %mn = min(%x) {axes = [1], keepdims}\n"
     "  %sm = sum(%x) {axes = [-2]}\n"
     "  %am = argmax(%x) {axis = 1}\n"
     "  %si = sum(%i) {axes = [0]}\n  %mi = max(%i)\n"
     "  return %s, %m, %mx, %mn, %sm, %am, %si, %mi\n}\n",
     false},
    {"cpu-ref",
     "func @f(%x: f32[64,32,64], %g: f32[32,64], %b: f32[32,64]) -> "
     "(f32[64,32,64], f32[64,32,64], f32[64,32,64], f32[64,32,64]) {\n"
     "  %s = softmax(%x)\n  %l = log_softmax(%x) {axis = 0}\n"
     "  %n = layer_norm(%x, %g, %b) {axis = 1}\n"
     "  %n2 = layer_norm(%x, %g, %b) {axis = -2, eps = 0.001}\n"
     "  return %s, %l, %n, %n2\n}\n",
     false},
    {"cpu-ref",
     "func @f(%x: f32[64,256,8], %t: f32[4096,64], %k: f32[64,4096]) -> "
     "(f32[256,8,64], f32[16,64,256,8], f32[64,128,4], f32[64,512,8], "
     "f32[64,100,8], f32[64,156,8], f32[64,64], f32[131072], "
     "f32[64,4096,64]) {\n"
     "  %tr = transpose(%x) {perm = [1, 2, 0]}\n"
     "  %br = broadcast_to(%x) {shape = [16, 64, 256, 8]}\n"
     "  %sl = slice(%x) {begin = [0, -1, 1], end = [64, -257, 8], "
     "strides = [1, -2, 2]}\n"
     "  %cc = concat(%x, %x) {axis = 1}\n"
     "  %p0, %p1 = split(%x) {axis = 1, sizes = [100, 156]}\n"
     "  %ix = argmax(%k) {axis = 1}\n"
     "  %tk = take(%t, %ix)\n"
     "  %rs = reshape(%x) {shape = [-1]}\n"
     "  %ix2 = argmax(%t) {axis = 0}\n"
     "  %ix3 = broadcast_to(%ix2) {shape = [4096, 64]}\n"
     "  %tk2 = take(%k, %ix3) {axis = 1}\n"
     "  return %tr, %br, %sl, %cc, %p0, %p1, %tk, %rs, %tk2\n}\n",
     false},
    {"cpu-ref",
     "func @f(%a: f32[8,96,80], %b: f32[80,72], %q: f32[2,4,64,32], "
     "%k: f32[2,4,64,32], %v: f32[2,4,64,32]) -> (f32[8,96,72], "
     "f32[2,4,64,32], f32[2,4,64,32]) {\n"
     "  %m = matmul(%a, %b)\n"
     "  %o = scaled_dot_product_attention(%q, %k, %v) {causal}\n"
     "  %o2 = scaled_dot_product_attention(%q, %k, %v) {scale = 0.5}\n"
     "  return %m, %o, %o2\n}\n",
     false},
    {"cblas,cpu-ref",
     "func @f(%a: f32[8,96,80], %b: f32[8,72,80]) -> f32[8,96,72] {\n"
     "  %m = matmul(%a, %b) {transpose_b}\n  return %m\n}\n",
     false},
    {"cblas,cpu-ref",
     "func @f(%a: f32[1100,600], %b: f32[600,1300], %c: f32[600,1100], "
     "%x: f32[64,3000], %q: f32[2,3,130,16], %dy: f32[2,3,130,16]) -> "
     "(f32[1100,1300], f32[1300,1100], f32[], f32[64,3000], "
     "f32[2,3,130,16], f32[2,3,130,16], f32[2,3,130,16], "
     "f32[2,3,130,16]) {\n"
     "  %m = matmul(%a, %b)\n"
     "  %t = matmul(%b, %c) {transpose_a}\n"
     "  %l = argmax(%x) {axis = 1}\n"
     "  %ce = cross_entropy(%x, %l)\n"
     "  %g = cross_entropy_grad(%ce, %x, %l)\n"
     "  %o = scaled_dot_product_attention(%q, %dy, %q) {causal}\n"
     "  %dq, %dk, %dv = scaled_dot_product_attention_grad(%dy, %q, %dy, %q) "
     "{causal}\n"
     "  return %m, %t, %ce, %g, %o, %dq, %dk, %dv\n}\n",
     false},
    {"cpu-ref",
     "func @f(%x: f32[256,1024], %key: i64[]) -> (f32[256,1024], "
     "f32[256,1024]) {\n"
     "  %d = dropout(%x, %key) {p = 0.3}\n"
     "  %d2 = dropout(%x, %key) {p = 0.3}\n"
     "  return %d, %d2\n}\n",
     false},
    {"cpu-ref",
     "func @f(%x: f32[4,8,32,32], %w: f32[16,4,3,3], %dw: f32[8,1,3,3], "
     "%g: f32[8], %b: f32[8], %mu: f32[8], %var: f32[8]) -> "
     "(f32[4,16,16,16], f32[4,8,32,32], f32[4,8,16,16], f32[4,8,11,11], "
     "f32[4,8,32,32], f32[8], f32[8], f32[4,8,32,32]) {\n"
     "  %c = conv2d(%x, %w) {stride = [2, 2], padding = [1, 1], groups = 2}\n"
     "  %d = conv2d(%x, %dw) {padding = [2, 2], dilation = [2, 2], "
     "groups = 8}\n"
     "  %mp = max_pool2d(%x) {kernel = [2, 2]}\n"
     "  %ap = avg_pool2d(%x) {kernel = [3, 3], stride = [3, 3], "
     "padding = [1, 1]}\n"
     "  %va = abs(%var)\n"
     "  %y, %nm, %nv = batch_norm(%x, %g, %b, %mu, %va)\n"
     "  %e, %em, %ev = batch_norm(%x, %g, %b, %mu, %va) {training = false}\n"
     "  return %c, %d, %mp, %ap, %y, %nm, %nv, %e\n}\n",
     false},
    {"cpu-ref",
     "func @f(%x: f32[512,1000], %t: f32[512,1000]) -> (f32[], f32[], "
     "f32[512], f32[], f32[512,1000]) {\n"
     "  %lab = argmax(%t) {axis = 1}\n"
     "  %l = cross_entropy(%x, %lab)\n"
     "  %l2 = cross_entropy(%x, %lab) {reduction = \"sum\", "
     "ignore_index = 3}\n"
     "  %l3 = cross_entropy(%x, %lab) {reduction = \"none\"}\n"
     "  %m = mse_loss(%x, %t)\n"
     "  %m2 = mse_loss(%x, %t) {reduction = \"none\"}\n"
     "  return %l, %l2, %l3, %m, %m2\n}\n",
     false},
    {"cpu-ref",
     "func @f(%x: f32[64,1024]) -> (f32[64,1024], f32[64,1024], "
     "f32[64,1024], f32[64,1024], f32[64,1024], f32[64,1024]) {\n"
     "  %c = constant 0.5 : f32[]\n"
     "  %y = mul(%x, %c)\n"
     "  %r = all_reduce(%y)\n  %s = reduce_scatter(%y)\n"
     "  %g = all_gather(%y) {axis = 1}\n  %t = all_slice(%y)\n"
     "  %a = all_reduce(%y) {async}\n  %w = wait(%a)\n"
     "  %z = call @g(%x)\n"
     "  return %r, %s, %g, %t, %w, %z\n}\n"
     "func @g(%x: f32[64,1024]) -> f32[64,1024] {\n"
     "  %n = neg(%x)\n  return %n\n}\n",
     false},
    /* The backward operators of autodiff (runtime/cpuref/grad.c). */
    {"cpu-ref",
     "func @f(%dy: f32[64,256,8], %x: f32[64,256,8], %g: f32[256,8], %t: "
     "f32[512,100], %k: f32[4096,100], %dyt: f32[4096,64], %c: "
     "f32[4,8,32,32], %w: f32[16,4,3,3], %gm: f32[8], %mu: f32[8], %var: "
     "f32[8], %q: f32[2,4,64,32], %kk: f32[2,4,64,32], %v: f32[2,4,64,32]) "
     "-> (f32[64,256,8], f32[64,256,8], f32[64,256,8], f32[64,256,8], "
     "f32[256,8], f32[256,8], f32[512,100], f32[100,64], f32[64,256,8], "
     "f32[4,8,32,32], f32[4,8,32,32], f32[4,8,32,32], f32[16,4,3,3], "
     "f32[4,8,32,32], f32[8], f32[8], f32[2,4,64,32], f32[2,4,64,32], "
     "f32[2,4,64,32]) {\n"
     "  %gg0 = gelu_grad(%dy, %x) {approximate = \"tanh\"}\n"
     "  %gg = silu_grad(%gg0, %x)\n"
     "  %s = softmax(%x)\n"
     "  %sg = softmax_grad(%dy, %s)\n"
     "  %ls = log_softmax(%x) {axis = 1}\n"
     "  %lg = log_softmax_grad(%dy, %ls) {axis = 1}\n"
     "  %nx, %ng, %nb = layer_norm_grad(%dy, %x, %g) {axis = 1}\n"
     "  %lab = argmax(%t) {axis = 1}\n"
     "  %one = constant 1.0 : f32[]\n"
     "  %ce = cross_entropy_grad(%one, %t, %lab) {ignore_index = 3}\n"
     "  %ids = argmax(%k) {axis = 1}\n"
     "  %tg = take_grad(%dyt, %ids) {dim = 100}\n"
     "  %sl = slice(%x) {begin = [0, -1, 1], end = [64, -257, 8], strides = "
     "[1, -2, 2]}\n"
     "  %slg = slice_grad(%sl) {shape = [64, 256, 8], begin = [0, -1, 1], "
     "end = [64, -257, 8], strides = [1, -2, 2]}\n"
     "  %mp = max_pool2d(%c) {kernel = [2, 2]}\n"
     "  %mpg = max_pool2d_grad(%mp, %c) {kernel = [2, 2]}\n"
     "  %ap = avg_pool2d(%c) {kernel = [3, 3], stride = [3, 3], padding = "
     "[1, 1]}\n"
     "  %apg = avg_pool2d_grad(%ap) {kernel = [3, 3], stride = [3, 3], "
     "padding = [1, 1], shape = [4, 8, 32, 32]}\n"
     "  %cy = conv2d(%c, %w) {stride = [2, 2], padding = [1, 1], groups = "
     "2}\n"
     "  %cgi = conv2d_grad_input(%cy, %w) {stride = [2, 2], padding = [1, "
     "1], groups = 2, shape = [4, 8, 32, 32]}\n"
     "  %cgw = conv2d_grad_weight(%cy, %c) {stride = [2, 2], padding = [1, "
     "1], groups = 2, shape = [16, 4, 3, 3]}\n"
     "  %va = abs(%var)\n"
     "  %bx, %bg, %bb = batch_norm_grad(%c, %c, %gm, %mu, %va)\n"
     "  %o = scaled_dot_product_attention(%q, %kk, %v) {causal}\n"
     "  %dq, %dk, %dv = scaled_dot_product_attention_grad(%o, %q, %kk, %v) "
     "{causal}\n"
     "  return %gg, %sg, %lg, %nx, %ng, %nb, %ce, %tg, %slg, %mpg, %apg, "
     "%cgi, %cgw, %bx, %bg, %bb, %dq, %dk, %dv\n"
     "}\n",
     false},
};
enum { NCASES = sizeof CASES / sizeof CASES[0] };

static bool same_results(raf_tensor **a, raf_tensor **b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i]->nbytes != b[i]->nbytes ||
        memcmp(a[i]->data, b[i]->data, a[i]->nbytes) != 0) {
      fprintf(stderr, "result %d differs\n", i);
      return false;
    }
  return true;
}

static void test_case(const det_case *c) {
  program one, three;
  bool ok = program_open(&one, c->text, c->dialects, 1) &&
            program_open(&three, c->text, c->dialects, 3);
  CHECK(ok);
  if (!ok)
    return; /* the programs leak; the test has failed anyway */
  int n = one.m->first->nresults;
  raf_tensor **args = random_args(&one);
  raf_tensor **args3 = copy_args(&three, args);
  raf_tensor **r1 = run_all(&one, args), **r3 = run_all(&three, args3);
  raf_tensor **again = run_all(&one, args);
  raf_tensor **again3 = run_all(&three, args3);
  CHECK(r1 && r3 && again && again3);
  if (r1 && r3 && again && again3) {
    bool same = same_results(r1, again, n) && same_results(r3, again3, n) &&
                (c->per_thread_count || same_results(r1, r3, n));
    if (!same)
      fprintf(stderr, "in:\n%s", c->text);
    CHECK(same);
  }
  if (r1)
    free_tensors(&one, r1, n);
  if (again)
    free_tensors(&one, again, n);
  if (r3)
    free_tensors(&three, r3, n);
  if (again3)
    free_tensors(&three, again3, n);
  free_tensors(&one, args, one.m->first->nargs);
  free_tensors(&three, args3, three.m->first->nargs);
  program_close(&one);
  program_close(&three);
}

/* Every op but return appears as "NAME(" (or "constant ", "call @") in
 * some case. */
static void test_every_op_covered(void) {
  for (int op = 0; op < RAF_OP_COUNT; op++) {
    if (op == RAF_OP_RETURN)
      continue;
    const char *name = raf_op_table[op].name;
    char pattern[64];
    snprintf(pattern, sizeof pattern,
             op == RAF_OP_CONSTANT ? "= %s " : op == RAF_OP_CALL ? "%s @"
                                                                 : "%s(",
             name);
    bool found = false;
    for (int i = 0; i < NCASES && !found; i++) {
      const char *at = CASES[i].text;
      while (!found && (at = strstr(at, pattern))) {
        /* a whole word: "max(" must not match inside "argmax(" */
        found = at == CASES[i].text || at[-1] == ' ';
        at++;
      }
    }
    if (!found)
      fprintf(stderr, "no determinism case uses %s\n", name);
    CHECK(found);
  }
}

int main(void) {
  for (int i = 0; i < NCASES; i++)
    test_case(&CASES[i]);
  test_every_op_covered();
  if (failures)
    fprintf(stderr, "%d check(s) failed\n", failures);
  return failures != 0;
}
