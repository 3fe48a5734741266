/* hang_abort.c: an MPI_Abort that never returns, preloaded (LD_PRELOAD)
 * by test/dist/faults.py in front of Open MPI's to stand for an abort that
 * cannot reach mpirun (its host gone): raf-run's own guard must still end
 * the rank. MPI's header is not needed: the symbol is what is replaced. */
#include <unistd.h>

int MPI_Abort(void *comm, int code);

int MPI_Abort(void *comm, int code) {
  (void)comm, (void)code;
  for (;;)
    pause();
}
