import collections
import struct
import sys

T = {
    1: "meta",
    2: "launch",
    3: "copy",
    4: "alloc",
    5: "free",
    6: "sync",
    7: "range",
    10: "kact",
    11: "cact",
    12: "um",
    13: "sact",
    14: "mact",
    15: "dropped",
    16: "error",
    17: "end",
    18: "graph",
    19: "evict",
    20: "pages",
    21: "host_touch",
    22: "step",
    23: "call",
    24: "kshape",
}


def read(path):
    d = open(path, "rb").read()
    assert d[:8] == b"FLRAW01\n"
    o = 16
    out = []
    while o < len(d):
        t, _, n = struct.unpack_from("<HHI", d, o)
        o += 8
        out.append((T.get(t, t), d[o : o + n]))
        o += n
    return out


def dec(t, p):
    if t == "launch":
        cpu, st, cd, cr, g0, g1, g2, b0, b1, b2, nl, nw = struct.unpack_from("<QQIIIIIIIIII", p)
        name = p[56 : 56 + nl].decode()
        words = struct.unpack_from("<%dQ" % nw, p, 56 + nl)
        return dict(
            cpu=cpu,
            stream=st,
            cd=cd,
            cr=cr,
            grid=(g0, g1, g2),
            name=name[:40],
            words=[hex(w) for w in words],
        )
    if t == "um":
        s, e, a, v, c, src, dst, fl = struct.unpack("<QQQQIIII", p)
        return dict(s=s, e=e, a=hex(a), v=v, c=c, src=src, dst=dst, fl=fl)
    if t == "call":
        s, e, c, what, domain, thread = struct.unpack("<QQIIII", p)
        return dict(s=s, e=e, c=c, what=what, domain=domain, thread=thread)
    if t == "kshape":
        s, e, c, g0, g1, g2, b0, b1, b2, _ = struct.unpack("<QQIIIIIIII", p)
        return dict(s=s, e=e, c=c, grid=(g0, g1, g2), block=(b0, b1, b2))
    if t == "kact":
        s, e, c, st, dv, _ = struct.unpack("<QQIIII", p)
        return dict(s=s, e=e, corr=c, stream=st)
    if t == "cact":
        s, e, b, c, st, ms, ck = struct.unpack("<QQQIIII", p)
        return dict(s=s, e=e, bytes=b, corr=c, stream=st, memset=ms, ck=ck)
    if t == "alloc":
        cpu, a, b, k, c = struct.unpack("<QQQII", p)
        return dict(cpu=cpu, a=hex(a), b=b, k=k, corr=c)
    if t == "free":
        cpu, a, c, _ = struct.unpack("<QQII", p)
        return dict(cpu=cpu, a=hex(a), corr=c)
    if t == "copy":
        cpu, st, dst, src, b, c, op, k, _ = struct.unpack("<QQQQQIIII", p)
        return dict(cpu=cpu, dst=hex(dst), src=hex(src), b=b, corr=c, op=op, k=k)
    if t == "sync":
        cpu, h, op, c = struct.unpack("<QQII", p)
        return dict(cpu=cpu, op=op, corr=c)
    if t == "mact":
        ts, a, b, op, k, c, _ = struct.unpack("<QQQIIII", p)
        return dict(ts=ts, a=hex(a), b=b, op=op, k=k, corr=c)
    if t in ("meta", "error"):
        return p.decode()
    if t == "end":
        return struct.unpack("<QQ", p)
    if t == "range":
        return struct.unpack("<QII", p)
    if t == "evict":
        b, e, pu, _ = struct.unpack("<QQII", p)
        return dict(b=b, e=e, purpose=pu)
    if t == "pages":
        base, c, n, fl, out = struct.unpack_from("<QIIII", p)
        e = struct.unpack_from("<%dI" % n, p, 24)
        return dict(
            base=hex(base),
            corr=c,
            n=n,
            flags=fl,
            outside=out,
            first=[(x & 0x1FFFFFFF, x >> 29) for x in e[:8]],
        )
    if t == "host_touch":
        cpu, a, ty, _ = struct.unpack("<QQII", p)
        return dict(cpu=cpu, a=hex(a), type=ty)
    if t == "step":
        return struct.unpack("<Q", p)
    return p.hex()


if __name__ == "__main__":
    recs = read(sys.argv[1])
    print(collections.Counter(t for t, _ in recs))
    lim = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    for t, p in recs:
        if t == "um":
            continue
        if lim <= 0:
            break
        lim -= 1
        print(t, dec(t, p))
