/* dce.c: dead-code elimination.
 *
 * A statement is dead when none of its results is used. Every op of the
 * language is pure (a call runs a function, which is pure dataflow too;
 * dropout's mask is a function of its key; collectives run the same program
 * on every device), so a dead statement can go without changing what the
 * function computes. `return` is the one statement that is never dead: it
 * is what the function computes.
 *
 * The walk goes backwards, from the return to the first statement. In
 * straight-line SSA every user of a value comes after its definition, so by
 * the time the walk reaches a statement, all of its users have been visited
 * and, when dead, already erased: one walk reaches the fixpoint, and a dead
 * chain of any length disappears in linear time with no worklist.
 *
 * Values named by attributes are not on use lists; the only such attribute
 * is a result's {updates = %arg}, which names an argument, never a
 * statement result, so it cannot keep a statement alive.
 *
 * Requires: a verified module (use lists right, return last).
 * Preserves: everything else: the order, names, locations and attributes
 * of the statements that stay; function signatures; the functions
 * themselves (an uncalled function is not dead code: it may be an entry).
 *
 * raf_erase_dead is also what canonicalize and inline call to clean up after
 * themselves (declared in passes/pass.h).
 */
#include "passes/pass.h"

static bool is_dead(const raf_stmt *s) {
  if (s->op == RAF_OP_RETURN)
    return false;
  for (int i = 0; i < s->nresults; i++)
    if (raf_value_has_uses(s->results[i]))
      return false;
  return true;
}

size_t raf_erase_dead(raf_func *f) {
  size_t erased = 0;
  for (raf_stmt *s = f->last, *prev; s; s = prev) {
    prev = s->prev; /* s may be unlinked below */
    if (is_dead(s)) {
      raf_stmt_erase(s);
      erased++;
    }
  }
  return erased;
}

raf_status raf_pass_dce(raf_module *m, const raf_pass_args *args) {
  (void)args;
  for (raf_func *f = m->first; f; f = f->next)
    raf_erase_dead(f);
  return RAF_OK;
}
