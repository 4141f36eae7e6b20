"""Writes the allocation-history fixtures that tests/unit/test_alloc_history.cc reads:

    snapshot.pickle       a PyTorch memory snapshot as torch.cuda.memory._dump_snapshot writes it
                          (pickle protocol 4), built by hand: no PyTorch needed
    snapshot.json         the same dict as JSON
    snapshot.pickle.zst   snapshot.pickle compressed with the zstd command line tool
    history.json          the tracer's allocator history of the same device trace
    two_devices.pickle    allocator events on devices 0 and 1
    unknown_action.pickle, wrong_type.pickle, double_free.pickle, alloc_live.pickle
                          one defect each, at /device_traces/0/ENTRY (see the constants below)
    global.pickle         a protocol-2 pickle of an OrderedDict: starts with a GLOBAL opcode
    values-pN.pickle      assorted plain values pickled with protocol N (2 to 5), and
    values.json           the JSON the decoder must make of every one of them

Run it from anywhere: python3 make_snapshots.py. The output is deterministic.
"""
import collections
import json
import os
import pickle
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
US = 1_000_000  # time_us of the first entry
SEG0 = 0x7F0000000000
SEG1 = 0x7F0000200000
EARLY0 = 0x7F00000A0000  # blocks allocated before recording began
EARLY1 = 0x7F0000300000
EARLY_SEGMENT = 0x7E0000000000


def entry(action, addr, size, t, stream=0, frames=None):
    return {"action": action, "addr": addr, "size": size, "stream": stream,
            "time_us": US + t, "frames": [] if frames is None else frames}


def device_trace():
    # One frames list shared by two entries, as PyTorch shares identical stacks: the pickle
    # refers to it again through its memo.
    frames = [{"filename": "train.py", "line": 12, "name": "forward"},
              {"filename": "model.py", "line": 40, "name": "linear"}]
    return [
        entry("segment_alloc", SEG0, 2097152, 0),
        entry("alloc", SEG0, 1000, 1, frames=frames),
        entry("alloc", SEG0 + 1024, 512, 2),
        entry("free_requested", SEG0, 1000, 3),
        entry("free_completed", SEG0, 1000, 3),
        entry("free_requested", EARLY0, 4096, 4),
        entry("free_completed", EARLY0, 4096, 5),
        entry("segment_alloc", SEG1, 20971520, 6, stream=7),
        entry("alloc", SEG1, 3000000, 10, stream=7, frames=frames),
        {"action": "oom", "device_free": 1024, "size": 1 << 40, "stream": 0,
         "time_us": US + 11, "frames": []},
        entry("free_completed", SEG1, 3000000, 12, stream=7),
        entry("segment_free", SEG1, 20971520, 13, stream=7),
        entry("free_completed", EARLY1, 2048, 14),
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": US + 15,
         "frames": []},
        entry("segment_free", EARLY_SEGMENT, 4194304, 16),
    ]


def snapshot(traces):
    return {
        "segments": [{"device": 0, "address": SEG0, "total_size": 2097152,
                      "allocated_size": 512, "active_size": 512, "requested_size": 512,
                      "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
                      "is_expandable": False, "frames": [],
                      "blocks": [{"address": SEG0 + 1024, "size": 512, "requested_size": 512,
                                  "state": "active_allocated", "frames": []}]}],
        "device_traces": traces,
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                               "garbage_collection_threshold": 0.0,
                               "expandable_segments": False,
                               "roundup_power2_divisions": {"1": 0, "2": 0}},
        "external_annotations": [],
        "faultline": {"model": "mlp", "technique": "baseline", "batch": 8},
    }


def values(protocol):
    strings = [f"s{i}" for i in range(300)]  # memo indices past 255: LONG_BINPUT, LONG_BINGET
    shared = [1, 2]
    v = {
        1: "integer key",
        "ints": [0, 1, 255, 256, 65535, 65536, -1, -2**31, 2**31 - 1, 2**31, -2**31 - 1,
                 2**63 - 1, 2**63, 2**64 - 1, -2**63],
        "floats": [1.5, -0.25, 1e300],
        "consts": [None, True, False],
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4, 5)],
        "one": [7],
        "single": {"k": "v"},
        "text": ["", "é", "日本", "x" * 300],
        "strings": strings,
        "again": [strings[299], strings[3], shared, shared],
        "empty": {},
    }
    if protocol >= 3:  # protocol 2 pickles bytes through codecs.encode, a GLOBAL
        v["bytes"] = [b"", b"ab\x00\xff", b"z" * 300]
    return v


def to_json(v):
    if isinstance(v, dict):
        return {str(k): to_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, bytes):
        return v.decode("latin-1")
    return v


def dump(name, obj, protocol=4):
    with open(os.path.join(HERE, name), "wb") as f:
        pickle.dump(obj, f, protocol=protocol)


def bad_snapshot(name, index, change):
    traces = [device_trace()]
    change(traces[0][index])
    dump(name, snapshot(traces))


def main():
    snap = snapshot([device_trace(), []])
    dump("snapshot.pickle", snap)
    with open(os.path.join(HERE, "snapshot.json"), "w") as f:
        json.dump(to_json(snap), f)
    if shutil.which("zstd"):
        subprocess.run(["zstd", "-q", "-f", "-19", os.path.join(HERE, "snapshot.pickle"),
                        "-o", os.path.join(HERE, "snapshot.pickle.zst")], check=True)
    events = [[e["action"], e.get("addr", e.get("device_free")), e["size"], e["stream"],
               e["time_us"]] for e in device_trace()]
    with open(os.path.join(HERE, "history.json"), "w") as f:
        json.dump({"torch": "2.11.0+cu130", "events": events}, f)

    dump("two_devices.pickle", snapshot([device_trace(), device_trace()]))
    bad_snapshot("unknown_action.pickle", 5, lambda e: e.update(action="free_maybe"))
    bad_snapshot("wrong_type.pickle", 8, lambda e: e.update(addr="0x7f0000200000"))
    bad_snapshot("double_free.pickle", 10, lambda e: e.update(addr=SEG0))
    bad_snapshot("alloc_live.pickle", 2, lambda e: e.update(addr=SEG0))
    dump("global.pickle", collections.OrderedDict(a=1), protocol=2)

    for protocol in range(2, 6):
        dump(f"values-p{protocol}.pickle", values(protocol), protocol)
    with open(os.path.join(HERE, "values.json"), "w") as f:
        json.dump(to_json(values(5)), f, ensure_ascii=False)


if __name__ == "__main__":
    main()
