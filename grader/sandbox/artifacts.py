"""What a job that judges an artifact (the `judge` fixture) loads it with: no text in it runs.

A judge job loads bytes the student's code made (an exported program, a checkpoint) where
none of that code runs, so that the file cannot answer for itself. torch.export.load is not
safe for that on its own: it evaluates the archive's symbolic-shape expressions with
`sympy.sympify` (which `eval`s any Python), and writes names from the archive (placeholders,
nodes, parameter paths, pytree keys) into the Python source FX compiles for the program. A
program whose JSON held `__import__(...)` in either place ran that code in the judge, and
rewrote what the judge reported (`tests/hostile/exported-program-runs-code-when-loaded`).

So before torch turns an exported program's JSON into a graph, every string in it is
checked (`program_problem`): names and paths are plain dotted identifiers, shape
expressions are arithmetic on symbols and a fixed set of sympy functions (read with `ast`,
never evaluated), pytree specs hold only such names, and no text holds a control character
that would end a line in generated source. Checkpoints are read weights-only whatever the
caller asks (`TORCH_FORCE_WEIGHTS_ONLY_LOAD`). Loaded by path into the fork server
(server.py, beside it), so it uses only the standard library and is handed torch.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

FORCE_WEIGHTS_ONLY = "TORCH_FORCE_WEIGHTS_ONLY_LOAD"
# A name, a parameter's path or an operator's (`torch.ops.aten.mm.default`), a dtype, a device.
TOKEN = re.compile(r"[A-Za-z0-9_.]*")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Text torch keeps as it is (metadata, an operator's string argument); Python source ends a
# line at \r as at \n, so only \n and \t may appear in it.
FREE_TEXT_KEYS = frozenset({"metadata", "as_string", "as_strings", "torch_version"})
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029]")
SPEC_KEYS = frozenset({"in_spec", "out_spec"})
EXPRESSION_KEY = "expr_str"
MAX_EXPRESSION_CHARS = 10_000
# What torch.export writes in a shape expression: sympy's own functions and the ones its
# deserializer names (torch.utils._sympy.functions).
SYMPY_CALLS = frozenset(
    {
        "Symbol", "Integer", "Float", "Rational", "Max", "Min", "Abs", "Mod", "Eq", "Ne",
        "Lt", "Le", "Gt", "Ge", "And", "Or", "Not", "Piecewise", "ITE", "floor", "ceiling",
        "sqrt", "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt",
        "FloorToInt", "CeilDiv", "LShift", "RShift", "PowByNatural", "FloatPow",
        "FloatTrueDiv", "IntTrueDiv", "IsNonOverlappingAndDenseIndicator", "TruncToFloat",
        "TruncToInt", "RoundToInt", "RoundDecimal", "ToFloat", "Identity",
    }
)  # fmt: skip
OPERATORS = (
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd,
    ast.BitOr, ast.BitXor, ast.USub, ast.UAdd, ast.Not, ast.Invert, ast.And, ast.Or,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
)  # fmt: skip


class ArtifactRefused(ValueError):
    """The artifact holds text torch would run: the probe reports it as a file that did not load."""


def program_problem(document: Any) -> str | None:
    """What in an exported program's JSON (torch's schema, as a dict) torch could run, or None."""
    for path, text in _strings(document, ()):
        key = next((part for part in reversed(path) if isinstance(part, str)), "")
        where = "/".join(str(part) for part in path)
        if CONTROL.search(text):
            return f"a control character in {where}"
        if key == EXPRESSION_KEY:
            if not safe_expression(text):
                return f"{where} is not a shape expression torch.export writes: {text[:80]!r}"
        elif key in SPEC_KEYS:
            if not _safe_spec(text):
                return f"{where} is not a pytree spec torch.export writes"
        elif not any(part in FREE_TEXT_KEYS for part in path) and not TOKEN.fullmatch(text):
            return f"{where} is not a name torch.export writes: {text[:80]!r}"
    return None


def safe_expression(text: str) -> bool:
    """Whether `text` is arithmetic and comparisons on symbols, numbers and `SYMPY_CALLS`."""
    if len(text) > MAX_EXPRESSION_CHARS:
        return False
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return _safe_node(tree.body)


def guard_loaders(torch: ModuleType) -> None:
    """In a judge job, before its probe runs: checkpoints load weights-only, and an exported
    program loads only once `program_problem` found nothing."""
    os.environ[FORCE_WEIGHTS_ONLY] = "1"
    from torch._export.serde import serialize

    deserializer = serialize.ExportedProgramDeserializer
    # Every loader of exported programs (torch.export.load, serialize.deserialize) ends here.
    checked = _checked(deserializer.deserialize, serialize._dataclass_to_dict)
    setattr(deserializer, "deserialize", checked)  # noqa: B010 (mypy refuses a method store)


def _checked(deserialize: Callable[..., Any], as_dict: Callable[[Any], Any]) -> Callable[..., Any]:
    def checked_deserialize(self: Any, exported_program: Any, *args: Any, **kwargs: Any) -> Any:
        problem = program_problem(as_dict(exported_program))
        if problem is not None:
            raise ArtifactRefused(
                f"the program's file holds what torch.export does not write ({problem}); "
                "return what torch.export.export returns, unchanged"
            )
        return deserialize(self, exported_program, *args, **kwargs)

    return checked_deserialize


def _strings(
    value: Any, path: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every string in a JSON-like value, dictionary keys included, with where it is."""
    # As plain strings: torch's union tags (dictionary keys here) refuse comparisons.
    if isinstance(value, str):
        yield path, str(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            if isinstance(key, str):  # where its dictionary is: a key is never a value
                yield path, name
            yield from _strings(item, (*path, name))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def _safe_spec(text: str) -> bool:
    """A pytree spec (JSON, whose `context` may itself be JSON) naming only plain names."""
    try:
        spec = json.loads(text)
    except (ValueError, RecursionError):
        return False
    for _, inner in _strings(spec, ()):
        if TOKEN.fullmatch(inner):
            continue
        try:
            nested = json.loads(inner)
        except (ValueError, RecursionError):
            return False
        if any(not TOKEN.fullmatch(name) for _, name in _strings(nested, ())):
            return False
    return True


def _safe_node(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, str):
            return IDENTIFIER.fullmatch(value) is not None
        return value is None or isinstance(value, bool | int | float)
    if isinstance(node, ast.Name):
        return IDENTIFIER.fullmatch(node.id) is not None and not node.id.startswith("__")
    if isinstance(node, ast.Tuple):
        return all(_safe_node(item) for item in node.elts)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, OPERATORS) and _safe_node(node.left) and _safe_node(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, OPERATORS) and _safe_node(node.operand)
    if isinstance(node, ast.BoolOp):
        return isinstance(node.op, OPERATORS) and all(_safe_node(v) for v in node.values)
    if isinstance(node, ast.Compare):
        return all(isinstance(op, OPERATORS) for op in node.ops) and all(
            _safe_node(item) for item in (node.left, *node.comparators)
        )
    if isinstance(node, ast.Call):
        return (
            isinstance(node.func, ast.Name)
            and node.func.id in SYMPY_CALLS
            and all(_safe_node(arg) for arg in node.args)
            and all(
                keyword.arg is not None
                and isinstance(keyword.value, ast.Constant)
                and isinstance(keyword.value.value, bool | int)
                for keyword in node.keywords
            )
        )
    return False
