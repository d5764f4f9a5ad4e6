"""Code that reaches into the grader's own objects in the student's process, found in source.

A hidden test's probe runs in the same process as the student's code: it builds the inputs,
calls the student's functions and copies what they return. Code that walks up the call stack
(`sys._getframe(1).f_globals`), finds live objects through the garbage collector, rewrites
a function's code or closure, installs a trace hook, or reaches `builtins` can rewrite the
probe while it runs, so that the probe reports what the test expects instead of what the
student's code computed. No assignment needs any of it, so every part of every assignment
is held to this rule by default: a part whose code (its file and every submission file it
imports) does any of it cannot earn points, with a message naming the line, in `check` and
in grading alike (`grader.submission` records it as the part's problem).

This is the harness's rule, whatever the assignment; an assignment's own source rules
(`grader.rules`) forbid more, such as autograd in a hand-written backward pass. Like every
rule on Python source it cannot be complete (Python can always build a name some other way),
which is why probes also compute nothing after the student's call that a verdict depends on
(docs/writing-hidden-tests.md).

Reading is cheap for honest files: the compiled code's names and constants are looked at
first, and the syntax tree (seconds for a hostile 1 MiB file) is built only when one of them
is suspect. Pure and unbounded: it runs inside `grader.source_check`'s limited child.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from types import CodeType

# Frames and code objects: how code reaches, and rewrites, functions it was not given.
FRAME_ATTRIBUTES = frozenset(
    {"__code__", "_getframe", "f_back", "f_globals", "f_locals", "gi_frame", "tb_frame"}
    | {"cr_frame", "ag_frame", "_current_frames", "walk_stack", "walk_tb", "curframe_locals"}
    | {"CodeType", "f_builtins", "currentframe", "getouterframes", "getinnerframes"}
    # A function's captured variables: a patched function (a test clock, a recorder's
    # wrapper) holds the state of the check that installed it.
    | {"__closure__", "cell_contents"}
    # Every class in the process, from `object` down: the probe's recorders among them.
    | {"__subclasses__"}
)
# Attributes that reach the grader's objects from one the student was given: a probe-made
# object's methods lead to the probe's globals, the collector to every live object, a trace
# or profile hook to every frame that runs after it is set.
REACHING_ATTRIBUTES = frozenset(
    {"__globals__", "__builtins__", "__dict__", "__getattribute__", "getattr_static"}
    | {"attrgetter", "methodcaller", "get_field", "import_module"}
    | {"get_objects", "get_referrers", "get_referents"}
    | {"settrace", "setprofile", "_settraceallthreads", "_setprofileallthreads"}
)
# Builtins that run code, or read namespaces or attributes, by names given as data.
REACHING_BUILTINS = frozenset(
    {"globals", "vars", "locals", "eval", "exec", "compile", "__import__", "breakpoint"}
    | {"__builtins__"}
)
# The attribute builtins: harmless with the name written out (`getattr(m, "weight")`).
ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# Modules whose purpose is reaching frames, live objects, builtins or raw memory.
REACHING_MODULES = frozenset({"gc", "inspect", "builtins", "ctypes", "importlib", "pdb", "bdb"})
# `sys.modules` finds any loaded module by name; `modules` alone is also nn.Module's method.
SYS_ATTRIBUTES = frozenset({"modules"})
SUSPECT_NAMES = (
    FRAME_ATTRIBUTES | REACHING_ATTRIBUTES | REACHING_BUILTINS | ATTRIBUTE_BUILTINS
) | SYS_ATTRIBUTES
# Names that, inside a string, are most likely looked up (getattr(frame, "f_globals")).
LOOKED_UP_NAMES = FRAME_ATTRIBUTES | REACHING_ATTRIBUTES | REACHING_MODULES
NAME_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# How many uses a message lists; the rest are counted.
SHOWN_USES = 3

MESSAGE = (
    "{file} reaches into the grader's own objects, which share your code's process: {uses}. "
    "Code that reads or rewrites the caller's frames, live objects, code objects or builtins "
    "could change what a test sees, so no test of a part that runs it can count. Remove it: "
    "nothing in this assignment needs it."
)


def reaching_uses(text: str, code: CodeType) -> list[str]:
    """One "line N: what" per place `text` (compiled as `code`) reaches the grader's objects.

    Raises nothing: a file that does not parse has already failed to compile.
    """
    if not _suspect(code):
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    found = sorted({(line, what) for line, what in _uses(tree)})
    return [f"line {line}: {what}" for line, what in found]


def reaching_message(uses_by_file: dict[str, list[str]]) -> str:
    """The part's problem, naming the first uses of the files that reach the grader."""
    shown: list[str] = []
    total = 0
    for name, uses in uses_by_file.items():
        total += len(uses)
        shown += [f"{name} {use}" for use in uses[: SHOWN_USES - len(shown)]]
    more = f" and {total - len(shown)} more" if total > len(shown) else ""
    files = ", ".join(uses_by_file)
    return MESSAGE.format(file=files, uses="; ".join(shown) + more)


def _suspect(code: CodeType) -> bool:
    """Whether `code` names anything this rule looks for (then the syntax tree says where)."""
    for each in _code_objects(code):
        if SUSPECT_NAMES.intersection(each.co_names) or REACHING_MODULES.intersection(
            each.co_names
        ):
            return True
        for constant in each.co_consts:
            if isinstance(constant, str | bytes) and _names_in_text(constant):
                return True
    return False


def _code_objects(code: CodeType) -> Iterator[CodeType]:
    stack = [code]
    while stack:
        current = stack.pop()
        yield current
        stack += [c for c in current.co_consts if isinstance(c, CodeType)]


def _names_in_text(value: str | bytes) -> list[str]:
    """Reaching names inside a constant that could be looked up: bytes whole (a pickle names
    its globals as text, b"cbuiltins\\neval"), a string when it is one word or dotted path
    ("_getframe", "sys.modules"), not prose, so messages that mention a name stay allowed."""
    if isinstance(value, bytes):
        text = value.decode("latin-1")
    elif not any(c.isspace() for c in value.strip()):
        text = value
    else:
        return []
    return sorted(set(NAME_TOKEN.findall(text)) & LOOKED_UP_NAMES)


def _uses(tree: ast.Module) -> Iterator[tuple[int, str]]:
    sys_names = _names_bound_to(tree, "sys")
    docstrings = docstring_ids(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute):
            if node.attr in FRAME_ATTRIBUTES:
                yield line, f".{node.attr} (frames and code objects)"
            elif node.attr in REACHING_ATTRIBUTES and not _on_self(node.value, node.attr):
                yield line, f".{node.attr} (objects reached by name)"
            elif (
                node.attr in SYS_ATTRIBUTES
                and isinstance(node.value, ast.Name)
                and node.value.id in sys_names
            ):
                yield line, f"sys.{node.attr} (modules found by name)"
        elif isinstance(node, ast.Name) and node.id in REACHING_BUILTINS:
            yield line, f"{node.id}()"
        elif isinstance(node, ast.Call) and _dynamic_attribute_call(node):
            name = node.func.id if isinstance(node.func, ast.Name) else "getattr"
            yield line, f"{name} with an attribute name built at run time"
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield from ((line, what) for what in _import_uses(node))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str | bytes)
            and id(node) not in docstrings
            and (named := _names_in_text(node.value))
        ):
            yield line, f"a string naming {', '.join(named)}"


def _on_self(subject: ast.expr, attribute: str) -> bool:
    """`self.__dict__`: an object's own attributes, as a class's `__init__` may set them."""
    return attribute == "__dict__" and isinstance(subject, ast.Name) and subject.id == "self"


def _dynamic_attribute_call(node: ast.Call) -> bool:
    """getattr(obj, name) and friends with a name that is not written out.

    `self` as the object is allowed: an nn.Module reaching its own layers by computed name
    (`getattr(self, f"layer{i}")`) is an everyday idiom, and reaches nothing of the grader's.
    """
    if not (isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_BUILTINS):
        return False
    if len(node.args) < 2:
        return True
    subject, name = node.args[0], node.args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return False
    return not (isinstance(subject, ast.Name) and subject.id == "self")


def _import_uses(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
        names: list[str] = []
    else:
        modules = [node.module or ""]
        names = [alias.name for alias in node.names]
    for module in modules:
        if module.split(".")[0] in REACHING_MODULES:
            yield f"import of {module}"
    for name in names:
        if name in FRAME_ATTRIBUTES | REACHING_ATTRIBUTES | REACHING_BUILTINS:
            yield f"import of {name} from {modules[0]}"
        elif name in SYS_ATTRIBUTES and modules[0] == "sys":
            yield f"import of sys.{name}"


def _names_bound_to(tree: ast.Module, module: str) -> set[str]:
    """Names an `import` binds to `module` (`import sys`, `import sys as s`)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {alias.asname or alias.name for alias in node.names if alias.name == module}
    return bound


def docstring_ids(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are docstrings (prose names things it does not use)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found
