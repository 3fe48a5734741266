/* cli_table.h: a tool's flag table, expanded from its flags.def (ir/cli.h).
 * Include it once in the tool's main.c after defining RAF_CLI_FLAGS as
 * the path of its flags.def:
 *
 *   #define RAF_CLI_FLAGS "raf-opt/flags.def"
 *   #include "ir/cli_table.h"
 *
 * to get `enum flag_id` (FLAG_<ID> per row, then FLAG_COUNT) and the rows
 * as `static const raf_cli_flag FLAGS[FLAG_COUNT]`. No include guard: it
 * defines a tool's own table. */
#include "ir/cli.h"

typedef enum flag_id {
#define FLAG(ID, name, value, help) FLAG_##ID,
#include RAF_CLI_FLAGS
#undef FLAG
  FLAG_COUNT
} flag_id;

static const raf_cli_flag FLAGS[FLAG_COUNT] = {
#define FLAG(ID, name, value, help) [FLAG_##ID] = {name, value, help},
#include RAF_CLI_FLAGS
#undef FLAG
};
