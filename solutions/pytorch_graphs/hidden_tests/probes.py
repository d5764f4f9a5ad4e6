"""Probes of the hidden suites of `pytorch_graphs`.

A probe builds its inputs from `seed` (CPU generator, then `.to(device)`), calls the
functions of the part it is given (the reference module on the trusted side, the
student's module inside the sandbox) and returns plain data: detached tensors, numbers,
strings, bools and lists/dicts of them.

Shipped to the student side verbatim: standard library and torch only, no reference
code, no secrets. Models and optimizers that a part receives are built here with plain
`torch.nn` code, never with the student's other parts. Files are written only in a fresh
temporary folder, which the sandbox keeps private to the job.
"""

from __future__ import annotations

import builtins
import importlib
import io
import operator
import os
import pickle
import random
import tempfile
from collections import OrderedDict
from pathlib import Path

import torch
import torch.nn.functional as F

# torch.load reads every file with weights_only=True while this is set, whatever its caller
# asked for (torch.export.load asks for a full unpickler when weights_only fails).
_FORCE_WEIGHTS_ONLY = "TORCH_FORCE_WEIGHTS_ONLY_LOAD"

# --------------------------------------------------------------------------- helpers


def _dtype(name: str) -> torch.dtype:
    dt = getattr(torch, name)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"not a dtype: {name!r}")
    return dt


def _t(t):
    """A detached plain copy of a tensor, or the object unchanged when it is not one."""
    if isinstance(t, torch.Tensor):
        return t.detach().clone().as_subclass(torch.Tensor)
    return t


def _type_name(obj) -> str:
    return type(obj).__name__


def _losses(losses):
    """The losses as a list of floats, plus what the student actually returned."""
    if not isinstance(losses, (list, tuple, torch.Tensor)):
        return {"losses": None, "losses_type": _type_name(losses), "loss_item_types": []}
    items = list(losses)
    return {
        "losses": [float(v) for v in items],
        "losses_type": _type_name(losses),
        "loss_item_types": sorted({_type_name(v) for v in items}),
    }


def no_losses_message(out, function):
    """For the tests (trusted side): what to say when `function` returned no list of losses."""
    return (
        f"{function} returned a {out['losses_type']}, expected a Python list of floats, one "
        "loss.item() per step (did you forget `return losses`?)."
    )


def _randn(g, *shape, dt, device):
    return torch.randn(*shape, generator=g, dtype=dt).to(device)


def _uniform_state(g, shapes, dt, device):
    """A state dict of the given {key: shape}, uniform in +-1/sqrt(fan_in) like nn.Linear."""
    state = {}
    for key, shape in shapes.items():
        fan_in = shape[-1] if len(shape) > 1 else shape[0]
        value = (torch.rand(*shape, generator=g, dtype=dt) * 2 - 1) / fan_in**0.5
        state[key] = value.to(device)
    return state


def _state(model):
    return {k: _t(v) for k, v in model.state_dict().items()}


def _structure(model):
    state = model.state_dict()
    return {
        "is_module": isinstance(model, torch.nn.Module),
        "keys": list(state.keys()),
        "shapes": {k: list(v.shape) for k, v in state.items()},
        "n_parameters": len(list(model.parameters())),
    }


# --------------------------------------------------------------------------- dynamic_net


def _dynamic_shapes(d_in, h, d_out):
    return {
        "input_linear.weight": (h, d_in),
        "input_linear.bias": (h,),
        "middle_linear.weight": (h, h),
        "middle_linear.bias": (h,),
        "output_linear.weight": (d_out, h),
        "output_linear.bias": (d_out,),
    }


def _dynamic_net(part, seed, device, dtype, dims):
    d_in, h, d_out = dims
    dt = _dtype(dtype)
    model = part.DynamicNet(d_in, h, d_out).to(device=device, dtype=dt)
    g = torch.Generator().manual_seed(seed)
    model.load_state_dict(_uniform_state(g, _dynamic_shapes(d_in, h, d_out), dt, device))
    return model


def dynamic_net_structure(part, *, dims):
    return _structure(part.DynamicNet(*dims))


def dynamic_net_forward_backward(part, *, seed, device, dtype, dims, n):
    """For each depth 0..3: the output, and the gradients of sum(output * upstream)."""
    model = _dynamic_net(part, seed, device, dtype, dims)
    dt = _dtype(dtype)
    g = torch.Generator().manual_seed(seed + 1)
    x = _randn(g, n, dims[0], dt=dt, device=device)
    upstream = _randn(g, n, dims[2], dt=dt, device=device)
    outputs, grads = [], []
    for num_middle in range(4):
        model.zero_grad(set_to_none=True)
        y = model(x, num_middle)
        (y * upstream).sum().backward()
        outputs.append(_t(y))
        grads.append(
            {
                name: _t(p.grad) if p.grad is not None else None
                for name, p in model.named_parameters()
            }
        )
    return {"outputs": outputs, "grads": grads}


def sample_num_middle(part, *, seed, draws):
    rng = random.Random(seed)
    values = [part.sample_num_middle(rng) for _ in range(draws)]
    return {
        "values": [int(v) for v in values],
        "types": sorted({_type_name(v) for v in values}),
        # What the generator draws next shows how many draws each call took.
        "next_draw": rng.random(),
    }


def train_dynamic_net(part, *, seed, device, dtype, dims, n, lr, steps):
    model = _dynamic_net(part, seed, device, dtype, dims)
    dt = _dtype(dtype)
    g = torch.Generator().manual_seed(seed + 1)
    x = _randn(g, n, dims[0], dt=dt, device=device)
    y = _randn(g, n, dims[2], dt=dt, device=device)
    rng = random.Random(seed)
    # Depths are drawn by the student's code from the generator the test gives it; the
    # global generator is reseeded differently so that code using it shows.
    random.seed(seed + 2)
    losses = part.train_dynamic_net(model, x, y, rng, learning_rate=lr, steps=steps)
    out = _losses(losses)
    out.update(state=_state(model), next_draw=rng.random())
    return out


# --------------------------------------------------------------------------- static_graphs


def _conditional_inputs(seed, device, dtype, n, d_in, d_out):
    g = torch.Generator().manual_seed(seed)
    dt = _dtype(dtype)
    x = _randn(g, n, d_in, dt=dt, device=device)
    w1 = _randn(g, d_in, d_out, dt=dt, device=device)
    w2 = _randn(g, d_in, d_out, dt=dt, device=device)
    # A second x of the same shape: the programs are run on inputs they were not traced with.
    x_new = _randn(g, n, d_in, dt=dt, device=device)
    return x, w1, w2, x_new


def _z(value, x):
    return torch.tensor(value, dtype=x.dtype, device=x.device)


def _graph_summary(program):
    """The operations at the top of an exported program's graph."""
    targets = [node.target for node in program.graph.nodes if node.op == "call_function"]
    return {
        "cond_nodes": sum(target is torch.ops.higher_order.cond for target in targets),
        "matmul_nodes": sum("mm" in str(target) or "matmul" in str(target) for target in targets),
    }


def _outcome(call):
    """The value of call(), or the name of the exception it raised."""
    try:
        return {"value": _t(call()), "error": ""}
    except Exception as exc:  # deliberate: a guard failure is an expected result here
        return {"value": None, "error": _type_name(exc)}


def _saved_program(program):
    """What an export function returned, as the bytes torch.export.save writes for it.

    Judged elsewhere (`run_saved_program`), never here: an object that only claims to be an
    ExportedProgram (its __class__, a made-up graph) answers any question asked of it in the
    process that made it, but it cannot be saved as a program that loads and runs.
    """
    out = {"type": _type_name(program), "program": None, "error": ""}
    buffer = io.BytesIO()
    try:
        torch.export.save(program, buffer)
    except Exception as exc:  # deliberate: the test says what was returned instead
        out["error"] = f"{_type_name(exc)}: {exc}"[:300]
        return out
    out["program"] = torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)
    return out


def run_saved_program(part, *, program, seed, device, dtype, n, d_in, d_out, z_values, z_kind):
    """Load a saved exported program, summarise its graph and run it on new inputs.

    Runs where no student code does (the `judge` fixture's fresh job, or the trusted side for
    the reference's program); `part` is unused. Every tensor the file holds is loaded with
    weights_only (torch.export.load would otherwise fall back to a full unpickler).
    """
    x, w1, w2, x_new = _conditional_inputs(seed, device, dtype, n, d_in, d_out)
    previous = os.environ.get(_FORCE_WEIGHTS_ONLY)
    os.environ[_FORCE_WEIGHTS_ONLY] = "1"
    try:
        loaded = torch.export.load(io.BytesIO(program.cpu().numpy().tobytes()))
    except Exception as exc:  # deliberate: the test says the file was no program
        return {"loaded": False, "error": f"{_type_name(exc)}: {exc}"[:300]}
    finally:
        if previous is None:
            del os.environ[_FORCE_WEIGHTS_ONLY]
        else:
            os.environ[_FORCE_WEIGHTS_ONLY] = previous
    out = {"loaded": True, "error": "", **_graph_summary(loaded)}
    module = loaded.module()
    kinds = {"tensor": lambda value: _z(value, x), "float": float}
    out["runs"] = [_outcome(lambda z=z: module(x_new, kinds[z_kind](z), w1, w2)) for z in z_values]
    return out


def conditional_eager(part, *, seed, device, dtype, n, d_in, d_out, z_values):
    x, w1, w2, _ = _conditional_inputs(seed, device, dtype, n, d_in, d_out)
    tensors = [_t(part.conditional(x, _z(z, x), w1, w2)) for z in z_values]
    floats = [_t(part.conditional(x, float(z), w1, w2)) for z in z_values]
    return {"tensor_z": tensors, "float_z": floats}


def export_conditional(part, *, seed, device, dtype, n, d_in, d_out, z_example):
    x, w1, w2, _ = _conditional_inputs(seed, device, dtype, n, d_in, d_out)
    save = _saved_program
    return save(part.export_conditional(x, _z(z_example, x), w1, w2))


def conditional_module(part, *, seed, device, dtype, n, d_in, d_out, z_values):
    """Conditional() run eagerly: torch.cond also works outside export."""
    x, w1, w2, _ = _conditional_inputs(seed, device, dtype, n, d_in, d_out)
    module = part.Conditional()
    return {
        "is_module": isinstance(module, torch.nn.Module),
        "outputs": [_t(module(x, _z(z, x), w1, w2)) for z in z_values],
    }


def trace_conditional(part, *, seed, device, dtype, n, d_in, d_out, z_example):
    x, w1, w2, _ = _conditional_inputs(seed, device, dtype, n, d_in, d_out)
    save = _saved_program
    return save(part.trace_conditional(x, z_example, w1, w2))


# --------------------------------------------------------------------------- checkpointing


def _regression_net(seed, device, dtype, dims):
    """A plain torch.nn net with the given sizes, its weights drawn from seed."""
    d_in, h, d_out = dims
    dt = _dtype(dtype)
    net = torch.nn.Sequential(
        OrderedDict(
            linear1=torch.nn.Linear(d_in, h),
            relu=torch.nn.ReLU(),
            linear2=torch.nn.Linear(h, d_out),
        )
    ).to(device=device, dtype=dt)
    shapes = {
        "linear1.weight": (h, d_in),
        "linear1.bias": (h,),
        "linear2.weight": (d_out, h),
        "linear2.bias": (d_out,),
    }
    net.load_state_dict(_uniform_state(torch.Generator().manual_seed(seed), shapes, dt, device))
    return net


def _regression_data(seed, device, dtype, n, dims):
    g = torch.Generator().manual_seed(seed + 1)
    dt = _dtype(dtype)
    return _randn(g, n, dims[0], dt=dt, device=device), _randn(g, n, dims[2], dt=dt, device=device)


def _adam(model, lr):
    return torch.optim.Adam(model.parameters(), lr=lr)


def _train(model, optimizer, x, y, steps):
    """The probe's own training loop, as the contract describes it."""
    losses = []
    for _ in range(steps):
        loss = F.mse_loss(model(x), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses


def _optimizer_summary(state_dict):
    """An optimizer's state_dict as plain data (its per-parameter state keyed by position)."""
    state = {
        str(index): {name: _t(value) for name, value in entry.items()}
        for index, entry in state_dict.get("state", {}).items()
    }
    groups = [
        {key: value for key, value in group.items() if key in ("lr", "betas", "eps", "params")}
        for group in state_dict.get("param_groups", [])
    ]
    return {"state": state, "param_groups": groups}


def _load_checkpoint_file(path):
    """Read a checkpoint the way the contract promises it can be read."""
    try:
        return torch.load(path, weights_only=True), ""
    except Exception as exc:  # deliberate: report, the test says what was wrong
        return None, f"{_type_name(exc)}: {exc}"[:500]


def weights_round_trip(part, *, seed, device, dtype, dims, n):
    """save_weights from one model, load_weights into a differently initialised one."""
    source = _regression_net(seed, device, dtype, dims)
    target = _regression_net(seed + 7, device, dtype, dims)
    x, _ = _regression_data(seed, device, dtype, n, dims)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "weights.pt"
        part.save_weights(source, path)
        saved, error = _load_checkpoint_file(path)
        returned = part.load_weights(target, path)
    with torch.no_grad():
        output = target(x)
    return {
        "saved_keys": sorted(saved) if isinstance(saved, dict) else None,
        "saved_type": _type_name(saved),
        "load_error": error,
        "returned_same_model": returned is target,
        "state": _state(target),
        "output": _t(output),
    }


# The exit status of a job whose checkpoint's hidden code ran.
CODE_RAN_EXIT_STATUS = 86


class _Call:
    """Unpickles as `function(*arguments)`, each argument unpickled first (a nested `_Call`
    is one more call): how a malicious checkpoint runs code."""

    def __init__(self, function, *arguments):
        self.function, self.arguments = function, arguments

    def __call__(self, *arguments):  # pickle saves only a callable as the function of a call
        raise TypeError("a _Call only runs when unpickled")

    def __reduce__(self):
        return (self.function, self.arguments)


def _code_that_ends_the_process(seed):
    """What the untrusted file runs when unpickled: posix._exit, which ends the process.

    Nothing after the student's call decides whether the code ran: a flag the probe read
    afterwards could be reset by the code that set it. An exit cannot be undone, and the
    trusted side sees its status. The seed spells the call one of many ways (the names
    built in pieces cut anywhere, looked up through one of several functions), so a loader
    that refuses only the files it has seen, and loads anything else without weights_only,
    still runs this one.
    """
    draw = random.Random(seed)

    def pieces(text):
        cut = draw.randint(1, len(text) - 1)
        return _Call(draw.choice([operator.add, operator.concat]), text[:cut], text[cut:])

    module = _Call(draw.choice([importlib.import_module, builtins.__import__]), pieces("posix"))
    if draw.random() < 0.5:
        exit_function = _Call(getattr, module, pieces("_exit"))
    else:
        exit_function = _Call(_Call(operator.attrgetter, pieces("_exit")), module)
    return _Call(exit_function, CODE_RAN_EXIT_STATUS)


def load_weights_refuses_code(part, *, seed, device, dtype, dims):
    """load_weights on a file whose unpickling would run code: it must refuse to run it."""
    model = _regression_net(seed, device, dtype, dims)
    state = {key: value.detach().clone() for key, value in model.state_dict().items()}
    state["linear1.weight"] = state["linear1.weight"] + 1
    copy_state = _state
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "untrusted.pt"
        payload = {**state, "payload": _code_that_ends_the_process(seed)}
        torch.save(payload, path, pickle_protocol=pickle.HIGHEST_PROTOCOL)
        try:
            part.load_weights(model, path)
            error = ""
        except NotImplementedError:
            raise
        except Exception as exc:  # deliberate: refusing the file is the right outcome
            error = _type_name(exc)
    return {"refused": bool(error), "error": error, "state": copy_state(model)}


def save_checkpoint(part, *, seed, device, dtype, dims, n, lr, steps):
    model = _regression_net(seed, device, dtype, dims)
    optimizer = _adam(model, lr)
    x, y = _regression_data(seed, device, dtype, n, dims)
    losses = _train(model, optimizer, x, y, steps)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checkpoint.pt"
        part.save_checkpoint(path, model, optimizer, steps, losses)
        saved, error = _load_checkpoint_file(path)
    out = {"load_error": error, "saved_type": _type_name(saved), "keys": None}
    if isinstance(saved, dict):
        out["keys"] = sorted(str(key) for key in saved)
        model_state = saved.get("model")
        out["model"] = (
            {str(k): _t(v) for k, v in model_state.items()}
            if isinstance(model_state, dict)
            else _type_name(model_state)
        )
        optimizer_state = saved.get("optimizer")
        out["optimizer"] = (
            _optimizer_summary(optimizer_state)
            if isinstance(optimizer_state, dict)
            else _type_name(optimizer_state)
        )
        out["step"] = saved.get("step") if isinstance(saved.get("step"), int) else None
        out["losses"] = [float(v) for v in saved.get("losses") or []]
    return out


def _write_checkpoint(path, seed, device, dtype, dims, n, lr, steps):
    """Train `steps` steps and save a checkpoint in the contract's format; return the losses."""
    model = _regression_net(seed, device, dtype, dims)
    optimizer = _adam(model, lr)
    x, y = _regression_data(seed, device, dtype, n, dims)
    losses = _train(model, optimizer, x, y, steps)
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "step": steps,
            "losses": losses,
        },
        path,
    )
    return losses


def load_checkpoint(part, *, seed, device, dtype, dims, n, lr, steps):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checkpoint.pt"
        _write_checkpoint(path, seed, device, dtype, dims, n, lr, steps)
        # A fresh model and optimizer, as after a restart.
        model = _regression_net(seed + 7, device, dtype, dims)
        optimizer = _adam(model, lr)
        result = part.load_checkpoint(path, model, optimizer)
    step, losses = result if isinstance(result, tuple) and len(result) == 2 else (None, None)
    return {
        "result_type": _type_name(result),
        "step": step if isinstance(step, int) else None,
        "step_type": _type_name(step),
        "losses": [float(v) for v in losses] if isinstance(losses, list | tuple) else None,
        "model": _state(model),
        "optimizer": _optimizer_summary(optimizer.state_dict()),
    }


def resume_training(part, *, seed, device, dtype, dims, n, lr, stop_at, total_steps):
    x, y = _regression_data(seed, device, dtype, n, dims)
    # Bound before the student's call, and nothing computed after it but copies: code that
    # rewrites this module's globals from a frame changes nothing that is reported.
    copy_losses, copy_state = _losses, _state
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checkpoint.pt"
        _write_checkpoint(path, seed, device, dtype, dims, n, lr, stop_at)
        model = _regression_net(seed + 7, device, dtype, dims)
        optimizer = _adam(model, lr)
        losses = part.resume_training(path, model, optimizer, x, y, total_steps)
    out = copy_losses(losses)
    out.update(state=copy_state(model))
    return out


def uninterrupted_training(part, *, seed, device, dtype, dims, n, lr, total_steps):
    """Trusted side only: the losses of the run that was never interrupted (part unused).

    Never computed where student code runs: there, a rewritten probe could report it as the
    student's answer.
    """
    x, y = _regression_data(seed, device, dtype, n, dims)
    model = _regression_net(seed, device, dtype, dims)
    return _train(model, _adam(model, lr), x, y, total_steps)


# --------------------------------------------------------------------------- transfer_learning


class PretrainedNet(torch.nn.Module):
    """A stand-in for a downloaded model: a backbone of features and a classifier head."""

    def __init__(self, d_in, h, feature_dim, old_classes):
        super().__init__()
        self.backbone = torch.nn.Sequential(
            OrderedDict(
                linear1=torch.nn.Linear(d_in, h),
                norm=torch.nn.BatchNorm1d(h),
                relu=torch.nn.ReLU(),
                linear2=torch.nn.Linear(h, feature_dim),
                relu2=torch.nn.ReLU(),
            )
        )
        self.head = torch.nn.Linear(feature_dim, old_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def _pretrained(seed, device, dtype, dims):
    """A 'pretrained' model: weights and BatchNorm statistics drawn from seed."""
    d_in, h, feature_dim, old_classes = dims
    dt = _dtype(dtype)
    model = PretrainedNet(d_in, h, feature_dim, old_classes).to(device=device, dtype=dt)
    g = torch.Generator().manual_seed(seed)
    state = _uniform_state(
        g,
        {
            "backbone.linear1.weight": (h, d_in),
            "backbone.linear1.bias": (h,),
            "backbone.linear2.weight": (feature_dim, h),
            "backbone.linear2.bias": (feature_dim,),
            "head.weight": (old_classes, feature_dim),
            "head.bias": (old_classes,),
        },
        dt,
        device,
    )
    state["backbone.norm.weight"] = (1 + 0.1 * torch.randn(h, generator=g, dtype=dt)).to(device)
    state["backbone.norm.bias"] = (0.1 * torch.randn(h, generator=g, dtype=dt)).to(device)
    state["backbone.norm.running_mean"] = (0.2 * torch.randn(h, generator=g, dtype=dt)).to(device)
    state["backbone.norm.running_var"] = (0.5 + torch.rand(h, generator=g, dtype=dt)).to(device)
    state["backbone.norm.num_batches_tracked"] = torch.tensor(100, device=device)
    model.load_state_dict(state)
    return model


def _new_head_state(seed, device, dtype, feature_dim, num_classes):
    g = torch.Generator().manual_seed(seed + 3)
    return _uniform_state(
        g, {"weight": (num_classes, feature_dim), "bias": (num_classes,)}, _dtype(dtype), device
    )


def _classification_data(seed, device, dtype, n, d_in, num_classes):
    g = torch.Generator().manual_seed(seed + 1)
    x = _randn(g, n, d_in, dt=_dtype(dtype), device=device)
    labels = torch.randint(num_classes, (n,), generator=g).to(device)
    return x, labels


def replace_head(part, *, seed, device, dtype, dims, num_classes, n):
    model = _pretrained(seed, device, dtype, dims)
    backbone_before = _state(model.backbone)
    old_head = model.head
    torch.manual_seed(seed)
    returned = part.replace_head(model, num_classes)
    head = model.head
    out = {
        "returned_same_model": returned is model,
        "head_type": _type_name(head),
        "head_is_linear": isinstance(head, torch.nn.Linear),
        "head_replaced": head is not old_head,
        "head_shapes": {k: list(v.shape) for k, v in head.state_dict().items()},
        "head_dtypes": sorted({str(p.dtype) for p in head.parameters()}),
        "head_devices": sorted({p.device.type for p in head.parameters()}),
        "head_requires_grad": [bool(p.requires_grad) for p in head.parameters()],
        "backbone_requires_grad": {
            name: bool(p.requires_grad) for name, p in model.backbone.named_parameters()
        },
        "backbone_unchanged": all(
            torch.equal(backbone_before[k], v) for k, v in _state(model.backbone).items()
        ),
    }
    if out["head_is_linear"] and out["head_shapes"].get("weight") == [num_classes, dims[2]]:
        # With the test's weights in the new head, the whole model's output is comparable.
        head.load_state_dict(_new_head_state(seed, device, dtype, dims[2], num_classes))
        x, _ = _classification_data(seed, device, dtype, n, dims[0], num_classes)
        model.eval()
        with torch.no_grad():
            out["output"] = _t(model(x))
    return out


def _model_with_new_head(seed, device, dtype, dims, num_classes):
    """The pretrained model with a frozen backbone and a new head, built here."""
    model = _pretrained(seed, device, dtype, dims)
    for parameter in model.backbone.parameters():
        parameter.requires_grad_(False)
    model.head = torch.nn.Linear(dims[2], num_classes).to(device=device, dtype=_dtype(dtype))
    model.head.load_state_dict(_new_head_state(seed, device, dtype, dims[2], num_classes))
    return model


def head_optimizer(part, *, seed, device, dtype, dims, num_classes, n, lr):
    model = _model_with_new_head(seed, device, dtype, dims, num_classes)
    names = {id(p): name for name, p in model.named_parameters()}
    optimizer = part.head_optimizer(model, lr)
    out = {
        "type": _type_name(optimizer),
        "is_optimizer": isinstance(optimizer, torch.optim.Optimizer),
    }
    if out["is_optimizer"]:
        out["params"] = sorted(
            names.get(id(p), "a tensor that is not in the model")
            for group in optimizer.param_groups
            for p in group["params"]
        )
        out["groups"] = [
            {key: group.get(key) for key in ("lr", "momentum", "weight_decay", "nesterov")}
            for group in optimizer.param_groups
        ]
        # Two steps by hand: with momentum the second differs from plain SGD.
        x, labels = _classification_data(seed, device, dtype, n, dims[0], num_classes)
        model.eval()
        for _ in range(2):
            loss = F.cross_entropy(model(x), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        out["state"] = _state(model)
    return out


def train_head(part, *, seed, device, dtype, dims, num_classes, n, lr, steps):
    model = _model_with_new_head(seed, device, dtype, dims, num_classes)
    x, labels = _classification_data(seed, device, dtype, n, dims[0], num_classes)
    backbone_before = _state(model.backbone)
    model.train()  # train_head decides the modes itself
    losses = part.train_head(model, x, labels, learning_rate=lr, steps=steps)
    out = _losses(losses)
    out.update(
        head_state=_state(model.head),
        backbone_changed=sorted(
            k for k, v in _state(model.backbone).items() if not torch.equal(backbone_before[k], v)
        ),
        backbone_grads=sorted(
            name for name, p in model.backbone.named_parameters() if p.grad is not None
        ),
    )
    return out
