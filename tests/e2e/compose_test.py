#!/usr/bin/python3
"""docker/compose.yaml, checked without running it (its Prometheus and Grafana images cannot be
pulled here): Debian's docker-compose 1.29 reads it, every mounted host path exists,
Prometheus's configuration as mounted passes promtool with the rules beside it, and the
addresses the services use for each other name services and ports of the file.
"""
import os
import shutil
import subprocess
import tempfile
import unittest
from urllib.parse import urlparse

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COMPOSE = os.path.join(ROOT, "docker", "compose.yaml")


def read(path):
    with open(path) as f:
        return f.read()


class Compose(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = subprocess.run(["docker-compose", "-f", COMPOSE, "config"], capture_output=True,
                             text=True, check=True)
        cls.config = yaml.safe_load(out.stdout)
        cls.services = cls.config["services"]

    def test_three_services(self):
        self.assertEqual(set(self.services), {"server", "prometheus", "grafana"})

    def mounts(self, service):
        for volume in self.services[service].get("volumes", []):
            if isinstance(volume, dict):
                yield volume["source"], volume["target"]
            else:
                source, target = volume.split(":")[:2]
                yield source, target

    def test_every_mounted_path_exists(self):
        count = 0
        for service in self.services:
            for source, _ in self.mounts(service):
                if not source.startswith("/"):
                    continue  # a named volume (below)
                self.assertTrue(os.path.exists(source), f"{service}: {source}")
                count += 1
        self.assertEqual(count, 4)

    def test_batch_folder_is_a_named_volume(self):
        mounts = dict((t, s) for s, t in self.mounts("server"))
        folder = self.services["server"]["environment"]["EMBEDDING_BATCH_DIR"]
        self.assertIn(mounts[folder], self.config["volumes"])

    def test_prometheus_configuration_as_mounted(self):
        with tempfile.TemporaryDirectory() as etc:
            for source, target in self.mounts("prometheus"):
                dest = os.path.join(etc, os.path.relpath(target, "/etc/prometheus"))
                (shutil.copytree if os.path.isdir(source) else shutil.copy)(source, dest)
            subprocess.run(["promtool", "check", "config", os.path.join(etc, "prometheus.yml")],
                           check=True, capture_output=True)
            config = yaml.safe_load(read(os.path.join(etc, "prometheus.yml")))
        target = config["scrape_configs"][0]["static_configs"][0]["targets"][0]
        host, port = target.split(":")
        self.assertIn(host, self.services)
        self.assertIn(int(port), [p["target"] for p in self.services[host]["ports"]])
        self.assertEqual(config["scrape_configs"][0]["job_name"], "embedding")

    def test_grafana_reaches_prometheus_by_service_name(self):
        provisioning = dict(self.mounts("grafana"))
        source = next(s for s, t in provisioning.items() if t == "/etc/grafana/provisioning")
        datasources = yaml.safe_load(read(os.path.join(source, "datasources", "prometheus.yml")))
        url = urlparse(datasources["datasources"][0]["url"])
        self.assertIn(url.hostname, self.services)
        dashboards = yaml.safe_load(read(os.path.join(source, "dashboards", "embedding.yml")))
        path = dashboards["providers"][0]["options"]["path"]
        self.assertIn(path, [t for _, t in self.mounts("grafana")])

    def test_every_listener_is_published(self):
        server = self.services["server"]
        published = [p["target"] for p in server["ports"]]
        listeners = {k: v for k, v in server["environment"].items() if k.endswith("_LISTEN")}
        self.assertIn("EMBEDDING_OPENAI_LISTEN", listeners)
        for name, address in listeners.items():
            self.assertIn(int(address.rsplit(":", 1)[1]), published, name)

    def test_server_runs_as_hardened_as_in_kubernetes(self):
        server = self.services["server"]
        self.assertTrue(server["read_only"])
        self.assertEqual(server["cap_drop"], ["ALL"])


if __name__ == "__main__":
    unittest.main()
