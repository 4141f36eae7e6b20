"""The sixth hold-out set (`experiments/workloads.py train NAME`, built and run as the programs of
lab/workloads/models.py are: NAME takes the batch and returns (model, step)): gan, video and ssm,
written for judging the fault-path change made on set 5's lead (the calibration measuring the
fault path with CUPTI's counters off) and never tuned on. Each is a kind of program the earlier
sets do not have.
"""
import math

import torch

from lab.workloads.models import training_step


def gan(batch, size=128, latent=128, width=128):
    """DCGAN-style adversarial training on `batch` random size x size images: a generator of
    transposed convolutions (latent vector to 4x4 x 16*width channels, doubling the resolution
    and halving the channels up to 3 x size x size) and its mirror, a discriminator of strided
    convolutions, each with its own Adam. A step updates the discriminator on real and generated
    images, then the generator through the updated discriminator (whose weights take no gradient
    then), so the two models' weights, gradients and optimizer states (93M parameters, 1.1 GB
    with Adam's state, at the defaults) take turns, and the generator's activations live across
    the discriminator's whole update: two working sets that alternate, unlike any one-model
    program. fp32 (cuDNN's TF32). `faultline capture --torch` marks a step after each
    optimizer's step, so each iteration is two steps in a trace: the discriminator's update,
    then the generator's."""
    nn = torch.nn
    levels = int(math.log2(size)) - 2  # 4x4 doubled `levels` times
    chans = [width << i for i in reversed(range(levels))]  # 4x4's channels first
    layers = [nn.ConvTranspose2d(latent, chans[0], 4, 1, 0, bias=False), nn.BatchNorm2d(chans[0]),
              nn.ReLU(inplace=True)]
    for cin, cout in zip(chans, chans[1:]):
        layers += [nn.ConvTranspose2d(cin, cout, 4, 2, 1, bias=False), nn.BatchNorm2d(cout),
                   nn.ReLU(inplace=True)]
    generator = nn.Sequential(*layers, nn.ConvTranspose2d(chans[-1], 3, 4, 2, 1, bias=False),
                              nn.Tanh())
    chans = chans[::-1]
    layers = [nn.Conv2d(3, chans[0], 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True)]
    for cin, cout in zip(chans, chans[1:]):
        layers += [nn.Conv2d(cin, cout, 4, 2, 1, bias=False), nn.BatchNorm2d(cout),
                   nn.LeakyReLU(0.2, inplace=True)]
    discriminator = nn.Sequential(*layers, nn.Conv2d(chans[-1], 1, 4, 1, 0, bias=False),
                                  nn.Flatten())
    model = nn.ModuleList([generator, discriminator])
    for m in model.modules():  # DCGAN's initialisation
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, 1.0, 0.02)
            nn.init.zeros_(m.bias)
    model.cuda()
    g_optimizer = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    d_optimizer = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    g = torch.Generator(device="cuda").manual_seed(0)
    real = torch.rand(batch, 3, size, size, device="cuda", generator=g) * 2 - 1
    ones, zeros = torch.ones(batch, 1, device="cuda"), torch.zeros(batch, 1, device="cuda")
    bce = nn.functional.binary_cross_entropy_with_logits

    def step():
        fake = generator(torch.randn(batch, latent, 1, 1, device="cuda", generator=g))
        d_loss = bce(discriminator(real), ones) + bce(discriminator(fake.detach()), zeros)
        d_loss.backward()
        d_optimizer.step()
        d_optimizer.zero_grad(set_to_none=True)
        discriminator.requires_grad_(False)
        g_loss = bce(discriminator(fake), ones)
        g_loss.backward()
        discriminator.requires_grad_(True)
        g_optimizer.step()
        g_optimizer.zero_grad(set_to_none=True)
        return g_loss

    return model, step


def video(batch, frames=16, size=112, classes=400):
    """A video classifier of 3D convolutions (torchvision's R(2+1)D-18: each 3x3x3 convolution
    split into a 1x3x3 spatial and a 3x1x1 temporal one, batch norm between) over `batch` random
    clips of `frames` x size x size, bf16: 31.5M parameters against 0.25 GB of saved activations
    a clip, most of them at the first stage's 16 x 56 x 56 resolution, so nearly the whole
    footprint is activations written by the forward pass and read back once by the backward,
    in tensors of hundreds of megabytes."""
    import torchvision

    model = torchvision.models.video.r2plus1d_18(weights=None, num_classes=classes).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator(device="cuda").manual_seed(0)
    clips = torch.randn(batch, 3, frames, size, size, device="cuda", generator=g)
    labels = torch.randint(0, classes, (batch,), device="cuda", generator=g)
    return training_step(model, optimizer,
                         lambda: torch.nn.functional.cross_entropy(model(clips), labels), bf16=True)


def _chunked_scan(u, dt, a, b, c, chunk):
    """The selective scan h_t = exp(dt_t a) h_{t-1} + dt_t u_t b_t^T, y_t = h_t c_t, per head
    (a scalar decay a per head, as Mamba-2's) over u (batch, length, heads, head), dt (batch,
    length, heads), b and c (batch, length, state), in plain PyTorch: within each chunk of
    `chunk` steps as a masked decay matrix (the chunk's outputs from its own inputs) and the
    chunk's contribution to the state; across chunks a loop carrying the state, one chunk at a
    time. Every exponent is a sum of dt * a <= 0, so nothing overflows."""
    batch, length, heads, p = u.shape
    k = length // chunk
    # batch, heads, chunk, step in the chunk, head's width (x) or state (b, c)
    x = (u * dt[..., None]).reshape(batch, k, chunk, heads, p).permute(0, 3, 1, 2, 4)
    b = b.reshape(batch, k, chunk, -1)[:, None]
    c = c.reshape(batch, k, chunk, -1)[:, None]
    # The log decay from the chunk's start to each step, inclusive: batch, heads, chunk, step.
    log_decay = (dt * a).reshape(batch, k, chunk, heads).permute(0, 3, 1, 2).cumsum(-1)
    causal = torch.ones(chunk, chunk, dtype=torch.bool, device=u.device).tril()
    decay = torch.exp((log_decay[..., :, None] - log_decay[..., None, :]).masked_fill(~causal,
                                                                                     -math.inf))
    y = (c @ b.transpose(-1, -2) * decay) @ x
    # What each chunk adds to the state by its end, and the whole chunk's decay.
    states = (x * torch.exp(log_decay[..., -1:] - log_decay)[..., None]).transpose(-1, -2) @ b
    through = torch.exp(log_decay[..., -1])
    state = x.new_zeros(batch, heads, p, b.shape[-1])
    entering = []
    for i in range(k):
        entering.append(state)
        state = through[:, :, i, None, None] * state + states[:, :, i]
    y = y + (c @ torch.stack(entering, dim=2).transpose(-1, -2)) * torch.exp(log_decay)[..., None]
    return y.permute(0, 2, 3, 1, 4).reshape(batch, length, heads, p)


def ssm(batch, seq=2048, width=512, layers=6, state=32, head=64, chunk=64, kernel=4, vocab=8192):
    """A Mamba-style selective state-space language model in plain PyTorch, no custom kernels:
    each block (pre-RMSNorm, residual) projects its input into a gate, the scan's input, its
    input-dependent B and C (`state` wide) and step sizes, runs a depthwise causal conv1d and
    SiLU, then the selective scan (_chunked_scan: `chunk`-step chunks, a Python loop across the
    seq / chunk chunks), a skip through D and the gate, and projects back; RMSNorm and an LM
    head over `batch` random sequences of `seq` tokens, bf16. Few weights (18M parameters) and
    about 6 GB of activations at the defaults in many mid-sized tensors, made and consumed by
    thousands of short kernels a step (the chunk loop alone runs seq / chunk = 32 steps a block,
    forward and backward): unlike the transformers' few long GEMMs and attention kernels."""
    assert seq % chunk == 0, "the scan takes whole chunks"
    nn = torch.nn
    inner = 2 * width
    heads = inner // head

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.RMSNorm(width)
            self.project = nn.Linear(width, 2 * inner + 2 * state + heads, bias=False)
            channels = inner + 2 * state
            self.conv = nn.Conv1d(channels, channels, kernel, groups=channels, padding=kernel - 1)
            # Mamba's initialisation: step sizes between 0.001 and 0.1, decays 1 to 16.
            dt = torch.exp(torch.rand(heads) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
            self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))
            self.a_log = nn.Parameter(torch.log(torch.empty(heads).uniform_(1, 16)))
            self.d = nn.Parameter(torch.ones(heads))
            self.out = nn.Linear(inner, width, bias=False)

        def forward(self, x):
            n, length, _ = x.shape
            z, xbc, dt = self.project(self.norm(x)).split([inner, inner + 2 * state, heads], -1)
            xbc = nn.functional.silu(self.conv(xbc.transpose(1, 2))[..., :length]).transpose(1, 2)
            u, b, c = xbc.split([inner, state, state], -1)
            u = u.reshape(n, length, heads, head)
            dt = nn.functional.softplus(dt + self.dt_bias)
            y = _chunked_scan(u, dt, -torch.exp(self.a_log), b, c, chunk) + u * self.d[:, None]
            return x + self.out(y.reshape(n, length, inner) * nn.functional.silu(z))

    embed = nn.Embedding(vocab, width)
    body = nn.Sequential(*[Block() for _ in range(layers)])
    norm, lm_head = nn.RMSNorm(width), nn.Linear(width, vocab, bias=False)
    model = nn.Sequential(embed, body, norm, lm_head).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cuda").manual_seed(0)
    tokens = torch.randint(0, vocab, (batch, seq + 1), device="cuda", generator=g)

    def loss():
        logits = model(tokens[:, :-1])
        return nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))

    return training_step(model, optimizer, loss, bf16=True)
