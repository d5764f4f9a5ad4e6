"""Source rules see forbidden names however they are written, and never read prose."""

from __future__ import annotations

import ast
import textwrap

import pytest

from grader.intake import integrity
from grader.intake.source_check import import_closure, inspect_source, module_imports
from grader.rules import Rule, StudentSource, cpu_only_uses, forbidden_uses

NO_AUTOGRAD = Rule(
    attributes=frozenset({"backward", "requires_grad_", "autograd"}),
    names=frozenset({"autograd"}),
    modules=("torch.autograd",),
)


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("loss.backward()", "line 1: .backward"),
        ("from torch import autograd", "import of torch.autograd"),
        ("import torch.autograd as ag", "import of torch.autograd"),
        ("w = w.requires_grad_()", ".requires_grad_"),
        ("f = getattr(torch, 'autograd')", "'autograd'"),
        ("f = getattr(torch, 'auto' + 'grad')", "getattr with a name built at run time"),
        ("f = getattr(torch, f'{a}grad')", "getattr with a name built at run time"),
        ("g = getattr", "getattr with a name built at run time"),
        ("f = torch.__dict__['autograd']", ".__dict__"),
        ("f = vars(torch)[name]", "vars with a name built at run time"),
        ("eval('torch.' + name)", "eval with a name built at run time"),
        ("m = __import__('tor' + 'ch')", "__import__"),
        ("import importlib", "import of importlib"),
        ("from operator import attrgetter", "import of operator"),
        ("with torch._C.DisableTorchFunction(): pass", "._C (torch's low-level"),
        ("y = torch.ops.aten.sigmoid(x)", ".ops (torch's low-level"),
        ("y = torch._C._VariableFunctions.sigmoid(x)", "._VariableFunctions"),
        ("from torch import _C", "import of torch._C"),
        # A package on the way is read too; torch's private packages hold the public APIs.
        ("from torch._C._functions import x", "import of torch._C._functions"),
        ("from torch._functorch.eager_transforms import jacfwd", "import of torch._functorch"),
        ("y = torch._refs.sigmoid(x)", "._refs (torch's low-level"),
        ("m = sys.modules['torch']", ".modules"),
        # Names resolved from text, and the modes that hide calls from the run-time checks.
        ("import pickle", "import of pickle"),
        ("from pydoc import locate", "import of pydoc"),
        ("f = locate('torch.autograd.grad')", "names autograd, torch.autograd"),
        (
            "e = loads(b'ctorch.autograd.variable\\nVariable._execution_engine\\n.')",
            "_execution_engine",
        ),
        ("from torch.utils._python_dispatch import _disable_current_modes", "_python_dispatch"),
        # Code in a string, which typing.get_type_hints evaluates.
        (
            "def f(e: \"__import__( 'tor' + 'ch' ).ones\"): pass",
            "code in a string: __import__ with a name built at run time",
        ),
        ("x: 'torch . autograd . grad' = None", "code in a string: .autograd"),
        # Ways to reach and rewrite the run-time check's probe.
        ("import gc", "import of gc"),
        ("f = inspect.currentframe().f_back", ".f_back"),
        ("probe.__code__ = fake.__code__", ".__code__"),
        ("g = sys._getframe(1).f_globals", ".f_globals"),
        ("state = time.perf_counter.__closure__[0].cell_contents", ".__closure__"),
        ("(mode,) = torch.overrides._get_current_function_mode_stack()", "_get_current_function"),
        # Frames' variables read without naming an attribute in code.
        ("scope = getattr(frame, 'f_locals')", "names f_locals"),
        ("scope = Formatter().get_field('0.f_locals', (frame,), {})", "names f_locals"),
        ("for frame, _ in traceback.walk_stack(None): pass", ".walk_stack"),
        ("frames = sys._current_frames()", "._current_frames"),
        ("import pdb", "import of pdb"),
        # Code shipped as data: unpickled by another name, or run in another process.
        ("from multiprocessing.reduction import ForkingPickler", "import of multiprocessing"),
        ("import subprocess", "import of subprocess"),
        ("w.__array_interface__ = {'data': (address, True)}", ".__array_interface__"),
        # Attributes named by syntax other than a dot.
        ("match torch:\n case object(autograd=object(grad=g)): pass", ".autograd"),
        ("match e:\n case object(_execution_engine=e): pass", "._execution_engine"),
        ("type(torch).__match_args__ = (name,)", ".__match_args__"),
        ("class F:\n __match_args__ = ('sig' + 'moid',)", "__match_args__ (attributes"),
        # A dataclass names its fields in __match_args__: `sigmoid: object` is the attribute.
        ("match torch:\n case Fetch(found): pass", "a class pattern with positional parts"),
        # Another thread, where torch's per-thread modes (the run-time checks) are not active.
        ("import threading", "import of threading"),
        ("tempfile._thread.start_new(f, ())", "._thread (work in another process"),
        ("from concurrent.futures import ThreadPoolExecutor", "import of concurrent"),
        ("t = torch.multiprocessing.Process(target=f)", ".multiprocessing"),
        ("from sys import _getframe", "import of sys._getframe"),
        ("from types import CodeType", "import of types.CodeType"),
        # Strings run as code: docstring examples, statements, annotations, dotted paths.
        ("import doctest", "import of doctest"),
        ("from timeit import Timer", "import of timeit"),
        ("import cProfile", "import of cProfile"),
        ("from rlcompleter import Completer", "import of rlcompleter"),
        ("import logging.config", "import of logging.config"),
        ("from unittest import mock", "import of unittest.mock"),
        ("hints = typing.get_type_hints(f)", ".get_type_hints"),
        ("from typing import ForwardRef", "import of typing.ForwardRef"),
        # Annotations set as data (functools.singledispatch evaluates them), every class.
        ("f.__annotations__ = {'x': text}", ".__annotations__"),
        ("[c for c in object.__subclasses__()]", ".__subclasses__"),
        # Work in a child process, which the run-time checks never see.
        ("pid = os.fork()", ".fork"),
        ("from os import posix_spawn", "import of os.posix_spawn"),
        ("os.system('python -c ...')", ".system"),
        ("import torch.multiprocessing as mp", "import of torch.multiprocessing"),
        ("from concurrent.futures import ProcessPoolExecutor", "import of concurrent.futures"),
    ],
)
def test_forbidden_and_dynamic_uses_are_found(source: str, found: str) -> None:
    uses = forbidden_uses(source, NO_AUTOGRAD)
    assert any(found in use for use in uses), uses


def test_a_pickled_builtin_sigmoid_is_found_and_prose_is_not() -> None:
    sigmoid_rule = Rule(attributes=frozenset({"sigmoid", "expit"}))
    assert forbidden_uses("s = loads(b'ctorch\\nsigmoid\\n.')", sigmoid_rule) == [
        "line 1: b'ctorch\\nsigmoid\\n.' (names sigmoid)"
    ]
    message = "raise ValueError('sigmoid got a tensor of the wrong dtype')"
    assert forbidden_uses(message, sigmoid_rule) == []
    assert forbidden_uses("hint = 'x @ w, then sigmoid of that'", sigmoid_rule) == []


def test_plain_code_docstrings_and_literal_getattr_pass() -> None:
    source = (
        '"""No autograd here: we never call backward()."""\n'
        "import torch\n"
        "def f(x, w):\n"
        '    """Uses no .backward and no autograd."""\n'
        "    # loss.backward() would be wrong here\n"
        "    n = getattr(x, 'shape')\n"
        "    return (x @ w).clamp(min=0), n\n"
    )
    assert forbidden_uses(source, NO_AUTOGRAD) == []


def test_a_syntax_error_is_raised() -> None:
    with pytest.raises(SyntaxError):
        forbidden_uses("def (:", NO_AUTOGRAD)


def test_numpy_on_tensors_is_found_as_cpu_only() -> None:
    source = (
        "import numpy as np\n"
        "from numpy import exp\n"
        "def f(x):\n"
        "    a = np.exp(-x.detach().numpy())\n"
        "    return exp(a), x.cpu()\n"
    )
    assert cpu_only_uses(source) == [
        "line 4: .numpy()",
        "line 4: np.exp()",
        "line 5: exp() from numpy",
    ]
    assert cpu_only_uses("import torch\ndef f(x):\n    return torch.exp(x)\n") == []


def test_a_rule_follows_the_submission_files_a_part_imports() -> None:
    files = {
        "manual_backprop.py": "from helpers import grads\nimport torch\n",
        # Reached through helpers.py; the cycle back to the part is read once.
        "helpers.py": "from . import deeper\nimport manual_backprop\ndef grads(): pass\n",
        "deeper.py": "def g(loss):\n    loss.backward()\n",
        "unrelated.py": "loss.backward()\n",
    }
    source = StudentSource("manual_backprop.py", files)
    assert source == files["manual_backprop.py"]
    assert forbidden_uses(source, NO_AUTOGRAD) == [
        "deeper.py (imported by manual_backprop.py) line 2: .backward"
    ]
    # A plain string is read alone.
    assert forbidden_uses(files["manual_backprop.py"], NO_AUTOGRAD) == []


def test_an_imported_file_that_does_not_parse_is_named() -> None:
    source = StudentSource("a.py", {"a.py": "import b\n", "b.py": "def (:\n"})
    with pytest.raises(SyntaxError, match=r"b\.py"):
        forbidden_uses(source, NO_AUTOGRAD)


def test_imports_are_read_from_live_code_anywhere_in_a_file() -> None:
    source = textwrap.dedent(
        """
        import os.path, torch as t
        from helpers.sub import f
        from . import sibling, other
        class A:
            def m(self):
                import inside_method
                return [__import__ for _ in ()]
        if 0:
            import dead
        lambda: __import__("by_name")
        """
    )
    found = list(module_imports(compile(source, "a.py", "exec")))
    assert found == ["os", "torch", "helpers", "sibling", "other", "inside_method"]


def test_a_part_s_import_closure_is_what_its_rule_reads() -> None:
    files = {
        "a.py": "import b\n",
        "b.py": "from . import c\n",
        "c.py": "import a\nx.backward()\n",
        # Named only in a string: neither read by the rule nor importable in a's jobs.
        "d.py": "x.backward()\n",
        "e.py": "import unittest.mock\nunittest.mock.patch('d.f')\n",
    }
    source = StudentSource("a.py", files)
    assert import_closure(source.imports, "a.py") == ["a.py", "b.py", "c.py"]
    assert import_closure(source.imports, "e.py") == ["e.py"]
    assert forbidden_uses(source, NO_AUTOGRAD) == ["c.py (imported by a.py) line 2: .backward"]


def _imports(source: str) -> tuple[str, ...]:
    return inspect_source("a.py", textwrap.dedent(source).encode()).imports


@pytest.mark.parametrize(
    ("source", "imports"),
    [
        # Grading imports the file: a top-level __main__ block never runs.
        ("import torch\nif __name__ == '__main__':\n    import helper\n", ("torch",)),
        ('import torch\nif "__main__" == __name__:\n    from helper import f\n', ("torch",)),
        ("import torch\nif (__name__ == '__main__'):  # a demo\n    import helper\n", ("torch",)),
        # Functions and classes defined in the block, and everything nested there.
        (
            """
            import torch
            if __name__ == "__main__":
                def check():
                    import inside_function
                class Demo:
                    import inside_class
                for _ in range(2):
                    import in_a_loop
            """,
            ("torch",),
        ),
        # Its else branch runs on import; so do elif tests and branches.
        (
            "if __name__ == '__main__':\n    import a\nelif x:\n    import b\nelse:\n"
            "    import c\n",
            ("b", "c"),
        ),
        # A module imported in live code too stays, wherever that import is.
        ("if __name__ == '__main__':\n    import helper\nimport helper\n", ("helper",)),
        (
            "def f():\n    import helper\nif __name__ == '__main__':\n    import helper\n",
            ("helper",),
        ),
        # Only the exact top-level guard: any other test may run on import.
        ("if __name__ != '__main__':\n    import a\n", ("a",)),
        ("if __name__ == '__main__' or x:\n    import a\n", ("a",)),
        ("if __name__ == '__main__' == y:\n    import a\n", ("a",)),
        ("if __name__ == b'__main__':\n    import a\n", ("a",)),
        ("if name == '__main__':\n    import a\n", ("a",)),
        ("def f():\n    if __name__ == '__main__':\n        import a\n", ("a",)),
        ("class C:\n    if __name__ == '__main__':\n        import a\n", ("a",)),
        ("while __name__ == '__main__':\n    import a\n", ("a",)),
        # A string that only mentions the guard.
        ("import a\ntext = 'if __name__ == \"__main__\":'\n", ("a",)),
    ],
)
def test_imports_only_a_main_block_makes_are_not_the_module_s(
    source: str, imports: tuple[str, ...]
) -> None:
    assert _imports(source) == imports


def test_a_module_imported_only_under_the_main_guard_is_outside_the_closure() -> None:
    files = {
        "manual_backprop.py": textwrap.dedent(
            """
            import helpers

            def grads(): pass

            if __name__ == "__main__":
                # A self-check against another part: never run by grading.
                from autograd_loop import train_autograd
            """
        ),
        "helpers.py": "if __name__ == '__main__':\n    import deeper\n",
        "autograd_loop.py": "def train_autograd(loss):\n    loss.backward()\n",
        "deeper.py": "loss.backward()\n",
    }
    source = StudentSource("manual_backprop.py", files)
    assert source.imports["manual_backprop.py"] == ("helpers",)
    assert import_closure(source.imports, "manual_backprop.py") == [
        "manual_backprop.py",
        "helpers.py",
    ]
    assert forbidden_uses(source, NO_AUTOGRAD) == []
    # The part's own block is still read: code that sets __name__ can make it run.
    own = dict(files, **{"manual_backprop.py": "if __name__ == '__main__':\n    w.backward()\n"})
    assert forbidden_uses(StudentSource("manual_backprop.py", own), NO_AUTOGRAD) == [
        "line 2: .backward"
    ]


def test_a_main_guard_in_a_file_that_does_not_compile_changes_nothing() -> None:
    checked = inspect_source("a.py", b"if __name__ == '__main__':\n    import a\ndef (:\n")
    assert checked.problem and checked.imports == ()


def test_the_syntax_tree_is_built_only_where_a_main_guard_may_be(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading imports from bytecode costs milliseconds, a syntax tree seconds for a hostile
    1 MiB file: only code that names `__name__` and "__main__" and imports pays for one."""
    parsed: list[str] = []
    parse = ast.parse

    def counting_parse(source: str, *args: object, **kwargs: object) -> ast.Module:
        parsed.append(source)
        return parse(source)

    monkeypatch.setattr(ast, "parse", counting_parse)
    # As for a large file: the integrity rule parses small files whatever they hold.
    monkeypatch.setattr(integrity, "ALWAYS_PARSED_CHARS", 0)
    for source in (
        "import torch\nx = 1\n",
        "import torch\nprint('__main__')\n",
        "import torch\nprint(__name__)\n",
        "if __name__ == '__main__':\n    print(1)\n",
    ):
        inspect_source("a.py", source.encode())
    assert parsed == []
    assert inspect_source(
        "a.py", b"import a\nif __name__ == '__main__':\n    import b\n"
    ).imports == ("a",)
    assert len(parsed) == 1


def test_a_name_taken_from_the_student_s_own_file_is_not_the_library_s() -> None:
    # A notebook cell's `from custom_sigmoid import sigmoid`, kept in custom_sigmoid.py built
    # from the file and the cell, reads the file's own function, not torch's.
    sigmoid_rule = Rule(attributes=frozenset({"sigmoid"}))
    own = {
        "custom_sigmoid.py": "def sigmoid(x):\n    return x\nfrom custom_sigmoid import sigmoid\n"
    }
    assert forbidden_uses(StudentSource("custom_sigmoid.py", own), sigmoid_rule) == []
    # The same import from anything else is still the library's attribute.
    torch_own = {"custom_sigmoid.py": "from torch import sigmoid\n"}
    assert forbidden_uses(StudentSource("custom_sigmoid.py", torch_own), sigmoid_rule) == [
        "line 1: import of torch.sigmoid"
    ]
