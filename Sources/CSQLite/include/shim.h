#ifndef TOCSIN_CSQLITE_SHIM_H
#define TOCSIN_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast of -1 to a function pointer and does not import into Swift. */
#define TOCSIN_SQLITE_TRANSIENT ((sqlite3_destructor_type)-1)
static inline sqlite3_destructor_type tocsin_sqlite_transient(void) { return TOCSIN_SQLITE_TRANSIENT; }

/* The sqlite3_* functions Swift calls are defined in lazy.c, which loads libsqlite3 on first use:
 * only the daemon keeps state, so the executable does not link it and no other `tocsin` command
 * pays for loading it. Why it could not be loaded, once sqlite3_open_v2 failed for that reason;
 * NULL otherwise. */
const char *tocsin_sqlite_load_error(void);
#endif
