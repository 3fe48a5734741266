/* ptx_internal.h: the interpreter's records, shared by its parser
 * (parse.c), its instruction semantics (exec.c), its launches (launch.c)
 * and its floating-point helpers (fp.c). Not for the fake driver: it sees
 * ptx.h alone.
 *
 * A thread's registers are 64-bit slots. Every operand is a slot: the
 * parser puts each immediate, each symbol's address and each special
 * register (%tid.x, ...) in a slot of its own, filled when a frame starts,
 * so an instruction reads its operands without asking what they are.
 */
#ifndef RAF_PTX_INTERNAL_H
#define RAF_PTX_INTERNAL_H

#include "ptx.h"

#include <stdbool.h>
#include <stdint.h>

enum ptx_op {
#define OP(e, name) PTX_OP_##e,
#include "ops.def"
#undef OP
  PTX_OP_COUNT,
  /* forms the parser makes of mov with a vector operand */
  PTX_OP_PACK,   /* mov.b64 %rd, {%r1, %r2} */
  PTX_OP_UNPACK, /* mov.b64 {%r1, %r2}, %rd */
  PTX_OP_BARWARP /* bar.warp.sync */
};

/* TYPE(enum suffix, PTX name, bits, kind): kind 'b' bits, 'u' unsigned,
 * 's' signed, 'f' float, 'p' predicate. */
#define PTX_TYPES(X)                                                        \
  X(PRED, "pred", 1, 'p') X(B8, "b8", 8, 'b') X(B16, "b16", 16, 'b')        \
  X(B32, "b32", 32, 'b') X(B64, "b64", 64, 'b') X(B128, "b128", 128, 'b')   \
  X(U8, "u8", 8, 'u') X(U16, "u16", 16, 'u') X(U32, "u32", 32, 'u')         \
  X(U64, "u64", 64, 'u') X(S8, "s8", 8, 's') X(S16, "s16", 16, 's')         \
  X(S32, "s32", 32, 's') X(S64, "s64", 64, 's') X(F16, "f16", 16, 'f')      \
  X(F16X2, "f16x2", 32, 'f') X(BF16, "bf16", 16, 'f')                       \
  X(BF16X2, "bf16x2", 32, 'f') X(F32, "f32", 32, 'f') X(F64, "f64", 64, 'f')

enum ptx_type {
  PTX_T_NONE,
#define X(e, name, bits, kind) PTX_T_##e,
  PTX_TYPES(X)
#undef X
  PTX_T_COUNT
};

extern const unsigned char ptx_type_bits[PTX_T_COUNT];
extern const char ptx_type_kind[PTX_T_COUNT];
extern const char *const ptx_type_names[PTX_T_COUNT];

/* State spaces; a generic address is one of the others by its window. */
enum ptx_space {
  PTX_GENERIC, PTX_GLOBAL, PTX_SHARED, PTX_LOCAL, PTX_PARAM, PTX_CONST
};

/* Generic addresses of shared and local memory: windows no device
 * pointer of the fake driver falls in (those have bit 63 set). A param
 * address at or above PTX_FRAME_PARAM is a call frame's, below it the
 * kernel's own parameters. */
#define PTX_SHARED_WINDOW ((uint64_t)0x100000000000)
#define PTX_LOCAL_WINDOW ((uint64_t)0x200000000000)
#define PTX_WINDOW_SIZE ((uint64_t)1 << 32)
#define PTX_FRAME_PARAM ((uint64_t)1 << 24)

/* Rounding of floats (.rn ...) and of floats to integers (.rni ...). */
enum ptx_round { PTX_RN, PTX_RZ, PTX_RM, PTX_RP, PTX_RNA, PTX_RNONE };

/* Modifier flags. */
enum {
  PTX_F_FTZ = 1 << 0, PTX_F_SAT = 1 << 1, PTX_F_NAN = 1 << 2,
  PTX_F_HI = 1 << 3, PTX_F_WIDE = 1 << 4, PTX_F_CC = 1 << 5,
  PTX_F_INTROUND = 1 << 6, PTX_F_TO = 1 << 7, PTX_F_SHIFTAMT = 1 << 8,
  PTX_F_LEFT = 1 << 9, PTX_F_CLAMP = 1 << 10, PTX_F_ARRIVE = 1 << 11,
  PTX_F_RELU = 1 << 12, PTX_F_NEG_C = 1 << 13, PTX_F_XORSIGN = 1 << 14,
  PTX_F_RED = 1 << 15 /* bar.red: a barrier that reduces a predicate */
};

/* setp/set comparisons, and their boolean combination. */
enum ptx_cmp {
  PTX_EQ, PTX_NE, PTX_LT, PTX_LE, PTX_GT, PTX_GE, PTX_LO, PTX_LS, PTX_HI,
  PTX_HS, PTX_EQU, PTX_NEU, PTX_LTU, PTX_LEU, PTX_GTU, PTX_GEU, PTX_NUM,
  PTX_NAN
};
enum ptx_boolop { PTX_BOOL_NONE, PTX_BOOL_AND, PTX_BOOL_OR, PTX_BOOL_XOR };
/* atom/red operations, shfl modes, vote modes, testp classes. */
enum ptx_atomop {
  PTX_ATOM_ADD, PTX_ATOM_MIN, PTX_ATOM_MAX, PTX_ATOM_EXCH, PTX_ATOM_CAS,
  PTX_ATOM_INC, PTX_ATOM_DEC, PTX_ATOM_AND, PTX_ATOM_OR, PTX_ATOM_XOR
};
enum ptx_shfl { PTX_SHFL_UP, PTX_SHFL_DOWN, PTX_SHFL_BFLY, PTX_SHFL_IDX };
enum ptx_vote { PTX_VOTE_ALL, PTX_VOTE_ANY, PTX_VOTE_UNI, PTX_VOTE_BALLOT };
enum ptx_barred { PTX_BARRED_POPC, PTX_BARRED_AND, PTX_BARRED_OR };
enum ptx_testp {
  PTX_TEST_FINITE, PTX_TEST_INFINITE, PTX_TEST_NUMBER, PTX_TEST_NAN,
  PTX_TEST_NORMAL, PTX_TEST_SUBNORMAL
};

/* Special registers: their slots are filled per thread (ptx_frame_start). */
enum ptx_sreg {
  PTX_SR_TID_X, PTX_SR_TID_Y, PTX_SR_TID_Z, PTX_SR_NTID_X, PTX_SR_NTID_Y,
  PTX_SR_NTID_Z, PTX_SR_CTAID_X, PTX_SR_CTAID_Y, PTX_SR_CTAID_Z,
  PTX_SR_NCTAID_X, PTX_SR_NCTAID_Y, PTX_SR_NCTAID_Z, PTX_SR_LANEID,
  PTX_SR_WARPID, PTX_SR_NWARPID, PTX_SR_SMID, PTX_SR_NSMID,
  PTX_SR_GRIDID, PTX_SR_LANEMASK_EQ, PTX_SR_LANEMASK_LT, PTX_SR_LANEMASK_LE,
  PTX_SR_LANEMASK_GT, PTX_SR_LANEMASK_GE, PTX_SR_CLOCK, PTX_SR_CLOCK64,
  PTX_SR_GLOBALTIMER, PTX_SR_DYNAMIC_SMEM_SIZE, PTX_SR_TOTAL_SMEM_SIZE,
  PTX_SR_WARPSZ, PTX_SR_COUNT
};

#define PTX_MAX_SRC 5
#define PTX_NO_SLOT (-1)

/* One decoded instruction. Operands are slot numbers of the frame's
 * registers; an address is [src[0] + offset] (src[0] may be a constant
 * slot holding a symbol's address). */
typedef struct ptx_insn {
  uint16_t op;         /* enum ptx_op */
  uint8_t type, type2; /* the instruction's type; cvt's source type */
  uint8_t round;       /* enum ptx_round */
  uint8_t space;       /* ld/st/atom/red/cvta/isspacep */
  uint8_t vec;         /* 1, 2, 4: ld/st.v2/.v4; dsts of unpack */
  uint8_t sub;         /* cmp, atom op, shfl or vote mode, testp class */
  uint8_t boolop;      /* setp/set's .and/.or/.xor */
  uint8_t nsrc, ndst;
  uint8_t guard_neg;   /* @!%p */
  int32_t guard;       /* predicate slot, or PTX_NO_SLOT */
  uint32_t flags;      /* PTX_F_* */
  uint32_t line;       /* in the PTX text */
  int32_t dst[4], src[PTX_MAX_SRC];
  int64_t offset;      /* of an address operand */
  int32_t target;      /* bra: instruction index; call: function index */
} ptx_insn;

/* A constant slot's initial value. */
typedef struct ptx_const {
  int32_t slot;
  bool local; /* a .local variable's offset: the frame's base is added */
  uint64_t value;
  bool dynamic_shared; /* the extern .shared array's offset, placed last */
} ptx_const;

/* A .param of a function (formal, return value or call-site variable):
 * where it lives in its frame's param area. */
typedef struct ptx_param {
  char *name;
  uint32_t offset, size;
  char kind; /* as ptx_kernel_param_kind */
} ptx_param;

typedef struct ptx_function {
  char *name;
  bool is_entry, defined;
  bool calls; /* has call instructions (its frames need a param area) */
  uint32_t line;
  ptx_insn *code;
  int ncode, code_cap;
  int nregs;          /* slots: registers, then constants, then sregs */
  int sreg_slot[PTX_SR_COUNT]; /* the slot of each special register, or -1 */
  ptx_const *consts;
  int nconsts, consts_cap;
  ptx_param *params; /* formals (entry: the kernel's) */
  int nparams;
  ptx_param *rets; /* a .func's return values */
  int nrets;
  uint32_t param_size;  /* bytes of the frame's param area */
  uint32_t local_size;  /* bytes of .local declared in the body */
  unsigned maxntid[3];  /* 0: none declared */
  unsigned reqntid[3];
  struct ptx_module *module;
} ptx_function;

struct ptx_kernel {
  ptx_function *fn;
};

/* A module-scope variable in .global, .const or .shared. */
typedef struct ptx_var {
  char *name;
  uint8_t space;
  uint32_t align;
  uint64_t size;     /* 0 for an extern .shared array (dynamic) */
  uint64_t address;  /* global/const: device address; shared: offset */
  unsigned char *init;
  void *host;        /* global/const: its storage */
} ptx_var;

struct ptx_module {
  int version_major, version_minor;
  int sm;             /* .target sm_XY as XY */
  ptx_function **fns;
  int nfns, fns_cap;
  ptx_kernel *kernels; /* one per entry */
  int nkernels;
  ptx_var *vars;
  int nvars, vars_cap;
  uint32_t static_shared; /* bytes of the module's .shared variables */
  uint32_t dynamic_align; /* the extern .shared array's alignment */
};

/* fp.c: IEEE conversions (fp.h has the arithmetic). */
uint16_t ptx_f16_from_double(double x, int round);
uint16_t ptx_bf16_from_double(double x, int round);
float ptx_f32_from_double(double x, int round);
double ptx_f16_to_double(uint16_t h);
double ptx_bf16_to_double(uint16_t h);
/* A 64-bit integer as a double rounded once by `round`; and as a double
 * rounded to odd (exact below 2^53), which rounds once more to f32, f16
 * or bf16 as the integer itself would. */
double ptx_f64_from_int(uint64_t v, bool is_signed, int round);
double ptx_int_to_odd_double(uint64_t v, bool is_signed);
/* A double rounded to an integral value by mode (rni: ties to even). */
double ptx_round_integral(double x, int round);
float ptx_flush_f32(float x); /* .ftz: subnormals to signed zero */


#endif
