"""An HTTP server for tests/remote.rs: serves the files under a directory with Range
(bytes=a-b, bytes=a-, bytes=-n), HEAD, ETag and If-Match, counts the requests and body
bytes it sends, and injects faults on request. Standard library only; 127.0.0.1 only.

Usage: range_server.py DIR    (prints "PORT <n>" once listening, serves until killed)

Control (not counted):
  GET /__stats            -> {"requests": n, "bytes": n}
  GET /__reset            -> zeroes the counts and clears faults
  GET /__fault?kind=K&count=N (or /__fault/K/N) -> the next N file GETs get fault K:
      drop         close the connection without answering
      truncate     send the headers for the whole range, half the body, then close
      short        a 206 whose Content-Range is right but whose body is half as long
      wrong_range  a 206 for the range shifted by one byte
      full         ignore the Range header: 200 with the whole file
      status:NNN   answer with status NNN
      page:NNN     answer with status NNN and a 100 KB HTML page (ends "END-OF-PAGE")
      endless      a 206 whose Content-Range is right, Content-Length 10^12, then zeros
                   until the client closes the connection
      endless_page:NNN  status NNN, Content-Length 10^12, then HTML until the client
                   closes the connection
      long         a 206 whose Content-Range is right but whose body (and
                   Content-Length) is twice as long
Files under private/ need "Authorization: Bearer $RANGE_SERVER_TOKEN"; files under
signed/ need the query "sig=$RANGE_SERVER_TOKEN" (as a presigned URL carries its
signature). /__stats also counts the GETs of each file ("paths": {path: n}).
"""

import http.server
import json
import os
import re
import sys
import threading
import urllib.parse

ROOT = os.path.abspath(sys.argv[1])
TOKEN = os.environ.get("RANGE_SERVER_TOKEN", "")
LOCK = threading.Lock()
STATS = {"requests": 0, "bytes": 0, "paths": {}}
FAULTS = []  # kinds, consumed one per file GET


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def control(self, path, query):
        global FAULTS
        with LOCK:
            if path == "/__stats":
                body = json.dumps(STATS).encode()
            elif path == "/__reset":
                STATS["requests"] = STATS["bytes"] = 0
                STATS["paths"] = {}
                FAULTS = []
                body = b"{}"
            else:
                parts = path.split("/")
                if len(parts) == 4:  # /__fault/KIND/COUNT: for clients that drop queries
                    kind, count = parts[2], int(parts[3])
                else:
                    kind, count = query["kind"][0], int(query.get("count", ["1"])[0])
                FAULTS.extend([kind] * count)
                body = b"{}"
        self.reply(200, body, [("Content-Type", "application/json")])

    def do_HEAD(self):
        self.serve()

    def do_GET(self):
        self.serve()

    def serve(self):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        if path.startswith("/__"):
            if self.command != "GET":
                return self.reply(405, b"control paths take GET")
            return self.control(path, urllib.parse.parse_qs(url.query))
        if path.startswith("/private/") and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.reply(401, b"no token")
        if path.startswith("/signed/") and urllib.parse.parse_qs(url.query).get("sig") != [TOKEN]:
            return self.reply(403, b"no signature")
        file = os.path.normpath(os.path.join(ROOT, path.lstrip("/")))
        if not file.startswith(ROOT + os.sep) or not os.path.isfile(file):
            return self.reply(404, b"not found")
        st = os.stat(file)
        size = st.st_size
        etag = f'"{size}-{st.st_mtime_ns}"'
        fault = None
        with LOCK:
            if self.command == "GET":
                STATS["requests"] += 1
                STATS["paths"][path] = STATS["paths"].get(path, 0) + 1
                if FAULTS:
                    fault = FAULTS.pop(0)
        match = self.headers.get("If-Match")
        if match is not None and match != etag and match != "*":
            return self.reply(412, b"precondition failed")
        if fault == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if fault and fault.startswith("status:"):
            return self.reply(int(fault[7:]), b"injected")
        if fault and fault.startswith("page:"):
            page = b"<html><body>" + b"<p>There is nothing here.</p>\n" * 3400 + b"END-OF-PAGE</body></html>"
            return self.reply(int(fault[5:]), page, [("Content-Type", "text/html")])
        if fault and fault.startswith("endless_page:"):
            self.send_response(int(fault[13:]))
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(10**12))
            self.end_headers()
            return self.endless(b"<p>There is nothing here.</p>\n" * 2048)
        start, end, status = 0, size, 200
        rng = self.headers.get("Range")
        if rng and fault != "full":
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if not m or (m.group(1) == "" and m.group(2) == ""):
                return self.reply(416, b"bad range")
            if m.group(1) == "":
                start = max(0, size - int(m.group(2)))
            else:
                start = int(m.group(1))
                if m.group(2) != "":
                    end = min(size, int(m.group(2)) + 1)
            if start >= size or start >= end:
                return self.reply(416, b"", [("Content-Range", f"bytes */{size}")])
            status = 206
        if fault == "wrong_range" and status == 206:
            shift = 1 if end < size else -1
            start, end = start + shift, end + shift
        with open(file, "rb") as f:
            f.seek(start)
            body = f.read(end - start) if self.command == "GET" else b""
        headers = [("ETag", etag), ("Accept-Ranges", "bytes")]
        if status == 206:
            headers.append(("Content-Range", f"bytes {start}-{end - 1}/{size}"))
        if fault == "endless":
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(10**12))
            self.end_headers()
            return self.endless(bytes(64 << 10))
        if fault == "long":
            body = body + bytes(len(body))
        if fault == "short":
            body = body[: len(body) // 2]
        length = len(body) if fault in ("short", "long") else end - start
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if self.command == "HEAD":
            return
        if fault == "truncate":
            body = body[: len(body) // 2]
            self.close_connection = True
        # Counted before it is sent: the client may ask for the counts as soon as it has
        # the body, before this thread runs again.
        with LOCK:
            STATS["bytes"] += len(body)
        self.wfile.write(body)
        if fault == "truncate":
            self.wfile.flush()
            self.connection.shutdown(2)


    def endless(self, chunk):
        """Sends `chunk` over and over until the client goes away (counted as sent)."""
        self.close_connection = True
        try:
            while True:
                self.wfile.write(chunk)
                with LOCK:
                    STATS["bytes"] += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
