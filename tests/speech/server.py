"""The real speech engines the voice tests run, behind OpenAI's wire format, on 127.0.0.1.

POST /v1/audio/transcriptions  multipart `file` (Ogg/Opus or WAV) and `model` -> {"text": ...}
    recognised offline by pocketsphinx (its US English model); Ogg/Opus is decoded to 16 kHz
    mono by opusdec (Debian `opus-tools`).
POST /v1/audio/speech  JSON {"input", "voice", "response_format": "wav"} -> audio/wav
    spoken by espeak-ng (Debian), voice `en-us` at 150 words a minute.

Prints `port <n>` on stdout once it listens (argv[1]: the port, 0 for any), then serves until
killed. Each request is handled in full or answered with an OpenAI-style error.
"""

import json
import os
import subprocess
import sys
import tempfile
import wave
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pocketsphinx import Decoder

ESPEAK = ["espeak-ng", "-v", "en-us", "-s", "150", "--stdout"]


def recognise(audio: bytes) -> str:
    """The words pocketsphinx hears in `audio` (Ogg/Opus or 16 kHz mono 16-bit WAV)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "in")
        with open(source, "wb") as f:
            f.write(audio)
        pcm = source
        if audio.startswith(b"OggS"):
            pcm = os.path.join(tmp, "in.wav")
            subprocess.run(["opusdec", "--quiet", "--rate", "16000", source, pcm], check=True)
        with wave.open(pcm) as w:
            if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (16000, 1, 2):
                raise ValueError("WAV must be 16 kHz mono 16-bit")
            frames = w.readframes(w.getnframes())
    decoder = Decoder(loglevel="FATAL")
    decoder.start_utt()
    decoder.process_raw(frames, full_utt=True)
    decoder.end_utt()
    hyp = decoder.hyp()
    return hyp.hypstr if hyp else ""


def form_parts(content_type: str, body: bytes) -> dict:
    """The parts of a multipart/form-data body by field name: (filename, bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    )
    parts = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        parts[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return parts


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body: bytes, kind="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, message):
        body = {"error": {"message": message, "type": "invalid_request_error"}}
        self.answer(status, json.dumps(body).encode())

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            if self.path == "/v1/audio/transcriptions":
                parts = form_parts(self.headers.get("Content-Type", ""), body)
                if "file" not in parts or "model" not in parts:
                    return self.error(400, "file and model are required")
                text = recognise(parts["file"][1])
                return self.answer(200, json.dumps({"text": text}).encode())
            if self.path == "/v1/audio/speech":
                request = json.loads(body)
                if request.get("response_format", "mp3") != "wav":
                    return self.error(400, "only response_format wav is served here")
                spoken = subprocess.run(
                    ESPEAK, input=request["input"].encode(), capture_output=True, check=True
                )
                return self.answer(200, spoken.stdout, "audio/wav")
            return self.error(404, "no such route")
        except (ValueError, KeyError, subprocess.CalledProcessError, wave.Error) as e:
            return self.error(400, f"could not process the audio: {e}")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
