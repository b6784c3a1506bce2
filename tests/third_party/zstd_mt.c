/* zstd_mt.c - drives the zstd library (its C sources come with the zstd-sys crate, a dependency
 * of reprise, built from the cargo registry by tests/third_party.rs with `reprise cc`) in its
 * multithreaded mode: two worker threads of zstd's own pool compress N bytes (argv[1], default
 * 8 MiB) of generated text in 1 MiB jobs; main decompresses and checks the round trip. Prints
 * the sizes and a hash of the compressed frame, which must not depend on the interleaving. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zstd.h"
int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoul(argv[1], 0, 10) : (8u << 20);
    char *src = malloc(n); unsigned long long x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; src[i] = "abcdefgh ijklmnop\n"[(x >> 33) % 18 % (1 + (i / 4096) % 18)]; }
    size_t cap = ZSTD_compressBound(n); char *dst = malloc(cap);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers, 2))) { puts("no MT"); return 2; }
    ZSTD_CCtx_setParameter(c, ZSTD_c_jobSize, 1 << 20);
    size_t r = ZSTD_compress2(c, dst, cap, src, n);
    if (ZSTD_isError(r)) { printf("error %s\n", ZSTD_getErrorName(r)); return 1; }
    unsigned long long h = 1469598103934665603ull; for (size_t i = 0; i < r; i++) h = (h ^ (unsigned char)dst[i]) * 1099511628211ull;
    char *back = malloc(n); size_t d = ZSTD_decompress(back, n, dst, r);
    printf("%zu -> %zu bytes, hash %016llx, round trip %s\n", n, r, h, d == n && !memcmp(back, src, n) ? "ok" : "BAD");
    return 0;
}
