#!/usr/bin/env bash
# Builds Tocsin in release mode and installs it under $DESTDIR$PREFIX:
#   bin/tocsin, lib/systemd/user/tocsin.service, share/dbus-1/services/io.github.tocsin.Gateway.service,
#   share/dbus-1/interfaces/io.github.tocsin.Gateway1.xml and Backend1.xml, shell completions, man page,
#   share/tocsin/sounds/.
# PREFIX defaults to /usr/local. CONFIGURATION=debug installs a debug build (used by the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX="${PREFIX:-/usr/local}"
DESTDIR="${DESTDIR:-}"
CONFIGURATION="${CONFIGURATION:-release}"
root="$DESTDIR$PREFIX"

swift build -c "$CONFIGURATION" --product tocsin
bin="$(swift build -c "$CONFIGURATION" --show-bin-path)/tocsin"

install -d "$root/bin" "$root/lib/systemd/user" "$root/share/dbus-1/services" "$root/share/dbus-1/interfaces" \
  "$root/share/bash-completion/completions" "$root/share/zsh/site-functions" "$root/share/fish/vendor_completions.d" \
  "$root/share/man/man1" "$root/share/tocsin/examples"
install -m 0755 "$bin" "$root/bin/tocsin"
sed "s|/usr/local/bin/|$PREFIX/bin/|g" contrib/systemd/tocsin.service > "$root/lib/systemd/user/tocsin.service"
sed "s|/usr/local/bin/|$PREFIX/bin/|g" contrib/dbus/io.github.tocsin.Gateway.service > "$root/share/dbus-1/services/io.github.tocsin.Gateway.service"
# Wake alarms need CAP_WAKE_ALARM, which the user manager passes on from systemd 254; 255 fails
# any user unit with AmbientCapabilities=, and older ones have nothing to pass on.
systemd_version="$( (systemctl --version 2>/dev/null || true) | awk 'NR == 1 { print $2 }')"
if [ -n "$systemd_version" ] && { [ "$systemd_version" = 254 ] || [ "$systemd_version" -ge 256 ] 2>/dev/null; }; then
  install -d "$root/lib/systemd/user/tocsin.service.d"
  install -m 0644 contrib/systemd/tocsin.service.d/wake-alarm.conf "$root/lib/systemd/user/tocsin.service.d/"
else
  echo "install: systemd ${systemd_version:-not found}: wake alarms need 'sudo setcap cap_wake_alarm+ep $PREFIX/bin/tocsin' (README, Sleep and wake)" >&2
fi
install -m 0644 contrib/io.github.tocsin.Gateway1.xml contrib/io.github.tocsin.Backend1.xml "$root/share/dbus-1/interfaces/"
install -m 0644 contrib/examples/*.toml "$root/share/tocsin/examples/"
if [ -d contrib/sounds ]; then
  install -d "$root/share/tocsin/sounds"
  find contrib/sounds -maxdepth 1 -type f \( -name '*.wav' -o -name '*.oga' -o -name '*.ogg' \) -exec install -m 0644 {} "$root/share/tocsin/sounds/" \;
fi
"$bin" --generate-completion-script bash > "$root/share/bash-completion/completions/tocsin"
"$bin" --generate-completion-script zsh > "$root/share/zsh/site-functions/_tocsin"
"$bin" --generate-completion-script fish > "$root/share/fish/vendor_completions.d/tocsin.fish"
# swift-argument-parser's plugin writes the man page from the same definitions as --help.
swift package generate-manual >/dev/null
install -m 0644 .build/plugins/GenerateManual/outputs/tocsin/tocsin.1 "$root/share/man/man1/tocsin.1"
echo "installed Tocsin under $root"
