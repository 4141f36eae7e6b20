"""The allocator an `experiments/workloads.py alloc` run trains under: the faultline library
installed as PyTorch's CUDA allocator, the memory budget, and the allocator's counters (Meter)."""
import ctypes
import os

from lab.paths import REPO

GiB = 1 << 30
DEFAULT_LIB = os.path.join(REPO, "build-gpu", "libfaultline_alloc.so")
FAULTLINE_STATS = ["allocated", "peak_allocated", "reserved", "peak_reserved", "requested",
                   "peak_requested", "mallocs", "frees", "driver_creates", "driver_maps",
                   "stitches", "ooms"]


def faultline_lib_path():
    return os.path.abspath(os.environ.get("FAULTLINE_ALLOC_LIB", DEFAULT_LIB))


def install_faultline(torch):
    """Makes the faultline library PyTorch's CUDA allocator; must run before any CUDA use.
    Returns the library (ctypes) for its statistics."""
    path = faultline_lib_path()
    if not os.path.exists(path):
        raise RuntimeError(f"faultline allocator library {path} not found (build it, or set "
                           f"FAULTLINE_ALLOC_LIB)")
    lib = ctypes.CDLL(path)
    for symbol in ("faultline_alloc_malloc", "faultline_alloc_free", "faultline_alloc_stats",
                   "faultline_alloc_reset_peaks"):
        if not hasattr(lib, symbol):
            raise RuntimeError(f"{path} does not export {symbol}")
    memory = torch.cuda.memory
    if not hasattr(memory, "CUDAPluggableAllocator") or not hasattr(memory,
                                                                    "change_current_allocator"):
        raise RuntimeError(f"torch {torch.__version__} has no torch.cuda.memory."
                           f"CUDAPluggableAllocator / change_current_allocator")
    try:
        allocator = memory.CUDAPluggableAllocator(path, "faultline_alloc_malloc",
                                                  "faultline_alloc_free")
    except TypeError as error:
        raise RuntimeError(f"torch {torch.__version__}: CUDAPluggableAllocator(path, alloc_fn_name, "
                           f"free_fn_name) no longer takes these arguments: {error}") from error
    try:
        memory.change_current_allocator(allocator)
    except RuntimeError as error:
        raise RuntimeError(f"could not install the faultline allocator (CUDA was already used "
                           f"in this process?): {error}") from error
    lib.faultline_alloc_stats.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int]
    lib.faultline_alloc_stats.restype = ctypes.c_int
    lib.faultline_alloc_reset_peaks.argtypes = []
    lib.faultline_alloc_reset_peaks.restype = None
    lib.keep_allocator = allocator  # the Python object lives as long as the library handle
    return lib


def apply_limit(torch, limit, allocator, device):
    """Checks the budget against the free memory and, for PyTorch's allocator, enforces it."""
    free, total = torch.cuda.mem_get_info(device)
    if limit is None:
        return
    if limit >= free:
        raise RuntimeError(f"--limit {limit} ({limit / GiB:.2f} GiB) is not below the free memory "
                           f"of GPU {device.index} ({free} bytes, {free / GiB:.2f} GiB)")
    if allocator != "faultline":  # the faultline library read FAULTLINE_ALLOC_LIMIT itself
        torch.cuda.set_per_process_memory_fraction(limit / total, device)


class Meter:
    """The allocator's counters: PyTorch's memory_stats or the faultline library's. Peaks are
    reset after the warm-up step; the whole-run peak is the larger of the peak before the reset
    and the peak after it."""

    def __init__(self, torch, device, lib):
        self.torch, self.device, self.lib = torch, device, lib
        self.before_reset = None

    def raw(self):
        if self.lib is None:
            return dict(self.torch.cuda.memory_stats(self.device))
        values = (ctypes.c_uint64 * len(FAULTLINE_STATS))()
        filled = self.lib.faultline_alloc_stats(values, len(values))
        if filled < 0:
            raise RuntimeError(f"faultline_alloc_stats returned {filled}")
        return {name: int(values[i]) for i, name in enumerate(FAULTLINE_STATS)}

    def peaks(self):
        raw = self.raw()
        if self.lib is None:
            return {kind: raw.get(f"{kind}_bytes.all.peak", 0)
                    for kind in ("allocated", "reserved", "requested")}
        return {kind: raw[f"peak_{kind}"] for kind in ("allocated", "reserved", "requested")}

    def reset_peaks(self):
        self.before_reset = self.peaks()
        if self.lib is None:
            self.torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self.lib.faultline_alloc_reset_peaks()

    def ooms(self):
        raw = self.raw()
        return raw.get("ooms", raw.get("num_ooms", 0))

    def report(self):
        now = self.peaks()
        before = self.before_reset or now
        whole = {kind: max(before[kind], now[kind]) for kind in now}
        reserved = whole["reserved"]
        return {"peak_allocated": whole["allocated"], "peak_reserved": reserved,
                "peak_requested": whole["requested"],
                "fragmentation": 1 - whole["allocated"] / reserved if reserved else None,
                "measured_steps_peaks": now if self.before_reset else None,
                "allocator_stats": self.raw()}
