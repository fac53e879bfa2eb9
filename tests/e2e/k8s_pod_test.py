#!/usr/bin/python3
"""The dev overlay's pod, run as the kubelet would run it, on the real image (built by
docker/smoke_test.sh): the Deployment's image, command, arguments, environment (its ConfigMap
and the CPU limit through resourceFieldRef), ports, user, read-only root filesystem, dropped
capabilities, no privilege escalation, CPU and memory limits and emptyDir volumes. Then its
probes as the kubelet runs them (a gRPC health check on the probe port; HTTP GETs where a probe
uses them), an Embed, a check that nothing was written outside its volumes, and termination
as the kubelet does it: the preStop hook, then SIGTERM, with the grace period as the limit.

usage: k8s_pod_test.py EMBEDCTL
"""
import json
import math
import os
import socket
import subprocess
import sys
import time
import unittest
import urllib.request

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EMBEDCTL = None
NAME = f"embedding-k8s-pod-{os.getpid()}"


def docker(*args, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check)


def quantity(value):
    """A Kubernetes quantity as a number (cpu "500m" -> 0.5, memory "2Gi" -> bytes)."""
    value = str(value)
    for suffix, factor in (("m", 1e-3), ("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30)):
        if value.endswith(suffix):
            return float(value[:-len(suffix)]) * factor
    return float(value)


def render_pod():
    text = subprocess.run(["kubectl", "kustomize", os.path.join(ROOT, "deploy/k8s/overlays/dev")],
                          capture_output=True, text=True, check=True).stdout
    objects = [o for o in yaml.safe_load_all(text) if o]
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    config_maps = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ConfigMap"}
    return deployment["spec"]["template"]["spec"], config_maps


def docker_run_args(pod, config_maps):
    """`docker run` arguments equivalent to the pod's one container, as written."""
    (container,) = pod["containers"]
    security = {**pod.get("securityContext", {}), **container.get("securityContext", {})}
    args = ["run", "-d", "--name", NAME, "--network", "host",
            "--user", f"{security['runAsUser']}:{security['runAsGroup']}"]
    if security.get("readOnlyRootFilesystem"):
        args.append("--read-only")
    if security.get("capabilities", {}).get("drop") == ["ALL"]:
        args += ["--cap-drop", "ALL"]
    if security.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    assert security["seccompProfile"]["type"] == "RuntimeDefault"  # Docker's default profile
    limits = container["resources"]["limits"]
    args += ["--cpus", str(quantity(limits["cpu"])), "--memory", str(int(quantity(limits["memory"])))]
    env = {}
    for source in container.get("envFrom", []):
        env.update(config_maps[source["configMapRef"]["name"]]["data"])
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        else:
            field = var["valueFrom"]["resourceFieldRef"]
            assert field["resource"] == "limits.cpu", field
            # The kubelet rounds up to whole multiples of the divisor.
            env[var["name"]] = str(math.ceil(quantity(limits["cpu"]) / quantity(field.get("divisor", 1))))
    for key, value in env.items():
        args += ["-e", f"{key}={value}"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        assert "emptyDir" in volume, f"the dev pod only uses emptyDir volumes: {volume}"
        size = int(quantity(volume["emptyDir"].get("sizeLimit", "64Mi")))
        # The kubelet makes an emptyDir writable by everyone, group fsGroup. Docker 20.10 gives
        # a tmpfs over a folder of the image that folder's mode (755), whatever mode= says, so
        # the pod's user owns it here to have the same right.
        owner = f"uid={security['runAsUser']},gid={security.get('fsGroup', security['runAsGroup'])}"
        args += ["--tmpfs", f"{mount['mountPath']}:rw,size={size},mode=1777,{owner}"]
    if container.get("command"):
        args += ["--entrypoint", container["command"][0]]
    args.append(container["image"])
    args += container.get("command", [])[1:] + container.get("args", [])
    return args, container


def probe(container, spec):
    """One probe attempt as the kubelet makes it; True on success."""
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    timeout = spec.get("timeoutSeconds", 1)
    if "grpc" in spec:
        port = ports.get(spec["grpc"]["port"], spec["grpc"]["port"])
        return subprocess.run([EMBEDCTL, f"--address=127.0.0.1:{port}", f"--timeout-s={timeout}",
                               "health"], capture_output=True).returncode == 0
    get = spec["httpGet"]
    port = ports.get(get["port"], get["port"])
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{get.get('path', '/')}",
                                    timeout=timeout) as response:
            return 200 <= response.status < 400
    except OSError:
        return False


class DevPod(unittest.TestCase):
    def setUp(self):
        self.pod, config_maps = render_pod()
        args, self.container = docker_run_args(self.pod, config_maps)
        for port in self.container["ports"]:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port["containerPort"])) == 0:
                    self.skipTest(f"port {port['containerPort']} is taken on this host")
        docker(*args)
        self.addCleanup(docker, "rm", "-f", NAME, check=False)

    def test_pod_becomes_ready_serves_and_drains(self):
        startup = self.container["startupProbe"]
        for attempt in range(startup["failureThreshold"]):
            if probe(self.container, startup):
                break
            time.sleep(startup["periodSeconds"])
        else:
            self.fail("startup probe never passed:\n" + docker("logs", NAME).stderr)
        self.assertTrue(probe(self.container, self.container["readinessProbe"]), "readiness")
        self.assertTrue(probe(self.container, self.container["livenessProbe"]), "liveness")

        ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        out = subprocess.run([EMBEDCTL, f"--address=127.0.0.1:{ports['grpc']}", "embed", "a pod"],
                             capture_output=True, text=True, check=True).stdout
        grpc_vector = json.loads(out)["vector"]
        self.assertGreater(len(grpc_vector), 0)

        # The OpenAI-compatible endpoint on its port, with the same vector.
        request = urllib.request.Request(
            f"http://127.0.0.1:{ports['openai']}/v1/embeddings",
            data=json.dumps({"model": "demo", "input": "a pod"}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            openai_vector = json.load(response)["data"][0]["embedding"]
        self.assertEqual(len(openai_vector), len(grpc_vector))
        for got, want in zip(openai_vector, grpc_vector):
            self.assertAlmostEqual(got, want, delta=1e-6)

        # Nothing written outside the volumes (the root filesystem is read-only as well).
        self.assertEqual(docker("diff", NAME).stdout.strip(), "")

        # Termination as the kubelet does it: preStop, then SIGTERM; the grace period bounds both.
        grace = self.pod["terminationGracePeriodSeconds"]
        start = time.time()
        docker("exec", NAME, *self.container["lifecycle"]["preStop"]["exec"]["command"])
        docker("kill", "--signal=TERM", NAME)
        code = docker("wait", NAME).stdout.strip()
        self.assertEqual(code, "0", docker("logs", NAME).stderr[-2000:])
        self.assertLess(time.time() - start, grace)


if __name__ == "__main__":
    EMBEDCTL = sys.argv.pop(1)
    unittest.main()
