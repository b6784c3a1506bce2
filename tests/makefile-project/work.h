/* work.h - shared declarations for the makefile-project test program. */
#ifndef WORK_H
#define WORK_H

#define TABLE_SIZE 16

/* table.c: a mutex-protected shared table of (key, count, first_owner). */
void table_init(void);
void table_add(int key, int owner);
/* writes "key:count:first_owner" entries for used slots into buf */
void table_dump(char *buf, int len);
long table_total(void);
void table_destroy(void);

/* counter.c: a plain (racy) shared counter with a race-window knob. */
void counter_set_window(int n);
void counter_bump(void);   /* read / delay / write, no lock */
int counter_value(void);

#endif
