#!/usr/bin/env python3
"""Differential test of toml-test-decoder against Python's tomllib (the reference decoder).

Generates random valid TOML documents, mutations of them (byte flips, truncations, insertions
of tricky tokens, line shuffles) and short documents of table headers and dotted keys in random
order (the redefinition rules) from a fixed seed, runs the decoder on each, and checks that it
accepts exactly what tomllib accepts and yields the same values. Exit status 0 when every case
agrees; otherwise each mismatch is printed with its input (as a Python bytes literal).

Known, deliberate differences are folded into the expectation rather than ignored:
  * integers outside the signed 64-bit range: tomllib accepts them, TOML 1.0 says to reject;
  * fractional seconds: tomllib keeps microseconds, the decoder nanoseconds; compared at 6 digits;
  * a leading UTF-8 BOM: tomllib rejects it, TOML (and toml-test) accept it; stripped for tomllib.

tomllib reads TOML 1.0, so the decoder runs with `--toml-version 1.0`. A document both reject is
also given to the decoder in 1.1 mode: if 1.1 accepts it (a mutation made a 1.1-only document,
such as a time without seconds), the 1.0 diagnostics must say that the feature is TOML 1.1.

With --v11-cases N, N generated valid documents are also rewritten into a TOML 1.1 form that
means the same (a `:00` seconds field dropped, a newline after `{`, a trailing comma before `}`).
Where tomllib rejects the rewrite and 1.1 mode accepts it, 1.1 mode must decode it to tomllib's
value of the original, and 1.0 mode must reject it naming the 1.1 feature.

Usage: toml-differential.py --decoder PATH [--cases N] [--v11-cases N] [--seed S] [--jobs J]
"""

import argparse
import concurrent.futures
import datetime
import json
import math
import random
import re
import subprocess
import sys
import tomllib

# ----------------------------------------------------------------------------- generation

BARE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
NAMES = ["title", "key", "body", "every", "at", "a", "b", "c", "x", "y", "1", "-", "_", "on_calendar",
         "user_info", "actions", "t", "true", "inf", "nan", "0x10", "2024-01-01"]
UNICODE = ["é", "ü", "日本", "ß", "😀", "\u00a0", "Ω", "\u2028"]


class Gen:
    def __init__(self, rng: random.Random):
        self.r = rng

    def choice(self, xs):
        return self.r.choice(xs)

    def bare_key(self):
        if self.r.random() < 0.7:
            return self.choice(NAMES)
        return "".join(self.choice(BARE_CHARS) for _ in range(self.r.randint(1, 8)))

    def key_part(self):
        k = self.r.random()
        if k < 0.75:
            return self.bare_key()
        if k < 0.9:
            return self.basic_string(single_line=True, short=True)
        return "'" + self.literal_body(short=True) + "'"

    def key(self, allow_dotted=True):
        parts = [self.key_part()]
        while allow_dotted and self.r.random() < 0.25 and len(parts) < 4:
            parts.append(self.key_part())
        seps = [".", " . ", ".\t", " ."]
        out = parts[0]
        for p in parts[1:]:
            out += self.choice(seps) + p
        return out

    def plain_text(self, short=False):
        n = self.r.randint(0, 6 if short else 20)
        out = []
        for _ in range(n):
            k = self.r.random()
            if k < 0.75:
                out.append(self.choice("abcdefghij klmnopqrstuvwxyz ABC 0123456789 ,.;:!?#[]{}=+-_/'"))
            elif k < 0.9:
                out.append(self.choice(UNICODE))
            else:
                out.append("\t")
        return "".join(out)

    def escape(self):
        k = self.r.random()
        if k < 0.6:
            return self.choice(["\\n", "\\t", "\\\"", "\\\\", "\\b", "\\f", "\\r"])
        if k < 0.85:
            return "\\u%04X" % self.choice([0x41, 0xE9, 0x3A9, 0x7F, 0x0, 0x1F, 0xFFFD, 0x2028])
        return "\\U%08X" % self.choice([0x1F600, 0x41, 0x10FFFF, 0x10000])

    def basic_string(self, single_line=True, short=False):
        body = []
        for _ in range(self.r.randint(0, 4)):
            body.append(self.plain_text(short).replace("\\", "").replace('"', ""))
            if self.r.random() < 0.5:
                body.append(self.escape())
        return '"' + "".join(body) + '"'

    def literal_body(self, short=False):
        return self.plain_text(short).replace("'", "")

    def multiline_basic(self):
        parts = []
        for _ in range(self.r.randint(0, 5)):
            k = self.r.random()
            if k < 0.4:
                parts.append(self.plain_text().replace("\\", "").replace('"', ""))
            elif k < 0.55:
                parts.append(self.escape())
            elif k < 0.7:
                parts.append("\n")
            elif k < 0.8:
                parts.append(self.choice(['"', '""']) + "x")
            elif k < 0.9:
                parts.append("\\" + self.choice(["", " ", "\t "]) + "\n" + self.choice(["", "  ", "\n  "]))
            else:
                parts.append(self.choice(UNICODE))
        lead = self.choice(["", "\n"])
        tail = self.choice(["", "", '"', '""'])
        return '"""' + lead + "".join(parts) + tail + '"""'

    def multiline_literal(self):
        parts = []
        for _ in range(self.r.randint(0, 5)):
            k = self.r.random()
            if k < 0.6:
                parts.append(self.plain_text().replace("'", "") + self.choice(["", "\\", "\\n", '"']))
            elif k < 0.8:
                parts.append("\n")
            else:
                parts.append(self.choice(["'", "''"]) + "x")
        lead = self.choice(["", "\n"])
        tail = self.choice(["", "", "'", "''"])
        return "'''" + lead + "".join(parts) + tail + "'''"

    def digits(self, alphabet, n):
        s = self.choice(alphabet[1:] if len(alphabet) > 1 else alphabet)
        for _ in range(n - 1):
            if self.r.random() < 0.15:
                s += "_"
            s += self.choice(alphabet)
        return s

    def integer(self):
        k = self.r.random()
        if k < 0.5:
            if self.r.random() < 0.1:
                return self.choice(["0", "+0", "-0"])
            return self.choice(["", "", "+", "-"]) + self.digits("0123456789", self.r.randint(1, 20))
        if k < 0.7:
            return "0x" + self.digits("0123456789abcdefABCDEF", self.r.randint(1, 17))
        if k < 0.85:
            return "0o" + self.digits("01234567", self.r.randint(1, 22))
        if k < 0.95:
            return "0b" + self.digits("01", self.r.randint(1, 65))
        return self.choice(["9223372036854775807", "-9223372036854775808", "9223372036854775808",
                            "-9223372036854775809", "0x7FFFFFFFFFFFFFFF", "0x8000000000000000"])

    def float(self):
        k = self.r.random()
        if k < 0.15:
            return self.choice(["", "+", "-"]) + self.choice(["inf", "nan"])
        sign = self.choice(["", "", "+", "-"])
        ip = self.choice(["0", self.digits("0123456789", self.r.randint(1, 6))])
        frac = "." + self.digits("0123456789", self.r.randint(1, 8)).lstrip("_") if self.r.random() < 0.8 else ""
        if frac == ".":
            frac = ".0"
        exp = ""
        if not frac or self.r.random() < 0.4:
            exp = self.choice("eE") + self.choice(["", "+", "-"]) + self.digits("0123456789", self.r.randint(1, 3))
        return sign + ip + frac + exp

    def date(self):
        y = self.r.randint(0, 9999)
        m = self.r.randint(1, 12)
        d = self.r.randint(1, 28 if self.r.random() < 0.9 else 31)
        if m == 2 and d > 28:
            y = self.choice([2000, 2004, 1900, 2023])
        if m in (4, 6, 9, 11) and d == 31:
            d = 30
        return "%04d-%02d-%02d" % (y, m, d)

    def time(self):
        s = "%02d:%02d:%02d" % (self.r.randint(0, 23), self.r.randint(0, 59), self.r.randint(0, 59))
        if self.r.random() < 0.4:
            s += "." + "".join(self.choice("0123456789") for _ in range(self.r.randint(1, 10)))
        return s

    def datetime(self):
        k = self.r.random()
        if k < 0.25:
            return self.date()
        if k < 0.4:
            return self.time()
        s = self.date() + self.choice("Tt ") + self.time()
        if k < 0.6:
            return s
        if self.r.random() < 0.4:
            return s + self.choice("Zz")
        return s + self.choice("+-") + "%02d:%02d" % (self.r.randint(0, 23), self.r.randint(0, 59))

    def ws(self):
        return self.choice(["", " ", "  ", "\t"])

    def array(self, depth):
        n = self.r.randint(0, 5)
        items = [self.value(depth + 1) for _ in range(n)]
        out = "["
        for i, it in enumerate(items):
            out += self.choice(["", " ", "\n  ", " # c\n  "]) + it
            if i < n - 1:
                out += self.ws() + ","
        if n and self.r.random() < 0.3:
            out += ","
        out += self.choice(["", " ", "\n", " # end\n"]) + "]"
        return out

    def inline_table(self, depth):
        n = self.r.randint(0, 4)
        used = set()
        pairs = []
        for _ in range(n):
            k = self.key(allow_dotted=self.r.random() < 0.3)
            if k.split(".")[0].strip() in used:
                continue
            used.add(k.split(".")[0].strip())
            pairs.append(k + self.ws() + "=" + self.ws() + self.value(depth + 1, inline=True))
        return "{" + self.ws() + ("," + self.ws()).join(pairs) + self.ws() + "}"

    def value(self, depth=0, inline=False):
        k = self.r.random()
        if depth > 3:
            k = k * 0.8
        if k < 0.15:
            return self.basic_string()
        if k < 0.22:
            return "'" + self.literal_body() + "'"
        if k < 0.27 and not inline:
            return self.multiline_basic()
        if k < 0.31 and not inline:
            return self.multiline_literal()
        if k < 0.45:
            return self.integer()
        if k < 0.55:
            return self.float()
        if k < 0.6:
            return self.choice(["true", "false"])
        if k < 0.7:
            return self.datetime()
        if k < 0.85:
            return self.array(depth)
        return self.inline_table(depth)

    def comment(self):
        return "#" + self.plain_text().replace("\n", "")

    def document(self):
        lines = []
        if self.r.random() < 0.2:
            lines.append(self.comment())
        for _ in range(self.r.randint(0, 4)):
            lines.append(self.key() + self.ws() + "=" + self.ws() + self.value())
        for _ in range(self.r.randint(0, 4)):
            hdr = self.key()
            if self.r.random() < 0.3:
                lines.append("[[" + self.ws() + hdr + self.ws() + "]]" + self.choice(["", " # aot"]))
            else:
                lines.append("[" + self.ws() + hdr + self.ws() + "]" + self.choice(["", " # table"]))
            for _ in range(self.r.randint(0, 4)):
                line = self.ws() + self.key() + self.ws() + "=" + self.ws() + self.value()
                if self.r.random() < 0.2:
                    line += self.ws() + self.comment()
                lines.append(line)
            if self.r.random() < 0.2:
                lines.append("")
        nl = "\r\n" if self.r.random() < 0.15 else "\n"
        text = nl.join(lines) + (nl if self.r.random() < 0.8 else "")
        data = text.encode("utf-8")
        if self.r.random() < 0.05:
            data = b"\xef\xbb\xbf" + data
        return data


STRUCTURE_LINES = ["[a]", "[a.b]", "[a.b.c]", "[b]", "[a.c]", "[[a]]", "[[a.b]]", "[[b]]", "[[a.b.c]]",
                   "x = 1", "a = 1", "b = 2", "a.b = 1", "a.c = 2", "b.c = 3", "c.d.e = 4", "a.b.c = 5",
                   "a = {}", "b = {x = 1}", "a = []", "b = [{}]", "c = {d.e = 1, d.f = 2}", "c = {d = {}, d.e = 1}",
                   "'a'.\"b\" = 6", "\"a\" = 7", "[\"a\".b]", "[ a . 'b' ]"]


def structure_document(rng: random.Random) -> bytes:
    """Short documents of table headers and (dotted) keys in random order: they exercise the
    redefinition rules (implicit/explicit tables, dotted keys, arrays of tables, inline tables)."""
    lines = [rng.choice(STRUCTURE_LINES) for _ in range(rng.randint(1, 7))]
    return ("\n".join(lines) + "\n").encode()


TRICKY = [b'"', b"'", b'"""', b"'''", b"[", b"]", b"[[", b"]]", b"{", b"}", b"=", b".", b",", b"#",
          b"\\", b"\\u", b"\\U0011FFFF", b"\\uD800", b"\n", b"\r", b"\r\n", b"\t", b" ", b"\x00", b"\x7f",
          b"\x1f", b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"_", b"0x", b"0o", b"0b",
          b"e", b"E", b"+", b"-", b"inf", b"nan", b":", b"T", b"Z", b"z", b"00", b"99", b"1979-05-27",
          b"24:00:00", b"a = 1\n", b"[a]\n", b"[[a]]\n", b"a.b = 1\n", b"\xef\xbb\xbf", b"true", b"9" * 20]


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        k = rng.random()
        pos = rng.randint(0, len(b))
        if k < 0.25 and b:
            i = min(pos, len(b) - 1)
            b[i] = rng.randint(0, 255) if rng.random() < 0.3 else b[i] ^ (1 << rng.randint(0, 7))
        elif k < 0.4:
            del b[pos:]
        elif k < 0.75:
            b[pos:pos] = rng.choice(TRICKY)
        elif k < 0.85 and b:
            del b[pos:pos + rng.randint(1, 4)]
        else:
            lines = bytes(b).split(b"\n")
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                if rng.random() < 0.5:
                    lines[i], lines[j] = lines[j], lines[i]
                else:
                    lines.insert(j, lines[i])
                b = bytearray(b"\n".join(lines))
    return bytes(b)


def one_one_rewrite(rng: random.Random, data: bytes):
    """One TOML 1.1-only rewrite of a valid 1.0 document that keeps its meaning, or None."""
    text = data.decode("utf-8")
    kind = rng.choice(["seconds", "newline", "comma"])
    if kind == "seconds":
        spots = [(m.start(1), m.end(1), "") for m in re.finditer(r"\d\d:\d\d(:00)(?![.\d])", text)]
    elif kind == "newline":
        spots = [(m.end(), m.end(), "\n") for m in re.finditer(r"\{", text)]
    else:
        spots = [(m.start(), m.start(), ",") for m in re.finditer(r"[^{,\s]\s*\}", text)]
        spots = [(s + 1, s + 1, c) for s, _, c in spots]
    if not spots:
        return None
    start, end, insert = rng.choice(spots)
    return (text[:start] + insert + text[end:]).encode("utf-8")


# ----------------------------------------------------------------------------- expectations

INT64 = (-(2 ** 63), 2 ** 63 - 1)


def tag(v):
    """tomllib's value in the decoder's tagged form; raises OverflowError for non-64-bit ints."""
    if isinstance(v, bool):
        return {"type": "bool", "value": "true" if v else "false"}
    if isinstance(v, int):
        if not INT64[0] <= v <= INT64[1]:
            raise OverflowError(v)
        return {"type": "integer", "value": str(v)}
    if isinstance(v, float):
        return {"type": "float", "value": repr(v)}
    if isinstance(v, str):
        return {"type": "string", "value": v}
    if isinstance(v, datetime.datetime):
        t = "datetime" if v.tzinfo is not None else "datetime-local"
        return {"type": t, "value": v}
    if isinstance(v, datetime.date):
        return {"type": "date-local", "value": v}
    if isinstance(v, datetime.time):
        return {"type": "time-local", "value": v}
    if isinstance(v, list):
        return [tag(x) for x in v]
    if isinstance(v, dict):
        return {k: tag(x) for k, x in v.items()}
    raise TypeError(type(v))


def parse_float(s):
    return float(s)


def parse_dt(kind, s):
    """The decoder's RFC 3339 text -> comparable tuple, fractions truncated to microseconds."""
    date = time = off = None
    if kind in ("datetime", "datetime-local", "date-local"):
        date = (int(s[0:4]), int(s[5:7]), int(s[8:10]))
        s = s[11:]
    if kind != "date-local":
        frac = 0
        hms = s[:8]
        rest = s[8:]
        if rest.startswith("."):
            i = 1
            while i < len(rest) and rest[i].isdigit():
                i += 1
            frac = int((rest[1:i] + "000000")[:6])
            rest = rest[i:]
        time = (int(hms[0:2]), int(hms[3:5]), int(hms[6:8]), frac)
        if kind == "datetime":
            off = 0 if rest in ("Z", "z") else (1 if rest[0] == "+" else -1) * (int(rest[1:3]) * 60 + int(rest[4:6]))
    return date, time, off


def py_dt(kind, v):
    if kind == "date-local":
        return (v.year, v.month, v.day), None, None
    if kind == "time-local":
        return None, (v.hour, v.minute, v.second, v.microsecond), None
    off = None
    if v.tzinfo is not None:
        off = int(v.utcoffset().total_seconds() // 60)
    return (v.year, v.month, v.day), (v.hour, v.minute, v.second, v.microsecond), off


def same(expected, got, path="$"):
    """None when equal, else a description of the first difference."""
    if isinstance(expected, dict) and set(expected) == {"type", "value"} and isinstance(expected["type"], str) \
            and not isinstance(expected["value"], (dict, list)) and isinstance(got, dict) and "type" in got:
        if got.get("type") != expected["type"]:
            return f"{path}: type {got.get('type')} != {expected['type']}"
        t, ev, gv = expected["type"], expected["value"], got.get("value")
        if t == "float":
            e, g = float(ev), float(gv)
            if (math.isnan(e) and math.isnan(g)) or e == g:
                return None
            return f"{path}: float {gv} != {ev}"
        if t in ("datetime", "datetime-local", "date-local", "time-local"):
            return None if parse_dt(t, gv) == py_dt(t, ev) else f"{path}: {t} {gv} != {ev}"
        return None if gv == ev else f"{path}: {t} {gv!r} != {ev!r}"
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return f"{path}: keys {sorted(got) if isinstance(got, dict) else got!r} != {sorted(expected)}"
        for k in expected:
            d = same(expected[k], got[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(expected, list):
        if not isinstance(got, list) or len(got) != len(expected):
            return f"{path}: array {got!r} != {expected!r}"
        for i, (e, g) in enumerate(zip(expected, got)):
            d = same(e, g, f"{path}[{i}]")
            if d:
                return d
        return None
    return f"{path}: {got!r} != {expected!r}"


def expectation(data: bytes):
    """(accepts, tagged value or None) according to tomllib."""
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    try:
        text = body.decode("utf-8")
        doc = tomllib.loads(text)
        return True, tag(doc)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, OverflowError):
        return False, None
    except RecursionError:
        return None, None


def run_case(decoder, data, version="1.0"):
    try:
        p = subprocess.run([decoder, "--toml-version", version], input=data, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "hang", b"", b""
    return p.returncode, p.stdout, p.stderr


# Documents that 1.0 rejects and 1.1 accepts (list.append is atomic under the GIL).
ONLY_1_1 = []


def check(decoder, data):
    accepts, expected = expectation(data)
    if accepts is None:
        return None
    rc, out, err = run_case(decoder, data)
    if rc == "hang":
        return "decoder did not finish within 10 s"
    if rc not in (0, 1):
        return f"decoder crashed (exit {rc}): {err.decode(errors='replace')[-400:]}"
    if accepts and rc != 0:
        return "tomllib accepts, decoder rejects: " + err.decode(errors="replace").splitlines()[0]
    if not accepts and rc == 0:
        return "tomllib rejects, decoder accepts: " + out.decode(errors="replace")[:300]
    if not accepts:
        if not err.strip() or b": error: " not in err:
            return "rejected without a diagnostic"
        rc11, _, _ = run_case(decoder, data, "1.1")
        if rc11 == 0:
            ONLY_1_1.append(data)
            if b"only in TOML 1.1" not in err:
                return "TOML 1.1 accepts, 1.0 rejects without naming the 1.1 feature: " + err.decode(errors="replace").splitlines()[0]
        return None
    try:
        got = json.loads(out)
    except ValueError as e:
        return f"decoder printed invalid JSON ({e}): {out[:300]!r}"
    return same(expected, got)


def check_rewrite(decoder, original, rewritten):
    """None when the rewrite is handled right; "1.1" when 1.1 mode read it as the original."""
    accepts, _ = expectation(rewritten)
    if accepts is None:
        return None
    if accepts:
        # It landed in a string or comment and is still TOML 1.0: an ordinary case.
        return check(decoder, rewritten)
    rc10, _, err10 = run_case(decoder, rewritten, "1.0")
    if rc10 != 1:
        return f"tomllib rejects a TOML 1.1 rewrite, 1.0 mode exits {rc10}"
    rc11, out11, err11 = run_case(decoder, rewritten, "1.1")
    if rc11 not in (0, 1):
        return f"decoder crashed in 1.1 mode (exit {rc11}): {err11.decode(errors='replace')[-400:]}"
    if rc11 == 1:
        return None
    if b"only in TOML 1.1" not in err10:
        return "TOML 1.1 accepts, 1.0 rejects without naming the 1.1 feature: " + err10.decode(errors="replace").splitlines()[0]
    ok, expected = expectation(original)
    try:
        got = json.loads(out11)
    except ValueError as e:
        return f"decoder printed invalid JSON in 1.1 mode ({e}): {out11[:300]!r}"
    difference = same(expected, got)
    return f"1.1 mode reads the rewrite differently from the original: {difference}" if difference else "1.1"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decoder", required=True)
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--v11-cases", type=int, default=0)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    gen = Gen(rng)
    cases = []
    while len(cases) < args.cases:
        doc = gen.document()
        cases.append(doc)
        for _ in range(2):
            if len(cases) < args.cases:
                cases.append(mutate(rng, doc))
        if len(cases) < args.cases:
            cases.append(structure_document(rng))

    accepted = sum(1 for c in cases if expectation(c)[0])
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda c: check(args.decoder, c), cases))
    failures = [(c, r) for c, r in zip(cases, results) if r]
    for c, r in failures[:25]:
        print(f"MISMATCH {r}\n  input: {c!r}")
    print(f"{len(cases) - len(failures)}/{len(cases)} cases agree "
          f"({accepted} valid per tomllib, {len(cases) - accepted} invalid, "
          f"{len(ONLY_1_1)} of them valid TOML 1.1); seed {args.seed}")

    # A generator of its own, so the cases above stay the same with or without rewrites.
    rng11 = random.Random(args.seed + 1)
    gen11 = Gen(rng11)
    pairs = []
    while len(pairs) < args.v11_cases:
        doc = gen11.document()
        if expectation(doc)[0]:
            rewritten = one_one_rewrite(rng11, doc)
            if rewritten is not None:
                pairs.append((doc, rewritten))
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results11 = list(pool.map(lambda p: check_rewrite(args.decoder, *p), pairs))
    failures11 = [(p, r) for p, r in zip(pairs, results11) if r and r != "1.1"]
    for (doc, rewritten), r in failures11[:25]:
        print(f"MISMATCH {r}\n  original: {doc!r}\n  rewrite: {rewritten!r}")
    if pairs:
        read11 = sum(1 for r in results11 if r == "1.1")
        print(f"{len(pairs) - len(failures11)}/{len(pairs)} TOML 1.1 rewrites agree "
              f"({read11} read by 1.1 mode as tomllib reads the original and named in 1.0 mode)")
    return 1 if failures or failures11 else 0


if __name__ == "__main__":
    sys.exit(main())
