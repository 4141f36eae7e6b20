"""Real PyTorch training jobs for the allocator-fragmentation study, and what their allocator did.

    experiments/workloads.py alloc --model M --technique T --batch B [--seq L] [--steps S]
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
[LO, HI] that trains without running out of memory, each trial a fresh process of this command,
and writes the trials to --out.

An out-of-memory run is a result, not a failure: ok=false, oom=true, exit status 0. Other errors
exit 1, also with the result written. The last line on stdout is a one-line summary that starts
with "result ".
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import traceback

from lab.paths import EXPERIMENTS
from lab.workloads.allocator import GiB, Meter, apply_limit, faultline_lib_path, install_faultline
from lab.workloads.training import (
    MODELS,
    TECHNIQUES,
    SplitOptimizer,
    build_model,
    dry_run,
    make_step,
    parallelize,
    split_technique,
    train,
)

SUMMARY = (
    "one training job of the allocator study (or its largest batch): step times, the "
    "allocator's peaks and fragmentation, its snapshot")

# torch is imported only after main() has set the allocator's environment variables.

FAULTLINE_LIMIT_MARGIN = 2 * GiB
TRIAL_TIMEOUT_S = 3600
EXIT_OOM, EXIT_ERROR = 3, 4  # a rank's exit status when it failed (its peer is then stopped)

PARALLEL = {"ddp": 2, "fsdp": 2}  # suffix: processes


# ---- command line and environment -------------------------------------------------------------

def parse_bytes(text):
    """'123', '60G', '1.5T': bytes; suffixes are powers of 1024."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def parse_args(argv=None, prog=None):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
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
    command = [sys.executable, os.path.join(EXPERIMENTS, "workloads.py"), "alloc",
               "--model", args.model, "--technique", args.technique, "--batch", str(batch),
               "--seq", str(args.seq), "--steps", str(args.steps), "--allocator", args.allocator,
               "--out", out]
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


def main(argv=None, prog=None):
    args = parse_args(argv, prog)
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
