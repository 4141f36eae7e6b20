"""The programs `faultline capture` records (`experiments/workloads.py train NAME`): training and
graph workloads, all from random initialisation. Each NAME is a function here, NAME with '-' as
'_', that takes the batch and returns (model, step), step() running one step and returning its
loss (lab/workloads/train.py runs and times them).
"""
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


def t5_base(batch, source=512, target=128):
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_decoder_layers=12,
                      num_heads=12, vocab_size=32128, pad_token_id=0, eos_token_id=1,
                      decoder_start_token_id=0)
    model = T5ForConditionalGeneration(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    inputs = torch.randint(0, config.vocab_size, (batch, source), device="cuda")
    labels = torch.randint(0, config.vocab_size, (batch, target), device="cuda")
    return training_step(model, optimizer,
                         lambda: model(input_ids=inputs, labels=labels).loss, bf16=True)


class _MoeLayer(torch.nn.Module):
    """A decoder layer whose feed-forward part is 8 experts; each token goes to its top 2."""

    def __init__(self, width, experts=8, top=2):
        super().__init__()
        self.top = top
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.attention = torch.nn.MultiheadAttention(width, 8, batch_first=True)
        self.router = torch.nn.Linear(width, experts)
        self.experts = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                torch.nn.Linear(4 * width, width)) for _ in range(experts))

    def forward(self, x):
        seq = x.shape[1]
        mask = torch.triu(torch.ones(seq, seq, device=x.device, dtype=torch.bool), 1)
        h = self.norm1(x)
        x = x + self.attention(h, h, h, attn_mask=mask, need_weights=False)[0]
        tokens = self.norm2(x).reshape(-1, x.shape[-1])
        weights, chosen = self.router(tokens).softmax(-1).topk(self.top, dim=-1)
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            rows, slot = (chosen == e).nonzero(as_tuple=True)
            out.index_add_(0, rows, expert(tokens[rows]) * weights[rows, slot, None])
        return x + out.reshape(x.shape)


def moe(batch, seq=512, width=512, layers=6, vocab=16384):
    # Routing depends on the weights: the two capture passes must compute them bit for bit alike,
    # so the atomics of index_add_ and its gradients give way to deterministic kernels.
    # Attention runs on the math backend: cuDNN's and the fused kernels' backward passes are not
    # deterministic.
    torch.use_deterministic_algorithms(True, warn_only=True)
    for backend in ("flash", "mem_efficient", "cudnn"):
        getattr(torch.backends.cuda, f"enable_{backend}_sdp")(False)
    embed = torch.nn.Embedding(vocab, width)
    body = torch.nn.Sequential(*[_MoeLayer(width) for _ in range(layers)])
    head = torch.nn.Linear(width, vocab)
    model = torch.nn.Sequential(embed, body, head).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, vocab, (batch, seq), device="cuda")

    def loss():
        logits = model(tokens[:, :-1])
        return torch.nn.functional.cross_entropy(logits.reshape(-1, vocab),
                                                 tokens[:, 1:].reshape(-1))

    return training_step(model, optimizer, loss, bf16=True)


class _DecoderLayer(torch.nn.Module):
    """A Llama-style decoder layer: RMSNorm, rotary attention without biases, SwiGLU."""

    def __init__(self, width, heads, hidden):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = torch.nn.RMSNorm(width), torch.nn.RMSNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width, bias=False)
        self.out = torch.nn.Linear(width, width, bias=False)
        self.gate_up = torch.nn.Linear(width, 2 * hidden, bias=False)
        self.down = torch.nn.Linear(hidden, width, bias=False)

    def forward(self, x, cos, sin):
        b, t, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, -1).transpose(1, 3).unbind(2)

        def rotate(y):
            y1, y2 = y.chunk(2, dim=-1)
            return y * cos + torch.cat((-y2, y1), dim=-1) * sin

        a = torch.nn.functional.scaled_dot_product_attention(rotate(q), rotate(k), v,
                                                             is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, w))
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(torch.nn.functional.silu(gate) * up)


def llama(batch, seq=1024, width=1024, layers=16, heads=16, hidden=2816, vocab=32000):
    """A Llama-style decoder (no shipped trace has rotary attention, RMSNorm or SwiGLU): a
    hold-out program of the live fidelity report (experiments/live/holdout/)."""
    embed = torch.nn.Embedding(vocab, width)
    body = torch.nn.ModuleList(_DecoderLayer(width, heads, hidden) for _ in range(layers))
    norm, head = torch.nn.RMSNorm(width), torch.nn.Linear(width, vocab, bias=False)
    model = torch.nn.ModuleList([embed, body, norm, head]).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, vocab, (batch, seq), device="cuda")
    half = width // heads // 2
    angle = torch.outer(torch.arange(seq, device="cuda").float(),
                        10000.0 ** (-torch.arange(half, device="cuda").float() / half))
    cos, sin = torch.cat((angle, angle), -1).cos(), torch.cat((angle, angle), -1).sin()

    def loss():
        x = embed(tokens[:, :-1])
        for layer in body:
            x = layer(x, cos[:-1], sin[:-1])
        logits = head(norm(x))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, vocab),
                                                 tokens[:, 1:].reshape(-1))

    return training_step(model, optimizer, loss, bf16=True)


def graphsage(batch, features=128, classes=16):
    """Full-graph GraphSAGE training: `batch` hundred thousand vertices, 16 random edges each."""
    from torch_geometric.nn import GraphSAGE

    n = batch * 100_000
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, features, device="cuda", generator=g)
    edges = torch.randint(0, n, (2, 16 * n), device="cuda", generator=g)
    labels = torch.randint(0, classes, (n,), device="cuda", generator=g)
    model = GraphSAGE(features, 256, num_layers=3, out_channels=classes).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return training_step(model, optimizer, lambda: torch.nn.functional.cross_entropy(
        model(x, edges), labels))


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


def unet(batch, size=256, width=64, depth=4, classes=8):
    """A U-Net (encoder-decoder of 3x3 convolutions with batch norm, the encoder's activations
    carried across to the decoder) segmenting `batch` random images of size x size into `classes`:
    activations that live from the first layer to the last, unlike the shipped CNN's."""
    nn = torch.nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            chans = [width << i for i in range(depth + 1)]
            self.down = nn.ModuleList([block(3, chans[0])] + [block(chans[i], chans[i + 1])
                                                              for i in range(depth)])
            self.up = nn.ModuleList([nn.ConvTranspose2d(chans[i + 1], chans[i], 2, stride=2)
                                     for i in reversed(range(depth))])
            self.merge = nn.ModuleList([block(2 * chans[i], chans[i]) for i in reversed(range(depth))])
            self.head = nn.Conv2d(chans[0], classes, 1)

        def forward(self, x):
            skips = []
            for i, down in enumerate(self.down):
                x = down(x if i == 0 else nn.functional.max_pool2d(x, 2))
                skips.append(x)
            skips.pop()
            for up, merge in zip(self.up, self.merge):
                x = merge(torch.cat([up(x), skips.pop()], dim=1))
            return self.head(x)

    model = UNet().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.randn(batch, 3, size, size, device="cuda")
    labels = torch.randint(0, classes, (batch, size, size), device="cuda")
    return training_step(model, optimizer,
                         lambda: nn.functional.cross_entropy(model(images), labels))


def vit(batch, size=224, patch=16, width=768, depth=12, heads=12, classes=1000):
    """A Vision Transformer (ViT-B/16 shape: patch embedding, pre-norm encoder layers, class
    token) classifying `batch` random images: attention over image patches, which no other
    workload has. A hold-out program of the third set."""
    nn = torch.nn

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            tokens = (size // patch) ** 2 + 1
            self.embed = nn.Conv2d(3, width, patch, stride=patch)
            self.cls = nn.Parameter(torch.zeros(1, 1, width))
            self.position = nn.Parameter(torch.randn(1, tokens, width) * 0.02)
            layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, classes)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.position
            return self.head(self.norm(self.encoder(x))[:, 0])

    model = ViT().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    images = torch.randn(batch, 3, size, size, device="cuda")
    labels = torch.randint(0, classes, (batch,), device="cuda")
    return training_step(model, optimizer,
                         lambda: nn.functional.cross_entropy(model(images), labels))


def lstm(batch, seq=256, vocab=16384, width=1024, hidden=2048, layers=2):
    """A word-level LSTM language model (cuDNN's recurrent kernels, which step through the
    sequence inside the library) over `batch` random sequences. A hold-out program of the third
    set."""
    nn = torch.nn

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.rnn = nn.LSTM(width, hidden, layers, batch_first=True)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, tokens):
            return self.out(self.rnn(self.embed(tokens))[0])

    model = LanguageModel().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, vocab, (batch, seq + 1), device="cuda")
    return training_step(model, optimizer, lambda: nn.functional.cross_entropy(
        model(tokens[:, :-1]).reshape(-1, vocab), tokens[:, 1:].reshape(-1)))


def mlp(batch):
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, 1024, device="cuda")
    return training_step(model, optimizer, lambda: model(x).square().mean())


def dlrm(batch, tables=8, rows=500_000, dim=64, dense=13, lookups=4):
    """A DLRM-style recommender (hold-out of `faultline run`, never used to tune anything):
    `tables` embedding tables of `rows` x `dim` (1 GB of weights at the defaults, most of the
    footprint, each step touching a scattered few rows of each), summed bags of `lookups` ids
    per sample, a bottom MLP over `dense` features, pairwise dot interactions and a top MLP."""
    nn = torch.nn

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embeddings = nn.ModuleList(
                nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
            self.bottom = nn.Sequential(nn.Linear(dense, 512), nn.ReLU(), nn.Linear(512, 256),
                                        nn.ReLU(), nn.Linear(256, dim), nn.ReLU())
            pairs = (tables + 1) * tables // 2
            self.top = nn.Sequential(nn.Linear(dim + pairs, 1024), nn.ReLU(),
                                     nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 1))

        def forward(self, features, ids):
            x = self.bottom(features)
            vectors = [x] + [bag(ids[t]) for t, bag in enumerate(self.embeddings)]
            stacked = torch.stack(vectors, dim=1)
            dots = torch.bmm(stacked, stacked.transpose(1, 2))
            i, j = torch.triu_indices(tables + 1, tables + 1, offset=1, device="cuda")
            return self.top(torch.cat([x, dots[:, i, j]], dim=1)).squeeze(1)

    model = DLRM().cuda()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.01)
    g = torch.Generator(device="cuda").manual_seed(0)
    features = torch.randn(batch, dense, device="cuda", generator=g)
    # Zipf-like ids: a few rows of each table are hot, as in click logs.
    ids = (rows * torch.rand(tables, batch, lookups, device="cuda", generator=g) ** 4).long()
    labels = torch.rand(batch, device="cuda", generator=g).round()
    return training_step(model, optimizer, lambda: nn.functional.binary_cross_entropy_with_logits(
        model(features, ids), labels))


def diffusion(batch, size=64, width=128, mults=(1, 2, 2, 4), attention_at=16, steps=1000):
    """A denoising-diffusion U-Net (DDPM's noise predictor: residual blocks with group norm and
    the timestep's embedding added, self-attention at attention_at x attention_at, skip
    connections from every level) learning to predict the noise added to `batch` random
    images at random timesteps. A hold-out program of the fault-path study: never tuned on."""
    nn = torch.nn
    chans = [width * m for m in mults]
    embed_width = 4 * width

    class Res(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.norm1, self.norm2 = nn.GroupNorm(32, cin), nn.GroupNorm(32, cout)
            self.conv1, self.conv2 = nn.Conv2d(cin, cout, 3, padding=1), nn.Conv2d(cout, cout, 3,
                                                                                   padding=1)
            self.time = nn.Linear(embed_width, cout)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, t):
            h = self.conv1(nn.functional.silu(self.norm1(x)))
            h = h + self.time(t)[:, :, None, None]
            return self.skip(x) + self.conv2(nn.functional.silu(self.norm2(h)))

    class Attention(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.norm, self.qkv, self.out = nn.GroupNorm(32, c), nn.Conv2d(c, 3 * c, 1), \
                nn.Conv2d(c, c, 1)

        def forward(self, x):
            b, c, h, w = x.shape
            q, k, v = self.qkv(self.norm(x)).reshape(b, 3, 4, c // 4, h * w).transpose(-1, -2) \
                .unbind(1)
            a = nn.functional.scaled_dot_product_attention(q, k, v)
            return x + self.out(a.transpose(-1, -2).reshape(b, c, h, w))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.time = nn.Sequential(nn.Linear(width, embed_width), nn.SiLU(),
                                      nn.Linear(embed_width, embed_width))
            self.stem = nn.Conv2d(3, width, 3, padding=1)
            self.down, self.up = nn.ModuleList(), nn.ModuleList()
            c, res, skips = width, size, [width]
            for i, cout in enumerate(chans):
                for _ in range(2):
                    self.down.append(nn.ModuleList([Res(c, cout), Attention(cout)
                                                    if res == attention_at else nn.Identity()]))
                    c = cout
                    skips.append(c)
                if i < len(chans) - 1:
                    self.down.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
                    res //= 2
                    skips.append(c)
            self.middle = nn.ModuleList([Res(c, c), Attention(c), Res(c, c)])
            for i, cout in reversed(list(enumerate(chans))):
                for _ in range(3):
                    self.up.append(nn.ModuleList([Res(c + skips.pop(), cout), Attention(cout)
                                                  if res == attention_at else nn.Identity()]))
                    c = cout
                if i > 0:
                    self.up.append(nn.Sequential(nn.Upsample(scale_factor=2),
                                                 nn.Conv2d(c, c, 3, padding=1)))
                    res *= 2
            self.head = nn.Sequential(nn.GroupNorm(32, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))

        def forward(self, x, t):
            half = width // 2
            angle = t[:, None].float() * torch.exp(
                -torch.arange(half, device=x.device) * (9.21 / half))[None]
            t = self.time(torch.cat([angle.sin(), angle.cos()], dim=1))
            x = self.stem(x)
            skips = [x]
            for layer in self.down:
                if isinstance(layer, nn.ModuleList):
                    x = layer[1](layer[0](x, t))
                else:
                    x = layer(x)
                skips.append(x)
            x = self.middle[2](self.middle[1](self.middle[0](x, t)), t)
            for layer in self.up:
                if isinstance(layer, nn.ModuleList):
                    x = layer[1](layer[0](torch.cat([x, skips.pop()], dim=1), t))
                else:
                    x = layer(x)
            return self.head(x)

    model = UNet().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cuda").manual_seed(0)
    images = torch.randn(batch, 3, size, size, device="cuda", generator=g)
    alpha_bar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, steps, device="cuda"), dim=0)

    def loss():
        t = torch.randint(0, steps, (batch,), device="cuda", generator=g)
        noise = torch.randn(images.shape, device="cuda", generator=g)
        a = alpha_bar[t][:, None, None, None]
        return nn.functional.mse_loss(model(a.sqrt() * images + (1 - a).sqrt() * noise, t), noise)

    return training_step(model, optimizer, loss, bf16=True)


def recsys(batch, tables=4, rows=2_000_000, dim=128, lookups=16):
    """A two-tower retrieval recommender with large embedding tables (`tables` x `rows` x `dim`,
    4 GB of weights at the defaults) trained with sparse gradients and plain SGD, so that each
    step reads and updates only the rows its ids name: scattered pages across the whole
    footprint, unlike dlrm's dense Adagrad. Each tower sums bags of `lookups` Zipf-like ids
    from half the tables, then an MLP; in-batch softmax over the towers' dot products. A
    hold-out program of the fault-path study: never tuned on."""
    nn = torch.nn
    half = tables // 2

    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.bags = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum", sparse=True)
                                      for _ in range(half))
            self.mlp = nn.Sequential(nn.Linear(half * dim, 1024), nn.ReLU(), nn.Linear(1024, 256))

        def forward(self, ids):
            return nn.functional.normalize(
                self.mlp(torch.cat([bag(ids[i]) for i, bag in enumerate(self.bags)], dim=1)), dim=1)

    users, items = Tower(), Tower()
    model = nn.ModuleList([users, items]).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator(device="cuda").manual_seed(0)
    labels = torch.arange(batch, device="cuda")

    def loss():
        ids = (rows * torch.rand(2, half, batch, lookups, device="cuda", generator=g) ** 3).long()
        logits = users(ids[0]) @ items(ids[1]).T * 20
        return nn.functional.cross_entropy(logits, labels)

    return training_step(model, optimizer, loss)


def longctx(batch, seq=8192, width=1024, layers=4, heads=16, hidden=2816, vocab=8192):
    """A Llama-style decoder over long sequences (`seq` tokens, flash attention through
    scaled_dot_product_attention): few large activations and attention kernels that run for
    milliseconds, unlike the shipped traces' short kernels. A hold-out program of the
    fault-path study: never tuned on."""
    return llama(batch, seq=seq, width=width, layers=layers, heads=heads, hidden=hidden,
                 vocab=vocab)
