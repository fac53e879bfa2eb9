// Validates every object in rendered Kubernetes YAML against the API schemas, offline:
// kubernetes-models 4.5.1 (the Kubernetes 1.31 API) and @kubernetes-models/prometheus-operator
// (ServiceMonitor, PrometheusRule). An object of a kind neither knows is an error, not a pass.
// The schemas check types, required fields and enums; they accept unknown fields.
//   node validate.js FILE.yaml...
// Prints one line per object and exits 1 if any fails.
const fs = require("fs");
const YAML = require("yaml");

function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const module = group === "monitoring.coreos.com"
    ? `@kubernetes-models/prometheus-operator/${group}/${version}`
    : `kubernetes-models/${group ? group + "/" : ""}${version}`;
  try {
    return require(module)[kind];
  } catch (e) {
    return undefined;
  }
}

let failed = false;
for (const path of process.argv.slice(2)) {
  for (const doc of YAML.parseAllDocuments(fs.readFileSync(path, "utf8"))) {
    const obj = doc.toJS();
    if (!obj) continue;
    const name = `${path}: ${obj.kind} ${obj.metadata && obj.metadata.name}`;
    const Model = modelFor(obj.apiVersion || "", obj.kind || "");
    if (!Model) {
      console.log(`FAIL ${name}: no schema for ${obj.apiVersion} ${obj.kind}`);
      failed = true;
      continue;
    }
    try {
      new Model(obj).validate();
      console.log(`ok   ${name}`);
    } catch (e) {
      console.log(`FAIL ${name}: ${e.message}`);
      failed = true;
    }
  }
}
process.exit(failed ? 1 : 0);
