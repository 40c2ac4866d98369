#!/usr/bin/env bash
# The one list of system packages Tocsin needs to build and to run its test suite.
# Installs only what is missing, so a machine that already has them pays nothing.
set -euo pipefail

PACKAGES=(
  pkg-config
  libdbus-1-dev
  libglib2.0-dev
  libnotify-dev
  libsqlite3-dev
  libmosquitto-dev
  mosquitto
  mosquitto-clients
  openssl
  dbus
  dbus-bin
  libglib2.0-bin
  systemd
  tzdata
  dunst
  xvfb
  pulseaudio
  pulseaudio-utils
  sox
  opus-tools
  python3-dbusmock
  libcap2-bin
  sqlite3
  python3-dbus
  python3-gi
  python3-venv
  imagemagick
  tmux
  e2fsprogs
  util-linux
  # Packaging (scripts/package.sh) and its proof in a clean Debian root (scripts/test-package.sh).
  dpkg-dev
  binutils
  lintian
  mmdebstrap
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo apt-get install -y ${missing[*]})" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
