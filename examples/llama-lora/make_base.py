#!/usr/bin/python3
"""Makes what examples/llama-lora/workload.yaml fine-tunes, as a user would
bring it from Hugging Face: a small Llama-architecture base model in a folder
(base/: config.json and model.safetensors, with the tokenizer's
tokenizer.json and tokenizer_config.json beside them) and their own text as
JSON Lines (train.jsonl, eval.jsonl: one {"text": ...} per line).

No model hub is reachable here, so the script makes all of it itself:
  - a byte-level BPE tokenizer (GPT-2's / Llama 3's kind) trained on the
    text, written in Hugging Face's tokenizer.json form;
  - a small text: sentences of an artificial language whose 96 words each
    follow one of two others (a fixed random table); the fine-tuning text is
    a dialect of it, with the successors of every third word changed;
  - the base: a Llama with grouped-query attention (saturn_models.Llama),
    pretrained briefly on the first language with PyTorch (150 steps: a minute
    on two cores; longer on a loaded machine: it runs a fixed number of
    steps).
A real model goes in the same way (docs/llama.md): download its folder and
point `init:` and `tokenizer:` at it.

    /usr/bin/python3 examples/llama-lora/make_base.py [FOLDER]   # default: beside this file
"""
import collections
import json
import os
import random
import re
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import saturn_models  # noqa: E402

WORDS, VOCAB, SEQ = 96, 512, 64
EOS = "<|endoftext|>"
# The base's sizes (as its config.json will say them).
CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
          "num_hidden_layers": 4, "hidden_size": 128, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 32, "intermediate_size": 344,
          "vocab_size": VOCAB, "max_position_embeddings": 256, "rope_theta": 10000.0,
          "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "attention_bias": False,
          "hidden_act": "silu", "torch_dtype": "float32"}


# ---- The text ----

def words(seed=7):
    """WORDS pronounceable words of two or three syllables."""
    rng = random.Random(seed)
    out = set()
    while len(out) < WORDS:
        out.add("".join(rng.choice("ptkbdgmnslrv") + rng.choice("aeiou")
                        for _ in range(rng.choice((2, 3)))))
    return sorted(out)


def successors(seed, changed_from=None):
    """Each word's two successors; with changed_from, every third word's redrawn."""
    rng = random.Random(seed)
    table = [(rng.randrange(WORDS), rng.randrange(WORDS)) for _ in range(WORDS)]
    if changed_from is not None:
        table = [table[w] if w % 3 == 0 else changed_from[w] for w in range(WORDS)]
    return table


def documents(vocabulary, table, count, seed):
    """`count` short documents: sentences that follow the table."""
    rng = random.Random(seed)
    docs = []
    for _ in range(count):
        sentences = []
        for _ in range(rng.randint(2, 4)):
            w = rng.randrange(WORDS)
            sentence = [vocabulary[w]]
            for _ in range(rng.randint(4, 9)):
                w = table[w][rng.randrange(2)]
                sentence.append(vocabulary[w])
            sentences.append(" ".join(sentence).capitalize() + ".")
        docs.append(" ".join(sentences))
    return docs


def write_jsonl(path, docs):
    with open(path + ".partial", "w") as f:
        for d in docs:
            f.write(json.dumps({"text": d}) + "\n")
    os.replace(path + ".partial", path)


# ---- A byte-level BPE tokenizer, trained here ----

def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    chars, n = keep[:], 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(keep, chars)}


# GPT-2's pre-tokenizing rule for ASCII text (Python's re lacks \\p{L}; the
# tokenizer.json below keeps Hugging Face's own pattern for encoding).
PIECES = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")


def train_bpe(docs, vocab_size):
    """The vocabulary and merges of a byte-level BPE trained on `docs`."""
    to_char = bytes_to_unicode()
    counts = collections.Counter(p for d in docs for p in PIECES.findall(d))
    seqs = {tuple(to_char[b] for b in p.encode()): c for p, c in counts.items()}
    vocab = {to_char[b]: i for i, b in enumerate(sorted(to_char, key=lambda b: to_char[b]))}
    merges = []
    while len(vocab) < vocab_size - 1:  # one id left for EOS
        pairs = collections.Counter()
        for s, c in seqs.items():
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(a + " " + b)
        vocab[a + b] = len(vocab)
        merged = {}
        for s, c in seqs.items():
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + c
        seqs = merged
    return vocab, merges


def write_tokenizer(folder, vocab, merges):
    """tokenizer.json and tokenizer_config.json as Hugging Face saves a
    byte-level BPE (GPT-2's regex, EOS as an added special token)."""
    eos_id = len(vocab)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": eos_id, "content": EOS, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges}}
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": EOS, "bos_token": None,
              "add_bos_token": False, "model_max_length": CONFIG["max_position_embeddings"]}
    for name, value in (("tokenizer.json", tokenizer), ("tokenizer_config.json", config)):
        path = os.path.join(folder, name)
        with open(path + ".partial", "w") as f:
            json.dump(value, f, ensure_ascii=False)
        os.replace(path + ".partial", path)
    return eos_id


def encode(text, vocab, merges):
    """Ids of `text` under the trained tokenizer (for pretraining only; Saturn
    tokenizes the workload's text itself, from tokenizer.json)."""
    to_char = bytes_to_unicode()
    rank = {tuple(m.split(" ")): i for i, m in enumerate(merges)}
    ids = []
    for piece in PIECES.findall(text):
        s = [to_char[b] for b in piece.encode()]
        while len(s) > 1:
            best = min(range(len(s) - 1), key=lambda i: rank.get((s[i], s[i + 1]), 1 << 30))
            if (s[best], s[best + 1]) not in rank:
                break
            s[best:best + 2] = [s[best] + s[best + 1]]
        ids.extend(vocab[t] for t in s)
    return ids


# ---- The base model, pretrained briefly ----

def pretrain(model, stream, steps, batch=16, lr=3e-3):
    """Next-token training on windows of `stream` (AdamW, fixed seed)."""
    data = torch.tensor(stream)
    g = torch.Generator().manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    start = time.time()
    for step in range(steps):
        at = torch.randint(0, len(data) - SEQ - 1, (batch,), generator=g)
        x = torch.stack([data[i:i + SEQ] for i in at])
        y = torch.stack([data[i + 1:i + SEQ + 1] for i in at])
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == steps - 1:
            print("  pretraining step %d/%d: loss %.3f (%.0f s)" %
                  (step + 1, steps, loss.item(), time.time() - start), flush=True)


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else HERE
    base = os.path.join(folder, "base")
    os.makedirs(base, exist_ok=True)
    torch.manual_seed(0)
    vocabulary = words()
    first = successors(1)
    dialect = successors(2, changed_from=first)
    pretraining = documents(vocabulary, first, 3000, seed=3)
    write_jsonl(os.path.join(folder, "train.jsonl"), documents(vocabulary, dialect, 1500, 4))
    write_jsonl(os.path.join(folder, "eval.jsonl"), documents(vocabulary, dialect, 200, 5))
    print("tokenizer: training a byte-level BPE of %d ids" % VOCAB, flush=True)
    vocab, merges = train_bpe(pretraining, VOCAB)
    eos = write_tokenizer(base, vocab, merges)
    stream = []
    for d in pretraining:
        stream += encode(d, vocab, merges) + [eos]
    print("base: %s (%d tokens of pretraining text)" % (base, len(stream)), flush=True)
    model = saturn_models.build(saturn_models.llama_model_of_hf(CONFIG))
    pretrain(model, stream, steps=int(os.environ.get("PRETRAIN_STEPS", "150")))
    saturn_models.save_hf(model, base)
    print("wrote %s, %s and %s" % (base, os.path.join(folder, "train.jsonl"),
                                   os.path.join(folder, "eval.jsonl")))


if __name__ == "__main__":
    main()
