/* cli.h: the command-line tools' flag tables (ir/cli.c).
 *
 * Each tool lists its options once, in its flags.def (raf-opt/flags.def,
 * raf-run/flags.def), as rows of this shape; the help text, the
 * did-you-mean names and the parser's lookup are all read from the rows,
 * and test/docs/check_docs.py holds each tool's page to them.
 */
#ifndef RAF_CLI_H
#define RAF_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct raf_cli_flag {
  const char *name;  /* without "--" */
  const char *value; /* the value's form after '='; NULL for a switch;
                        "[N]" when the value may be left out */
  const char *help;  /* "\n" continues it on the next line */
} raf_cli_flag;

/* "  LEFT" padded to the help column, then help, its continuation lines
 * at that column too. */
void raf_cli_usage_line(FILE *f, const char *left, const char *help);
/* Every row, as "--name[=value]" and its help. */
void raf_cli_usage(FILE *f, const raf_cli_flag *flags, int n);

/* The row of arg ("--name" or "--name=value"), or -1; *value gets the
 * part after '=' (NULL when there is none). */
int raf_cli_find(const raf_cli_flag *flags, int n, const char *arg,
                 const char **value);

/* Whether flag takes value as given: a switch none, an option one (or
 * none when it is optional). Otherwise says so on stderr as "TOOL: ...". */
bool raf_cli_value_ok(const char *tool, const raf_cli_flag *flag,
                      const char *value);

/* Reports the unknown option arg on stderr, with the name of flags (or of
 * more[0..nmore), a tool's other option names) it most likely misspells. */
void raf_cli_unknown(const char *tool, const char *arg,
                     const raf_cli_flag *flags, int n,
                     const char *const *more, size_t nmore);

#endif
