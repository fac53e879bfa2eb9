"""Starts tests/e2e/hub/mock_hub.js for a Python test or benchmark, and stops it."""
import json
import os
import subprocess
import time
import urllib.request


class MockHub:
    """The Node mock on 127.0.0.1, configured by a JSON file `configure` rewrites."""

    def __init__(self, hub_dir, tmp, config):
        self.config_path = os.path.join(tmp, "hub_config.json")
        self.configure(config)
        port_file = os.path.join(tmp, "hub_ports")
        if os.path.exists(port_file):
            os.remove(port_file)
        self.output = open(os.path.join(tmp, "mock_hub.log"), "a")
        self.process = subprocess.Popen(
            ["node", os.path.join(hub_dir, "mock_hub.js"), self.config_path, port_file],
            stdout=self.output, stderr=self.output)
        for _ in range(200):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        with open(port_file) as f:
            self.port, self.lfs_port = f.read().split()
        self.url = f"http://127.0.0.1:{self.port}"

    def configure(self, config):
        with open(self.config_path + ".tmp", "w") as f:
            json.dump(config, f)
        os.replace(self.config_path + ".tmp", self.config_path)

    def log(self):
        """Every request the mock has seen: server, method, url, range, authorization."""
        with urllib.request.urlopen(self.url + "/_log", timeout=10) as answer:
            return json.load(answer)

    def stop(self):
        self.process.terminate()
        self.process.wait()
        self.output.close()
