/* lower_nvptx.c: the NVPTX schedule of a kernel plan (lower.h), the launch
 * geometry being schedule.c's (cg_gpu_schedule, plan.h).
 *
 *   flat:  no row ops: thread gid = blockIdx.x * blockDim.x + threadIdx.x
 *          takes points gid, gid + grid threads, ... of F in C order (the
 *          plan's dims all made outer), so a warp stores 32 adjacent
 *          elements of a C-order result, broadcast operands included;
 *   warp:  rows up to 1,024 elements: a warp per row, each lane walking
 *          the row's elements lane, lane + 32, ..., its partial sums and
 *          maxima combined by shfl.sync butterflies (every lane gets the
 *          whole, bit for bit the same);
 *   block: longer rows: a block of 512 per row: shfl.sync within each warp,
 *          then each warp's value through shared memory (bar.sync before
 *          and after), every thread adding the warps' values in order;
 *   tile:  reductions over leading dims (bias gradients): 32 columns per
 *          block, 8 threads down each, combined through shared memory;
 *   final: a total's second stage: one block of 256 threads adds up the
 *          per-row losses the first kernel stored, shfl.sync and shared
 *          memory, and thread 0 stores the results.
 *
 * The row loop's step is uniform over a block (rows_per_block rows per
 * block, grid-strided): a slot past the last row runs the last row again
 * and stores nothing, so that every thread of a block meets every
 * bar.sync. Only lane 0 of a row stores the row's results.
 *
 * The values combined are of the row's type (lower_rows.c's acc_type): float
 * for f32, f16 and bf16 rows (one 32-bit shfl.sync per butterfly, float
 * adds), double only for f64 rows (two shuffles per butterfly); a shared
 * memory slot is 8 bytes either way.
 *
 * Each kernel declares the block size it is launched with as its
 * `.maxntid` (the nvvm.annotations entry "maxntidx"): ptxas can then
 * budget registers for that many threads and no more, and a launch with
 * a larger block fails rather than running a kernel built for fewer.
 */
#include "codegen/lower.h"

#include <stdio.h>
#include <string.h>

/* A special register (tid.x, ntid.x, ctaid.x, nctaid.x) as i64. */
static LLVMValueRef sreg(cg_emitter *e, const char *reg) {
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s", reg);
  LLVMTypeRef ft = LLVMFunctionType(e->i32, NULL, 0, false);
  LLVMValueRef f = LLVMGetNamedFunction(e->M, name);
  if (!f)
    f = LLVMAddFunction(e->M, name, ft);
  return LLVMBuildZExt(e->B, LLVMBuildCall2(e->B, ft, f, NULL, 0, ""), e->i64,
                       "");
}

static LLVMValueRef call(cg_emitter *e, const char *name, LLVMTypeRef ret,
                         LLVMTypeRef *params, LLVMValueRef *args, int n) {
  LLVMTypeRef ft = LLVMFunctionType(ret, params, (unsigned)n, false);
  LLVMValueRef f = LLVMGetNamedFunction(e->M, name);
  if (!f)
    f = LLVMAddFunction(e->M, name, ft);
  return LLVMBuildCall2(e->B, ft, f, args, (unsigned)n, "");
}

static void barrier(cg_emitter *e) {
  call(e, "llvm.nvvm.barrier0", e->void_, NULL, NULL, 0);
}

/* v's bits as i64 (zero-extended), and back to type t. */
static LLVMValueRef to_bits(cg_emitter *e, LLVMValueRef v) {
  switch (LLVMGetTypeKind(LLVMTypeOf(v))) {
  case LLVMDoubleTypeKind:
    return LLVMBuildBitCast(e->B, v, e->i64, "");
  case LLVMFloatTypeKind:
    v = LLVMBuildBitCast(e->B, v, e->i32, "");
    break;
  case LLVMHalfTypeKind:
    v = LLVMBuildBitCast(e->B, v, e->i16, "");
    break;
  default:
    break;
  }
  if (LLVMGetIntTypeWidth(LLVMTypeOf(v)) < 64)
    v = LLVMBuildZExt(e->B, v, e->i64, "");
  return v;
}

static LLVMValueRef from_bits(cg_emitter *e, LLVMValueRef b, LLVMTypeRef t) {
  switch (LLVMGetTypeKind(t)) {
  case LLVMDoubleTypeKind:
    return LLVMBuildBitCast(e->B, b, t, "");
  case LLVMFloatTypeKind:
    return LLVMBuildBitCast(e->B, LLVMBuildTrunc(e->B, b, e->i32, ""), t, "");
  case LLVMHalfTypeKind:
    return LLVMBuildBitCast(e->B, LLVMBuildTrunc(e->B, b, e->i16, ""), t, "");
  default:
    return LLVMGetIntTypeWidth(t) < 64 ? LLVMBuildTrunc(e->B, b, t, "") : b;
  }
}

static LLVMValueRef shfl32(cg_emitter *e, LLVMValueRef v, int mask) {
  LLVMTypeRef params[4] = {e->i32, e->i32, e->i32, e->i32};
  LLVMValueRef args[4] = {LLVMConstInt(e->i32, 0xffffffffu, false), v,
                          LLVMConstInt(e->i32, (unsigned)mask, false),
                          LLVMConstInt(e->i32, 0x1f, false)};
  return call(e, "llvm.nvvm.shfl.sync.bfly.i32", e->i32, params, args, 4);
}

/* The value of lane (this lane ^ mask) of the warp: shfl.sync.bfly, in two
 * halves for 64-bit values. */
static LLVMValueRef shfl_xor(cg_emitter *e, LLVMValueRef v, int mask) {
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMValueRef b = to_bits(e, v);
  LLVMValueRef lo = shfl32(e, LLVMBuildTrunc(e->B, b, e->i32, ""), mask);
  LLVMValueRef r = LLVMBuildZExt(e->B, lo, e->i64, "");
  bool wide = LLVMGetTypeKind(t) == LLVMDoubleTypeKind ||
              (LLVMGetTypeKind(t) == LLVMIntegerTypeKind &&
               LLVMGetIntTypeWidth(t) > 32);
  if (wide) {
    LLVMValueRef hi = shfl32(
        e,
        LLVMBuildTrunc(e->B,
                       LLVMBuildLShr(e->B, b, LLVMConstInt(e->i64, 32, false),
                                     ""),
                       e->i32, ""),
        mask);
    r = LLVMBuildOr(e->B, r,
                    LLVMBuildShl(e->B, LLVMBuildZExt(e->B, hi, e->i64, ""),
                                 LLVMConstInt(e->i64, 32, false), ""),
                    "");
  }
  return from_bits(e, r, t);
}

static LLVMValueRef combine(cg_emitter *e, cg_combine op, raf_dtype dt,
                            LLVMValueRef a, LLVMValueRef b) {
  if (op == CG_ADD)
    return raf_dtype_is_float(dt) ? LLVMBuildFAdd(e->B, a, b, "")
                                  : LLVMBuildAdd(e->B, a, b, "");
  return cg_max(e, dt, a, b, op == CG_MIN);
}

/* Over the 32 lanes of a warp, by butterflies: a + b and b + a are the
 * same bits, so every lane ends with the same value. */
static LLVMValueRef warp_combine(cg_emitter *e, cg_combine op, raf_dtype dt,
                                 LLVMValueRef v) {
  for (int m = 16; m >= 1; m /= 2)
    v = combine(e, op, dt, v, shfl_xor(e, v, m));
  return v;
}

static LLVMValueRef smem_at(cg_emitter *e, LLVMValueRef i) {
  LLVMValueRef at[2] = {cg_i64(e, 0), i};
  return LLVMBuildInBoundsGEP2(
      e->B, LLVMArrayType2(e->i64, (unsigned)e->smem_len), e->smem, at, 2, "");
}

LLVMValueRef cg_lanes_combine(cg_emitter *e, cg_combine op, raf_dtype dt,
                              LLVMValueRef v) {
  if (e->lanes <= 1)
    return v;
  LLVMTypeRef t = LLVMTypeOf(v);
  if (e->layout == CG_GPU_WARP)
    return warp_combine(e, op, dt, v);
  LLVMValueRef r;
  if (e->layout == CG_GPU_TILE) {
    /* smem[tid] = v; the column's lanes are slot + 32 k */
    LLVMBuildStore(e->B, to_bits(e, v), smem_at(e, e->tid));
    barrier(e);
    int per = e->smem_len / e->lanes;
    r = from_bits(e, LLVMBuildLoad2(e->B, e->i64, smem_at(e, e->slot), ""), t);
    for (int k = 1; k < e->lanes; k++) {
      LLVMValueRef at = LLVMBuildNSWAdd(e->B, e->slot, cg_i64(e, k * per), "");
      r = combine(e, op, dt, r,
                  from_bits(e, LLVMBuildLoad2(e->B, e->i64, smem_at(e, at), ""),
                            t));
    }
  } else { /* a block: warps, then the warps' values */
    v = warp_combine(e, op, dt, v);
    LLVMValueRef warp = LLVMBuildUDiv(e->B, e->lane, cg_i64(e, 32), "");
    LLVMValueRef first = LLVMBuildICmp(
        e->B, LLVMIntEQ, LLVMBuildURem(e->B, e->lane, cg_i64(e, 32), ""),
        cg_i64(e, 0), "");
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(e->C, e->fn, "w0");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(e->C, e->fn, "w");
    LLVMBuildCondBr(e->B, first, then, next);
    LLVMPositionBuilderAtEnd(e->B, then);
    LLVMBuildStore(e->B, to_bits(e, v), smem_at(e, warp));
    LLVMBuildBr(e->B, next);
    LLVMPositionBuilderAtEnd(e->B, next);
    barrier(e);
    r = from_bits(e, LLVMBuildLoad2(e->B, e->i64, smem_at(e, cg_i64(e, 0)), ""),
                  t);
    for (int k = 1; k < e->lanes / 32; k++)
      r = combine(e, op, dt, r,
                  from_bits(e,
                            LLVMBuildLoad2(e->B, e->i64,
                                           smem_at(e, cg_i64(e, k)), ""),
                            t));
  }
  barrier(e); /* every thread has read before the next reduction writes */
  return r;
}

/* The kernel's shared array of n i64 (NULL for none). */
static void make_smem(cg_emitter *e, const char *kernel, int bytes) {
  e->smem = NULL;
  e->smem_len = bytes / 8;
  if (!e->smem_len)
    return;
  char name[300];
  snprintf(name, sizeof name, "%s.smem", kernel);
  LLVMTypeRef t = LLVMArrayType2(e->i64, (unsigned)e->smem_len);
  e->smem = LLVMAddGlobalInAddressSpace(e->M, t, name, 3);
  LLVMSetLinkage(e->smem, LLVMInternalLinkage);
  LLVMSetInitializer(e->smem, LLVMGetUndef(t));
  LLVMSetAlignment(e->smem, 8);
}

/* Declares kernel f's block size, threads (launch() of emit.c launches it
 * with cg_gpu_schedule's, the same), as `.maxntid threads, 1, 1`. */
static void set_maxntid(cg_emitter *e, LLVMValueRef f, int threads) {
  LLVMMetadataRef md[3] = {
      LLVMValueAsMetadata(f), LLVMMDStringInContext2(e->C, "maxntidx", 8),
      LLVMValueAsMetadata(LLVMConstInt(e->i32, (unsigned)threads, 0))};
  LLVMAddNamedMetadataOperand(
      e->M, "nvvm.annotations",
      LLVMMetadataAsValue(e->C, LLVMMDNodeInContext2(e->C, md, 3)));
}

LLVMValueRef cg_lower_nvptx(cg_emitter *e, const char *name,
                            const char *final_name, int nbufs) {
  cg_gpu_sched s;
  cg_gpu_schedule(e->p, &s);
  LLVMValueRef kernel = cg_body_fn(e, name, nbufs, 0);
  set_maxntid(e, kernel, s.block);
  LLVMValueRef tid = sreg(e, "tid.x"), ctaid = sreg(e, "ctaid.x");
  LLVMValueRef nctaid = sreg(e, "nctaid.x");
  LLVMValueRef gid = LLVMBuildNSWAdd(
      e->B, LLVMBuildNSWMul(e->B, ctaid, cg_i64(e, s.block), ""), tid, "");
  LLVMValueRef first = LLVMBuildICmp(e->B, LLVMIntEQ, gid, cg_i64(e, 0), "");
  if (s.layout == CG_GPU_FLAT) {
    /* every dim outer: one point per item */
    const cg_plan *plan = e->p;
    cg_plan flat = *plan;
    flat.ncouter = flat.ncdims;
    flat.rows = s.items;
    flat.cols = 1;
    e->p = &flat;
    cg_emit_body(e, first, gid, cg_i64(e, s.items),
                 LLVMBuildNSWMul(e->B, nctaid, cg_i64(e, s.block), ""));
    e->p = plan;
  } else {
    make_smem(e, name, s.shared_bytes);
    e->layout = s.layout;
    e->lanes = s.lanes;
    e->tid = tid;
    if (s.layout == CG_GPU_TILE) {
      e->slot = LLVMBuildURem(e->B, tid, cg_i64(e, s.rows_per_block), "");
      e->lane = LLVMBuildUDiv(e->B, tid, cg_i64(e, s.rows_per_block), "");
    } else {
      e->slot = LLVMBuildUDiv(e->B, tid, cg_i64(e, s.lanes), "");
      e->lane = LLVMBuildURem(e->B, tid, cg_i64(e, s.lanes), "");
    }
    cg_emit_body(e, first,
                 LLVMBuildNSWMul(e->B, ctaid, cg_i64(e, s.rows_per_block), ""),
                 cg_i64(e, s.items),
                 LLVMBuildNSWMul(e->B, nctaid, cg_i64(e, s.rows_per_block),
                                 ""));
  }
  LLVMBuildRetVoid(e->B);
  e->slot = NULL;
  if (e->p->ntotals) { /* the second stage: one block */
    set_maxntid(e, cg_body_fn(e, final_name, nbufs, 0), s.final_block);
    make_smem(e, final_name, s.final_shared_bytes);
    e->layout = CG_GPU_BLOCK;
    e->lanes = s.final_block;
    e->tid = e->lane = sreg(e, "tid.x");
    e->owner = LLVMBuildICmp(e->B, LLVMIntEQ, e->lane, cg_i64(e, 0), "");
    cg_emit_final(e);
    LLVMBuildRetVoid(e->B);
  }
  e->lanes = 0;
  e->lane = e->tid = e->owner = e->active = e->smem = NULL;
  return kernel;
}
