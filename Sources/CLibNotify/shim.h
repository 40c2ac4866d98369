#ifndef TOCSIN_CLIBNOTIFY_SHIM_H
#define TOCSIN_CLIBNOTIFY_SHIM_H

#include <libnotify/notify.h>
#include <gio/gio.h>

/* GLib's signal and variant helpers are macros or variadic functions, which Swift cannot import.
 * These typed wrappers keep every cast on the C side, so Swift passes plain @convention(c) functions. */

typedef void (*TocsinClosedCallback)(NotifyNotification *notification, gpointer user_data);

/* Connects the "closed" signal (emitted when the server reports NotificationClosed for this popup). */
static inline gulong tocsin_connect_closed(NotifyNotification *notification, TocsinClosedCallback callback,
                                           gpointer user_data, GClosureNotify destroy) {
    return g_signal_connect_data(notification, "closed", G_CALLBACK(callback), user_data, destroy, (GConnectFlags)0);
}

/* Who owns a bus name right now: a newly allocated unique name (g_free it), or NULL with *error set
 * (org.freedesktop.DBus.Error.NameHasNoOwner when nobody does). */
static inline gchar *tocsin_get_name_owner(GDBusConnection *connection, const gchar *name, gint timeout_ms,
                                           GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                  "org.freedesktop.DBus", "GetNameOwner", g_variant_new("(s)", name),
                                                  G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NO_AUTO_START, timeout_ms,
                                                  NULL, error);
    if (reply == NULL) return NULL;
    gchar *owner = NULL;
    g_variant_get(reply, "(s)", &owner);
    g_variant_unref(reply);
    return owner;
}

/* Frees the list notify_get_server_caps returns. */
static inline void tocsin_free_string_list(GList *list) {
    g_list_free_full(list, g_free);
}

/* G_SOURCE_REMOVE and G_PRIORITY_DEFAULT are macros Swift may not see as constants. */
static inline gboolean tocsin_source_remove(void) { return G_SOURCE_REMOVE; }
static inline gint tocsin_priority_default(void) { return G_PRIORITY_DEFAULT; }

#endif
