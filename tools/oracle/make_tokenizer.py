#!/usr/bin/env python3
"""Train the tiny deterministic byte-level BPE tokenizer used by the oracle goldens.

Layout (Qwen-style): ids 0..255 are the 256 ByteLevel alphabet symbols, then the BPE merges,
then the three special tokens appended at the very end of the vocabulary:

    <|endoftext|> = vocab_size - 3, <|im_start|> = vocab_size - 2, <|im_end|> = vocab_size - 1

The pre-tokenizer is ByteLevel (GPT-2 split regex, which the Rust `tokenizers` crate runs through
fancy-regex: no onig-only features) and the decoder is ByteLevel, so any UTF-8 text round-trips.

Usage:
    python tools/oracle/make_tokenizer.py --out DIR     # writes DIR/tokenizer.json, DIR/tokenizer_config.json
"""

import argparse
import json
import os

# Single-threaded training: the BPE trainer is deterministic, but keep rayon out of it anyway.
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402

VOCAB_SIZE = 512
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"

# Minimal ChatML template in Qwen's style.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)

CORPUS = [
    "The capital of France is Paris. Paris is a large city on the river Seine, and the Seine "
    "flows from the east of France through Paris and then to the sea at Le Havre. Many people "
    "live in Paris, and many more visit the city every year to see its old streets, its bridges "
    "and its museums.",
    "London is the capital of England and of the United Kingdom. The river Thames runs through "
    "the middle of London from the west to the east. There are more than thirty bridges over the "
    "Thames in London, and the oldest of them is London Bridge.",
    "Berlin is the capital of Germany. The river Spree flows through the centre of Berlin and "
    "joins the river Havel in the west of the city. Rome is the capital of Italy, and the river "
    "Tiber flows through Rome to the sea. Madrid is the capital of Spain; it stands on the small "
    "river Manzanares.",
    "The longest river in the world is the Nile, which flows north through Africa to the "
    "Mediterranean Sea. The Amazon in South America carries more water than any other river. "
    "The Danube flows through ten countries and four capital cities: Vienna, Bratislava, "
    "Budapest and Belgrade.",
    "Numbers help us to count and to measure. One, two, three, four, five, six, seven, eight, "
    "nine and ten are the first ten numbers. Ten times ten is one hundred, and ten times one "
    "hundred is one thousand. The year has 365 days, the day has 24 hours, and the hour has 60 "
    "minutes. Seven is a prime number, and so are 2, 3, 5, 11 and 13.",
    "A city grows where people can trade, and a river is a good road for trade. That is why so "
    "many great cities stand on rivers: Paris on the Seine, London on the Thames, Cairo on the "
    "Nile, and New York on the Hudson. Some cities have more than ten million people, while a "
    "small town may have only one or two thousand.",
    "The population of a city is the number of people who live in it. In the year 1900 there "
    "were about 1.6 billion people in the world; today there are more than 8 billion. More than "
    "half of them live in cities, and the number is still growing every year.",
    "Rivers begin in the mountains as small streams. The streams meet and become a river, and the "
    "river flows down through the valley to a lake or to the sea. The water of the sea rises into "
    "the air, falls again as rain on the mountains, and the river begins once more.",
]


def corpus_text() -> str:
    return "\n\n".join(CORPUS) + "\n"


def build_tokenizer(vocab_size: int = VOCAB_SIZE) -> Tokenizer:
    """Train the BPE model on CORPUS; returns a tokenizer with exactly `vocab_size` ids."""
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False, fuse_unk=False))
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=True)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=True)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=True)

    n_bpe = vocab_size - len(SPECIAL_TOKENS)
    trainer = trainers.BpeTrainer(
        vocab_size=n_bpe,
        min_frequency=1,
        show_progress=False,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    got = tok.get_vocab_size(with_added_tokens=False)
    if got != n_bpe:
        raise SystemExit(f"BPE training produced {got} tokens, wanted {n_bpe}: enlarge CORPUS")

    tok.add_special_tokens(
        [AddedToken(t, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
         for t in SPECIAL_TOKENS]
    )
    for i, t in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(t) == n_bpe + i, (t, tok.token_to_id(t))
    assert tok.get_vocab_size(with_added_tokens=True) == vocab_size
    return tok


def tokenizer_config(tok: Tokenizer) -> dict:
    added = {}
    for t in SPECIAL_TOKENS:
        added[str(tok.token_to_id(t))] = {
            "content": t,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": EOS_TOKEN,
        "errors": "replace",
        "model_max_length": 512,
        "pad_token": PAD_TOKEN,
        "split_special_tokens": False,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": None,
    }


def check_roundtrip(tok: Tokenizer) -> None:
    samples = [
        "The capital of France is Paris.",
        corpus_text(),
        "Zürich, Kraków, 東京 and São Paulo 🚀 — tabs\tand\nnewlines  double  spaces",
        "<|im_start|>user\nHi<|im_end|>\n",
    ]
    for s in samples:
        ids = tok.encode(s, add_special_tokens=False).ids
        back = tok.decode(ids, skip_special_tokens=False)
        if back != s:
            raise SystemExit(f"round-trip failed: {s!r} -> {back!r}")


def write_tokenizer(out_dir: str, vocab_size: int = VOCAB_SIZE) -> Tokenizer:
    """Writes tokenizer.json and tokenizer_config.json into out_dir; returns the tokenizer."""
    os.makedirs(out_dir, exist_ok=True)
    tok = build_tokenizer(vocab_size)
    check_roundtrip(tok)
    tok.save(os.path.join(out_dir, "tokenizer.json"), pretty=True)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(tokenizer_config(tok), f, indent=2, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    return tok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--vocab-size", type=int, default=VOCAB_SIZE)
    args = ap.parse_args()
    tok = write_tokenizer(args.out, args.vocab_size)
    enc = tok.encode("The capital of France is Paris.", add_special_tokens=False)
    print(f"vocab {tok.get_vocab_size()}; specials "
          + ", ".join(f"{t}={tok.token_to_id(t)}" for t in SPECIAL_TOKENS))
    print(f"'The capital of France is Paris.' -> {enc.ids} {enc.tokens}")


if __name__ == "__main__":
    main()
