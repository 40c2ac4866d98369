/* libnotify, GIO and GLib, loaded on first use (see include/shim.h for why). Each function the
 * desktop backend calls is defined here and forwards to the library's symbol, resolved once;
 * dlsym on libnotify's handle also finds GLib's, GObject's and GIO's, which it depends on.
 *
 * Without the library, g_main_context_new answers NULL: the backend cannot start its GLib loop
 * and reports itself unavailable with tocsin_libnotify_load_error's reason. Everything else is called only on that loop, so only once
 * the library is there. */
#include <stddef.h>
#include <string.h>

#define TOCSIN_LAZY_SONAME "libnotify.so.4"
#include "../CTocsinSystem/lazy_library.h"

/* Hidden: see lazy_library.h. */
#pragma GCC visibility push(hidden)
#include "shim.h"

const char *tocsin_libnotify_load_error(void) { return lazy_load_error(); }

int tocsin_libnotify_load(void) { return lazy_loaded(); }

GMainContext *g_main_context_new(void) {
    if (!lazy_loaded()) return NULL;
    LAZY_RESOLVE(__typeof__(&g_main_context_new), "g_main_context_new")
    return f();
}

LAZY_FORWARD(gboolean, notify_init, (const char *app_name), (app_name))
LAZY_FORWARD_VOID(notify_uninit, (void), ())
LAZY_FORWARD(gboolean, notify_is_initted, (void), ())
LAZY_FORWARD(GList *, notify_get_server_caps, (void), ())
LAZY_FORWARD(NotifyNotification *, notify_notification_new, (const char *summary, const char *body, const char *icon),
        (summary, body, icon))
LAZY_FORWARD(gboolean, notify_notification_update,
        (NotifyNotification *notification, const char *summary, const char *body, const char *icon),
        (notification, summary, body, icon))
LAZY_FORWARD(gboolean, notify_notification_show, (NotifyNotification *notification, GError **error), (notification, error))
LAZY_FORWARD_VOID(notify_notification_set_app_name, (NotifyNotification *notification, const char *app_name),
             (notification, app_name))
LAZY_FORWARD_VOID(notify_notification_set_timeout, (NotifyNotification *notification, gint timeout), (notification, timeout))
LAZY_FORWARD_VOID(notify_notification_set_category, (NotifyNotification *notification, const char *category),
             (notification, category))
LAZY_FORWARD_VOID(notify_notification_set_urgency, (NotifyNotification *notification, NotifyUrgency urgency),
             (notification, urgency))
LAZY_FORWARD_VOID(notify_notification_set_hint, (NotifyNotification *notification, const char *key, GVariant *value),
             (notification, key, value))
LAZY_FORWARD_VOID(notify_notification_set_hint_string,
             (NotifyNotification *notification, const char *key, const char *value), (notification, key, value))
LAZY_FORWARD_VOID(notify_notification_clear_hints, (NotifyNotification *notification), (notification))
LAZY_FORWARD_VOID(notify_notification_add_action,
             (NotifyNotification *notification, const char *action, const char *label, NotifyActionCallback callback,
              gpointer user_data, GFreeFunc free_func),
             (notification, action, label, callback, user_data, free_func))
LAZY_FORWARD_VOID(notify_notification_clear_actions, (NotifyNotification *notification), (notification))
LAZY_FORWARD(gboolean, notify_notification_close, (NotifyNotification *notification, GError **error), (notification, error))

LAZY_FORWARD_VOID(g_free, (gpointer mem), (mem))
LAZY_FORWARD_VOID(g_error_free, (GError *error), (error))
LAZY_FORWARD_VOID(g_object_unref, (gpointer object), (object))
LAZY_FORWARD(GVariant *, g_variant_new_boolean, (gboolean value), (value))
LAZY_FORWARD_VOID(g_main_context_unref, (GMainContext *context), (context))
LAZY_FORWARD(gboolean, g_main_context_is_owner, (GMainContext *context), (context))
LAZY_FORWARD_VOID(g_main_context_push_thread_default, (GMainContext *context), (context))
LAZY_FORWARD_VOID(g_main_context_pop_thread_default, (GMainContext *context), (context))
LAZY_FORWARD_VOID(g_main_context_invoke_full,
             (GMainContext *context, gint priority, GSourceFunc function, gpointer data, GDestroyNotify notify),
             (context, priority, function, data, notify))
LAZY_FORWARD(GMainLoop *, g_main_loop_new, (GMainContext *context, gboolean is_running), (context, is_running))
LAZY_FORWARD_VOID(g_main_loop_unref, (GMainLoop *loop), (loop))
LAZY_FORWARD_VOID(g_main_loop_run, (GMainLoop *loop), (loop))
LAZY_FORWARD_VOID(g_main_loop_quit, (GMainLoop *loop), (loop))
LAZY_FORWARD(GDBusConnection *, g_bus_get_sync, (GBusType bus_type, GCancellable *cancellable, GError **error),
        (bus_type, cancellable, error))
LAZY_FORWARD(gboolean, g_dbus_connection_is_closed, (GDBusConnection *connection), (connection))
LAZY_FORWARD_VOID(g_dbus_connection_set_exit_on_close, (GDBusConnection *connection, gboolean exit_on_close),
             (connection, exit_on_close))

/* The helpers, on functions declared here alone (GLib's own prototypes, by value of their ABI). */
typedef void (*GCallback)(void);
typedef struct _GVariantType GVariantType;
enum { TOCSIN_G_CONNECT_DEFAULT = 0, TOCSIN_G_DBUS_CALL_FLAGS_NO_AUTO_START = 1 };

gulong tocsin_connect_closed(NotifyNotification *notification, TocsinClosedCallback callback, gpointer user_data,
                             GClosureNotify destroy) {
    LAZY_RESOLVE(gulong (*)(gpointer, const gchar *, GCallback, gpointer, GClosureNotify, int), "g_signal_connect_data")
    return f(notification, "closed", (GCallback)callback, user_data, destroy, TOCSIN_G_CONNECT_DEFAULT);
}

gchar *tocsin_get_name_owner(GDBusConnection *connection, const gchar *name, gint timeout_ms, GError **error) {
    GVariant *arg;
    {
        LAZY_RESOLVE(GVariant *(*)(const gchar *), "g_variant_new_string")
        arg = f(name);
    }
    GVariant *args;
    {
        LAZY_RESOLVE(GVariant *(*)(GVariant *const *, size_t), "g_variant_new_tuple")
        args = f(&arg, 1);  /* sinks the floating string; the floating tuple is the call's */
    }
    GVariant *reply;
    {
        LAZY_RESOLVE(GVariant *(*)(GDBusConnection *, const gchar *, const gchar *, const gchar *, const gchar *, GVariant *,
                              const GVariantType *, int, gint, GCancellable *, GError **),
                "g_dbus_connection_call_sync")
        /* G_VARIANT_TYPE("(s)") is the type string itself, cast. */
        reply = f(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                  args, (const GVariantType *)"(s)", TOCSIN_G_DBUS_CALL_FLAGS_NO_AUTO_START, timeout_ms, NULL, error);
    }
    if (reply == NULL) return NULL;
    GVariant *child;
    {
        LAZY_RESOLVE(GVariant *(*)(GVariant *, size_t), "g_variant_get_child_value")
        child = f(reply, 0);
    }
    gchar *owner;
    {
        LAZY_RESOLVE(gchar *(*)(GVariant *, size_t *), "g_variant_dup_string")
        owner = f(child, NULL);
    }
    {
        LAZY_RESOLVE(void (*)(GVariant *), "g_variant_unref")
        f(child);
        f(reply);
    }
    return owner;
}

const gchar *tocsin_connection_guid(GDBusConnection *connection) {
    LAZY_RESOLVE(const gchar *(*)(GDBusConnection *), "g_dbus_connection_get_guid")
    return f(connection);
}

guint32 tocsin_notification_get_id(NotifyNotification *notification) {
    gint id = 0;
    LAZY_RESOLVE(void (*)(gpointer, const gchar *, ...), "g_object_get")
    f(notification, "id", &id, NULL);
    return (guint32)id;
}

void tocsin_notification_set_id(NotifyNotification *notification, guint32 id) {
    LAZY_RESOLVE(void (*)(gpointer, const gchar *, ...), "g_object_set")
    f(notification, "id", (gint)id, NULL);
}

struct tocsin_server_signal {
    TocsinServerSignalCallback callback;
    gpointer user_data;
    GDestroyNotify destroy;
};

static void tocsin_server_signal_free(gpointer data) {
    struct tocsin_server_signal *s = data;
    if (s->destroy) s->destroy(s->user_data);
    g_free(s);
}

static void tocsin_server_signal_received(GDBusConnection *connection, const gchar *sender, const gchar *path,
                                          const gchar *interface, const gchar *member, GVariant *parameters,
                                          gpointer data) {
    (void)connection; (void)sender; (void)path; (void)interface;
    struct tocsin_server_signal *s = data;
    const gchar *type;
    {
        LAZY_RESOLVE(const gchar *(*)(GVariant *), "g_variant_get_type_string")
        type = f(parameters);
    }
    int action = strcmp(member, "ActionInvoked") == 0;
    int closed = strcmp(member, "NotificationClosed") == 0;
    if (!(action && strcmp(type, "(us)") == 0) && !(closed && strcmp(type, "(uu)") == 0)) return;
    GVariant *first, *second;
    {
        LAZY_RESOLVE(GVariant *(*)(GVariant *, size_t), "g_variant_get_child_value")
        first = f(parameters, 0);
        second = f(parameters, 1);
    }
    guint32 id, reason = 0;
    const gchar *name = NULL;
    {
        LAZY_RESOLVE(guint32 (*)(GVariant *), "g_variant_get_uint32")
        id = f(first);
        if (!action) reason = f(second);
    }
    if (action) {
        LAZY_RESOLVE(const gchar *(*)(GVariant *, size_t *), "g_variant_get_string")
        name = f(second, NULL);
    }
    s->callback(id, action ? name : NULL, reason, s->user_data);
    {
        LAZY_RESOLVE(void (*)(GVariant *), "g_variant_unref")
        f(first);
        f(second);
    }
}

guint tocsin_subscribe_server_signals(GDBusConnection *connection, const gchar *sender, TocsinServerSignalCallback callback,
                                      gpointer user_data, GDestroyNotify destroy) {
    struct tocsin_server_signal *s;
    {
        LAZY_RESOLVE(gpointer (*)(size_t), "g_malloc0")
        s = f(sizeof *s);
    }
    s->callback = callback;
    s->user_data = user_data;
    s->destroy = destroy;
    LAZY_RESOLVE(guint (*)(GDBusConnection *, const gchar *, const gchar *, const gchar *, const gchar *, const gchar *, int,
                           void (*)(GDBusConnection *, const gchar *, const gchar *, const gchar *, const gchar *, GVariant *, gpointer),
                           gpointer, GDestroyNotify),
                 "g_dbus_connection_signal_subscribe")
    /* G_DBUS_SIGNAL_FLAGS_NONE */
    return f(connection, sender, "org.freedesktop.Notifications", NULL, "/org/freedesktop/Notifications", NULL, 0,
             tocsin_server_signal_received, s, tocsin_server_signal_free);
}

void tocsin_unsubscribe_server_signals(GDBusConnection *connection, guint subscription) {
    LAZY_RESOLVE(void (*)(GDBusConnection *, guint), "g_dbus_connection_signal_unsubscribe")
    f(connection, subscription);
}

void tocsin_free_string_list(GList *list) {
    LAZY_RESOLVE(void (*)(GList *, GDestroyNotify), "g_list_free_full")
    f(list, g_free);
}
