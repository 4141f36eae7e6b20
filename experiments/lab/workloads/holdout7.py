"""The seventh hold-out set (`experiments/workloads.py train NAME`, built and run as the programs of
lab/workloads/models.py are: NAME takes the batch and returns (model, step)): pointcloud, speech
and field, written to judge the change to the simulator's migration costs made on set six and
never tuned on. Each is a kind of program the earlier sets do not have.
"""
import torch

from lab.workloads.models import training_step


def _knn(x, k):
    """The k nearest neighbours of each point of x (batch, channels, points), itself included:
    (batch, points, k) indices."""
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    square = (x * x).sum(dim=1, keepdim=True)
    return (-square - inner - square.transpose(2, 1)).topk(k=k, dim=-1)[1]


def _edges(x, k):
    """DGCNN's edge features: for each point and each of its k neighbours, (neighbour - point,
    point), gathered through one flat index: (batch, 2 * channels, points, k)."""
    batch, channels, points = x.shape
    index = _knn(x, k) + torch.arange(batch, device=x.device).view(-1, 1, 1) * points
    flat = x.transpose(2, 1).reshape(batch * points, channels)
    neighbours = flat[index.view(-1)].view(batch, points, k, channels)
    centre = x.transpose(2, 1).unsqueeze(2).expand(-1, -1, k, -1)
    return torch.cat((neighbours - centre, centre), dim=3).permute(0, 3, 1, 2).contiguous()


def pointcloud(batch, points=2048, k=20, classes=40):
    """A dynamic-graph CNN (DGCNN) classifying `batch` random clouds of `points` 3D points: four
    EdgeConv layers, each finding every point's k nearest neighbours in the previous layer's
    features (a points x points distance matrix and a top-k), gathering their features through an
    index into the whole batch and max-pooling a 1x1 convolution over the k edges, then a
    1024-channel convolution over the four layers' features and an MLP head; fp32. The gathered
    edge tensors (batch x points x k x channels, 0.5 GB for the widest at the defaults) dwarf the
    1.8M parameters: a working set of index-driven gathers whose neighbours change as the features
    do, unlike any convolution or attention program."""
    nn = torch.nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout),
                             nn.LeakyReLU(0.2))

    convs = nn.ModuleList([block(6, 64), block(128, 64), block(128, 128), block(256, 256)])
    fuse = nn.Sequential(nn.Conv1d(512, 1024, 1, bias=False), nn.BatchNorm1d(1024),
                         nn.LeakyReLU(0.2))
    head = nn.Sequential(nn.Linear(2048, 512, bias=False), nn.BatchNorm1d(512), nn.LeakyReLU(0.2),
                         nn.Dropout(0.5), nn.Linear(512, 256), nn.BatchNorm1d(256),
                         nn.LeakyReLU(0.2), nn.Dropout(0.5), nn.Linear(256, classes))
    model = nn.ModuleList([convs, fuse, head]).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    g = torch.Generator(device="cuda").manual_seed(0)
    clouds = torch.rand(batch, 3, points, device="cuda", generator=g) * 2 - 1
    labels = torch.randint(0, classes, (batch,), device="cuda", generator=g)

    def forward():
        x, layers = clouds, []
        for conv in convs:
            x = conv(_edges(x, k)).max(dim=-1)[0]
            layers.append(x)
        x = fuse(torch.cat(layers, dim=1))
        x = torch.cat((x.amax(dim=-1), x.mean(dim=-1)), dim=1)
        return nn.functional.cross_entropy(head(x), labels)

    return training_step(model, optimizer, forward)


class _ConformerBlock(torch.nn.Module):
    """One Conformer block: half a feed-forward, self-attention, the convolution module (a
    pointwise convolution and GLU, a depthwise convolution over time, batch norm, SiLU, a
    pointwise convolution), half a feed-forward, each with its residual, and a final norm."""

    def __init__(self, width, heads, kernel):
        super().__init__()
        nn = torch.nn

        def feed_forward():
            return nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.SiLU(),
                                 nn.Linear(4 * width, width))

        self.ff1, self.ff2 = feed_forward(), feed_forward()
        self.attention_norm = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.conv_norm = nn.LayerNorm(width)
        self.pointwise_in = nn.Conv1d(width, 2 * width, 1)
        self.depthwise = nn.Conv1d(width, width, kernel, padding=kernel // 2, groups=width)
        self.conv_bn = nn.BatchNorm1d(width)
        self.pointwise_out = nn.Conv1d(width, width, 1)
        self.out_norm = nn.LayerNorm(width)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        y = self.attention_norm(x)
        x = x + self.attention(y, y, y, need_weights=False)[0]
        y = self.conv_norm(x).transpose(1, 2)
        y = torch.nn.functional.glu(self.pointwise_in(y), dim=1)
        y = torch.nn.functional.silu(self.conv_bn(self.depthwise(y)))
        x = x + self.pointwise_out(y).transpose(1, 2)
        x = x + 0.5 * self.ff2(x)
        return self.out_norm(x)


def speech(batch, frames=1600, mels=80, width=512, layers=12, heads=8, kernel=31, vocab=1024,
           labels=200):
    """A Conformer speech encoder trained with CTC on `batch` random utterances of `frames`
    10 ms frames of `mels` log-mel features: two stride-2 convolutions subsample time by four,
    then `layers` Conformer blocks (attention over the 400 remaining frames beside a depthwise
    convolution over time, 31 frames wide) and a linear layer to `vocab` tokens; CTC's loss
    against `labels` random tokens an utterance. bf16 autocast, AdamW. 80M parameters (1.3 GB
    with their gradients and AdamW's state in fp32) beside activations that the CTC loss's
    alignment over every frame and token keeps to the end of the forward pass: a speech model,
    with a loss the other sets lack."""
    nn = torch.nn
    subsample = nn.Sequential(nn.Conv2d(1, width, 3, 2), nn.SiLU(), nn.Conv2d(width, width, 3, 2),
                              nn.SiLU())
    reduced = ((mels - 1) // 2 - 1) // 2
    project = nn.Linear(width * reduced, width)
    blocks = nn.ModuleList([_ConformerBlock(width, heads, kernel) for _ in range(layers)])
    out = nn.Linear(width, vocab)
    model = nn.ModuleList([subsample, project, blocks, out]).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cuda").manual_seed(0)
    features = torch.randn(batch, 1, frames, mels, device="cuda", generator=g)
    targets = torch.randint(1, vocab, (batch, labels), device="cuda", generator=g)
    steps_out = ((frames - 1) // 2 - 1) // 2
    input_lengths = torch.full((batch,), steps_out, dtype=torch.long, device="cuda")
    target_lengths = torch.full((batch,), labels, dtype=torch.long, device="cuda")

    def forward():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            x = subsample(features)  # (batch, width, time, reduced)
            x = project(x.permute(0, 2, 1, 3).flatten(2))
            for b in blocks:
                x = b(x)
            logits = out(x)
        log_probs = logits.float().log_softmax(-1).transpose(0, 1)  # (time, batch, vocab)
        return nn.functional.ctc_loss(log_probs, targets, input_lengths, target_lengths)

    return training_step(model, optimizer, forward)


# Instant-NGP's spatial hash: a prime for each coordinate, XORed.
_PRIMES = (1, 2654435761, 805459861)


def field(batch, levels=16, table=1 << 22, features=2, base=16, growth=1.5, samples=32,
          width=64):
    """A neural radiance field fitted to random rays, the way Instant-NGP encodes space: `levels`
    hash tables of `table` entries of `features` learned features (16 x 4M x 2 fp32 at the
    defaults: 0.5 GB, 2.1 GB with their gradient and Adam's state), each point of each ray
    looked up at the 8 corners of its cell at every level's resolution, through a spatial hash,
    and interpolated; a small MLP turns the features into density and colour and the samples
    along each ray are composited (volume rendering) against a random target colour. `batch` x
    1024 rays of `samples` points. The table's gradient is a scatter-add of every corner's, dense
    in a table far larger than the points touch: random gathers and scatters over a large table,
    every step, where recsys's lookups are sparse rows."""
    nn = torch.nn
    rays = batch * 1024
    tables = nn.Parameter(torch.empty(levels, table, features, device="cuda").uniform_(-1e-4, 1e-4))
    mlp = nn.Sequential(nn.Linear(levels * features, width), nn.ReLU(), nn.Linear(width, width),
                        nn.ReLU(), nn.Linear(width, 4)).cuda()
    model = nn.ModuleList([mlp])
    model.register_parameter("tables", tables)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, eps=1e-15)
    g = torch.Generator(device="cuda").manual_seed(0)
    origins = torch.rand(rays, 3, device="cuda", generator=g) * 0.2 + 0.4
    directions = nn.functional.normalize(
        torch.randn(rays, 3, device="cuda", generator=g), dim=-1)
    targets = torch.rand(rays, 3, device="cuda", generator=g)
    depth = torch.linspace(0.0, 0.5, samples, device="cuda")
    resolutions = [int(base * growth ** level) for level in range(levels)]
    corners = torch.tensor([[i >> 2 & 1, i >> 1 & 1, i & 1] for i in range(8)], device="cuda")
    primes = torch.tensor(_PRIMES, device="cuda")

    def encode(points):  # (n, 3) in [0, 1]
        out = []
        for level, resolution in enumerate(resolutions):
            scaled = points * resolution
            cell = scaled.floor().long()
            frac = scaled - cell
            vertex = cell.unsqueeze(1) + corners  # (n, 8, 3)
            hashed = (vertex * primes).unbind(-1)
            index = (hashed[0] ^ hashed[1] ^ hashed[2]) % table
            weight = torch.where(corners.bool(), frac.unsqueeze(1), 1 - frac.unsqueeze(1)).prod(-1)
            out.append((tables[level][index] * weight.unsqueeze(-1)).sum(1))
        return torch.cat(out, dim=-1)

    def forward():
        points = (origins.unsqueeze(1) + directions.unsqueeze(1) * depth.view(1, -1, 1))
        points = points.clamp(0, 1 - 1e-6).view(-1, 3)
        raw = mlp(encode(points)).view(rays, samples, 4)
        density = nn.functional.softplus(raw[..., 0])
        colour = torch.sigmoid(raw[..., 1:])
        alpha = 1 - torch.exp(-density * (0.5 / samples))
        light = torch.cumprod(torch.cat((torch.ones_like(alpha[:, :1]), 1 - alpha[:, :-1] + 1e-10),
                                        dim=1), dim=1)
        rendered = ((alpha * light).unsqueeze(-1) * colour).sum(1)
        return nn.functional.mse_loss(rendered, targets)

    return training_step(model, optimizer, forward)
