"""Token ids transformers gives for a GGUF file's tokenizer, as a fixture for tests/gguf.rs.

Loads the tokenizer the way a user would (`AutoTokenizer.from_pretrained(dir, gguf_file=name)`),
encodes a battery of strings without added special tokens (as `Tokenizer::encode` does), renders
the chat template for one user message with the generation prompt, and writes JSON:

    /work/.oracle-venv/bin/python tools/oracle/gguf_tokenizer_fixture.py \
        --gguf target/models/SmolLM2-135M-Instruct.Q4_1.gguf --out tests/fixtures/smollm2_tokenizer.json
"""

import argparse
import hashlib
import json
import os

import tokenizers
import transformers
from transformers import AutoTokenizer

STRINGS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing spaces  ",
    " one leading space",
    "12345 and 3.14",
    "Punctuation!? (yes) -- \"quotes\", 'apostrophes' & semi;colons: don't, I'll, we've",
    "naïve café 日本語",
    "emoji 🙂 and ümlauts, Ωmega",
    "line one\nline two\n\n  indented\tand tabbed\r\n",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "text with <|endoftext|> inside and <repo_name> too",
    "def f(x):\n    return x ** 2  # square\n",
    "",
    "a" * 40 + " " + "b" * 3,
]

USER = "What is the capital of France?"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    d, name = os.path.split(os.path.abspath(args.gguf))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)

    cases = [{"text": s, "ids": tok(s, add_special_tokens=False).input_ids} for s in STRINGS]
    chat_text = tok.apply_chat_template([{"role": "user", "content": USER}], tokenize=False, add_generation_prompt=True)
    chat = {"user": USER, "text": chat_text, "ids": tok(chat_text, add_special_tokens=False).input_ids}
    cases.append({"text": chat_text, "ids": chat["ids"]})

    out = {
        "gguf": name,
        "gguf_sha256": sha256(args.gguf),
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "note": "ids from AutoTokenizer.from_pretrained(dir, gguf_file=name), add_special_tokens=False",
        "cases": cases,
        "chat": chat,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(cases)} cases")


if __name__ == "__main__":
    main()
