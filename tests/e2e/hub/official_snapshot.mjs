// Fills a cache with @huggingface/hub's snapshotDownload, the official JavaScript client.
// Usage: node official_snapshot.mjs HUB_URL REPO REVISION CACHE_DIR
import { snapshotDownload } from "@huggingface/hub";

const [hubUrl, repo, revision, cacheDir] = process.argv.slice(2);
const folder = await snapshotDownload({ repo, revision, hubUrl, cacheDir });
console.log(folder);
