"""`wgllm serve` driven by the real `openai` Python client (tests/openai/requirements.txt pins it).

Starts the server itself on a free loopback port (the embedded tiny model; the SmolLM2 GGUF too when
given) and checks chat and completions, streaming and not, stop strings, seeds, logprobs, usage, n,
and every refusal with its status and the field it names. Prints one line per case and
`N passed, M failed`; exits 1 on any failure.

    python tests/openai/test_client.py --wgllm target/release/wgllm [--smollm2 FILE.gguf]
"""
import argparse
import os
import subprocess
import sys
import threading
import time
import traceback
import urllib.request

import openai

KEY = "sk-wgllm-py"
TINY = "wgllm-tiny"
CTX = 256
# a CPU Vulkan driver (lavapipe in CI) is never picked without --device
DEVICE = os.environ.get("WGLLM_SERVER_DEVICE", "wgpu")


class Server:
    def __init__(self, wgllm, *args):
        self.p = subprocess.Popen(
            [wgllm, "serve", "--host", "127.0.0.1", "--port", "0", "--device", DEVICE, *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log = []
        self.addr = None
        for line in self.p.stderr:
            self.log.append(line)
            if line.startswith("wgllm serve: listening on http://"):
                self.addr = line.strip().split("http://", 1)[1]
                break
        if self.addr is None:
            raise RuntimeError("no `listening on` line: " + "".join(self.log))
        threading.Thread(target=lambda: [self.log.append(l) for l in self.p.stderr], daemon=True).start()
        t0 = time.time()
        while True:
            try:
                with urllib.request.urlopen(f"http://{self.addr}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except Exception:
                pass
            if time.time() - t0 > 600:
                raise RuntimeError("not ready: " + "".join(self.log))
            time.sleep(0.1)

    def client(self, key=KEY):
        return openai.OpenAI(base_url=f"http://{self.addr}/v1", api_key=key, max_retries=0, timeout=600)

    def stop(self):
        self.p.terminate()
        try:
            return self.p.wait(60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return None


CASES = []


def case(f):
    CASES.append(f)
    return f


def expect_error(exc_type, status, names, fn):
    try:
        fn()
    except exc_type as e:
        assert e.status_code == status, f"status {e.status_code}, want {status}"
        msg = e.body["message"] if isinstance(e.body, dict) else str(e.body)
        for n in names:
            assert n in msg, f"message {msg!r} does not name {n!r}"
        return
    raise AssertionError(f"no {exc_type.__name__}")


def chat(c, **kw):
    args = dict(model=TINY, messages=[{"role": "user", "content": "Hello there"}], max_tokens=12, temperature=0)
    args.update(kw)
    return c.chat.completions.create(**args)


def cmpl(c, **kw):
    args = dict(model=TINY, prompt="the cat sat on the mat", max_tokens=12, temperature=0)
    args.update(kw)
    return c.completions.create(**args)


@case
def models(s, _):
    m = s.client().models.list()
    assert [x.id for x in m.data] == [TINY], m


@case
def chat_whole_and_streamed(s, _):
    c = s.client()
    r = chat(c)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-"), r
    ch = r.choices[0]
    assert ch.message.role == "assistant" and isinstance(ch.message.content, str)
    assert ch.finish_reason in ("stop", "length")
    u = r.usage
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens and u.completion_tokens <= 12, u
    text, usage, finish, roles = "", None, None, 0
    for chunk in chat(c, stream=True, stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage = chunk.usage
            assert chunk.choices == []
            continue
        d = chunk.choices[0]
        roles += d.delta.role == "assistant"
        text += d.delta.content or ""
        finish = d.finish_reason or finish
    assert roles == 1, roles
    assert text == ch.message.content, (text, ch.message.content)
    assert finish == ch.finish_reason and usage == u, (finish, usage, u)


@case
def completions_whole_and_streamed(s, _):
    c = s.client()
    r = cmpl(c)
    assert r.object == "text_completion" and r.id.startswith("cmpl-"), r
    text = "".join(ch.choices[0].text for ch in cmpl(c, stream=True) if ch.choices)
    assert text == r.choices[0].text, (text, r.choices[0].text)
    # a token-id prompt: usage counts exactly its tokens
    r = cmpl(c, prompt=[1, 2, 3, 4, 5], max_tokens=4)
    assert r.usage.prompt_tokens == 5, r.usage


@case
def stop_strings(s, _):
    c = s.client()
    full = cmpl(c, max_tokens=24).choices[0].text
    assert len(full) >= 8, full
    stop = full[len(full) // 2: len(full) // 2 + 2]
    want = full[: full.index(stop)]
    r = cmpl(c, max_tokens=24, stop=[stop])
    assert r.choices[0].text == want and r.choices[0].finish_reason == "stop", (r.choices[0], want)
    text = "".join(ch.choices[0].text for ch in cmpl(c, max_tokens=24, stop=stop, stream=True))
    assert text == want, (text, want)


@case
def seeds(s, _):
    c = s.client()
    a = cmpl(c, temperature=1.0, seed=11, max_tokens=16).choices[0].text
    b = cmpl(c, temperature=1.0, seed=11, max_tokens=16).choices[0].text
    d = cmpl(c, temperature=1.0, seed=12, max_tokens=16).choices[0].text
    assert a == b, (a, b)
    assert a != d, (a, d)
    r = chat(c, temperature=0.8, seed=3, n=3)
    assert [x.index for x in r.choices] == [0, 1, 2], r.choices
    texts = [x.message.content for x in r.choices]
    assert len(set(texts)) > 1, texts  # each choice samples with its own seed


@case
def logprobs(s, _):
    c = s.client()
    r = chat(c, logprobs=True, top_logprobs=3)
    lp = r.choices[0].logprobs.content
    assert len(lp) == r.usage.completion_tokens, (len(lp), r.usage)
    for t in lp:
        assert len(t.top_logprobs) == 3 and t.logprob <= 0
        assert abs(t.logprob - t.top_logprobs[0].logprob) < 1e-5, t  # greedy picks the top one
    r = cmpl(c, logprobs=2)
    l = r.choices[0].logprobs
    assert len(l.tokens) == len(l.token_logprobs) == r.usage.completion_tokens, l
    assert all(len(t) <= 2 for t in l.top_logprobs), l


@case
def errors(s, _):
    c = s.client()
    bad = openai.BadRequestError
    expect_error(bad, 400, ["temperature"], lambda: chat(c, temperature=7))
    expect_error(bad, 400, ["top_p"], lambda: chat(c, top_p=0))
    expect_error(bad, 400, ["max_tokens"], lambda: cmpl(c, max_tokens=0))
    expect_error(bad, 400, ["presence_penalty"], lambda: chat(c, presence_penalty=1.5))
    expect_error(bad, 400, ["tools"], lambda: chat(c, tools=[{"type": "function", "function": {"name": "f"}}]))
    expect_error(bad, 400, ["response_format"], lambda: chat(c, response_format={"type": "json_object"}))
    expect_error(bad, 400, ["frobnicate"], lambda: chat(c, extra_body={"frobnicate": 1}))
    expect_error(bad, 400, ["echo"], lambda: cmpl(c, echo=True))
    expect_error(bad, 400, ["top_logprobs"], lambda: chat(c, top_logprobs=2))
    expect_error(bad, 400, ["messages[0].role"], lambda: chat(c, messages=[{"role": "tool", "content": "x", "tool_call_id": "1"}]))
    expect_error(openai.AuthenticationError, 401, ["Authorization"], lambda: chat(s.client("sk-wrong")))
    expect_error(openai.NotFoundError, 404, ["model", "gpt-4o"], lambda: chat(c, model="gpt-4o"))
    long = list(range(1, CTX + 21))
    expect_error(bad, 400, ["prompt", str(CTX), str(CTX + 20)], lambda: cmpl(c, prompt=long))
    expect_error(bad, 400, ["max_tokens", str(CTX)], lambda: cmpl(c, max_tokens=CTX))
    expect_error(openai.APIStatusError, 413, ["body"], lambda: chat(c, user="x" * 200_000))


@case
def queue_full(s, args):
    q = Server(args.wgllm, "--max-seqs", "1", "--max-queue", "0", "--ctx", "512")
    try:
        c = q.client(key="unused")
        st = cmpl(c, prompt=[1, 2], max_tokens=480, stream=True)
        next(iter(st))
        expect_error(openai.RateLimitError, 429, ["queue"], lambda: cmpl(c, prompt=[1, 2], max_tokens=4))
        st.close()
    finally:
        assert q.stop() == 0, "".join(q.log)


@case
def smollm2_answers(s, args):
    if not args.smollm2:
        print("    (no --smollm2: skipped)")
        return
    m = Server(args.wgllm, "--model", args.smollm2, "--served-model-name", "smollm2")
    try:
        c = m.client(key="unused")
        r = c.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=8, temperature=0, stop=["."])
        assert r.choices[0].text == " Paris" and r.choices[0].finish_reason == "stop", r.choices[0]
        r = c.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "What is the capital of France?"}],
                                      max_tokens=24, temperature=0)
        assert "Paris" in r.choices[0].message.content, r.choices[0].message.content
    finally:
        assert m.stop() == 0, "".join(m.log)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wgllm", required=True)
    ap.add_argument("--smollm2")
    args = ap.parse_args()
    print(f"openai {openai.__version__}")
    s = Server(args.wgllm, "--api-key", KEY, "--ctx", str(CTX), "--max-body-bytes", "65536")
    passed = failed = 0
    try:
        for f in CASES:
            try:
                f(s, args)
                print(f"test openai::{f.__name__} ... ok")
                passed += 1
            except Exception:
                print(f"test openai::{f.__name__} ... FAILED")
                traceback.print_exc()
                failed += 1
    finally:
        code = s.stop()
    if code != 0:
        print(f"the server exited with {code} after SIGTERM")
        failed += 1
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
