"""Code that reaches into the grader's own objects in the student's process, found in source.

A hidden test's probe runs in the same process as the student's code: it builds the inputs,
calls the student's functions and copies what they return. Code that walks up the call stack
(`sys._getframe(1).f_globals`), finds live objects through the garbage collector, rewrites
a function's code or closure, installs a trace hook, or reaches `builtins` can rewrite the
probe while it runs, so that the probe reports what the test expects instead of what the
student's code computed. No assignment needs any of it, so every part of every assignment
is held to this rule by default: a part whose code (its file and every submission file it
imports) does any of it cannot earn points, with a message naming the line, in `check` and
in grading alike (`grader.intake.submission` records it as the part's problem).

This is the harness's rule, whatever the assignment; an assignment's own source rules
(`grader.rules`) forbid more, such as autograd in a hand-written backward pass. Like every
rule on Python source it cannot be complete (Python can always build a name some other way),
which is why probes also compute nothing after the student's call that a verdict depends on
(docs/writing-hidden-tests.md).

Reading is cheap for honest files: the compiled code's names and constants are looked at
first, and the syntax tree (seconds for a hostile 1 MiB file) is built only when one of them
is suspect. Pure and unbounded: it runs inside `grader.intake.source_check`'s limited child.
"""

from __future__ import annotations

import ast
import dis
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from operator import itemgetter
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
    {"__globals__", "__builtins__"}
    # A builtin function's module: print.__self__ is `builtins`.
    | {"__self__"}
    | {"get_objects", "get_referrers", "get_referents"}
    | {"settrace", "setprofile", "_settraceallthreads", "_setprofileallthreads"}
)
# Attributes that look other attributes up by names given as data, or lead to a frame the
# way honest error handling also goes (`traceback.format_exception(e, e.__traceback__)`).
LOOKUP_ATTRIBUTES = frozenset(
    {"__dict__", "__getattribute__", "getattr_static", "attrgetter", "methodcaller"}
    | {"get_field", "import_module", "__traceback__"}
)
# Builtins that run code, or read namespaces or attributes, by names given as data.
# (`locals()` is not one: it reads the calling function's own variables, as
# `"{loss}".format(**locals())` does, and reaches nothing beyond them.)
LOOKUP_BUILTINS = frozenset({"globals", "vars", "eval", "exec", "compile", "__import__"})
# The attribute builtins: harmless with the name written out (`getattr(m, "weight")`).
ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# Those that read no value: with a name built at run time they reach nothing (setting an
# attribute by a literal name does as much), so only getattr is a lookup.
WRITING_BUILTINS = frozenset({"setattr", "delattr", "hasattr"})
# Modules whose purpose is reaching frames, builtins or raw memory (`gc` is not one of them:
# `gc.collect()` before a timing is honest; its object lists are refused by name above).
REACHING_MODULES = frozenset({"builtins", "ctypes"})
# Modules that reach frames, but that honest code imports too (`import pdb` left over from
# debugging, `inspect.signature`): looked up, not refused.
LOOKUP_MODULES = frozenset({"inspect", "pdb", "bdb", "importlib"})
# `from m import *` binds m's functions by bare names the attribute checks never see
# (`_getframe(1)`, `get_objects()`).
STAR_REFUSED_MODULES = REACHING_MODULES | LOOKUP_MODULES | {"sys", "gc"}
# `sys.modules` finds any loaded module by name; `modules` alone is also nn.Module's method.
SYS_ATTRIBUTES = frozenset({"modules"})
SUSPECT_NAMES = (
    (FRAME_ATTRIBUTES | REACHING_ATTRIBUTES | LOOKUP_ATTRIBUTES | LOOKUP_BUILTINS)
    | (ATTRIBUTE_BUILTINS | SYS_ATTRIBUTES | STAR_REFUSED_MODULES)
    | {"__builtins__", "sys"}
)
# Instructions that bind a module-level name (`__name__ = "__main__"`).
NAME_STORES = frozenset({"STORE_NAME", "STORE_GLOBAL", "DELETE_NAME", "DELETE_GLOBAL"})
# Files up to this size are always parsed (milliseconds); larger ones only when their
# compiled code is suspect (`_suspect`), since a hostile 1 MiB file takes seconds to parse.
ALWAYS_PARSED_CHARS = 64 * 1024
# Names that, inside a string, are most likely looked up (getattr(frame, "f_globals")).
LOOKED_UP_NAMES = FRAME_ATTRIBUTES | REACHING_ATTRIBUTES | REACHING_MODULES
NAME_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# How many uses a message lists; the rest are counted.
SHOWN_USES = 3
# What `_Reader._use` returns for a node that uses nothing.
_NONE = ("", "")

MESSAGE = (
    "{file} reaches into the grader's own objects, which share your code's process: {uses}. "
    "Code that reads or rewrites the caller's frames, live objects, code objects or builtins "
    "could change what a test sees, so no test of a part that runs it can count. Remove it: "
    "nothing in this assignment needs it."
)
LOOKUP_MESSAGE = (
    "not counted: {file} looks names up or replaces a library's functions at run time "
    "({uses}), and such code can reach and rewrite the checks made inside your code's "
    "process, so this part's checks made there do not count; your outputs compared with the "
    "reference still do. Write the names out (nn.ReLU() rather than getattr(nn, name)()) and "
    "leave libraries' functions as they are to have them counted."
)
REFUSED = "refused"
LOOKUP = "lookup"


@dataclass(frozen=True)
class Reach:
    """Where a file reaches the grader's objects (`refused`: its parts cannot count at all)
    and where it looks names up at run time (`lookups`: its parts' unverifiable checks do not
    count), each as "line N: what"."""

    refused: tuple[str, ...] = ()
    lookups: tuple[str, ...] = ()


def reaching_uses(text: str, code: CodeType) -> Reach:
    """Where `text` (compiled as `code`) reaches the grader's objects or looks names up.

    Code under a top-level `if __name__ == "__main__":` is not read: grading never runs it
    (and assigning `__name__`, the one way to make it run, is itself refused). Raises
    nothing: a file that does not parse has already failed to compile.
    """
    if len(text) > ALWAYS_PARSED_CHARS and not _suspect(code):
        return Reach()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return Reach()
    found = sorted(set(_Reader(tree).uses()) | set(_folded_strings(code)))
    return Reach(
        refused=tuple(f"line {line}: {what}" for line, kind, what in found if kind == REFUSED),
        lookups=tuple(f"line {line}: {what}" for line, kind, what in found if kind == LOOKUP),
    )


def reaching_message(uses_by_file: dict[str, list[str]], *, template: str = MESSAGE) -> str:
    """A part's problem (or, with LOOKUP_MESSAGE, its note), naming the first uses."""
    shown: list[str] = []
    total = 0
    for name, uses in uses_by_file.items():
        total += len(uses)
        shown += [f"{name} {use}" for use in uses[: SHOWN_USES - len(shown)]]
    more = f" and {total - len(shown)} more" if total > len(shown) else ""
    files = ", ".join(uses_by_file)
    return template.format(file=files, uses="; ".join(shown) + more)


def is_main_guard(statement: ast.stmt) -> bool:
    """`if __name__ == "__main__":` or `if "__main__" == __name__:`, nothing looser."""
    if not isinstance(statement, ast.If):
        return False
    test = statement.test
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
    ):
        return False
    sides = (test.left, test.comparators[0])
    return any(
        isinstance(name, ast.Name)
        and name.id == "__name__"
        and isinstance(main, ast.Constant)
        and isinstance(main.value, str)
        and main.value == "__main__"
        for name, main in (sides, sides[::-1])
    )


def _suspect(code: CodeType) -> bool:
    """Whether a large file's compiled code names anything this rule looks for, or patches an
    attribute where it imports the standard library (then the syntax tree says where)."""
    stores = imports_stdlib = False
    for each in _code_objects(code):
        if SUSPECT_NAMES.intersection(each.co_names):
            return True
        if any(isinstance(c, str | bytes) and _names_in_text(c) for c in each.co_consts):
            return True
        for instruction in dis.get_instructions(each):
            if instruction.opname in ("STORE_ATTR", "DELETE_ATTR"):
                stores = True
            elif instruction.opname in NAME_STORES and instruction.argval == "__name__":
                return True
            elif instruction.opname == "IMPORT_NAME":
                imports_stdlib |= _is_stdlib(str(instruction.argval))
    return stores and imports_stdlib


def _folded_strings(code: CodeType) -> Iterator[tuple[int, str, str]]:
    """Strings the compiler folded from pieces ("tb_" + "frame") that name what the rule
    refuses: the syntax tree holds only the pieces. Docstrings are prose, and skipped."""
    for each in _code_objects(code):
        docstring = each.co_consts[0] if each.co_consts else None
        for constant in each.co_consts:
            if isinstance(constant, str) and constant is not docstring:
                named = _names_in_text(constant)
                if named:
                    yield each.co_firstlineno, REFUSED, f"a string naming {', '.join(named)}"


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
        tokens = set(NAME_TOKEN.findall(value.decode("latin-1")))
        # Protocol 0's GLOBAL opcode runs the letter into the module: "cbuiltins".
        tokens |= {token[1:] for token in tokens if token.startswith("c")}
        return sorted(tokens & (LOOKED_UP_NAMES | LOOKUP_BUILTINS | {"__builtins__"}))
    if any(c.isspace() for c in value.strip()):
        return []
    return sorted(set(NAME_TOKEN.findall(value)) & LOOKED_UP_NAMES)


def _is_stdlib(module: str) -> bool:
    top = module.split(".")[0]
    return top in sys.stdlib_module_names and top != "__future__"


class _Reader:
    """One file's syntax tree, read for every way it reaches the grader's objects."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.docstrings = docstring_ids(tree)
        self.own = _own_object_reads(tree)
        # Names an `import` binds to a module: `sys` and its aliases, and the standard
        # library's modules (whose functions student code must not replace).
        bound = _names_bound_by_import(tree)
        self.sys_names = {name for name, module in bound.items() if module == "sys"}
        self.stdlib_names = {name for name, module in bound.items() if _is_stdlib(module)}
        self.module_names = set(bound)
        self.constant_names = _string_constants(tree)
        # Names bound to torch or something imported from it (`import torch.nn as nn`,
        # `from torch import optim`): getattr(nn, activation) picks one of torch's own names;
        # going on from what it returns takes another lookup, or a name this rule refuses.
        self.torch_names = {name for name, module in bound.items() if _is_torch(module)}
        self.torch_names |= _names_imported_from_torch(tree)
        # `"google.colab" in sys.modules`: a membership test reads no module.
        self.membership_tests = {
            id(comparator)
            for node in ast.walk(tree)
            if isinstance(node, ast.Compare)
            and all(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            for comparator in node.comparators
        }
        # `vars(obj)` on an object (vars(args) prints a parser's settings) reads nothing but
        # that object's attributes; with no argument, or on a module, it is refused.
        # The attribute builtins where they are called by name; anywhere else (`read =
        # getattr`, `partial(getattr, x)`) an alias calls them with any name.
        self.called_builtins = {
            id(node.func)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        self.object_vars = {
            id(node.func)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "vars"
            and len(node.args) == 1
            and not self._is_module(node.args[0])
        }

    def uses(self) -> Iterator[tuple[int, str, str]]:
        """(line, REFUSED or LOOKUP, what) per use."""
        for node in self._read_nodes():
            line = getattr(node, "lineno", 0)
            kind, what = self._use(node)
            if what:
                yield line, kind, what

    def _read_nodes(self) -> Iterator[ast.AST]:
        """Every node but those of a top-level `__main__` block (its `else` is read)."""
        pending: list[ast.AST] = []
        for statement in self.tree.body:
            if is_main_guard(statement):
                assert isinstance(statement, ast.If)
                pending += [statement.test, *statement.orelse]
            else:
                pending.append(statement)
        while pending:
            node = pending.pop()
            yield node
            pending.extend(ast.iter_child_nodes(node))

    def _use(self, node: ast.AST) -> tuple[str, str]:
        if isinstance(node, ast.Attribute):
            return self._attribute_use(node)
        if isinstance(node, ast.Name):
            return self._name_use(node)
        if isinstance(node, ast.Call):
            return self._call_use(node)
        if isinstance(node, ast.MatchClass):
            # `case object(tb_frame=f)` reads the attribute `tb_frame` of the subject.
            return next(filter(itemgetter(1), map(_attribute_name_use, node.kwd_attrs)), _NONE)
        if isinstance(node, ast.Import | ast.ImportFrom):
            return next(_import_uses(node), _NONE)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str | bytes)
            and id(node) not in self.docstrings
            and (named := _names_in_text(node.value))
        ):
            return REFUSED, f"a string naming {', '.join(named)}"
        return _NONE

    def _attribute_use(self, node: ast.Attribute) -> tuple[str, str]:
        if isinstance(node.ctx, ast.Store | ast.Del) and self._is_stdlib_module(node.value):
            return REFUSED, f"{ast.unparse(node)} replaced (the standard library patched)"
        if isinstance(node.ctx, ast.Store | ast.Del) and self._is_library(node.value):
            return LOOKUP, f"{ast.unparse(node)} replaced (a library the probe also uses)"
        if node.attr == "__dict__" and id(node.value) in self.own:
            return _NONE
        if node.attr in SYS_ATTRIBUTES:
            if not self._is_sys(node.value) or id(node) in self.membership_tests:
                return _NONE
            return LOOKUP, "sys.modules"
        if node.attr == "sys" and not self._is_sys(node.value):
            what = f"{ast.unparse(node)} (the interpreter's internals through another module)"
            return REFUSED, what
        return _attribute_name_use(node.attr)

    def _name_use(self, node: ast.Name) -> tuple[str, str]:
        if node.id == "__name__" and not isinstance(node.ctx, ast.Load):
            return REFUSED, "__name__ assigned (it makes a __main__ block run on import)"
        if node.id == "__builtins__":
            return REFUSED, "__builtins__"
        if node.id in LOOKUP_BUILTINS and id(node) not in self.object_vars:
            return LOOKUP, f"{node.id}()"
        if node.id == "getattr" and id(node) not in self.called_builtins:
            return LOOKUP, "getattr passed on as a value (its alias reads any name)"
        return _NONE

    def _call_use(self, node: ast.Call) -> tuple[str, str]:
        if not isinstance(node.func, ast.Name):
            return _NONE
        function, args = node.func.id, node.args
        if function not in ATTRIBUTE_BUILTINS:
            return _NONE
        if function in ("setattr", "delattr") and args and self._is_stdlib_module(args[0]):
            return REFUSED, f"{function} on {ast.unparse(args[0])} (the standard library patched)"
        if function in ("setattr", "delattr") and args and self._is_library(args[0]):
            return LOOKUP, f"{function} on {ast.unparse(args[0])} (a library the probe also uses)"
        if function in WRITING_BUILTINS:
            return _NONE
        if len(args) >= 2:
            subject, name = args[0], args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                return _NONE
            if isinstance(name, ast.Name) and name.id in self.constant_names:
                return _NONE  # a module-level constant string: as readable as the literal
            if id(subject) in self.own or self._is_torch(subject):
                return _NONE
        return LOOKUP, f"{function} with a name built at run time"

    def _is_sys(self, node: ast.expr) -> bool:
        """`sys` itself: a name an import bound to it, or any module's `sys` (`os.sys`)."""
        if isinstance(node, ast.Name):
            return node.id in self.sys_names
        return isinstance(node, ast.Attribute) and node.attr == "sys"

    def _is_torch(self, node: ast.expr) -> bool:
        """torch, or a module or name taken from it: `nn`, `torch.optim`, `F`."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.torch_names

    def _is_library(self, node: ast.expr) -> bool:
        """An imported module or something taken from one (`torch`, `torch.Tensor`, `np`, a
        test or probe module), but not torch's settings (`torch.backends.cudnn.benchmark`).
        Replacing its functions changes what the probe's own checks compute in this process
        (`torch.allclose = ...`), as patching the standard library would; seeded comparisons
        are made on the trusted side and stay unaffected."""
        while isinstance(node, ast.Attribute):
            if node.attr == "backends":
                return False
            node = node.value
        return isinstance(node, ast.Name) and (
            node.id in self.module_names or node.id in self.torch_names
        )

    def _is_module(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.module_names

    def _is_stdlib_module(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.stdlib_names


def _attribute_name_use(name: str) -> tuple[str, str]:
    if name in FRAME_ATTRIBUTES:
        return REFUSED, f".{name} (frames and code objects)"
    if name in REACHING_ATTRIBUTES:
        return REFUSED, f".{name} (objects reached by name)"
    if name in LOOKUP_ATTRIBUTES:
        return LOOKUP, f".{name}"
    return _NONE


def _import_uses(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
        names: list[str] = []
    else:
        modules = [node.module or ""]
        names = [alias.name for alias in node.names]
    for module in modules:
        top = module.split(".")[0]
        if top in REACHING_MODULES:
            yield REFUSED, f"import of {module}"
        elif top in LOOKUP_MODULES:
            yield LOOKUP, f"import of {module}"
    for name in names:
        if name == "*" and modules[0].split(".")[0] in STAR_REFUSED_MODULES:
            yield REFUSED, f"from {modules[0]} import * (binds its functions by bare names)"
        elif name in FRAME_ATTRIBUTES | REACHING_ATTRIBUTES:
            yield REFUSED, f"import of {name} from {modules[0]}"
        elif name in LOOKUP_ATTRIBUTES | LOOKUP_BUILTINS:
            yield LOOKUP, f"import of {name} from {modules[0]}"
        elif name in SYS_ATTRIBUTES and modules[0] == "sys":
            yield LOOKUP, f"import of sys.{name}"


def _names_bound_by_import(tree: ast.Module) -> dict[str, str]:
    """Name -> the module an `import` binds it to (`import os.path` binds `os` to os)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
    return bound


def _is_torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def _names_imported_from_torch(tree: ast.Module) -> set[str]:
    """Names `from torch... import name` binds."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and _is_torch(node.module or "")
        for alias in node.names
        if alias.name != "*"
    }


def _string_constants(tree: ast.Module) -> set[str]:
    """Names bound once, at the module's top level, to a string literal, and never again."""
    assigned: dict[str, int] = {}
    constant: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            assigned[node.id] = assigned.get(node.id, 0) + 1
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign | ast.AnnAssign)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            constant |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {name for name in constant if assigned.get(name) == 1}


def _own_object_reads(tree: ast.Module) -> set[int]:
    """ids of the `self` Name nodes that are a method's own object: read in the body of a
    function defined in a class body whose first parameter is `self`, never rebound there,
    and not inside a function or lambda nested in it (which may take a `self` of its own).

    `self.__dict__` and `getattr(self, name)` there read the instance's own attributes; the
    same words in a plain function (`def f(self): return getattr(self, x)`, called with
    `sys`) could read anything's.
    """
    own: set[int] = set()
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            params = method.args.posonlyargs + method.args.args
            if not params or params[0].arg != "self" or _rebinds(method, "self"):
                continue
            own |= _reads_in_scope(method, "self")
    return own


def _rebinds(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether `name` is assigned, deleted or declared global anywhere in `function`."""
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
            return True
    return False


def _reads_in_scope(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> set[int]:
    """ids of the reads of `name` in `function`'s own scope (nested functions left out)."""
    found: set[int] = set()
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Name) and node.id == name:
            found.add(id(node))
        pending.extend(ast.iter_child_nodes(node))
    return found


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
