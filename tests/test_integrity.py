"""The harness's integrity rule: code that reaches into the grader's objects, found in source."""

from __future__ import annotations

import pytest

from grader.intake.integrity import ALWAYS_PARSED_CHARS, Reach, reaching_message, reaching_uses


def reach(text: str) -> Reach:
    return reaching_uses(text, compile(text, "part.py", "exec", dont_inherit=True))


def uses(text: str) -> list[str]:
    """Where `text` is refused."""
    return list(reach(text).refused)


HONEST = {
    "layers by computed name on the method's own self": (
        "import torch\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        for i in range(3):\n"
        "            x = getattr(self, f'layer{i}')(x)\n"
        "        self.__dict__.update({})\n"
        "        return x\n"
    ),
    "gc.collect before timing": "import gc\ngc.collect()\n",
    "vars of an argparse namespace under a main guard": (
        "import argparse\n"
        "if __name__ == '__main__':\n"
        "    print(vars(argparse.ArgumentParser().parse_args()))\n"
        "    import sys\n"
        "    sys._getframe()\n"
    ),
    "vars of an object": "def settings(config):\n    return vars(config)\n",
    "getattr with a module-level constant name": (
        "import torch\nOPTIMIZER = 'SGD'\nopt = getattr(torch.optim, OPTIMIZER)\n"
    ),
    "a leftover breakpoint": "DEBUG = False\nif DEBUG:\n    breakpoint()\n",
    "torch settings": "import torch\ntorch.backends.cudnn.benchmark = True\n",
    "environment variables": "import os\nos.environ['OMP_NUM_THREADS'] = '1'\n",
    "a message that mentions a frame": "raise ValueError('no f_globals here, sorry')\n",
    "a docstring that names them": '"""Uses no sys._getframe, gc.get_objects or eval."""\n',
    "an activation picked from torch by name": (
        "import torch.nn as nn\nfrom torch import optim\n"
        "def make(name, opt):\n    return getattr(nn, name)(), getattr(optim, opt)\n"
    ),
    "a head set by a path": "def put(parent, attr, value):\n    setattr(parent, attr, value)\n",
    "a log line from locals": "def log(loss):\n    print('{loss:.3f}'.format(**locals()))\n",
    "a Colab check": "import sys\nIN_COLAB = 'google.colab' in sys.modules\n",
}

REACHING = {
    "sys._getframe": ("import sys\nf = sys._getframe(1).f_globals\n", "._getframe"),
    "gc's object lists": ("import gc\ngc.get_objects()\n", ".get_objects"),
    "a star import of gc": ("from gc import *\nget_objects()\n", "from gc import *"),
    "a star import of sys": ("from sys import *\n_getframe(1)\n", "from sys import *"),
    "a name built from pieces": (
        "import sys\ngetattr(sys, '_get' + 'frame')\n",
        "a string naming _getframe",
    ),
    "builtins": ("import builtins\n", "import of builtins"),
    "__builtins__": ("b = __builtins__\n", "__builtins__"),
    "a builtin's module": ("b = print.__self__\n", ".__self__"),
    "another module's sys": ("import torch\ntorch.sys\n", "torch.sys"),
    "match patterns that walk frames": (
        "def f(e):\n    match e:\n        case object(tb_frame=object(f_back=x)):\n"
        "            return x\n",
        ".tb_frame",
    ),
    "the standard library patched": (
        "import posix\nposix._exit = print\n",
        "posix._exit replaced",
    ),
    "the standard library patched by setattr": (
        "import os\nsetattr(os, '_exit', print)\n",
        "setattr on os",
    ),
    "__name__ assigned to run a main block": (
        "__name__ = '__main__'\nif __name__ == '__main__':\n    pass\n",
        "__name__ assigned",
    ),
    "a pickle naming builtins": ("data = b'cbuiltins\\neval\\n'\n", "a string naming builtins"),
    "a string naming a frame attribute": ("name = 'f_globals'\n", "a string naming f_globals"),
}

# Code that looks names up at run time: honest code does it too (getattr(nn, activation)),
# so the part is not refused, but its checks hidden inputs cannot verify do not count.
LOOKUPS = {
    "getattr with a name from elsewhere": (
        "import sys\ndef read(name):\n    return getattr(sys, name)\n",
        "getattr",
    ),
    "getattr passed on as a value": (
        "read = getattr\ndef f(x, name):\n    return read(x, name)\n",
        "getattr passed on as a value",
    ),
    "inspect": ("import inspect\n", "import of inspect"),
    "a leftover pdb": ("import pdb  # pdb.set_trace()\n", "import of pdb"),
    "a traceback's frames": ("def f(e):\n    return e.__traceback__\n", ".__traceback__"),
    "getattr on what torch returned, by a variable name": (
        "import torch\ndef hop(a, b):\n    return getattr(getattr(torch, a), b)\n",
        "getattr",
    ),
    "getattr on a model by a variable name": (
        "def part(model, name):\n    return getattr(model, name)\n",
        "getattr",
    ),
    "getattr in a plain function taking self": (
        "def reach(self, name):\n    return getattr(self, name)\n",
        "getattr",
    ),
    "self rebound in a method": (
        "import sys\nclass C:\n    def m(self):\n        self = sys\n"
        "        return getattr(self, 'a' + 'b')\n",
        "getattr",
    ),
    "a constant name rebound": (
        "import sys\nX = 'a'\ndef f(y):\n    global X\n    X = y\ngetattr(sys, X)\n",
        "getattr",
    ),
    "sys.modules": ("import sys as s\nm = s.modules['torch']\n", "sys.modules"),
    "vars of a module": ("import sys\nvars(sys)\n", "vars()"),
    "eval": ("eval('nn.ReLU')\n", "eval()"),
    "globals": ("globals()['Net']\n", "globals()"),
    "importlib": ("import importlib\n", "import of importlib"),
    # What a probe's in-process check calls, replaced from the student's file.
    "a torch function replaced": (
        "import torch\ntorch.allclose = lambda *a, **k: True\n",
        "torch.allclose replaced",
    ),
    "a tensor method replaced": (
        "from torch import Tensor\nTensor.__eq__ = lambda a, b: True\n",
        "Tensor.__eq__ replaced",
    ),
    "a test module's assertion replaced": (
        "import test_finetuning\ntest_finetuning.assert_losses_close = print\n",
        "test_finetuning.assert_losses_close replaced",
    ),
    "setattr on torch": ("import torch\nsetattr(torch, 'isclose', max)\n", "setattr on torch"),
}


@pytest.mark.parametrize("text", HONEST.values(), ids=HONEST.keys())
def test_honest_code_is_neither_refused_nor_held_back(text: str) -> None:
    assert reach(text) == Reach()


@pytest.mark.parametrize(("text", "what"), LOOKUPS.values(), ids=LOOKUPS.keys())
def test_names_looked_up_at_run_time_hold_back_checks_but_refuse_nothing(
    text: str, what: str
) -> None:
    found = reach(text)
    assert found.refused == ()
    assert any(what in use for use in found.lookups), found


@pytest.mark.parametrize(("text", "what"), REACHING.values(), ids=REACHING.keys())
def test_code_that_reaches_the_grader_is_refused(text: str, what: str) -> None:
    found = uses(text)
    assert any(what in use for use in found), found


def test_a_large_file_is_parsed_only_when_its_compiled_code_is_suspect() -> None:
    padding = "x = 1\n" * (ALWAYS_PARSED_CHARS // 6 + 1)
    assert uses(padding) == []
    assert uses(padding + "import sys\nsys._getframe()\n") != []
    assert uses(padding + "import posix\nposix._exit = print\n") != []


def test_the_message_names_the_first_uses_and_counts_the_rest() -> None:
    message = reaching_message(
        {"a.py": ["line 1: x", "line 2: y"], "b.py": ["line 3: z", "line 4: w"]}
    )
    assert "a.py line 1: x; a.py line 2: y; b.py line 3: z and 1 more" in message
    assert message.startswith("a.py, b.py reaches into the grader's own objects")
