"""Claude Code 2.1.197's project-folder name for a path, over UTF-16 code units (an emoji
becomes two dashes), with the Java-style hash suffix past 200 units. Shared by the fixture
generators; conformance/make_fixtures.py's own sanitize() is per code point, which is only
right for the ASCII paths of its fixtures."""


def sanitize16(p):
    data = p.encode("utf-16-le")
    units = [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]
    t = "".join(chr(u) if u < 128 and chr(u).isalnum() else "-" for u in units)
    if len(t) <= 200:
        return t
    h = 0
    for u in units:
        h = ((h << 5) - h + u) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    h, s = abs(h), ""
    while True:
        h, r = divmod(h, 36)
        s = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + s
        if h == 0:
            return t[:200] + "-" + s
