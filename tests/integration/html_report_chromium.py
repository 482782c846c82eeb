#!/usr/bin/env python3
# What: renders an HTML report in headless Chromium and fails when
#   - the screenshot is blank: `chromium --headless=new --screenshot --window-size=1280,2000`; the
#     PNG is decoded here (chunks + zlib + scanline filters) and its distinct colours and share
#     of non-white pixels counted;
#   - the page made any network request or logged anything to the console: a second load through
#     the DevTools protocol over a pipe (--remote-debugging-pipe, no websocket needed) records the
#     page's own Network.requestWillBeSent events and its Runtime/Log console entries (CSP
#     violations are console errors); the first run's stderr (--enable-logging=stderr --v=0) is
#     also searched for CONSOLE lines.
#   Both runs resolve every host name to nothing (--host-resolver-rules), so nothing can leave.
#   Why not a recording proxy: Chromium's own background services (component updater, sign-in)
#   connect through any configured proxy too, and their HTTPS CONNECTs cannot be told apart from
#   a page's; the DevTools events belong to the page's target only.
# Before judging the report it proves each detector fires on a page built to trip it, so the
# test cannot pass by detecting nothing.
# Usage: html_report_chromium.py REPORT.html [--screenshot OUT.png]
# Exit: 0 pass, 1 fail, 77 skip (no chromium: scripts/install-deps --test installs it).
# Stdlib only (any python3).
import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SKIP = 77

QUIET_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--no-first-run", "--no-default-browser-check",
    "--disable-features=NetworkTimeServiceQuerying,Translate,MediaRouter,OptimizationHints",
]


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


# ---- run A: the plain --screenshot run ----------------------------------------------------------

def screenshot(chromium, html, png, profile_dir):
    args = [chromium, "--headless=new", "--screenshot=" + png, "--window-size=1280,2000",
            "--enable-logging=stderr", "--v=0", "--user-data-dir=" + profile_dir] + QUIET_FLAGS + [
            "file://" + os.path.abspath(html)]
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    log = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
    return proc.returncode, log, [line for line in log.splitlines() if "CONSOLE" in line]


# ---- run B: DevTools protocol over --remote-debugging-pipe (fd 3 in, fd 4 out) -----------------

class Cdp:
    def __init__(self, chromium, profile_dir):
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        parent_ends = (self.to_child, self.from_child)

        def wire():  # in the child: the protocol wants fd 3 (commands) and fd 4 (replies)
            cmd_in = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)  # above 4, so the dup2s below cannot clash
            reply_out = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            for fd in (to_child_r, from_child_w) + parent_ends:
                os.close(fd)
            os.dup2(cmd_in, 3)
            os.dup2(reply_out, 4)
            os.close(cmd_in)
            os.close(reply_out)

        args = [chromium, "--headless=new", "--remote-debugging-pipe", "--user-data-dir=" + profile_dir] + \
            QUIET_FLAGS + ["about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=wire, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_child], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply is None:
                raise RuntimeError("no reply to %s" % method)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self.events.append(reply)

    def pump(self, seconds):
        deadline = time.monotonic() + seconds
        while True:
            msg = self._read_message(deadline)
            if msg is None:
                return
            self.events.append(msg)

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_child)
        os.close(self.from_child)


def load_and_watch(chromium, html, profile_dir):
    """Returns (requests, console) of the page's own target."""
    cdp = Cdp(chromium, profile_dir)
    try:
        target = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Runtime", "Log", "Page"):
            cdp.call(domain + ".enable", session=session)
        cdp.call("Emulation.setDeviceMetricsOverride",
                 {"width": 1280, "height": 2000, "deviceScaleFactor": 1, "mobile": False}, session=session)
        url = "file://" + os.path.abspath(html)
        cdp.call("Page.navigate", {"url": url}, session=session)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
                e.get("method") == "Page.loadEventFired" and e.get("sessionId") == session for e in cdp.events):
            cdp.pump(0.2)
        cdp.pump(1.0)  # late requests or messages after load
    finally:
        cdp.close()
    requests, console = [], []
    for e in cdp.events:
        if e.get("sessionId") != session:
            continue
        m, p = e.get("method"), e.get("params", {})
        if m == "Network.requestWillBeSent":
            u = p.get("request", {}).get("url", "")
            if u != url:
                requests.append(u)
        elif m == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            console.append("console.%s: %s" % (p.get("type"), text))
        elif m == "Runtime.exceptionThrown":
            console.append("exception: %s" % p.get("exceptionDetails", {}).get("text", ""))
        elif m == "Log.entryAdded":
            entry = p.get("entry", {})
            if entry.get("level") in ("error", "warning"):
                console.append("%s (%s): %s" % (entry.get("level"), entry.get("source"), entry.get("text")))
    return requests, console


# ---- PNG decoding --------------------------------------------------------------------------------

def decode_png(data):
    """Returns (width, height, channels, rows) with rows as bytes, filters undone."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height, channels = 8, [], 0, 0, 0
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if ctype == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace != 0 or color not in (2, 6):
                raise ValueError("unsupported PNG (depth %d, colour type %d, interlace %d)" % (depth, color, interlace))
            channels = 3 if color == 2 else 4
        elif ctype == b"IDAT":
            idat.append(body)
        elif ctype == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        ftype = raw[start]
        line = bytearray(raw[start + 1:start + 1 + stride])
        if ftype == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif ftype == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif ftype == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = prev[i]
                c = prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else (b if pb <= pc else c))) & 255
        elif ftype != 0:
            raise ValueError("bad PNG filter %d" % ftype)
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def image_stats(data):
    w, h, ch, rows = decode_png(data)
    colours, non_white, sampled = set(), 0, 0
    for row in rows[::4]:  # every 4th row and column tells a page from a blank one
        for x in range(0, w * ch, 4 * ch):
            px = row[x:x + 3]
            colours.add(px)
            non_white += px != b"\xff\xff\xff"
            sampled += 1
    return w, h, len(colours), non_white / max(1, sampled)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def verdict(failures, passed):
    """Prints each failure and returns 1, or prints the PASS line and returns 0 (the exit code)."""
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print("PASS: " + passed)
    return 0


def main():
    if len(sys.argv) < 2:
        print("usage: html_report_chromium.py REPORT.html [--screenshot OUT.png]")
        return 1
    report = sys.argv[1]
    keep = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--screenshot" else None
    chromium = find_chromium()
    if not chromium:
        print("SKIP: chromium not installed (scripts/install-deps --test installs it)")
        return SKIP
    if not os.path.exists(report):
        print("FAIL: no report at %s" % report)
        return 1
    work = tempfile.mkdtemp(prefix="gaccum-html-")
    failures = []
    try:
        # 1. Every detector fires on a page built to trip it.
        blank = os.path.join(work, "blank.html")
        write(blank, "<!DOCTYPE html><html><body></body></html>")
        rc, _, _ = screenshot(chromium, blank, os.path.join(work, "blank.png"), os.path.join(work, "p0"))
        with open(os.path.join(work, "blank.png"), "rb") as f:
            _, _, colours, ink = image_stats(f.read())
        if colours >= 16 or ink >= 0.02:
            failures.append("self-test: a blank page was not judged blank (%d colours)" % colours)
        leaky = os.path.join(work, "leaky.html")
        write(leaky, '<!DOCTYPE html><html><body><p>leak</p><img src="http://example.invalid/x.png">'
                     '<script>console.error("boom")</script></body></html>')
        reqs, cons = load_and_watch(chromium, leaky, os.path.join(work, "p1"))
        if not any("example.invalid" in r for r in reqs):
            failures.append("self-test: a page loading http://example.invalid/x.png recorded no request")
        if not any("boom" in c for c in cons):
            failures.append("self-test: console.error('boom') was not recorded")
        csp = os.path.join(work, "csp.html")
        write(csp, '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src '
                   '\'none\'"></head><body><p>x</p><img src="http://example.invalid/y.png"><script>1</script>'
                   '</body></html>')
        _, _, stderr_console = screenshot(chromium, csp, os.path.join(work, "csp.png"), os.path.join(work, "p2"))
        _, cons = load_and_watch(chromium, csp, os.path.join(work, "p3"))
        if not cons:
            failures.append("self-test: a CSP violation was not recorded through DevTools")
        if not stderr_console:
            print("note: this Chromium does not print CONSOLE lines on stderr for CSP violations; DevTools covers it")

        # 2. The report.
        png = keep or os.path.join(work, "report.png")
        rc, log, stderr_console = screenshot(chromium, report, png, os.path.join(work, "p4"))
        if rc != 0 or not os.path.exists(png):
            failures.append("chromium exited %d without a screenshot; log tail:\n%s" % (rc, log[-2000:]))
        else:
            with open(png, "rb") as f:
                w, h, colours, ink = image_stats(f.read())
            print("screenshot %dx%d: %d distinct colours, %.1f%% non-white pixels" % (w, h, colours, ink * 100))
            if (w, h) != (1280, 2000):
                failures.append("screenshot is %dx%d, expected 1280x2000" % (w, h))
            if colours < 16 or ink < 0.02:
                failures.append("screenshot looks blank (%d colours, %.2f%% non-white)" % (colours, ink * 100))
        reqs, cons = load_and_watch(chromium, report, os.path.join(work, "p5"))
        print("page network requests: %d; console entries: %d (DevTools) + %d (stderr)" %
              (len(reqs), len(cons), len(stderr_console)))
        failures += ["network request from the report: " + r for r in reqs]
        failures += ["console: " + c for c in cons + stderr_console]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return verdict(failures, "the report renders, makes no network request and logs nothing to the console")


if __name__ == "__main__":
    sys.exit(main())
