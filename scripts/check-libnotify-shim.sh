#!/bin/sh
# Compiles Sources/CLibNotify/include/shim.h (the libnotify, GIO and GLib declarations the desktop
# backend uses, written out so the executable need not link those libraries) against the real
# headers: a declaration that disagrees with GLib's or libnotify's is a compile error here, and
# the constants and layouts the shim hard-codes are asserted. Needs libnotify-dev.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/check.c" <<'C'
#include <stddef.h>
#include <libnotify/notify.h>
#include <gio/gio.h>
#define TOCSIN_SHIM_SYSTEM_TYPES 1
#include "shim.h"
_Static_assert(G_BUS_TYPE_SESSION == 2, "GBusType");
_Static_assert(NOTIFY_URGENCY_LOW == 0 && NOTIFY_URGENCY_NORMAL == 1 && NOTIFY_URGENCY_CRITICAL == 2, "NotifyUrgency");
_Static_assert(G_SOURCE_REMOVE == 0 && G_PRIORITY_DEFAULT == 0, "tocsin_source_remove, tocsin_priority_default");
_Static_assert(G_CONNECT_DEFAULT == 0 && G_DBUS_CALL_FLAGS_NO_AUTO_START == 1, "flags in lazy.c");
_Static_assert(offsetof(GError, domain) == 0 && offsetof(GError, code) == 4 && offsetof(GError, message) == 8, "GError");
_Static_assert(offsetof(GList, data) == 0 && offsetof(GList, next) == 8 && offsetof(GList, prev) == 16, "GList");
_Static_assert(sizeof(gboolean) == 4 && sizeof(gulong) == 8 && sizeof(GQuark) == 4, "scalar types");
C
# shellcheck disable=SC2046
cc -fsyntax-only -Werror -I Sources/CLibNotify/include $(pkg-config --cflags libnotify) "$tmp/check.c"
echo "shim.h agrees with libnotify's and GLib's headers"
