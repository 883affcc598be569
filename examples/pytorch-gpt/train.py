# examples/pytorch-gpt: plain.py is a user's training loop, train.py the same
# loop as a Saturn task (docs/byo.md shows the diff), run as one process or as
# each rank of a DDP job (/usr/bin/python3 -m saturn_task launch, or torchrun).
import torch
import torch.nn.functional as F

from model import Corpus, gpt
import saturn_task

run = saturn_task.Run()
torch.manual_seed(0)
data = Corpus()
model = gpt()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
state = run.load()
if state: model.load_state_dict(state["model"]); opt.load_state_dict(state["opt"])
net = run.distributed(model)
for step in run.steps():
    x, y = run.shard(*data.batch(step, 16))
    loss = F.cross_entropy(net(x).flatten(0, 1), y.flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()
    run.report(loss=loss)
run.save({"model": model.state_dict(), "opt": opt.state_dict()})
