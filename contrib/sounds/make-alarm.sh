#!/usr/bin/env bash
# Makes contrib/sounds/alarm.wav, Tocsin's own alarm sound: 1.5 s of a two-tone beep
# (880 Hz / 660 Hz, three pairs of 0.25 s tones with 10 ms fades against clicks),
# 16 kHz mono 16-bit PCM, about 48 KB. Needs sox. -D (no dither) keeps the output byte-identical
# from run to run, so a re-run shows no diff.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sox -D -n -r 16000 -c 1 -b 16 "$tmp/hi.wav" synth 0.25 sine 880 fade t 0.01 0.25 0.01 vol 0.6
sox -D -n -r 16000 -c 1 -b 16 "$tmp/lo.wav" synth 0.25 sine 660 fade t 0.01 0.25 0.01 vol 0.6
sox -D "$tmp/hi.wav" "$tmp/lo.wav" "$tmp/hi.wav" "$tmp/lo.wav" "$tmp/hi.wav" "$tmp/lo.wav" alarm.wav
