#!/usr/bin/python3
"""The Kubernetes manifests, checked with no cluster: every overlay renders (kubectl kustomize,
offline), every object validates against the API schemas (tests/e2e/k8s/validate.js), and the
pieces agree with each other and with the server: probe and Service ports are container ports,
selectors select the pods, the HPA and PDB target the Deployment, the flags ConfigMap holds
only variables the server reads (asked of the server's own --helpfull), the drain fits the
grace period, and the PrometheusRule and dashboard ConfigMap equal deploy/prometheus and
deploy/grafana.

usage: k8s_manifests_test.py EMBEDDING_SERVER_BINARY
"""
import glob
import json
import math
import os
import re
import subprocess
import sys
import unittest

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
K8S = os.path.join(ROOT, "deploy", "k8s")
OVERLAYS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(K8S, "overlays", "*")))
SERVER = None


def render(overlay):
    out = subprocess.run(["kubectl", "kustomize", os.path.join(K8S, "overlays", overlay)],
                         capture_output=True, text=True, check=True)
    return out.stdout, [o for o in yaml.safe_load_all(out.stdout) if o]


def one(objects, kind, name=None):
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''}"
    return found[0]


def read(path):
    with open(path) as f:
        return f.read()


def server_env_names():
    """EMBEDDING_<FLAG> for every flag defined in server/app/server_options.cc, per the server."""
    out = subprocess.run([SERVER, "--helpfull"], capture_output=True, text=True)
    text = out.stdout + out.stderr
    section = text[text.index("server/app/server_options.cc"):]
    section = section[:section.find("\n\n  Flags from") if "\n\n  Flags from" in section else None]
    flags = re.findall(r"^\s+--(\w+) ", section, re.M)
    assert "dtype" in flags and "threads" in flags, flags
    return {"EMBEDDING_" + f.upper() for f in flags} | {"EMBEDDING_MODELS"}


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


class Overlay(unittest.TestCase):
    def check(self, overlay):
        text, objects = render(overlay)
        subprocess.run(["node", os.path.join(ROOT, "tests", "e2e", "k8s", "validate.js"), "/dev/stdin"],
                       input=text, text=True, check=True, capture_output=True)
        deployment = one(objects, "Deployment")
        pod = deployment["spec"]["template"]
        pod_labels = pod["metadata"]["labels"]
        self.assertTrue(matches(deployment["spec"]["selector"]["matchLabels"], pod_labels))
        container = one([dict(c, kind="c", metadata={"name": c["name"]})
                         for c in pod["spec"]["containers"]], "c", "server")
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        port_values = set(ports) | set(ports.values())

        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            spec = container[probe]
            handler = spec.get("grpc") or spec.get("httpGet") or spec.get("tcpSocket")
            self.assertIn(handler["port"], port_values, probe)
        self.assertIn("grpc", container["livenessProbe"])
        self.assertIn("grpc", container["readinessProbe"])

        for service in (o for o in objects if o["kind"] == "Service"):
            self.assertTrue(matches(service["spec"]["selector"], pod_labels),
                            service["metadata"]["name"])
            for p in service["spec"]["ports"]:
                self.assertIn(p["targetPort"], port_values, service["metadata"]["name"])
        headless = [o for o in objects if o["kind"] == "Service"
                    and o["spec"].get("clusterIP") == "None"]
        self.assertEqual(len(headless), 1)

        for kind in ("HorizontalPodAutoscaler",):
            target = one(objects, kind)["spec"]["scaleTargetRef"]
            self.assertEqual((target["kind"], target["name"]),
                             ("Deployment", deployment["metadata"]["name"]))
        self.assertTrue(matches(one(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
                                pod_labels))
        policy = one(objects, "NetworkPolicy")
        self.assertTrue(matches(policy["spec"]["podSelector"]["matchLabels"], pod_labels))
        for rule in policy["spec"]["ingress"]:
            for p in rule["ports"]:
                self.assertIn(p["port"], port_values)

        monitor = one(objects, "ServiceMonitor")
        monitored = [s for s in objects if s["kind"] == "Service"
                     and matches(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]
        self.assertTrue(any(p["name"] == monitor["spec"]["endpoints"][0]["port"]
                            for s in monitored for p in s["spec"]["ports"]))
        # The alert rules expect job="embedding".
        self.assertEqual(monitored[0]["metadata"]["labels"][monitor["spec"]["jobLabel"]], "embedding")

        # The flags: every variable is one the server reads, the ConfigMap is the one the pod
        # loads, and the thread count comes from the CPU limit.
        known = server_env_names()
        flags = one(objects, "ConfigMap", container["envFrom"][0]["configMapRef"]["name"])
        for name in list(flags["data"]) + [e["name"] for e in container.get("env", [])]:
            self.assertIn(name, known, f"{name} is no flag of the server")
        # Every listener the flags open is a named container port, and the Service offers
        # every container port.
        for name, value in flags["data"].items():
            if name.endswith("_LISTEN"):
                self.assertIn(int(value.rsplit(":", 1)[1]), ports.values(), name)
        self.assertIn("EMBEDDING_OPENAI_LISTEN", flags["data"])
        cluster_ip = [o for o in objects if o["kind"] == "Service"
                      and o["spec"].get("clusterIP") != "None"]
        self.assertEqual({p["targetPort"] for s in cluster_ip for p in s["spec"]["ports"]},
                         set(ports))
        # Replicas agree: one named dtype (auto would measure per node), and bf16 only where
        # every pod lands on a node that has it.
        self.assertIn(flags["data"]["EMBEDDING_DTYPE"], {"fp32", "bf16", "int8"})
        self.assertIn("EMBEDDING_DTYPE=", read(os.path.join(ROOT, "deploy", "k8s", "overlays",
                                                            overlay, "kustomization.yaml")))
        if flags["data"]["EMBEDDING_DTYPE"] == "bf16" and "EMBEDDING_DEVICE" not in flags["data"]:
            self.assertEqual(pod["spec"]["nodeSelector"]
                             ["feature.node.kubernetes.io/cpu-cpuid.AVX512BF16"], "true")
        threads = next(e for e in container["env"] if e["name"] == "EMBEDDING_THREADS")
        self.assertEqual(threads["valueFrom"]["resourceFieldRef"]["resource"], "limits.cpu")
        self.assertIn("cpu", container["resources"]["limits"])

        # SIGKILL never cuts a drain short: preStop + drain timeout fit in the grace period.
        pre_stop = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
        drain = float(flags["data"]["EMBEDDING_DRAIN_TIMEOUT_S"])
        self.assertGreater(pod["spec"]["terminationGracePeriodSeconds"], pre_stop + drain)
        # Liveness does not restart a pod that is draining (NOT_SERVING for up to the drain).
        live = container["livenessProbe"]
        self.assertGreater(live["periodSeconds"] * live["failureThreshold"], drain)

        security = container["securityContext"]
        self.assertFalse(security["allowPrivilegeEscalation"])
        self.assertTrue(security["readOnlyRootFilesystem"])
        self.assertEqual(security["capabilities"]["drop"], ["ALL"])
        self.assertTrue(pod["spec"]["securityContext"]["runAsNonRoot"])
        self.assertEqual(pod["spec"]["securityContext"]["seccompProfile"]["type"], "RuntimeDefault")

        # The same rules and dashboards as outside Kubernetes.
        groups = []
        for path in sorted(glob.glob(os.path.join(ROOT, "deploy", "prometheus", "rules", "*.yml"))):
            groups += yaml.safe_load(read(path))["groups"]
        self.assertEqual(one(objects, "PrometheusRule")["spec"]["groups"], groups)
        dashboards = [o for o in objects if o["kind"] == "ConfigMap"
                      and o["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
        self.assertEqual(len(dashboards), 1)
        for path in glob.glob(os.path.join(ROOT, "deploy", "grafana", "dashboards", "*.json")):
            self.assertEqual(json.loads(dashboards[0]["data"][os.path.basename(path)]),
                             json.loads(read(path)))
        return objects

    def test_dev(self):
        objects = self.check("dev")
        self.assertEqual(one(objects, "Deployment")["spec"]["replicas"], 1)

    def test_production(self):
        objects = self.check("production")
        deployment = one(objects, "Deployment")
        self.assertGreaterEqual(deployment["spec"]["replicas"], 3)
        self.assertIn("@sha256:", deployment["spec"]["template"]["spec"]["containers"][0]["image"])
        anti = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
        self.assertEqual(anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"],
                         "kubernetes.io/hostname")
        flags = [o for o in objects if o["kind"] == "ConfigMap" and "EMBEDDING_DTYPE" in o.get("data", {})]
        self.assertEqual(flags[0]["data"]["EMBEDDING_DTYPE"], "bf16")
        claim = one(objects, "PersistentVolumeClaim")["metadata"]["name"]
        volumes = deployment["spec"]["template"]["spec"]["volumes"]
        self.assertIn(claim, [v.get("persistentVolumeClaim", {}).get("claimName") for v in volumes])

    def test_init_container_models(self):
        # `embedctl pull` fills the cache the server then reads offline: the same models
        # (EMBEDDING_MODELS from one ConfigMap), the same cache path, the same volume.
        objects = self.check("init-container-models")
        pod = one(objects, "Deployment")["spec"]["template"]["spec"]
        init, server = pod["initContainers"][0], pod["containers"][0]
        self.assertEqual(init["command"], ["embedctl", "pull", "$(EMBEDDING_MODELS)"])
        self.assertEqual(init["image"], server["image"])
        flags = init["envFrom"][0]["configMapRef"]["name"]
        self.assertEqual(flags, server["envFrom"][0]["configMapRef"]["name"])
        data = next(o for o in objects if o["kind"] == "ConfigMap"
                    and o["metadata"]["name"] == flags)["data"]
        self.assertRegex(data["EMBEDDING_MODELS"], r"^\w+=[\w.-]+/[\w.-]+@\w+$")
        mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
        self.assertEqual(mounts, {m["name"]: m["mountPath"] for m in server["volumeMounts"]
                                  if m["name"] in mounts})
        self.assertEqual(list(mounts.values()), [data["EMBEDDING_HUB_CACHE_DIR"]])
        self.assertIn({"name": "HF_HUB_CACHE", "value": "$(EMBEDDING_HUB_CACHE_DIR)"}, init["env"])
        self.assertEqual(data["EMBEDDING_HUB_OFFLINE"], "true")

    def test_gpu(self):
        # One whole GPU per pod, on GPU nodes only, through their taint; the device named (a
        # pod without its GPU fails at start) with bf16, which the GPU multiplies natively.
        objects = self.check("gpu")
        pod = one(objects, "Deployment")["spec"]["template"]["spec"]
        server = pod["containers"][0]
        self.assertEqual(server["resources"]["limits"]["nvidia.com/gpu"], 1)
        self.assertNotIn("nvidia.com/gpu", server["resources"].get("requests", {}))
        self.assertEqual(pod["nodeSelector"], {"nvidia.com/gpu.present": "true"})
        self.assertIn({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                      pod["tolerations"])
        self.assertIn("-cuda", server["image"])
        flags = one(objects, "ConfigMap", server["envFrom"][0]["configMapRef"]["name"])["data"]
        self.assertEqual((flags["EMBEDDING_DEVICE"], flags["EMBEDDING_DTYPE"]), ("cuda", "bf16"))

    def test_every_overlay_is_checked(self):
        self.assertEqual(OVERLAYS, ["dev", "gpu", "init-container-models", "production"])

    def test_generated_files_are_current(self):
        subprocess.run(["/usr/bin/python3", os.path.join(K8S, "generate.py"), "--check"], check=True)

    def test_examples_validate(self):
        subprocess.run(["node", os.path.join(ROOT, "tests", "e2e", "k8s", "validate.js")]
                       + glob.glob(os.path.join(K8S, "examples", "*.yaml")), check=True,
                       capture_output=True)

    def test_validator_rejects_a_broken_object(self):
        text, _ = render("dev")
        broken = text.replace("replicas: 1", "replicas: one", 1)
        result = subprocess.run(["node", os.path.join(ROOT, "tests", "e2e", "k8s", "validate.js"),
                                 "/dev/stdin"], input=broken, text=True, capture_output=True)
        self.assertEqual(result.returncode, 1)
        self.assertIn("FAIL", result.stdout)


if __name__ == "__main__":
    SERVER = sys.argv.pop(1)
    unittest.main()
