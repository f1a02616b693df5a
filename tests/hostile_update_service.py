#!/usr/bin/env python3
"""A hostile (or broken) Cincinnati update service for the agent's fault tests.

Serves GET /graph on 127.0.0.1 (an ephemeral port, written to --port-file) with one of
these answers, chosen by the first line of --mode-file on every request (so a test can
switch it while the agent runs):

  good              4.1.0 -> 4.1.1, a valid small graph
  huge-message      one conditional edge from 4.1.0 whose risk message is 40 MiB
  duplicate-edges   the edge 4.1.0 -> 4.1.2 a million times
  many-risks        one conditional edge from 4.1.0 with 200,000 risks
  slow              a valid answer, one byte per second

Every answer stays under the agent's 64 MiB body limit: what is tested is what the
agent keeps of an answer it can read, not the transport's cap.
"""
import argparse
import http.server
import json
import socketserver
import time

NODES = [
    {"version": "4.1.0", "payload": "registry.example.com/ocp/release@sha256:" + "0" * 64,
     "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-4.1"}},
    {"version": "4.1.1", "payload": "registry.example.com/ocp/release@sha256:" + "1" * 64,
     "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-4.1"}},
    {"version": "4.1.2", "payload": "registry.example.com/ocp/release@sha256:" + "2" * 64,
     "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-4.1"}},
]


def risk(i, message="a risk"):
    return {"url": "https://example.com/risk/%d" % i, "name": "Risk%d" % i, "message": message,
            "matchingRules": [{"type": "Always"}]}


def answer(mode):
    if mode == "huge-message":
        return json.dumps({"nodes": NODES, "edges": [], "conditionalEdges": [
            {"edges": [{"from": "4.1.0", "to": "4.1.1"}], "risks": [risk(0, "x" * (40 << 20))]}]})
    if mode == "duplicate-edges":
        return '{"nodes": %s, "edges": [%s]}' % (json.dumps(NODES), ",".join(["[0,2]"] * 1000000))
    if mode == "many-risks":
        return json.dumps({"nodes": NODES, "edges": [], "conditionalEdges": [
            {"edges": [{"from": "4.1.0", "to": "4.1.1"}], "risks": [risk(i) for i in range(200000)]}]})
    return json.dumps({"nodes": NODES, "edges": [[0, 1]]})


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with open(self.server.mode_file) as f:
            mode = f.readline().strip()
        body = answer(mode).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if mode == "slow":
                for b in body:
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
                    time.sleep(1)
            else:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode-file", required=True)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.mode_file = args.mode_file
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
