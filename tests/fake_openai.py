"""A small OpenAI-compatible chat/completions server for tests, on 127.0.0.1 only.

Answers are a deterministic function of the prompt and seed, so two runs give the same rows. A
``behaviour`` callback can override any answer: return a (status, body, headers) triple, or a
string to use as the message content.

Server options model what real servers differ in, for every request (preflight probes included):
``reject_modes`` (response_format modes answered with HTTP 400, or 500 with a validation body when
``validation_500``), ``reject_logprobs``, ``models``/``require_model`` (the listed names; 404 for any
other), ``api_key`` (401 without this bearer key). A run's preflight probes (their prompt says "louder
preflight") go to ``preflight_requests`` and skip ``behaviour``, so tests count the run's own calls.

``reasoning`` makes it answer as a reasoning model does (issue 30): ``inline`` (``<think>…</think>``
before the answer), ``reasoning_content`` / ``reasoning`` (the thinking in that message field, with
``usage.completion_tokens_details.reasoning_tokens``), ``harmony`` (gpt-oss channels passed raw),
``truncated`` (a ``<think>`` block cut at max_tokens: no answer). The thinking always writes a
*different* answer of the same shape as JSON, so a parser that read the thinking would be caught.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


NAMES = ("Ada", "Bo", "Cy", "Dee", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jo", "Kai", "Lu", "Mo", "Ned", "Oz", "Pia")
REASONING_MODES = ("inline", "reasoning_content", "reasoning", "harmony", "truncated")


def other_answer(content: str, prompt: str) -> str:
    """A different answer of the same JSON shape as ``content``: another offered label, another count,
    another name and persona — what a reasoning model weighs and rejects."""
    import re

    try:
        obj = json.loads(content)
    except json.JSONDecodeError:
        return '{"decision": "not this one"}'
    if not isinstance(obj, dict):
        return '{"decision": "not this one"}'
    out = {}
    for key, value in obj.items():
        offered = re.findall(r'"([^"]+)"', (re.findall(rf'"{key}": <a string, (.*?)>', prompt) or [""])[0])
        others = [o for o in offered if o != value]
        if others:
            out[key] = others[0]
        elif isinstance(value, int):
            out[key] = (value + 37) % 101
        else:
            out[key] = f"Not {value}"
    return json.dumps(out)


def default_answer(prompt: str, seed: int) -> str:
    h = int(hashlib.sha256(f"{prompt}|{seed}".encode()).hexdigest(), 16)
    if "craft a detailed persona" in prompt or "includes a person’s name" in prompt:
        return json.dumps({"name": f"Agent {NAMES[h % len(NAMES)]}",
                           "persona": f"A persona number {h % 97}, written by the fake server."})
    if "create a name" in prompt:
        return json.dumps({"name": f"Named {NAMES[h % len(NAMES)]}"})
    if '"count": <an integer from 0 to 100>' in prompt:  # the beliefs probe
        return json.dumps({"count": h % 101})
    if '"decision"' in prompt:
        import re

        labels = re.findall(r'"decision": <a string, (.*?)>', prompt)[0]
        options = re.findall(r'"([^"]+)"', labels)
        return json.dumps({"decision": options[h % len(options)], "rationale": f"reason {h % 13}"})
    if '"answer"' in prompt:
        import re

        labels = re.findall(r'"answer": <a string, (.*?)>', prompt)[0]
        options = re.findall(r'"([^"]+)"', labels)
        return json.dumps({"answer": options[h % len(options)], "rationale": "because"})
    import re

    m = re.search(r"(?:pick a word — |assign one of |choose between )(.+?) or (.+?)(?: — | to each| and write).*?"
                  r"The words are (.+?)\. Do not include", prompt, re.S)
    if m:  # word association: pair every word with one of the two tokens
        a, b, words = m.group(1), m.group(2), m.group(3).split(", ")
        return "\n".join(f"{w} - {(a, b)[(h >> i) % 2]}" for i, w in enumerate(words))
    if '"person"' in prompt:
        options = re.findall(r'"([^"]+)"', re.findall(r'"person": <a string, (.*?)>', prompt)[0])
        return json.dumps({"person": options[h % 2]})
    if '"answer": <a string, "yes" or "no">' in prompt:
        return json.dumps({"answer": ("yes", "no")[h % 2]})
    if "Generate two short profiles" in prompt or "Generate a short profile" in prompt:
        return f"Profile one. Profile two. My suggestion number {h % 7}."
    return f"evacuate, because reason {h % 13}"


def fake_logprobs(content: str, prompt: str) -> list[dict]:
    """Word-level tokens of ``content`` with log-prob -0.1; at the decision's value, every other
    offered label is an alternative at -2.0 (so its probability is known to the test)."""
    import re

    labels = re.findall(r'"([^"]+)"', (re.findall(r'"decision": <a string, (.*?)>', prompt) or [""])[0])
    out = []
    for tok in re.findall(r"\w+|\s+|[^\w\s]", content):
        top = [{"token": tok, "logprob": -0.1}]
        if tok in labels:
            top += [{"token": other, "logprob": -2.0} for other in labels if other != tok]
        out.append({"token": tok, "logprob": -0.1, "bytes": None, "top_logprobs": top})
    return out


def misbehaving():
    """A ``behaviour`` that answers as a small real model does: of the decisions asked, in turn, one the
    default answer, one off the list, one a refusal (the rest of the prompts: the default answer)."""
    import itertools

    decisions = itertools.count()  # next() on a count is atomic: the server answers on several threads

    def behaviour(n: int, prompt: str, body: dict) -> str | None:
        if '"decision"' not in prompt:
            return None
        return (None, '{"decision": "Wait and see", "rationale": "unsure"}',
                "I'm sorry, I can't make that choice for someone.")[next(decisions) % 3]

    return behaviour


class FakeOpenAIServer:
    def __init__(self, behaviour=None, port: int = 0, reject_modes=(), validation_500=False,
                 reject_logprobs=False, models=("fake",), require_model=False, api_key=None, reasoning=None):
        assert reasoning in (None, *REASONING_MODES), reasoning
        self.behaviour = behaviour
        self.reasoning = reasoning
        self.requests: list[dict] = []
        self.preflight_requests: list[dict] = []
        self.reject_modes, self.validation_500, self.reject_logprobs = set(reject_modes), validation_500, reject_logprobs
        self.models, self.require_model, self.api_key = list(models), require_model, api_key
        self.lock = threading.Lock()
        self.delay_s = 0.0  # answer every request after this long (benchmarks, concurrency tests)
        self.active = self.max_active = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like real servers
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls between header and body
            wbufsize = 1 << 16  # one write per response (flushed after each request)

            def log_message(self, *a):
                pass

            def _unauthorized(self):
                if outer.api_key and self.headers.get("Authorization") != f"Bearer {outer.api_key}":
                    self._send(401, {"error": {"message": "Incorrect API key provided: "
                                               f"{self.headers.get('Authorization', '')[7:]}",
                                               "type": "invalid_request_error", "code": "invalid_api_key"}})
                    return True
                return False

            def do_GET(self):
                if "/batches/" in self.path or "/files/" in self.path:
                    return outer.batch_api_get(self)
                if self._unauthorized():
                    return
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in outer.models]})

            def _rejected(self, body) -> bool:
                """The server-level options: refuse what this server 'does not support'."""
                if self._unauthorized():
                    return True
                if outer.require_model and body.get("model") not in outer.models:
                    self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist",
                                               "type": "invalid_request_error", "code": "model_not_found"}})
                    return True
                rf = body.get("response_format") or {}
                mode = {"json_schema": "json_schema", "json_object": "json_object_schema" if "schema" in rf
                        else "json_object"}.get(rf.get("type"), "off")
                if mode in outer.reject_modes:
                    if outer.validation_500:
                        msg = ("1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', "
                               "'type'), 'msg': \"Input should be 'text' or 'json_object'\"}")
                        self._send(500, {"error": {"message": msg, "type": "internal_server_error"}})
                    else:
                        self._send(400, {"error": {"message": f"response_format {rf.get('type')} is not supported",
                                                   "type": "invalid_request_error"}})
                    return True
                if body.get("logprobs") and outer.reject_logprobs:
                    self._send(400, {"error": {"message": "logprobs are not supported", "type": "invalid_request_error"}})
                    return True
                return False

            def do_POST(self):
                if self.path.endswith(("/files", "/batches")):
                    return outer.batch_api_post(self)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                text = json.dumps(body.get("messages") or body.get("prompt"))
                if "louder preflight" in text:
                    with outer.lock:
                        outer.preflight_requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                    if not self._rejected(body):
                        self._answer(body, 0, preflight=True)
                    return
                with outer.lock:
                    outer.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                    n = len(outer.requests)
                    outer.active += 1
                    outer.max_active = max(outer.max_active, outer.active)
                try:
                    if outer.delay_s:
                        time.sleep(outer.delay_s)
                    if not self._rejected(body):
                        self._answer(body, n)
                finally:
                    with outer.lock:
                        outer.active -= 1

            def _answer(self, body, n, preflight=False):
                self._send(*outer.answer(self.path, body, n, preflight))

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, path: str, body: dict, n: int, preflight: bool = False) -> tuple[int, dict, dict]:
        """(status, JSON payload, headers) of one chat/completions request (``behaviour`` is not
        consulted for the preflight's own requests)."""
        chat = path.endswith("/chat/completions")
        prompt = body["messages"][-1]["content"] if chat else body.get("prompt", "")
        if isinstance(prompt, list):
            prompt = prompt[0]
        content = default_answer(prompt, body.get("seed", 0))
        if self.behaviour is not None and not preflight:
            override = self.behaviour(n, prompt, body)
            if isinstance(override, tuple):
                return override
            if override is not None:
                content = override
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(content.split()),
                 "total_tokens": len(prompt.split()) + len(content.split())}
        message, finish = {"role": "assistant", "content": content}, "stop"
        if self.reasoning and chat and not body.get("logprobs"):
            thinking = f"Let me think it over. One could answer {other_answer(content, prompt)}. Weighing it again."
            mode = self.reasoning
            if mode == "inline":
                message["content"] = f"<think>\n{thinking}\n</think>\n\n{content}"
            elif mode in ("reasoning_content", "reasoning"):
                message[mode] = thinking
                usage["completion_tokens"] += len(thinking.split())
                usage["completion_tokens_details"] = {"reasoning_tokens": len(thinking.split())}
            elif mode == "harmony":
                message["content"] = (f"<|channel|>analysis<|message|>{thinking}<|end|><|start|>assistant"
                                      f"<|channel|>final<|message|>{content}<|return|>")
            else:  # truncated: the thinking runs into max_tokens
                message["content"], finish = f"<think>\n{thinking} And then", "length"
        if chat:
            choice = {"index": 0, "finish_reason": finish, "message": message}
            if body.get("logprobs"):
                choice["logprobs"] = {"content": fake_logprobs(content, prompt)}
            return 200, {"id": f"c{n}", "object": "chat.completion", "created": 0, "model": "fake",
                         "choices": [choice], "usage": usage}, {}
        choice = {"index": 0, "finish_reason": "stop", "text": content, "logprobs": None}
        return 200, {"id": f"c{n}", "object": "text_completion", "created": 0, "model": "fake",
                     "choices": [choice], "usage": usage}, {}

    # --- a small OpenAI Batch API: files in, batches answered at once, files out ---

    def batch_api_post(self, h) -> None:
        data = h.rfile.read(int(h.headers.get("Content-Length", 0)))
        with self.lock:
            self.files = getattr(self, "files", {})
            self.batches = getattr(self, "batches", {})
        if h.path.endswith("/files"):
            import email.policy
            from email.parser import BytesParser

            msg = BytesParser(policy=email.policy.default).parsebytes(b"Content-Type: " + h.headers["Content-Type"].encode() + b"\r\n\r\n" + data)
            part = next(p for p in msg.iter_parts() if p.get_filename())
            fid = f"file-{len(self.files) + 1}"
            self.files[fid] = part.get_payload(decode=True)
            return h._send(200, {"id": fid, "object": "file", "bytes": len(self.files[fid]), "created_at": 0,
                                 "filename": part.get_filename(), "purpose": "batch", "status": "processed"})
        req = json.loads(data)
        out = []
        for i, line in enumerate(self.files[req["input_file_id"]].decode().splitlines()):
            item = json.loads(line)
            status, payload, _ = self.answer(item["url"], item["body"], i + 1)
            out.append(json.dumps({"id": f"batch_req_{i}", "custom_id": item["custom_id"],
                                   "response": {"status_code": status, "request_id": f"r{i}", "body": payload},
                                   "error": None}))
        oid = f"file-{len(self.files) + 1}"
        self.files[oid] = ("\n".join(out) + "\n").encode()
        bid = f"batch_{len(self.batches) + 1}"
        self.batches[bid] = {"id": bid, "object": "batch", "endpoint": req["endpoint"], "completion_window": "24h",
                             "created_at": 0, "input_file_id": req["input_file_id"], "status": "in_progress",
                             "output_file_id": oid, "error_file_id": None}
        h._send(200, self.batches[bid])

    def batch_api_get(self, h) -> None:
        if "/batches/" in h.path:
            b = self.batches[h.path.rsplit("/", 1)[-1]]
            # The first retrieve says in_progress was before; now it is done (``batch_outcome =
            # "expired"``: a batch that expired before answering anything has no output file).
            b["status"] = getattr(self, "batch_outcome", "completed")
            if b["status"] == "expired":
                b["output_file_id"] = None
            return h._send(200, b)
        data = self.files[h.path.split("/files/")[1].split("/")[0]]
        h.send_response(200)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def start(self):
        serve_in_background(self.httpd)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def serve_in_background(httpd) -> None:
    """Serve ``httpd`` (a ``socketserver`` server) on a daemon thread until ``httpd.shutdown()``. That call waits
    for the serving loop to see it, which the loop looks for every ``poll_interval``: 0.5 s by default, half a
    second of an idle worker at the end of each of the ~150 tests that serve; here 20 ms."""
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()


def main() -> None:
    """Serve from a process of its own (benchmarks): ``python fake_openai.py --decision-delay 0.2``.
    Prints the base URL on its first line of output."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--decision-delay", type=float, default=0.0, help="seconds before answering a decision")
    ap.add_argument("--fail-decisions", action="store_true", help="answer decisions with HTTP 500")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()

    def behaviour(n, prompt, body):
        if '"decision"' in prompt:
            if args.fail_decisions:
                return 500, {"error": {"message": "down", "type": "server_error"}}, {}
            if args.decision_delay:
                time.sleep(args.decision_delay)
        return None

    server = FakeOpenAIServer(behaviour=behaviour, port=args.port)
    server.httpd.request_queue_size = 256
    print(server.url, flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()
