/* table.c - mutex-protected shared table (part of libwork.a). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "work.h"

struct slot { int used, key, count, first_owner; };

static struct slot table[TABLE_SIZE];
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;

void table_init(void)
{
    pthread_mutex_lock(&table_mu);
    memset(table, 0, sizeof table);
    pthread_mutex_unlock(&table_mu);
}

void table_add(int key, int owner)
{
    pthread_mutex_lock(&table_mu);
    unsigned h = ((unsigned)key * 2654435761u) % TABLE_SIZE;
    for (int probe = 0; probe < TABLE_SIZE; probe++) {
        struct slot *s = &table[(h + (unsigned)probe) % TABLE_SIZE];
        if (!s->used) {
            s->used = 1;
            s->key = key;
            s->count = 1;
            s->first_owner = owner;  /* whoever got here first: varies */
            break;
        }
        if (s->key == key) {
            s->count++;
            break;
        }
    }
    pthread_mutex_unlock(&table_mu);
}

void table_dump(char *buf, int len)
{
    int off = 0;
    buf[0] = '\0';
    pthread_mutex_lock(&table_mu);
    for (int k = 0; k < TABLE_SIZE && off < len; k++) {
        /* print in key order so only the owners vary */
        for (int i = 0; i < TABLE_SIZE; i++) {
            if (table[i].used && table[i].key == k) {
                off += snprintf(buf + off, (size_t)(len - off), "%s%d:%d:t%d", off ? " " : "",
                                table[i].key, table[i].count, table[i].first_owner);
                if (off >= len) off = len;
            }
        }
    }
    pthread_mutex_unlock(&table_mu);
}

long table_total(void)
{
    long t = 0;
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < TABLE_SIZE; i++) if (table[i].used) t += table[i].count;
    pthread_mutex_unlock(&table_mu);
    return t;
}

void table_destroy(void)
{
    pthread_mutex_destroy(&table_mu);
}
