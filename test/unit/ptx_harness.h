/* ptx_harness.h: what the PTX interpreter's tests (test_ptx*.c) share:
 * checks with messages, "device" memory, loading and launching, the
 * fault-report check, and a runner of one instruction over arrays.
 *
 * "Device" memory is host memory registered with ptx_memory_add at the
 * host address with bit 63 flipped, as the fake driver hands it out.
 * Each test file is an executable of its own: everything here is static.
 */
#ifndef RAF_TEST_PTX_HARNESS_H
#define RAF_TEST_PTX_HARNESS_H

#include "ptx/ptx.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static inline void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("test_ptx: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  failures++;
}
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond))                                                               \
      fail(__VA_ARGS__);                                                       \
  } while (0)

#define HDR ".version 8.0\n.target sm_80\n.address_size 64\n"
/* Registers most kernels below declare. */
#define REGS                                                                   \
  "  .reg .pred %p<8>;\n  .reg .b16 %h<8>;\n  .reg .b32 %r<32>;\n"            \
  "  .reg .b64 %rd<16>;\n  .reg .f32 %f<8>;\n"

static const ptx_device dev80 = {12080, 9, 0};

/* ---- device memory ---- */

typedef struct dbuf {
  void *host;
  uint64_t dev;
} dbuf;

static inline dbuf dnew(size_t bytes) {
  size_t n = (bytes + 63) / 64 * 64;
  dbuf b = {aligned_alloc(64, n ? n : 64), 0};
  if (!b.host) {
    fprintf(stderr, "test_ptx: out of memory\n");
    exit(1);
  }
  memset(b.host, 0, n ? n : 64);
  b.dev = (uint64_t)(uintptr_t)b.host ^ ((uint64_t)1 << 63);
  if (ptx_memory_add(b.dev, b.host, bytes) != PTX_OK)
    fail("ptx_memory_add failed");
  return b;
}

static inline void dfree(dbuf *b) {
  if (ptx_memory_remove(b->dev) != PTX_OK)
    fail("ptx_memory_remove of a registered buffer failed");
  free(b->host);
}

/* ---- loading and launching ---- */

static char report[2048];

static inline ptx_module *load_on(const char *src, const ptx_device *dev,
                           const char *what) {
  char log[1024];
  ptx_module *m = NULL;
  ptx_status st = ptx_module_load(src, dev, &m, log, sizeof log);
  if (st != PTX_OK)
    fail("%s: load failed (status %d): %s", what, st, log);
  return m;
}
static inline ptx_module *load(const char *src, const char *what) {
  return load_on(src, &dev80, what);
}

static inline ptx_status launch(ptx_module *m, const char *kernel,
                         const ptx_launch *l) {
  ptx_kernel *k = m ? ptx_module_kernel(m, kernel) : NULL;
  if (!k) {
    snprintf(report, sizeof report, "no kernel %s", kernel);
    return PTX_INVALID_VALUE;
  }
  return ptx_kernel_run(k, l, report, sizeof report, NULL);
}

/* A 1-D launch that must succeed. */
static inline bool run1(ptx_module *m, const char *kernel, unsigned grid,
                 unsigned block, void **params, const char *what) {
  ptx_launch l = {{grid, 1, 1}, {block, 1, 1}, 0, params, 0};
  ptx_status st = launch(m, kernel, &l);
  if (st != PTX_OK)
    fail("%s: launch failed (status %d): %s", what, st, report);
  return st == PTX_OK;
}

/* The 1-based line of the first occurrence of `needle` in src. */
static inline int line_of(const char *src, const char *needle) {
  const char *p = strstr(src, needle);
  int line = 1;
  for (const char *q = src; p && q < p; q++)
    line += *q == '\n';
  return p ? line : -1;
}

/* A fault's status and report: the kernel, block, thread, PTX line and a
 * word saying what happened. */
static inline void check_fault(const char *what, ptx_status st, ptx_status want,
                        const char *kernel, const char *block,
                        const char *thread, int line, const char *word) {
  char k[128], b[64], t[64], l[64];
  snprintf(k, sizeof k, "kernel %s", kernel);
  snprintf(b, sizeof b, "block %s", block);
  snprintf(t, sizeof t, "thread %s", thread);
  snprintf(l, sizeof l, "PTX line %d)", line);
  EXPECT(st == want, "%s: status %d, want %d (report: %s)", what, st, want,
         report);
  const char *need[] = {k, b, t, l, word};
  for (int i = 0; i < 5; i++)
    EXPECT(strstr(report, need[i]), "%s: the report does not say '%s': %s",
           what, need[i], report);
}

/* ---- one instruction over arrays ---- */

/* Runs `insn` (sources %a, %b, %c of abytes each, destination %d of
 * dbytes) once per element of the arrays. */
static inline bool run_op(const char *insn, int abytes, int dbytes, const void *a,
                   const void *b, const void *c, void *d, unsigned n) {
  char src[2048];
  int ab = abytes * 8, db = dbytes * 8;
  snprintf(src, sizeof src, HDR
           ".visible .entry op(.param .u64 pa, .param .u64 pb, .param .u64 "
           "pc, .param .u64 pd, .param .u32 n)\n{\n"
           "  .reg .pred %%p; .reg .b32 %%i, %%n; .reg .b64 %%x<8>;\n"
           "  .reg .b%d %%a, %%b, %%c; .reg .b%d %%d;\n"
           "  mov.u32 %%i, %%tid.x; mov.u32 %%n, %%ctaid.x;\n"
           "  mad.lo.u32 %%i, %%n, 64, %%i; ld.param.u32 %%n, [n];\n"
           "  setp.ge.u32 %%p, %%i, %%n; @%%p bra DONE;\n"
           "  ld.param.u64 %%x0, [pa]; ld.param.u64 %%x1, [pb];\n"
           "  ld.param.u64 %%x2, [pc]; ld.param.u64 %%x3, [pd];\n"
           "  mul.wide.u32 %%x4, %%i, %d;\n"
           "  add.s64 %%x5, %%x0, %%x4; ld.global.b%d %%a, [%%x5];\n"
           "  add.s64 %%x5, %%x1, %%x4; ld.global.b%d %%b, [%%x5];\n"
           "  add.s64 %%x5, %%x2, %%x4; ld.global.b%d %%c, [%%x5];\n"
           "  %s;\n"
           "  mul.wide.u32 %%x4, %%i, %d; add.s64 %%x5, %%x3, %%x4;\n"
           "  st.global.b%d [%%x5], %%d;\n"
           "DONE:\n  ret;\n}\n",
           ab, db, abytes, ab, ab, ab, insn, dbytes, db);
  ptx_module *m = load(src, insn);
  if (!m)
    return false;
  dbuf ba = dnew((size_t)n * abytes), bb = dnew((size_t)n * abytes),
       bc = dnew((size_t)n * abytes), bd = dnew((size_t)n * dbytes);
  memcpy(ba.host, a, (size_t)n * abytes);
  memcpy(bb.host, b ? b : a, (size_t)n * abytes);
  memcpy(bc.host, c ? c : a, (size_t)n * abytes);
  void *params[] = {&ba.dev, &bb.dev, &bc.dev, &bd.dev, &n};
  bool ok = run1(m, "op", (n + 63) / 64, 64, params, insn);
  memcpy(d, bd.host, (size_t)n * dbytes);
  dfree(&ba);
  dfree(&bb);
  dfree(&bc);
  dfree(&bd);
  ptx_module_free(m);
  return ok;
}

/* One instruction on one set of operands (low bytes of a, b, c). */
typedef struct op_case {
  const char *insn;
  int abytes, dbytes;
  uint64_t a, b, c, want;
} op_case;
#define NAN32 0xa11a11a11aULL /* want: any f32 NaN */
#define NAN64 0xa11a11a11bULL /* want: any f64 NaN */

static inline void check_cases(const char *what, const op_case *cs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const op_case *k = &cs[i];
    uint64_t d = 0;
    if (!run_op(k->insn, k->abytes, k->dbytes, &k->a, &k->b, &k->c, &d, 1))
      continue;
    bool ok = k->want == NAN32   ? (d & 0x7fffffff) > 0x7f800000
              : k->want == NAN64 ? (d & ~(1ULL << 63)) > 0x7ff0000000000000ULL
                                 : d == k->want;
    EXPECT(ok, "%s: %s with a=0x%llx b=0x%llx c=0x%llx gives 0x%llx, want "
           "0x%llx", what, k->insn, (unsigned long long)k->a,
           (unsigned long long)k->b, (unsigned long long)k->c,
           (unsigned long long)d, (unsigned long long)k->want);
  }
}
#define CHECK_CASES(what, cs) check_cases(what, cs, sizeof cs / sizeof cs[0])

static uint32_t rng_state = 12345;
static inline uint32_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return rng_state;
}


static inline char *read_testdata(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/test/cuda/ptx/testdata/%s", RAF_SOURCE_DIR,
           name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fail("cannot open %s", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s)
    s[n] = '\0';
  fclose(f);
  return s;
}

static const ptx_device dev90 = {13000, 9, 0}; /* nvcc 13's .version 9.0 */


#endif
