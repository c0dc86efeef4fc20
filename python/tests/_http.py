"""A small HTTP server with Range requests, run in a thread of the test process itself
(127.0.0.1 only): HEAD, GET of bytes=a-b / a- / -n, an ETag, request counts."""

import http.server
import os
import re
import threading


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self._serve()

    def do_GET(self):
        self._serve()

    def _serve(self):
        server = self.server
        with server.lock:
            server.requests += self.command == "GET"
        path = os.path.join(server.root, self.path.split("?", 1)[0].lstrip("/"))
        if not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = os.path.getsize(path)
        start, end, status = 0, size, 200
        rng = self.headers.get("Range")
        if rng:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if m.group(1) == "":
                start = max(0, size - int(m.group(2)))
            else:
                start = int(m.group(1))
                if m.group(2):
                    end = min(size, int(m.group(2)) + 1)
            status = 206
        self.send_response(status)
        self.send_header("ETag", f'"{size}-{os.stat(path).st_mtime_ns}"')
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.send_header("Content-Length", str(end - start))
        self.end_headers()
        if self.command == "GET":
            with open(path, "rb") as f:
                f.seek(start)
                self.wfile.write(f.read(end - start))


class RangeServer:
    """`with RangeServer(directory) as s:` serves the directory at s.url."""

    def __init__(self, root):
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.root = str(root)
        self._server.lock = threading.Lock()
        self._server.requests = 0
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def requests(self):
        return self._server.requests

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
