#!/usr/bin/env python3
"""Load a running OpenAI-compatible server (`wgllm serve`) with concurrent streaming requests.

    python3 tools/bench/serve_load.py --url http://127.0.0.1:8000 --streams 1,16,64 --secs 45 \\
        --max-tokens 128 --prompt-lens 16..512 --words real --json serve-load.json

For each concurrency level N of --streams, in turn: N clients each send streaming requests
(`stream: true`, `stream_options.include_usage`) back to back until --secs have passed (a request
under way then is let finish) or the level's --requests are done. Printed per level: requests done
and failed, generated tokens (the usage chunks' completion_tokens) per second of the level's wall
time, p50 / p99 time to first token (request sent -> first token's chunk) and p50 / p99
inter-token latency (between consecutive tokens' chunks). `wgllm serve` streams a completion as one
chunk a token (its text empty while the token ends inside a UTF-8 character), so with
--endpoint completions these are per token whatever the tokenizer; a chat stream carries only the
chunks with text, so there a token that adds no text merges its gap into the next. At the end:
/metrics must show no KV block used and nothing running or waiting (within --settle seconds), and
/health must answer 200. Exit status 1 when a request failed or either end check did not hold.

Only the Python standard library (threads, http.client, multiprocessing): it runs on a machine
with python3 and no package registry. Clients are split over --procs processes (default: one per
16 streams, at most half the CPUs) so the client's own Python time (one GIL per process) does not
inflate the latencies it measures at 64 streams.

Prompts are deterministic from --seed, the level, the stream and the request's index: --words real
draws plain English words (a real tokenizer makes about one token of each), --words tN draws the
words t0..t{N-1} (the WordLevel tokenizer of tools/bench/shaped_model.py: exactly one token a word).
--prompt-lens is a comma list whose entries are a length or a range A..B (uniform); request k of a
stream takes entry k mod the list's length, streams starting at different entries.
"""

import argparse
import http.client
import json
import math
import multiprocessing as mp
import os
import random
import sys
import threading
import time
import urllib.parse

REAL_WORDS = (
    "the of and to in is was for on that with as by at from his her it an were are which this be or "
    "has had not but one new first two their after its who they have also been more other year time "
    "city world people state during school part three many some would into between when only most "
    "used she over where while such both through these them then him than well under later since "
    "house river music water light small large early known name long high great made life work "
    "family history north south east west old young day night road market garden window table "
    "story paper letter morning evening village country island mountain forest field summer winter "
    "spring autumn friend mother father brother sister children teacher doctor student language "
    "number question answer reason example problem system program general public government "
    "company member group service power money business report study research science nature "
    "animal bird horse dog cat tree flower stone iron gold silver glass wood bread milk coffee "
    "green blue red white black yellow bright quiet simple careful happy strong short warm cold"
).split()


def parse_lens(spec):
    out = []
    for part in spec.split(","):
        part = part.strip()
        try:
            if ".." in part:
                a, b = (int(x) for x in part.split("..", 1))
            else:
                a = b = int(part)
        except ValueError:
            raise SystemExit(f"--prompt-lens: {part!r} is not a length or a range A..B")
        if a < 1 or b < a:
            raise SystemExit(f"--prompt-lens: {part!r} needs 1 <= A <= B")
        out.append((a, b))
    return out


def parse_words(spec):
    if spec == "real":
        return REAL_WORDS
    if spec.startswith("t") and spec[1:].isdigit() and int(spec[1:]) > 0:
        return None  # drawn by index: t0..t{N-1}
    raise SystemExit(f"--words: {spec!r} is neither 'real' nor tN (N >= 1)")


def make_prompt(a, level, stream, k):
    """The prompt of request k of `stream` at concurrency `level`: deterministic from --seed."""
    rng = random.Random(f"{a.seed}/{level}/{stream}/{k}")
    lo, hi = a.lens[(stream + k) % len(a.lens)]
    n = rng.randint(lo, hi)
    if a.words == "real":
        return " ".join(rng.choice(REAL_WORDS) for _ in range(n))
    top = int(a.words[1:])
    return " ".join(f"t{rng.randrange(top)}" for _ in range(n))


class Target:
    def __init__(self, url, api_key, timeout):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise SystemExit(f"--url: {url!r} is not http://HOST[:PORT]")
        self.https = u.scheme == "https"
        self.host, self.port = u.hostname, u.port or (443 if self.https else 80)
        self.base = u.path.rstrip("/")
        self.key, self.timeout = api_key, timeout

    def conn(self):
        c = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return c(self.host, self.port, timeout=self.timeout)

    def headers(self, body):
        h = {"Content-Type": "application/json", "Accept": "text/event-stream"} if body else {}
        if self.key:
            h["Authorization"] = f"Bearer {self.key}"
        return h

    def get(self, path):
        """(status, body text) of GET path; (None, why) when the server cannot be reached."""
        c = self.conn()
        try:
            c.request("GET", self.base + path, headers=self.headers(None))
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        except OSError as e:
            return None, str(e)
        finally:
            c.close()


def one_request(t, a, model, prompt):
    """Streams one request. Returns a record: ok, why, ttft, itl (list), tokens, prompt_tokens, finish."""
    body = {"model": model, "max_tokens": a.max_tokens, "temperature": a.temperature, "stream": True,
            "stream_options": {"include_usage": True}}
    if a.endpoint == "chat":
        path, body["messages"] = "/v1/chat/completions", [{"role": "user", "content": prompt}]
    else:
        path, body["prompt"] = "/v1/completions", prompt
    if a.temperature > 0:
        body["seed"] = random.Random(prompt).randrange(1 << 31)
    rec = {"ok": False, "why": None, "ttft": None, "itl": [], "tokens": 0, "prompt_tokens": 0, "finish": None}
    data = json.dumps(body).encode()
    c = t.conn()
    t0 = time.perf_counter()
    try:
        c.request("POST", t.base + path, body=data, headers=t.headers(data))
        r = c.getresponse()
        if r.status != 200:
            rec["why"] = f"status {r.status}: {r.read(500).decode('utf-8', 'replace')}"
            return rec
        last, done, usage = None, False, None
        while True:
            line = r.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue  # blank separators, `:` comments, event/id fields
            d = line[5:].strip()
            if d == b"[DONE]":
                done = True
                break
            now = time.perf_counter()
            ev = json.loads(d)
            if "error" in ev:
                rec["why"] = f"error event: {d[:300].decode('utf-8', 'replace')}"
                return rec
            if ev.get("usage"):
                usage = ev["usage"]
            for ch in ev.get("choices") or ():
                # a token's chunk: /v1/completions streams one per token, its text empty while the
                # token ends inside a character (or a possible stop string); chat sends only the
                # chunks with text (and the role and finish chunks, which carry no token)
                if a.endpoint == "completions":
                    token = "text" in ch
                else:
                    token = bool((ch.get("delta") or {}).get("content"))
                if token:
                    if last is None:
                        rec["ttft"] = now - t0
                    else:
                        rec["itl"].append(now - last)
                    last = now
                if ch.get("finish_reason"):
                    rec["finish"] = ch["finish_reason"]
        if not (done and usage and rec["finish"]):
            rec["why"] = f"incomplete stream: [DONE] {done}, usage {usage is not None}, finish {rec['finish']}"
            return rec
        rec["tokens"] = int(usage.get("completion_tokens", 0))
        rec["prompt_tokens"] = int(usage.get("prompt_tokens", 0))
        rec["ok"] = True
        return rec
    except (OSError, http.client.HTTPException, ValueError) as e:
        rec["why"] = f"{type(e).__name__}: {e}"
        return rec
    finally:
        c.close()


def client_proc(a, model, level, streams, deadline, quotas, out):
    """One process: a thread per stream in `streams`, each repeating requests until the deadline or
    its quota; the records go to `out` (a queue) as one list."""
    t = Target(a.url, a.api_key, a.timeout)
    recs, lock = [], threading.Lock()

    def worker(s, quota):
        k = 0
        while (quota is None and time.perf_counter() < deadline) or (quota is not None and k < quota):
            try:
                rec = one_request(t, a, model, make_prompt(a, level, s, k))
            except Exception as e:  # a response shaped unlike OpenAI's: a failure, not a dead client
                rec = {"ok": False, "why": f"{type(e).__name__}: {e}", "ttft": None, "itl": [], "tokens": 0,
                       "prompt_tokens": 0, "finish": None}
            rec["end"] = time.perf_counter()
            with lock:
                recs.append(rec)
            k += 1

    th = [threading.Thread(target=worker, args=(s, q), daemon=True) for s, q in zip(streams, quotas)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    out.put(recs)


def pct(v, p):
    """Nearest-rank percentile of a list (None for an empty one)."""
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(math.ceil(p * len(v))) - 1))]


def metrics(t):
    """{name: value} of the unlabelled samples of /metrics, plus `http_status` {code: count}."""
    st, text = t.get("/metrics")
    if st != 200:
        return None
    m, statuses = {}, {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, val = line.rpartition(" ")
        try:
            v = float(val)
        except ValueError:
            continue
        if name.startswith("wgllm_http_requests_total{"):
            statuses[name.split('"')[1]] = v
        elif "{" not in name:
            m[name] = v
    m["http_status"] = statuses
    return m


def run_level(a, model, n):
    procs = a.procs or min(max(1, (os.cpu_count() or 2) // 2), math.ceil(n / 16))
    procs = max(1, min(procs, n))
    quotas = [None] * n
    if a.requests:
        quotas = [a.requests // n + (s < a.requests % n) for s in range(n)]
    m0 = metrics(a.target) or {}
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    t0 = time.perf_counter()
    deadline = t0 + a.secs if a.secs else float("inf")
    ps = []
    for p in range(procs):
        streams = list(range(p, n, procs))
        ps.append(ctx.Process(target=client_proc,
                              args=(a, model, n, streams, deadline, [quotas[s] for s in streams], q)))
    for p in ps:
        p.start()
    recs, got = [], 0
    while got < len(ps):
        try:
            recs += q.get(timeout=5)
            got += 1
        except Exception:  # queue.Empty: make sure no client process died without reporting
            if any(p.exitcode not in (None, 0) for p in ps):
                raise SystemExit(f"a client process died: exit codes {[p.exitcode for p in ps]}")
    for p in ps:
        p.join()
    # perf_counter is CLOCK_MONOTONIC on Linux: the same clock in the forked processes
    wall = max([r["end"] for r in recs] + [t0]) - t0
    m1 = metrics(a.target) or {}
    ok = [r for r in recs if r["ok"]]
    bad = [r for r in recs if not r["ok"]]
    ttft = [r["ttft"] for r in ok if r["ttft"] is not None]
    itl = [x for r in ok for x in r["itl"]]
    toks = sum(r["tokens"] for r in ok)
    finishes = {}
    for r in ok:
        finishes[r["finish"]] = finishes.get(r["finish"], 0) + 1
    lv = {
        "streams": n,
        "client_procs": procs,
        "wall_s": round(wall, 3),
        "requests_done": len(ok),
        "requests_failed": len(bad),
        "failures": [r["why"] for r in bad[:5]],
        "finish_reasons": finishes,
        "prompt_tokens": sum(r["prompt_tokens"] for r in ok),
        "completion_tokens": toks,
        "tokens_per_s": toks / wall if wall > 0 else None,
        "requests_per_s": len(ok) / wall if wall > 0 else None,
        "ttft_p50_s": pct(ttft, 0.5),
        "ttft_p99_s": pct(ttft, 0.99),
        "itl_p50_s": pct(itl, 0.5),
        "itl_p99_s": pct(itl, 0.99),
        "itl_samples": len(itl),
        "preemptions": m1.get("wgllm_preemptions_total", 0) - m0.get("wgllm_preemptions_total", 0),
    }
    f = lambda x, s=1.0, d=3: "n/a" if x is None else f"{x * s:.{d}f}"  # noqa: E731
    print(f"streams {n:>3}: {wall:6.1f} s, {len(ok)} requests done, {len(bad)} failed; {toks} tokens, "
          f"{f(lv['tokens_per_s'], d=1)} tokens/s; TTFT p50 {f(lv['ttft_p50_s'])} s p99 {f(lv['ttft_p99_s'])} s; "
          f"ITL p50 {f(lv['itl_p50_s'], 1e3, 1)} ms p99 {f(lv['itl_p99_s'], 1e3, 1)} ms; "
          f"preemptions {lv['preemptions']:.0f}", flush=True)
    for why in lv["failures"]:
        print(f"    failed: {why}", flush=True)
    return lv


def end_checks(a):
    """KV blocks back to zero (and nothing running or waiting) within --settle s; /health 200."""
    t, t0 = a.target, time.perf_counter()
    while True:
        m = metrics(t)
        if m is None:
            kv = {"ok": False, "why": "/metrics did not answer 200"}
            break
        vals = {k: m.get("wgllm_" + k) for k in ("kv_blocks_used", "requests_running", "requests_waiting")}
        if None in vals.values():
            kv = {"ok": False, "why": f"/metrics lacks {[k for k, v in vals.items() if v is None]}"}
            break
        if all(v == 0 for v in vals.values()):
            kv = {"ok": True, **vals}
            break
        if time.perf_counter() - t0 > a.settle:
            kv = {"ok": False, "why": f"not back to zero after {a.settle} s", **vals}
            break
        time.sleep(0.1)
    hs, hb = t.get("/health")
    extra = {}
    if m:
        extra = {k: m.get("wgllm_" + k) for k in ("kv_blocks_total", "preemptions_total", "prefix_cache_hit_rate",
                                                  "requests_aborted_total", "generation_tokens_total")}
        extra["http_status"] = m.get("http_status")
    return {"kv": kv, "health_status": hs, "health_body": hb[:200], "metrics": extra}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--url", default="http://127.0.0.1:8000", help="the server's base URL (without /v1)")
    ap.add_argument("--streams", default="1,16,64", help="concurrency levels, run in turn (comma list)")
    ap.add_argument("--secs", type=float, default=None, help="seconds per level (default 30 unless --requests)")
    ap.add_argument("--requests", type=int, default=None, help="requests per level (instead of --secs)")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--prompt-lens", default="16..512", help="comma list of lengths in words, or ranges A..B")
    ap.add_argument("--endpoint", choices=["chat", "completions"], default="completions")
    ap.add_argument("--words", default="real", help="real (English words) or tN (words t0..t{N-1})")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--model", default=None, help="default: the first model /v1/models lists")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=2, help="requests sent (one at a time) before the levels, not counted")
    ap.add_argument("--procs", type=int, default=None, help="client processes per level (default: one per 16 streams)")
    ap.add_argument("--timeout", type=float, default=600, help="socket timeout of a request, seconds")
    ap.add_argument("--settle", type=float, default=30, help="seconds the KV may take to be freed at the end")
    ap.add_argument("--json", default=None, help="write the figures to this file")
    a = ap.parse_args()
    try:
        levels = [int(x) for x in a.streams.split(",")]
    except ValueError:
        ap.error(f"--streams: {a.streams!r} is not a comma list of integers")
    if not levels or min(levels) < 1:
        ap.error("--streams: every level must be at least 1")
    if a.secs is not None and a.requests is not None:
        ap.error("--secs and --requests exclude each other")
    if a.requests is not None and a.requests < 1:
        ap.error("--requests: must be at least 1")
    if a.requests is None and a.secs is None:
        a.secs = 30.0
    if a.secs is not None and a.secs <= 0:
        ap.error("--secs: must be positive")
    if a.max_tokens < 1:
        ap.error("--max-tokens: must be at least 1")
    a.lens = parse_lens(a.prompt_lens)
    parse_words(a.words)
    a.target = Target(a.url, a.api_key, a.timeout)

    hs, hb = a.target.get("/health")
    if hs != 200:
        sys.exit(f"{a.url}/health: {hs} {hb[:200]} (not ready)")
    if a.model is None:
        st, body = a.target.get("/v1/models")
        if st != 200:
            sys.exit(f"{a.url}/v1/models: {st} {body[:300]} (give --model, or --api-key)")
        a.model = json.loads(body)["data"][0]["id"]
    path = "/v1/chat/completions" if a.endpoint == "chat" else "/v1/completions"
    print(f"{a.url}: model {a.model}, {path}, max_tokens {a.max_tokens}, prompts of "
          f"{a.prompt_lens} words ({a.words}), temperature {a.temperature}, "
          + (f"{a.secs:g} s" if a.secs else f"{a.requests} requests") + " per level", flush=True)
    for w in range(a.warmup):
        r = one_request(a.target, a, a.model, make_prompt(a, 0, 0, w))
        if not r["ok"]:
            sys.exit(f"warm-up request failed: {r['why']}")
    out = {"url": a.url, "model": a.model, "endpoint": a.endpoint, "max_tokens": a.max_tokens,
           "prompt_lens": a.prompt_lens, "words": a.words, "temperature": a.temperature, "seed": a.seed,
           "secs_per_level": a.secs, "requests_per_level": a.requests, "levels": []}
    for n in levels:
        out["levels"].append(run_level(a, a.model, n))
    out["end"] = end_checks(a)
    kv, e = out["end"]["kv"], out["end"]
    print(f"end: KV blocks used {kv.get('kv_blocks_used')}, running {kv.get('requests_running')}, waiting "
          f"{kv.get('requests_waiting')} ({'back to zero' if kv['ok'] else 'NOT back to zero: ' + kv['why']}); "
          f"/health {e['health_status']}; preemptions {e['metrics'].get('preemptions_total')}, "
          f"prefix cache hit rate {e['metrics'].get('prefix_cache_hit_rate')}, "
          f"HTTP statuses {e['metrics'].get('http_status')}", flush=True)
    failed = sum(lv["requests_failed"] for lv in out["levels"])
    out["ok"] = failed == 0 and kv["ok"] and e["health_status"] == 200
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
    print("ok" if out["ok"] else f"NOT ok: {failed} failed requests, KV {kv['ok']}, /health {e['health_status']}")
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
