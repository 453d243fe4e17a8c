# The job service of the relay tests (service "web").
#
# On $LEVERS9_WEB_PORT_HTTP (HTTP/1.1):
#   GET /big?n=N      N bytes, the byte at offset o being o % 251
#   GET /ws           a WebSocket echoing binary messages as they are and
#                     text messages upper-cased
#   GET /teapot...    418, else 200: a JSON echo of the request as the
#                     service saw it (path, host, prefix, credentials)
#   every answer sets the cookies levers9_session, levers9_relay_x, app
#   (Path=/) and scoped (Path=/sub, Domain=example.com).
# On $LEVERS9_WEB_PORT_ECHO: a TCP server echoing each line upper-cased.
import base64, hashlib, http.server, json, os, socketserver, struct, threading

BLOCK = bytes(i % 251 for i in range(251 * 4096))


class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line.upper())
            self.wfile.flush()


class Web(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def cookies(self):
        self.send_header("Set-Cookie", "levers9_session=stolen; Path=/")
        self.send_header("Set-Cookie", "levers9_relay_x=stolen; Path=/")
        self.send_header("Set-Cookie", "app=1; Path=/")
        self.send_header("Set-Cookie", "scoped=1; Path=/sub; Domain=example.com; HttpOnly")

    def do_GET(self):
        if self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        if self.path.startswith("/big"):
            n = int(self.path.split("n=", 1)[1])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            while n > 0:
                k = min(n, len(BLOCK))
                self.wfile.write(BLOCK[:k])
                n -= k
            return
        body = json.dumps({
            "path": self.path,
            "host": self.headers.get("Host"),
            "prefix": self.headers.get("X-Forwarded-Prefix"),
            "authorization": self.headers.get("Authorization"),
            "cookie": self.headers.get("Cookie"),
        }).encode()
        self.send_response(418 if self.path.startswith("/teapot") else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Service", "web")
        self.send_header("Service-Worker-Allowed", "/")
        self.send_header("Cache-Control", "public, max-age=60, s-maxage=600")
        self.cookies()
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def websocket(self):
        key = self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())
        self.cookies()
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        r, w = self.rfile, self.wfile
        while True:
            h = r.read(2)
            if len(h) < 2:
                return
            op, n = h[0] & 0x0F, h[1] & 0x7F
            if n == 126:
                n = struct.unpack(">H", r.read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", r.read(8))[0]
            mask = r.read(4) if h[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(r.read(n)))
            if op == 8:
                w.write(b"\x88\x02\x03\xe8")
                w.flush()
                return
            if op not in (1, 2):
                continue
            out = data.upper() if op == 1 else data
            if len(out) < 126:
                hdr = struct.pack(">BB", 0x80 | op, len(out))
            elif len(out) < 65536:
                hdr = struct.pack(">BBH", 0x80 | op, 126, len(out))
            else:
                hdr = struct.pack(">BBQ", 0x80 | op, 127, len(out))
            w.write(hdr + out)
            w.flush()


socketserver.ThreadingTCPServer.allow_reuse_address = True
echo = socketserver.ThreadingTCPServer(("127.0.0.1", int(os.environ["LEVERS9_WEB_PORT_ECHO"])), Echo)
echo.daemon_threads = True
threading.Thread(target=echo.serve_forever, daemon=True).start()
http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["LEVERS9_WEB_PORT_HTTP"])), Web).serve_forever()
