"""Exits 1 if any file given (or, for "-", stdin) holds a raw terminal
control (a byte below 0x20 other than TAB and LF, or DEL) or a Unicode bidi
control (U+202E, U+2066, ...; CVE-2021-42574), printing which; 0 otherwise."""
import sys

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
bad = False
for path in sys.argv[1:]:
    data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    ctl = sorted({hex(c) for c in data if (c < 32 and c not in (9, 10)) or c == 127})
    bidi = [hex(ord(ch)) for ch in BIDI if ch.encode() in data]
    if ctl or bidi:
        print("%s: raw controls %s, bidi controls %s" % (path, ctl, bidi))
        bad = True
sys.exit(1 if bad else 0)
