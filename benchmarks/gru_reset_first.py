"""ONNX's default GRU (linear_before_reset=0), as Keras and tf2onnx export it, imported: inference and one Adam step.

    python benchmarks/gru_reset_first.py

T=50, N=8, I=64, H=128, one direction; medians (ms) of tinyflow's default backend, and onnxruntime's inference at
2 threads beside it. torch exports its GRU with linear_before_reset=1, so real_models.py's models do not cover it.
"""
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

import tinyflow as tfl

T, N, I, H = 50, 8, 64, 128
rng = np.random.default_rng(0)
init = [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.ravel()) for n, a in
        (("W", rng.standard_normal((1, 3 * H, I)).astype(np.float32) * 0.1),
         ("R", rng.standard_normal((1, 3 * H, H)).astype(np.float32) * 0.1),
         ("B", rng.standard_normal((1, 6 * H)).astype(np.float32) * 0.1))]
node = helper.make_node("GRU", ["x", "W", "R", "B"], ["y", "y_h"], hidden_size=H, linear_before_reset=0)
graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (T, N, I))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("y_h", TensorProto.FLOAT, None)], init)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
x = rng.standard_normal((T, N, I)).astype(np.float32)


def median(f, n=10):
    f(); f(); ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return np.median(ts) * 1e3
with tfl.Graph().as_default() as g:
    prog = tfl.onnx.load(model)
    loss = tfl.reduce_mean(prog.outputs["y"] * prog.outputs["y"])
    train = tfl.optim.Adam(1e-3).minimize(loss, var_list=prog.variables)
    sess = tfl.Session(g)
    feed = {prog.inputs["x"]: x}
    infer = median(lambda: sess.run(prog.outputs["y"], feed))
    step = median(lambda: sess.run([train, loss], feed), 5)
    build = time.perf_counter(); tfl.Session(g).run(prog.outputs["y"], feed); first = (time.perf_counter() - build) * 1e3
print(f"inference {infer:.1f} ms, training step {step:.1f} ms, a new session's first run {first:.0f} ms")
o = ort.SessionOptions(); o.intra_op_num_threads, o.inter_op_num_threads = 2, 1
s = ort.InferenceSession(model.SerializeToString(), o, providers=["CPUExecutionProvider"])
print(f"onnxruntime inference {median(lambda: s.run(None, {'x': x})):.1f} ms")
