"""An ONNX model quantized the way onnxruntime's quantize_dynamic writes it (QInt8 weights,
per tensor, symmetric; activations quantized per call), with Debian's python3-onnx, since
onnxruntime's Python package is not in Debian: every MatMul whose second input is a constant
2-D weight becomes

    DynamicQuantizeLinear(A) -> A_q (uint8), a_scale, a_zero
    MatMulInteger(A_q, W_q (int8), a_zero, 0) -> int32
    Cast(float) * (a_scale * w_scale)

which onnxruntime fuses into its DynamicQuantizeMatMul kernel (VNNI / AMX int8), as it does for
the "q8" models fastembed, Optimum and transformers.js ship. A Gemm by a constant weight (the
export's 2-D linear layers) is the same product plus its bias. Everything else stays fp32.
"""
import numpy as np
import onnx
from onnx import helper, numpy_helper


def quantize_dynamic(fp32_path, int8_path):
    """Writes the quantized model; returns how many MatMuls were quantized."""
    model = onnx.load(fp32_path)
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    # A weight the export transposes on every call (nn.MultiheadAttention's in_proj) is
    # transposed once here, as onnxruntime's optimizer folds it before quantize_dynamic runs.
    folded = []
    for node in graph.node:
        if node.op_type == "Transpose" and node.input[0] in weights:
            perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
            value = numpy_helper.to_array(weights[node.input[0]])
            weights[node.output[0]] = numpy_helper.from_array(
                np.ascontiguousarray(np.transpose(value, perm)), node.output[0])
            graph.initializer.append(weights[node.output[0]])
        else:
            folded.append(node)
    del graph.node[:]
    graph.node.extend(folded)
    nodes, count = [], 0
    for node in graph.node:
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        # A Gemm (nn.Linear on 2-D input) is a MatMul by B, or by B^T, then + C.
        gemm = (node.op_type == "Gemm" and attributes.get("alpha", 1.0) == 1.0
                and attributes.get("beta", 1.0) == 1.0 and not attributes.get("transA", 0))
        weight = weights.get(node.input[1]) if node.op_type == "MatMul" or gemm else None
        if weight is None or len(weight.dims) != 2:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weight).astype(np.float32)
        if gemm and attributes.get("transB", 0):
            w = np.ascontiguousarray(w.T)
        # Symmetric int8 over the whole tensor, as quantize_dynamic's QInt8 default.
        scale = max(float(np.abs(w).max()), 1e-12) / 127.0
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        name = f"{node.name or node.output[0]}_q{count}"
        graph.initializer.extend([
            numpy_helper.from_array(q, f"{name}_w"),
            numpy_helper.from_array(np.array(scale, dtype=np.float32), f"{name}_w_scale"),
            numpy_helper.from_array(np.array(0, dtype=np.int8), f"{name}_w_zero"),
        ])
        a = node.input[0]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [a],
                             [f"{name}_a", f"{name}_a_scale", f"{name}_a_zero"]),
            helper.make_node("MatMulInteger",
                             [f"{name}_a", f"{name}_w", f"{name}_a_zero", f"{name}_w_zero"],
                             [f"{name}_int32"]),
            helper.make_node("Cast", [f"{name}_int32"], [f"{name}_float"],
                             to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", [f"{name}_a_scale", f"{name}_w_scale"], [f"{name}_scale"]),
            helper.make_node("Mul", [f"{name}_float", f"{name}_scale"],
                             [f"{name}_product" if gemm else node.output[0]]),
        ]
        if gemm:
            nodes.append(helper.make_node("Add", [f"{name}_product", node.input[2]],
                                          [node.output[0]]))
        count += 1
    del graph.node[:]
    graph.node.extend(nodes)
    # The fp32 weights that only the replaced MatMuls read are dropped.
    used = {i for n in graph.node for i in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    onnx.checker.check_model(model)
    onnx.save(model, int8_path)
    return count
