/* cache.c: the on-disk kernel cache (see cache.h). */
#include "codegen/cache.h"

#include <llvm-c/Core.h>
#include <llvm-c/blake3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "RAFKOBJ\n"
#define FORMAT 1u

typedef struct header {
  char magic[8];
  uint32_t format, reserved;
  uint8_t key[16];
  uint64_t size;
  uint8_t sum[16];
} header;

/* mkdir -p; true when dir exists as a directory afterwards. */
static bool make_dirs(char *dir) {
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    mkdir(dir, 0755);
    *p = '/';
  }
  mkdir(dir, 0755);
  struct stat st;
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
         access(dir, W_OK | X_OK) == 0;
}

bool cg_cache_dir(char *dir, size_t size) {
  const char *env = getenv("RAF_CACHE_DIR");
  int n;
  if (env) {
    if (!*env)
      return false;
    n = snprintf(dir, size, "%s", env);
  } else if (getenv("XDG_CACHE_HOME") && *getenv("XDG_CACHE_HOME")) {
    n = snprintf(dir, size, "%s/raf/kernels", getenv("XDG_CACHE_HOME"));
  } else if (getenv("HOME") && *getenv("HOME")) {
    n = snprintf(dir, size, "%s/.cache/raf/kernels", getenv("HOME"));
  } else {
    return false;
  }
  if (n <= 0 || (size_t)n >= size - 64) /* room for the file names */
    return false;
  return make_dirs(dir);
}

cg_key cg_key_of(const char *const *pieces) {
  llvm_blake3_hasher h;
  llvm_blake3_hasher_init(&h);
  for (int i = 0; pieces[i]; i++) /* the NUL separates the pieces */
    llvm_blake3_hasher_update(&h, pieces[i], strlen(pieces[i]) + 1);
  cg_key k;
  llvm_blake3_hasher_finalize(&h, k.b, sizeof k.b);
  return k;
}

void cg_key_hex(const cg_key *k, char out[33]) {
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", k->b[i]);
}

static void checksum(const void *data, size_t size, uint8_t out[16]) {
  llvm_blake3_hasher h;
  llvm_blake3_hasher_init(&h);
  llvm_blake3_hasher_update(&h, data, size);
  llvm_blake3_hasher_finalize(&h, out, 16);
}

/* Bumped whenever the lowering changes what a given IR compiles to. */
#define CODEGEN_VERSION "raf-codegen-1"

void cg_cache_version(char *out, size_t size) {
  unsigned major, minor, patch;
  LLVMGetVersion(&major, &minor, &patch);
  snprintf(out, size, "LLVM %u.%u.%u " CODEGEN_VERSION, major, minor, patch);
}

static void entry_path(const char *dir, const cg_key *k, const char *ext,
                       char *path, size_t size) {
  char hex[33];
  cg_key_hex(k, hex);
  snprintf(path, size, "%s/%s%s", dir, hex, ext);
}

cg_cache_result cg_cache_read(const char *dir, const cg_key *k,
                              const char *ext, void **data, size_t *size) {
  char path[4200];
  entry_path(dir, k, ext, path, sizeof path);
  FILE *f = fopen(path, "rb");
  if (!f)
    return CG_CACHE_MISS;
  header h;
  cg_cache_result r = CG_CACHE_CORRUPT;
  void *buf = NULL;
  struct stat st;
  if (fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, MAGIC, 8) == 0 &&
      h.format == FORMAT && memcmp(h.key, k->b, 16) == 0 &&
      fstat(fileno(f), &st) == 0 &&
      (uint64_t)st.st_size == sizeof h + h.size && h.size > 0 &&
      (buf = malloc((size_t)h.size)) &&
      fread(buf, 1, (size_t)h.size, f) == h.size) {
    uint8_t sum[16];
    checksum(buf, (size_t)h.size, sum);
    if (memcmp(sum, h.sum, 16) == 0) {
      *data = buf;
      *size = (size_t)h.size;
      buf = NULL;
      r = CG_CACHE_HIT;
    }
  }
  free(buf);
  fclose(f);
  return r;
}

bool cg_cache_write(const char *dir, const cg_key *k, const char *ext,
                    const void *data, size_t size) {
  char path[4200], tmp[4300];
  entry_path(dir, k, ext, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0)
    return false;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    close(fd);
    unlink(tmp);
    return false;
  }
  header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, MAGIC, 8);
  h.format = FORMAT;
  memcpy(h.key, k->b, 16);
  h.size = size;
  checksum(data, size, h.sum);
  bool ok = fwrite(&h, sizeof h, 1, f) == 1 &&
            fwrite(data, 1, size, f) == size;
  ok &= fclose(f) == 0;
  if (ok) {
    chmod(tmp, 0644);
    ok = rename(tmp, path) == 0;
  }
  if (!ok)
    unlink(tmp);
  return ok;
}

/* ---- The cache for the runtime (codegen.h) ------------------------------- */

void *raf_cg_cache_get(const char *const *pieces, const char *ext,
                       size_t *size) {
  char dir[4096];
  void *data = NULL;
  *size = 0;
  if (!cg_cache_dir(dir, sizeof dir))
    return NULL;
  cg_key k = cg_key_of(pieces);
  if (cg_cache_read(dir, &k, ext, &data, size) == CG_CACHE_HIT)
    return data;
  free(data);
  *size = 0;
  return NULL;
}

bool raf_cg_cache_put(const char *const *pieces, const char *ext,
                      const void *data, size_t size) {
  char dir[4096];
  if (!cg_cache_dir(dir, sizeof dir))
    return false;
  cg_key k = cg_key_of(pieces);
  return cg_cache_write(dir, &k, ext, data, size);
}
