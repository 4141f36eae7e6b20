"""Real PyTorch training jobs for the allocator-fragmentation study, and what their allocator did.

    python3 experiments/alloc/workloads.py --model M --technique T --batch B [--seq L] [--steps S]
        [--allocator default|expandable|faultline] [--limit BYTES] [--snapshot OUT.pickle]
        [--out RESULT.json] [--find-max-batch LO HI]

It trains a transformers model built from its config with random initialisation directly on the GPU
(fp32 master weights, bf16 autocast, AdamW, random token ids from a fixed seed, labels = the ids)
for one warm-up step and S measured steps (default 4), timing each step, and reports the
allocator's peak allocated, reserved and requested bytes over the whole run and its fragmentation,
1 - peak allocated / peak reserved (GMLake's metric).

Models: gpt2-medium, gpt2-large, gpt2-xl, opt-1.3b, opt-2.7b, opt-6.7b (LoRA only, in practice),
bert-large (masked LM, sequence 512 by default; the others 1024).

Techniques (GMLake's N, R, LR, RO, LRO and more): none, recompute (gradient checkpointing),
offload (activations saved to pinned host memory), lora (PEFT r=16 adapters in fp32 over bf16 base
weights), lora-recompute, recompute-offload, lora-recompute-offload. A suffix +ddp or +fsdp
(e.g. recompute+ddp) runs two processes on GPUs 0 and 1, DistributedDataParallel or FSDP2
(fully_shard per transformer block, then the root), each rank with batch B; each rank writes its
own result and snapshot, with .rank0 / .rank1 before the file's extension.

Allocators: default (PyTorch's caching allocator), expandable (expandable_segments:True),
faultline (the CUDAPluggableAllocator in $FAULTLINE_ALLOC_LIB, default
build-gpu/libfaultline_alloc.so, model $FAULTLINE_ALLOC_MODEL, default gmlake).

--limit BYTES is the memory budget (a suffix K, M, G or T is read as a power of 1024); it must
be below the GPU's free memory. Default: none for default and expandable, free memory minus 2 GiB
for faultline. --snapshot records the caching allocator's history from before the model is built
and pickles torch.cuda.memory._snapshot() with the run's settings under the key "faultline" (not
with the faultline allocator). --find-max-batch LO HI binary-searches the largest batch in
[LO, HI] that trains without running out of memory, each trial a fresh process of this script,
and writes the trials to --out.

An out-of-memory run is a result, not a failure: ok=false, oom=true, exit status 0. Other errors
exit 1, also with the result written. The last line on stdout is a one-line summary that starts
with "result ".
"""
import argparse
import contextlib
import ctypes
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import traceback

# torch is imported only after main() has set the allocator's environment variables.

GiB = 1 << 30
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_LIB = os.path.join(REPO, "build-gpu", "libfaultline_alloc.so")
FAULTLINE_LIMIT_MARGIN = 2 * GiB
TRIAL_TIMEOUT_S = 3600
EXIT_OOM, EXIT_ERROR = 3, 4  # a rank's exit status when it failed (its peer is then stopped)

MODELS = {  # name: (family, config arguments)
    "gpt2-medium": ("gpt2", dict(n_layer=24, n_embd=1024, n_head=16)),
    "gpt2-large": ("gpt2", dict(n_layer=36, n_embd=1280, n_head=20)),
    "gpt2-xl": ("gpt2", dict(n_layer=48, n_embd=1600, n_head=25)),
    "opt-1.3b": ("opt", dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=32,
                             ffn_dim=8192)),
    "opt-2.7b": ("opt", dict(hidden_size=2560, num_hidden_layers=32, num_attention_heads=32,
                             ffn_dim=10240)),
    "opt-6.7b": ("opt", dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                             ffn_dim=16384)),
    "bert-large": ("bert", dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                intermediate_size=4096)),
    # Llama-2's shapes (vocabulary 32000, multi-head attention, SwiGLU); no weights are loaded.
    "llama2-7b": ("llama", dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=32)),
    "llama2-13b": ("llama", dict(hidden_size=5120, intermediate_size=13824, num_hidden_layers=40,
                                 num_attention_heads=40, num_key_value_heads=40)),
}
# --dry-run: the same family at toy size, on the CPU.
TINY = {"gpt2": dict(n_layer=2, n_embd=64, n_head=4, vocab_size=512),
        "opt": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                    vocab_size=512),
        "bert": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, vocab_size=512),
        "llama": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, vocab_size=512)}
LORA_TARGETS = {"gpt2": ["c_attn", "c_proj", "c_fc"],
                "opt": ["q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"],
                "bert": ["query", "key", "value", "dense"],
                "llama": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                          "down_proj"]}
BLOCKS = {"gpt2": "GPT2Block", "opt": "OPTDecoderLayer", "bert": "BertLayer",
          "llama": "LlamaDecoderLayer"}  # FSDP2's units; the blocks 'zero' streams
TECHNIQUES = ["none", "recompute", "offload", "lora", "lora-recompute", "recompute-offload",
              "lora-recompute-offload", "recompute-zero", "lora-recompute-zero"]
PARALLEL = {"ddp": 2, "fsdp": 2}  # suffix: processes
FAULTLINE_STATS = ["allocated", "peak_allocated", "reserved", "peak_reserved", "requested",
                   "peak_requested", "mallocs", "frees", "driver_creates", "driver_maps",
                   "stitches", "ooms"]


# ---- command line and environment -------------------------------------------------------------

def parse_bytes(text):
    """'123', '60G', '1.5T': bytes; suffixes are powers of 1024."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def split_technique(technique):
    """'lora-recompute+ddp' -> ({'lora', 'recompute'}, 'ddp'); 'none' -> (set(), None)."""
    base, _, parallel = technique.partition("+")
    parts = set() if base == "none" else set(base.split("-"))
    return parts, parallel or None


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, choices=list(MODELS))
    parser.add_argument("--technique", required=True,
                        help=f"one of {', '.join(TECHNIQUES)}, optionally ending in +ddp or +fsdp")
    parser.add_argument("--batch", type=int, help="per-process batch (not with --find-max-batch)")
    parser.add_argument("--seq", type=int, help="sequence length (default 1024; bert-large 512)")
    parser.add_argument("--steps", type=int, default=4, help="measured steps after one warm-up")
    parser.add_argument("--allocator", default="default",
                        choices=["default", "expandable", "faultline"])
    parser.add_argument("--limit", type=parse_bytes, help="memory budget in bytes")
    parser.add_argument("--snapshot", help="pickle the allocator history here")
    parser.add_argument("--out", help="write the result JSON here")
    parser.add_argument("--find-max-batch", type=int, nargs=2, metavar=("LO", "HI"))
    parser.add_argument("--dry-run", action="store_true",
                        help="the model's family at toy size on the CPU, two steps, checked")
    args = parser.parse_args(argv)

    base, _, parallel = args.technique.partition("+")
    if base not in TECHNIQUES or (parallel and parallel not in PARALLEL):
        parser.error(f"--technique {args.technique}: expected one of {', '.join(TECHNIQUES)}, "
                     f"optionally followed by +ddp or +fsdp")
    if "zero" in split_technique(args.technique)[0]:
        if "recompute" not in split_technique(args.technique)[0] or parallel:
            parser.error(f"--technique {args.technique}: 'zero' streams each block's parameters "
                         f"in again for its recomputation, so it needs 'recompute', on one GPU")
    if args.seq is None:
        args.seq = 512 if MODELS[args.model][0] == "bert" else 1024
    if args.dry_run:
        if args.find_max_batch or args.snapshot or args.allocator != "default" or parallel:
            parser.error("--dry-run takes none of --find-max-batch, --snapshot, --allocator, +ddp, "
                         "+fsdp")
        args.batch = args.batch or 2
        args.seq = min(args.seq, 32)
        args.steps = min(args.steps, 2)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.snapshot and args.allocator == "faultline":
        parser.error("--snapshot records the caching allocator's history; the faultline "
                     "allocator has none (use --allocator default or expandable)")
    if args.find_max_batch:
        lo, hi = args.find_max_batch
        if args.batch is not None or args.snapshot:
            parser.error("--find-max-batch chooses the batch itself and takes no --snapshot")
        if not args.out:
            parser.error("--find-max-batch needs --out")
        if not 1 <= lo <= hi:
            parser.error("--find-max-batch LO HI needs 1 <= LO <= HI")
    elif args.batch is None or args.batch < 1:
        parser.error("--batch B (B >= 1) is required")
    if args.limit is not None and args.limit <= 0:
        parser.error("--limit must be positive")
    return args


def world_size(args):
    return PARALLEL.get(split_technique(args.technique)[1], 1)


def configure_environment(args):
    """Sets what the allocator reads at start-up. Runs before torch is imported."""
    if args.allocator == "expandable":
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    elif args.allocator == "default":
        conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").replace(" ", "").lower()
        if "expandable_segments:true" in conf:
            sys.exit("error: --allocator default, but PYTORCH_CUDA_ALLOC_CONF turns expandable "
                     "segments on; unset it or use --allocator expandable")
    else:
        if args.limit is None:
            args.limit = min_free_memory(range(world_size(args))) - FAULTLINE_LIMIT_MARGIN
        os.environ["FAULTLINE_ALLOC_LIMIT"] = str(args.limit)
        os.environ.setdefault("FAULTLINE_ALLOC_MODEL", "gmlake")


def min_free_memory(devices):
    """The least free memory over the devices, asked of a separate process so that this one
    creates no CUDA context before its allocator is chosen."""
    code = "import sys, torch\nfor d in sys.argv[1:]: print(*torch.cuda.mem_get_info(int(d)))"
    done = subprocess.run([sys.executable, "-c", code, *map(str, devices)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("error: could not query the GPUs' free memory:\n" + done.stderr[-3000:])
    return min(int(line.split()[0]) for line in done.stdout.splitlines() if line.strip())


def suffixed(path, rank, world):
    """out.json -> out.rank1.json when there is more than one process."""
    if path is None or world == 1:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.rank{rank}{ext}"


def write_json(path, value):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(value, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


# ---- the allocator ----------------------------------------------------------------------------

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


# ---- the model and its training step ----------------------------------------------------------

def model_config(family, shape, seq):
    """The transformers config and model class of a family."""
    import transformers as tf

    if family == "gpt2":
        return tf.GPT2Config(n_positions=max(1024, seq), use_cache=False, **shape), \
            tf.GPT2LMHeadModel
    if family == "opt":
        return tf.OPTConfig(max_position_embeddings=max(2048, seq), use_cache=False,
                            word_embed_proj_dim=shape["hidden_size"], **shape), tf.OPTForCausalLM
    if family == "llama":
        return tf.LlamaConfig(max_position_embeddings=max(4096, seq), use_cache=False,
                              **shape), tf.LlamaForCausalLM
    return tf.BertConfig(max_position_embeddings=max(512, seq), **shape), tf.BertForMaskedLM


def build_model(torch, args, device, start_recording=lambda: None):
    """The model on the device, with its technique applied; and its vocabulary size.
    start_recording() is called once no allocation that the run will not use is left: at once,
    or with 'zero' after the model has been built on the GPU, moved to host memory and the
    GPU's cache emptied (a model built on the host would take minutes to initialise)."""
    family, shape = MODELS[args.model]
    if args.dry_run:
        shape = TINY[family]
    parts, _ = split_technique(args.technique)
    config, model_class = model_config(family, shape, args.seq)
    dtype = torch.bfloat16 if "lora" in parts else torch.float32  # LoRA: frozen bf16 base
    zero = "zero" in parts
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with device:
            model = model_class(config)
    finally:
        torch.set_default_dtype(previous)
    model.to(dtype)  # no copy when the constructor already made them so
    model.train()
    if "recompute" in parts and not zero:  # zero checkpoints each streamed block itself
        enable_recompute(model, lora="lora" in parts)
    if "lora" in parts:
        model = apply_lora(torch, model, family)
    if zero:
        stream_blocks(torch, model, family, device, start_recording)
    return model, config.vocab_size


def enable_recompute(model, lora):
    import inspect

    enable = model.gradient_checkpointing_enable
    if "gradient_checkpointing_kwargs" in inspect.signature(enable).parameters:
        enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        return
    enable()  # reentrant checkpointing: frozen inputs would leave the adapters without gradients
    if lora:
        model.enable_input_require_grads()


def apply_lora(torch, model, family):
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, bias="none",
                        target_modules=LORA_TARGETS[family], fan_in_fan_out=family == "gpt2")
    model = get_peft_model(model, config)
    for parameter in model.parameters():  # adapters are the fp32 master weights
        if parameter.requires_grad and parameter.dtype != torch.float32:
            parameter.data = parameter.data.float()
    return model


def stream_blocks(torch, model, family, device, start_recording):
    """ZeRO-3 with offload, on one GPU (DeepSpeed's offload_param and offload_optimizer): every
    transformer block's parameters live in pinned host memory; each time the block runs, in the
    forward pass and again when its activations are recomputed for the backward pass, they are
    copied to the GPU and dropped after it; their gradients go back to host memory and the
    optimizer steps them there (host_optimizer). The rest of the model (embeddings, final norm,
    head) stays on the GPU."""
    from torch.func import functional_call
    from torch.utils.checkpoint import checkpoint

    blocks = [m for m in model.modules() if type(m).__name__ == BLOCKS[family]]
    if not blocks:
        raise RuntimeError(f"no {BLOCKS[family]} modules in {type(model).__name__} to stream")
    host = torch.device("cpu")
    pin = device.type == "cuda"
    in_blocks = {id(p) for block in blocks for p in block.parameters()}
    in_blocks |= {id(b) for block in blocks for b in block.buffers()}
    for tensor in list(model.parameters()) + list(model.buffers()):  # all off the GPU first
        tensor.data = tensor.data.to(host)
        if pin and id(tensor) in in_blocks:
            tensor.data = tensor.data.pin_memory()
    if pin:  # the history and the peaks start from an empty GPU, as the replay does
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    start_recording()
    for tensor in list(model.parameters()) + list(model.buffers()):
        if id(tensor) not in in_blocks:  # the GPU's share, allocated while recording
            tensor.data = tensor.data.to(device)

    class Streamed(torch.nn.Module):
        def __init__(self, block):
            super().__init__()
            self.block = block
            for name in ("attention_type",):  # what a model's loop may read off its layers
                if hasattr(block, name):
                    setattr(self, name, getattr(block, name))

        def forward(self, *args, **kwargs):
            def run(*inputs):  # the copy-in is inside the checkpoint: recomputing repeats it
                weights = {name: t.to(device, non_blocking=True, copy=True)
                           for name, t in self.block.named_parameters()}
                weights.update((name, t.to(device, non_blocking=True, copy=True))
                               for name, t in self.block.named_buffers())
                return functional_call(self.block, weights, inputs, kwargs)

            return checkpoint(run, *args, use_reentrant=False)

    streamed = {id(b) for b in blocks}
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if id(child) in streamed:
                setattr(parent, name, Streamed(child))


class SplitOptimizer:
    """AdamW over the GPU's trainable parameters and AdamW over the host's (the streamed blocks'),
    the host's stepped on the CPU once the GPU has finished."""

    def __init__(self, torch, parameters, fused):
        self.torch = torch
        trainable = [p for p in parameters if p.requires_grad]
        on_gpu = [p for p in trainable if p.device.type == "cuda"]
        on_host = [p for p in trainable if p.device.type != "cuda"]
        self.parts = []
        if on_gpu:
            self.parts.append(torch.optim.AdamW(on_gpu, lr=1e-4, fused=fused or None))
        if on_host:
            self.parts.append(torch.optim.AdamW(on_host, lr=1e-4))
        self.host = bool(on_host)

    def step(self):
        if self.host and self.torch.cuda.is_available():
            self.torch.cuda.synchronize()
        for optimizer in self.parts:
            optimizer.step()

    def zero_grad(self, set_to_none=True):
        for optimizer in self.parts:
            optimizer.zero_grad(set_to_none=set_to_none)


def parallelize(torch, model, args, device, world):
    _, parallel = split_technique(args.technique)
    if parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[device.index])
    if parallel == "fsdp":
        shard(torch, model, MODELS[args.model][0], world,
              lora="lora" in split_technique(args.technique)[0])
    return model


def shard(torch, model, family, world, lora=False):
    """FSDP2: fully_shard each transformer block, then the root. With LoRA, each adapter layer
    first on its own: FSDP2 wants one dtype in a group, and the fp32 adapters sit inside the bf16
    blocks."""
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        try:
            from torch.distributed._composable.fsdp import fully_shard
        except ImportError as error:
            raise RuntimeError(f"torch {torch.__version__} has no FSDP2 fully_shard (looked in "
                               f"torch.distributed.fsdp and torch.distributed._composable.fsdp)"
                               ) from error
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cuda", (world,))
    blocks = [m for m in model.modules() if type(m).__name__ == BLOCKS[family]]
    if not blocks:
        raise RuntimeError(f"no {BLOCKS[family]} modules in {type(model).__name__} to shard")
    if lora:
        for module in model.modules():
            own = list(module.parameters(recurse=False))
            if isinstance(module, torch.nn.Linear) and own and all(p.requires_grad for p in own):
                fully_shard(module, mesh=mesh)
    for block in blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)


def make_step(torch, model, optimizer, tokens, offload):
    """One optimisation step: forward under bf16 autocast (activations saved to pinned host
    memory if offloading), backward, update."""
    device_type = tokens.device.type

    def step():
        saving = (torch.autograd.graph.save_on_cpu(pin_memory=device_type == "cuda") if offload
                  else contextlib.nullcontext())
        with torch.autocast(device_type, dtype=torch.bfloat16), saving:
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return step


def train(torch, step, steps, meter, device):
    """One warm-up step, then `steps` timed steps; returns (warm-up seconds, step seconds)."""
    began = time.perf_counter()
    step()
    torch.cuda.synchronize(device)
    warmup = time.perf_counter() - began
    meter.reset_peaks()
    times = []
    for _ in range(steps):
        torch.cuda.synchronize(device)
        began = time.perf_counter()
        step()
        torch.cuda.synchronize(device)
        times.append(time.perf_counter() - began)
    return warmup, times


# ---- one run ----------------------------------------------------------------------------------

def base_result(args, rank, world):
    return {"model": args.model, "technique": args.technique, "allocator": args.allocator,
            "batch": args.batch, "seq": args.seq, "steps": args.steps, "limit": args.limit,
            "rank": rank, "world_size": world, "ok": False, "oom": False, "error": None,
            "warmup_s": None, "step_times_s": [], "median_step_s": None,
            "peak_allocated": None, "peak_reserved": None, "peak_requested": None,
            "fragmentation": None, "measured_steps_peaks": None, "allocator_stats": None,
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
            "faultline_lib": faultline_lib_path() if args.allocator == "faultline" else None,
            "faultline_model": os.environ.get("FAULTLINE_ALLOC_MODEL")
            if args.allocator == "faultline" else None,
            "torch": None, "gpu": None, "params": None, "trainable_params": None,
            "command": sys.argv}


def is_oom(torch, error, meter):
    oom_type = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
    text = str(error)
    if isinstance(error, oom_type) or "out of memory" in text.lower() \
            or "CUBLAS_STATUS_ALLOC_FAILED" in text:
        return True
    # A pluggable allocator that returns NULL surfaces as a later CUDA error; its count tells.
    try:
        return meter is not None and meter.lib is not None and meter.ooms() > 0
    except Exception:
        return False


def run(args, rank=0, world=1):
    """Trains and measures one process's share; writes its result and snapshot; returns it."""
    import torch

    result = base_result(args, rank, world)
    result["torch"] = str(torch.__version__)  # TorchVersion would pickle as a torch class
    device = torch.device("cuda", rank)
    meter = None
    try:
        lib = install_faultline(torch) if args.allocator == "faultline" else None
        torch.cuda.set_device(device)
        result["gpu"] = torch.cuda.get_device_name(device)
        apply_limit(torch, args.limit, args.allocator, device)
        meter = Meter(torch, device, lib)

        def record():
            if args.snapshot:
                torch.cuda.memory._record_memory_history(enabled="all", context=None,
                                                         stacks="python", max_entries=10_000_000)

        zero = "zero" in split_technique(args.technique)[0]
        if not zero:
            record()
        if world > 1:
            import torch.distributed as dist

            dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
        model, vocab = build_model(torch, args, device, record if zero else lambda: None)
        result["params"] = sum(p.numel() for p in model.parameters())
        result["trainable_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
        # No reference to the parameters may outlive this: FSDP2 replaces each with its shard
        # and the whole tensor is freed only when nothing else holds it.
        model = parallelize(torch, model, args, device, world)
        # The Llama shapes step with fused AdamW (one kernel per group, no model-sized
        # temporaries: the 7B model's full fine-tuning fits the H200 only so), as DeepSpeed's.
        optimizer = SplitOptimizer(torch, list(model.parameters()),
                                   fused=MODELS[args.model][0] == "llama")
        generator = torch.Generator().manual_seed(1234 + rank)
        tokens = torch.randint(0, vocab, (args.batch, args.seq), generator=generator).to(device)
        offload = "offload" in split_technique(args.technique)[0]
        step = make_step(torch, model, optimizer, tokens, offload)
        warmup, times = train(torch, step, args.steps, meter, device)
        result.update(ok=True, warmup_s=warmup, step_times_s=times,
                      median_step_s=statistics.median(times))
    except Exception as error:  # noqa: BLE001 -- every failure is reported in the result
        result["oom"] = is_oom(torch, error, meter)
        result["error"] = f"{type(error).__name__}: {error}"[:4000]
        if not result["oom"]:
            traceback.print_exc()
    finish(torch, args, result, meter, rank, world)
    return result


def finish(torch, args, result, meter, rank, world):
    """Adds the allocator's numbers; writes the snapshot, the result and the summary line."""
    if meter is not None:
        try:
            result.update(meter.report())
        except Exception as error:  # noqa: BLE001
            print(f"could not read the allocator's statistics: {error}", file=sys.stderr)
    if args.snapshot:
        dump_snapshot(torch, suffixed(args.snapshot, rank, world), result)
    if args.out:
        write_json(suffixed(args.out, rank, world), result)
    print(summary(result), flush=True)


def dump_snapshot(torch, path, result):
    import pickle

    keys = ("model", "technique", "allocator", "batch", "seq", "steps", "peak_allocated",
            "peak_reserved", "median_step_s", "torch", "gpu", "command")
    try:
        snapshot = torch.cuda.memory._snapshot()
        snapshot["faultline"] = {key: result[key] for key in keys}
        snapshot["faultline"].update(ok=result["ok"], oom=result["oom"], rank=result["rank"],
                                     world_size=result["world_size"])
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path + ".tmp", "wb") as f:
            pickle.dump(snapshot, f)
        os.replace(path + ".tmp", path)
    except Exception:  # noqa: BLE001 -- the result is still written
        print(f"could not write the snapshot {path}:", file=sys.stderr)
        traceback.print_exc()


def summary(result):
    rank = f" rank{result['rank']}" if result["world_size"] > 1 else ""
    state = "ok" if result["ok"] else "OOM" if result["oom"] else "error"
    line = (f"result {result['model']} {result['technique']} b{result['batch']} "
            f"{result['allocator']}{rank}: {state}")
    if result["median_step_s"] is not None:
        line += f", {result['median_step_s']:.3f} s/step"
    if result["peak_reserved"]:
        line += (f", peak allocated {result['peak_allocated'] / GiB:.2f} GiB, reserved "
                 f"{result['peak_reserved'] / GiB:.2f} GiB, fragmentation "
                 f"{100 * result['fragmentation']:.1f}%")
    if result["error"] and not result["oom"]:
        line += f" ({result['error'][:200]})"
    return line


def exit_now(status):
    """Leaves without tearing down a CUDA context that a failure may have left broken."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


# ---- two processes ----------------------------------------------------------------------------

def rank_main(rank, args, world):
    """A spawned rank. On failure it exits non-zero at once, so that torch.multiprocessing stops
    its peer instead of leaving it waiting in a collective."""
    result = run(args, rank, world)
    if not result["ok"]:
        exit_now(EXIT_OOM if result["oom"] else EXIT_ERROR)
    import torch.distributed as dist

    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_distributed(args, world):
    import torch
    import torch.multiprocessing as mp

    if torch.cuda.device_count() < world:
        sys.exit(f"error: {args.technique} needs {world} GPUs; {torch.cuda.device_count()} visible")
    outs = [suffixed(args.out, rank, world) for rank in range(world)] if args.out else []
    for path in outs:
        if os.path.exists(path):
            os.remove(path)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    try:
        mp.spawn(rank_main, args=(args, world), nprocs=world, join=True)
        return 0
    except Exception as error:  # noqa: BLE001 -- a rank failed; spawn has stopped the others
        print(f"distributed run failed: {error}", file=sys.stderr)
        for rank, path in enumerate(outs):
            if not os.path.exists(path):
                stub = base_result(args, rank, world)
                stub["error"] = f"rank {rank} did not finish: {error}"
                write_json(path, stub)
        return 0 if getattr(error, "exit_code", None) == EXIT_OOM else 1


# ---- the largest batch that fits --------------------------------------------------------------

def trial_command(args, batch, out):
    command = [sys.executable, os.path.abspath(__file__), "--model", args.model,
               "--technique", args.technique, "--batch", str(batch), "--seq", str(args.seq),
               "--steps", str(args.steps), "--allocator", args.allocator, "--out", out]
    if args.limit is not None:
        command += ["--limit", str(args.limit)]
    return command


def read_json(path):
    with open(path) as f:
        return json.load(f)


def largest(results, key):
    """The largest value of a key over the ranks' results (None where none has one)."""
    values = [r[key] for r in results if r.get(key) is not None]
    return max(values) if values else None


def run_trial(args, batch, folder):
    """One batch in a fresh process; its output goes to folder/batchB.log."""
    world = world_size(args)
    out = os.path.join(folder, f"batch{batch}.json")
    outs = [suffixed(out, rank, world) for rank in range(world)]
    for path in outs:
        if os.path.exists(path):
            os.remove(path)
    log_path = os.path.join(folder, f"batch{batch}.log")
    began = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.Popen(trial_command(args, batch, out), stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            status = process.wait(timeout=TRIAL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the trial and any ranks it spawned
            process.wait()
            status = None
    results = [read_json(path) for path in outs if os.path.exists(path)]
    trial = {"batch": batch, "ok": len(results) == world and all(r["ok"] for r in results),
             "oom": any(r["oom"] for r in results), "seconds": round(time.perf_counter() - began, 1),
             "peak_allocated": largest(results, "peak_allocated"),
             "peak_reserved": largest(results, "peak_reserved"),
             "median_step_s": largest(results, "median_step_s"),
             "error": None, "log": log_path}
    if not trial["ok"] and not trial["oom"]:
        errors = [r["error"] for r in results if r["error"]]
        trial["error"] = errors[0] if errors else (
            f"timed out after {TRIAL_TIMEOUT_S} s" if status is None
            else f"exit status {status} and no result")
    return trial


def find_max_batch(args):
    lo, hi = args.find_max_batch
    folder = os.path.splitext(args.out)[0] + ".trials"
    os.makedirs(folder, exist_ok=True)
    report = {"model": args.model, "technique": args.technique, "allocator": args.allocator,
              "seq": args.seq, "steps": args.steps, "limit": args.limit, "range": [lo, hi],
              "max_batch": None, "error": None, "trials": [], "command": sys.argv}
    while lo <= hi:
        batch = (lo + hi) // 2
        trial = run_trial(args, batch, folder)
        report["trials"].append(trial)
        state = "fits" if trial["ok"] else "OOM" if trial["oom"] else "error"
        detail = ""
        if trial["ok"] and trial["peak_reserved"] is not None:
            detail = (f" (peak reserved {trial['peak_reserved'] / GiB:.2f} GiB, "
                      f"{trial['median_step_s']:.3f} s/step)")
        print(f"find-max-batch {args.model} {args.technique} {args.allocator}: batch {batch} "
              f"{state}{detail} in {trial['seconds']} s; range [{lo}, {hi}]",
              file=sys.stderr, flush=True)
        if trial["ok"]:
            report["max_batch"] = batch
            lo = batch + 1
        elif trial["oom"]:
            hi = batch - 1
        else:  # not a capacity failure: the search cannot go on
            report["error"] = f"batch {batch}: {trial['error']} (log: {trial['log']})"
            break
    write_json(args.out, report)
    print(f"result find-max-batch {args.model} {args.technique} {args.allocator}: max batch "
          f"{report['max_batch']} after {len(report['trials'])} trials"
          + (f"; stopped: {report['error'][:300]}" if report["error"] else ""), flush=True)
    return 1 if report["error"] else 0


def dry_run(args):
    """The model's family at toy size on the CPU: build it with its technique, train two steps,
    and check that the loss is finite, that every trainable parameter moved and, with 'zero',
    that every block is streamed from host memory. Exit status 1 if a check fails."""
    import torch

    device = torch.device("cpu")
    model, vocab = build_model(torch, args, device)
    parameters = list(model.parameters())
    trainable = [p for p in parameters if p.requires_grad]
    before = [p.detach().clone() for p in trainable]
    optimizer = SplitOptimizer(torch, parameters, fused=False)
    tokens = torch.randint(0, vocab, (args.batch, args.seq),
                           generator=torch.Generator().manual_seed(1234))
    step = make_step(torch, model, optimizer, tokens,
                     "offload" in split_technique(args.technique)[0])
    losses = [float(step()) for _ in range(args.steps)]
    problems = []
    if not all(loss == loss and abs(loss) != float("inf") for loss in losses):
        problems.append(f"loss not finite: {losses}")
    if not trainable:
        problems.append("no trainable parameters")
    unmoved = sum(bool(torch.equal(a, p.detach())) for a, p in zip(before, trainable))
    if unmoved:
        problems.append(f"{unmoved} of {len(trainable)} trainable parameters did not change")
    family = MODELS[args.model][0]
    streamed = [m for m in model.modules() if type(m).__name__ == "Streamed"]
    blocks = [m for m in model.modules() if type(m).__name__ == BLOCKS[family]]
    if "zero" in split_technique(args.technique)[0] and len(streamed) != len(blocks):
        problems.append(f"{len(streamed)} of {len(blocks)} blocks streamed")
    print(f"dry-run {args.model} {args.technique}: {sum(p.numel() for p in parameters)} "
          f"parameters, {sum(p.numel() for p in trainable)} trainable, {len(streamed)} blocks "
          f"streamed, losses {', '.join(f'{loss:.4f}' for loss in losses)}: "
          + ("; ".join(problems) if problems else "ok"), flush=True)
    return 1 if problems else 0


def main():
    args = parse_args()
    if args.dry_run:
        return dry_run(args)
    configure_environment(args)
    if args.find_max_batch:
        return find_max_batch(args)
    world = world_size(args)
    if world > 1:
        return run_distributed(args, world)
    result = run(args)
    if not result["ok"]:
        exit_now(0 if result["oom"] else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
