/* libnotify, GIO and GLib, loaded on first use (see include/shim.h for why). Each function the
 * desktop backend calls is defined here and forwards to the library's symbol, resolved once;
 * dlsym on libnotify's handle also finds GLib's, GObject's and GIO's, which it depends on.
 *
 * Without the library, g_main_context_new answers NULL: the backend cannot start its GLib loop
 * and reports itself unavailable with tocsin_libnotify_load_error's reason. Everything else is called only on that loop, so only once
 * the library is there. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* Hidden: the executable exports its symbols (Swift links it with --export-dynamic), and exported
 * definitions of these names would interpose on the library's own calls to them once loaded. */
#pragma GCC visibility push(hidden)
#include "shim.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *library;

static char failure[512];
static int failed;

static void load(void) {
    library = dlopen("libnotify.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "cannot load libnotify.so.4: %s", why ? why : "unknown error");
        __atomic_store_n(&failed, 1, __ATOMIC_RELEASE);
    }
}

const char *tocsin_libnotify_load_error(void) {
    return __atomic_load_n(&failed, __ATOMIC_ACQUIRE) ? failure : NULL;
}

static int loaded(void) {
    pthread_once(&once, load);
    return library != NULL;
}

int tocsin_libnotify_load(void) { return loaded(); }

/* A symbol of the loaded library; one missing from it is a broken installation, reported and fatal. */
static void *symbol(const char *name) {
    void *p = loaded() ? dlsym(library, name) : NULL;
    if (p == NULL) {
        fprintf(stderr, "tocsin: libnotify.so.4 or its GLib has no %s\n", name);
        abort();
    }
    return p;
}

#define RESOLVE(type, name)                                                     \
    static __typeof__(type) fn;                                                 \
    __typeof__(type) f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);                \
    if (f == NULL) {                                                            \
        f = (__typeof__(type))symbol(name);                                     \
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);                             \
    }

/* Defines NAME(PARAMS) through the library's NAME (FORWARD returns its result, FORWARD_VOID none). */
#define FORWARD(ret, name, params, args)                                        \
    ret name params {                                                           \
        RESOLVE(__typeof__(&name), #name)                                       \
        return f args;                                                          \
    }
#define FORWARD_VOID(name, params, args)                                        \
    void name params {                                                          \
        RESOLVE(__typeof__(&name), #name)                                       \
        f args;                                                                 \
    }

GMainContext *g_main_context_new(void) {
    if (!loaded()) return NULL;
    RESOLVE(__typeof__(&g_main_context_new), "g_main_context_new")
    return f();
}

FORWARD(gboolean, notify_init, (const char *app_name), (app_name))
FORWARD_VOID(notify_uninit, (void), ())
FORWARD(gboolean, notify_is_initted, (void), ())
FORWARD(GList *, notify_get_server_caps, (void), ())
FORWARD(NotifyNotification *, notify_notification_new, (const char *summary, const char *body, const char *icon),
        (summary, body, icon))
FORWARD(gboolean, notify_notification_update,
        (NotifyNotification *notification, const char *summary, const char *body, const char *icon),
        (notification, summary, body, icon))
FORWARD(gboolean, notify_notification_show, (NotifyNotification *notification, GError **error), (notification, error))
FORWARD_VOID(notify_notification_set_app_name, (NotifyNotification *notification, const char *app_name),
             (notification, app_name))
FORWARD_VOID(notify_notification_set_timeout, (NotifyNotification *notification, gint timeout), (notification, timeout))
FORWARD_VOID(notify_notification_set_category, (NotifyNotification *notification, const char *category),
             (notification, category))
FORWARD_VOID(notify_notification_set_urgency, (NotifyNotification *notification, NotifyUrgency urgency),
             (notification, urgency))
FORWARD_VOID(notify_notification_set_hint, (NotifyNotification *notification, const char *key, GVariant *value),
             (notification, key, value))
FORWARD_VOID(notify_notification_set_hint_string,
             (NotifyNotification *notification, const char *key, const char *value), (notification, key, value))
FORWARD_VOID(notify_notification_clear_hints, (NotifyNotification *notification), (notification))
FORWARD_VOID(notify_notification_add_action,
             (NotifyNotification *notification, const char *action, const char *label, NotifyActionCallback callback,
              gpointer user_data, GFreeFunc free_func),
             (notification, action, label, callback, user_data, free_func))
FORWARD_VOID(notify_notification_clear_actions, (NotifyNotification *notification), (notification))
FORWARD(gboolean, notify_notification_close, (NotifyNotification *notification, GError **error), (notification, error))

FORWARD_VOID(g_free, (gpointer mem), (mem))
FORWARD_VOID(g_error_free, (GError *error), (error))
FORWARD_VOID(g_object_unref, (gpointer object), (object))
FORWARD(GVariant *, g_variant_new_boolean, (gboolean value), (value))
FORWARD_VOID(g_main_context_unref, (GMainContext *context), (context))
FORWARD(gboolean, g_main_context_is_owner, (GMainContext *context), (context))
FORWARD_VOID(g_main_context_push_thread_default, (GMainContext *context), (context))
FORWARD_VOID(g_main_context_pop_thread_default, (GMainContext *context), (context))
FORWARD_VOID(g_main_context_invoke_full,
             (GMainContext *context, gint priority, GSourceFunc function, gpointer data, GDestroyNotify notify),
             (context, priority, function, data, notify))
FORWARD(GMainLoop *, g_main_loop_new, (GMainContext *context, gboolean is_running), (context, is_running))
FORWARD_VOID(g_main_loop_unref, (GMainLoop *loop), (loop))
FORWARD_VOID(g_main_loop_run, (GMainLoop *loop), (loop))
FORWARD_VOID(g_main_loop_quit, (GMainLoop *loop), (loop))
FORWARD(GDBusConnection *, g_bus_get_sync, (GBusType bus_type, GCancellable *cancellable, GError **error),
        (bus_type, cancellable, error))
FORWARD(gboolean, g_dbus_connection_is_closed, (GDBusConnection *connection), (connection))
FORWARD_VOID(g_dbus_connection_set_exit_on_close, (GDBusConnection *connection, gboolean exit_on_close),
             (connection, exit_on_close))

/* The helpers, on functions declared here alone (GLib's own prototypes, by value of their ABI). */
typedef void (*GCallback)(void);
typedef struct _GVariantType GVariantType;
enum { TOCSIN_G_CONNECT_DEFAULT = 0, TOCSIN_G_DBUS_CALL_FLAGS_NO_AUTO_START = 1 };

gulong tocsin_connect_closed(NotifyNotification *notification, TocsinClosedCallback callback, gpointer user_data,
                             GClosureNotify destroy) {
    RESOLVE(gulong (*)(gpointer, const gchar *, GCallback, gpointer, GClosureNotify, int), "g_signal_connect_data")
    return f(notification, "closed", (GCallback)callback, user_data, destroy, TOCSIN_G_CONNECT_DEFAULT);
}

gchar *tocsin_get_name_owner(GDBusConnection *connection, const gchar *name, gint timeout_ms, GError **error) {
    GVariant *arg;
    {
        RESOLVE(GVariant *(*)(const gchar *), "g_variant_new_string")
        arg = f(name);
    }
    GVariant *args;
    {
        RESOLVE(GVariant *(*)(GVariant *const *, size_t), "g_variant_new_tuple")
        args = f(&arg, 1);  /* sinks the floating string; the floating tuple is the call's */
    }
    GVariant *reply;
    {
        RESOLVE(GVariant *(*)(GDBusConnection *, const gchar *, const gchar *, const gchar *, const gchar *, GVariant *,
                              const GVariantType *, int, gint, GCancellable *, GError **),
                "g_dbus_connection_call_sync")
        /* G_VARIANT_TYPE("(s)") is the type string itself, cast. */
        reply = f(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                  args, (const GVariantType *)"(s)", TOCSIN_G_DBUS_CALL_FLAGS_NO_AUTO_START, timeout_ms, NULL, error);
    }
    if (reply == NULL) return NULL;
    GVariant *child;
    {
        RESOLVE(GVariant *(*)(GVariant *, size_t), "g_variant_get_child_value")
        child = f(reply, 0);
    }
    gchar *owner;
    {
        RESOLVE(gchar *(*)(GVariant *, size_t *), "g_variant_dup_string")
        owner = f(child, NULL);
    }
    {
        RESOLVE(void (*)(GVariant *), "g_variant_unref")
        f(child);
        f(reply);
    }
    return owner;
}

void tocsin_free_string_list(GList *list) {
    RESOLVE(void (*)(GList *, GDestroyNotify), "g_list_free_full")
    f(list, g_free);
}
