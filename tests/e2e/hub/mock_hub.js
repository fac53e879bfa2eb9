// A mock Hugging Face Hub on 127.0.0.1 for the downloader's tests, in the Hub's URL layout:
//   GET  /api/models/{repo}/revision/{rev}       sha + siblings (blobId, size, lfs with ?blobs)
//   GET  /api/models/{repo}/tree/{rev}[/path]    the listing @huggingface/hub walks
//   POST /api/models/{repo}/paths-info/{rev}     per-file oid/lfs, as @huggingface/hub asks
//   HEAD|GET /{repo}/resolve/{rev}/{path}        X-Repo-Commit, ETag; a large file answers 302
//                                                to a second server (the "LFS host") with
//                                                X-Linked-Etag (SHA-256) and X-Linked-Size
//   GET  /_log                                   every request seen (host, path, Authorization)
// Repositories and misbehaviour come from a JSON file re-read on every request, so a test
// changes the Hub by rewriting it:
//   {"repos": {"org/name": {"revisions": {"main": DIR, ...}, "token": T?, "gated": bool?,
//              "renamed_to": "org/new"?, "exclude": [path...]?, "extra": {path: text}?}},
//    "faults": {"drop_after": {"path": P, "bytes": N, "times": K}, "corrupt": P,
//               "size_delta": {"path": P, "delta": D, "in_listing": bool},
//               "delay": {"path": P, "ms": M}}}
// A commit is the SHA-1 of the repository's name and its files' digests: same files, same
// commit. Usage: node mock_hub.js CONFIG PORT_FILE (writes "HUB_PORT LFS_PORT" when ready).
"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const http = require("node:http");
const path = require("node:path");

const [configPath, portFile] = process.argv.slice(2);
const requestLog = [];
const dropCounts = {};

function readConfig() {
  return JSON.parse(fs.readFileSync(configPath, "utf8"));
}

function isLfs(file) {
  return file.endsWith(".safetensors") || file.endsWith(".bin") || file.endsWith(".onnx");
}

// Every file of a revision: path -> {bytes, sha1 (git blob), sha256, lfs, oid (of the git entry)}.
function revisionFiles(repoConfig, dir) {
  const files = {};
  const walk = (sub) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (entry.isFile()) files[rel] = fs.readFileSync(path.join(dir, rel));
    }
  };
  walk("");
  for (const [rel, text] of Object.entries(repoConfig.extra || {})) files[rel] = Buffer.from(text);
  for (const rel of repoConfig.exclude || []) delete files[rel];
  const out = {};
  for (const [rel, bytes] of Object.entries(files).sort()) {
    const sha1 = crypto.createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
    const sha256 = crypto.createHash("sha256").update(bytes).digest("hex");
    const lfs = isLfs(rel);
    const pointer = `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256}\nsize ${bytes.length}\n`;
    const oid = lfs
      ? crypto.createHash("sha1").update(`blob ${pointer.length}\0${pointer}`).digest("hex")
      : sha1;
    out[rel] = { bytes, sha1, sha256, lfs, oid, pointerSize: pointer.length };
  }
  return out;
}

function commitOf(repo, files) {
  const h = crypto.createHash("sha1").update(repo);
  for (const [rel, f] of Object.entries(files)) h.update(`${rel}:${f.sha256}\n`);
  return h.digest("hex");
}

// Hashing a model per request would make the mock the slowest part of every test.
const filesCache = new Map();
function cachedRevisionFiles(repoConfig, dir) {
  const key = JSON.stringify([dir, repoConfig.extra || {}, repoConfig.exclude || []]);
  if (!filesCache.has(key)) filesCache.set(key, revisionFiles(repoConfig, dir));
  return filesCache.get(key);
}

// {commit, files} for a revision name or commit of `repo`, or null. A renamed repository
// has its new name's commits.
function resolveRevision(config, repo, rev) {
  const repoConfig = config.repos[repo];
  for (const dir of Object.values(repoConfig.revisions)) {
    const files = cachedRevisionFiles(repoConfig, dir);
    const commit = commitOf(repoConfig.renamed_to || repo, files);
    if (rev === commit || repoConfig.revisions[rev] === dir) return { commit, files };
  }
  return null;
}

function fail(res, status, code, message) {
  const headers = { "Content-Type": "application/json" };
  if (code) headers["X-Error-Code"] = code;
  if (message) headers["X-Error-Message"] = message;
  res.writeHead(status, headers);
  res.end(JSON.stringify({ error: message || code || "error" }));
}

// The repository a request may see, or null after answering with the Hub's error.
function checkRepo(config, repo, req, res) {
  const repoConfig = config.repos[repo];
  if (!repoConfig) {
    fail(res, 404, "RepoNotFound", "Repository not found");
    return null;
  }
  const auth = req.headers.authorization || "";
  if (repoConfig.token && auth !== `Bearer ${repoConfig.token}`) {
    if (repoConfig.gated) fail(res, 401, "GatedRepo", "Access to this model is restricted");
    else fail(res, 404, "RepoNotFound", "Repository not found");
    return null;
  }
  return repoConfig;
}

function sendBytes(req, res, bytes, headers, filePath, config) {
  const faults = config.faults || {};
  let body = bytes;
  if (faults.corrupt === filePath) {
    body = Buffer.from(bytes);
    body[Math.floor(body.length / 2)] ^= 0x01;
  }
  let start = 0;
  const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range || "");
  let end = body.length - 1;
  if (range) {
    start = Number(range[1]);
    if (range[2] !== "") end = Math.min(end, Number(range[2]));
    if (start >= body.length) {
      res.writeHead(416, { "Content-Range": `bytes */${body.length}` });
      return res.end();
    }
    headers["Content-Range"] = `bytes ${start}-${end}/${body.length}`;
  }
  const slice = body.subarray(start, end + 1);
  headers["Content-Length"] = slice.length;
  headers["Accept-Ranges"] = "bytes";
  res.writeHead(range ? 206 : 200, headers);
  if (req.method === "HEAD") return res.end();
  const drop = faults.drop_after;
  if (drop && drop.path === filePath && (dropCounts[filePath] || 0) < (drop.times || 1)) {
    dropCounts[filePath] = (dropCounts[filePath] || 0) + 1;
    res.write(slice.subarray(0, Math.max(0, drop.bytes - start)), () => res.destroy());
    return;
  }
  const delay = faults.delay;
  if (delay && delay.path === filePath) return setTimeout(() => res.end(slice), delay.ms);
  res.end(slice);
}

function treeEntries(files, prefix, recursive) {
  const entries = [];
  const dirs = new Set();
  for (const [rel, f] of Object.entries(files)) {
    if (prefix && !rel.startsWith(prefix + "/")) continue;
    const rest = prefix ? rel.slice(prefix.length + 1) : rel;
    const parts = rest.split("/");
    for (let i = 1; i < parts.length; i++) {
      const dir = [prefix, ...parts.slice(0, i)].filter(Boolean).join("/");
      if (recursive || i === 1) dirs.add(dir);
    }
    if (!recursive && parts.length > 1) continue;
    entries.push(fileEntry(rel, f));
  }
  for (const dir of dirs) entries.push({ type: "directory", oid: "0".repeat(40), size: 0, path: dir });
  return entries;
}

function fileEntry(rel, f) {
  const entry = { type: "file", oid: f.oid, size: f.bytes.length, path: rel };
  if (f.lfs) entry.lfs = { oid: f.sha256, size: f.bytes.length, pointerSize: f.pointerSize };
  return entry;
}

// The size the listing shows: a fault may make it lie too.
function listedSize(config, rel, f) {
  const delta = (config.faults || {}).size_delta;
  return f.bytes.length + (delta && delta.in_listing && delta.path === rel ? delta.delta : 0);
}

function handleApi(config, req, res, url, body) {
  const m = /^\/api\/models\/([^/]+\/[^/]+|[^/]+)\/(revision|tree|paths-info)\/([^/]+)(?:\/(.*))?$/.exec(url.pathname);
  if (!m) return fail(res, 404, null, "no such API route");
  const repo = decodeURIComponent(m[1]);
  const repoConfig = checkRepo(config, repo, req, res);
  if (!repoConfig) return;
  const resolved = resolveRevision(config, repo, decodeURIComponent(m[3]));
  if (!resolved) return fail(res, 404, "RevisionNotFound", `Invalid rev id: ${m[3]}`);
  const { commit, files } = resolved;
  res.setHeader("Content-Type", "application/json");
  if (m[2] === "revision") {
    const blobs = url.searchParams.get("blobs") === "true";
    const siblings = Object.entries(files).map(([rel, f]) =>
      blobs
        ? { rfilename: rel, size: listedSize(config, rel, f), blobId: f.oid,
            ...(f.lfs ? { lfs: { sha256: f.sha256, size: listedSize(config, rel, f), pointerSize: f.pointerSize } } : {}) }
        : { rfilename: rel });
    return res.end(JSON.stringify({ _id: commit.slice(0, 24), id: repo, modelId: repo, sha: commit,
                                    private: !!repoConfig.token, gated: repoConfig.gated ? "auto" : false,
                                    siblings }));
  }
  if (m[2] === "tree") {
    return res.end(JSON.stringify(treeEntries(files, m[4] || "", url.searchParams.get("recursive") === "true")));
  }
  const wanted = JSON.parse(body || "{}").paths || [];
  return res.end(JSON.stringify(wanted.filter((p) => files[p]).map((p) => ({
    ...fileEntry(p, files[p]), lastCommit: { id: commit, title: "mock", date: "2026-01-01T00:00:00.000Z" } }))));
}

function handleResolve(config, req, res, url, lfsPort) {
  const m = /^\/([^/]+\/[^/]+|[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
  if (!m) return fail(res, 404, null, "not found");
  const repo = decodeURIComponent(m[1]);
  const renamedTo = config.repos[repo] && config.repos[repo].renamed_to;
  if (renamedTo) {  // a renamed repository: a relative redirect on the Hub's own host
    res.writeHead(307, { Location: `/${renamedTo}/resolve/${m[2]}/${m[3]}` });
    return res.end();
  }
  const repoConfig = checkRepo(config, repo, req, res);
  if (!repoConfig) return;
  const resolved = resolveRevision(config, repo, decodeURIComponent(m[2]));
  if (!resolved) return fail(res, 404, "RevisionNotFound", `Invalid rev id: ${m[2]}`);
  const filePath = m[3].split("/").map(decodeURIComponent).join("/");
  const f = resolved.files[filePath];
  if (!f) return fail(res, 404, "EntryNotFound", `${filePath} does not exist on "${m[2]}"`);
  const faults = config.faults || {};
  const delta = faults.size_delta && faults.size_delta.path === filePath ? faults.size_delta.delta : 0;
  const headers = { "X-Repo-Commit": resolved.commit, ETag: `"${f.oid}"` };
  if (f.lfs) {
    headers["X-Linked-Etag"] = `"${f.sha256}"`;
    headers["X-Linked-Size"] = String(f.bytes.length + delta);
    headers.Location = `http://127.0.0.1:${lfsPort}/lfs/${f.sha256}?repo=${encodeURIComponent(repo)}&path=${encodeURIComponent(filePath)}`;
    res.writeHead(302, headers);
    return res.end();
  }
  if (delta) {  // a regular file whose announced length is wrong: HEAD says one size, GET sends another
    if (req.method === "HEAD") {
      headers["Content-Length"] = f.bytes.length + delta;
      res.writeHead(200, headers);
      return res.end();
    }
  }
  return sendBytes(req, res, f.bytes, headers, filePath, config);
}

function logRequest(req, server) {
  requestLog.push({ server, method: req.method, url: req.url, range: req.headers.range || null,
                    authorization: req.headers.authorization || null });
}

function readBody(req) {
  return new Promise((resolve) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => resolve(body));
  });
}

const lfs = http.createServer(async (req, res) => {
  logRequest(req, "lfs");
  await readBody(req);
  const url = new URL(req.url, "http://lfs");
  const config = readConfig();
  const repo = url.searchParams.get("repo");
  const filePath = url.searchParams.get("path");
  const repoConfig = config.repos[repo];
  const sha256 = url.pathname.replace("/lfs/", "");
  for (const dir of Object.values((repoConfig || { revisions: {} }).revisions)) {
    const f = cachedRevisionFiles(repoConfig, dir)[filePath];
    if (f && f.sha256 === sha256) return sendBytes(req, res, f.bytes, { ETag: `"${sha256}"` }, filePath, config);
  }
  fail(res, 404, null, "no such object");
});

const hub = http.createServer(async (req, res) => {
  logRequest(req, "hub");
  const body = await readBody(req);
  const url = new URL(req.url, "http://hub");
  if (url.pathname === "/_log") {
    res.setHeader("Content-Type", "application/json");
    return res.end(JSON.stringify(requestLog.filter((r) => r.url !== "/_log")));
  }
  const config = readConfig();
  try {
    if (url.pathname.startsWith("/api/")) return handleApi(config, req, res, url, body);
    return handleResolve(config, req, res, url, lfs.address().port);
  } catch (error) {
    fail(res, 500, null, String(error));
  }
});

lfs.listen(0, "127.0.0.1", () => {
  hub.listen(0, "127.0.0.1", () => {
    fs.writeFileSync(portFile + ".tmp", `${hub.address().port} ${lfs.address().port}`);
    fs.renameSync(portFile + ".tmp", portFile);
  });
});
