#!/usr/bin/env python3
"""Generates corpus.txt: a small English-like text for byte-level language
models (gpt tasks with data {type: text}). Deterministic: the same file every
time, so it can be regenerated instead of downloaded.

    python3 examples/data/make_corpus.py            # writes corpus.txt next to this script
    python3 examples/data/make_corpus.py --kib 64   # a smaller one
"""
import argparse
import os
import random

SUBJECTS = ["the scheduler", "a small model", "the cluster", "every worker", "the planner",
            "a large language model", "the profiler", "one of the nodes", "the executor",
            "a tired engineer", "the old machine", "each task", "the new plan", "a student",
            "the river", "an orchard", "the village", "a quiet reader", "the ship", "the moon"]
VERBS = ["trains", "waits for", "measures", "moves", "finishes", "watches", "repairs",
         "schedules", "remembers", "forgets", "carries", "follows", "counts", "answers",
         "reads", "writes", "shares", "divides", "joins", "leaves"]
OBJECTS = ["the batch", "eight devices", "a checkpoint", "the gradient", "the long queue",
           "a lighthouse", "the morning train", "a letter", "the harvest", "two shards",
           "the last step", "a map of the valley", "the pipeline", "its own shadow",
           "the evening news", "a quiet song", "the memory budget", "a promise", "the window"]
ADVERBS = ["slowly", "at once", "without a word", "again", "before dawn", "in silence",
           "with great care", "twice", "as planned", "after the storm", "for a while"]
CLAUSES = ["because the plan changed", "while the others slept", "when the timer ended",
           "although nobody asked", "until the queue was empty", "since the node was free",
           "as the rain began", "so that nothing was lost"]


def sentence(rng):
    words = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)]
    if rng.random() < 0.5:
        words.append(rng.choice(ADVERBS))
    if rng.random() < 0.3:
        words.append(rng.choice(CLAUSES))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice([".", ".", ".", "!", "?"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kib", type=int, default=256)
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "corpus.txt"))
    args = parser.parse_args()
    rng = random.Random(20240601)
    paragraphs, size = [], 0
    while size < args.kib * 1024:
        paragraph = " ".join(sentence(rng) for _ in range(rng.randint(3, 8)))
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    with open(args.output, "w") as out:
        out.write("\n\n".join(paragraphs) + "\n")


if __name__ == "__main__":
    main()
