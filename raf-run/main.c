/* raf-run: runs a function of a .raf module, in the manner of IREE's
 * iree-run-module.
 *
 *   raf-run model.raf --function=NAME --input=x=@x.npy --input=w=1,2,3
 *           [--output=@out.npy] [--expected-output=@ref.npy]
 *           [--steps=N --dataset=x=@train.npy --log=run.jsonl]
 *           [--save=ckpt.safetensors [--save-every=N] [--resume]]
 *           [--load=ckpt.safetensors]
 *           [--gradcheck [--grad-tol=X]]   (gradcheck.c)
 *           [--print=summary|full|none] [--device=cpu|cuda]
 *   raf-run --device=cuda --list-devices
 *   mpirun -np N raf-run step.raf ...    (a sharded step; dist.c)
 *
 * The files: args.c reads the command line (flags.def, options.h);
 * session.c puts a run together over the executor of include/raf/run.h;
 * train.c makes the arguments and runs the steps; values.c reads and
 * prints tensors; checkpoint.c, dist.c, gradcheck.c and profile.c are
 * --save/--load/--resume, mpirun, --gradcheck and --profile. See docs/raf-run.md.
 */
#include "raf-run/args.h"
#include "raf-run/session.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The options are large (thousands of --input slots): not on the stack. */
static rr_options options;

int main(int argc, char **argv) {
  /* Where OpenBLAS fell back to its generic kernels on a CPU it did not
   * recognise, start again telling it the CPU's; if exec fails, go on
   * with the generic ones. */
  const char *core = rr_openblas_core();
  if (core && setenv("OPENBLAS_CORETYPE", core, 1) == 0)
    execv("/proc/self/exe", argv);
  int status = rr_parse_args(argc, argv, &options);
  if (status < 0 && options.list_devices)
    status = rr_list_devices(&options);
  if (status < 0)
    status = rr_session(&options);
  rr_free_options(&options);
  return status;
}
