#!/usr/bin/python3
"""Which server files one request runs through, and which calls cross between them: the
measure behind the README's request-path section. A debug build of the server (-O0: nothing
inlined away) runs a model; once it is ready, gdb attaches with a non-stopping breakpoint on
every function of namespace embedding::server; one request is sent, and each hit between its
start and half a second after its answer is logged with its file and the file of the nearest
server function below it on the stack (through std::function and the worker pools' loops).
A call from one file into another is a crossing; a crossing into a file already entered is a
re-entry. Constructors, destructors and assignments are left out: they are a data type's
lifetime, not a step of the path.

usage: request_path.py [--build DIR] [--route grpc|openai|tei]...
  Builds DIR (default build-trace, CMAKE_BUILD_TYPE=Debug) for embedding_server and
  write_demo_model when missing. Prints, per route, the crossings in order, then the counts
  and the functions by which the door calls into the core and the core calls back the door.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from server_runner import ServerRunner  # noqa: E402

# Runs inside gdb: one breakpoint per function, each logging "time, caller's file, file,
# function" and never stopping, then "armed" so the driver knows to send.
GDB_SCRIPT = r'''
import gdb, os, re, subprocess, time
log = open(os.environ["TRACE_LOG"], "w", buffering=1)
server_sources = os.environ["TRACE_ROOT"] + "/server/"  # not the build's generated files

def source(frame):
    sal = frame.find_sal()
    return sal.symtab.filename if sal.symtab else "?"


class Hit(gdb.Breakpoint):
    def stop(self):
        frame = gdb.newest_frame()
        # The nearest server function below it: its caller, through std::function and
        # the worker pools' queues (a task's caller is the loop that runs it).
        caller = frame.older()
        while caller is not None and not source(caller).startswith(server_sources):
            caller = caller.older()
        called_from = source(caller) if caller is not None else "-"
        name = getattr(self, "label", None) or frame.name()
        log.write(f"{time.monotonic():.6f}\t{called_from}\t{source(frame)}\t{name}\n")
        return False

listing = gdb.execute("info functions ^embedding::server::", to_string=True)
current, places = None, set()
for line in listing.splitlines():
    if line.startswith("File "):
        current = line[5:].rstrip(":")
    elif current and current.startswith(server_sources) and (m := re.match(r"(\d+):", line)):
        places.add(f"{current}:{m.group(1)}")
# Lambdas are not in that listing: take their operator() from the symbol table.
binary = gdb.current_progspace().filename
mangled = subprocess.run(["nm", "--defined-only", binary], capture_output=True,
                         text=True).stdout.split("\n")
symbols = [line.split()[-1] for line in mangled if line.strip()]
names = subprocess.run(["c++filt"], input="\n".join(symbols), capture_output=True,
                       text=True).stdout.split("\n")
lambdas = {symbol: name for symbol, name in zip(symbols, names)
           if name.startswith("embedding::server::") and "{lambda" in name
           and "::operator()" in name}
for place in sorted(places):
    Hit(place, internal=True)
for symbol, name in lambdas.items():
    Hit(symbol, internal=True).label = name
log.write(f"armed {len(places)}\n")
gdb.execute("continue")
'''


def ensure_build(build):
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Debug"], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count()), "--target",
                    "embedding_server", "write_demo_model"], check=True, stdout=subprocess.DEVNULL)


def send(route, runner):
    text = "The quick brown fox jumps over the lazy dog."
    if route == "grpc":
        from embedding_client import EmbeddingClient
        client = EmbeddingClient(runner.grpc_address)
        return lambda: client.embed([text])
    path, body = {"openai": ("/v1/embeddings", {"input": [text], "model": "demo"}),
                  "tei": ("/embed", {"inputs": [text]})}[route]
    request = urllib.request.Request(f"http://{runner.openai_address}{path}",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    return lambda: urllib.request.urlopen(request, timeout=300).read()


def trace(route, build, model_dir, workdir):
    runner = ServerRunner(os.path.join(build, "server", "embedding_server"),
                          [f"--model=demo={model_dir}", "--openai-listen=127.0.0.1:0",
                           "--model_poll_interval_s=0", "--tokenizer_threads=1"], timeout=300)
    log_path = os.path.join(workdir, f"{route}.log")
    script = os.path.join(workdir, "trace.py")
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    gdb = None
    try:
        request = send(route, runner)  # reflection first: gdb stops the server while it arms
        gdb = subprocess.Popen(["gdb", "-q", "-batch", "-p", str(runner.process.pid), "-x",
                                script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "TRACE_LOG": log_path, "TRACE_ROOT": ROOT})
        while not (os.path.exists(log_path) and open(log_path).readline().startswith("armed")):
            time.sleep(0.2)
        time.sleep(1)  # gdb is past its `continue`
        start = time.monotonic()
        request()
        end = time.monotonic() + 0.5
        time.sleep(1)
    finally:
        runner.process.kill()
        if gdb is not None:
            gdb.wait()
        runner.stop()
    hits = []
    for line in open(log_path).read().splitlines()[1:]:
        stamp, caller, path, function = line.split("\t", 3)
        if start <= float(stamp) <= end:
            hits.append((os.path.relpath(caller, ROOT) if caller.startswith("/") else caller,
                         os.path.relpath(path, ROOT), function))
    return hits


def special_member(function):
    """Constructors, destructors and assignments: a data type's lifetime, not a step."""
    parts = function.split("(")[0].split("::")
    return len(parts) >= 2 and (parts[-1] == "operator="
                                or parts[-1].lstrip("~") == parts[-2].split("<")[0])


def short(function):
    """The name without argument lists: ServeEmbed::{lambda#2} for a lambda in ServeEmbed."""
    out, depth = [], 0
    for c in function:
        depth += c == "("
        if depth == 0:
            out.append(c)
        depth -= c == ")"
    name = "".join(out).replace("embedding::server::", "").replace("::operator", "")
    return re.sub(r"\{lambda#(\d+)\}", r"{lambda#\1}", name).replace(" const", "")


def calls(hits):
    """The calls that cross from one server file into another, in order. The reloader's own
    thread is left out: it polls on its own, not for the request."""
    return [(caller, path, short(function)) for caller, path, function in hits
            if caller != path and path.startswith("server/") and not special_member(function)
            and caller != "server/core/model_reloader.cc"]


def unit(path):
    """A header with a source file of its name counts as that file: one component."""
    source = path[:-2] + ".cc"
    return source if path.endswith(".h") and os.path.exists(os.path.join(ROOT, source)) else path


def folder(path):
    return path.split("/")[1] if path.startswith("server/") else "-"


def report(route, crossings):
    door = "grpc" if route == "grpc" else "http"
    print(f"== {route}")
    seen = []
    for caller, path, function in crossings:
        again = path in seen
        if not again:
            seen.append(path)
        print(f"  {'again ' if again else '      '}{caller} -> {path}  ({function})")
    into_core = sorted({f for c, p, f in crossings if folder(c) == door and folder(p) == "core"})
    back = sorted({f for c, p, f in crossings if folder(c) == "core" and folder(p) == door})
    units = {unit(f) for f in seen}
    print(f"calls {len(crossings)}, files {len(seen)} ({len(units)} with headers counted with "
          f"their .cc), re-entries {len(crossings) - len(seen)}, door files "
          f"{sum(1 for f in seen if folder(f) == door)} ({sum(1 for f in units if folder(f) == door)})")
    print(f"door files: {sorted(f for f in units if folder(f) == door)}")
    print(f"door -> core: {len(into_core)} {into_core}")
    print(f"core -> door: {len(back)} {back}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build-trace"))
    parser.add_argument("--route", action="append", choices=["grpc", "openai", "tei"])
    args = parser.parse_args()
    ensure_build(args.build)
    with tempfile.TemporaryDirectory() as workdir:
        model_dir = os.path.join(workdir, "model")
        subprocess.run([os.path.join(args.build, "model_store", "write_demo_model"),
                        f"--out={model_dir}"], check=True, stdout=subprocess.DEVNULL)
        for route in args.route or ["grpc", "openai", "tei"]:
            report(route, calls(trace(route, args.build, model_dir, workdir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
