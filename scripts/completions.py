"""A client of the example LLM services' /v1/completions, for scripts/examples.sh's
checks of llm_proxy.py and llm_gateway.py: asks as fast as the service lets it and
counts the answers."""
import json
import random
import time
import urllib.error
import urllib.request


def ask(url, headers, tokens, seed, seconds, backoff, statuses, lock, on_ok):
    """POSTs {"prompt", "max_tokens"} (max_tokens drawn from `tokens`, a (low, high)
    range, by a generator seeded with `seed`) to url + /v1/completions for `seconds`:
    each status counted in `statuses` under `lock`, `on_ok(headers)` called (under
    the lock) for a 200, `backoff` seconds' pause after a 429; stops at any other
    status."""
    rng, end = random.Random(seed), time.monotonic() + seconds
    while time.monotonic() < end:
        body = json.dumps({"prompt": "hello", "max_tokens": rng.randint(*tokens)}).encode()
        req = urllib.request.Request(url + "/v1/completions", data=body, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, h = r.status, r.headers
        except urllib.error.HTTPError as e:
            status, h = e.code, e.headers
        with lock:
            statuses[status] = statuses.get(status, 0) + 1
            if status == 200:
                on_ok(h)
        if status == 429:
            time.sleep(backoff)
        elif status != 200:
            return
