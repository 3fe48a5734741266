/* cli.c: the command-line tools' flag tables (ir/cli.h): one way to print,
 * look up and check a tool's options, so that raf-opt and raf-run read
 * their flags.def alike and judge a misspelt option alike (raf_suggest).
 */
#include "ir/cli.h"
#include "include/raf/raf.h"

#include <stdlib.h>
#include <string.h>

/* The help column. */
enum { LEFT_WIDTH = 32 };

void raf_cli_usage_line(FILE *f, const char *left, const char *help) {
  if (strlen(left) > LEFT_WIDTH) /* too wide: the help on the next line */
    fprintf(f, "  %s\n  %-*s", left, LEFT_WIDTH, "");
  else
    fprintf(f, "  %-*s", LEFT_WIDTH, left);
  for (const char *h = help; *h; h++) {
    fputc(*h, f);
    if (*h == '\n')
      fprintf(f, "  %-*s", LEFT_WIDTH, "");
  }
  fputc('\n', f);
}

void raf_cli_usage(FILE *f, const raf_cli_flag *flags, int n) {
  char left[128];
  for (int i = 0; i < n; i++) {
    const char *v = flags[i].value;
    bool optional = v && v[0] == '[';
    if (!v)
      snprintf(left, sizeof left, "--%s", flags[i].name);
    else if (optional) /* "[N]" -> "--name[=N]" */
      snprintf(left, sizeof left, "--%s[=%.*s]", flags[i].name,
               (int)strlen(v) - 2, v + 1);
    else
      snprintf(left, sizeof left, "--%s=%s", flags[i].name, v);
    raf_cli_usage_line(f, left, flags[i].help);
  }
}

int raf_cli_find(const raf_cli_flag *flags, int n, const char *arg,
                 const char **value) {
  *value = NULL;
  if (arg[0] != '-' || arg[1] != '-')
    return -1;
  const char *name = arg + 2;
  size_t len = strcspn(name, "=");
  for (int i = 0; i < n; i++)
    if (strlen(flags[i].name) == len &&
        strncmp(flags[i].name, name, len) == 0) {
      *value = name[len] == '=' ? name + len + 1 : NULL;
      return i;
    }
  return -1;
}

bool raf_cli_value_ok(const char *tool, const raf_cli_flag *flag,
                      const char *value) {
  const char *v = flag->value;
  if (!v && value) {
    fprintf(stderr, "%s: --%s takes no value\n", tool, flag->name);
    return false;
  }
  if (v && v[0] != '[' && !value) {
    fprintf(stderr, "%s: --%s needs a value: --%s=%s\n", tool, flag->name,
            flag->name, v);
    return false;
  }
  return true;
}

void raf_cli_unknown(const char *tool, const char *arg,
                     const raf_cli_flag *flags, int n,
                     const char *const *more, size_t nmore) {
  const char **names = malloc(((size_t)n + nmore + 1) * sizeof *names);
  const char *word = arg + strspn(arg, "-"), *near = NULL;
  if (names) {
    for (int i = 0; i < n; i++)
      names[i] = flags[i].name;
    for (size_t i = 0; i < nmore; i++)
      names[(size_t)n + i] = more[i];
    near = raf_suggest(word, strcspn(word, "="), names, (size_t)n + nmore);
  }
  if (near)
    fprintf(stderr, "%s: unknown option '%s'; did you mean '--%s'?\n", tool,
            arg, near);
  else
    fprintf(stderr, "%s: unknown option '%s' (see --help)\n", tool, arg);
  free(names);
}
