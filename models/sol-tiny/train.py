#!/usr/bin/env python3
"""Trains Sol's default model, sol-tiny (a ~16-20 M parameter Llama), on the Brown Corpus,
and measures it: held-out perplexity in float32 and bfloat16, greedy goldens, samples.

Stages (each prints its progress with a [train] prefix):
  1. tokenizer   byte-level BPE (vocab 8192) trained on train.txt only, built exactly like
                 Llama 3's tokenizer.json (Split regex + ByteLevel, TemplateProcessing that
                 prepends <|begin_of_text|>), or copied from --tokenizer DIR
  2. data        every document -> BOS + ids + EOS, concatenated; random 1024-token windows
  3. sweep       (--sweep) a few shapes, each trained briefly with the same recipe, scored by
                 validation loss (val.txt; the held-out text is never used for a choice)
  4. train       the chosen shape for the rest of the --minutes budget; AdamW, warmup + cosine,
                 bf16 autocast; the weights with the best validation loss are kept
  5. save        bf16 safetensors, config.json, generation_config.json, tokenizer files
  6. evaluate    reloaded from disk: held-out perplexity (windows of `solrun --perplexity`) in
                 float32 (eager, TF32 off) and bfloat16 (sdpa); the CI subset; goldens; samples
  7. eval.json   OUT/eval.json (read by the C++ CI test) and OUT/train_log.jsonl

  python3 models/sol-tiny/train.py --data models/sol-tiny/data \\
      --heldout models/sol-tiny/heldout.txt --out /tmp/sol-tiny --preset sol-tiny --sweep

  python3 models/sol-tiny/train.py --data models/sol-tiny/data \\
      --heldout models/sol-tiny/heldout.txt --out /tmp/llama-1b --preset llama-3.2-1b \\
      --tokenizer /tmp/sol-tiny --skip-goldens

Needs torch, transformers >= 5, tokenizers, safetensors and one CUDA GPU. The pure-Python
parts (parameter counts, the learning-rate schedule, window sampling, tokenizer.json checks)
are tested without them by test_train.py.
"""

import argparse
import hashlib
import json
import math
import os
import platform
import random
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "bench"))
from perplexity_windows import limit_ids, logit_rows, perplexity_windows  # noqa: E402

try:  # absent on machines without a GPU stack; main() says so
    import torch
except ImportError:  # pragma: no cover
    torch = None

# ---------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------

BOS_TOKEN = "<|begin_of_text|>"
EOS_TOKEN = "<|end_of_text|>"
BOS_ID = 0  # the trainer assigns special tokens first, in this order
EOS_ID = 1
VOCAB_SIZE = 8192
# Llama 3's pre-tokenizer pattern (tokenizer.json of Llama 3.x, Split with behavior Isolated).
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
DOC_SEPARATOR = "\n\n\n"  # prepare_data.py puts two blank lines between documents
SEQ_LEN = 1024
HEAD_DIM = 64
SEED = 0

# The sol-tiny shape used without --sweep. It is the sweep's expected winner; after a sweep
# run, set it to the winner that eval.json's "sweep" reports.
DEFAULT_SHAPE = dict(hidden_size=384, num_hidden_layers=8, num_attention_heads=6,
                     num_key_value_heads=3, intermediate_size=1024)

# Candidates of the sweep: 16-20 M parameters with the 8192 vocabulary (<= 40 MB in bf16),
# head_dim 64, GQA group 1 or 2. Deep-narrow to wide-shallow.
SWEEP_SHAPES = [
    dict(hidden_size=384, num_hidden_layers=8, num_attention_heads=6,
         num_key_value_heads=3, intermediate_size=1024),    # 16.1 M
    dict(hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
         num_key_value_heads=4, intermediate_size=1152),    # 19.5 M
    dict(hidden_size=448, num_hidden_layers=7, num_attention_heads=7,
         num_key_value_heads=7, intermediate_size=1088),    # 19.5 M
    dict(hidden_size=320, num_hidden_layers=12, num_attention_heads=5,
         num_key_value_heads=5, intermediate_size=896),     # 17.9 M
]
SOL_TINY_MAX_PARAMS = 20_000_000

PRESETS = {
    "sol-tiny": dict(lr=1e-3, batch=32, minutes=5.0, rope_theta=10000.0, shape=DEFAULT_SHAPE),
    # Llama-3.2-1B's shape with sol-tiny's vocabulary (so ~1.0 B parameters, not 1.24 B);
    # fp32 master weights + AdamW + a kept best copy ~20 GB, activations of 16 x 1024 tokens
    # under bf16 autocast a few tens of GB: comfortable on 139 GiB.
    # A draft model for speculative decoding with sol-tiny (its tokenizer, a fifth of its
    # parameters: 3.1 M, half of them the embeddings).
    "sol-draft": dict(lr=2e-3, batch=32, minutes=2.0, rope_theta=10000.0,
                      shape=dict(hidden_size=192, num_hidden_layers=4, num_attention_heads=3,
                                 num_key_value_heads=1, intermediate_size=512)),
    "llama-3.2-1b": dict(lr=3e-4, batch=16, minutes=5.0, rope_theta=500000.0,
                         shape=dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                                    num_key_value_heads=8, intermediate_size=8192)),
}

WARMUP_STEPS = 100
MIN_LR_RATIO = 0.1
WEIGHT_DECAY = 0.1
BETAS = (0.9, 0.95)
GRAD_CLIP = 1.0
# Steps timed to plan the schedule: steps [TIME_FROM, TIME_TO) (the first few include
# CUDA/cuBLAS warm-up).
TIME_FROM, TIME_TO = 5, 20
PLAN_SAFETY = 0.9  # share of the measured rate planned on (evaluations take time too)

GOLDEN_PROMPTS = [
    "The history of the city",
    "She opened the door and",
    "In his speech the President said that",
    "The results of the experiment show",
    "When the war was over, the soldiers",
    "The best way to cook a fish is",
    '"I don\'t know," he said,',
    "On Sunday morning the church",
]
GOLDEN_NEW_TOKENS = 128
SAMPLE_PROMPTS = [
    "The jury said",
    "It was a cold night, and",
    "The purpose of this paper is",
    "Mrs. Kennedy",
]
SAMPLE_NEW_TOKENS = 64

CI_LIMIT = 8193  # ids: 8192 scored positions
EVAL_WINDOW = 1024
EVAL_STRIDE = 512


def log(msg):
    print(f"[train] {msg}", flush=True)


def fail(msg):
    print(f"[train] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


# ---------------------------------------------------------------------------
# Pure Python (tested by test_train.py)
# ---------------------------------------------------------------------------

def count_parameters(shape, vocab_size, head_dim=HEAD_DIM):
    """Parameters of a bias-free Llama with tied embeddings."""
    h = shape["hidden_size"]
    q = shape["num_attention_heads"] * head_dim
    kv = shape["num_key_value_heads"] * head_dim
    attention = h * q + 2 * h * kv + q * h
    mlp = 3 * h * shape["intermediate_size"]
    per_layer = attention + mlp + 2 * h  # two RMSNorm weights
    return vocab_size * h + shape["num_hidden_layers"] * per_layer + h  # + final norm


def check_shape(shape, preset):
    heads, kv = shape["num_attention_heads"], shape["num_key_value_heads"]
    if shape["hidden_size"] != heads * HEAD_DIM:
        raise ValueError(f"hidden_size {shape['hidden_size']} != heads {heads} x head_dim {HEAD_DIM}")
    if heads % kv:
        raise ValueError(f"{heads} heads are not a multiple of {kv} kv heads")
    if preset == "sol-tiny":
        if heads // kv not in (1, 2):
            raise ValueError(f"sol-tiny uses GQA groups of 1 or 2, not {heads // kv}")
        n = count_parameters(shape, VOCAB_SIZE)
        if n > SOL_TINY_MAX_PARAMS:
            raise ValueError(f"{n:,} parameters is over sol-tiny's budget of {SOL_TINY_MAX_PARAMS:,}")


def lr_at(step, warmup, total, peak, min_ratio=MIN_LR_RATIO):
    """Linear warmup over `warmup` steps, then cosine from peak to min_ratio * peak at `total`."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress)))


def steps_per_epoch(stream_len, seq_len, batch):
    """Batches per epoch: every epoch has at least stream_len // seq_len - 1 windows."""
    return max(1, (stream_len // seq_len - 1) // batch)


def epoch_batches(stream_len, seq_len, batch, seed, epoch):
    """The window offsets of one epoch, as steps_per_epoch batches.

    Non-overlapping windows from a random shift in [0, seq_len), in a random order: each
    epoch sees the stream cut at different places. Seeded by (seed, epoch)."""
    rng = random.Random(seed * 1_000_003 + epoch)
    shift = rng.randrange(seq_len)
    offsets = list(range(shift, stream_len - seq_len + 1, seq_len))
    rng.shuffle(offsets)
    n = steps_per_epoch(stream_len, seq_len, batch)
    return [offsets[i * batch:(i + 1) * batch] for i in range(n)]


def split_documents(text):
    docs = [d.strip("\n") for d in text.split(DOC_SEPARATOR)]
    return [d for d in docs if d]


def plan_total_steps(cap, steps_done, rate, seconds_left, safety=PLAN_SAFETY):
    """Steps that fit the time left at `rate` steps/s (with a margin), never more than cap."""
    by_time = steps_done + int(max(0.0, seconds_left) * rate * safety)
    return max(steps_done + 1, min(cap, by_time))


def check_tokenizer_json(data):
    """Raises ValueError unless tokenizer.json has the Llama 3 structure Sol's tokenizer loads."""
    problems = []
    model = data.get("model") or {}
    if model.get("type") != "BPE":
        problems.append(f"model type {model.get('type')!r}, expected BPE")
    if model.get("byte_fallback"):
        problems.append("byte_fallback is set")
    if model.get("unk_token") is not None:
        problems.append(f"unk_token {model.get('unk_token')!r}, expected none")
    if data.get("normalizer") is not None:
        problems.append(f"normalizer {data.get('normalizer')!r}, expected none")
    pre = data.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers") or []
    if pre.get("type") != "Sequence" or len(steps) != 2:
        problems.append("pre_tokenizer is not a Sequence of two")
    else:
        split, byte_level = steps
        if split.get("type") != "Split" or (split.get("pattern") or {}).get("Regex") != LLAMA3_PATTERN:
            problems.append("the first pre-tokenizer is not Split with Llama 3's regex")
        if split.get("behavior") != "Isolated" or split.get("invert"):
            problems.append("the Split pre-tokenizer is not behavior Isolated, invert false")
        if (byte_level.get("type") != "ByteLevel" or byte_level.get("add_prefix_space")
                or byte_level.get("use_regex")):
            problems.append("the second pre-tokenizer is not ByteLevel(add_prefix_space=false, "
                            "use_regex=false)")
    if (data.get("decoder") or {}).get("type") != "ByteLevel":
        problems.append("decoder is not ByteLevel")
    post = data.get("post_processor") or {}
    single = post.get("single") or []
    if post.get("type") != "TemplateProcessing" or not single:
        problems.append("post_processor is not TemplateProcessing")
    elif (single[0].get("SpecialToken") or {}).get("id") != BOS_TOKEN or "Sequence" not in single[-1]:
        problems.append("TemplateProcessing single is not '<|begin_of_text|> $A'")
    added = {t.get("content"): t.get("id") for t in data.get("added_tokens") or []}
    if added.get(BOS_TOKEN) != BOS_ID or added.get(EOS_TOKEN) != EOS_ID:
        problems.append(f"special tokens are {added}, expected {BOS_TOKEN}={BOS_ID}, {EOS_TOKEN}={EOS_ID}")
    if problems:
        raise ValueError("; ".join(problems))


def min_margin(margins):
    i = min(range(len(margins)), key=lambda k: margins[k])
    return margins[i], i


# ---------------------------------------------------------------------------
# Setup
# ---------------------------------------------------------------------------

def seed_everything(seed):
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed)
    except ImportError:
        pass
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def disable_tf32():
    """Full float32 matmuls and convolutions: the float32 references must not be TF32."""
    state = None
    if hasattr(torch.backends, "fp32_precision"):  # torch >= 2.9; do not mix with the old flags
        try:
            torch.backends.fp32_precision = "ieee"
            torch.backends.cuda.matmul.fp32_precision = "ieee"
            torch.backends.cudnn.fp32_precision = "ieee"
            state = (f"fp32_precision={torch.backends.fp32_precision}, "
                     f"cuda.matmul={torch.backends.cuda.matmul.fp32_precision}, "
                     f"cudnn={torch.backends.cudnn.fp32_precision}")
        except (AttributeError, RuntimeError, ValueError) as e:
            log(f"note: the fp32_precision settings failed ({e}); using allow_tf32")
    if state is None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        state = "cuda.matmul.allow_tf32=False, cudnn.allow_tf32=False"
    log(f"TF32 off: {state}")


def versions():
    import tokenizers
    import transformers
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__, "python": platform.python_version(),
            "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0)}


def read_text(path):
    if not Path(path).is_file():
        fail(f"{path} not found (run models/sol-tiny/fetch-corpus.sh and prepare_data.py)")
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


# ---------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------

def train_tokenizer(train_docs, out):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    t0 = time.time()
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, min_frequency=2, show_progress=False,
        special_tokens=[BOS_TOKEN, EOS_TOKEN],  # ids 0 and 1
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    log(f"tokenizer: training byte-level BPE (vocab {VOCAB_SIZE}) on {len(train_docs)} training documents")
    tok.train_from_iterator(train_docs, trainer=trainer, length=len(train_docs))
    if tok.token_to_id(BOS_TOKEN) != BOS_ID or tok.token_to_id(EOS_TOKEN) != EOS_ID:
        fail(f"tokenizer: special tokens got ids {tok.token_to_id(BOS_TOKEN)}, {tok.token_to_id(EOS_TOKEN)}, "
             f"expected {BOS_ID}, {EOS_ID}")
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS_TOKEN} $A",
        pair=f"{BOS_TOKEN} $A {BOS_TOKEN}:1 $B:1",
        special_tokens=[(BOS_TOKEN, BOS_ID)])
    # Llama 3 sets ignore_merges (a pre-token that is itself in the vocabulary is one token);
    # the Python constructor of older tokenizers lacks the flag, so set it in the JSON.
    data = json.loads(tok.to_str())
    data["model"]["ignore_merges"] = True
    tok = Tokenizer.from_str(json.dumps(data))
    log(f"tokenizer: {tok.get_vocab_size(with_added_tokens=True)} tokens, "
        f"{len(data['model']['merges'])} merges, {time.time() - t0:.1f} s")

    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:  # transformers without the old name
        from transformers import TokenizersBackend as PreTrainedTokenizerFast
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS_TOKEN, eos_token=EOS_TOKEN,
                                 clean_up_tokenization_spaces=False)
    hf.save_pretrained(str(out))
    saved = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    try:
        check_tokenizer_json(saved)
    except ValueError as e:
        # save_pretrained rewrote part of it; the trained tokenizer is what Sol must load.
        log(f"WARNING: tokenizer.json from save_pretrained differs from the trained one ({e}); "
            f"writing the trained one")
        tok.save(str(out / "tokenizer.json"))


def copy_tokenizer(src, out):
    src = Path(src)
    if not (src / "tokenizer.json").is_file():
        fail(f"--tokenizer {src}: no tokenizer.json there")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (src / name).is_file():
            shutil.copy2(src / name, out / name)
    log(f"tokenizer: copied from {src}")


def load_and_check_tokenizer(out):
    """Loads OUT's tokenizer with AutoTokenizer and checks what Sol and the goldens rely on."""
    from transformers import AutoTokenizer
    data = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    try:
        check_tokenizer_json(data)
    except ValueError as e:
        fail(f"tokenizer.json in {out} is not shaped like Llama 3's: {e}")
    tok = AutoTokenizer.from_pretrained(str(out))
    if tok.bos_token_id != BOS_ID or tok.eos_token_id != EOS_ID:
        fail(f"AutoTokenizer: bos/eos ids {tok.bos_token_id}/{tok.eos_token_id}, expected {BOS_ID}/{EOS_ID}")
    sample = "Hello world. The jury said \"no\" -- 1961's 42 rules!\n\nNext paragraph."
    ids = tok(sample)["input_ids"]
    if ids[0] != BOS_ID or EOS_ID in ids:
        fail(f"AutoTokenizer({sample!r}) = {ids}: expected BOS first and no EOS")
    back = tok.decode(ids[1:], clean_up_tokenization_spaces=False)
    if back != sample:
        fail(f"tokenizer round trip: {sample!r} -> {ids} -> {back!r}")
    if tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False) != sample:
        fail("tokenizer: decode(skip_special_tokens=True) does not give the text back")
    log(f"tokenizer: AutoTokenizer('Hello world') = {tok('Hello world')['input_ids']}; round trip ok; "
        f"class {type(tok).__name__}, {len(tok)} tokens")
    return tok


def encode_documents(tok_dir, docs, hf_tok):
    """BOS + ids + EOS for every document, concatenated (the raw tokenizers library: fast)."""
    from tokenizers import Tokenizer
    raw = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    encodings = raw.encode_batch(docs, add_special_tokens=False)
    check = hf_tok(docs[0], add_special_tokens=False)["input_ids"]
    if check != encodings[0].ids:
        fail("the tokenizers library and AutoTokenizer disagree on the first training document")
    stream = []
    for e in encodings:
        stream.append(BOS_ID)
        stream.extend(e.ids)
        stream.append(EOS_ID)
    return stream


# ---------------------------------------------------------------------------
# Model and training
# ---------------------------------------------------------------------------

def make_config(shape, vocab_size, rope_theta):
    from transformers import LlamaConfig
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=shape["hidden_size"],
        intermediate_size=shape["intermediate_size"],
        num_hidden_layers=shape["num_hidden_layers"],
        num_attention_heads=shape["num_attention_heads"],
        num_key_value_heads=shape["num_key_value_heads"],
        head_dim=HEAD_DIM,
        max_position_embeddings=SEQ_LEN,
        rms_norm_eps=1e-5,
        hidden_act="silu",
        rope_parameters=dict(rope_type="default", rope_theta=rope_theta),
        attention_bias=False,
        mlp_bias=False,
        attention_dropout=0.0,
        tie_word_embeddings=True,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=None,
        initializer_range=0.02,
    )


def build_model(shape, vocab_size, rope_theta, seed, device):
    from transformers import LlamaForCausalLM
    seed_everything(seed)
    model = LlamaForCausalLM(make_config(shape, vocab_size, rope_theta))
    try:
        model.set_attn_implementation("sdpa")
    except Exception as e:  # older transformers: the default is sdpa anyway
        log(f"note: set_attn_implementation('sdpa') failed ({e}); using the default")
    model.to(device)
    n = sum(p.numel() for p in model.parameters())
    expected = count_parameters(shape, vocab_size)
    if n != expected:
        fail(f"the model has {n:,} parameters, count_parameters says {expected:,}: "
             f"untied embeddings or biases? fix make_config")
    return model, n


def make_optimizer(model, lr):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        # Norm weights (1-D) and the (tied) embedding are not decayed.
        (no_decay if p.dim() < 2 or "embed_tokens" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": WEIGHT_DECAY},
              {"params": no_decay, "weight_decay": 0.0}]
    try:
        return torch.optim.AdamW(groups, lr=lr, betas=BETAS, eps=1e-8, fused=True)
    except (TypeError, RuntimeError):
        return torch.optim.AdamW(groups, lr=lr, betas=BETAS, eps=1e-8)


def validation_loss(model, val_windows, batch):
    """Mean next-token loss over the fixed validation windows (bf16 autocast, as in training)."""
    model.eval()
    total, count = 0.0, 0
    for i in range(0, val_windows.shape[0], batch):
        x = val_windows[i:i + batch]
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x, use_cache=False).loss
        n = x.shape[0] * (x.shape[1] - 1)
        total += float(loss) * n
        count += n
    model.train()
    return total / count


def train_one(label, shape, args, preset, data, budget_s, log_file):
    """Trains one shape within budget_s seconds; returns the best weights and a summary."""
    device = args.device
    model, n_params = build_model(shape, data["vocab_size"], preset["rope_theta"], args.seed, device)
    model.train()
    opt = make_optimizer(model, args.lr)
    stream = data["train"]
    L = stream.numel()
    spe = steps_per_epoch(L, SEQ_LEN, args.batch)
    cap = max(1, int(args.epochs * spe))
    warmup = min(WARMUP_STEPS, max(1, cap // 4))
    planned = cap
    eval_every = args.eval_every or max(5, spe // 2)
    tokens_per_step = args.batch * SEQ_LEN
    arange = torch.arange(SEQ_LEN, device=device)
    log(f"[{label}] {shape} -> {n_params:,} parameters; {L:,} train tokens, {spe} steps/epoch of "
        f"{args.batch} x {SEQ_LEN}; at most {cap} steps ({args.epochs:g} epochs) in {budget_s:.0f} s; "
        f"warmup {warmup}, lr {args.lr:g}, eval every {eval_every} steps")

    best = {"val_loss": float("inf"), "step": 0, "state": None}
    evals_since_best = 0
    stop_reason = "planned steps done"
    loss_sum = torch.zeros((), device=device)
    loss_n = 0
    t_start = time.time()
    t_last = t_start
    t_from = None
    epoch_cache = {}
    step = 0
    while step < planned:
        elapsed = time.time() - t_start
        if elapsed >= budget_s:
            stop_reason = f"time budget ({budget_s:.0f} s) reached"
            break
        epoch, index = divmod(step, spe)
        if epoch not in epoch_cache:
            # One host-to-device copy per epoch: a copy per step would wait for the GPU each time.
            epoch_cache = {epoch: torch.tensor(epoch_batches(L, SEQ_LEN, args.batch, args.seed, epoch),
                                               dtype=torch.long, device=device)}
        offsets = epoch_cache[epoch][index]
        x = stream[offsets[:, None] + arange[None, :]]
        lr = lr_at(step, warmup, planned, args.lr)
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x, use_cache=False).loss
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_sum += loss.detach()
        loss_n += 1
        step += 1

        if step == TIME_FROM:
            torch.cuda.synchronize()
            t_from = time.time()
        elif step == TIME_TO and t_from is not None:
            torch.cuda.synchronize()
            rate = (TIME_TO - TIME_FROM) / (time.time() - t_from)
            planned = plan_total_steps(cap, step, rate, budget_s - (time.time() - t_start))
            log(f"[{label}] {rate:.2f} steps/s ({rate * tokens_per_step:,.0f} tokens/s): planning "
                f"{planned} steps ({planned / spe:.1f} epochs; cap {cap})")

        if step % eval_every == 0 or step == planned:
            val = validation_loss(model, data["val"], args.batch)
            train_loss = float(loss_sum) / max(1, loss_n)
            now = time.time()
            tok_s = loss_n * tokens_per_step / max(1e-9, now - t_last)
            improved = val < best["val_loss"]
            if improved:
                best = {"val_loss": val, "step": step,
                        "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}
                evals_since_best = 0
            else:
                evals_since_best += 1
            record = {"run": label, "step": step, "epoch": round(step / spe, 3), "lr": lr,
                      "loss": round(train_loss, 5), "val_loss": round(val, 5),
                      "grad_norm": round(float(grad_norm), 4), "tokens_per_s": round(tok_s),
                      "elapsed_s": round(now - t_start, 2)}
            log_file.write(json.dumps(record) + "\n")
            log_file.flush()
            log(f"[{label}] step {step:5d}/{planned} ep {step / spe:5.2f} lr {lr:.2e} loss {train_loss:.4f} "
                f"val {val:.4f}{' *' if improved else '  '} |g| {float(grad_norm):.2f} "
                f"{tok_s:,.0f} tok/s {now - t_start:6.1f} s")
            loss_sum.zero_()
            loss_n = 0
            t_last = time.time()
            if not math.isfinite(train_loss):
                fail(f"[{label}] the training loss is {train_loss}")
            if evals_since_best >= args.patience:
                stop_reason = f"no validation improvement in {args.patience} evaluations"
                break
    seconds = time.time() - t_start
    if best["state"] is None:
        val = validation_loss(model, data["val"], args.batch)
        best = {"val_loss": val, "step": step,
                "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}
    log(f"[{label}] stopped after {step} steps, {seconds:.1f} s ({stop_reason}); best val loss "
        f"{best['val_loss']:.4f} at step {best['step']} (epoch {best['step'] / spe:.2f})")
    summary = {"shape": dict(shape), "parameters": n_params, "val_loss": best["val_loss"],
               "best_step": best["step"], "steps": step, "steps_per_epoch": spe,
               "epochs": step * tokens_per_step / L, "seconds": seconds, "stop": stop_reason}
    return model, best["state"], summary


def release_memory():
    """Returns freed GPU memory to the allocator's pool (call after `del`-ing the objects)."""
    import gc
    gc.collect()
    torch.cuda.empty_cache()


# ---------------------------------------------------------------------------
# Saving
# ---------------------------------------------------------------------------

def read_safetensors_header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(n))


def save_model(model, state, out):
    from transformers import GenerationConfig
    model.load_state_dict(state)
    model.to(torch.bfloat16)
    model.generation_config = GenerationConfig(bos_token_id=BOS_ID, eos_token_id=EOS_ID, do_sample=False)
    model.save_pretrained(str(out))  # transformers 5 always writes safetensors
    files = sorted(out.glob("*.safetensors"))
    if not files:
        fail(f"save_pretrained wrote no *.safetensors in {out}")
    if not (out / "generation_config.json").is_file():
        model.generation_config.save_pretrained(str(out))
    names = {}
    for f in files:
        for k, v in read_safetensors_header(f).items():
            if k != "__metadata__":
                names[k] = v["dtype"]
    bad = {k: v for k, v in names.items() if v != "BF16"}
    if bad:
        fail(f"tensors not saved as BF16: {bad}")
    if "lm_head.weight" in names:
        fail("lm_head.weight is in the checkpoint although the embeddings are tied")
    size = sum(f.stat().st_size for f in files)
    log(f"saved {out}: {', '.join(f.name for f in files)} ({size / 1e6:.1f} MB, {len(names)} tensors, bf16)")
    return size


PART_BYTES = 15 * 2**20  # files larger than 16 MiB cannot come back from the GPU machine whole


def split_file(path, dest, part_bytes=PART_BYTES):
    """Writes dest/NAME.part-00, part-01, ... (at most part_bytes each) and dest/NAME.sha256."""
    digest = hashlib.sha256()
    parts = []
    with open(path, "rb") as f:
        while True:
            chunk = f.read(part_bytes)
            if not chunk:
                break
            digest.update(chunk)
            part = dest / f"{path.name}.part-{len(parts):02d}"
            part.write_bytes(chunk)
            parts.append(part)
    (dest / f"{path.name}.sha256").write_text(f"{digest.hexdigest()}  {path.name}\n")
    return parts


def copy_split(out, dest):
    """A copy of the checkpoint folder `out` in `dest` with every file over PART_BYTES in parts."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(out.iterdir()):
        if not f.is_file() or f.suffix == ".tmp":
            continue
        if f.stat().st_size > PART_BYTES:
            parts = split_file(f, dest)
            log(f"split-output: {f.name} -> {len(parts)} parts in {dest}")
        else:
            shutil.copy2(f, dest / f.name)
    log(f"split-output: {dest} (join with models/sol-tiny/join-parts.sh {dest})")


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------

def load_for_eval(out, dtype, attn, device):
    from transformers import LlamaForCausalLM
    model = LlamaForCausalLM.from_pretrained(str(out), dtype=dtype, attn_implementation=attn)
    model.to(device)
    model.eval()
    impl = getattr(model.config, "_attn_implementation", None)
    if impl is not None and impl != attn:
        fail(f"asked for attn_implementation={attn!r}, the model uses {impl!r}")
    p = next(model.parameters())
    if p.dtype != dtype:
        fail(f"the reloaded model is {p.dtype}, expected {dtype}")
    return model


def perplexity(model, ids, window, stride, device):
    """NLL and perplexity over the windows of `solrun --perplexity` (float64 accumulation)."""
    windows = perplexity_windows(len(ids), window, stride)
    ids_t = torch.tensor(ids, dtype=torch.long, device=device)
    total = 0.0
    count = 0
    for begin, end, first in windows:
        with torch.no_grad():
            logits = model(input_ids=ids_t[begin:end][None], use_cache=False).logits[0]
        r0, r1 = logit_rows(begin, end, first)
        logp = torch.log_softmax(logits[r0:r1].double(), dim=-1)
        target = ids_t[first:end]
        total += float(-logp.gather(1, target[:, None]).sum())
        count += end - first
    nll = total / count
    return {"tokens": count, "nll": nll, "perplexity": math.exp(nll), "windows": len(windows)}


def greedy(model, prompt_ids, new_tokens, device, stop_at_eos=False):
    """Greedy decoding with a full forward per step (no KV cache): the plainest reference.

    Returns the new ids and the top-1 minus top-2 logit margin at every step."""
    ids = torch.tensor(prompt_ids, dtype=torch.long, device=device)
    new, margins = [], []
    for _ in range(new_tokens):
        with torch.no_grad():
            logits = model(input_ids=ids[None], use_cache=False).logits[0, -1].float()
        top2 = torch.topk(logits, 2)
        margins.append(float(top2.values[0] - top2.values[1]))
        nxt = int(top2.indices[0])
        new.append(nxt)
        ids = torch.cat([ids, ids.new_tensor([nxt])])
        if stop_at_eos and nxt == EOS_ID:
            break
    return new, margins


def generate_check(model, prompt_ids, expected, device):
    """generate() with its KV cache, ignoring EOS, must give the same greedy ids.

    The generation config has no eos at all: min_new_tokens would instead forbid EOS, and
    the goldens let EOS be chosen and go on, as `solrun --ignore-eos` does."""
    from transformers import GenerationConfig
    model.generation_config = GenerationConfig(bos_token_id=BOS_ID, do_sample=False)
    ids = torch.tensor([prompt_ids], dtype=torch.long, device=device)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                             max_new_tokens=len(expected), do_sample=False, pad_token_id=EOS_ID)
    if hasattr(out, "sequences"):
        out = out.sequences
    got = out[0, len(prompt_ids):].tolist()
    return got == expected, got


def evaluate(out, tok, heldout_text, args, result):
    device = args.device
    ids = tok(heldout_text)["input_ids"]
    if ids[0] != BOS_ID:
        fail(f"the held-out ids do not start with BOS ({ids[:4]})")
    ci_ids = limit_ids(ids, CI_LIMIT)
    if len(ci_ids) < CI_LIMIT:
        fail(f"the held-out text has only {len(ids)} ids, the CI subset needs {CI_LIMIT}")
    log(f"evaluate: held-out text {len(heldout_text):,} characters -> {len(ids):,} ids")
    heldout = {"file": Path(args.heldout).name,
               "sha256": hashlib.sha256(heldout_text.encode("utf-8")).hexdigest(),
               "window": EVAL_WINDOW, "stride": EVAL_STRIDE, "ids": len(ids), "ids_head": ids[:32]}
    ci = {"file": Path(args.heldout).name, "limit": CI_LIMIT, "window": EVAL_WINDOW, "stride": EVAL_STRIDE}

    t0 = time.time()
    model = load_for_eval(out, torch.float32, "eager", device)
    full = perplexity(model, ids, EVAL_WINDOW, EVAL_STRIDE, device)
    heldout.update(tokens=full["tokens"], nll_fp32=full["nll"], perplexity_fp32=full["perplexity"])
    log(f"evaluate: held-out fp32 (eager): {full['tokens']:,} positions in {full['windows']} windows, "
        f"nll {full['nll']:.6f}, perplexity {full['perplexity']:.4f} ({time.time() - t0:.1f} s)")
    sub = perplexity(model, ci_ids, EVAL_WINDOW, EVAL_STRIDE, device)
    ci.update(tokens=sub["tokens"], nll_fp32=sub["nll"], perplexity_fp32=sub["perplexity"])
    log(f"evaluate: CI subset fp32: {sub['tokens']:,} positions, nll {sub['nll']:.6f}, "
        f"perplexity {sub['perplexity']:.4f}")
    result["heldout"], result["ci"] = heldout, ci

    goldens = []
    margins_of = {}
    if not args.skip_goldens:
        t0 = time.time()
        for prompt in GOLDEN_PROMPTS:
            prompt_ids = tok(prompt)["input_ids"]
            new, margins = greedy(model, prompt_ids, GOLDEN_NEW_TOKENS, device)
            if len(new) != GOLDEN_NEW_TOKENS:
                fail(f"golden {prompt!r}: {len(new)} new ids, expected {GOLDEN_NEW_TOKENS}")
            margin, at = min_margin(margins)
            margins_of[prompt] = margins
            text = tok.decode(new, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            goldens.append({"prompt": prompt, "prompt_ids": prompt_ids, "ids": new, "text": text,
                            "min_top2_margin": margin, "min_top2_margin_step": at})
            log(f"golden {prompt!r}: min margin {margin:.4f} at step {at}; {text[:70]!r}...")
        agree = 0
        for g in goldens:
            try:
                same, got = generate_check(model, g["prompt_ids"], g["ids"], device)
            except Exception as e:  # the check is a courtesy; the goldens come from the loop above
                log(f"note: generate() cross-check skipped: {type(e).__name__}: {e}")
                break
            agree += same
            if not same:
                first = next((i for i, (a, b) in enumerate(zip(got, g["ids"])) if a != b),
                             min(len(got), len(g["ids"])))
                margin = margins_of[g["prompt"]][min(first, len(g["ids"]) - 1)]
                log(f"note: generate() with its KV cache differs from the cache-free loop for {g['prompt']!r} "
                    f"from step {first} of {len(got)} (top-2 margin there {margin:.4f}); "
                    f"the goldens keep the cache-free loop")
        else:
            log(f"goldens: generate() with KV cache agrees on {agree}/{len(goldens)} prompts "
                f"({time.time() - t0:.1f} s)")
    result["goldens"] = goldens

    samples = []
    for prompt in SAMPLE_PROMPTS:
        new, _ = greedy(model, tok(prompt)["input_ids"], SAMPLE_NEW_TOKENS, device, stop_at_eos=True)
        samples.append({"prompt": prompt,
                        "text": tok.decode(new, skip_special_tokens=True, clean_up_tokenization_spaces=False)})
        log(f"sample {prompt!r} -> {samples[-1]['text'][:100]!r}")
    result["samples"] = samples
    del model
    release_memory()

    t0 = time.time()
    model = load_for_eval(out, torch.bfloat16, "sdpa", device)
    bf = perplexity(model, ids, EVAL_WINDOW, EVAL_STRIDE, device)
    heldout.update(nll_bf16=bf["nll"], perplexity_bf16=bf["perplexity"])
    log(f"evaluate: held-out bf16 (sdpa): nll {bf['nll']:.6f}, perplexity {bf['perplexity']:.4f} "
        f"({(bf['perplexity'] / full['perplexity'] - 1) * 100:+.3f}% vs fp32, {time.time() - t0:.1f} s)")
    del model
    release_memory()


def write_json(path, data):
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="folder with train.txt and val.txt")
    ap.add_argument("--heldout", type=Path, required=True, help="held-out text (heldout.txt)")
    ap.add_argument("--out", type=Path, required=True, help="output folder (a Hugging Face checkpoint)")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="sol-tiny")
    ap.add_argument("--minutes", type=float, default=None,
                    help="wall-clock budget of training, sweep included (default: 5)")
    ap.add_argument("--tokenizer", type=Path, default=None,
                    help="reuse the tokenizer of this folder instead of training one (the 1B preset "
                         "needs sol-tiny's)")
    ap.add_argument("--sweep", action="store_true", help="sol-tiny: pick the shape by a short sweep")
    ap.add_argument("--sweep-share", type=float, default=0.5,
                    help="share of --minutes for the whole sweep (default: %(default)s)")
    ap.add_argument("--skip-goldens", action="store_true")
    ap.add_argument("--split-output", type=Path, default=None, metavar="DIR",
                    help="also copy the result to DIR with files over 15 MiB split into parts "
                         "NAME.part-00.. (to bring it back through a 16 MiB-per-file channel; "
                         "join-parts.sh DIR reassembles them)")
    ap.add_argument("--epochs", type=float, default=60.0,
                    help="cap on epochs; the schedule ends there unless time ends it first "
                         "(default: %(default)s)")
    ap.add_argument("--patience", type=int, default=6,
                    help="stop after this many evaluations without a better validation loss "
                         "(default: %(default)s)")
    ap.add_argument("--eval-every", type=int, default=0, help="steps between validations "
                    "(default: half an epoch)")
    ap.add_argument("--batch", type=int, default=None, help="sequences per step (default: preset)")
    ap.add_argument("--lr", type=float, default=None, help="peak learning rate (default: preset)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    preset = PRESETS[args.preset]
    args.minutes = preset["minutes"] if args.minutes is None else args.minutes
    args.batch = args.batch or preset["batch"]
    args.lr = args.lr or preset["lr"]
    if args.sweep and args.preset != "sol-tiny":
        ap.error("--sweep is for the sol-tiny preset only")
    if args.preset != "sol-tiny" and args.tokenizer is None:
        ap.error(f"--preset {args.preset} reuses sol-tiny's tokenizer: give --tokenizer DIR")
    if not 0.0 < args.sweep_share < 1.0:
        ap.error("--sweep-share must be between 0 and 1")
    return args, preset


def main():
    t_main = time.time()
    args, preset = parse_args()
    if torch is None:
        fail("torch is not installed (this script runs on the GPU machine)")
    if not torch.cuda.is_available():
        fail("no CUDA GPU visible")
    for path in (args.data / "train.txt", args.data / "val.txt", args.heldout):
        if not path.is_file():
            fail(f"{path} not found (run models/sol-tiny/fetch-corpus.sh and prepare_data.py, "
                 f"and carry models/sol-tiny/data to this machine)")
    args.out.mkdir(parents=True, exist_ok=True)
    disable_tf32()
    seed_everything(args.seed)
    vers = versions()
    log(f"versions: {vers}")
    log(f"preset {args.preset}: lr {args.lr:g}, batch {args.batch} x {SEQ_LEN}, budget {args.minutes:g} min"
        f"{', sweep' if args.sweep else ''}; out {args.out}")

    # 1. Tokenizer
    train_docs = split_documents(read_text(args.data / "train.txt"))
    val_docs = split_documents(read_text(args.data / "val.txt"))
    heldout_text = read_text(args.heldout)
    log(f"data: {len(train_docs)} training documents, {len(val_docs)} validation documents")
    t0 = time.time()
    if args.tokenizer:
        copy_tokenizer(args.tokenizer, args.out)
    else:
        train_tokenizer(train_docs, args.out)
    tok = load_and_check_tokenizer(args.out)
    vocab_size = len(tok)
    if vocab_size != VOCAB_SIZE:
        log(f"WARNING: the tokenizer has {vocab_size} tokens, not {VOCAB_SIZE}")
    tokenizer_s = time.time() - t0

    # 2. Data
    t0 = time.time()
    train_ids = encode_documents(args.out, train_docs, tok)
    val_ids = encode_documents(args.out, val_docs, tok)
    train_stream = torch.tensor(train_ids, dtype=torch.long, device=args.device)
    n_val = len(val_ids) // SEQ_LEN
    val_windows = torch.tensor(val_ids[:n_val * SEQ_LEN], dtype=torch.long,
                               device=args.device).view(n_val, SEQ_LEN)
    data = {"train": train_stream, "val": val_windows, "vocab_size": vocab_size}
    chars = sum(len(d) for d in train_docs)
    log(f"data: {len(train_ids):,} training tokens ({chars / len(train_ids):.2f} characters/token), "
        f"{len(val_ids):,} validation tokens -> {n_val} windows of {SEQ_LEN} ({time.time() - t0:.1f} s)")

    result = {"model": {}, "tokenizer": {"vocab_size": vocab_size, "bos_token_id": BOS_ID,
                                         "eos_token_id": EOS_ID, "bos_token": BOS_TOKEN,
                                         "eos_token": EOS_TOKEN},
              "heldout": {}, "ci": {}, "goldens": [], "samples": [], "sweep": [], "versions": vers,
              "preset": args.preset}
    budget = args.minutes * 60.0
    t_train0 = time.time()
    log_path = args.out / "train_log.jsonl"
    with open(log_path, "w", encoding="utf-8") as log_file:
        # 3. Sweep
        shape = dict(preset["shape"])
        if args.sweep:
            for s in SWEEP_SHAPES:
                check_shape(s, args.preset)
            each = budget * args.sweep_share / len(SWEEP_SHAPES)
            log(f"sweep: {len(SWEEP_SHAPES)} shapes, {each:.0f} s each, scored by validation loss")
            for i, s in enumerate(SWEEP_SHAPES):
                model, state, summary = train_one(f"sweep {i}", s, args, preset, data, each, log_file)
                result["sweep"].append(summary)
                del model, state
                release_memory()
            winner = min(result["sweep"], key=lambda r: r["val_loss"])
            shape = dict(winner["shape"])
            for r in result["sweep"]:
                log(f"sweep: {r['shape']} {r['parameters']:,} params: val {r['val_loss']:.4f} "
                    f"({r['steps']} steps, {r['epochs']:.1f} epochs){'  <- best' if r is winner else ''}")
        check_shape(shape, args.preset)
        sweep_s = time.time() - t_train0

        # 4. Train
        left = budget - (time.time() - t_train0)
        if left < 30:
            fail(f"only {left:.0f} s of the {budget:.0f} s budget are left for the final training: "
                 f"raise --minutes or lower --sweep-share")
        model, state, summary = train_one("final", shape, args, preset, data, left, log_file)
    train_s = summary["seconds"]

    # 5. Save
    result["model"] = {
        "shape": {**shape, "head_dim": HEAD_DIM, "vocab_size": vocab_size,
                  "max_position_embeddings": SEQ_LEN, "rope_theta": preset["rope_theta"],
                  "rms_norm_eps": 1e-5, "tie_word_embeddings": True},
        "parameters": summary["parameters"], "train_tokens": len(train_ids),
        "epochs": summary["epochs"], "train_seconds": train_s, "best_val_loss": summary["val_loss"],
        "best_step": summary["best_step"], "steps": summary["steps"], "stop": summary["stop"],
        "seed": args.seed, "batch": args.batch, "seq_len": SEQ_LEN, "lr": args.lr,
        "recipe": (f"AdamW betas {BETAS}, weight decay {WEIGHT_DECAY} (not on norms and embeddings), "
                   f"warmup {WARMUP_STEPS} steps then cosine to {MIN_LR_RATIO:g} x lr, grad clip {GRAD_CLIP}, "
                   f"bf16 autocast, best validation loss kept"),
    }
    size = save_model(model, state, args.out)
    result["model"]["safetensors_bytes"] = size
    del model, state, data, train_stream, val_windows
    release_memory()
    write_json(args.out / "eval.json", result)

    # 6. Evaluate
    t0 = time.time()
    evaluate(args.out, tok, heldout_text, args, result)
    eval_s = time.time() - t0
    result["timing"] = {"tokenizer_s": tokenizer_s, "sweep_s": sweep_s, "final_train_s": train_s,
                        "eval_s": eval_s, "total_s": time.time() - t_main}
    write_json(args.out / "eval.json", result)

    if args.split_output:
        copy_split(args.out, args.split_output)

    h = result["heldout"]
    log(f"done in {time.time() - t_main:.0f} s: {result['model']['parameters']:,} parameters, best val loss "
        f"{result['model']['best_val_loss']:.4f}; held-out perplexity fp32 {h['perplexity_fp32']:.3f}, "
        f"bf16 {h['perplexity_bf16']:.3f}; CI subset fp32 {result['ci']['perplexity_fp32']:.3f}")
    log(f"wrote {args.out / 'eval.json'} and {log_path}")


if __name__ == "__main__":
    main()
