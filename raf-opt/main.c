/* raf-opt: the pass driver, in the manner of LLVM's opt and mlir-opt.
 *
 *   raf-opt [options] [passes] [in.raf | -] [-o out.raf]
 *
 * It parses a module, verifies it, runs the passes in command-line order
 * (verifying after each), and prints the result canonically. With
 * --split-input-file each chunk between `// -----` lines is a module of its
 * own; with --verify-diagnostics the reported diagnostics are checked
 * against the annotations in the source instead of being printed. Output is
 * written only when everything succeeded, so bad input never clobbers an
 * earlier good output file. Exit status: 0 on success only.
 */
#include "codegen/codegen.h"
#include "include/raf/raf.h"
#include "raf-opt/diagnostics.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct options {
  const char *input, *output;
  bool split, verify_diags, print_loc, stats;
  enum { EMIT_RAF, EMIT_DOT, EMIT_LLVM, EMIT_PTX } emit;
  const char *cuda_arch, *mcpu;
  bool codegen_unopt;
  raf_pipeline_options pipe;
} options;

static void usage(FILE *f) {
  size_t n;
  const raf_pass_info *passes = raf_pass_list(&n);
  fprintf(f,
          "usage: raf-opt [options] [passes] [input.raf | -] [-o output]\n\n"
          "Reads a .raf module (stdin when no file or '-'), runs the passes in\n"
          "command-line order and prints the result.\n\n"
          "Passes (see --list-passes):\n");
  for (size_t i = 0; i < n; i++)
    fprintf(f, "  --%-28s %s\n", passes[i].name, passes[i].summary);
  fprintf(f,
          "  --PASS=\"k=v ...\"              a pass with options\n"
          "  -p, --pass-pipeline=PIPELINE    passes as 'a,b{k=v},c'\n"
          "  --dialects=a,b                  dispatch to these dialects, "
          "highest priority first\n\n"
          "Options:\n"
          "  -o FILE                         output file ('-': stdout)\n"
          "  --list-passes                   list the passes and exit\n"
          "  --verify-each, --no-verify-each verify after every pass (on)\n"
          "  --time-passes                   report the time of each pass\n"
          "  --print-ir-before=PASS          print the IR before PASS\n"
          "  --print-ir-after=PASS           print the IR after PASS\n"
          "  --print-ir-after-all            print the IR after every pass\n"
          "  --opt-bisect-limit=N            run only the first N passes\n"
          "  --split-input-file              treat '// -----' chunks apart\n"
          "  --verify-diagnostics            check expected-error annotations\n"
          "  --print-loc                     print statement locations\n"
          "  --emit=raf|dot|llvm|ptx         output form (dot: Graphviz; llvm,\n"
          "                                  ptx: the fused functions' kernels)\n"
          "  --cuda-arch=sm_NN               the GPU of --emit=ptx (sm_80)\n"
          "  --mcpu=CPU                      the CPU of --emit=llvm (the host)\n"
          "  --codegen-opt=0|3               O3 on the kernels, or none (3)\n"
          "  --stats                         print the statement count and each\n"
          "                                  function's tensor memory, what it\n"
          "                                  saves for backward and its cost\n"
          "  --help, --version\n");
}

/* "--name=value" -> value, when arg starts with "--name=". */
static const char *flag_value(const char *arg, const char *name) {
  size_t n = strlen(name);
  return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

static bool is_pass(const char *name, size_t len) {
  char buf[128];
  snprintf(buf, sizeof buf, "%.*s", (int)len, name);
  return len < sizeof buf && raf_pass_lookup(buf, NULL);
}

/* The options of parse_args, without their dashes, for suggestions; the
 * passes are options too. */
static const char *const option_names[] = {
    "help",          "version",          "list-passes",
    "pass-pipeline", "verify-each",      "no-verify-each",
    "time-passes",   "print-ir-before",  "print-ir-after",
    "print-ir-after-all", "opt-bisect-limit", "dialects",
    "split-input-file", "verify-diagnostics", "print-loc",
    "stats",         "emit",             "cuda-arch",
    "mcpu",          "codegen-opt"};

/* Reports an unknown option a, with the option it most likely misspells. */
static void unknown_option(const char *a) {
  size_t nopts = sizeof option_names / sizeof option_names[0], npasses;
  const raf_pass_info *passes = raf_pass_list(&npasses);
  const char **names = malloc((nopts + npasses) * sizeof *names);
  const char *word = a + strspn(a, "-"), *near = NULL;
  if (names) {
    memcpy(names, option_names, sizeof option_names);
    for (size_t i = 0; i < npasses; i++)
      names[nopts + i] = passes[i].name;
    near = raf_suggest(word, strcspn(word, "="), names, nopts + npasses);
  }
  if (near)
    fprintf(stderr, "raf-opt: unknown option '%s'; did you mean '--%s'?\n", a,
            near);
  else
    fprintf(stderr, "raf-opt: unknown option '%s' (see --help)\n", a);
  free(names);
}

/* --print-ir-before and --print-ir-after name a registered pass. */
static bool check_pass_flag(const char *flag, const char *name) {
  const char *near;
  if (raf_pass_lookup(name, &near))
    return true;
  if (near)
    fprintf(stderr, "raf-opt: %s: unknown pass '%s'; did you mean '%s'?\n",
            flag, name, near);
  else
    fprintf(stderr, "raf-opt: %s: unknown pass '%s' (see --list-passes)\n",
            flag, name);
  return false;
}

/* --cuda-arch names an architecture the NVPTX backend knows. */
static bool check_cuda_arch(const char *arch) {
  size_t n;
  const char *const *archs = raf_cg_cuda_archs(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(archs[i], arch) == 0)
      return true;
  const char *near = raf_suggest(arch, strlen(arch), archs, n);
  fprintf(stderr, "raf-opt: unknown --cuda-arch=%s", arch);
  if (near)
    fprintf(stderr, "; did you mean '%s'?", near);
  fprintf(stderr, " (known:");
  for (size_t i = 0; i < n; i++)
    fprintf(stderr, " %s", archs[i]);
  fprintf(stderr, ")\n");
  return false;
}

/* Parses argv; returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, options *o, raf_pipeline *pl) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("raf-opt %s\n", RAF_VERSION);
      return 0;
    } else if (strcmp(a, "--list-passes") == 0) {
      size_t n;
      const raf_pass_info *p = raf_pass_list(&n);
      for (size_t k = 0; k < n; k++)
        printf("%-16s %s\n", p[k].name, p[k].summary);
      return 0;
    } else if (strcmp(a, "-o") == 0) {
      if (++i == argc) {
        fprintf(stderr, "raf-opt: -o needs a file name\n");
        return 2;
      }
      o->output = argv[i];
    } else if (strcmp(a, "-p") == 0 || (v = flag_value(a, "--pass-pipeline"))) {
      if (a[1] == 'p' && ++i == argc) {
        fprintf(stderr, "raf-opt: -p needs a pipeline\n");
        return 2;
      }
      if (raf_pipeline_parse(pl, a[1] == 'p' ? argv[i] : v) != RAF_OK)
        return 2;
    } else if (strcmp(a, "--verify-each") == 0) {
      o->pipe.verify_each = true;
    } else if (strcmp(a, "--no-verify-each") == 0) {
      o->pipe.verify_each = false;
    } else if (strcmp(a, "--time-passes") == 0) {
      o->pipe.time_passes = true;
    } else if ((v = flag_value(a, "--print-ir-before"))) {
      if (!check_pass_flag("--print-ir-before", v))
        return 2;
      o->pipe.print_before = v;
    } else if ((v = flag_value(a, "--print-ir-after"))) {
      if (!check_pass_flag("--print-ir-after", v))
        return 2;
      o->pipe.print_after = v;
    } else if (strcmp(a, "--print-ir-after-all") == 0) {
      o->pipe.print_after_all = true;
    } else if ((v = flag_value(a, "--opt-bisect-limit"))) {
      char *end;
      long n = strtol(v, &end, 10);
      if (*end || end == v || n < -1) {
        fprintf(stderr, "raf-opt: bad --opt-bisect-limit '%s'\n", v);
        return 2;
      }
      o->pipe.bisect_limit = (int)n;
    } else if ((v = flag_value(a, "--dialects"))) {
      /* Shorthand for --dispatch="dialects=...", in command-line order. */
      char opts[512];
      snprintf(opts, sizeof opts, "dialects=%s", v);
      if (raf_pipeline_add(pl, "dispatch", opts) != RAF_OK)
        return 2;
    } else if (strcmp(a, "--split-input-file") == 0) {
      o->split = true;
    } else if (strcmp(a, "--verify-diagnostics") == 0) {
      o->verify_diags = true;
    } else if (strcmp(a, "--print-loc") == 0) {
      o->print_loc = true;
    } else if (strcmp(a, "--stats") == 0) {
      o->stats = true;
    } else if ((v = flag_value(a, "--emit"))) {
      if (strcmp(v, "raf") == 0)
        o->emit = EMIT_RAF;
      else if (strcmp(v, "dot") == 0)
        o->emit = EMIT_DOT;
      else if (strcmp(v, "llvm") == 0)
        o->emit = EMIT_LLVM;
      else if (strcmp(v, "ptx") == 0)
        o->emit = EMIT_PTX;
      else {
        fprintf(stderr, "raf-opt: unknown --emit=%s (raf, dot, llvm, ptx)\n",
                v);
        return 2;
      }
    } else if ((v = flag_value(a, "--cuda-arch"))) {
      if (!check_cuda_arch(v))
        return 2;
      o->cuda_arch = v;
    } else if ((v = flag_value(a, "--mcpu"))) {
      o->mcpu = v;
    } else if ((v = flag_value(a, "--codegen-opt"))) {
      if (strcmp(v, "0") != 0 && strcmp(v, "3") != 0) {
        fprintf(stderr, "raf-opt: bad --codegen-opt=%s (0, 3)\n", v);
        return 2;
      }
      o->codegen_unopt = v[0] == '0';
    } else if (a[0] == '-' && a[1] == '-' &&
               is_pass(a + 2, strcspn(a + 2, "="))) {
      size_t len = strcspn(a + 2, "=");
      char name[128];
      snprintf(name, sizeof name, "%.*s", (int)len, a + 2);
      const char *opts = a[2 + len] == '=' ? a + 3 + len : NULL;
      if (raf_pipeline_add(pl, name, opts) != RAF_OK)
        return 2;
    } else if (a[0] == '-' && a[1] != 0) {
      unknown_option(a);
      return 2;
    } else if (o->input) {
      fprintf(stderr, "raf-opt: more than one input file ('%s', '%s')\n",
              o->input, a);
      return 2;
    } else {
      o->input = a;
    }
  }
  return -1;
}

/* --stats: the statement count, then each function's tensor memory and
 * what it saves for backward (docs/Memory.md), and its cost. */
static void print_stats(raf_module *m) {
  fprintf(stderr, "raf-opt: %zu statements\n", raf_module_stmt_count(m));
  size_t n = raf_module_memory_stats(m, NULL, 0);
  raf_memory_stats *st = calloc(n + 1, sizeof *st);
  if (!st)
    return;
  raf_module_memory_stats(m, st, n);
  for (size_t i = 0; i < n; i++) {
    fprintf(stderr, "raf-opt: memory @%s: ", st[i].func);
    if (st[i].planned)
      fprintf(stderr,
              "planned peak %lld bytes (arguments %lld, arena %lld, own "
              "results %lld, calls' arenas %lld); ",
              (long long)st[i].peak, (long long)st[i].args,
              (long long)st[i].arena, (long long)st[i].results,
              (long long)st[i].calls);
    else
      fprintf(stderr, "not planned; ");
    fprintf(stderr,
            "unplanned %lld bytes (a buffer per value), %lld at most live "
            "(freed after last use)\n",
            (long long)st[i].unplanned, (long long)st[i].live);
    if (st[i].saved >= 0)
      fprintf(stderr,
              "raf-opt: saved for backward @%s: %lld bytes (%d values)\n",
              st[i].func, (long long)st[i].saved, st[i].nsaved);
    fprintf(stderr, "raf-opt: cost @%s: %.6g FLOPs, %.6g bytes moved\n",
            st[i].func, st[i].flops, st[i].moved);
  }
  free(st);
}

/* Parses, verifies, transforms and prints one chunk into out. Returns true
 * on success (or, with --verify-diagnostics, when the diagnostics matched). */
static bool process(raf_ctx *ctx, options *o, raf_pipeline *pl,
                    const char *name, const char *text, size_t len,
                    uint32_t first_line, FILE *out) {
  size_t before = raf_diag_count(ctx);
  raf_module *m = raf_parse_module(ctx, name, text, len, first_line);
  bool ok = m != NULL;
  if (ok)
    ok = raf_verify_module(ctx, m) == RAF_OK;
  if (ok)
    ok = raf_pipeline_run(pl, m, &o->pipe) == RAF_OK;
  if (ok) {
    if (o->emit == EMIT_DOT) {
      raf_print_dot(m, out);
    } else if (o->emit == EMIT_LLVM || o->emit == EMIT_PTX) {
      raf_cg_emit_options eo = {
          o->emit == EMIT_PTX ? RAF_CG_EMIT_PTX : RAF_CG_EMIT_LLVM,
          o->cuda_arch, o->mcpu, !o->codegen_unopt};
      ok = raf_cg_emit(ctx, m, &eo, out) == RAF_OK;
    } else {
      raf_print_module(m, out, o->print_loc ? RAF_PRINT_LOC : 0);
    }
    if (o->stats)
      print_stats(m);
  }
  raf_module_destroy(m);
  if (o->verify_diags)
    return raf_opt_verify_diagnostics(ctx, before, name, text, len,
                                      first_line, stderr);
  return ok;
}

/* Is the line at p a split marker "// -----"? */
static bool is_marker(const char *p, const char *end) {
  return end - p >= 8 && memcmp(p, "// -----", 8) == 0;
}

int main(int argc, char **argv) {
  raf_ctx *ctx = raf_ctx_create();
  raf_pipeline *pl = ctx ? raf_pipeline_create(ctx) : NULL;
  if (!pl) {
    fprintf(stderr, "raf-opt: out of memory\n");
    return 1;
  }
  options o = {0};
  raf_pipeline_options_init(&o.pipe);
  int status = parse_args(argc, argv, &o, pl);
  if (status >= 0) {
    raf_diag_render(ctx, stderr);
    raf_pipeline_destroy(pl);
    raf_ctx_destroy(ctx);
    return status;
  }
  o.pipe.print_flags = o.print_loc ? RAF_PRINT_LOC : 0;

  bool from_stdin = !o.input || strcmp(o.input, "-") == 0;
  const char *name = from_stdin ? "<stdin>" : o.input;
  FILE *in = from_stdin ? stdin : fopen(o.input, "rb");
  size_t len = 0;
  char *text = in ? raf_read_stream(in, &len) : NULL;
  if (in && !from_stdin)
    fclose(in);
  if (!text) {
    fprintf(stderr, "raf-opt: cannot read '%s'\n", name);
    raf_pipeline_destroy(pl);
    raf_ctx_destroy(ctx);
    return 1;
  }

  /* Output is kept only on success: a regular file is written under a
   * temporary name and renamed at the end (as LLVM's ToolOutputFile does);
   * stdout gets the text collected in memory; a device is written as is. */
  char *outbuf = NULL, *tmp_name = NULL;
  size_t outlen = 0;
  bool to_stdout = !o.output || strcmp(o.output, "-") == 0;
  FILE *out = NULL;
  struct stat st;
  if (to_stdout) {
    out = open_memstream(&outbuf, &outlen);
  } else if (stat(o.output, &st) == 0 && !S_ISREG(st.st_mode)) {
    out = fopen(o.output, "wb");
  } else {
    size_t n = strlen(o.output) + 16;
    tmp_name = malloc(n);
    int fd = -1;
    if (tmp_name) {
      snprintf(tmp_name, n, "%s.tmp-XXXXXX", o.output);
      fd = mkstemp(tmp_name);
    }
    out = fd >= 0 ? fdopen(fd, "wb") : NULL;
  }
  if (!out)
    fprintf(stderr, "raf-opt: cannot write '%s'\n",
            to_stdout ? "<stdout>" : o.output);
  bool ok = out != NULL;
  o.pipe.report = stderr;
  if (ok && !o.split) {
    ok = process(ctx, &o, pl, name, text, len, 1, out);
  } else if (ok) {
    const char *p = text, *end = text + len, *chunk = text;
    uint32_t line = 1, chunk_line = 1;
    bool first = true;
    for (;;) {
      bool at_end = p >= end;
      if (at_end || is_marker(p, end)) {
        if (!first)
          fputs("// -----\n", out);
        first = false;
        ok &= process(ctx, &o, pl, name, chunk, (size_t)(p - chunk),
                      chunk_line, out);
        if (!o.verify_diags) {
          raf_diag_render(ctx, stderr);
          raf_diag_clear(ctx);
        }
        if (at_end)
          break;
      }
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      bool marker = is_marker(p, end);
      p = nl ? nl + 1 : end;
      line++;
      if (marker) {
        chunk = p;
        chunk_line = line;
      }
    }
  }
  if (out && fclose(out) != 0)
    ok = false;
  if (!o.verify_diags)
    raf_diag_render(ctx, stderr);
  if (ok && to_stdout && fwrite(outbuf, 1, outlen, stdout) != outlen)
    ok = false;
  if (tmp_name) {
    if (ok && rename(tmp_name, o.output) != 0) {
      fprintf(stderr, "raf-opt: cannot write '%s'\n", o.output);
      ok = false;
    }
    if (!ok)
      remove(tmp_name);
  }
  free(tmp_name);
  free(outbuf);
  free(text);
  raf_pipeline_destroy(pl);
  raf_ctx_destroy(ctx);
  return ok ? 0 : 1;
}
