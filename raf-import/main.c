/* raf-import: ONNX models to .raf, in the manner of mlir-translate.
 *
 *   raf-import model.onnx -o model.raf [--function=NAME]
 *              [--specialize=INPUT=@FILE.npy ...] [--bf16-io=f32]
 *
 * Writes the graph as one .raf function, verified and printed canonically,
 * and the initializers it uses as data to model.safetensors (the output's
 * stem), which `raf-run --load=model.safetensors` reads. Every node that
 * cannot be imported is reported, then the exit status is 1; so is a file
 * that is not an ONNX model. Outputs are written only on success.
 */
#include "raf-import/translate.h"
#include "runtime/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: raf-import MODEL.onnx [-o OUT.raf] [options]\n\n"
          "Imports an ONNX model as a .raf function. Initializers used as\n"
          "data become {param} arguments ({state} for integers), their\n"
          "values written to OUT's stem + .safetensors (for raf-run --load).\n"
          "Without -o the module goes to stdout (then --params names the\n"
          "safetensors file if there are initializers).\n\n"
          "options:\n"
          "  -o FILE                    the .raf output\n"
          "  --params=FILE              the safetensors output (default: "
          "OUT's stem)\n"
          "  --function=NAME            the function's name (default: the "
          "graph's)\n"
          "  --specialize=INPUT=@F.npy  the value of graph input INPUT, "
          "used where\n"
          "                             .raf needs an attribute (a shape, "
          "axes) and\n"
          "                             for a symbolic input shape\n"
          "  --bf16-io=f32              bf16 inputs and outputs travel as f32 "
          "(.npy\n"
          "                             has no bf16), cast inside\n"
          "  -h, --help                 this text\n");
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *data = raf_read_stream(f, len);
  fclose(f);
  return data;
}

static bool valid_function_name(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
    return false;
  for (s++; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
      return false;
  return true;
}

/* OUT.raf -> OUT.safetensors */
static char *params_path(const char *out) {
  size_t n = strlen(out);
  const char *slash = strrchr(out, '/');
  const char *dot = strrchr(out, '.');
  if (dot && (!slash || dot > slash))
    n = (size_t)(dot - out);
  char *p = malloc(n + sizeof ".safetensors");
  if (p) {
    memcpy(p, out, n);
    strcpy(p + n, ".safetensors");
  }
  return p;
}

static bool load_spec(imp *im, raf_ctx *ctx, const char *arg) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq[1] != '@') {
    fprintf(stderr, "raf-import: --specialize needs INPUT=@FILE.npy, not "
                    "'%s'\n", arg);
    return false;
  }
  raf_npy a;
  if (raf_npy_read(ctx, eq + 2, &a) != RAF_OK) {
    raf_diag_render(ctx, stderr);
    return false;
  }
  imp_tensor *t = imp_tensor_for_data(im, a.dtype, a.rank, a.dims);
  if (t)
    memcpy(t->data, a.data, (size_t)a.numel * (size_t)raf_dtype_size(a.dtype));
  raf_npy_free(&a);
  if (!t)
    return false;
  char *name = raf_arena_strndup(&im->arena, arg, (size_t)(eq - arg));
  if (!name)
    return false;
  imp_specialize(im, name, t);
  return true;
}

int main(int argc, char **argv) {
  const char *input = NULL, *output = NULL, *params = NULL;
  imp_options opt = {0};
  const char **specs = calloc((size_t)argc, sizeof *specs);
  int nspecs = 0;
  if (!specs)
    return 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      free(specs);
      return 0;
    } else if (!strcmp(a, "-o") && i + 1 < argc) {
      output = argv[++i];
    } else if (!strncmp(a, "--function=", 11)) {
      opt.function = a + 11;
      if (!valid_function_name(opt.function)) {
        fprintf(stderr, "raf-import: --function=%s: not a .raf function "
                        "name ([A-Za-z_][A-Za-z0-9_.]*)\n", opt.function);
        free(specs);
        return 1;
      }
    } else if (!strncmp(a, "--params=", 9)) {
      params = a + 9;
    } else if (!strncmp(a, "--specialize=", 13)) {
      specs[nspecs++] = a + 13;
    } else if (!strcmp(a, "--bf16-io=f32")) {
      opt.bf16_io_as_f32 = true;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "raf-import: unknown option '%s'\n", a);
      usage(stderr);
      free(specs);
      return 1;
    } else if (!input) {
      input = a;
    } else {
      fprintf(stderr, "raf-import: more than one input file ('%s')\n", a);
      free(specs);
      return 1;
    }
  }
  if (!input) {
    usage(stderr);
    free(specs);
    return 1;
  }
  size_t len = 0;
  char *bytes = read_file(input, &len);
  if (!bytes) {
    fprintf(stderr, "raf-import: %s: cannot read the file\n", input);
    free(specs);
    return 1;
  }
  raf_ctx *ctx = raf_ctx_create();
  imp im;
  imp_init(&im, input, &opt);
  bool ok = ctx != NULL;
  for (int i = 0; ok && i < nspecs; i++)
    ok = load_spec(&im, ctx, specs[i]);
  raf_module *mod = ok ? imp_translate(&im, ctx, bytes, len) : NULL;
  free(bytes);
  for (int i = 0; i < im.nerrors; i++)
    fprintf(stderr, "raf-import: error: %s\n", im.errors[i]);
  if (ctx && raf_diag_count(ctx))
    raf_diag_render(ctx, stderr);
  if (ok && !mod && im.nerrors > 1)
    fprintf(stderr, "raf-import: %d errors; nothing written\n", im.nerrors);
  ok = ok && mod;

  /* the initializers first: a failure leaves no .raf that lacks them */
  char *ppath = NULL;
  int nparams = ok ? imp_param_tensors(&im, NULL) : 0;
  if (ok && nparams) {
    ppath = params ? strdup(params) : output ? params_path(output) : NULL;
    if (!ppath) {
      fprintf(stderr, "raf-import: the model has initializers: give -o or "
                      "--params for their safetensors file\n");
      ok = false;
    } else {
      raf_st_tensor *ts = calloc((size_t)nparams, sizeof *ts);
      const char *meta[] = {"producer", "raf-import " RAF_VERSION, NULL};
      ok = ts && (imp_param_tensors(&im, ts),
                  raf_safetensors_write(ctx, ppath, ts, nparams, meta) ==
                      RAF_OK);
      free(ts);
      if (!ok)
        raf_diag_render(ctx, stderr);
    }
  }
  if (ok) {
    FILE *out = output ? fopen(output, "w") : stdout;
    if (!out) {
      fprintf(stderr, "raf-import: %s: cannot write the file\n", output);
      ok = false;
    } else {
      raf_print_module(mod, out, 0);
      if (output && fclose(out) != 0) {
        fprintf(stderr, "raf-import: %s: write error\n", output);
        ok = false;
      }
    }
  }
  free(ppath);
  if (mod)
    raf_module_destroy(mod);
  imp_free(&im);
  raf_ctx_destroy(ctx);
  free(specs);
  return ok ? 0 : 1;
}
