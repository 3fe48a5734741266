/* training.c: the links between a model, its gradient function and its
 * training step (passes/training.h): the marks autodiff and the optimizer
 * write, and the names that stand in for them in older modules.
 */
#include "passes/training.h"
#include "passes/emit.h"

#include <stdlib.h>
#include <string.h>

int raf_func_nparams(const raf_func *g) {
  int n = 0;
  for (int i = 0; i < g->nargs; i++)
    n += raf_arg_flag(&g->args[i], "param");
  return n;
}

bool raf_is_grad_func(const raf_func *g, const char **why) {
  int nparams = raf_func_nparams(g);
  const raf_type *loss = g->nresults ? g->results[0].type : NULL;
  const char *bad = NULL;
  if (!loss || loss->rank != 0 || !raf_dtype_is_float(loss->dtype))
    bad = "its first result is not a scalar float loss";
  else if (nparams == 0)
    bad = "it has no {param} argument";
  else if (g->nresults < 1 + nparams)
    bad = "it does not return one gradient per {param} argument";
  for (int i = 0, r = 1; !bad && i < g->nargs; i++)
    if (raf_arg_flag(&g->args[i], "param") &&
        g->results[r++].type != g->args[i].value->type)
      bad = "a gradient's type differs from its param's";
  for (int r = 1 + nparams; !bad && r < g->nresults; r++)
    if (!raf_result_updates_state(g, r))
      bad = "a result after the gradients does not update a {state} "
            "argument";
  if (why)
    *why = bad;
  return bad == NULL;
}

bool raf_result_updates_state(const raf_func *f, int i) {
  const raf_arg *a = raf_result_updates(f, i);
  return a && raf_arg_flag(a, "state");
}

/* Whether name ends in suffix, with something before it. */
static bool ends_with(const char *name, const char *suffix) {
  size_t n = strlen(name), k = strlen(suffix);
  return n > k && strcmp(name + n - k, suffix) == 0;
}

static const raf_attr *func_mark(const raf_func *f, const char *name) {
  const raf_attr *a = raf_attrs_find(&f->attrs, name);
  return a && a->kind == RAF_ATTR_FUNC && a->val.u.func ? a : NULL;
}

static void name_note(raf_ctx *ctx, const raf_func *f, const char *mark,
                      const char *what) {
  if (ctx)
    raf_diag_report(ctx, f->loc, RAF_SEV_NOTE,
                    "@%s is taken for %s by its name: the passes now mark it "
                    "{%s = @...}, and a later version will need the mark "
                    "(run the pass that makes it again, or add the mark)",
                    f->name, what, mark);
}

bool raf_training_is_grad(raf_ctx *ctx, const raf_func *f) {
  if (func_mark(f, "grad_of"))
    return true;
  if (!ends_with(f->name, "_grad"))
    return false;
  name_note(ctx, f, "grad_of", "a gradient function");
  return true;
}

raf_func *raf_training_grad_func(raf_module *m, const raf_func *f) {
  for (raf_func *g = m->first; g; g = g->next) {
    const raf_attr *of = func_mark(g, "grad_of");
    if (of && of->val.u.func == f)
      return g;
  }
  return NULL;
}

raf_func *raf_training_step_grad(raf_ctx *ctx, raf_func *step,
                                 raf_stmt **call) {
  const raf_attr *mark = func_mark(step, "step_of");
  raf_func *g = mark ? mark->val.u.func : NULL;
  if (!g && !ends_with(step->name, "_train_step"))
    return NULL;
  size_t base = strlen(step->name) - strlen("_train_step");
  for (raf_stmt *s = step->first; s; s = s->next) {
    if (s->op != RAF_OP_CALL)
      continue;
    bool named = !g && strlen(s->callee->name) == base + strlen("_grad") &&
                 strncmp(s->callee->name, step->name, base) == 0 &&
                 ends_with(s->callee->name, "_grad");
    if (s->callee == g || named) {
      if (named)
        name_note(ctx, step, "step_of", "a training step");
      if (call)
        *call = s;
      return s->callee;
    }
  }
  return NULL;
}

char *raf_training_step_name(const raf_func *g) {
  const raf_attr *of = func_mark(g, "grad_of");
  const char *model = of ? of->val.u.func->name : g->name;
  size_t base = strlen(model);
  if (!of && ends_with(model, "_grad"))
    base -= strlen("_grad");
  char *name = malloc(base + sizeof "_train_step");
  if (name) {
    memcpy(name, model, base);
    strcpy(name + base, "_train_step");
  }
  return name;
}

static raf_status mark(raf_func *f, const char *name, raf_func *target) {
  raf_attr a = {.name = name, .kind = RAF_ATTR_FUNC, .val.u.func = target};
  return raf_attrs_set(f->module, &f->attrs, &a, f->loc);
}

raf_status raf_training_mark_grad(raf_func *g, raf_func *f) {
  return mark(g, "grad_of", f);
}

raf_status raf_training_mark_step(raf_func *step, raf_func *g) {
  return mark(step, "step_of", g);
}
