#ifndef TOCSIN_CLIBNOTIFY_SHIM_H
#define TOCSIN_CLIBNOTIFY_SHIM_H

/* The part of libnotify, GIO and GLib the desktop backend calls, declared here with their ABI
 * (LP64 Linux) instead of included from their headers, and defined in lazy.c, which loads
 * libnotify.so.4 (and with it gdk-pixbuf, GIO, GObject, GLib) on first use.
 *
 * Why not link it: every `tocsin` command (status, list, next...) would otherwise load those
 * libraries and their dependencies at start, about 1.5 ms of each command's CPU, though only the
 * daemon's desktop backend ever calls them. The headers cannot be used for the declarations: a
 * module that takes libnotify's include paths from pkg-config also takes its link flags.
 *
 * Opaque types stay incomplete (Swift sees OpaquePointer); the two structs Swift reads, GError
 * and GList, are declared with GLib's layout. */

/* scripts/check-libnotify-shim.sh defines TOCSIN_SHIM_SYSTEM_TYPES to take these from the real
 * headers, so that the compiler checks every declaration below against GLib's and libnotify's. */
#ifndef TOCSIN_SHIM_SYSTEM_TYPES
typedef int gboolean;
typedef int gint;
typedef char gchar;
typedef void *gpointer;
typedef unsigned long gulong;
typedef unsigned int GQuark;
typedef unsigned int guint;
typedef unsigned int guint32;

typedef struct _GError {
    GQuark domain;
    gint code;
    gchar *message;
} GError;

typedef struct _GList {
    gpointer data;
    struct _GList *next;
    struct _GList *prev;
} GList;

typedef struct _NotifyNotification NotifyNotification;
typedef struct _GClosure GClosure;
typedef struct _GMainContext GMainContext;
typedef struct _GMainLoop GMainLoop;
typedef struct _GDBusConnection GDBusConnection;
typedef struct _GCancellable GCancellable;
typedef struct _GVariant GVariant;

typedef enum {
    G_BUS_TYPE_STARTER = -1,
    G_BUS_TYPE_NONE = 0,
    G_BUS_TYPE_SYSTEM = 1,
    G_BUS_TYPE_SESSION = 2
} GBusType;

typedef enum {
    NOTIFY_URGENCY_LOW,
    NOTIFY_URGENCY_NORMAL,
    NOTIFY_URGENCY_CRITICAL,
} NotifyUrgency;

typedef void (*GDestroyNotify)(gpointer data);
typedef void (*GFreeFunc)(gpointer data);
typedef gboolean (*GSourceFunc)(gpointer user_data);
typedef void (*GClosureNotify)(gpointer data, GClosure *closure);
typedef void (*NotifyActionCallback)(NotifyNotification *notification, char *action, gpointer user_data);
#endif

typedef void (*TocsinClosedCallback)(NotifyNotification *notification, gpointer user_data);
/* A signal of the notification server: ActionInvoked (action non-NULL) or NotificationClosed
 * (action NULL, reason set). */
typedef void (*TocsinServerSignalCallback)(guint32 id, const char *action, guint32 reason, gpointer user_data);

/* libnotify */
gboolean notify_init(const char *app_name);
void notify_uninit(void);
gboolean notify_is_initted(void);
GList *notify_get_server_caps(void);
NotifyNotification *notify_notification_new(const char *summary, const char *body, const char *icon);
gboolean notify_notification_update(NotifyNotification *notification, const char *summary, const char *body,
                                    const char *icon);
gboolean notify_notification_show(NotifyNotification *notification, GError **error);
void notify_notification_set_app_name(NotifyNotification *notification, const char *app_name);
void notify_notification_set_timeout(NotifyNotification *notification, gint timeout);
void notify_notification_set_category(NotifyNotification *notification, const char *category);
void notify_notification_set_urgency(NotifyNotification *notification, NotifyUrgency urgency);
void notify_notification_set_hint(NotifyNotification *notification, const char *key, GVariant *value);
void notify_notification_set_hint_string(NotifyNotification *notification, const char *key, const char *value);
void notify_notification_clear_hints(NotifyNotification *notification);
void notify_notification_add_action(NotifyNotification *notification, const char *action, const char *label,
                                    NotifyActionCallback callback, gpointer user_data, GFreeFunc free_func);
void notify_notification_clear_actions(NotifyNotification *notification);
gboolean notify_notification_close(NotifyNotification *notification, GError **error);

/* GLib, GObject, GIO */
void g_free(gpointer mem);
void g_error_free(GError *error);
void g_object_unref(gpointer object);
GVariant *g_variant_new_boolean(gboolean value);
GMainContext *g_main_context_new(void);
void g_main_context_unref(GMainContext *context);
gboolean g_main_context_is_owner(GMainContext *context);
void g_main_context_push_thread_default(GMainContext *context);
void g_main_context_pop_thread_default(GMainContext *context);
void g_main_context_invoke_full(GMainContext *context, gint priority, GSourceFunc function, gpointer data,
                                GDestroyNotify notify);
GMainLoop *g_main_loop_new(GMainContext *context, gboolean is_running);
void g_main_loop_unref(GMainLoop *loop);
void g_main_loop_run(GMainLoop *loop);
void g_main_loop_quit(GMainLoop *loop);
GDBusConnection *g_bus_get_sync(GBusType bus_type, GCancellable *cancellable, GError **error);
gboolean g_dbus_connection_is_closed(GDBusConnection *connection);
void g_dbus_connection_set_exit_on_close(GDBusConnection *connection, gboolean exit_on_close);

/* GLib's signal and variant helpers are macros or variadic functions, which Swift cannot import:
 * these typed wrappers (lazy.c) keep every cast on the C side. */

/* Connects the "closed" signal (emitted when the server reports NotificationClosed for this popup). */
gulong tocsin_connect_closed(NotifyNotification *notification, TocsinClosedCallback callback, gpointer user_data,
                             GClosureNotify destroy);

/* Who owns a bus name right now: a newly allocated unique name (g_free it), or NULL with *error set
 * (org.freedesktop.DBus.Error.NameHasNoOwner when nobody does). */
gchar *tocsin_get_name_owner(GDBusConnection *connection, const gchar *name, gint timeout_ms, GError **error);

/* The GUID of the bus `connection` is on (g_dbus_connection_get_guid): unique names are
 * unique on one bus only, and a restarted bus hands out :1.0 again. Owned by the connection. */
const gchar *tocsin_connection_guid(GDBusConnection *connection);

/* The popup's id on the server (libnotify's "id" property): 0 before it was shown. */
guint32 tocsin_notification_get_id(NotifyNotification *notification);

/* Sets the popup's id, so the next show replaces that popup on the server (Notify's replaces_id)
 * and close closes it: how a popup an earlier run showed is taken over. */
void tocsin_notification_set_id(NotifyNotification *notification, guint32 id);

/* Subscribes to ActionInvoked and NotificationClosed sent by `sender` (a unique name) on
 * /org/freedesktop/Notifications; callbacks run on the thread-default main context of the caller.
 * Returns the subscription id (0 on failure); `destroy` frees user_data after unsubscribing. */
guint tocsin_subscribe_server_signals(GDBusConnection *connection, const gchar *sender, TocsinServerSignalCallback callback,
                                      gpointer user_data, GDestroyNotify destroy);
void tocsin_unsubscribe_server_signals(GDBusConnection *connection, guint subscription);

/* Frees the list notify_get_server_caps returns. */
void tocsin_free_string_list(GList *list);

/* Why libnotify.so.4 could not be loaded ("cannot load libnotify.so.4: ..."), or NULL when it is
 * loaded or was never asked for. */
const char *tocsin_libnotify_load_error(void);

/* Loads libnotify.so.4 if it is not yet loaded: nonzero when it is (then nothing of GLib has run
 * beyond the libraries' own initialisers), zero with tocsin_libnotify_load_error's reason. */
int tocsin_libnotify_load(void);

/* G_SOURCE_REMOVE and G_PRIORITY_DEFAULT. */
static inline gboolean tocsin_source_remove(void) { return 0; }
static inline gint tocsin_priority_default(void) { return 0; }

#endif
