/* libsqlite3, loaded on first use (see include/shim.h for why). Each function the store calls is
 * defined here with SQLite's own prototype (so the compiler checks it against sqlite3.h) and
 * forwards to the library's symbol, resolved once.
 *
 * Without the library, sqlite3_open_v2 answers SQLITE_CANTOPEN with no handle and
 * tocsin_sqlite_load_error names what failed to load; nothing else is called without a handle. */
#define TOCSIN_LAZY_SONAME "libsqlite3.so.0"
#include "../CTocsinSystem/lazy_library.h"

/* Hidden: see lazy_library.h. */
#pragma GCC visibility push(hidden)
#include "shim.h"

const char *tocsin_sqlite_load_error(void) { return lazy_load_error(); }

/* SQLite's page cache starts each connection with one bulk allocation of 20 page slots (about
 * 85 kB) that it keeps until the connection closes, beyond the reach of sqlite3_db_release_memory.
 * Without it the slots come one at a time as pages are read and go back with the rest of the
 * cache: an idle daemon holds about 100 kB less (docs/BENCHMARKS.md, "Footprint"). SQLite takes
 * configuration only before it initialises, which the first open does, so the first open here
 * sets it. The setting is the process's: it would also apply to another user of libsqlite3 in
 * the process (there is none: it is opened RTLD_LOCAL, and Tocsin's stores reach it only through
 * this shim), and it is
 * a saving, not a need, so were SQLite already initialised its refusal (SQLITE_MISUSE) would only
 * leave the block in place. */
static pthread_once_t configure_once = PTHREAD_ONCE_INIT;
static void configure(void) {
    LAZY_RESOLVE(__typeof__(&sqlite3_config), "sqlite3_config")
    (void)f(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}

int sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs) {
    if (!lazy_loaded()) {
        *db = NULL;
        return SQLITE_CANTOPEN;
    }
    pthread_once(&configure_once, configure);
    LAZY_RESOLVE(__typeof__(&sqlite3_open_v2), "sqlite3_open_v2")
    return f(filename, db, flags, vfs);
}

LAZY_FORWARD(int, sqlite3_close_v2, (sqlite3 *db), (db))
LAZY_FORWARD(const char *, sqlite3_errmsg, (sqlite3 *db), (db))
LAZY_FORWARD(int, sqlite3_system_errno, (sqlite3 *db), (db))
LAZY_FORWARD(int, sqlite3_busy_timeout, (sqlite3 *db, int ms), (db, ms))
LAZY_FORWARD(int, sqlite3_changes, (sqlite3 *db), (db))
LAZY_FORWARD(int, sqlite3_db_status, (sqlite3 *db, int op, int *current, int *highwater, int reset), (db, op, current, highwater, reset))
LAZY_FORWARD(int, sqlite3_db_release_memory, (sqlite3 *db), (db))
LAZY_FORWARD(int, sqlite3_exec, (sqlite3 *db, const char *sql, int (*callback)(void *, int, char **, char **), void *arg, char **errmsg),
        (db, sql, callback, arg, errmsg))
LAZY_FORWARD(int, sqlite3_prepare_v3, (sqlite3 *db, const char *sql, int bytes, unsigned int flags, sqlite3_stmt **stmt, const char **tail),
        (db, sql, bytes, flags, stmt, tail))
LAZY_FORWARD(int, sqlite3_finalize, (sqlite3_stmt *stmt), (stmt))
LAZY_FORWARD(int, sqlite3_step, (sqlite3_stmt *stmt), (stmt))
LAZY_FORWARD(int, sqlite3_reset, (sqlite3_stmt *stmt), (stmt))
LAZY_FORWARD(int, sqlite3_clear_bindings, (sqlite3_stmt *stmt), (stmt))
LAZY_FORWARD(int, sqlite3_bind_null, (sqlite3_stmt *stmt, int i), (stmt, i))
LAZY_FORWARD(int, sqlite3_bind_int64, (sqlite3_stmt *stmt, int i, sqlite3_int64 value), (stmt, i, value))
LAZY_FORWARD(int, sqlite3_bind_text, (sqlite3_stmt *stmt, int i, const char *text, int bytes, void (*destructor)(void *)),
        (stmt, i, text, bytes, destructor))
LAZY_FORWARD(int, sqlite3_bind_blob, (sqlite3_stmt *stmt, int i, const void *blob, int bytes, void (*destructor)(void *)),
        (stmt, i, blob, bytes, destructor))
LAZY_FORWARD(int, sqlite3_column_type, (sqlite3_stmt *stmt, int i), (stmt, i))
LAZY_FORWARD(int, sqlite3_column_bytes, (sqlite3_stmt *stmt, int i), (stmt, i))
LAZY_FORWARD(sqlite3_int64, sqlite3_column_int64, (sqlite3_stmt *stmt, int i), (stmt, i))
LAZY_FORWARD(const unsigned char *, sqlite3_column_text, (sqlite3_stmt *stmt, int i), (stmt, i))
LAZY_FORWARD(const void *, sqlite3_column_blob, (sqlite3_stmt *stmt, int i), (stmt, i))
