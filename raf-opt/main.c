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

/* The options: enum flag_id and FLAGS, from flags.def. */
#define RAF_CLI_FLAGS "raf-opt/flags.def"
#include "ir/cli_table.h"

static void usage(FILE *f) {
  size_t n;
  const raf_pass_info *passes = raf_pass_list(&n);
  fprintf(f,
          "usage: raf-opt [options] [passes] [input.raf | -] [-o output]\n\n"
          "Reads a .raf module (stdin when no file or '-'), runs the passes in\n"
          "command-line order and prints the result.\n\n"
          "Passes (see --list-passes):\n");
  char left[96];
  for (size_t i = 0; i < n; i++) {
    snprintf(left, sizeof left, "--%s", passes[i].name);
    raf_cli_usage_line(f, left, passes[i].summary);
  }
  raf_cli_usage_line(f, "--PASS=\"k=v ...\"", "a pass with options");
  fprintf(f, "\nOptions:\n");
  raf_cli_usage_line(f, "-o FILE", "output file ('-': stdout)");
  raf_cli_usage(f, FLAGS, FLAG_COUNT);
}

static bool is_pass(const char *name, size_t len) {
  char buf[128];
  snprintf(buf, sizeof buf, "%.*s", (int)len, name);
  return len < sizeof buf && raf_pass_lookup(buf, NULL);
}

/* Reports an unknown option a, with the option or pass it most likely
 * misspells. */
static void unknown_option(const char *a) {
  size_t npasses;
  const raf_pass_info *passes = raf_pass_list(&npasses);
  const char **names = malloc((npasses + 1) * sizeof *names);
  for (size_t i = 0; names && i < npasses; i++)
    names[i] = passes[i].name;
  raf_cli_unknown("raf-opt", a, FLAGS, FLAG_COUNT, names, names ? npasses : 0);
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
/* Applies option id with its value v (NULL for a switch); returns -1 to
 * go on, else an exit status. */
static int apply_flag(flag_id id, const char *v, options *o,
                      raf_pipeline *pl) {
  switch (id) {
  case FLAG_HELP:
    usage(stdout);
    return 0;
  case FLAG_VERSION:
    printf("raf-opt %s\n", RAF_VERSION);
    return 0;
  case FLAG_LIST_PASSES: {
    size_t n;
    const raf_pass_info *p = raf_pass_list(&n);
    for (size_t k = 0; k < n; k++)
      printf("%-16s %s\n", p[k].name, p[k].summary);
    return 0;
  }
  case FLAG_PASS_PIPELINE:
    return raf_pipeline_parse(pl, v) == RAF_OK ? -1 : 2;
  case FLAG_DIALECTS: {
    /* Shorthand for --dispatch="dialects=...", in command-line order. */
    char opts[512];
    snprintf(opts, sizeof opts, "dialects=%s", v);
    return raf_pipeline_add(pl, "dispatch", opts) == RAF_OK ? -1 : 2;
  }
  case FLAG_VERIFY_EACH: o->pipe.verify_each = true; return -1;
  case FLAG_NO_VERIFY_EACH: o->pipe.verify_each = false; return -1;
  case FLAG_TIME_PASSES: o->pipe.time_passes = true; return -1;
  case FLAG_PRINT_IR_BEFORE:
    if (!check_pass_flag("--print-ir-before", v))
      return 2;
    o->pipe.print_before = v;
    return -1;
  case FLAG_PRINT_IR_AFTER:
    if (!check_pass_flag("--print-ir-after", v))
      return 2;
    o->pipe.print_after = v;
    return -1;
  case FLAG_PRINT_IR_AFTER_ALL: o->pipe.print_after_all = true; return -1;
  case FLAG_OPT_BISECT_LIMIT: {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || end == v || n < -1) {
      fprintf(stderr, "raf-opt: bad --opt-bisect-limit '%s'\n", v);
      return 2;
    }
    o->pipe.bisect_limit = (int)n;
    return -1;
  }
  case FLAG_SPLIT_INPUT_FILE: o->split = true; return -1;
  case FLAG_VERIFY_DIAGNOSTICS: o->verify_diags = true; return -1;
  case FLAG_PRINT_LOC: o->print_loc = true; return -1;
  case FLAG_STATS: o->stats = true; return -1;
  case FLAG_EMIT: {
    static const char *const forms[] = {"raf", "dot", "llvm", "ptx"};
    for (int k = 0; k < 4; k++)
      if (strcmp(v, forms[k]) == 0) {
        o->emit = k;
        return -1;
      }
    fprintf(stderr, "raf-opt: unknown --emit=%s (raf, dot, llvm, ptx)\n", v);
    return 2;
  }
  case FLAG_CUDA_ARCH:
    if (!check_cuda_arch(v))
      return 2;
    o->cuda_arch = v;
    return -1;
  case FLAG_MCPU: o->mcpu = v; return -1;
  case FLAG_CODEGEN_OPT:
    if (strcmp(v, "0") != 0 && strcmp(v, "3") != 0) {
      fprintf(stderr, "raf-opt: bad --codegen-opt=%s (0, 3)\n", v);
      return 2;
    }
    o->codegen_unopt = v[0] == '0';
    return -1;
  case FLAG_COUNT: break;
  }
  return -1;
}

/* Parses argv; returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, options *o, raf_pipeline *pl) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    /* The short forms: -h, -o FILE, -p PIPELINE. */
    if (strcmp(a, "-h") == 0)
      return apply_flag(FLAG_HELP, NULL, o, pl);
    if (strcmp(a, "-o") == 0 || strcmp(a, "-p") == 0) {
      if (++i == argc) {
        fprintf(stderr, "raf-opt: %s needs %s\n", a,
                a[1] == 'o' ? "a file name" : "a pipeline");
        return 2;
      }
      int rc = -1;
      if (a[1] == 'o')
        o->output = argv[i];
      else
        rc = apply_flag(FLAG_PASS_PIPELINE, argv[i], o, pl);
      if (rc >= 0)
        return rc;
      continue;
    }
    size_t len = a[0] == '-' && a[1] == '-' ? strcspn(a + 2, "=") : 0;
    const char *v;
    int id = raf_cli_find(FLAGS, FLAG_COUNT, a, &v);
    if (id >= 0) {
      if (!raf_cli_value_ok("raf-opt", &FLAGS[id], v))
        return 2;
      int rc = apply_flag((flag_id)id, v, o, pl);
      if (rc >= 0)
        return rc;
    } else if (len && is_pass(a + 2, len)) {
      char name[128];
      snprintf(name, sizeof name, "%.*s", (int)len, a + 2);
      v = a[2 + len] == '=' ? a + 3 + len : NULL;
      if (raf_pipeline_add(pl, name, v) != RAF_OK)
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
