"""Loaded by every Python process that `faultline capture --torch` starts (it puts this folder
first on PYTHONPATH). It turns on PyTorch's allocator history before the program allocates and, at
exit, writes the allocator's block events to $FAULTLINE_TORCH_HISTORY as JSON:

    {"torch": VERSION, "events": [[action, address, size, stream, time_us], ...]}

It also marks a step boundary after every optimizer step (see _mark_steps), and under `faultline
run` has the policy host write its measurements from Python's exit handlers, while the CUDA
context still lives. time_us is PyTorch's wall clock (CLOCK_REALTIME), the clock CUPTI stamps API
records with, which is how the converter places block allocations and frees among kernel
launches. A sitecustomize
found later on the path is still imported, so this file does not hide one the program relies on.
"""
import atexit
import importlib.util
import json
import os
import sys

_OUT = os.environ.get("FAULTLINE_TORCH_HISTORY")
_MAX_ENTRIES = 50_000_000


def _chain_next_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or ".") == here:
            continue
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_faultline_next_sitecustomize", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


def _dump():
    import torch

    snapshot = torch.cuda.memory._snapshot()
    traces = snapshot.get("device_traces", [])
    events = []
    for device_trace in traces[:1]:
        for e in device_trace:
            if "addr" not in e:  # out-of-memory entries carry device_free instead
                continue
            events.append([e["action"], e["addr"], e["size"], e.get("stream", 0), e["time_us"]])
    with open(_OUT, "w") as f:
        json.dump({"torch": torch.__version__, "events": events}, f)
    if len(events) >= _MAX_ENTRIES:
        print(f"faultline capture: the allocator history reached {_MAX_ENTRIES} entries and "
              "lost the oldest", file=sys.stderr)


def _mark_steps():
    """Marks a step boundary after every optimizer step, through the injection library's
    faultline_mark_step(), so the trace knows where each training iteration begins."""
    import ctypes

    from torch.optim.optimizer import register_optimizer_step_post_hook

    mark = ctypes.CDLL(os.environ["FAULTLINE_INJECT_LIB"]).faultline_mark_step
    mark.restype = None
    register_optimizer_step_post_hook(lambda optimizer, args, kwargs: mark())


if _OUT:
    import torch

    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                             max_entries=_MAX_ENTRIES)
    atexit.register(_dump)
if os.environ.get("FAULTLINE_INJECT_LIB"):
    _mark_steps()
if os.environ.get("FAULTLINE_MODE") == "run":  # `faultline run`: measurements written at exit
    import ctypes

    atexit.register(ctypes.CDLL(os.environ["FAULTLINE_INJECT_LIB"]).faultline_run_finish)

_chain_next_sitecustomize()
