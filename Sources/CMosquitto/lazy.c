/* libmosquitto, loaded on first use (see include/shim.h for why). Each function the backend calls
 * is defined here with libmosquitto's own prototype (so the compiler checks it against
 * mosquitto.h) and forwards to the library's symbol, resolved once.
 *
 * Without the library, mosquitto_lib_init answers MOSQ_ERR_NOT_SUPPORTED and mosquitto_strerror
 * names what failed to load, so the backend reports "mosquitto_lib_init: ..." as it does for any
 * other initialisation failure; the backend calls nothing else before mosquitto_lib_init
 * succeeded. */
#define TOCSIN_LAZY_SONAME "libmosquitto.so.1"
#include "../CTocsinSystem/lazy_library.h"

/* Hidden: see lazy_library.h. */
#pragma GCC visibility push(hidden)
#include "shim.h"

int mosquitto_lib_init(void) {
    if (!lazy_loaded()) return MOSQ_ERR_NOT_SUPPORTED;
    LAZY_RESOLVE(__typeof__(&mosquitto_lib_init), "mosquitto_lib_init")
    return f();
}

const char *mosquitto_strerror(int mosq_errno) {
    if (!lazy_loaded()) return lazy_load_error();
    LAZY_RESOLVE(__typeof__(&mosquitto_strerror), "mosquitto_strerror")
    return f(mosq_errno);
}

LAZY_FORWARD(struct mosquitto *, mosquitto_new, (const char *id, bool clean_session, void *obj), (id, clean_session, obj))
LAZY_FORWARD_VOID(mosquitto_destroy, (struct mosquitto *mosq), (mosq))
LAZY_FORWARD(int, mosquitto_username_pw_set, (struct mosquitto *mosq, const char *username, const char *password),
        (mosq, username, password))
LAZY_FORWARD(int, mosquitto_connect_async, (struct mosquitto *mosq, const char *host, int port, int keepalive),
        (mosq, host, port, keepalive))
LAZY_FORWARD(int, mosquitto_disconnect, (struct mosquitto *mosq), (mosq))
LAZY_FORWARD(int, mosquitto_publish,
        (struct mosquitto *mosq, int *mid, const char *topic, int payloadlen, const void *payload, int qos, bool retain),
        (mosq, mid, topic, payloadlen, payload, qos, retain))
LAZY_FORWARD(int, mosquitto_subscribe, (struct mosquitto *mosq, int *mid, const char *sub, int qos), (mosq, mid, sub, qos))
LAZY_FORWARD(int, mosquitto_loop_start, (struct mosquitto *mosq), (mosq))
LAZY_FORWARD(int, mosquitto_loop_stop, (struct mosquitto *mosq, bool force), (mosq, force))
LAZY_FORWARD(int, mosquitto_int_option, (struct mosquitto *mosq, enum mosq_opt_t option, int value), (mosq, option, value))
LAZY_FORWARD(int, mosquitto_reconnect_delay_set,
        (struct mosquitto *mosq, unsigned int reconnect_delay, unsigned int reconnect_delay_max,
         bool reconnect_exponential_backoff),
        (mosq, reconnect_delay, reconnect_delay_max, reconnect_exponential_backoff))
LAZY_FORWARD_VOID(mosquitto_user_data_set, (struct mosquitto *mosq, void *obj), (mosq, obj))
LAZY_FORWARD(int, mosquitto_tls_set,
        (struct mosquitto *mosq, const char *cafile, const char *capath, const char *certfile, const char *keyfile,
         int (*pw_callback)(char *buf, int size, int rwflag, void *userdata)),
        (mosq, cafile, capath, certfile, keyfile, pw_callback))
LAZY_FORWARD_VOID(mosquitto_connect_callback_set, (struct mosquitto *mosq, void (*on_connect)(struct mosquitto *, void *, int)),
        (mosq, on_connect))
LAZY_FORWARD_VOID(mosquitto_disconnect_callback_set,
        (struct mosquitto *mosq, void (*on_disconnect)(struct mosquitto *, void *, int)), (mosq, on_disconnect))
LAZY_FORWARD_VOID(mosquitto_publish_callback_set, (struct mosquitto *mosq, void (*on_publish)(struct mosquitto *, void *, int)),
        (mosq, on_publish))
LAZY_FORWARD_VOID(mosquitto_message_callback_set,
        (struct mosquitto *mosq, void (*on_message)(struct mosquitto *, void *, const struct mosquitto_message *)),
        (mosq, on_message))
