"""The training jobs of `experiments/workloads.py alloc`: the models (transformers configs at their
published shapes, random weights), the memory techniques applied to them and one optimisation step.

Read by lab/workloads/alloc.py, which chooses the allocator before torch is imported: every
function here takes torch as an argument instead of importing it, but dry_run, which runs on the
CPU.
"""
import contextlib
import time

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


def split_technique(technique):
    """'lora-recompute+ddp' -> ({'lora', 'recompute'}, 'ddp'); 'none' -> (set(), None)."""
    base, _, parallel = technique.partition("+")
    parts = set() if base == "none" else set(base.split("-"))
    return parts, parallel or None


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
