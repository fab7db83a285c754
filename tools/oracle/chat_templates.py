"""Chat-template goldens: real models' chat templates rendered by transformers' apply_chat_template.

For each family (Qwen3, Qwen3.5, Llama 3.1/3.2/3.3, SmolLM2, SmolLM3) the template is read from the
fixture copies in tests/fixtures/chat_templates/ (SOURCES.md there says where each came from), given
to a tokenizer built from the tiny fixture tokenizer (goldens/qwen3-tiny/model/tokenizer.json) with the
family's real named special tokens, and rendered with `tokenize=False` for a set of conversations
(system + user, user only, multi-turn, multi-turn ending on the assistant, a reasoning reply, tool
schemas) with add_generation_prompt true and false and, where the template reads it, enable_thinking
both ways. Nothing time-dependent is left: Llama 3.x get a fixed `date_string`.

Then the whole collection (every *.jinja and the Qwen3 tokenizer_config.json there) on one standard
conversation (system, user, assistant, user; add_generation_prompt) with bos `<s>` / eos `</s>`: the
rendered text, or transformers' error when it refuses. Templates that print today's date through
`strftime_now` read a pinned clock (CLOCK: transformers' `datetime` is replaced by one whose now()
is that instant; the Rust test pins its clock to the same instant).

    /work/.oracle-venv/bin/python tools/oracle/chat_templates.py --out goldens/chat-templates

Writes:
  <family>/<case>.txt   the rendered prompt, UTF-8 bytes exactly as transformers returns it
  collection/<template>.txt  the standard conversation through each template transformers renders
  tools.json            the tool schemas (key order as written here; the Rust test passes this text)
  manifest.json         kind "chat_template"; per family the template file and its sha256 and the
                        special tokens; per case the messages, add_generation_prompt, tools, kwargs
                        and the output file; sha256 of every file; oracle versions.
Deterministic: no randomness, no clock in the output; oracle.date is today (UTC) unless
SOURCE_DATE_EPOCH is set.
"""

import argparse
import datetime
import hashlib
import json
import os
import sys

import jinja2
import tokenizers
import transformers
import transformers.utils.chat_template_utils as chat_template_utils
from transformers import PreTrainedTokenizerFast

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = "tests/fixtures/chat_templates"
TOKENIZER = "goldens/qwen3-tiny/model/tokenizer.json"
DATE_STRING = "15 Mar 2025"
# the instant strftime_now reads for the collection: 2025-03-15 12:00:00 (naive, as datetime.now())
CLOCK = datetime.datetime(2025, 3, 15, 12, 0, 0)
CLOCK_UNIX = 1742040000  # the same instant read as UTC, for the Rust side
COLLECTION_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello! What can you do?"},
    {"role": "assistant", "content": "I can answer questions."},
    {"role": "user", "content": "What is 2 + 2?"},
]
COLLECTION_SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}

SYSTEM = "You are a concise assistant. Answer in one sentence."
USER1 = "What is the capital of France?"
ASSIST1 = "The capital of France is Paris."
# non-ASCII, surrounding whitespace and an inner newline: trim/strip and tojson's escaping show
USER2 = "  And of Japan? 日本の首都は？ 🙂\nOne line, please.  "
ASSIST2 = "Tokyo (東京) is the capital of Japan."
THINK1 = "<think>\nThe user asks for France's capital. It is Paris.\n</think>\n\nThe capital of France is Paris."

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city, e.g. Zürich; temperatures in °C or °F.",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City and country"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["location"],
            },
        },
    }
]


def m(role, content):
    return {"role": role, "content": content}


CONVERSATIONS = {
    "system_user": [m("system", SYSTEM), m("user", USER1)],
    "user_only": [m("user", USER1)],
    "multi_turn": [m("system", SYSTEM), m("user", USER1), m("assistant", ASSIST1), m("user", USER2)],
    "multi_turn_closed": [
        m("system", SYSTEM),
        m("user", USER1),
        m("assistant", ASSIST1),
        m("user", USER2),
        m("assistant", ASSIST2),
    ],
    "reasoning_reply": [m("user", USER1), m("assistant", THINK1), m("user", USER2)],
}

# family id -> template fixture, the named special tokens of the real model's tokenizer, the
# conversations, whether tools are rendered, the kwargs variants
FAMILIES = [
    {
        "family": "qwen3",
        # the chat_template of Qwen3's tokenizer_config.json (byte-equal to Qwen-Qwen3-0.6B.jinja)
        "template": "Qwen3-tokenizer_config.json",
        "special_tokens": "from_config",
        "conversations": list(CONVERSATIONS),
        "tools": True,
        "kwargs": [{}, {"enable_thinking": True}, {"enable_thinking": False}],
    },
    {
        "family": "qwen3_5",
        "template": "Qwen3.5-4B.jinja",
        "special_tokens": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
        "conversations": list(CONVERSATIONS),
        "tools": True,
        "kwargs": [{"enable_thinking": True}, {"enable_thinking": False}],
    },
    *[
        {
            "family": fam,
            "template": tpl,
            "special_tokens": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
            "conversations": ["system_user", "user_only", "multi_turn", "multi_turn_closed"],
            "tools": True,
            "kwargs": [{"date_string": DATE_STRING}],
        }
        for fam, tpl in [
            ("llama3_1", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
            ("llama3_2", "meta-llama-Llama-3.2-3B-Instruct.jinja"),
            ("llama3_3", "meta-llama-Llama-3.3-70B-Instruct.jinja"),
        ]
    ],
    {
        "family": "smollm2",
        "template": "HuggingFaceTB-SmolLM2-135M-Instruct.jinja",
        # as transformers reads them from the SmolLM2 GGUF (bos/eos/unk/pad ids 1, 2, 0, 2)
        "special_tokens": {
            "bos_token": "<|im_start|>",
            "eos_token": "<|im_end|>",
            "unk_token": "<|endoftext|>",
            "pad_token": "<|im_end|>",
        },
        "conversations": ["system_user", "user_only", "multi_turn", "multi_turn_closed"],
        "tools": False,
        "kwargs": [{}],
    },
    {
        "family": "smollm3",
        "template": "HuggingFaceTB-SmolLM3-3B.jinja",
        "special_tokens": {"eos_token": "<|im_end|>", "pad_token": "<|im_end|>"},
        "conversations": list(CONVERSATIONS),
        "tools": False,
        "kwargs": [{"enable_thinking": True}, {"enable_thinking": False}],
    },
]

SPECIAL_NAMES = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


def sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return sha256_bytes(f.read())


def capture_date() -> str:
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    t = datetime.datetime.fromtimestamp(int(sde), datetime.timezone.utc) if sde else datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%d")


def load_template(name: str):
    path = os.path.join(REPO, FIXTURES, name)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if name.endswith(".json"):
        cfg = json.loads(text)
        special = {}
        for k in SPECIAL_NAMES:
            v = cfg.get(k)
            if isinstance(v, dict):
                v = v.get("content")
            if v is not None:
                special[k] = v
        return cfg["chat_template"], special
    return text, None


def kwargs_id(kw: dict) -> str:
    if "enable_thinking" in kw:
        return "think" if kw["enable_thinking"] else "nothink"
    return ""


class _PinnedClock(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        assert tz is None, "transformers' strftime_now asks for a naive now()"
        return cls(CLOCK.year, CLOCK.month, CLOCK.day, CLOCK.hour, CLOCK.minute, CLOCK.second)


def render_collection(write) -> dict:
    assert CLOCK.replace(tzinfo=datetime.timezone.utc).timestamp() == CLOCK_UNIX
    # strftime_now (defined in chat_template_utils) calls `datetime.now()` through that module's name
    chat_template_utils.datetime = _PinnedClock
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(REPO, TOKENIZER), **COLLECTION_SPECIAL)
    results = []
    names = sorted(n for n in os.listdir(os.path.join(REPO, FIXTURES)) if n.endswith((".jinja", ".json")))
    for name in names:
        source, _ = load_template(name)
        entry = {
            "template": f"{FIXTURES}/{name}",
            "template_sha256": sha256_file(os.path.join(REPO, FIXTURES, name)),
        }
        try:
            text = tok.apply_chat_template(
                COLLECTION_MESSAGES, chat_template=source, tokenize=False, add_generation_prompt=True
            )
        except Exception as e:  # the refusal is the result: recorded, compared by the Rust test
            entry["refused"] = f"{type(e).__name__}: {e}"
        else:
            rel = f"collection/{os.path.splitext(name)[0]}.txt"
            write(rel, text.encode("utf-8"))
            entry["file"] = rel
        results.append(entry)
    return {
        "messages": COLLECTION_MESSAGES,
        "add_generation_prompt": True,
        "special_tokens": COLLECTION_SPECIAL,
        "clock": CLOCK.isoformat(),
        "clock_unix": CLOCK_UNIX,
        "templates": results,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)

    files = {}

    def write(rel: str, data: bytes) -> None:
        p = os.path.join(out, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        files[rel] = sha256_bytes(data)

    tools_text = json.dumps(TOOLS, ensure_ascii=False, indent=2) + "\n"
    write("tools.json", tools_text.encode("utf-8"))
    tools = json.loads(tools_text)  # what the Rust side gets: the same text, parsed

    families = []
    cases = []
    for fam in FAMILIES:
        source, cfg_special = load_template(fam["template"])
        special = cfg_special if fam["special_tokens"] == "from_config" else fam["special_tokens"]
        tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(REPO, TOKENIZER), **special)
        # what transformers will hand the template: exactly the family's tokens, nothing else
        assert tok.special_tokens_map == special, (fam["family"], tok.special_tokens_map, special)
        families.append(
            {
                "family": fam["family"],
                "template": f"{FIXTURES}/{fam['template']}",
                "template_sha256": sha256_file(os.path.join(REPO, FIXTURES, fam["template"])),
                "special_tokens": special,
            }
        )
        convs = [(c, None) for c in fam["conversations"]]
        if fam["tools"]:
            convs.append(("system_user", "tools.json"))
        for conv, tools_file in convs:
            for kw in fam["kwargs"]:
                for gen in (True, False):
                    parts = [conv + ("_tools" if tools_file else ""), kwargs_id(kw), "gen" if gen else "nogen"]
                    case_id = "_".join(p for p in parts if p)
                    text = tok.apply_chat_template(
                        CONVERSATIONS[conv],
                        tools=tools if tools_file else None,
                        chat_template=source,
                        tokenize=False,
                        add_generation_prompt=gen,
                        **kw,
                    )
                    rel = f"{fam['family']}/{case_id}.txt"
                    write(rel, text.encode("utf-8"))
                    cases.append(
                        {
                            "id": f"{fam['family']}/{case_id}",
                            "family": fam["family"],
                            "conversation": conv,
                            "messages": CONVERSATIONS[conv],
                            "add_generation_prompt": gen,
                            "tools": tools_file,
                            "kwargs": kw,
                            "file": rel,
                        }
                    )

    collection = render_collection(write)

    script = os.path.relpath(os.path.abspath(__file__), REPO)
    manifest = {
        "kind": "chat_template",
        "op": "apply_chat_template",
        "case": "chat-templates",
        "args": {
            "call": "tokenizer.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=False, add_generation_prompt=gen, **kwargs)",
            "tokenizer": TOKENIZER,
            "tokenizer_sha256": sha256_file(os.path.join(REPO, TOKENIZER)),
            "date_string": DATE_STRING,
            "families": families,
            "cases": cases,
            "collection": collection,
        },
        "files": dict(sorted(files.items())),
        "oracle": {
            "name": "transformers",
            "version": transformers.__version__,
            "torch_version": None,
            "jinja2_version": jinja2.__version__,
            "tokenizers_version": tokenizers.__version__,
            "python_version": sys.version.split()[0],
            "device": "cpu",
            "dtype": "text",
            "seed": None,
            "script": script,
            "script_sha256": sha256_file(os.path.abspath(__file__)),
            "date": capture_date(),
        },
    }
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(cases)} cases for {len(families)} families to {out}")


if __name__ == "__main__":
    main()
