/* openmp.c - OpenMP as scientific codes use it (gcc -fopenmp, libgomp): parallel loops with
 * the static schedule, a + reduction on a double (gcc: an atomic load, then a compare-exchange
 * loop the instrumentation does not see), the unnamed and a named critical section, an atomic
 * update of a long double (libgomp's atomic section), and an omp_lock_t taken with
 * omp_set_lock and with omp_test_lock retries, and loops with the dynamic and guided schedules
 * (libgomp hands their chunks out by atomic counters), a `single` and a `sections` construct
 * (which thread runs each varies), an `ordered` loop with the dynamic schedule, tasks
 * created in a `single` (with a `taskwait`, and recursive tasks), and a `single copyprivate`.
 * Prints the sum, the order in which the threads got through each critical section, the lock
 * and the ordered blocks (varies), which thread ran each task's creator and each single
 * (varies), and whether omp_test_lock ever failed. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    if (!a || !b)
        return 1;
#pragma omp parallel for
    for (long i = 0; i < n; i++) {
        a[i] = (double)(i % 1000) / 7.0;
        b[i] = 0;
    }
    double sum = 0;
    for (int it = 0; it < 3; it++) {
#pragma omp parallel for
        for (long i = 1; i < n - 1; i++)
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0;
#pragma omp parallel for reduction(+ : sum)
        for (long i = 0; i < n; i++) {
            a[i] = b[i];
            sum += b[i];
        }
    }
    /* Which thread ran each chunk of the dynamic and the guided loop (varies): hashed. */
    int *who = malloc(n * sizeof *who);
    if (!who)
        return 1;
#pragma omp parallel for schedule(dynamic, 500)
    for (long i = 0; i < n; i++)
        who[i] = omp_get_thread_num();
    unsigned long hd = 0, hg = 0;
    for (long i = 0; i < n; i++)
        hd = hd * 31 + (unsigned long)who[i];
#pragma omp parallel for schedule(guided)
    for (long i = 0; i < n; i++)
        who[i] = omp_get_thread_num();
    for (long i = 0; i < n; i++)
        hg = hg * 31 + (unsigned long)who[i];
    free(who);
    int single_by = -1, section_by[4] = {-1, -1, -1, -1};
#pragma omp parallel num_threads(2)
    {
#pragma omp single
        single_by = omp_get_thread_num();
#pragma omp sections
        {
#pragma omp section
            section_by[0] = omp_get_thread_num();
#pragma omp section
            section_by[1] = omp_get_thread_num();
#pragma omp section
            section_by[2] = omp_get_thread_num();
#pragma omp section
            section_by[3] = omp_get_thread_num();
        }
    }
    /* One log per lock: what each protects. */
    char crit[64], named[64], locked[64];
    int nc = 0, nn = 0, nl = 0, tries = 0;
    long double total = 0;
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel num_threads(3)
    {
        int me = omp_get_thread_num();
        for (int r = 0; r < 8; r++) {
#pragma omp critical
            crit[nc++] = (char)('a' + me);
#pragma omp critical(named)
            named[nn++] = (char)('A' + me);
#pragma omp atomic
            total += 0.5L * (me + 1);
            if (r % 2) {
                omp_set_lock(&lock);
            } else {
                while (!omp_test_lock(&lock)) {
#pragma omp atomic
                    tries++;
                }
            }
            locked[nl++] = (char)('0' + me);
            omp_unset_lock(&lock);
        }
    }
    omp_destroy_lock(&lock);
    /* ordered blocks run in iteration order; who runs each follows the chunks grabbed. */
    char ord[41];
    int no = 0;
#pragma omp parallel for ordered schedule(dynamic, 1) num_threads(3)
    for (int i = 0; i < 40; i++) {
#pragma omp ordered
        ord[no++] = (char)('0' + omp_get_thread_num());
    }
    ord[no] = 0;
    /* Tasks from a single: the sum is fixed, which thread created them varies. */
    long task_sum = 0;
    int creator = -1;
#pragma omp parallel num_threads(3)
#pragma omp single
    {
        creator = omp_get_thread_num();
        for (int i = 0; i < 24; i++) {
#pragma omp task firstprivate(i) shared(task_sum)
            {
                long s = 0;
                for (int k = 0; k < 1000 * (i % 4 + 1); k++)
                    s += k % (i + 2);
#pragma omp atomic
                task_sum += s;
            }
        }
#pragma omp taskwait
    }
    /* single copyprivate: the thread that runs each single broadcasts its number. */
    char copied[3][17];
#pragma omp parallel num_threads(3)
    {
        int me = omp_get_thread_num();
        for (int r = 0; r < 16; r++) {
            int v;
#pragma omp single copyprivate(v)
            v = me;
            copied[me][r] = (char)('0' + v);
        }
        copied[me][16] = 0;
    }
    crit[nc] = named[nn] = locked[nl] = 0;
    printf("sum %.6f total %.1Lf\ncritical %s\nnamed    %s\nlock     %s\n", sum, total, crit, named, locked);
    printf("test_lock retries %s\nchunks dynamic %lx guided %lx\n", tries > 0 ? "some" : "none", hd, hg);
    printf("single by %d, sections by %d %d %d %d\n", single_by, section_by[0], section_by[1], section_by[2],
           section_by[3]);
    printf("ordered  %s\ntasks sum %ld created by %d\ncopyprivate %s %s\n", ord, task_sum, creator,
           copied[0], strcmp(copied[0], copied[1]) || strcmp(copied[0], copied[2]) ? "differ" : "agree");
    free(a);
    free(b);
    return 0;
}
