/* string_fns.c - the string functions full mode does itself (chunk by chunk, in 64-byte
 * granules), against libc's answers: strstr, strcasecmp, strncasecmp, strspn, strcspn,
 * strpbrk, memchr, memrchr, strlen, strcmp, strchr, strrchr on strings placed at every
 * offset across two chunk boundaries, needles longer than the runtime's stack window, empty
 * needles and sets, no match. Prints one line per function: a full-mode build must print what
 * a plain build prints. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

static char buf[512];
static char big[5000];
static char needle[1200];

static long off(const void *p, const void *base) { return p ? (long)((const char *)p - (const char *)base) : -1; }

int main(void)
{
    const char *text = "The quick brown fox jumps over the lazy dog; THE QUICK BROWN FOX, again and again and again.";
    const char *needles[] = {"fox", "FOX,", "again and again.", "", "T", "zzz", "lazy dog;", ".", "again and again and again!", "he q"};
    const char *sets[] = {"The ", "", "aeiou", ",;.", "xyz", "abcdefghijklmnopqrstuvwxyzTHE QUICK"};
    unsigned long h[12] = {0};
    for (int o = 0; o < 140; o++) {
        memset(buf, '#', sizeof buf);
        strcpy(buf + o, text);
        const char *s = buf + o;
        for (unsigned i = 0; i < sizeof needles / sizeof *needles; i++) h[0] = h[0] * 31 + (unsigned long)off(strstr(s, needles[i]), s);
        for (unsigned i = 0; i < sizeof sets / sizeof *sets; i++) {
            h[1] = h[1] * 31 + strspn(s, sets[i]);
            h[2] = h[2] * 31 + strcspn(s, sets[i]);
            h[3] = h[3] * 31 + (unsigned long)off(strpbrk(s, sets[i]), s);
        }
        for (int c = 'A'; c <= 'z'; c += 5) {
            h[4] = h[4] * 31 + (unsigned long)off(memchr(s, c, strlen(s)), s);
            h[5] = h[5] * 31 + (unsigned long)off(memrchr(s, c, strlen(s)), s);
            h[6] = h[6] * 31 + (unsigned long)off(strchr(s, c), s) + (unsigned long)off(strrchr(s, c), s);
        }
        h[7] = h[7] * 31 + (unsigned long)(strcasecmp(s, "the QUICK brown") > 0) + (unsigned long)(strncasecmp(s, "the QUICK brown", 15) == 0) * 2;
        h[8] = h[8] * 31 + (unsigned long)(strcmp(s, text) == 0) + strlen(s);
    }
    memset(big, 'a', sizeof big - 1);
    memset(needle, 'a', sizeof needle - 1);
    needle[sizeof needle - 2] = 'b';
    big[4000] = 'b';
    printf("strstr %lu long-needle %ld no-match %ld\n", h[0], off(strstr(big, needle), big), off(strstr(big, "ab"), big));
    big[4000] = 'a';
    printf("long-needle-absent %ld\n", off(strstr(big, needle), big));
    printf("strspn %lu strcspn %lu strpbrk %lu\n", h[1], h[2], h[3]);
    printf("memchr %lu memrchr %lu strchr %lu\n", h[4], h[5], h[6]);
    printf("case %lu cmp %lu\n", h[7], h[8]);
    return 0;
}
