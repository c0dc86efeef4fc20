"""An S3 server for tests/remote.rs: moto's server on 127.0.0.1, filled with files.

Usage: s3_server.py BUCKET KEY=FILE [KEY=FILE ...]
Starts moto's threaded server on a free port of 127.0.0.1, creates BUCKET, uploads each
FILE as KEY, prints "PORT <n>" and serves until stdin closes (the test holds it open).
"""

import logging
import sys

import boto3
from moto.server import ThreadedMotoServer

logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
port = server.get_host_and_port()[1]
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
server.stop()
