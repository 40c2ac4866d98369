/* libmosquitto, loaded on first use (see include/shim.h for why). Each function the backend calls
 * is defined here with libmosquitto's own prototype (so the compiler checks it against
 * mosquitto.h) and forwards to the library's symbol, resolved once.
 *
 * Without the library, mosquitto_lib_init answers MOSQ_ERR_NOT_SUPPORTED and mosquitto_strerror
 * names what failed to load, so the backend reports "mosquitto_lib_init: ..." as it does for any
 * other initialisation failure; the backend calls nothing else before mosquitto_lib_init
 * succeeded. */
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
    library = dlopen("libmosquitto.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "cannot load libmosquitto.so.1: %s", why ? why : "unknown error");
    }
}

static int loaded(void) {
    pthread_once(&once, load);
    return library != NULL;
}

/* A symbol of the loaded library. Only reached after mosquitto_lib_init succeeded, so the library
 * is there; a symbol missing from it is a broken installation, reported and fatal. */
static void *symbol(const char *name) {
    void *p = loaded() ? dlsym(library, name) : NULL;
    if (p == NULL) {
        fprintf(stderr, "tocsin: libmosquitto.so.1 has no %s (%s)\n", name, library ? "symbol missing" : failure);
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

int mosquitto_lib_init(void) {
    if (!loaded()) return MOSQ_ERR_NOT_SUPPORTED;
    int (*f)(void) = (int (*)(void))symbol("mosquitto_lib_init");
    return f();
}

const char *mosquitto_strerror(int mosq_errno) {
    if (!loaded()) return failure;
    const char *(*f)(int) = (const char *(*)(int))symbol("mosquitto_strerror");
    return f(mosq_errno);
}

FORWARD(struct mosquitto *, mosquitto_new, (const char *id, bool clean_session, void *obj), (id, clean_session, obj))
FORWARD(void, mosquitto_destroy, (struct mosquitto *mosq), (mosq))
FORWARD(int, mosquitto_username_pw_set, (struct mosquitto *mosq, const char *username, const char *password),
        (mosq, username, password))
FORWARD(int, mosquitto_connect_async, (struct mosquitto *mosq, const char *host, int port, int keepalive),
        (mosq, host, port, keepalive))
FORWARD(int, mosquitto_disconnect, (struct mosquitto *mosq), (mosq))
FORWARD(int, mosquitto_publish,
        (struct mosquitto *mosq, int *mid, const char *topic, int payloadlen, const void *payload, int qos, bool retain),
        (mosq, mid, topic, payloadlen, payload, qos, retain))
FORWARD(int, mosquitto_subscribe, (struct mosquitto *mosq, int *mid, const char *sub, int qos), (mosq, mid, sub, qos))
FORWARD(int, mosquitto_loop_start, (struct mosquitto *mosq), (mosq))
FORWARD(int, mosquitto_loop_stop, (struct mosquitto *mosq, bool force), (mosq, force))
FORWARD(int, mosquitto_int_option, (struct mosquitto *mosq, enum mosq_opt_t option, int value), (mosq, option, value))
FORWARD(int, mosquitto_reconnect_delay_set,
        (struct mosquitto *mosq, unsigned int reconnect_delay, unsigned int reconnect_delay_max,
         bool reconnect_exponential_backoff),
        (mosq, reconnect_delay, reconnect_delay_max, reconnect_exponential_backoff))
FORWARD(void, mosquitto_user_data_set, (struct mosquitto *mosq, void *obj), (mosq, obj))
FORWARD(int, mosquitto_tls_set,
        (struct mosquitto *mosq, const char *cafile, const char *capath, const char *certfile, const char *keyfile,
         int (*pw_callback)(char *buf, int size, int rwflag, void *userdata)),
        (mosq, cafile, capath, certfile, keyfile, pw_callback))
FORWARD(void, mosquitto_connect_callback_set, (struct mosquitto *mosq, void (*on_connect)(struct mosquitto *, void *, int)),
        (mosq, on_connect))
FORWARD(void, mosquitto_disconnect_callback_set,
        (struct mosquitto *mosq, void (*on_disconnect)(struct mosquitto *, void *, int)), (mosq, on_disconnect))
FORWARD(void, mosquitto_publish_callback_set, (struct mosquitto *mosq, void (*on_publish)(struct mosquitto *, void *, int)),
        (mosq, on_publish))
FORWARD(void, mosquitto_message_callback_set,
        (struct mosquitto *mosq, void (*on_message)(struct mosquitto *, void *, const struct mosquitto_message *)),
        (mosq, on_message))
