"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/TARGET/) from the shipped files:

    trace          small synthetic traces as decompressed streams (the target compresses them),
                   one as the compressed file itself, and the first 6 KB of two real traces'
                   streams (a capture's header and its first records)
    run_config     configs/runs/*.json          profile     configs/gpus/, configs/links/
    topology       configs/topologies/*.json    sweep       configs/sweeps/*.json
    alloc_history  tests/data/alloc/ (PyTorch snapshots as pickle, JSON and zstd; the tracer's
                   allocator history) and a capture's allocator history
    raw_capture    the raw streams of tests/data/capture/, each page list cut to 16 entries and
                   each kind of bulk record (UM counters, host touches, memory activity) to its
                   first 24, so that every seed stays a few KB and still converts; and a
                   program pass's stream (call and kernel records in a profiler range)

    python3 tests/fuzz/make_corpus.py FAULTLINE_BINARY

Needs the zstd command line tool. The output is deterministic; the seeds are committed.
"""
import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SYNTH = [  # name, faultline synth arguments
    ("stream", ["--pattern", "stream", "--footprint", "4M", "--iterations", "2", "--kernels", "4"]),
    ("random", ["--pattern", "random", "--footprint", "2M", "--iterations", "1", "--kernels", "3"]),
    ("dnn", ["--pattern", "dnn", "--footprint", "8M", "--iterations", "2", "--layers", "2"]),
    ("window", ["--pattern", "window", "--footprint", "4M", "--iterations", "1", "--kernels", "3"]),
]
RAW_PAGES, RAW_BULK = 20, (12, 14, 21)  # kPages; kUm, kMemoryAct, kHostTouch
RAW_KEEP_PAGES, RAW_KEEP_BULK = 16, 24


def target_dir(name):
    path = os.path.join(CORPUS, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def copy_all(name, patterns):
    out = target_dir(name)
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            shutil.copy(path, os.path.join(out, os.path.basename(path)))


def decompressed(path):
    return subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout


def trace_corpus(faultline):
    out = target_dir("trace")
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in SYNTH:
            # Run where it writes, so the header's command line names no temporary folder.
            subprocess.run([faultline, "synth", "--out", name + ".fltrace", *args], check=True,
                           capture_output=True, cwd=tmp)
            with open(os.path.join(out, name + ".stream"), "wb") as f:
                f.write(decompressed(os.path.join(tmp, name + ".fltrace")))
        shutil.copy(os.path.join(tmp, "window.fltrace"), os.path.join(out, "window.fltrace"))
    for name in ("host-stencil", "pagerank"):
        head = decompressed(os.path.join(ROOT, "traces", "real", name + ".fltrace"))[:6144]
        with open(os.path.join(out, name + ".head"), "wb") as f:
            f.write(head)


def shrink_raw(data):
    """The stream with long page lists and bulk records cut (the framing stays valid)."""
    out, offset, kept = [data[:16]], 16, {}
    while offset + 8 <= len(data):
        kind, reserved, size = struct.unpack_from("<HHI", data, offset)
        payload = data[offset + 8:offset + 8 + size]
        offset += 8 + size
        if kind in RAW_BULK:
            kept[kind] = kept.get(kind, 0) + 1
            if kept[kind] > RAW_KEEP_BULK:
                continue
        if kind == RAW_PAGES:
            head = bytearray(payload[:24])
            entries = min(struct.unpack_from("<I", head, 12)[0], RAW_KEEP_PAGES)
            struct.pack_into("<I", head, 12, entries)
            payload = bytes(head) + payload[24:24 + 4 * entries]
        out.append(struct.pack("<HHI", kind, reserved, len(payload)) + payload)
    return b"".join(out)


def raw_corpus():
    out = target_dir("raw_capture")
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "capture", "**", "*.raw"),
                                 recursive=True)):
        rel = os.path.relpath(path, os.path.join(ROOT, "tests", "data", "capture"))
        with open(path, "rb") as f:
            data = shrink_raw(f.read())
        with open(os.path.join(out, rel.replace(os.sep, "-")), "wb") as f:
            f.write(data)
    with open(os.path.join(out, "program-ranged.raw"), "wb") as f:
        f.write(program_stream())


def program_stream():
    """A program pass's raw stream: two profiler intervals, launches in and between them, a sync
    with a driver call nested in it, and the kernels' records (tracer/raw/raw_format.h)."""
    def record(kind, payload):
        return struct.pack("<HHI", kind, 0, len(payload)) + payload

    def call(start, end, corr, what, domain=1, thread=7):  # RawApiAct
        return record(23, struct.pack("<QQIIII", start, end, corr, what, domain, thread))

    meta = b'{"mode":"program","range":"profiler"}'
    out = [b"FLRAW01\n" + struct.pack("<II", 1, 0), record(1, meta),
           call(100, 120, 1, 5), call(100, 110, 2, 5, 2), call(150, 160, 10, 1),
           call(170, 260, 3, 4), call(180, 250, 4, 4, 2), call(300, 310, 11, 1),
           call(400, 410, 5, 6), call(500, 510, 6, 5), call(550, 560, 12, 1), call(600, 610, 7, 6)]
    for corr in (10, 11, 12):  # RawKernelShape
        out.append(record(24, struct.pack("<QQI3I3II", 1000 + corr, 1100 + corr, corr, 4, 1, 1,
                                          128, 1, 1, 0)))
    out.append(record(17, struct.pack("<QQ", 0, 0)))
    return b"".join(out)


def main():
    faultline = os.path.abspath(sys.argv[1])
    trace_corpus(faultline)
    copy_all("run_config", ["configs/runs/*.json"])
    copy_all("profile", ["configs/gpus/*.json", "configs/links/*.json"])
    copy_all("topology", ["configs/topologies/*.json"])
    copy_all("sweep", ["configs/sweeps/*.json"])
    copy_all("alloc_history", ["tests/data/alloc/*.pickle", "tests/data/alloc/*.json",
                               "tests/data/alloc/*.zst", "tests/data/capture/mlp-timing.history.json"])
    raw_corpus()


if __name__ == "__main__":
    main()
