"""Real models exported by torch.onnx.export(..., dynamo=False): tinyflow's import gives torch's outputs, torch's
gradients with respect to the imported weights, and torch's Adam fine-tuning, step by step."""
import copy
import math
import warnings

import numpy as np
import pytest

import tinyflow as tfl

torch = pytest.importorskip("torch", reason="torch is needed to export the real models (pip install torch)")
pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
nn = torch.nn


class ConvNet(nn.Module):
    """Conv -> BatchNorm -> relu -> max pool -> conv -> relu -> average pool -> flatten -> linear."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn = nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.conv2, self.fc = nn.Conv2d(4, 6, 3, padding=1), nn.Linear(6 * 2 * 2, 5)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn(self.conv1(x))), 2)
        x = nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


class Residual(nn.Module):
    """x + conv(relu(bn(conv(x)))), then relu."""

    def __init__(self, channels=3):
        super().__init__()
        self.conv1, self.bn = nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(x + self.conv2(torch.relu(self.bn(self.conv1(x)))))


class TransformerBlock(nn.Module):
    """Pre-norm self-attention and MLP, written out: Linear, LayerNorm, multi-head softmax attention, GELU."""

    def __init__(self, dim=8, heads=2):
        super().__init__()
        self.heads = heads
        self.norm1, self.qkv, self.proj = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.norm2, self.fc1, self.fc2 = nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

    def forward(self, x):
        batch, tokens, dim = x.shape
        head = dim // self.heads
        q, k, v = self.qkv(self.norm1(x)).split(dim, dim=-1)
        q, k, v = (t.reshape(batch, tokens, self.heads, head).transpose(1, 2) for t in (q, k, v))
        attention = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(head), dim=-1)
        x = x + self.proj((attention @ v).transpose(1, 2).reshape(batch, tokens, dim))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))


def mlp():
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))


MODELS = {  # name -> (build, input shape, dynamic batch)
    "mlp": (mlp, (6, 5), True),
    "convnet": (ConvNet, (3, 1, 8, 8), True),
    "residual": (Residual, (2, 3, 5, 5), True),
    "transformer": (TransformerBlock, (2, 4, 8), False),
}


def as_if_trained(model):
    """Distinct parameter values and batch-norm statistics, as a trained model has (torch's exporter would
    merge initializers holding equal values, e.g. two fresh LayerNorm weights of ones, into one)."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """name -> (torch model in eval mode, path of its ONNX file, an input batch)."""
    folder = tmp_path_factory.mktemp("torch_models")
    out = {}
    for name, (build, shape, dynamic) in MODELS.items():
        torch.manual_seed(0)
        model = build()
        as_if_trained(model)
        model.eval()
        x = torch.randn(*shape)
        path = folder / f"{name}.onnx"
        axes = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y"], dynamo=False,
                              opset_version=17, dynamic_axes=axes,
                              training=torch.onnx.TrainingMode.PRESERVE)  # batch norms stay, not folded into convs
        out[name] = (model, path, x)
    return out


def imported(path):
    """tfl.onnx.load(path), with the ONNX op counts checked: each model exercises the ops it is there for."""
    prog = tfl.onnx.load(path)
    wanted = {"mlp": {"Gemm", "Relu", "Tanh"}, "convnet": {"Conv", "BatchNormalization", "MaxPool", "AveragePool",
                                                          "Flatten", "Gemm"},
              "residual": {"Conv", "BatchNormalization", "Add", "Relu"},
              "transformer": {"MatMul", "Softmax", "LayerNormalization", "Erf", "Split", "Transpose", "Reshape"}}
    assert wanted[path.stem] <= set(prog.op_counts), (path.stem, prog.op_counts)
    return prog


def torch_parameter_of(variable, model):
    """(torch parameter, transposed?) holding the same numbers as an imported Variable.

    The exporter folds W.T into a new initializer for a Linear applied to 3-D inputs (MatMul)."""
    for parameter in model.parameters():
        value = parameter.detach().numpy()
        if value.shape == variable.value.shape and np.array_equal(value, variable.value):
            return parameter, False
        if value.ndim == 2 and value.T.shape == variable.value.shape and np.array_equal(value.T, variable.value):
            return parameter, True
    raise AssertionError(f"no torch parameter holds the values of '{variable.name}'")


@pytest.mark.parametrize("name", list(MODELS))
def test_outputs_equal_torch(exported, name, backend):
    model, path, x = exported[name]
    prog = imported(path)
    got = prog({"x": x.numpy()})["y"]
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    if MODELS[name][2]:  # a dynamic batch: another batch size runs in the same graph
        bigger = torch.randn(5, *x.shape[1:])
        np.testing.assert_allclose(prog({"x": bigger.numpy()})["y"], model(bigger).detach().numpy(),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(MODELS))
def test_gradients_equal_torch_autograd(exported, name, backend):
    model, path, x = exported[name]
    prog = imported(path)
    y = prog.outputs["y"]
    target = np.random.default_rng(0).standard_normal(y.shape if None not in y.shape else
                                                     (x.shape[0],) + y.shape[1:]).astype(np.float32)
    loss = tfl.reduce_mean(tfl.square(y - target))
    trainable = [v for v in prog.variables if v.trainable]
    grads = tfl.gradients(loss, trainable)
    with tfl.Session() as sess:
        got = sess.run(grads, {prog.inputs["x"]: x.numpy()})
    model.zero_grad()
    torch.mean((model(x) - torch.from_numpy(target)) ** 2).backward()
    assert len(trainable) == len(list(model.parameters()))  # every parameter, and no running statistic
    for variable, grad in zip(trainable, got):
        parameter, transposed = torch_parameter_of(variable, model)
        expected = parameter.grad.numpy().T if transposed else parameter.grad.numpy()
        np.testing.assert_allclose(grad, expected, rtol=1e-4, atol=1e-5, err_msg=variable.name)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_twenty_adam_steps_equal_torch(exported, name, backend):
    model, path, x = exported[name]
    model = copy.deepcopy(model)  # the exported one stays as the file has it, for the other tests
    prog = imported(path)
    y = prog.outputs["y"]
    rng = np.random.default_rng(1)
    target = rng.standard_normal((x.shape[0],) + tuple(y.shape[1:])).astype(np.float32)
    loss = tfl.reduce_mean(tfl.square(y - target))
    trainable = [v for v in prog.variables if v.trainable]
    train = tfl.optim.Adam(lr=0.01).minimize(loss, var_list=trainable)
    pairs = [(v, *torch_parameter_of(v, model)) for v in trainable]
    tuned = {id(p): p for _, p, _ in pairs}
    optimizer = torch.optim.Adam(list(tuned.values()), lr=0.01)
    losses, torch_losses, inert = [], [], {}
    with tfl.Session() as sess:
        for step in range(20):
            losses.append(sess.run([loss, train], {prog.inputs["x"]: x.numpy()})[0])
            optimizer.zero_grad()
            torch_loss = torch.mean((model(x) - torch.from_numpy(target)) ** 2)
            torch_loss.backward()
            if step == 0:  # the key bias adds one number to every score of a softmax row, which cancels: its
                # gradient is rounding noise, which Adam scales up to full steps, so it is no value to compare
                inert = {key: p.grad.abs().numpy() < 1e-6 for key, p in tuned.items()}
            optimizer.step()
            torch_losses.append(torch_loss.item())
        trained = sess.run(y, {prog.inputs["x"]: x.numpy()})
    np.testing.assert_allclose(losses, torch_losses, rtol=1e-4, atol=1e-6)
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(trained, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    for variable, parameter, transposed in pairs:
        expected, compared = parameter.detach().numpy(), ~inert[id(parameter)]
        if transposed:
            expected, compared = expected.T, compared.T
        np.testing.assert_allclose(variable.value[compared], expected[compared], rtol=1e-4, atol=1e-5,
                                   err_msg=variable.name)


class Decoder(nn.Module):
    """Two inputs: token ids (Embedding, a mean) added to an image, then a transposed conv, GroupNorm, SiLU, a
    grouped conv, bilinear Upsample and a channel max."""

    def __init__(self):
        super().__init__()
        self.embed, self.up = nn.Embedding(10, 4), nn.ConvTranspose2d(4, 6, 2, stride=2)
        self.norm, self.conv = nn.GroupNorm(2, 6), nn.Conv2d(6, 3, 3, padding=1, groups=3)
        self.resize = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)

    def forward(self, tokens, image):
        h = self.up(image + self.embed(tokens).mean(1)[:, :, None, None])
        return torch.sigmoid(self.resize(self.conv(nn.functional.silu(self.norm(h))))).amax(dim=1)


def test_a_two_input_decoder_equals_torch_in_outputs_and_gradients(tmp_path, backend):
    torch.manual_seed(0)
    model = Decoder()
    as_if_trained(model)
    model.eval()
    tokens, image = torch.tensor([[1, 2, 3], [4, 5, 9]]), torch.randn(2, 4, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (tokens, image), str(tmp_path / "decoder.onnx"), input_names=["tokens", "image"],
                          output_names=["y"], dynamo=False, opset_version=17,
                          dynamic_axes={"tokens": {0: "batch"}, "image": {0: "batch"}, "y": {0: "batch"}})
    prog = tfl.onnx.load(tmp_path / "decoder.onnx")
    assert {"Gather", "ConvTranspose", "InstanceNormalization", "Resize", "ReduceMax"} <= set(prog.op_counts)
    feeds = {"tokens": tokens.numpy(), "image": image.numpy()}
    np.testing.assert_allclose(prog(feeds)["y"], model(tokens, image).detach().numpy(), rtol=1e-5, atol=1e-6)
    named = dict(model.named_parameters())
    trainable = [v for v in prog.variables if v.name in named]  # GroupNorm's affine is exported folded, renamed
    grads = tfl.gradients(tfl.reduce_sum(tfl.square(prog.outputs["y"])), trainable)
    with tfl.Session() as sess:
        got = sess.run(grads, prog.feed_dict(feeds))
    torch.sum(model(tokens, image) ** 2).backward()
    assert {v.name for v in trainable} == {"embed.weight", "up.weight", "up.bias", "conv.weight", "conv.bias"}
    for variable, grad in zip(trainable, got):
        np.testing.assert_allclose(grad, named[variable.name].grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=variable.name)
