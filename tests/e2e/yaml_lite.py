"""Reads the `record`/`alert` and `expr` of each rule in a Prometheus rule file, without a YAML
library (Debian's python3-yaml is not assumed). Handles the shapes our rule files use: plain
scalars, quoted scalars, and `|` block scalars."""
import re


def rules(path):
    out, current, block_indent, block = [], None, None, None
    for line in open(path):
        stripped = line.rstrip("\n")
        if block is not None:
            indent = len(stripped) - len(stripped.lstrip())
            if stripped.strip() == "" or indent >= block_indent:
                block.append(stripped[block_indent:] if stripped.strip() else "")
                continue
            current["expr"] = "\n".join(block).strip()
            block = None
        m = re.match(r"^(\s*)(- )?(record|alert|expr):\s*(.*)$", stripped)
        if not m:
            continue
        key, value = m.group(3), m.group(4)
        if key in ("record", "alert"):
            current = {key: value.strip().strip('"')}
            out.append(current)
        elif value.strip() == "|":
            block_indent = len(m.group(1)) + 2
            block = []
        else:
            current["expr"] = value.strip()
    if block is not None:
        current["expr"] = "\n".join(block).strip()
    return out
