#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast of -1 to a function pointer and does not import into Swift. */
#define TOCSIN_SQLITE_TRANSIENT ((sqlite3_destructor_type)-1)
static inline sqlite3_destructor_type tocsin_sqlite_transient(void) { return TOCSIN_SQLITE_TRANSIENT; }
