/* The one loader behind the C libraries Tocsin opens on first use instead of linking them
 * (CSQLite, CMosquitto and CLibNotify; each shim.h says why its library is not linked).
 *
 * Included by exactly one lazy.c per library, after `#define TOCSIN_LAZY_SONAME "libfoo.so.N"`,
 * and before `#pragma GCC visibility push(hidden)` and the library's header: the executable's
 * definitions of the library's names must not be exported (they would interpose on the library's
 * own calls once it is loaded), while the C library's declarations here must keep their default
 * visibility. Not in include/: it is not part of the CTocsinSystem module, and everything here is
 * static to its lazy.c.
 *
 * lazy_loaded() loads the library on its first call (RTLD_LOCAL: nothing of it is visible to
 * other libraries) and says whether it is there; lazy_load_error() says why not, once a load was
 * tried. LAZY_FORWARD and LAZY_FORWARD_VOID define a function of the library's own prototype
 * (the compiler checks it against the library's header) that forwards to the library's symbol,
 * resolved once. Every forwarded function is only reached once a first call (the library's
 * open or init function, written out in the lazy.c) found the library there, so a symbol missing
 * from it is a broken installation: reported and fatal. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef TOCSIN_LAZY_SONAME
#error "define TOCSIN_LAZY_SONAME before including lazy_library.h"
#endif

static pthread_once_t lazy_once = PTHREAD_ONCE_INIT;
static void *lazy_library;
static char lazy_failure[512];
static int lazy_failed;

static void lazy_load(void) {
    lazy_library = dlopen(TOCSIN_LAZY_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (lazy_library == NULL) {
        const char *why = dlerror();
        snprintf(lazy_failure, sizeof lazy_failure, "cannot load " TOCSIN_LAZY_SONAME ": %s", why ? why : "unknown error");
        __atomic_store_n(&lazy_failed, 1, __ATOMIC_RELEASE);
    }
}

static int lazy_loaded(void) {
    pthread_once(&lazy_once, lazy_load);
    return lazy_library != NULL;
}

static const char *lazy_load_error(void) {
    return __atomic_load_n(&lazy_failed, __ATOMIC_ACQUIRE) ? lazy_failure : NULL;
}

static void *lazy_symbol(const char *name) {
    void *p = lazy_loaded() ? dlsym(lazy_library, name) : NULL;
    if (p == NULL) {
        /* dlsym on the handle also searches the libraries it loaded (libnotify's GLib). */
        fprintf(stderr, "tocsin: neither " TOCSIN_LAZY_SONAME " nor a library it loads has %s (%s)\n", name,
                lazy_library ? "symbol missing" : lazy_failure);
        abort();
    }
    return p;
}

/* Declares `f`, of TYPE (a function pointer type, written as a type), as the library's NAME,
 * resolved on the first use. */
#define LAZY_RESOLVE(type, name)                                                \
    static __typeof__(type) lazy_fn;                                            \
    __typeof__(type) f = __atomic_load_n(&lazy_fn, __ATOMIC_ACQUIRE);           \
    if (f == NULL) {                                                            \
        f = (__typeof__(type))lazy_symbol(name);                                \
        __atomic_store_n(&lazy_fn, f, __ATOMIC_RELEASE);                        \
    }

/* Defines NAME(PARAMS) through the library's NAME: LAZY_FORWARD returns its result, LAZY_FORWARD_VOID none. */
#define LAZY_FORWARD(ret, name, params, args)                                   \
    ret name params {                                                           \
        LAZY_RESOLVE(__typeof__(&name), #name)                                  \
        return f args;                                                          \
    }
#define LAZY_FORWARD_VOID(name, params, args)                                   \
    void name params {                                                          \
        LAZY_RESOLVE(__typeof__(&name), #name)                                  \
        f args;                                                                 \
    }
