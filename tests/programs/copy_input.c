/* copy_input.c - reads up to 4096 bytes of stdin with read(2) and copies them with memcpy
 * into a global buffer, printing only how many bytes it read. Used by
 * crates/reprise-cli/tests/verification.rs: a ranged access digests every byte it copies. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

char copy[4096];

int main(void)
{
    static char buf[4096];
    ssize_t n = 0, r;
    while (n < (ssize_t)sizeof buf && (r = read(0, buf + n, sizeof buf - n)) > 0) n += r;
    memcpy(copy, buf, (size_t)n);
    printf("read %zd bytes\n", n);
    return 0;
}
