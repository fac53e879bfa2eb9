#!/usr/bin/python3
"""Hub models through a mock Hub (tests/e2e/hub/mock_hub.js) on 127.0.0.1: `embedctl pull` and
the server fetch, verify, resume and lock as the issue asks, and fill the same cache as the
official JavaScript client (@huggingface/hub's snapshotDownload). Digests here come from
Python's hashlib, independent of the C++ downloader's OpenSSL and the mock's Node crypto.

usage: hub_download_test.py SERVER_BINARY EMBEDCTL_BINARY MODEL_DIR HUB_TEST_DIR
       [gte=DIR jina=DIR modernbert=DIR]
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "hub"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from mock_hub import MockHub  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

SERVER, EMBEDCTL, MODEL, HUB_DIR = sys.argv[1:4] + [os.path.abspath(sys.argv[4])]
FAMILIES = dict(arg.split("=", 1) for arg in sys.argv[5:])  # family demo models
TOKEN = "hf_mockSecretToken0123456789"
REPO = "org/tiny"


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def model_files(directory):
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, directory)] = f.read()
    return out


class HubDownloadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="hub_download_test_")
        # Two commits of one model: v2 differs in one small file.
        cls.v1 = os.path.join(cls.tmp, "v1")
        cls.v2 = os.path.join(cls.tmp, "v2")
        shutil.copytree(MODEL, cls.v1, ignore=shutil.ignore_patterns("README.md"))
        shutil.copytree(cls.v1, cls.v2)
        with open(os.path.join(cls.v2, "tokenizer_config.json")) as f:
            settings = json.load(f)
        settings["model_max_length"] = 100
        with open(os.path.join(cls.v2, "tokenizer_config.json"), "w") as f:
            json.dump(settings, f)
        cls.files = model_files(cls.v1)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.case = tempfile.mkdtemp(dir=self.tmp)
        self.cache = os.path.join(self.case, "cache")
        self.hub = MockHub(HUB_DIR, self.case, {"repos": {REPO: {"revisions": {"main": self.v1}}}})

    def tearDown(self):
        self.hub.stop()

    def environment(self, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update(HF_ENDPOINT=self.hub.url, HF_HUB_CACHE=self.cache, HF_HOME=self.case)
        env.update(extra)
        return env

    def pull(self, *references, **env):
        return subprocess.run([EMBEDCTL, "pull", *references], capture_output=True, text=True,
                              env=self.environment(**env), timeout=120)

    def folder(self, repo=REPO):
        return os.path.join(self.cache, "models--" + repo.replace("/", "--"))

    def lfs_gets(self, name):
        digest = sha256(self.files[name])
        return [r for r in self.hub.log() if r["server"] == "lfs" and r["method"] == "GET"
                and digest in r["url"]]

    def assertPulled(self, run, repo=REPO, directory=None):
        """The snapshot holds exactly the model's files, each a relative link to a blob named
        by its digest (SHA-256 for the safetensors file, git blob SHA-1 otherwise)."""
        self.assertEqual(run.returncode, 0, run.stderr)
        files = model_files(directory or self.v1)
        with open(os.path.join(self.folder(repo), "refs", "main")) as f:
            commit = f.read()
        self.assertRegex(commit, r"^[0-9a-f]{40}$")
        self.assertIn(f"commit {commit}", run.stdout)
        snapshot = os.path.join(self.folder(repo), "snapshots", commit)
        self.assertEqual(sorted(model_files(snapshot)), sorted(files))
        for name, data in files.items():
            link = os.path.join(snapshot, name)
            self.assertTrue(os.path.islink(link), name)
            target = os.readlink(link)
            self.assertFalse(os.path.isabs(target), target)
            digest = sha256(data) if name.endswith(".safetensors") else git_blob_sha1(data)
            self.assertEqual(os.path.basename(target), digest, name)
            with open(link, "rb") as f:
                self.assertEqual(f.read(), data, name)
        self.assertEqual([n for n in os.listdir(os.path.join(self.folder(repo), "blobs"))
                          if n.endswith(".incomplete")], [])
        return commit, snapshot

    # --- the cache and the protocol -------------------------------------------------------

    def test_cold_pull_then_warm_and_offline_starts(self):
        started = time.time()
        run = self.pull(REPO)
        cold = time.time() - started
        commit, _ = self.assertPulled(run)
        # Not a terminal: one line when each file starts and one when it ends.
        self.assertIn(f"downloading {REPO}/model.safetensors", run.stderr)
        self.assertIn(f"downloaded {REPO}/model.safetensors", run.stderr)
        # The token never travels without one being set, and the large file came from the LFS
        # host after a 302.
        self.assertEqual(len(self.lfs_gets("model.safetensors")), 1)

        before = len(self.hub.log())
        started = time.time()
        run = self.pull(REPO)
        warm = time.time() - started
        self.assertEqual(run.returncode, 0, run.stderr)
        requests = self.hub.log()[before:]
        self.assertEqual([r["url"].split("?")[0] for r in requests],
                         [f"/api/models/{REPO}/revision/main"], "a warm pull asks one question")

        before = len(self.hub.log())
        run = self.pull(f"{REPO}@{commit}")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(self.hub.log()[before:], [], "a cached commit needs no request")

        run = self.pull(REPO, HF_HUB_OFFLINE="yes")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(self.hub.log()[before:], [], "offline makes no request")
        print(f"cold pull {cold:.2f} s, warm pull {warm:.2f} s "
              f"({len(self.files['model.safetensors']) / 1e6:.1f} MB model)")

        # The server, with the Hub gone: it starts from the cache and says so.
        self.hub.stop()
        with ServerRunner(SERVER, [f"--model={REPO}", "--openai-listen=127.0.0.1:0"],
                          env=self.environment()) as server:
            models = json.load(urllib.request.urlopen(
                f"http://{server.openai_address}/v1/models", timeout=10))["data"]
            self.assertEqual(models[0]["id"], "tiny")
            self.assertEqual(models[0]["commit"], commit)
            self.assertEqual(models[0]["repository"], REPO)
        self.assertIn("the Hub did not answer", server.stderr_text)
        self.hub = MockHub(HUB_DIR, self.case, {"repos": {REPO: {"revisions": {"main": self.v1}}}})

    def test_a_terminal_gets_a_redrawn_progress_line(self):
        import pty
        main, child = pty.openpty()
        process = subprocess.Popen([EMBEDCTL, "pull", REPO], stdout=subprocess.DEVNULL,
                                   stderr=child, env=self.environment())
        os.close(child)
        output = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the pty closes when the process exits
                break
            if not chunk:
                break
            output += chunk
        process.wait(timeout=60)
        os.close(main)
        self.assertEqual(process.returncode, 0, output)
        text = output.decode()
        self.assertIn(f"\r\x1b[K{REPO}/model.safetensors  6.2 MB / 6.2 MB, ", text)
        self.assertRegex(text, r"MB/s done")
        self.assertNotIn("downloading ", text)  # the log-line form is for non-terminals

    def test_offline_without_the_model_names_repository_revision_and_cache(self):
        run = self.pull(f"{REPO}@v9", HF_HUB_OFFLINE="1")
        self.assertEqual(run.returncode, 1)
        for part in (REPO, "revision v9", self.cache, "offline", "embedctl pull"):
            self.assertIn(part, run.stderr)
        self.assertEqual(self.hub.log(), [])
        server = subprocess.run([SERVER, f"--model={REPO}", "--hub-offline", "--listen=127.0.0.1:0",
                                 "--http-listen=127.0.0.1:0"], capture_output=True, text=True,
                                env=self.environment(), timeout=60)
        self.assertEqual(server.returncode, 1)
        self.assertIn(f"model 'tiny': {REPO} at revision main is not in the", server.stderr)

    def test_server_fetches_and_reloads_a_moved_branch_as_a_new_version(self):
        token_file = os.path.join(self.case, "admin_token")
        with open(token_file, "w") as f:
            f.write("admin-secret\n")
        with ServerRunner(SERVER, [f"--model=t={REPO}", f"--auth-token-file={token_file}",
                                   "--openai-listen=127.0.0.1:0"], env=self.environment()) as server:
            def listed():
                request = urllib.request.Request(
                    f"http://{server.openai_address}/v1/models",
                    headers={"Authorization": "Bearer admin-secret"})
                return json.load(urllib.request.urlopen(request, timeout=10))["data"][0]
            first = listed()
            self.hub.configure({"repos": {REPO: {"revisions": {"main": self.v2}}}})
            reload = urllib.request.Request(f"http://{server.http_address}/admin/reload?model=t",
                                            method="POST",
                                            headers={"Authorization": "Bearer admin-secret"})
            with urllib.request.urlopen(reload, timeout=60) as answer:
                self.assertEqual(answer.status, 200, answer.read())
            second = listed()
        self.assertNotEqual(first["commit"], second["commit"])
        with open(os.path.join(self.folder(), "refs", "main")) as f:
            self.assertEqual(f.read(), second["commit"])
        self.assertIn(f"from {REPO} at main, commit {first['commit']}", server.stderr_text)
        # Only tokenizer_config.json changed: one new blob, the weights shared.
        self.assertEqual(len(self.lfs_gets("model.safetensors")), 1)

    # --- failures, each with the message it gets ------------------------------------------

    def test_a_dropped_connection_resumes_with_a_range_request(self):
        self.hub.configure({"repos": {REPO: {"revisions": {"main": self.v1}}},
                            "faults": {"drop_after": {"path": "model.safetensors",
                                                      "bytes": 1000000, "times": 1}}})
        run = self.pull(REPO)
        self.assertPulled(run)
        gets = self.lfs_gets("model.safetensors")
        self.assertEqual(len(gets), 2)
        self.assertIsNone(gets[0]["range"])
        self.assertRegex(gets[1]["range"], r"^bytes=\d+-$")
        self.assertGreater(int(gets[1]["range"][6:-1]), 0)

    def test_a_corrupted_byte_is_refused_and_leaves_nothing(self):
        self.hub.configure({"repos": {REPO: {"revisions": {"main": self.v1}}},
                            "faults": {"corrupt": "model.safetensors"}})
        run = self.pull(REPO)
        self.assertEqual(run.returncode, 1)
        expected = sha256(self.files["model.safetensors"])
        self.assertIn(f"{REPO}: model.safetensors: the received bytes have SHA-256 ", run.stderr)
        self.assertIn(f"the Hub announced {expected}", run.stderr)
        blobs = os.listdir(os.path.join(self.folder(), "blobs"))
        self.assertFalse([b for b in blobs if b.startswith(expected)], blobs)
        self.assertFalse(os.path.exists(os.path.join(self.folder(), "refs", "main")))
        snapshots = os.path.join(self.folder(), "snapshots")
        for commit in os.listdir(snapshots):
            self.assertNotIn("model.safetensors", os.listdir(os.path.join(snapshots, commit)))

    def test_a_wrong_announced_size_is_refused(self):
        # The file's size in the resolve answer against the listing, then (when the listing
        # says the same wrong size) against the bytes that arrive.
        cases = [(7, False, "differs from the repository listing"),
                 (7, True, "the server sent 6153888 bytes, but announced 6153895"),
                 (-7, True, "the server sent more than the announced 6153881 bytes")]
        self.assertEqual(len(self.files["model.safetensors"]), 6153888)
        for delta, in_listing, message in cases:
            with self.subTest(delta=delta, in_listing=in_listing):
                shutil.rmtree(self.cache, ignore_errors=True)
                self.hub.configure({"repos": {REPO: {"revisions": {"main": self.v1}}},
                                    "faults": {"size_delta": {"path": "model.safetensors",
                                                              "delta": delta,
                                                              "in_listing": in_listing}}})
                run = self.pull(REPO)
                self.assertEqual(run.returncode, 1)
                self.assertIn(f"{REPO}: model.safetensors: ", run.stderr)
                self.assertIn(message, run.stderr)
                self.assertEqual([b for b in os.listdir(os.path.join(self.folder(), "blobs"))
                                  if len(b) == 64 or b.endswith(".incomplete")], [])

    def test_only_the_needed_files_and_clear_errors_for_missing_ones(self):
        extra = {"README.md": "# model card", "onnx/model.onnx": "onnx bytes",
                 "pytorch_model.bin": "pickle"}
        cases = [
            ("org/extras", {"extra": extra}, 0, None),
            ("org/no-optional", {"exclude": ["tokenizer_config.json"]}, 0, None),
            ("org/no-tokenizer", {"exclude": ["tokenizer.json"]}, 1,
             "org/no-tokenizer: neither tokenizer.json nor vocab.txt is in the repository"),
            ("org/no-config", {"exclude": ["config.json"]}, 1,
             "org/no-config: no config.json in the repository"),
            # Only pytorch_model.bin: fetched, as Checkpoint reads it (with no other extra).
            ("org/pickle", {"exclude": ["model.safetensors"],
                            "extra": {"pytorch_model.bin": "x", "onnx/model.onnx": "onnx"}}, 0,
             None),
            ("org/no-weights", {"exclude": ["model.safetensors"], "extra": {"tf_model.h5": "x"}},
             1, "org/no-weights: no weights in the repository (none of model.safetensors, "
                "model.safetensors.index.json, pytorch_model.bin, pytorch_model.bin.index.json)"),
            ("org/nope", None, 1, "org/nope: revision main: repository not found on " + self.hub.url),
        ]
        repos = {repo: {"revisions": {"main": self.v1}, **extra_config}
                 for repo, extra_config, _, _ in cases if extra_config is not None}
        repos[REPO] = {"revisions": {"main": self.v1}}
        self.hub.configure({"repos": repos})
        for repo, _, code, message in cases:
            with self.subTest(repo=repo):
                run = self.pull(repo)
                self.assertEqual(run.returncode, code, run.stderr)
                if message:
                    self.assertIn(message, run.stderr)
                    self.assertFalse(os.path.exists(os.path.join(self.folder(repo), "refs", "main")))
        listed = model_files(os.path.join(self.folder("org/extras"), "snapshots",
                                          os.listdir(os.path.join(self.folder("org/extras"), "snapshots"))[0]))
        self.assertEqual(sorted(listed), sorted(self.files))
        pickle = os.path.join(self.folder("org/pickle"), "snapshots")
        pickle = os.path.join(pickle, os.listdir(pickle)[0])
        self.assertIn("pytorch_model.bin", model_files(pickle))
        self.assertNotIn("model.safetensors", model_files(pickle))
        self.assertNotIn("onnx/model.onnx", model_files(pickle))
        snapshot = os.path.join(self.folder("org/no-optional"), "snapshots")
        self.assertNotIn("tokenizer_config.json",
                         os.listdir(os.path.join(snapshot, os.listdir(snapshot)[0])))
        run = self.pull(f"{REPO}@no-such-branch")
        self.assertEqual(run.returncode, 1)
        self.assertIn(f"{REPO}: revision no-such-branch: not found on the Hub", run.stderr)

    def test_the_token_goes_to_the_hub_host_only_and_is_never_printed(self):
        self.hub.configure({"repos": {
            "org/gated": {"revisions": {"main": self.v1}, "token": TOKEN, "gated": True},
            # A renamed repository: the Hub answers 307 with a relative Location.
            "org/old-name": {"revisions": {"main": self.v1}, "token": TOKEN,
                             "renamed_to": "org/gated"}}})
        run = self.pull("org/gated")
        self.assertEqual(run.returncode, 1)
        self.assertIn("org/gated: revision main: the repository is gated; accept its conditions "
                      f"at {self.hub.url}/org/gated", run.stderr)
        self.assertIn("no token was sent: set HF_TOKEN", run.stderr)

        token_file = os.path.join(self.case, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        for env in ({"HF_TOKEN": TOKEN}, {"HF_TOKEN_PATH": token_file}):
            with self.subTest(env=list(env)):
                shutil.rmtree(self.cache, ignore_errors=True)
                before = len(self.hub.log())
                run = self.pull("org/gated", "org/old-name", **env)
                self.assertPulled(run, "org/gated")
                self.assertPulled(run, "org/old-name")
                self.assertNotIn(TOKEN, run.stdout + run.stderr)
                requests = self.hub.log()[before:]
                hub = [r for r in requests if r["server"] == "hub"]
                lfs = [r for r in requests if r["server"] == "lfs"]
                self.assertTrue(hub and lfs)
                self.assertEqual({r["authorization"] for r in hub}, {f"Bearer {TOKEN}"})
                self.assertEqual({r["authorization"] for r in lfs}, {None})
                self.assertTrue(any("/org/old-name/resolve/" in r["url"] for r in hub))
        # A refused token is an error even with the model cached: the Hub answered.
        run = self.pull("org/gated", HF_TOKEN="hf_wrong" + TOKEN)
        self.assertEqual(run.returncode, 1)
        self.assertIn("was refused", run.stderr)
        self.assertNotIn(TOKEN, run.stdout + run.stderr)

    def test_names_that_try_to_leave_the_cache_are_refused(self):
        for reference, rule in (("../evil", "--model"), ("org/a/b", "one '/'"),
                                ("/etc/passwd", "[A-Za-z0-9_.-]"), ("org/x.git", ".git"),
                                ("org/a--b", "--"), (f"{REPO}@../../x", "revision")):
            with self.subTest(reference=reference):
                run = self.pull(reference)
                self.assertEqual(run.returncode, 2, run.stderr)
                self.assertIn("pull", run.stderr)
        self.assertEqual(self.hub.log(), [])
        # EMBEDDING_MODELS as an init container passes it: NAME=PATH entries are skipped.
        run = self.pull(f"a=/models/a,b={REPO}", "c=./local")
        self.assertPulled(run)
        self.assertIn("/models/a is a directory, not a Hub model; skipped", run.stderr)
        self.assertIn("./local is a directory, not a Hub model; skipped", run.stderr)
        # Paths from the repository's own files: an index naming a shard outside the snapshot,
        # a Pooling module outside it.
        sharded = os.path.join(self.case, "sharded")
        shutil.copytree(self.v1, sharded)
        os.remove(os.path.join(sharded, "model.safetensors"))
        pooling = os.path.join(self.case, "pooling")
        shutil.copytree(self.v1, pooling)
        with open(os.path.join(pooling, "modules.json")) as f:
            modules = json.load(f)
        for module in modules:
            if "Pooling" in module["type"]:
                module["path"] = "../../../../outside"
        with open(os.path.join(pooling, "modules.json"), "w") as f:
            json.dump(modules, f)
        for shard in ("../../../outside.safetensors", "/tmp/outside.safetensors"):
            with self.subTest(shard=shard):
                index = json.dumps({"metadata": {}, "weight_map": {"embeddings.word_embeddings.weight": shard}})
                self.hub.configure({"repos": {"org/sharded": {"revisions": {"main": sharded},
                                                              "extra": {"model.safetensors.index.json": index}}}})
                shutil.rmtree(self.cache, ignore_errors=True)
                run = self.pull("org/sharded")
                self.assertEqual(run.returncode, 1)
                self.assertIn(f'repository path "{shard}"', run.stderr)
                self.assertIn("refusing to write it", run.stderr)
        self.hub.configure({"repos": {"org/pooling": {"revisions": {"main": pooling}}}})
        run = self.pull("org/pooling")
        self.assertEqual(run.returncode, 1)
        self.assertIn('repository path "../../../../outside/config.json"', run.stderr)
        for root, _, files in os.walk(self.case):
            self.assertNotIn("outside.safetensors", files)
        # A folder in the snapshot that is a symlink out of the cache is not written through.
        self.hub.configure({"repos": {REPO: {"revisions": {"main": self.v1}}}})
        commit, snapshot = self.assertPulled(self.pull(REPO))
        outside = os.path.join(self.case, "outside")
        os.makedirs(outside)
        shutil.rmtree(os.path.join(snapshot, "1_Pooling"))
        os.symlink(outside, os.path.join(snapshot, "1_Pooling"))
        run = self.pull(f"{REPO}@{commit}")
        self.assertEqual(run.returncode, 1)
        self.assertIn(f"{snapshot}/1_Pooling: a symlink leading outside {self.folder()}",
                      run.stderr)
        self.assertEqual(os.listdir(outside), [])

    def test_two_pulls_at_once_write_one_blob(self):
        # The large file takes a second to arrive, so the two pulls overlap on it.
        self.hub.configure({"repos": {REPO: {"revisions": {"main": self.v1}}},
                            "faults": {"delay": {"path": "model.safetensors", "ms": 1000}}})
        runs = [subprocess.Popen([EMBEDCTL, "pull", REPO], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=self.environment())
                for _ in range(2)]
        for process in runs:
            out, err = process.communicate(timeout=120)
            self.assertEqual(process.returncode, 0, err)
        self.assertEqual(len(self.lfs_gets("model.safetensors")), 1)
        self.assertPulled(subprocess.run([EMBEDCTL, "pull", REPO, "--hub-offline"],
                                         capture_output=True, text=True, env=self.environment()))

    # --- the official client --------------------------------------------------------------

    def test_each_family_repository_is_served_from_its_files_never_its_code(self):
        """The long-context families' repository layouts: modelling code named by config.json's
        auto_map (in another repository, or beside the weights), ONNX exports, model cards. The
        config's fields suffice: exactly the files the server reads are fetched, no code, and
        each model embeds as the same files do from a directory."""
        layouts = {
            "Alibaba-NLP/gte-base-en-v1.5": ("gte", {"auto_map": {
                "AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
                "AutoModel": "Alibaba-NLP/new-impl--modeling.NewModel"}},
                {"onnx/model.onnx": "onnx"}),
            "jinaai/jina-embeddings-v2-base-en": ("jina", {"auto_map": {
                "AutoConfig": "jinaai/jina-bert-implementation--configuration_bert.JinaBertConfig",
                "AutoModel": "jinaai/jina-bert-implementation--modeling_bert.JinaBertModel"}},
                {"configuration_bert.py": "raise SystemExit", "modeling_bert.py": "import os",
                 "onnx/model.onnx": "onnx", "pytorch_model.bin": "pickle"}),
            "answerdotai/ModernBERT-base": ("modernbert", {}, {
                "README.md": "# card", "onnx/model_quantized.onnx": "onnx"}),
        }
        repos = {REPO: {"revisions": {"main": self.v1}}}
        directories = {}
        for repo, (family, config_fields, extra) in layouts.items():
            directory = os.path.join(self.case, repo.replace("/", "--"))
            shutil.copytree(FAMILIES[family], directory, ignore=shutil.ignore_patterns("README.md"))
            with open(os.path.join(directory, "config.json")) as f:
                config = json.load(f)
            config.update(config_fields)
            with open(os.path.join(directory, "config.json"), "w") as f:
                json.dump(config, f)
            repos[repo] = {"revisions": {"main": directory}, "extra": extra}
            directories[repo] = directory
        self.hub.configure({"repos": repos})
        flags = []
        for repo, directory in directories.items():
            with self.subTest(repo=repo):
                self.assertPulled(self.pull(repo), repo, directory)
            flags += [f"--model={repo}", f"--model=local-{repo.split('/')[1]}={directory}"]
        text = "a long document about rivers and stones " * 20
        with ServerRunner(SERVER, flags, env=self.environment(HF_HUB_OFFLINE="1")) as server:
            client = EmbeddingClient(server.grpc_address)
            for repo in directories:
                name = repo.split("/")[1]
                with self.subTest(repo=repo):
                    fetched = client.embed([text], model=name).documents[0].vector
                    local = client.embed([text], model=f"local-{name}").documents[0].vector
                    self.assertEqual(list(fetched), list(local))
                    with open(os.path.join(directories[repo], "config.json")) as f:
                        self.assertEqual(len(fetched), json.load(f)["hidden_size"])

    def test_the_official_client_fills_the_same_cache(self):
        official = os.path.join(self.case, "official")
        node = subprocess.run(["node", os.path.join(HUB_DIR, "official_snapshot.mjs"), self.hub.url,
                               REPO, "main", official], capture_output=True, text=True,
                              cwd=HUB_DIR, timeout=120)
        self.assertEqual(node.returncode, 0, node.stderr)
        commit, _ = self.assertPulled(self.pull(REPO))

        def layout(cache):
            folder = os.path.join(cache, "models--org--tiny")
            with open(os.path.join(folder, "refs", "main")) as f:
                ref = f.read()
            snapshot = os.path.join(folder, "snapshots", ref)
            links = {}
            for root, _, files in os.walk(snapshot):
                for name in files:
                    path = os.path.join(root, name)
                    links[os.path.relpath(path, snapshot)] = os.path.basename(os.readlink(path))
            return ref, links, sorted(os.listdir(os.path.join(folder, "blobs")))

        self.assertEqual(layout(official), layout(self.cache))
        self.assertEqual(layout(official)[0], commit)
        # The server starts offline from the cache the official client filled.
        with ServerRunner(SERVER, [f"--model={REPO}", f"--hub-cache-dir={official}",
                                   "--openai-listen=127.0.0.1:0"],
                          env=self.environment(HF_HUB_OFFLINE="1")) as server:
            models = json.load(urllib.request.urlopen(
                f"http://{server.openai_address}/v1/models", timeout=10))["data"]
            self.assertEqual(models[0]["commit"], commit)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
