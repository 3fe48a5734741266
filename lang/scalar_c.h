/* scalar_c.h: the words of lang/scalar.def as C, for the files that expand
 * the table into C (the cpu-ref kernels, canonicalize's folding).
 *
 * The expanding function declares what the words read: `typedef float
 * work_t;` or `typedef double work_t;` (the working type, to which K
 * rounds constants), the operands x, y and dy of that type, and a bool
 * tanh_approx (IF_TANH's choice for the statement). The math library's
 * function is chosen by the operand's type (expf for float, exp for
 * double), so that float computes in float, as the LLVM lowering does.
 * Include <math.h> before, and lang/scalar_end.h after the last
 * expansion.
 */
#define RAF_SCALAR_MATH(fn, a) _Generic((a), float: fn##f, default: fn)(a)
#define X x
#define Y y
#define DY dy
#define K(c) ((work_t)(c))
#define NEG(a) (-(a))
#define ADD(a, b) ((a) + (b))
#define SUB(a, b) ((a) - (b))
#define MUL(a, b) ((a) * (b))
#define DIV(a, b) ((a) / (b))
#define FABS(a) RAF_SCALAR_MATH(fabs, a)
#define SQRT(a) RAF_SCALAR_MATH(sqrt, a)
#define EXP(a) RAF_SCALAR_MATH(exp, a)
#define LOG(a) RAF_SCALAR_MATH(log, a)
#define TANH(a) RAF_SCALAR_MATH(tanh, a)
#define ERF(a) RAF_SCALAR_MATH(erf, a)
#define COS(a) RAF_SCALAR_MATH(cos, a)
#define SIN(a) RAF_SCALAR_MATH(sin, a)
#define POW(a, b) _Generic((a), float: powf, default: pow)(a, b)
#define LT(a, b) ((a) < (b))
#define LE(a, b) ((a) <= (b))
#define GT(a, b) ((a) > (b))
#define GE(a, b) ((a) >= (b))
#define EQ(a, b) ((a) == (b))
#define NE(a, b) ((a) != (b))
#define UNORDERED(a, b) (isnan(a) || isnan(b))
#define SELECT(c, a, b) ((c) ? (a) : (b))
#define IF_TANH(a, b) (tanh_approx ? (a) : (b))
