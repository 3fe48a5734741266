/* fp.h: the interpreter's floating-point helpers (fp.c). Internal. */
#ifndef RAF_PTX_FP_H
#define RAF_PTX_FP_H

#include "ptx_internal.h"

/* Operations with a rounding mode, on f32 and on f64. */
enum ptx_fop {
  PTX_FOP_ADD, PTX_FOP_SUB, PTX_FOP_MUL, PTX_FOP_DIV, PTX_FOP_FMA,
  PTX_FOP_SQRT, PTX_FOP_RCP, PTX_FOP_RSQRT, PTX_FOP_EX2, PTX_FOP_LG2,
  PTX_FOP_SIN, PTX_FOP_COS, PTX_FOP_TANH
};
double ptx_f64_op(int fop, int round, double a, double b, double c);
float ptx_f32_op(int fop, int round, float a, float b, float c);

#endif
