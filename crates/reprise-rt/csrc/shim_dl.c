/* shim_dl.c: shared libraries the program loads itself (dlopen), reported to the launcher while
 * recording (`F_LIB`), which hashes them into the trace: a replay refuses a changed one, as it
 * does a changed linked library (shim.h lists the other files).
 *
 * `dlopen` notes that a load happened and jumps to the real one: glibc takes its caller's return
 * address to pick the calling object, whose RUNPATH and $ORIGIN the lookup uses, so a call from
 * here would make the runtime the caller (in sync mode, another object: the program's RUNPATH
 * would be ignored). The thread's next runtime entry (`dl::check`) then walks the loader's list
 * with dl_iterate_phdr and reports every object not seen before. The objects loaded at start
 * (the program's own libraries, hashed in the trace's header, and in sync mode the runtime's
 * .so) are marked seen at start, not reported. */
#include "shim.h"
#include <link.h>
#include <string.h>

extern void reprise_dlopen_seen(void);
extern void reprise_send_lib(const char *path, size_t len);

/* The real dlopen, for the jump below; notes the load for the thread's next runtime entry. */
SHIM_HIDDEN void *reprise_shim_dlopen_target(void)
{
    static void *real;
    if (!real) real = dlsym(RTLD_NEXT, "dlopen");
    reprise_dlopen_seen();
    return real;
}

__asm__(".pushsection .text.dlopen,\"ax\",@progbits\n"
        ".weak dlopen\n.type dlopen,@function\ndlopen:\n"
        "\t.cfi_startproc\n"
        "\tpush %rdi\n\t.cfi_adjust_cfa_offset 8\n"
        "\tpush %rsi\n\t.cfi_adjust_cfa_offset 8\n"
        "\tsub $8, %rsp\n\t.cfi_adjust_cfa_offset 8\n"
        "\tcall reprise_shim_dlopen_target@PLT\n"
        "\tadd $8, %rsp\n\t.cfi_adjust_cfa_offset -8\n"
        "\tpop %rsi\n\t.cfi_adjust_cfa_offset -8\n"
        "\tpop %rdi\n\t.cfi_adjust_cfa_offset -8\n"
        "\tjmp *%rax\n"
        "\t.cfi_endproc\n"
        ".size dlopen, .-dlopen\n.popsection\n");

/* Paths seen (reported, or loaded at start), by 64-bit hash: open addressing, never removed
 * (a library unloaded and loaded again is the same file). Beyond SEEN_MAX objects, new ones go
 * unreported. Guarded by `seen_lock` (a spin lock: walks are short and rare). */
#define SEEN_MAX 1024
static uint64_t seen[SEEN_MAX];
static int seen_lock;

static uint64_t path_hash(const char *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return h | 1; /* 0 marks a free entry */
}

/* Whether `p` was new (it is marked seen now). */
static int mark_seen(const char *p)
{
    uint64_t h = path_hash(p);
    for (unsigned i = 0; i < SEEN_MAX; i++) {
        uint64_t *e = &seen[(h + i) % SEEN_MAX];
        if (*e == h) return 0;
        if (*e == 0) {
            *e = h;
            return 1;
        }
    }
    return 0;
}

static int walk_one(struct dl_phdr_info *info, size_t size, void *send)
{
    (void)size;
    const char *name = info->dlpi_name;
    /* The program itself has no name; the vDSO's has no slash (it is no file). */
    if (!name || !strchr(name, '/') || !mark_seen(name) || !send) return 0;
    char path[4096];
    size_t n = 0;
    if (name[0] != '/') {
        /* As glibc keeps it: relative to the working directory of the dlopen. */
        long r = raw_syscall3(SYS_getcwd, (long)path, sizeof path - 1, 0);
        if (r <= 0) return 0;
        n = strlen(path);
        path[n++] = '/';
    }
    size_t len = strlen(name);
    if (n + len >= sizeof path) return 0;
    memcpy(path + n, name, len);
    reprise_send_lib(path, n + len);
    return 0;
}

/* Walk the loader's list: report (send != 0) or only mark every object not seen before.
 * Returns 0 without walking while the loader is in the middle of a change (it allocates while
 * mapping an object, and the allocation is a runtime entry): a later entry walks. */
SHIM_HIDDEN int reprise_shim_dl_walk(int send)
{
    if (_r_debug.r_state != RT_CONSISTENT) return 0;
    shim_lock(&seen_lock);
    dl_iterate_phdr(walk_one, send ? (void *)1 : NULL);
    shim_unlock(&seen_lock);
    return 1;
}

