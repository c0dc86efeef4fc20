"""An S3 server for tests/remote.rs: moto's server on 127.0.0.1, filled with files.

Usage: s3_server.py BUCKET KEY=FILE [KEY=FILE ...]
Starts moto's server (threaded) on a free port of 127.0.0.1, creates BUCKET, uploads each
FILE as KEY, prints "PORT <n>" and serves until stdin closes (the test holds it open).

It counts what it serves to every client together: GET requests and their body bytes.
`GET /__stats` answers {"requests": n, "bytes": n} as JSON, `GET /__reset` zeroes the
counts; neither is counted.
"""

import json
import logging
import sys
import threading

import boto3
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

logging.getLogger("werkzeug").setLevel(logging.ERROR)

counts = {"requests": 0, "bytes": 0}
counts_lock = threading.Lock()


def counting(app):
    """The moto app, with GETs and their body bytes counted (and /__stats, /__reset)."""

    def wrapped(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path in ("/__stats", "/__reset"):
            with counts_lock:
                if path == "/__reset":
                    counts["requests"] = counts["bytes"] = 0
                body = json.dumps(counts).encode()
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(body)))])
            return [body]
        result = app(environ, start_response)
        if environ.get("REQUEST_METHOD") != "GET":
            return result

        def counted():
            n = 0
            try:
                for chunk in result:
                    n += len(chunk)
                    yield chunk
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
                with counts_lock:
                    counts["requests"] += 1
                    counts["bytes"] += n

        return counted()

    return wrapped


server = make_server("127.0.0.1", 0, counting(DomainDispatcherApplication(create_backend_app)),
                     threaded=True)
thread = threading.Thread(target=server.serve_forever, daemon=True)
thread.start()
port = server.server_address[1]
s3 = boto3.client(
    "s3",
    endpoint_url=f"http://127.0.0.1:{port}",
    aws_access_key_id="test",
    aws_secret_access_key="test",
    region_name="us-east-1",
)
s3.create_bucket(Bucket=sys.argv[1])
for item in sys.argv[2:]:
    key, path = item.split("=", 1)
    s3.upload_file(path, sys.argv[1], key)
print(f"PORT {port}", flush=True)
sys.stdin.read()
server.shutdown()
