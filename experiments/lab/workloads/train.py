"""Training and graph workloads for `faultline capture`, all from random initialisation.

    experiments/workloads.py train NAME [--batch B] [--warmup W] [--steps S]

NAME: gpt2-small, gpt2-medium, resnet50, bert-large, t5-base (encoder-decoder), moe (a small
mixture-of-experts decoder, 8 experts, top-2 routing), graphsage (torch-geometric GraphSAGE on a
synthetic graph), pagerank, llama (a Llama-style decoder), unet (a U-Net segmenting images), vit (a
Vision Transformer) and lstm (an LSTM language model), hold-out programs never used to tune the
model, dlrm (a recommender with 1 GB of embedding tables, the hold-out of `faultline run`), the
fault-path study's hold-out programs diffusion (a denoising-diffusion U-Net), recsys (a two-tower
recommender with 4 GB of embedding tables and sparse gradients) and longctx (a decoder over
8k-token sequences), the sixth set's gan (DCGAN-style adversarial training: a generator and a
discriminator with an Adam each, updated in turn), video (an R(2+1)D classifier of 16-frame clips:
3D convolutions) and ssm (a Mamba-style state-space language model in plain PyTorch, its scan
chunked), the seventh set's pointcloud (a DGCNN: k-nearest-neighbour gathers over point
clouds), speech (a Conformer encoder trained with CTC) and field (an Instant-NGP-style radiance
field: hashed lookups into 0.5 GB of tables), or mlp (a tiny smoke test); the programs are in
lab/workloads/models.py, the sixth and seventh sets' in lab/workloads/holdout6.py and
holdout7.py. The warm-up steps run outside the capture range; the measured steps
run between torch.cuda.profiler.start() and stop(), which `faultline capture --range profiler`
uses to delimit what it records. Each measured step begins with torch.cuda.profiler.start(): the
first starts the range, the others mark step boundaries (as does the capture's PyTorch hook after
every optimizer step). The program prints one JSON line with the workload's settings, the wall
time of the measured steps and each step's own wall time (each step ends by waiting for the GPU).
"""
import argparse
import json
import os
import time

SUMMARY = (
    "one captured program: warm-up steps, then measured steps between profiler marks, its step "
    "times as one JSON line")

# NAME: its default batch. The program is models.NAME (holdout6.NAME and holdout7.NAME for the
# sixth and seventh hold-out sets), '-' written '_'.
WORKLOADS = {"gpt2-medium": 8, "gpt2-small": 8, "bert-large": 16, "resnet50": 64, "pagerank": 16,
             "mlp": 256, "t5-base": 8, "moe": 16, "graphsage": 10, "llama": 4, "unet": 8,
             "vit": 32, "lstm": 64, "dlrm": 2048, "diffusion": 32, "recsys": 4096,
             "longctx": 1, "gan": 128, "video": 16, "ssm": 8, "pointcloud": 12, "speech": 16,
             "field": 32}


def main(argv=None, prog=None):
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS (moe)
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(WORKLOADS))
    parser.add_argument("--batch", type=int)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)
    import torch

    from lab.workloads import holdout6, holdout7, models

    name = args.name.replace("-", "_")
    build = getattr(models, name, None) or getattr(holdout6, name, None) or getattr(holdout7, name)
    batch = args.batch or WORKLOADS[args.name]
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    _, step = build(batch)
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    began = time.perf_counter()
    # Each step ends by waiting for the GPU, as a loop that logs its loss does, so that the
    # step's wall time is the program's own step time (the trace's program_step_ns is the same
    # interval, timed in the capture).
    step_seconds = []
    for _ in range(args.steps):
        step_began = time.perf_counter()
        torch.cuda.profiler.start()
        value = step()
        torch.cuda.synchronize()
        step_seconds.append(time.perf_counter() - step_began)
    value.item()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - began
    torch.cuda.profiler.stop()
    print(json.dumps({"workload": args.name, "batch": batch, "steps": args.steps,
                      "warmup": args.warmup, "steps_seconds": round(seconds, 4),
                      "step_seconds": [round(s, 6) for s in step_seconds],
                      "peak_allocated": torch.cuda.max_memory_allocated(),
                      "torch": torch.__version__}))
    return 0
