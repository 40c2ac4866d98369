#!/bin/sh
# Talking to Tocsin with nothing but gdbus and busctl (both shipped with every desktop).
set -eu
DEST=io.github.tocsin.Gateway
OBJ=/io/github/tocsin/Gateway
IFACE=io.github.tocsin.Gateway1

# Schedule a notification in 5 minutes; the reply is its key.
gdbus call --session -d $DEST -o $OBJ -m $IFACE.Schedule \
  "{'key': <'tea'>, 'title': <'Tea is ready'>, 'after': <'5min'>}"

# Every weekday at 07:30 in Berlin time.
gdbus call --session -d $DEST -o $OBJ -m $IFACE.Schedule \
  "{'key': <'wake'>, 'title': <'Wake up'>, 'on_calendar': <'Mon..Fri 07:30'>, 'timezone': <'Europe/Berlin'>}"

# What is pending, then cancel one.
gdbus call --session -d $DEST -o $OBJ -m $IFACE.List
busctl --user call $DEST $OBJ $IFACE Cancel s tea

# Follow the events (Ctrl-C to stop).
gdbus monitor --session -d $DEST -o $OBJ
