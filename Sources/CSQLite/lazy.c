/* libsqlite3, loaded on first use (see include/shim.h for why). Each function the store calls is
 * defined here with SQLite's own prototype (so the compiler checks it against sqlite3.h) and
 * forwards to the library's symbol, resolved once.
 *
 * Without the library, sqlite3_open_v2 answers SQLITE_CANTOPEN with no handle and
 * tocsin_sqlite_load_error names what failed to load; nothing else is called without a handle. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Hidden: the executable exports its symbols (Swift links it with --export-dynamic), and exported
 * definitions of these names would interpose on the library's own calls to them once loaded. */
#pragma GCC visibility push(hidden)
#include "shim.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *library;
static char failure[512];

static void load(void) {
    library = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "cannot load libsqlite3.so.0: %s", why ? why : "unknown error");
    }
}

static int loaded(void) {
    pthread_once(&once, load);
    return library != NULL;
}

const char *tocsin_sqlite_load_error(void) {
    return loaded() ? NULL : failure;
}

/* A symbol of the loaded library. Only reached with a handle, so the library is there; a symbol
 * missing from it is a broken installation, reported and fatal. */
static void *symbol(const char *name) {
    void *p = loaded() ? dlsym(library, name) : NULL;
    if (p == NULL) {
        fprintf(stderr, "tocsin: libsqlite3.so.0 has no %s (%s)\n", name, library ? "symbol missing" : failure);
        abort();
    }
    return p;
}

/* Defines NAME(PARAMS) returning RET through the library's NAME, resolved on the first call. */
#define FORWARD(ret, name, params, args)                                        \
    ret name params {                                                           \
        static __typeof__(&name) fn;                                            \
        __typeof__(&name) f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);           \
        if (f == NULL) {                                                        \
            f = (__typeof__(&name))symbol(#name);                               \
            __atomic_store_n(&fn, f, __ATOMIC_RELEASE);                         \
        }                                                                       \
        return f args;                                                          \
    }

int sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs) {
    if (!loaded()) {
        *db = NULL;
        return SQLITE_CANTOPEN;
    }
    int (*f)(const char *, sqlite3 **, int, const char *) =
        (int (*)(const char *, sqlite3 **, int, const char *))symbol("sqlite3_open_v2");
    return f(filename, db, flags, vfs);
}

FORWARD(int, sqlite3_close_v2, (sqlite3 *db), (db))
FORWARD(const char *, sqlite3_errmsg, (sqlite3 *db), (db))
FORWARD(int, sqlite3_system_errno, (sqlite3 *db), (db))
FORWARD(int, sqlite3_busy_timeout, (sqlite3 *db, int ms), (db, ms))
FORWARD(int, sqlite3_changes, (sqlite3 *db), (db))
FORWARD(int, sqlite3_exec, (sqlite3 *db, const char *sql, int (*callback)(void *, int, char **, char **), void *arg, char **errmsg),
        (db, sql, callback, arg, errmsg))
FORWARD(int, sqlite3_prepare_v3, (sqlite3 *db, const char *sql, int bytes, unsigned int flags, sqlite3_stmt **stmt, const char **tail),
        (db, sql, bytes, flags, stmt, tail))
FORWARD(int, sqlite3_finalize, (sqlite3_stmt *stmt), (stmt))
FORWARD(int, sqlite3_step, (sqlite3_stmt *stmt), (stmt))
FORWARD(int, sqlite3_reset, (sqlite3_stmt *stmt), (stmt))
FORWARD(int, sqlite3_clear_bindings, (sqlite3_stmt *stmt), (stmt))
FORWARD(int, sqlite3_bind_null, (sqlite3_stmt *stmt, int i), (stmt, i))
FORWARD(int, sqlite3_bind_int64, (sqlite3_stmt *stmt, int i, sqlite3_int64 value), (stmt, i, value))
FORWARD(int, sqlite3_bind_text, (sqlite3_stmt *stmt, int i, const char *text, int bytes, void (*destructor)(void *)),
        (stmt, i, text, bytes, destructor))
FORWARD(int, sqlite3_bind_blob, (sqlite3_stmt *stmt, int i, const void *blob, int bytes, void (*destructor)(void *)),
        (stmt, i, blob, bytes, destructor))
FORWARD(int, sqlite3_column_type, (sqlite3_stmt *stmt, int i), (stmt, i))
FORWARD(int, sqlite3_column_bytes, (sqlite3_stmt *stmt, int i), (stmt, i))
FORWARD(sqlite3_int64, sqlite3_column_int64, (sqlite3_stmt *stmt, int i), (stmt, i))
FORWARD(const unsigned char *, sqlite3_column_text, (sqlite3_stmt *stmt, int i), (stmt, i))
FORWARD(const void *, sqlite3_column_blob, (sqlite3_stmt *stmt, int i), (stmt, i))
