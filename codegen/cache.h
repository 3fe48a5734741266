/* cache.h: the on-disk kernel cache (codegen/ internal; the runtime
 * reaches it through raf_cg_cache_get/put, codegen.h).
 *
 * An entry is a compiled kernel keyed by 16 bytes of BLAKE3 over what it
 * was made from and everything that changes what is made from it: for the
 * JIT an object file (.o) keyed by the kernel's LLVM IR before
 * optimisation, the target triple, CPU, features and LLVM's version; for
 * the GPU the PTX (.ptx) of that IR for a CUDA architecture, and the
 * driver's cubin (.cubin) of a PTX for one GPU. The file <dir>/<hex
 * key><ext> holds a header (magic, format, key, payload size, 16 bytes of
 * BLAKE3 of the payload) and the payload. An
 * entry whose header or checksum does not match is treated as missing and
 * rewritten; writes go to a temporary file renamed into place, so readers
 * never see half an entry and concurrent writers do not collide.
 *
 * The directory: $RAF_CACHE_DIR when set (empty: no cache), else
 * $XDG_CACHE_HOME/raf/kernels, else $HOME/.cache/raf/kernels; created when
 * missing. No directory that can be made means no cache, not an error.
 */
#ifndef RAF_CODEGEN_CACHE_H
#define RAF_CODEGEN_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cg_key {
  uint8_t b[16];
} cg_key;

/* The cache directory into dir (size bytes); false when there is none. */
bool cg_cache_dir(char *dir, size_t size);

/* BLAKE3 of the concatenated pieces (NULL-terminated list of strings). */
cg_key cg_key_of(const char *const *pieces);
void cg_key_hex(const cg_key *k, char out[33]);

typedef enum cg_cache_result {
  CG_CACHE_HIT,
  CG_CACHE_MISS,
  CG_CACHE_CORRUPT /* present but unusable: to be rewritten */
} cg_cache_result;

/* "LLVM 19.1.7 raf-codegen-1": the versions a key includes, so that an
 * entry made by another LLVM or another lowering is never found. */
void cg_cache_version(char *out, size_t size);

/* Reads the entry for k with file extension ext (".o", ".ptx"): on a hit,
 * *data (malloc'd, the caller frees) and *size hold the payload. */
cg_cache_result cg_cache_read(const char *dir, const cg_key *k,
                              const char *ext, void **data, size_t *size);
/* Writes the entry for k; false when it could not (the cache is a
 * convenience: callers go on without it). */
bool cg_cache_write(const char *dir, const cg_key *k, const char *ext,
                    const void *data, size_t size);

#endif
