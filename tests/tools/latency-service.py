#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small service under a steady load that exports its own request latency
as a Prometheus histogram, for trials judged by an application's metric.

    latency-service.py PORT [--workers N] [--rate R] [--work-us U]

N worker threads take "requests" from a queue fed R times a second; each
request burns about U microseconds of CPU. Its latency (queued to done) is
observed into app_request_duration_seconds, served with a requests counter
on http://127.0.0.1:PORT/metrics. Prints "ready PORT" once it listens.
"""
import argparse
import http.server
import queue
import threading
import time

BOUNDS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]


class Histogram:
    def __init__(self):
        self.lock = threading.Lock()
        self.buckets = [0] * len(BOUNDS)
        self.count = 0
        self.sum = 0.0

    def observe(self, v):
        with self.lock:
            for i, b in enumerate(BOUNDS):
                if v <= b:
                    self.buckets[i] += 1
            self.count += 1
            self.sum += v

    def render(self):
        with self.lock:
            lines = [
                "# HELP app_request_duration_seconds Time from a request's arrival to its answer.",
                "# TYPE app_request_duration_seconds histogram",
            ]
            for b, n in zip(BOUNDS, self.buckets):
                lines.append(f'app_request_duration_seconds_bucket{{le="{b}"}} {n}')
            lines.append(f'app_request_duration_seconds_bucket{{le="+Inf"}} {self.count}')
            lines.append(f"app_request_duration_seconds_sum {self.sum:.9f}")
            lines.append(f"app_request_duration_seconds_count {self.count}")
            lines.append("# TYPE app_requests_total counter")
            lines.append(f"app_requests_total {self.count}")
            return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rate", type=float, default=400)
    ap.add_argument("--work-us", type=float, default=1500)
    a = ap.parse_args()

    hist = Histogram()
    q = queue.Queue()

    def worker():
        while True:
            t0 = q.get()
            end = time.perf_counter() + a.work_us / 1e6
            while time.perf_counter() < end:
                pass
            hist.observe(time.perf_counter() - t0)

    def feeder():
        period = 1.0 / a.rate
        nxt = time.perf_counter()
        while True:
            q.put(time.perf_counter())
            nxt += period
            time.sleep(max(0.0, nxt - time.perf_counter()))

    for _ in range(a.workers):
        threading.Thread(target=worker, daemon=True).start()
    threading.Thread(target=feeder, daemon=True).start()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != "/metrics":
                self.send_error(404)
                return
            body = hist.render().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    print(f"ready {a.port}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
