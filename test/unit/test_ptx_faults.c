/* test_ptx_faults.c: what the PTX interpreter must refuse, and say
 * where: launch faults (deadlock, data races and uninitialised reads on
 * shared memory, out-of-bounds and misaligned accesses, a shuffle naming
 * an exited lane, the instruction limit), each reported with its kernel,
 * block, thread and PTX line; loading errors (.version, .target, syntax,
 * unknown instructions, unresolved names) with their line; and launch
 * geometry (3-D grids and blocks, wide grids, .maxntid and .reqntid).
 */
#include "ptx_harness.h"

/* ---- faults ---- */

static const char fault_src[] = HDR
    ".shared .align 4 .u32 s[64];\n"
    ".visible .entry deadlock()\n{\n" REGS
    "  mov.u32 %r1, %tid.x;\n"
    "  setp.lt.u32 %p1, %r1, 32;\n"
    "  @%p1 bra LOW;\n"
    "  bar.sync 1;\n"
    "  ret;\n"
    "LOW:\n"
    "  bar.sync 0;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry race_ww()\n{\n" REGS
    "  mov.u32 %r1, %tid.x;\n"
    "  setp.eq.u32 %p1, %r1, 0;\n"
    "  setp.eq.or.u32 %p1, %r1, 33, %p1;\n"
    "  @%p1 st.shared.u32 [s+8], %r1; // write-write\n"
    "  ret;\n"
    "}\n"
    ".visible .entry race_wr()\n{\n" REGS
    "  mov.u32 %r1, %tid.x;\n"
    "  setp.ne.u32 %p1, %r1, 0;\n"
    "  @%p1 bra READ;\n"
    "  st.shared.u32 [s+12], 5;\n"
    "  ret;\n"
    "READ:\n"
    "  setp.ne.u32 %p2, %r1, 1;\n"
    "  @%p2 bra DONE;\n"
    "  ld.shared.u32 %r2, [s+12]; // write-read\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    /* block 1's thread 5 stores one past the end of a 256-byte buffer */
    ".visible .entry oob(.param .u64 p)\n{\n" REGS
    "  ld.param.u64 %rd1, [p];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mad.lo.u32 %r3, %r2, 5, %r1;\n"
    "  mul.wide.u32 %rd2, %r3, 4;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  st.global.u32 [%rd3+216], %r1; // oob\n"
    "  ret;\n"
    "}\n"
    ".visible .entry misaligned(.param .u64 p)\n{\n" REGS
    "  ld.param.u64 %rd1, [p];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mul.wide.u32 %rd2, %r1, 2;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.u32 %r2, [%rd3]; // misaligned\n"
    "  ret;\n"
    "}\n"
    ".visible .entry uninit()\n{\n" REGS
    "  mov.u32 %r1, %tid.x;\n"
    "  mul.wide.u32 %rd1, %r1, 4;\n"
    "  mov.u64 %rd2, s;\n"
    "  add.s64 %rd3, %rd2, %rd1;\n"
    "  setp.eq.u32 %p1, %r1, 3;\n"
    "  @%p1 bra SKIP;\n"
    "  st.shared.u32 [%rd3], %r1;\n"
    "SKIP:\n"
    "  bar.sync 0;\n"
    "  ld.shared.u32 %r2, [%rd3+4]; // uninit\n"
    "  ret;\n"
    "}\n"
    ".visible .entry shfl_exited()\n{\n" REGS
    "  mov.u32 %r1, %laneid;\n"
    "  setp.ge.u32 %p1, %r1, 16;\n"
    "  @%p1 exit;\n"
    "  shfl.sync.idx.b32 %r2, %r1, 0, 31, -1; // shfl\n"
    "  ret;\n"
    "}\n"
    ".visible .entry forever()\n{\n" REGS
    "  mov.u32 %r1, 0;\n"
    "LOOP:\n"
    "  add.u32 %r1, %r1, 1;\n"
    "  bra.uni LOOP; // forever\n"
    "}\n";

static void test_faults(void) {
  ptx_module *m = load(fault_src, "faults");
  if (!m)
    return;
  ptx_launch l = {{1, 1, 1}, {64, 1, 1}, 0, NULL, 0};
  check_fault("deadlock", launch(m, "deadlock", &l), PTX_DEADLOCK,
              "deadlock", "(0,0,0)", "(0,0,0)",
              line_of(fault_src, "bar.sync 0;"), "deadlock");
  check_fault("write-write race", launch(m, "race_ww", &l),
              PTX_LAUNCH_FAILED, "race_ww", "(0,0,0)", "(33,0,0)",
              line_of(fault_src, "// write-write"), "race");
  EXPECT(strstr(report, "thread (0,0,0) with no barrier"),
         "the race report does not name the other thread: %s", report);
  check_fault("write-read race", launch(m, "race_wr", &l),
              PTX_LAUNCH_FAILED, "race_wr", "(0,0,0)", "(1,0,0)",
              line_of(fault_src, "// write-read"), "race");
  check_fault("uninitialised shared read", launch(m, "uninit", &l),
              PTX_LAUNCH_FAILED, "uninit", "(0,0,0)", "(2,0,0)",
              line_of(fault_src, "// uninit"), "uninitialised");
  check_fault("shfl naming an exited lane", launch(m, "shfl_exited", &l),
              PTX_DEADLOCK, "shfl_exited", "(0,0,0)", "(0,0,0)",
              line_of(fault_src, "// shfl"), "exited");
  l.max_insns = 100000;
  uint64_t insns = 0;
  ptx_status st = ptx_kernel_run(ptx_module_kernel(m, "forever"), &l, report,
                                 sizeof report, &insns);
  check_fault("instruction limit", st, PTX_TOO_MANY_INSNS, "forever",
              "(0,0,0)", "(0,0,0)", line_of(fault_src, "// forever"),
              "instructions");
  EXPECT(insns > 100000 && insns < 200000, "instruction limit: %llu "
         "instructions ran, for a limit of 100000", (unsigned long long)insns);

  dbuf buf = dnew(256);
  void *params[] = {&buf.dev};
  l = (ptx_launch){{2, 1, 1}, {8, 1, 1}, 0, params, 0};
  check_fault("out-of-bounds store", launch(m, "oob", &l),
              PTX_ILLEGAL_ADDRESS, "oob", "(1,0,0)", "(5,0,0)",
              line_of(fault_src, "// oob"), "out-of-bounds");
  l.grid[0] = 1;
  check_fault("misaligned load", launch(m, "misaligned", &l),
              PTX_MISALIGNED_ADDRESS, "misaligned", "(0,0,0)", "(1,0,0)",
              line_of(fault_src, "// misaligned"), "misaligned");
  dfree(&buf);
  ptx_module_free(m);
}

/* ---- loading ---- */

static void check_load(const char *what, const char *src, int driver,
                       int cc_major, int cc_minor, ptx_status want,
                       int line) {
  ptx_device dev = {driver, cc_major, cc_minor};
  char log[1024] = "";
  ptx_module *m = NULL;
  ptx_status st = ptx_module_load(src, &dev, &m, log, sizeof log);
  EXPECT(st == want, "%s: status %d, want %d (log: %s)", what, st, want, log);
  EXPECT((st == PTX_OK) == (m != NULL), "%s: a module %s", what,
         m ? "and an error" : "missing");
  char at[32];
  snprintf(at, sizeof at, "line %d;", line);
  EXPECT(want == PTX_OK || strstr(log, at), "%s: the log does not say '%s': "
         "%s", what, at, log);
  ptx_module_free(m);
}

static void test_load(void) {
  static const char body[] = ".address_size 64\n"
                             ".visible .entry k()\n{\n  ret;\n}\n";
  char src[512];
  snprintf(src, sizeof src, "// a comment\n.version 8.5\n.target sm_80\n%s",
           body);
  check_load(".version 8.5 on driver 12040", src, 12040, 9, 0,
             PTX_UNSUPPORTED_VERSION, 2);
  check_load(".version 8.5 on driver 12050", src, 12050, 9, 0, PTX_OK, 0);
  snprintf(src, sizeof src, ".version 8.0\n.target sm_80\n%s", body);
  check_load(".version 8.0 on driver 12000", src, 12000, 9, 0, PTX_OK, 0);
  snprintf(src, sizeof src, ".version 9.0\n.target sm_90\n%s", body);
  check_load(".version 9.0 on driver 13000", src, 13000, 9, 0, PTX_OK, 0);
  check_load(".version 9.0 on driver 12080", src, 12080, 9, 0,
             PTX_UNSUPPORTED_VERSION, 1);
  snprintf(src, sizeof src, ".version 8.0\n\n.target sm_100\n%s", body);
  check_load(".target sm_100 on a 9.0 device", src, 13000, 9, 0,
             PTX_NO_BINARY, 3);
  snprintf(src, sizeof src, ".version 8.0\n.target sm_90a\n%s", body);
  check_load(".target sm_90a on a 9.0 device", src, 13000, 9, 0, PTX_OK, 0);
  check_load(".target sm_90a on a 10.0 device", src, 13000, 10, 0,
             PTX_NO_BINARY, 2);

  /* the error's line: the statement's (8), or where the parse found
   * what it did not expect (a missing ';': the next line's token) */
  static const struct {
    const char *what, *insn;
    int line;
  } bad[] = {
      {"a syntax error", "add.u32 %r1, %r2 %r3;", 8},
      {"a missing ';'", "add.u32 %r1, %r2, %r3\n  ret", 9},
      {"an unknown instruction", "frobnicate.u32 %r1, %r2;", 8},
      {"an unknown modifier", "add.sideways.u32 %r1, %r2, %r3;", 8},
      {"an unresolved label", "bra NOWHERE;", 8},
      {"an unresolved symbol", "ld.global.u32 %r1, [missing];", 8},
      {"an undeclared register", "add.u32 %r1, %q2, 1;", 8},
      {"a call to an undefined function", "call.uni nobody, ();", 8},
      /* what fuzz_ptx found: an int overflow, a too large .local */
      {"a register range of 2^31", ".reg .b32 %q<2000000000>;", 8},
      {"a register index past 2^31", "add.u32 %r1, %r4000000000, 1;", 8},
      {"a .local of 1 GB", ".local .b8 big[1073741824];", 8},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(src, sizeof src, HDR ".visible .entry k()\n{\n"
             "  .reg .b32 %%r<4>;\n  mov.u32 %%r2, 1;\n  %s\n  ret;\n}\n",
             bad[i].insn);
    check_load(bad[i].what, src, 12080, 9, 0, PTX_INVALID_PTX, bad[i].line);
  }
  check_load("no .version", ".target sm_80\n.address_size 64\n", 12080, 9, 0,
             PTX_INVALID_PTX, 1);
  /* the array's bytes overflowed: 256 bytes allocated, 2^64 - 1 mapped */
  check_load("a .global of 2^64 - 1 bytes",
             HDR ".global .b8 x[18446744073709551615] = {1, 2};\n", 12080,
             9, 0, PTX_INVALID_PTX, 4);
  check_load("a .global array overflowing 64 bits",
             HDR ".global .u32 x[65536][65536][65536][65536];\n", 12080, 9,
             0, PTX_INVALID_PTX, 4);
  /* return values parsed, then no name: they leaked */
  check_load("a .func without a name",
             HDR ".func (.param .b32 rv) (.param .b32 x)\n{\n  ret;\n}\n",
             12080, 9, 0, PTX_INVALID_PTX, 4);
  /* a float for an integer: saturated, not undefined behaviour */
  check_load("a float initialising a .u64", HDR ".global .u64 q = 3e30;\n",
             12080, 9, 0, PTX_OK, 0);
}

/* ---- grid geometry ---- */

static const char geom_src[] = HDR
    ".visible .entry geom(.param .u64 out)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u32 %r2, %tid.y;\n"
    "  mov.u32 %r3, %tid.z;\n"
    "  mov.u32 %r4, %ntid.x;\n"
    "  mov.u32 %r5, %ntid.y;\n"
    "  mov.u32 %r6, %ntid.z;\n"
    "  mov.u32 %r7, %ctaid.x;\n"
    "  mov.u32 %r8, %ctaid.y;\n"
    "  mov.u32 %r9, %ctaid.z;\n"
    "  mov.u32 %r10, %nctaid.x;\n"
    "  mov.u32 %r11, %nctaid.y;\n"
    "  mov.u32 %r12, %nctaid.z;\n"
    /* the thread's place: ((cz*ny + cy)*nx + cx)*nthreads + its index */
    "  mad.lo.u32 %r13, %r9, %r11, %r8;\n"
    "  mad.lo.u32 %r13, %r13, %r10, %r7;\n"
    "  mul.lo.u32 %r14, %r4, %r5;\n"
    "  mul.lo.u32 %r14, %r14, %r6;\n"
    "  mad.lo.u32 %r15, %r3, %r5, %r2;\n"
    "  mad.lo.u32 %r15, %r15, %r4, %r1;\n"
    "  mad.lo.u32 %r16, %r13, %r14, %r15;\n"
    /* x | y << 8 | z << 16 of tid, ntid, ctaid, nctaid */
    "  shl.b32 %r2, %r2, 8;\n  shl.b32 %r3, %r3, 16;\n"
    "  or.b32 %r1, %r1, %r2;\n  or.b32 %r1, %r1, %r3;\n"
    "  shl.b32 %r5, %r5, 8;\n  shl.b32 %r6, %r6, 16;\n"
    "  or.b32 %r4, %r4, %r5;\n  or.b32 %r4, %r4, %r6;\n"
    "  shl.b32 %r8, %r8, 8;\n  shl.b32 %r9, %r9, 16;\n"
    "  or.b32 %r7, %r7, %r8;\n  or.b32 %r7, %r7, %r9;\n"
    "  shl.b32 %r11, %r11, 8;\n  shl.b32 %r12, %r12, 16;\n"
    "  or.b32 %r10, %r10, %r11;\n  or.b32 %r10, %r10, %r12;\n"
    "  mul.wide.u32 %rd2, %r16, 16;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  st.global.v4.u32 [%rd3], {%r1, %r4, %r7, %r10};\n"
    "  ret;\n"
    "}\n"
    ".visible .entry wide(.param .u64 out)\n{\n" REGS
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %ctaid.x;\n"
    "  mov.u32 %r2, %nctaid.x;\n"
    "  mul.wide.u32 %rd2, %r1, 4;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  add.u32 %r3, %r1, %r2;\n"
    "  st.global.u32 [%rd3], %r3;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry capped() .maxntid 64, 1, 1\n{\n  ret;\n}\n"
    ".visible .entry capped2() .maxntid 8, 8\n{\n  ret;\n}\n"
    ".visible .entry exact() .reqntid 32\n{\n  ret;\n}\n";

static void test_geometry(void) {
  ptx_module *m = load(geom_src, "geometry");
  if (!m)
    return;
  enum { GX = 2, GY = 3, GZ = 2, BX = 4, BY = 2, BZ = 3 };
  enum { NT = GX * GY * GZ * BX * BY * BZ };
  dbuf out = dnew(NT * 16);
  void *params[] = {&out.dev};
  ptx_launch l = {{GX, GY, GZ}, {BX, BY, BZ}, 0, params, 0};
  ptx_status st = launch(m, "geom", &l);
  EXPECT(st == PTX_OK, "3-D launch: status %d: %s", st, report);
  const uint32_t *o = out.host;
  for (unsigned i = 0; st == PTX_OK && i < NT; i++) {
    unsigned t = i % (BX * BY * BZ), c = i / (BX * BY * BZ);
    uint32_t tid = t % BX | (t / BX % BY) << 8 | (t / (BX * BY)) << 16;
    uint32_t cta = c % GX | (c / GX % GY) << 8 | (c / (GX * GY)) << 16;
    const uint32_t *r = o + i * 4;
    EXPECT(r[0] == tid && r[1] == (BX | BY << 8 | BZ << 16) && r[2] == cta &&
               r[3] == (GX | GY << 8 | GZ << 16),
           "3-D launch: thread %u sees tid 0x%06x ntid 0x%06x ctaid 0x%06x "
           "nctaid 0x%06x, want 0x%06x 0x%06x 0x%06x 0x%06x", i, r[0], r[1],
           r[2], r[3], tid, BX | BY << 8 | BZ << 16, cta,
           GX | GY << 8 | GZ << 16);
  }
  dfree(&out);

  enum { WIDE = 70000 };
  out = dnew(WIDE * 4);
  params[0] = &out.dev;
  if (run1(m, "wide", WIDE, 1, params, "a grid of 70000 blocks in x")) {
    o = out.host;
    unsigned bad = 0;
    for (unsigned i = 0; i < WIDE; i++)
      bad += o[i] != i + WIDE;
    EXPECT(bad == 0, "a grid of 70000 blocks: %u blocks saw a wrong "
           "%%ctaid.x or %%nctaid.x (block 69999: %u)", bad, o[WIDE - 1]);
  }
  dfree(&out);
  l = (ptx_launch){{1, 65536, 1}, {1, 1, 1}, 0, params, 0};
  EXPECT(launch(m, "wide", &l) == PTX_INVALID_VALUE,
         "a grid of 65536 in y launched");

  static const struct {
    const char *kernel;
    unsigned x, y;
    ptx_status want;
  } caps[] = {{"capped", 64, 1, PTX_OK},      {"capped", 65, 1, PTX_INVALID_VALUE},
              {"capped", 32, 4, PTX_INVALID_VALUE}, {"capped2", 64, 1, PTX_OK},
              {"capped2", 16, 8, PTX_INVALID_VALUE}, {"exact", 32, 1, PTX_OK},
              {"exact", 64, 1, PTX_INVALID_VALUE},  {"exact", 16, 1, PTX_INVALID_VALUE}};
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    l = (ptx_launch){{1, 1, 1}, {caps[i].x, caps[i].y, 1}, 0, NULL, 0};
    st = launch(m, caps[i].kernel, &l);
    EXPECT(st == caps[i].want, "%s launched with a block of (%u,%u): status "
           "%d, want %d (%s)", caps[i].kernel, caps[i].x, caps[i].y, st,
           caps[i].want, report);
  }
  ptx_module_free(m);
}

int main(void) {
  test_faults();
  test_load();
  test_geometry();
  if (failures)
    fprintf(stderr, "%s: %d checks failed\n", __FILE__, failures);
  return failures != 0;
}
