"""Training and graph workloads for `faultline capture`, all from random initialisation.

    python3 workloads.py NAME [--batch B] [--warmup W] [--steps S]

NAME: gpt2-small, gpt2-medium, resnet50, bert-large, pagerank or mlp (a tiny smoke test). The warm-up steps
run outside the capture range; the measured steps run between torch.cuda.profiler.start() and
stop(), which `faultline capture --range profiler` uses to delimit what it records. Each measured
step begins with torch.cuda.profiler.start(): the first starts the range, the others mark step
boundaries (as does the capture's PyTorch hook after every optimizer step). The script prints one
JSON line with the workload's settings and the wall time of the measured steps.
"""
import argparse
import json
import time

import torch


def training_step(model, optimizer, loss, bf16=False):
    """One optimisation step: loss() under bf16 autocast if asked, backward, update."""

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            value = loss()
        value.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return value

    return model, step


def gpt2_medium(batch, seq=1024):
    return _gpt2(batch, seq, n_embd=1024, n_layer=24, n_head=16)


def gpt2_small(batch, seq=1024):
    return _gpt2(batch, seq, n_embd=768, n_layer=12, n_head=12)


def _gpt2(batch, seq, **shape):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_positions=seq, **shape)
    model = GPT2LMHeadModel(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
    return training_step(model, optimizer, lambda: model(input_ids=tokens, labels=tokens).loss,
                         bf16=True)


def bert_large(batch, seq=512):
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                        intermediate_size=4096, max_position_embeddings=seq)
    model = BertForMaskedLM(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
    labels = torch.where(torch.rand(batch, seq, device="cuda") < 0.15, tokens, -100)
    return training_step(model, optimizer, lambda: model(input_ids=tokens, labels=labels).loss,
                         bf16=True)


def resnet50(batch):
    import torchvision

    model = torchvision.models.resnet50(weights=None).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(batch, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 1000, (batch,), device="cuda")
    return training_step(model, optimizer,
                         lambda: torch.nn.functional.cross_entropy(model(images), labels))


def pagerank(batch):
    """PageRank over a synthetic power-law graph: `batch` million vertices, 16 edges each, edge
    endpoints drawn from a Zipf-like distribution so a few vertices hold most edges."""
    n = batch * 1_000_000
    m = 16 * n
    g = torch.Generator(device="cuda").manual_seed(0)
    src = (n * torch.rand(m, device="cuda", generator=g) ** 3).long()
    dst = (n * torch.rand(m, device="cuda", generator=g) ** 2).long()
    out_degree = torch.bincount(src, minlength=n).clamp_(min=1).float()
    rank = torch.full((n,), 1.0 / n, device="cuda")

    def step():
        nonlocal rank
        contribution = (rank / out_degree)[src]
        incoming = torch.zeros(n, device="cuda").index_add_(0, dst, contribution)
        rank = 0.15 / n + 0.85 * incoming
        return rank.sum()

    return None, step


def mlp(batch):
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, 1024, device="cuda")
    return training_step(model, optimizer, lambda: model(x).square().mean())


WORKLOADS = {"gpt2-medium": (gpt2_medium, 8), "gpt2-small": (gpt2_small, 8), "bert-large": (bert_large, 16),
             "resnet50": (resnet50, 64), "pagerank": (pagerank, 16), "mlp": (mlp, 256)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(WORKLOADS))
    parser.add_argument("--batch", type=int)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    build, default_batch = WORKLOADS[args.name]
    batch = args.batch or default_batch
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    _, step = build(batch)
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(args.steps):
        torch.cuda.profiler.start()
        value = step()
    value.item()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - began
    torch.cuda.profiler.stop()
    print(json.dumps({"workload": args.name, "batch": batch, "steps": args.steps,
                      "warmup": args.warmup, "steps_seconds": round(seconds, 4),
                      "peak_allocated": torch.cuda.max_memory_allocated(),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
