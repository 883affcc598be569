"""Checks a trained model outside Saturn (tests/engine/export_test.cc runs it).

usage: check_saturn_models.py TASK_DIR BATCH EXPECTED_LOSS

TASK_DIR holds task.json and what the worker wrote (model.pt; trained.pt for
torchscript tasks); BATCH is torch.save-readable [inputs, targets]; the loss
of the loaded model on it must be EXPECTED_LOSS (Saturn's own evaluation)
within 1e-4. Exit 0 when it is; 1 with a message otherwise.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import saturn_models  # noqa: E402


def main():
    task_dir, batch_path, expected = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(os.path.join(task_dir, "task.json")) as f:
        task = json.load(f)
    # Written by the test (LibTorch), not by a user: trusted, and not weights only.
    inputs, targets = torch.load(batch_path, weights_only=False)
    kind = task["model"].get("loss", "cross_entropy")
    losses = {}
    with torch.no_grad():
        # The three lines a user writes.
        model = saturn_models.load(task_dir)
        model.eval()
        losses["saturn_models.load"] = saturn_models.loss(model, inputs, targets, kind).item()
        # torch.load + load_state_dict as written, into a fresh module.
        state = torch.load(os.path.join(task_dir, "model.pt"))
        if task["model"]["type"] == "torchscript":
            fresh = torch.jit.load(task["model"]["path"])  # the user's untrained module
            fresh.load_state_dict(state, strict=False)  # buffers are the file's
        else:
            fresh = saturn_models.build(task["model"])
            fresh.load_state_dict(state)  # strict: every key matches
        losses["load_state_dict"] = saturn_models.loss(fresh, inputs, targets, kind).item()
    bad = {k: v for k, v in losses.items() if abs(v - expected) > 1e-4}
    print("expected %.7f, got %s" % (expected, losses))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
