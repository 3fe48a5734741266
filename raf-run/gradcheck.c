/* gradcheck.c: raf-run --gradcheck, the gradients of the autodiff pass
 * checked against central finite differences.
 *
 *   raf-run model.raf --function=f --gradcheck [--grad-tol=1e-4]
 *           [--grad-eps=1e-5] [--grad-samples=64] --input=...
 *
 * The module is copied (printed with its locations and parsed again, so
 * diagnostics still point at the user's file), and in the copy every
 * floating-point type becomes f64: arguments, results, statement results,
 * constants (converted) and cast targets. The copy is then differentiated
 * (autodiff{func=f}) and dispatched. Everything below runs in f64, so the
 * check measures the gradient rules, not the rounding of a low-precision
 * model, and the finite differences are accurate to about 1e-10.
 *
 * The arguments are f's own (given, loaded or initialised as for a run),
 * widened to f64. @f_grad runs once for the analytic gradients; then, for
 * each param and up to --grad-samples of its elements (all of them when it
 * has no more, else elements spread evenly over it), the copy of @f runs at
 * x + h and x - h with h = eps * max(1, |x|), and the numeric derivative is
 * (f(x + h) - f(x - h)) / ((x + h) - (x - h)). The relative error of an
 * element is |analytic - numeric| / max(|analytic|, |numeric|, 1e-3 * S),
 * where S is the largest |numeric| of the param's checked elements: an
 * element whose gradient is tiny next to its param's is judged against
 * the param's scale, where finite differences have their noise. Each
 * param's worst error is reported with its element; the check fails when
 * one exceeds --grad-tol. Finite differences cannot see through a kink
 * (relu at 0, max at a tie): inputs should keep away from them.
 *
 * The copy runs on an executor of its own, on a device of --device's kind;
 * the elements it perturbs and the losses and gradients it reads are
 * copied one at a time through that device.
 */
#include "raf-run/gradcheck.h"
#include "passes/training.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- The f64 copy of the module ------------------------------------------ */

static raf_type *widen(raf_module *m, raf_type *t) {
  if (!t || !raf_dtype_is_float(t->dtype) || t->dtype == RAF_F64)
    return t;
  return raf_type_with_dtype(m, t, RAF_F64);
}

/* Attributes without the memory plan's `name`. */
static void drop_attr(raf_attrs *a, const char *name) {
  int n = 0;
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->v[i].name, name) != 0)
      a->v[n++] = a->v[i];
  a->n = n;
}

/* Every float type of m becomes f64, and dialect annotations go (dispatch
 * chooses again for the new types), and so does the memory plan (the
 * sizes change; raf_exec runs the copy unplanned). False when out of
 * memory. */
static bool widen_module(raf_module *m) {
  for (raf_func *f = m->first; f; f = f->next) {
    drop_attr(&f->attrs, "arena");
    for (int i = 0; i < f->nresults; i++)
      drop_attr(&f->results[i].attrs, "donated");
    for (int i = 0; i < f->nargs; i++)
      if (!(f->args[i].value->type = widen(m, f->args[i].value->type)))
        return false;
    for (int i = 0; i < f->nresults; i++)
      if (!(f->results[i].type = widen(m, f->results[i].type)))
        return false;
    for (raf_stmt *s = f->first; s; s = s->next) {
      if (s->op == RAF_OP_CONSTANT && s->cdata) {
        raf_dtype dt = s->results[0]->type->dtype;
        if (raf_dtype_is_float(dt) && dt != RAF_F64) {
          const raf_const *c = s->cdata;
          raf_const *w = RAF_NEW(&m->arena, raf_const);
          double *data = RAF_NEW_ARRAY(&m->arena, double,
                                       c->count ? c->count : 1);
          if (!w || !data)
            return false;
          for (int64_t k = 0; k < c->count; k++)
            data[k] = raf_const_get_f64(dt, c, k);
          *w = (raf_const){c->count, c->splat, data};
          s->cdata = w;
        }
      }
      int n = 0;
      raf_attr *kept = s->attrs.n ? RAF_NEW_ARRAY(&m->arena, raf_attr,
                                                  s->attrs.n)
                                  : NULL;
      if (s->attrs.n && !kept)
        return false;
      for (int i = 0; i < s->attrs.n; i++) {
        raf_attr a = s->attrs.v[i];
        if (strcmp(a.name, "dialect") == 0 || strcmp(a.name, "offsets") == 0 ||
            strcmp(a.name, "inplace") == 0)
          continue;
        if (s->op == RAF_OP_CAST && a.kind == RAF_ATTR_DTYPE &&
            raf_dtype_is_float(a.val.u.dt))
          a.val.u.dt = RAF_F64;
        kept[n++] = a;
      }
      s->attrs.v = kept;
      s->attrs.n = n;
      for (int i = 0; i < s->nresults; i++)
        if (!(s->results[i]->type = widen(m, s->results[i]->type)))
          return false;
    }
  }
  return true;
}

static raf_module *f64_copy(raf_ctx *ctx, const raf_module *m) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem)
    return NULL;
  raf_print_module(m, mem, RAF_PRINT_LOC);
  if (fclose(mem) != 0) {
    free(text);
    return NULL;
  }
  raf_module *g = raf_parse_module(ctx, "<gradcheck>", text, len, 1);
  free(text);
  if (g && (!widen_module(g) || raf_verify_module(ctx, g) != RAF_OK)) {
    raf_module_destroy(g);
    g = NULL;
  }
  return g;
}

/* ---- Checking ------------------------------------------------------------ */

/* flat as "[i,j,..]" of type t. */
static void index_str(const raf_type *t, int64_t flat, char *buf,
                      size_t size) {
  int64_t idx[RAF_MAX_RANK];
  for (int d = t->rank - 1; d >= 0; d--) {
    idx[d] = t->dims[d] ? flat % t->dims[d] : 0;
    flat = t->dims[d] ? flat / t->dims[d] : 0;
  }
  size_t k = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < t->rank && k < size; d++)
    k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? "," : "",
                          (long long)idx[d]);
  if (k < size)
    snprintf(buf + k, size - k, "]");
}

/* Element e of an f64 tensor, and its store. */
static raf_status get_f64(raf_exec *ex, const raf_tensor *t, int64_t e,
                          double *v) {
  return raf_exec_read(ex, t, (size_t)e * sizeof *v, v, sizeof *v);
}
static raf_status set_f64(raf_exec *ex, raf_tensor *t, int64_t e, double v) {
  return raf_exec_write(ex, t, (size_t)e * sizeof v, &v, sizeof v);
}

/* The loss of fg at args (f64). */
static raf_status loss_at(raf_exec *ex, raf_func *fg, raf_tensor **args,
                          double *loss) {
  raf_tensor *r[1] = {NULL};
  if (raf_exec_call(ex, fg, args, r) != RAF_OK)
    return RAF_ERROR;
  raf_status rc = get_f64(ex, r[0], 0, loss);
  raf_exec_free(ex, r[0]);
  return rc;
}

typedef struct param_check {
  double worst, analytic, numeric;
  int64_t at, checked;
} param_check;

/* Checks the gradient `grad` of argument i of fg. */
static raf_status check_param(raf_exec *ex, raf_func *fg, raf_tensor **args,
                              int i, const raf_tensor *grad,
                              const rr_gradcheck_options *o,
                              param_check *pc) {
  raf_tensor *x = args[i];
  int64_t n = x->type->numel, k = n < o->samples ? n : o->samples;
  double *an = malloc(sizeof *an * (size_t)(k + 1));
  double *nu = malloc(sizeof *nu * (size_t)(k + 1));
  int64_t *el = malloc(sizeof *el * (size_t)(k + 1));
  raf_status rc = an && nu && el ? RAF_OK : RAF_ERROR;
  double scale = 0;
  for (int64_t s = 0; s < k && rc == RAF_OK; s++) {
    int64_t e = k == n ? s : (int64_t)((double)s * (double)n / (double)k);
    double x0 = 0;
    if ((rc = get_f64(ex, x, e, &x0)) != RAF_OK)
      break;
    double h = o->eps * (fabs(x0) > 1 ? fabs(x0) : 1), lp = 0, lm = 0;
    double xp = x0 + h, xm = x0 - h;
    rc = set_f64(ex, x, e, xp);
    if (rc == RAF_OK)
      rc = loss_at(ex, fg, args, &lp);
    if (rc == RAF_OK)
      rc = set_f64(ex, x, e, xm);
    if (rc == RAF_OK)
      rc = loss_at(ex, fg, args, &lm);
    if (rc == RAF_OK)
      rc = set_f64(ex, x, e, x0);
    el[s] = e;
    if (rc == RAF_OK)
      rc = get_f64(ex, grad, e, &an[s]);
    nu[s] = (lp - lm) / (xp - xm);
    if (fabs(nu[s]) > scale)
      scale = fabs(nu[s]);
  }
  *pc = (param_check){-1, 0, 0, -1, rc == RAF_OK ? k : 0};
  for (int64_t s = 0; s < pc->checked; s++) {
    double d = fabs(an[s]) > fabs(nu[s]) ? fabs(an[s]) : fabs(nu[s]);
    if (d < 1e-3 * scale)
      d = 1e-3 * scale;
    double err = d > 0 ? fabs(an[s] - nu[s]) / d : 0;
    if (!(err <= pc->worst)) { /* NaN counts as the worst */
      *pc = (param_check){err, an[s], nu[s], el[s], pc->checked};
      if (isnan(err))
        break;
    }
  }
  if (pc->worst < 0) /* no element */
    pc->worst = 0;
  free(an);
  free(nu);
  free(el);
  return rc;
}

raf_status rr_gradcheck(raf_ctx *ctx, raf_exec *args_ex, const raf_module *m,
                        const raf_func *f, raf_tensor *const *args,
                        const rr_gradcheck_options *o, FILE *out,
                        bool *failed) {
  raf_module *g = f64_copy(ctx, m);
  if (!g)
    return RAF_ERROR;
  char opt[300], dopt[600];
  snprintf(opt, sizeof opt, "func=%s", f->name);
  snprintf(dopt, sizeof dopt, "device=%s%s%s",
           raf_device_kind_name(o->device), o->dialects ? " dialects=" : "",
           o->dialects ? o->dialects : "");
  raf_pipeline *pl = raf_pipeline_create(ctx);
  raf_status rc = pl && raf_pipeline_add(pl, "autodiff", opt) == RAF_OK &&
                          raf_pipeline_add(pl, "dispatch", dopt) == RAF_OK &&
                          raf_pipeline_run(pl, g, NULL) == RAF_OK
                      ? RAF_OK
                      : RAF_ERROR;
  raf_pipeline_destroy(pl);
  raf_func *fg = rc == RAF_OK ? raf_module_find_func(g, f->name) : NULL;
  raf_func *gg = fg ? raf_training_grad_func(g, fg) : NULL;
  raf_exec_options eo = {.threads = o->threads};
  raf_exec *ex = NULL;
  if (fg && gg && raf_device_open(ctx, o->device, 0, &eo.device) == RAF_OK)
    ex = raf_exec_create(ctx, g, &eo); /* the device is the executor's */
  raf_tensor **wide = calloc((size_t)f->nargs + 1, sizeof *wide);
  raf_tensor **res = gg ? calloc((size_t)gg->nresults + 1, sizeof *res) : NULL;
  rc = ex && wide && res ? RAF_OK : RAF_ERROR;
  for (int i = 0; i < f->nargs && rc == RAF_OK; i++) {
    /* Widened on the host, from f's arguments where the host reads them. */
    raf_type *t = fg->args[i].value->type;
    void *staged, *host = NULL;
    const void *from = raf_exec_host_data(args_ex, args[i], &staged);
    size_t bytes = (size_t)t->numel * (size_t)raf_dtype_size(t->dtype);
    if (!from || !(wide[i] = raf_exec_alloc(ex, t)) ||
        !(host = malloc(bytes ? bytes : 1))) {
      rc = RAF_ERROR;
    } else {
      raf_elem_convert(t->dtype, host, args[i]->type->dtype, from, t->numel);
      rc = raf_exec_write(ex, wide[i], 0, host, bytes);
    }
    free(host);
    free(staged);
  }
  if (rc == RAF_OK)
    rc = raf_exec_call(ex, gg, wide, res);
  double loss = 0;
  if (rc == RAF_OK)
    rc = get_f64(ex, res[0], 0, &loss);
  if (rc == RAF_OK) {
    fprintf(out, "gradcheck @%s: loss %.10g, eps %g, up to %ld elements per "
            "param, in f64\n", f->name, loss, o->eps, o->samples);
  }
  double worst = 0;
  int nparams = 0, bad = 0;
  for (int i = 0, k = 1; i < f->nargs && rc == RAF_OK; i++) {
    if (!raf_arg_flag(&f->args[i], "param"))
      continue;
    param_check pc;
    rc = check_param(ex, fg, wide, i, res[k++], o, &pc);
    if (rc != RAF_OK)
      break;
    char ty[128], at[160];
    raf_type_str(f->args[i].value->type, ty, sizeof ty);
    nparams++;
    fprintf(out, "  %%%s %s: %lld of %lld elements", f->args[i].value->name,
            ty, (long long)pc.checked, (long long)f->args[i].value->type->numel);
    if (pc.at >= 0) {
      index_str(f->args[i].value->type, pc.at, at, sizeof at);
      fprintf(out, ", worst relative error %.3g at %s (autodiff %.10g, "
              "finite difference %.10g)", pc.worst, at, pc.analytic,
              pc.numeric);
    }
    bool ok = pc.worst <= o->tol;
    fprintf(out, "%s\n", ok ? "" : "  <- above --grad-tol");
    bad += !ok;
    if (!(pc.worst <= worst))
      worst = pc.worst;
  }
  if (rc == RAF_OK) {
    if (bad)
      fprintf(out, "[FAILED] %d of %d params above --grad-tol=%g\n", bad,
              nparams, o->tol);
    else
      fprintf(out, "[SUCCESS] %d params, worst relative error %.3g <= "
              "--grad-tol=%g\n", nparams, worst, o->tol);
    *failed = bad > 0;
  }
  for (int i = 0; ex && wide && i < f->nargs; i++)
    raf_exec_free(ex, wide[i]);
  for (int r = 0; ex && res && r < gg->nresults; r++)
    raf_exec_free(ex, res[r]);
  free(wide);
  free(res);
  raf_exec_destroy(ex);
  raf_module_destroy(g);
  return rc;
}
