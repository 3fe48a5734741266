/* test_ptx.c: the PTX interpreter behind the fake CUDA driver
 * (test/cuda/ptx/), on hand-written PTX with exact expected results: warp
 * collectives (shfl, vote, bar.warp.sync), barriers (bar.sync, named and
 * counted, bar.arrive), atomics under contention, calls and local
 * memory, module variables, dynamic shared memory, and kernels nvcc
 * compiled from CUDA C (test/cuda/ptx/testdata). Conversions and math
 * are test_ptx_numerics.c's, faults and loading test_ptx_faults.c's.
 */
#include "ptx_harness.h"

/* ---- warp collectives ---- */

static const char shfl_src[] = HDR
    ".visible .entry shfl(.param .u64 out, .param .u32 b, .param .u32 cup,\n"
    "    .param .u32 c, .param .u32 mask)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  ld.param.u32 %r1, [b];\n"
    "  ld.param.u32 %r2, [cup];\n"
    "  ld.param.u32 %r3, [c];\n"
    "  ld.param.u32 %r4, [mask];\n"
    "  mov.u32 %r5, %laneid;\n"
    "  shr.b32 %r6, %r4, %r5;\n"
    "  and.b32 %r6, %r6, 1;\n"
    "  setp.eq.u32 %p1, %r6, 0;\n"
    "  @%p1 bra DONE;\n"
    "  mad.lo.u32 %r7, %r5, 10, 100;\n"
    "  shfl.sync.up.b32 %r8|%p2, %r7, %r1, %r2, %r4;\n"
    "  shfl.sync.down.b32 %r9|%p3, %r7, %r1, %r3, %r4;\n"
    "  shfl.sync.bfly.b32 %r10|%p4, %r7, %r1, %r3, %r4;\n"
    "  shfl.sync.idx.b32 %r11|%p5, %r7, %r1, %r3, %r4;\n"
    "  selp.u32 %r12, 1, 0, %p2;\n"
    "  selp.u32 %r13, 2, 0, %p3;\n"
    "  or.b32 %r12, %r12, %r13;\n"
    "  selp.u32 %r13, 4, 0, %p4;\n"
    "  or.b32 %r12, %r12, %r13;\n"
    "  selp.u32 %r13, 8, 0, %p5;\n"
    "  or.b32 %r12, %r12, %r13;\n"
    "  mul.wide.u32 %rd2, %r5, 32;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  st.global.v4.u32 [%rd3], {%r8, %r9, %r10, %r11};\n"
    "  st.global.u32 [%rd3+16], %r12;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

/* The PTX manual's shfl.sync pseudo-code: the lane read, and the
 * predicate. */
static unsigned shfl_ref(int mode, unsigned lane, unsigned b, unsigned c,
                         bool *p) {
  int bval = (int)(b & 31), cval = (int)(c & 31), seg = (int)(c >> 8 & 31);
  int l = (int)lane, max = (l & seg) | (cval & ~seg), min = l & seg, j;
  switch (mode) {
  case 0: j = l - bval; *p = j >= max; break;
  case 1: j = l + bval; *p = j <= max; break;
  case 2: j = l ^ bval; *p = j <= max; break;
  default: j = min | (bval & ~seg); *p = j <= max; break;
  }
  return *p ? (unsigned)j : lane;
}

static void test_shfl(void) {
  ptx_module *m = load(shfl_src, "shfl");
  static const struct {
    unsigned b, cup, c, mask;
    const char *what;
  } cfg[] = {
      {1, 0, 0x1f, 0xffffffff, "full mask, offset 1"},
      {3, 24 << 8, 24 << 8 | 0x1f, 0xffffffff, "width 8 segments"},
      {2, 16 << 8, 16 << 8 | 0x1f, 0x0000ffff, "lanes 0-15, width 16"},
      {2, 0, 0x1f, 0x55555555, "even lanes"},
      {4, 8, 0x0f, 0xffffffff, "clamp at 15 (up: 8)"},
      {20, 8, 0x0f, 0xffffffff, "idx past the clamp"},
  };
  static const char *const modes[] = {"up", "down", "bfly", "idx"};
  for (size_t k = 0; m && k < sizeof cfg / sizeof cfg[0]; k++) {
    dbuf out = dnew(32 * 32);
    memset(out.host, 0xee, 32 * 32);
    unsigned b = cfg[k].b, cup = cfg[k].cup, c = cfg[k].c, mask = cfg[k].mask;
    void *params[] = {&out.dev, &b, &cup, &c, &mask};
    if (run1(m, "shfl", 1, 32, params, cfg[k].what)) {
      const uint32_t *o = out.host;
      for (unsigned lane = 0; lane < 32; lane++) {
        const uint32_t *r = o + lane * 8;
        if (!(mask >> lane & 1)) {
          EXPECT(r[0] == 0xeeeeeeee, "shfl %s: lane %u is outside the mask "
                 "but wrote", cfg[k].what, lane);
          continue;
        }
        for (int mode = 0; mode < 4; mode++) {
          bool p;
          unsigned j = shfl_ref(mode, lane, b, mode ? c : cup, &p);
          EXPECT(r[mode] == j * 10 + 100 && (r[4] >> mode & 1) == p,
                 "shfl.sync.%s (%s): lane %u got %u (p=%u), want lane %u's "
                 "%u (p=%d)", modes[mode], cfg[k].what, lane, r[mode],
                 r[4] >> mode & 1, j, j * 10 + 100, p);
        }
      }
      /* a few values by hand, lest shfl_ref share a mistake */
      if (k == 0)
        EXPECT(o[31 * 8 + 1] == 410 && !(o[31 * 8 + 4] & 2) &&
                   o[0 * 8 + 0] == 100 && !(o[4] & 1) && o[4 * 8 + 2] == 150 &&
                   o[9 * 8 + 3] == 110,
               "shfl: full-mask spot values are wrong");
      if (k == 1)
        EXPECT(o[13 * 8 + 3] == 210 && o[14 * 8 + 1] == 240 &&
                   o[13 * 8 + 1] == 230 && !(o[13 * 8 + 4] & 2),
               "shfl: width-8 spot values are wrong");
    }
    dfree(&out);
  }
  ptx_module_free(m);
}

static const char vote_src[] = HDR
    ".visible .entry vote(.param .u64 out, .param .u32 bits, .param .u32 "
    "mask)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  ld.param.u32 %r1, [bits];\n"
    "  ld.param.u32 %r4, [mask];\n"
    "  mov.u32 %r5, %laneid;\n"
    "  shr.b32 %r6, %r4, %r5;\n"
    "  and.b32 %r6, %r6, 1;\n"
    "  setp.eq.u32 %p1, %r6, 0;\n"
    "  @%p1 bra DONE;\n"
    "  shr.b32 %r6, %r1, %r5;\n"
    "  and.b32 %r6, %r6, 1;\n"
    "  setp.ne.u32 %p2, %r6, 0;\n"
    "  vote.sync.all.pred %p3, %p2, %r4;\n"
    "  vote.sync.any.pred %p4, %p2, %r4;\n"
    "  vote.sync.uni.pred %p5, %p2, %r4;\n"
    "  vote.sync.ballot.b32 %r7, %p2, %r4;\n"
    "  vote.sync.ballot.b32 %r8, !%p2, %r4;\n"
    "  selp.u32 %r9, 1, 0, %p3;\n"
    "  selp.u32 %r10, 2, 0, %p4;\n"
    "  or.b32 %r9, %r9, %r10;\n"
    "  selp.u32 %r10, 4, 0, %p5;\n"
    "  or.b32 %r9, %r9, %r10;\n"
    "  mul.wide.u32 %rd2, %r5, 16;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  st.global.v4.u32 [%rd3], {%r9, %r7, %r8, %r5};\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

static void test_vote(void) {
  ptx_module *m = load(vote_src, "vote");
  static const uint32_t cfg[][2] = {
      {0xffffffff, 0xffffffff}, {0, 0xffffffff}, {0x80000001, 0xffffffff},
      {0x0000ffff, 0x0000ffff}, {0xffff00ff, 0x0000ffff},
      {0xaaaaaaaa, 0x55555555}};
  for (size_t k = 0; m && k < sizeof cfg / sizeof cfg[0]; k++) {
    dbuf out = dnew(32 * 16);
    uint32_t bits = cfg[k][0], mask = cfg[k][1];
    void *params[] = {&out.dev, &bits, &mask};
    if (run1(m, "vote", 1, 32, params, "vote")) {
      uint32_t ballot = bits & mask;
      unsigned want = (ballot == mask) | (ballot != 0) << 1 |
                      (ballot == 0 || ballot == mask) << 2;
      const uint32_t *o = out.host;
      for (unsigned lane = 0; lane < 32; lane++) {
        if (!(mask >> lane & 1))
          continue;
        const uint32_t *r = o + lane * 4;
        EXPECT(r[0] == want && r[1] == ballot && r[2] == (~bits & mask),
               "vote.sync with predicates 0x%08x, mask 0x%08x: lane %u got "
               "all/any/uni %u%u%u, ballot 0x%08x, !ballot 0x%08x; want "
               "%u%u%u, 0x%08x, 0x%08x", bits, mask, lane, r[0] & 1,
               r[0] >> 1 & 1, r[0] >> 2 & 1, r[1], r[2], want & 1,
               want >> 1 & 1, want >> 2 & 1, ballot, ~bits & mask);
      }
    }
    dfree(&out);
  }
  ptx_module_free(m);
}

/* bar.warp.sync orders the warp's shared-memory accesses: no race. */
static const char barwarp_src[] = HDR
    ".shared .align 4 .u32 s[32];\n"
    ".visible .entry barwarp(.param .u64 out)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %laneid;\n"
    "  mov.u64 %rd2, s;\n"
    "  mul.lo.u32 %r2, %r1, 7;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.shared.u32 [%rd4], %r2;\n"
    "  bar.warp.sync -1;\n"
    "  add.u32 %r3, %r1, 1;\n"
    "  and.b32 %r3, %r3, 31;\n"
    "  mul.wide.u32 %rd5, %r3, 4;\n"
    "  add.s64 %rd6, %rd2, %rd5;\n"
    "  ld.shared.u32 %r4, [%rd6];\n"
    "  add.s64 %rd7, %rd1, %rd3;\n"
    "  st.global.u32 [%rd7], %r4;\n"
    "  ret;\n"
    "}\n";

static void test_barwarp(void) {
  ptx_module *m = load(barwarp_src, "bar.warp.sync");
  dbuf out = dnew(32 * 4);
  void *params[] = {&out.dev};
  if (m && run1(m, "barwarp", 1, 32, params, "bar.warp.sync")) {
    const uint32_t *o = out.host;
    for (unsigned i = 0; i < 32; i++)
      EXPECT(o[i] == ((i + 1) & 31) * 7,
             "bar.warp.sync: lane %u read %u, want %u", i, o[i],
             ((i + 1) & 31) * 7);
  }
  dfree(&out);
  ptx_module_free(m);
}

/* ---- barriers ---- */

static const char bar_src[] = HDR
    ".shared .align 4 .u32 s[128];\n"
    /* bar.sync 0: every thread reads another warp's value */
    ".visible .entry bar_all(.param .u64 out)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u64 %rd2, s;\n"
    "  mul.lo.u32 %r2, %r1, 3;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.shared.u32 [%rd4], %r2;\n"
    "  bar.sync 0;\n"
    "  sub.u32 %r3, 127, %r1;\n"
    "  mul.wide.u32 %rd5, %r3, 4;\n"
    "  add.s64 %rd6, %rd2, %rd5;\n"
    "  ld.shared.u32 %r4, [%rd6];\n"
    "  add.s64 %rd7, %rd1, %rd3;\n"
    "  st.global.u32 [%rd7], %r4;\n"
    "  ret;\n"
    "}\n"
    /* warps 0-1 meet at barrier 1, warps 2-3 at barrier 2 */
    ".visible .entry bar_named(.param .u64 out)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u64 %rd2, s;\n"
    "  add.u32 %r2, %r1, 1;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.shared.u32 [%rd4], %r2;\n"
    "  setp.lt.u32 %p1, %r1, 64;\n"
    "  @%p1 bra LOW;\n"
    "  bar.sync 2, 64;\n"
    "  sub.u32 %r3, 191, %r1;\n"
    "  bra.uni READ;\n"
    "LOW:\n"
    "  bar.sync 1, 64;\n"
    "  sub.u32 %r3, 63, %r1;\n"
    "READ:\n"
    "  mul.wide.u32 %rd5, %r3, 4;\n"
    "  add.s64 %rd6, %rd2, %rd5;\n"
    "  ld.shared.u32 %r4, [%rd6];\n"
    "  add.s64 %rd7, %rd1, %rd3;\n"
    "  st.global.u32 [%rd7], %r4;\n"
    "  ret;\n"
    "}\n"
    /* warp 0 produces (bar.arrive) and exits, warp 1 consumes (bar.sync);
     * in a CTA of 96, warp 2 first meets itself at barrier 2, then
     * writes what warp 1 also reads, then joins barrier 1 */
    ".visible .entry bar_pc(.param .u64 out)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u32 %r9, %ntid.x;\n"
    "  mov.u64 %rd2, s;\n"
    "  setp.ge.u32 %p1, %r1, 32;\n"
    "  @%p1 bra OTHERS;\n"
    "  add.u32 %r2, %r1, 1000;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.shared.u32 [%rd4], %r2;\n"
    "  bar.arrive 1, %r9;\n"
    "  exit;\n"
    "OTHERS:\n"
    "  setp.ge.u32 %p2, %r1, 64;\n"
    "  @%p2 bra THIRD;\n"
    "  bar.sync 1, %r9;\n"
    "  sub.u32 %r3, %r1, 32;\n"
    "  mul.wide.u32 %rd5, %r3, 4;\n"
    "  add.s64 %rd6, %rd2, %rd5;\n"
    "  ld.shared.u32 %r4, [%rd6];\n"
    "  setp.lt.u32 %p3, %r9, 96;\n"
    "  @%p3 bra STORE;\n"
    "  ld.shared.u32 %r5, [%rd6+256];\n"
    "  add.u32 %r4, %r4, %r5;\n"
    "STORE:\n"
    "  add.s64 %rd7, %rd1, %rd5;\n"
    "  st.global.u32 [%rd7], %r4;\n"
    "  ret;\n"
    "THIRD:\n"
    "  bar.sync 2, 32;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.shared.u32 [%rd4], %r1;\n"
    "  bar.sync 1, %r9;\n"
    "  ret;\n"
    "}\n";

static void test_barriers(void) {
  ptx_module *m = load(bar_src, "barriers");
  dbuf out = dnew(128 * 4);
  void *params[] = {&out.dev};
  const uint32_t *o = out.host;
  if (m && run1(m, "bar_all", 1, 128, params, "bar.sync 0"))
    for (unsigned i = 0; i < 128; i++)
      EXPECT(o[i] == (127 - i) * 3, "bar.sync 0: thread %u read %u, want %u",
             i, o[i], (127 - i) * 3);
  if (m && run1(m, "bar_named", 1, 128, params, "bar.sync 1, 64"))
    for (unsigned i = 0; i < 128; i++) {
      unsigned want = (i < 64 ? 63 - i : 191 - i) + 1;
      EXPECT(o[i] == want, "bar.sync 1/2, 64: thread %u read %u, want %u", i,
             o[i], want);
    }
  memset(out.host, 0, 128 * 4);
  if (m && run1(m, "bar_pc", 1, 64, params, "bar.arrive + bar.sync"))
    for (unsigned i = 0; i < 32; i++)
      EXPECT(o[i] == 1000 + i, "bar.arrive/bar.sync: consumer %u read %u, "
             "want %u", i + 32, o[i], 1000 + i);
  memset(out.host, 0, 128 * 4);
  if (m && run1(m, "bar_pc", 1, 96, params,
                "bar.arrive by threads that exit, and a late third warp"))
    for (unsigned i = 0; i < 32; i++)
      EXPECT(o[i] == 1000 + i + 64 + i, "bar.arrive then exit: consumer %u "
             "read %u, want %u (a barrier released before its count)",
             i + 32, o[i], 1000 + i + 64 + i);
  dfree(&out);
  ptx_module_free(m);
}

/* ---- atomics ---- */

static const char atom_src[] = HDR
    ".shared .align 4 .u32 cnt;\n"
    ".visible .entry atom_global(.param .u64 ctr, .param .u64 olds)\n{\n" REGS
    "  ld.param.u64 %rd1, [ctr];\n"
    "  ld.param.u64 %rd2, [olds];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mad.lo.u32 %r3, %r2, 256, %r1;\n"
    "  atom.global.add.u32 %r4, [%rd1], 1;\n"
    "  mul.wide.u32 %rd3, %r3, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.global.u32 [%rd4], %r4;\n"
    "  red.global.add.u32 [%rd1+4], %r1;\n"
    "  red.global.add.f32 [%rd1+8], 0f3F000000;\n"
    "  cvt.u64.u32 %rd5, %r3;\n"
    "  atom.global.add.u64 %rd6, [%rd1+16], %rd5;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry atom_shared(.param .u64 out)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  setp.ne.u32 %p1, %r1, 0;\n"
    "  @%p1 bra WAIT;\n"
    "  st.shared.u32 [cnt], 0;\n"
    "WAIT:\n"
    "  bar.sync 0;\n"
    "  atom.shared.add.u32 %r2, [cnt], 1;\n"
    "  mov.u64 %rd2, cnt;\n"
    "  cvta.shared.u64 %rd3, %rd2;\n"
    "  atom.add.u32 %r3, [%rd3], 2;\n"
    "  bar.sync 0;\n"
    "  @%p1 bra DONE;\n"
    "  ld.shared.u32 %r4, [cnt];\n"
    "  st.global.u32 [%rd1], %r4;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    /* p[0] cas-loop sum, p[1] exch, p[2..5] min/max s32/u32, p[6] inc,
     * p[7] dec, p[8] inc from above the bound, p[9] dec from above, p[10]
     * or, p[11] xor, p[12] and */
    ".visible .entry atom_ops(.param .u64 p, .param .u64 olds)\n{\n" REGS
    "  ld.param.u64 %rd1, [p];\n"
    "  ld.param.u64 %rd2, [olds];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mad.lo.u32 %r3, %r2, 256, %r1;\n"
    "  add.u32 %r5, %r3, 1;\n"
    "LOOP:\n"
    "  ld.global.u32 %r6, [%rd1];\n"
    "  add.u32 %r7, %r6, %r5;\n"
    "  atom.global.cas.b32 %r8, [%rd1], %r6, %r7;\n"
    "  setp.ne.u32 %p1, %r8, %r6;\n"
    "  @%p1 bra LOOP;\n"
    "  atom.global.exch.b32 %r9, [%rd1+4], %r5;\n"
    "  mul.wide.u32 %rd3, %r3, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.global.u32 [%rd4], %r9;\n"
    "  sub.s32 %r10, %r3, 100;\n"
    "  atom.global.min.s32 %r11, [%rd1+8], %r10;\n"
    "  atom.global.max.s32 %r11, [%rd1+12], %r10;\n"
    "  atom.global.min.u32 %r11, [%rd1+16], %r10;\n"
    "  atom.global.max.u32 %r11, [%rd1+20], %r10;\n"
    "  atom.global.inc.u32 %r11, [%rd1+24], 9;\n"
    "  atom.global.dec.u32 %r11, [%rd1+28], 9;\n"
    "  atom.global.inc.u32 %r11, [%rd1+32], 9;\n"
    "  atom.global.dec.u32 %r11, [%rd1+36], 9;\n"
    "  and.b32 %r12, %r3, 31;\n"
    "  shl.b32 %r13, 1, %r12;\n"
    "  atom.global.or.b32 %r11, [%rd1+40], %r13;\n"
    "  atom.global.xor.b32 %r11, [%rd1+44], %r3;\n"
    "  not.b32 %r13, %r13;\n"
    "  atom.global.and.b32 %r11, [%rd1+48], %r13;\n"
    "  ret;\n"
    "}\n";

static void test_atomics(void) {
  ptx_module *m = load(atom_src, "atomics");
  dbuf ctr = dnew(64), olds = dnew(1024 * 4);
  void *params[] = {&ctr.dev, &olds.dev};
  const uint32_t *c = ctr.host, *o = olds.host;
  if (m && run1(m, "atom_global", 4, 256, params, "atom.global.add")) {
    float f;
    uint64_t sum64;
    memcpy(&f, c + 2, 4);
    memcpy(&sum64, c + 4, 8);
    EXPECT(c[0] == 1024, "atom.global.add.u32 from 4x256 threads: %u, want "
           "1024", c[0]);
    EXPECT(c[1] == 4 * 255 * 256 / 2, "red.global.add.u32 of %%tid.x: %u, "
           "want %u", c[1], 4 * 255 * 256 / 2);
    EXPECT(f == 512.0f, "red.global.add.f32 of 0.5 from 1024 threads: %g, "
           "want 512", (double)f);
    EXPECT(sum64 == 1023 * 1024 / 2, "atom.global.add.u64: %llu, want %u",
           (unsigned long long)sum64, 1023 * 1024 / 2);
    static bool seen[1024];
    bool perm = true;
    for (unsigned i = 0; i < 1024; i++) {
      perm = perm && o[i] < 1024 && !seen[o[i]];
      if (o[i] < 1024)
        seen[o[i]] = true;
    }
    EXPECT(perm, "atom.global.add.u32: the old values are not 0..1023 once "
           "each");
  }
  dbuf sh = dnew(4);
  void *sparams[] = {&sh.dev};
  if (m && run1(m, "atom_shared", 1, 256, sparams, "atom.shared.add"))
    EXPECT(*(uint32_t *)sh.host == 256 * 3, "atom.shared.add (and a generic "
           "atom.add on shared): %u, want %u", *(uint32_t *)sh.host, 256 * 3);
  dfree(&sh);

  uint32_t *p = ctr.host;
  memset(p, 0, 64);
  p[2] = 0x7fffffff, p[3] = 0x80000000, p[4] = 0xffffffff, p[5] = 0;
  p[8] = 20, p[9] = 20, p[12] = 0xffffffff;
  if (m && run1(m, "atom_ops", 2, 256, params, "atom ops")) {
    EXPECT(p[0] == 512 * 513 / 2, "atom.cas loop sum: %u, want %u", p[0],
           512 * 513 / 2);
    static bool seen[513];
    bool perm = p[1] <= 512;
    if (perm)
      seen[p[1]] = true;
    for (unsigned i = 0; i < 512; i++) {
      perm = perm && o[i] <= 512 && !seen[o[i]];
      if (o[i] <= 512)
        seen[o[i]] = true;
    }
    EXPECT(perm, "atom.exch: the old values and the last are not 0..512 "
           "once each");
    EXPECT((int32_t)p[2] == -100 && (int32_t)p[3] == 411,
           "atom.min/max.s32: %d %d, want -100 411", (int32_t)p[2],
           (int32_t)p[3]);
    EXPECT(p[4] == 0 && p[5] == 0xffffffff, "atom.min/max.u32: 0x%x 0x%x, "
           "want 0 0xffffffff", p[4], p[5]);
    EXPECT(p[6] == 2 && p[7] == 8, "atom.inc/dec.u32 bound 9, 512 times "
           "from 0: %u %u, want 2 8", p[6], p[7]);
    EXPECT(p[8] == 1 && p[9] == 8, "atom.inc/dec.u32 bound 9, 512 times "
           "from 20: %u %u, want 1 8", p[8], p[9]);
    EXPECT(p[10] == 0xffffffff && p[11] == 0 && p[12] == 0,
           "atom.or/xor/and: 0x%x 0x%x 0x%x, want 0xffffffff 0 0", p[10],
           p[11], p[12]);
  }
  dfree(&ctr);
  dfree(&olds);
  ptx_module_free(m);
}

/* ---- calls and local memory ---- */

static const char call_src[] = HDR
    ".func (.param .b32 rv) add_mul(.param .b32 x, .param .b32 y)\n{\n"
    "  .reg .b32 %r<4>;\n"
    "  ld.param.b32 %r1, [x];\n"
    "  ld.param.b32 %r2, [y];\n"
    "  mad.lo.s32 %r3, %r1, 10, %r2;\n"
    "  st.param.b32 [rv], %r3;\n"
    "  ret;\n"
    "}\n"
    ".func (.param .b32 rv) fact(.param .b32 n)\n{\n"
    "  .reg .b32 %r<4>;\n"
    "  .reg .pred %p1;\n"
    "  ld.param.b32 %r1, [n];\n"
    "  setp.le.u32 %p1, %r1, 1;\n"
    "  @%p1 bra BASE;\n"
    "  sub.u32 %r2, %r1, 1;\n"
    "  {\n"
    "  .param .b32 a;\n"
    "  .param .b32 r;\n"
    "  st.param.b32 [a], %r2;\n"
    "  call.uni (r), fact, (a);\n"
    "  ld.param.b32 %r3, [r];\n"
    "  }\n"
    "  mul.lo.u32 %r3, %r3, %r1;\n"
    "  st.param.b32 [rv], %r3;\n"
    "  ret;\n"
    "BASE:\n"
    "  st.param.b32 [rv], 1;\n"
    "  ret;\n"
    "}\n"
    /* a .func with .local memory of its own, written through a generic
     * address, and a pointer argument */
    ".func fill(.param .b64 p, .param .b32 k)\n{\n"
    "  .local .align 4 .b8 buf[64];\n"
    "  .reg .b32 %r<8>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  .reg .pred %p1;\n"
    "  ld.param.b64 %rd1, [p];\n"
    "  ld.param.b32 %r1, [k];\n"
    "  mov.u64 %rd2, buf;\n"
    "  mov.u32 %r2, 0;\n"
    "FILL:\n"
    "  mul.lo.u32 %r3, %r2, %r1;\n"
    "  mul.wide.u32 %rd3, %r2, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.local.u32 [%rd4], %r3;\n"
    "  add.u32 %r2, %r2, 1;\n"
    "  setp.lt.u32 %p1, %r2, 16;\n"
    "  @%p1 bra FILL;\n"
    "  cvta.local.u64 %rd5, %rd2;\n"
    "  ld.u32 %r4, [%rd5+12];\n"
    "  ld.local.u32 %r5, [buf+60];\n"
    "  add.u32 %r4, %r4, %r5;\n"
    "  st.global.u32 [%rd1], %r4;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry calls(.param .u64 out)\n{\n"
    "  .local .align 8 .b8 kbuf[16];\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mul.wide.u32 %rd2, %r1, 16;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  st.local.u32 [kbuf+4], %r1;\n"
    "  {\n"
    "  .param .b32 x;\n"
    "  .param .b32 y;\n"
    "  .param .b32 rv;\n"
    "  st.param.b32 [x], %r1;\n"
    "  st.param.b32 [y], 7;\n"
    "  call.uni (rv), add_mul, (x, y);\n"
    "  ld.param.b32 %r2, [rv];\n"
    "  }\n"
    "  and.b32 %r3, %r1, 7;\n"
    "  add.u32 %r3, %r3, 1;\n"
    "  {\n"
    "  .param .b32 n;\n"
    "  .param .b32 rv2;\n"
    "  st.param.b32 [n], %r3;\n"
    "  call.uni (rv2), fact, (n);\n"
    "  ld.param.b32 %r4, [rv2];\n"
    "  }\n"
    "  st.global.v2.u32 [%rd3], {%r2, %r4};\n"
    "  add.s64 %rd4, %rd3, 8;\n"
    "  add.u32 %r5, %r1, 3;\n"
    "  {\n"
    "  .param .b64 p;\n"
    "  .param .b32 k;\n"
    "  st.param.b64 [p], %rd4;\n"
    "  st.param.b32 [k], %r5;\n"
    "  call.uni fill, (p, k);\n"
    "  }\n"
    "  mov.u64 %rd5, kbuf;\n"
    "  cvta.local.u64 %rd6, %rd5;\n"
    "  ld.u32 %r6, [%rd6+4];\n"
    "  st.global.u32 [%rd3+12], %r6;\n"
    "  ret;\n"
    "}\n";

static void test_calls(void) {
  ptx_module *m = load(call_src, "calls");
  dbuf out = dnew(64 * 16);
  void *params[] = {&out.dev};
  if (m && run1(m, "calls", 1, 64, params, "calls")) {
    const uint32_t *o = out.host;
    for (unsigned i = 0; i < 64; i++) {
      unsigned f = 1;
      for (unsigned k = 2; k <= (i & 7) + 1; k++)
        f *= k;
      const uint32_t *r = o + i * 4;
      EXPECT(r[0] == i * 10 + 7, "call add_mul(%u, 7): %u, want %u", i, r[0],
             i * 10 + 7);
      EXPECT(r[1] == f, "recursive call fact(%u): %u, want %u", (i & 7) + 1,
             r[1], f);
      EXPECT(r[2] == (i + 3) * 18, ".local in a .func (generic and "
             ".local loads): %u, want %u", r[2], (i + 3) * 18);
      EXPECT(r[3] == i, "the kernel's .local after a call that has its own: "
             "%u, want %u", r[3], i);
    }
  }
  dfree(&out);
  ptx_module_free(m);
}

/* ---- module variables, dynamic shared memory ---- */

static const char vars_src[] = HDR
    ".global .align 4 .u32 table[4] = {1, 2, 3, 4000000000};\n"
    ".const .align 4 .f32 coef[2] = {0f3FC00000, -2.5};\n"
    ".global .align 8 .u64 big = 0x123456789abcdef0;\n"
    ".global .align 2 .b16 hs[3] = {7, -1, 9};\n"
    ".visible .entry vars(.param .u64 out)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  ld.global.u32 %r1, [table+4];\n"
    "  mov.u64 %rd2, table;\n"
    "  ld.global.u32 %r2, [%rd2+12];\n"
    "  ld.const.f32 %f1, [coef+4];\n"
    "  mov.u64 %rd3, coef;\n"
    "  ld.const.f32 %f2, [%rd3];\n"
    "  ld.global.u64 %rd4, [big];\n"
    "  ld.global.s16 %r3, [hs+2];\n"
    "  ld.u32 %r4, [%rd2];\n"
    "  st.global.u32 [table], 55;\n"
    "  ld.global.u32 %r5, [table];\n"
    "  st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};\n"
    "  st.global.v2.f32 [%rd1+16], {%f1, %f2};\n"
    "  st.global.u64 [%rd1+24], %rd4;\n"
    "  st.global.u32 [%rd1+32], %r5;\n"
    "  ret;\n"
    "}\n";

static void test_vars(void) {
  ptx_module *m = load(vars_src, "module variables");
  dbuf out = dnew(64);
  void *params[] = {&out.dev};
  if (m && run1(m, "vars", 1, 1, params, "module variables")) {
    const uint32_t *o = out.host;
    float f[2];
    uint64_t big;
    memcpy(f, o + 4, 8);
    memcpy(&big, o + 6, 8);
    EXPECT(o[0] == 2 && o[1] == 4000000000u, ".global table: %u %u, want 2 "
           "4000000000", o[0], o[1]);
    EXPECT(o[2] == 0xffffffff, ".global .b16 initialiser -1, ld.s16: 0x%x",
           o[2]);
    EXPECT(o[3] == 1, "generic load of a .global variable: %u, want 1",
           o[3]);
    EXPECT(f[0] == -2.5f && f[1] == 1.5f, ".const coef: %g %g, want -2.5 "
           "1.5", (double)f[0], (double)f[1]);
    EXPECT(big == 0x123456789abcdef0ULL, ".global .u64 initialiser: 0x%llx",
           (unsigned long long)big);
    EXPECT(o[8] == 55, "a store to a .global variable reads back %u", o[8]);
  }
  dfree(&out);
  ptx_module_free(m);
}

static const char dyn_src[] = HDR
    ".shared .align 4 .u32 fixed[5];\n"
    ".extern .shared .align 16 .b8 smem[];\n"
    ".visible .entry dyn(.param .u64 out)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u64 %rd2, smem;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  mul.lo.u32 %r2, %r1, 2;\n"
    "  st.shared.u32 [%rd4], %r2;\n"
    "  setp.ne.u32 %p1, %r1, 0;\n"
    "  @!%p1 st.shared.u32 [fixed+16], 9;\n"
    "  bar.sync 0;\n"
    "  sub.u32 %r3, 63, %r1;\n"
    "  mul.wide.u32 %rd5, %r3, 4;\n"
    "  add.s64 %rd6, %rd2, %rd5;\n"
    "  ld.shared.u32 %r4, [%rd6];\n"
    "  add.s64 %rd7, %rd1, %rd3;\n"
    "  st.global.u32 [%rd7], %r4;\n"
    "  @%p1 bra DONE;\n"
    "  mov.u32 %r5, %dynamic_smem_size;\n"
    "  st.global.u32 [%rd1+256], %r5;\n"
    "  st.global.u64 [%rd1+264], %rd2;\n"
    "  ld.shared.u32 %r6, [fixed+16];\n"
    "  st.global.u32 [%rd1+272], %r6;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

static void test_dynamic_shared(void) {
  ptx_module *m = load(dyn_src, "dynamic shared memory");
  dbuf out = dnew(512);
  void *params[] = {&out.dev};
  ptx_launch l = {{1, 1, 1}, {64, 1, 1}, 256, params, 0};
  ptx_status st = launch(m, "dyn", &l);
  EXPECT(st == PTX_OK, "dynamic shared memory: status %d: %s", st, report);
  if (st == PTX_OK) {
    const uint32_t *o = out.host;
    for (unsigned i = 0; i < 64; i++)
      EXPECT(o[i] == (63 - i) * 2, "dynamic shared: thread %u read %u, want "
             "%u", i, o[i], (63 - i) * 2);
    uint64_t at;
    memcpy(&at, o + 66, 8);
    EXPECT(o[64] == 256, "%%dynamic_smem_size: %u, want 256", o[64]);
    EXPECT(at >= 20 && at % 16 == 0, "the extern .shared array is at %llu, "
           "not after the 20 static bytes, 16-aligned", (unsigned long long)at);
    EXPECT(o[68] == 9, "static shared next to the dynamic: %u, want 9", o[68]);
  }
  /* too little dynamic shared memory for 64 threads: out of bounds */
  l.dynamic_shared = 128;
  st = launch(m, "dyn", &l);
  check_fault("dynamic shared too small", st, PTX_ILLEGAL_ADDRESS, "dyn",
              "(0,0,0)", "(32,0,0)", line_of(dyn_src, "st.shared.u32 [%rd4]"),
              "shared");
  dfree(&out);
  ptx_module_free(m);
}


static void test_nvcc(void) {
  char *src = read_testdata("warp_reduce.ptx");
  ptx_module *m = src ? load_on(src, &dev90, "warp_reduce.ptx") : NULL;
  if (m) {
    dbuf in = dnew(128 * 4), out = dnew(4 * 4);
    float *x = in.host;
    for (unsigned i = 0; i < 128; i++)
      x[i] = (float)(i % 13) - 6;
    void *params[] = {&in.dev, &out.dev};
    if (run1(m, "warp_reduce", 2, 64, params, "warp_reduce"))
      for (unsigned w = 0; w < 4; w++) {
        float want = 0;
        for (unsigned i = 0; i < 32; i++)
          want += x[w * 32 + i];
        float got = ((float *)out.host)[w];
        EXPECT(got == want, "warp_reduce: warp %u sums to %g, want %g", w,
               (double)got, (double)want);
      }
    dfree(&in);
    dfree(&out);
  }
  ptx_module_free(m);
  free(src);

  src = read_testdata("block_reduce.ptx");
  m = src ? load_on(src, &dev90, "block_reduce.ptx") : NULL;
  if (m) {
    dbuf in = dnew(3 * 256 * 4), out = dnew(3 * 4);
    int32_t *x = in.host;
    for (unsigned i = 0; i < 3 * 256; i++)
      x[i] = (int32_t)(i * 7919 % 1000) - 500;
    void *params[] = {&in.dev, &out.dev};
    if (run1(m, "block_reduce", 3, 256, params, "block_reduce"))
      for (unsigned b = 0; b < 3; b++) {
        int32_t want = 0;
        for (unsigned i = 0; i < 256; i++)
          want += x[b * 256 + i];
        int32_t got = ((int32_t *)out.host)[b];
        EXPECT(got == want, "block_reduce: block %u sums to %d, want %d", b,
               got, want);
      }
    dfree(&in);
    dfree(&out);
  }
  ptx_module_free(m);
  free(src);

  /* bar.red: 64 threads, v = 0..63 then 30..93 in the second block */
  src = read_testdata("sync_reductions.ptx");
  m = src ? load_on(src, &dev90, "sync_reductions.ptx") : NULL;
  if (m) {
    dbuf in = dnew(2 * 64 * 4), out = dnew(2 * 64 * 4);
    int32_t *x = in.host;
    for (unsigned i = 0; i < 64; i++) {
      x[i] = (int32_t)i;
      x[64 + i] = (int32_t)i + 30;
    }
    for (unsigned b = 0; b < 2; b++) {
      dbuf bin = {(char *)in.host + b * 256, in.dev + b * 256};
      dbuf bout = {(char *)out.host + b * 256, out.dev + b * 256};
      void *params[] = {&bout.dev, &bin.dev};
      if (!run1(m, "sync_reductions", 1, 64, params, "sync_reductions"))
        break;
      int32_t count = 0, all = 1, any = 0;
      for (unsigned i = 0; i < 64; i++) {
        count += x[b * 64 + i] > 10;
        all &= x[b * 64 + i] > 10;
        any |= x[b * 64 + i] > 90;
      }
      for (unsigned i = 0; i < 64; i++)
        EXPECT(((int32_t *)out.host)[b * 64 + i] == count * 100 + all * 10 + any,
               "sync_reductions: block %u thread %u has %d, want %d", b, i,
               ((int32_t *)out.host)[b * 64 + i], count * 100 + all * 10 + any);
    }
    dfree(&in);
    dfree(&out);
  }
  ptx_module_free(m);
  free(src);

  src = read_testdata("histogram.ptx");
  m = src ? load_on(src, &dev90, "histogram.ptx") : NULL;
  if (m) {
    unsigned n = 1000;
    dbuf in = dnew(n * 4), bins = dnew(16 * 4);
    uint32_t *x = in.host, want[16] = {0};
    for (unsigned i = 0; i < n; i++) {
      x[i] = rng() % 1000;
      want[x[i] % 16]++;
    }
    void *params[] = {&in.dev, &n, &bins.dev};
    if (run1(m, "histogram", 4, 256, params, "histogram"))
      for (unsigned b = 0; b < 16; b++)
        EXPECT(((uint32_t *)bins.host)[b] == want[b], "histogram: bin %u "
               "holds %u, want %u", b, ((uint32_t *)bins.host)[b], want[b]);
    dfree(&in);
    dfree(&bins);
  }
  ptx_module_free(m);
  free(src);
}

int main(void) {
  test_shfl();
  test_vote();
  test_barwarp();
  test_barriers();
  test_atomics();
  test_calls();
  test_vars();
  test_dynamic_shared();
  test_nvcc();
  if (failures)
    fprintf(stderr, "%s: %d checks failed\n", __FILE__, failures);
  return failures != 0;
}
