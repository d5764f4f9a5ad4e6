"""Source rules for hidden tests ("no autograd here", "no built-in sigmoid"), read with `ast`.

A rule lists the attributes, names, modules and strings it forbids; `forbidden_uses` also
reports, whatever the rule, every way Python offers to reach a forbidden name without writing
it: attribute access by a name built at run time (`getattr(torch, "auto" + "grad")`),
namespaces read as dicts (`__dict__`, `vars`, `globals`), code built from strings (`eval`,
`exec`, `compile`, `__import__`, `importlib`, and the modules that run strings, such as
doctest on docstrings, which rules do not read), and torch's low-level entry points that bypass
the Python functions a run-time check can watch (`torch._C`, `torch.ops`,
`torch._VariableFunctions`). Attribute names are read wherever Python's syntax names one, not
only after a dot: `from m import name` and a match class pattern's keywords
(`case object(autograd=a)`). Such a rule still cannot be complete (Python can always build a
name some other way), so hidden tests give it a low weight and pair it with a run-time check.

A rule holds for the code a part runs, not only the part's file: given a `StudentSource`
(what the `student_source` fixture provides), `forbidden_uses` also reads every submission
file the part imports, directly or through another, so a forbidden call moved into another
part file and imported from there is found (dynamic imports are refused above). Those files
(`grader.intake.source_check.import_closure`) are also all that the part's jobs can import
(grader/sandbox/job_files.py), so a module named in a string
(`unittest.mock.patch("other_part.f")`) reaches nothing the rule did not read. A module
imported only under a top-level `if __name__ == "__main__":` guard is not followed (grading
never runs that block): a job cannot import it either, so forcing the block to run
(`__name__ = "__main__"`) gets an ImportError, not its code.

Nothing here bounds its own work: the plugin runs every hidden test that reads student source
in a limited child (`GradingSession.run_source_test` in grader/grading/session.py).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.intake.integrity import ATTRIBUTE_BUILTINS, FRAME_ATTRIBUTES, NAME_TOKEN, docstring_ids
from grader.intake.source_check import import_closure, inspect_source

# Builtins that reach attributes or run code by names given as data.
DYNAMIC_BUILTINS = frozenset(
    {
        "getattr",
        "setattr",
        "delattr",
        "hasattr",
        "vars",
        "globals",
        "locals",
        "eval",
        "exec",
        "compile",
        "__import__",
        "__builtins__",
        "breakpoint",
    }
)
# Attributes that read a namespace as data or look attributes up by name.
DYNAMIC_ATTRIBUTES = frozenset(
    {
        "__dict__",
        "__getattribute__",
        "__getattr__",
        "__builtins__",
        "__globals__",
        "__import__",
        "getattr_static",
        "attrgetter",
        "methodcaller",
        "import_module",
        "modules",  # sys.modules
        "get_field",  # string.Formatter: "0.f_locals" is an attribute path
        # A class's names for the positions of a match pattern: `case C(x)` reads them.
        "__match_args__",
        # Annotations given as strings, evaluated as code; and annotations set as data, which
        # evaluators reached indirectly (functools.singledispatch's register) evaluate.
        "get_type_hints",
        "ForwardRef",
        "__annotations__",
        # Raw memory read through numpy, as ctypes would.
        "__array_interface__",
        "__array_struct__",
        "ctypeslib",
        # torch.overrides' lists of every torch function, to search by a name built at run
        # time (`f.__name__ == "mse" + "_loss"`) as getattr would look it up.
        "get_overridable_functions",
        "_get_overridable_functions",
        "get_testing_overrides",
        "get_ignored_functions",
    }
)
# The dunder names among them, which a class body can also set as plain names.
DUNDER_LOOKUPS = frozenset(
    name for name in DYNAMIC_ATTRIBUTES | FRAME_ATTRIBUTES if name.startswith("__")
)
# Work done in another process, which the run-time checks (in this one) never see, or in
# another thread, which they do not see either: torch's dispatch and function modes are per
# thread, so a fresh thread runs with none of them.
PROCESS_ATTRIBUTES = frozenset(
    {"fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "popen", "multiprocessing"}
    | {"spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"}
    | {"ProcessPoolExecutor", "ThreadPoolExecutor", "Thread", "start_new_thread", "to_thread"}
    | {"run_in_executor", "start_new", "_start_new_thread"}
    # The thread modules as other modules' attributes (tempfile._thread, logging.threading).
    | {"_thread", "threading"}
)
# Modules that turn a string or bytes into any object by name (pickle's GLOBAL opcode,
# pydoc.locate, ...) or run code built at run time.
DYNAMIC_MODULES = (
    *("importlib", "builtins", "operator", "pickle", "_pickle", "copyreg", "marshal"),
    *("pydoc", "pkgutil", "runpy", "ctypes", "code", "codeop"),
    # Pickles by other names, and code run in a process no run-time check watches.
    *("multiprocessing", "shelve", "subprocess"),
    # Every live object, or every frame and its variables, found without being named.
    *("gc", "inspect", "pdb", "bdb"),
    # Other threads, where the run-time checks' modes are not active.
    *("threading", "_thread", "concurrent", "asyncio"),
    # Strings run as code: doctest runs the examples of docstrings (which rules never read),
    # timeit and the profilers their statements; rlcompleter evaluates dotted paths,
    # logging.config and unittest.mock resolve them.
    *("doctest", "timeit", "trace", "profile", "cProfile", "rlcompleter", "idlelib"),
    *("logging.config", "unittest.mock"),
)
# torch's entry points below its Python API: every built-in op and the autograd engine are
# reachable there, and calls through them skip `__torch_function__` hooks.
# torch.utils._python_dispatch can switch off the run-time checks' dispatch modes.
TORCH_BACKDOORS = frozenset(
    {"_C", "ops", "_VariableFunctions", "_execution_engine", "_ImperativeEngine", "_ops"}
    | {"_python_dispatch", "_disable_current_modes", "DisableTorchFunction"}
    | {"_mode_utils", "no_dispatch"}
    # The run-time checks' modes, found on (or taken off) torch's mode stack.
    | {"_get_current_function_mode", "_get_current_function_mode_stack", "_pop_mode"}
    | {"_pop_mode_temporarily", "_push_mode"}
    # The private packages behind public APIs a rule names: torch.func's transforms live in
    # torch._functorch, reference and decomposed ops (a sigmoid among them) in the others.
    | {"_functorch", "_refs", "_prims", "_prims_common", "_decomp", "_higher_order_ops"}
    | {"_dynamo", "_inductor", "_library", "_subclasses", "_lazy", "_export"}
)
# The builtin types whose class pattern `case int(x)` binds the subject itself.
SELF_MATCHING_TYPES = frozenset(
    {"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str"}
    | {"tuple"}
)


@dataclass(frozen=True)
class Rule:
    """What one source rule forbids (besides the dynamic access every rule refuses)."""

    attributes: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    # Modules (and their submodules) that may not be imported.
    modules: tuple[str, ...] = ()
    # String constants that may not appear (getattr(w, "backward")); docstrings are exempt.
    strings: frozenset[str] = frozenset()
    # Regular expressions an attribute name may not match whole: a family of built-ins named
    # alike (every `*_loss` function and `*Loss` class), so that one the list did not think
    # of (huber_loss with a huge delta is an MSE) is refused too.
    attribute_patterns: tuple[str, ...] = ()

    def forbids_attribute(self, name: str) -> bool:
        """Whether `name`, read as an attribute, is one this rule forbids."""
        return name in self.attributes or any(
            re.fullmatch(pattern, name) for pattern in self.attribute_patterns
        )


def _literal_name_call(node: ast.Call) -> bool:
    """getattr(obj, "name") and friends, with the name written out."""
    return (
        isinstance(node.func, ast.Name)
        and node.func.id in ATTRIBUTE_BUILTINS
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def _imports(node: ast.Import | ast.ImportFrom) -> Iterable[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    else:
        module = node.module or ""
        yield module
        yield from (f"{module}.{alias.name}" for alias in node.names)


def _under(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


class StudentSource(str):
    """A part file's text (the string itself) and the submission's other Python files.

    `files` maps every submission file name to its text, this one's included; `name` is this
    one's; `imports` maps each file name to the modules it imports (as
    `grader.intake.source_check.module_imports` reads them when the submission is prepared), worked
    out from `files` when not given. A plain `str` works wherever this does, and is read
    alone.
    """

    name: str
    files: Mapping[str, str]
    imports: Mapping[str, Sequence[str]]

    def __new__(
        cls,
        name: str,
        files: Mapping[str, str],
        imports: Mapping[str, Sequence[str]] | None = None,
    ) -> StudentSource:
        source = super().__new__(cls, files[name])
        source.name = name
        source.files = dict(files)
        source.imports = dict(imports) if imports is not None else _compiled_imports(files)
        return source


def _compiled_imports(files: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """What each file imports, read as preparing a submission reads it (nothing for a file
    that does not compile)."""
    return {name: inspect_source(name, text.encode()).imports for name, text in files.items()}


def _reached_files(source: StudentSource) -> list[tuple[str, ast.Module]]:
    """The part's file, then every submission file it imports (transitively), parsed.

    Raises SyntaxError (naming the file) when one of them does not parse.
    """
    return [
        (name, ast.parse(source.files[name], filename=name))
        for name in import_closure(source.imports, source.name)
        if name in source.files
    ]


def forbidden_uses(source: str, rule: Rule) -> list[str]:
    """One "line N: what" per use of something `rule` forbids, or of dynamic access.

    For a `StudentSource`, the files it imports are read too, their uses given as
    "other.py (imported by part.py) line N: what". Raises SyntaxError when a file does
    not parse.
    """
    if not isinstance(source, StudentSource):
        return [f"line {line}: {what}" for line, what in _uses_in(ast.parse(source), rule)]
    found = []
    submission_modules = frozenset(Path(name).stem for name in source.files)
    for name, tree in _reached_files(source):
        where = "" if name == source.name else f"{name} (imported by {source.name}) "
        uses = _uses_in(tree, rule, submission_modules)
        found += [f"{where}line {line}: {what}" for line, what in uses]
    return found


def _uses_in(
    tree: ast.AST, rule: Rule, submission_modules: frozenset[str] = frozenset()
) -> list[tuple[int, str]]:
    """(line, what) per forbidden or dynamic use in `tree`, in order; `submission_modules`
    are the student's own files, whose names an import may take (see `_import_use`)."""
    docstrings = docstring_ids(tree)
    # The getattr(...) calls whose name is a literal: the call is fine, the name is checked.
    literal_calls = {
        id(node.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _literal_name_call(node)
    }
    found = {
        (getattr(node, "lineno", 0), what)
        for node in ast.walk(tree)
        if (what := _forbidden_use(node, rule, literal_calls, docstrings, submission_modules))
    }
    return sorted(found)


def _forbidden_use(
    node: ast.AST,
    rule: Rule,
    literal_calls: set[int],
    docstrings: set[int],
    submission_modules: frozenset[str],
) -> str:
    """What `node` uses that `rule` forbids, or a dynamic access; "" when nothing."""
    if isinstance(node, ast.Attribute):
        return _attribute_use(node.attr, rule)
    if isinstance(node, ast.MatchClass):
        return _class_pattern_use(node, rule)
    if isinstance(node, ast.Name):
        if node.id in rule.names:
            return node.id
        if node.id in DYNAMIC_BUILTINS and id(node) not in literal_calls:
            return f"{node.id} with a name built at run time"
        # Set in a class body, these are the class's own: `__match_args__ = ("sig" + "moid",)`
        # makes `case C(found)` read that attribute of any subject.
        if node.id in DUNDER_LOOKUPS:
            return f"{node.id} (attributes looked up by name)"
    elif isinstance(node, ast.keyword) and node.arg and rule.forbids_attribute(node.arg):
        return f"{node.arg}="
    elif isinstance(node, ast.Import | ast.ImportFrom):
        uses = (_import_use(module, rule, submission_modules) for module in _imports(node))
        return next(filter(None, uses), "")
    elif isinstance(node, ast.Constant) and id(node) not in docstrings:
        named = _names_in_constant(node.value, rule)
        if named:
            return f"{_short(node.value)} (names {', '.join(named)})"
        if isinstance(node.value, str) and (found := _use_in_code_string(node.value, rule)):
            return f"{_short(node.value)} (code in a string: {found})"
    return ""


def _class_pattern_use(node: ast.MatchClass, rule: Rule) -> str:
    """What a class pattern reads: `case object(autograd=a)` the attribute `autograd`, and
    `case C(a, b)` the attributes C.__match_args__ names, which a class gets from data (a
    dataclass's field names, a namedtuple's); builtins match the subject itself."""
    self_matching = isinstance(node.cls, ast.Name) and node.cls.id in SELF_MATCHING_TYPES
    if node.patterns and not (self_matching and len(node.patterns) == 1):
        return "a class pattern with positional parts (attributes named by __match_args__)"
    return next(filter(None, (_attribute_use(name, rule) for name in node.kwd_attrs)), "")


def _use_in_code_string(text: str, rule: Rule) -> str:
    """The first use in a string that is itself a Python expression, "" if none or not code.

    Python evaluates such strings by name in places no rule sees as a call (annotations that
    `typing.get_type_hints` resolves, say), so they are held to the rule like code; prose
    does not parse as an expression.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return ""
    found = _uses_in(tree, rule)
    return found[0][1] if found else ""


def _attribute_use(attribute: str, rule: Rule) -> str:
    if rule.forbids_attribute(attribute):
        return f".{attribute}"
    if attribute in TORCH_BACKDOORS:
        return f".{attribute} (torch's low-level entry points)"
    if attribute in DYNAMIC_ATTRIBUTES:
        return f".{attribute} (attributes looked up by name)"
    if attribute in FRAME_ATTRIBUTES:
        return f".{attribute} (frames and code objects)"
    if attribute in PROCESS_ATTRIBUTES:
        return f".{attribute} (work in another process, which run-time checks do not see)"
    return ""


def _import_use(module: str, rule: Rule, submission_modules: frozenset[str]) -> str:
    if _under(module, rule.modules):
        return f"import of {module}"
    if _under(module, DYNAMIC_MODULES):
        return f"import of {module} (attributes looked up by name)"
    # `from m import name` reads m's attribute `name`, as `m.name` would; but a name taken
    # from the student's own file is their own code, which the rule reads where it is made
    # (a notebook cell's `from custom_sigmoid import sigmoid` in custom_sigmoid.py itself).
    # The packages on the way are attributes read too: `from torch._C import x` reads _C.
    # (Package names such as torch.nn.modules are no namespace read as data.)
    parts = module.split(".")
    top, packages, last = parts[0], parts[1:-1], parts[-1]
    if top in submission_modules:
        return ""
    if last == "*":
        # Binds every public name of the module as a bare name, which no attribute rule reads
        # (`from torch.nn.functional import *` then `mse_loss(...)`).
        return f"from {'.'.join(parts[:-1])} import *"
    if _attribute_use(last, rule) or any(
        rule.forbids_attribute(package) or package in TORCH_BACKDOORS for package in packages
    ):
        return f"import of {module}"
    return ""


def _names_in_constant(value: object, rule: Rule) -> list[str]:
    """What `rule` forbids, named in a string or bytes constant that could be looked up.

    Bytes are read whole (a pickle names its globals as text); a string is read when it is
    one word or dotted path, not prose, so messages that mention a name stay allowed.
    """
    if isinstance(value, bytes):
        text = value.decode("latin-1")
    elif isinstance(value, str) and not any(c.isspace() for c in value.strip()):
        text = value
    else:
        return []
    # Attribute names too: getattr(frame, "f_locals") and "0.f_locals" read what .f_locals does.
    forbidden = rule.strings | rule.attributes | TORCH_BACKDOORS
    forbidden |= DYNAMIC_ATTRIBUTES | FRAME_ATTRIBUTES
    tokens = set(NAME_TOKEN.findall(text))
    named = sorted(tokens & forbidden)
    named += sorted(token for token in tokens - forbidden if rule.forbids_attribute(token))
    named += sorted(module for module in rule.modules if module in text)
    return named


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _numpy_aliases(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Names bound to the numpy module, and names imported from it."""
    modules: set[str] = set()
    functions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "numpy" or alias.name.startswith("numpy."):
                    modules.add(alias.asname or "numpy")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numpy":
            functions.update(alias.asname or alias.name for alias in node.names)
    return modules, functions


def cpu_only_uses(source: str) -> list[str]:
    """One "line N: what" per use that works on CPU tensors only: numpy on tensors.

    `.numpy()` and numpy functions fail on CUDA tensors, so code that passes a CPU grade with
    them breaks on a GPU. Raises SyntaxError when `source` does not parse.
    """
    tree = ast.parse(source)
    modules, functions = _numpy_aliases(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args:
            found.append((node.lineno, ".numpy()"))
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id in modules:
                found.append((node.lineno, f"{func.value.id}.{func.attr}()"))
        elif isinstance(func, ast.Name) and func.id in functions:
            found.append((node.lineno, f"{func.id}() from numpy"))
    return [f"line {line}: {what}" for line, what in sorted(set(found))]
