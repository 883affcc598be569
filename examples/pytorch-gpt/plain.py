# examples/pytorch-gpt: plain.py is a user's training loop, train.py the same
# loop as a Saturn task (docs/byo.md shows the diff), run as one process or as
# each rank of a DDP job (/usr/bin/python3 -m saturn_task launch, or torchrun).
import torch
import torch.nn.functional as F

from model import Corpus, gpt

torch.manual_seed(0)
data = Corpus()
model = gpt()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(200):
    x, y = data.batch(step, 16)
    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
