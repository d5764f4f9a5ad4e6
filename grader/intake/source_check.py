"""A student's source file checked as Python would read it, without running it.

Decoded as Python decodes it (PEP 263 coding line, BOM, CRLF) and compiled, each file in a
limited child (`grader.intake.bounded`), because a hostile file can make the parser slow or
hungry: a syntax error or an unusable file is then reported once, not once per test.

The compiled code also says which modules the file imports (`module_imports`, leaving out
imports that only a top-level `if __name__ == "__main__":` block makes: `live_imports`): what
a part's jobs may import and its source rules read (grader/rules.py, `import_closure`).
"""

from __future__ import annotations

import ast
import dis
import io
import re
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType

from grader.intake.bounded import OUT_OF_MEMORY, TIMEOUT, Outcome, content_key, run_bounded
from grader.intake.integrity import Reach, is_main_guard, reaching_uses

# Wall-clock bound for decoding and compiling one source file in its limited child: real
# files take milliseconds.
SOURCE_CHECK_SECONDS = 10.0
CHECK_MEMORY_BYTES = 1 << 30
# PEP 263: a coding declaration on line 1 or 2 (group 1 is everything before the name).
CODING_LINE = re.compile(r"^([ \t\f]*#.*?coding[:=][ \t]*)[-\w.]+", re.ASCII)
# A line 1 after which Python looks for the declaration on line 2 (as `tokenize` does).
BLANK_OR_COMMENT = re.compile(r"[ \t\f]*(?:#|$)")


@dataclass(frozen=True)
class CheckedSource:
    # The clean text, None if the file is unusable (not text, too complex to check).
    text: str | None
    # Why no part that needs the file can run, for students; "" if nothing.
    problem: str
    # Top-level names of the modules it imports when imported (`live_imports`); none if it
    # did not compile.
    imports: tuple[str, ...]
    # Where it reaches into the grader's objects, and where it looks names up at run time
    # (`grader.intake.integrity.reaching_uses`).
    reach: Reach = field(default_factory=Reach)


def check_sources(files: list[tuple[str, bytes]]) -> list[CheckedSource]:
    """Each (name, bytes) decoded and compiled, in a limited child."""
    outcomes = run_bounded(
        [_source_task(name, data) for name, data in files],
        seconds=SOURCE_CHECK_SECONDS,
        memory_bytes=CHECK_MEMORY_BYTES,
        keys=[content_key("source check", name, data) for name, data in files],
    )
    return [
        _source_outcome(name, outcome) for (name, _), outcome in zip(files, outcomes, strict=True)
    ]


def too_complex(what: str, outcome: Outcome, seconds: float) -> str:
    if outcome.failure == TIMEOUT:
        return (
            f"{what} is too complex to check in {seconds:g} s; simplify it "
            "(split very long expressions, f-strings or literals)."
        )
    if outcome.failure == OUT_OF_MEMORY:
        return (
            f"{what} needs more than {CHECK_MEMORY_BYTES >> 20} MiB of memory to check; "
            "simplify it (split very long expressions, f-strings or literals)."
        )
    return f"{what} could not be checked (the checker stopped on it); simplify it."


def _source_task(name: str, data: bytes) -> Callable[[], list[object]]:
    def task() -> list[object]:
        checked = inspect_source(name, data)
        reach = checked.reach
        imports = list(checked.imports)
        return [checked.text, checked.problem, imports, list(reach.refused), list(reach.lookups)]

    return task


def _source_outcome(name: str, outcome: Outcome) -> CheckedSource:
    """A bounded `inspect_source`'s JSON back as a `CheckedSource`, or why it has none."""
    value = outcome.value
    if outcome.failure or not (isinstance(value, list) and len(value) == 5):
        return CheckedSource(None, too_complex(name, outcome, SOURCE_CHECK_SECONDS), ())
    text, problem, imports, refused, lookups = value
    return CheckedSource(
        text if isinstance(text, str) else None,
        str(problem),
        tuple(map(str, imports)),
        Reach(tuple(map(str, refused)), tuple(map(str, lookups))),
    )


def inspect_source(name: str, data: bytes) -> CheckedSource:
    """Decode and compile one source, and find where it reaches into the grader's objects.

    Pure and unbounded: run it through `grader.intake.bounded.run_bounded`.
    """
    text, problem = decode_source(name, data)
    if problem:
        return CheckedSource(None, problem, ())
    # Compiled without running: a syntax error is reported once, not once per test.
    try:
        code = compile(text, name, "exec", dont_inherit=True)
    except SyntaxError as error:
        problem = f"{name} has a syntax error on line {error.lineno}: {error.msg}."
        return CheckedSource(text, problem, ())
    except (ValueError, MemoryError, RecursionError) as error:
        return CheckedSource(text, f"{name} cannot be compiled: {type(error).__name__}.", ())
    imports = tuple(dict.fromkeys(live_imports(name, text, code)))
    return CheckedSource(text, "", imports, reaching_uses(text, code))


def live_imports(name: str, text: str, code: CodeType) -> list[str]:
    """`module_imports` of `code`, compiled from `text`, less the imports that only a top-level
    `if __name__ == "__main__":` block (or `'__main__' == __name__`) makes.

    Grading imports the file, so such a block never runs, and a module imported only there
    (a self-check that compares with another part) is left out of the part's import closure.
    That is safe because the closure is also all a job can import: code that sets `__name__`
    to run the block anyway gets an ImportError for that module, never its code. Its `else`
    branch runs on import and keeps its imports, as do the block's modules imported elsewhere.

    The syntax tree this needs (seconds for a hostile 1 MiB file, against milliseconds to read
    the bytecode) is built only when the module's own code names both `__name__` and the
    string "__main__" and imports something. Pure and unbounded, like `inspect_source`.
    """
    imports = list(module_imports(code))
    if not imports or "__name__" not in code.co_names or "__main__" not in _strings(code):
        return imports
    try:
        tree = ast.parse(text, filename=name)
        guards = [node for node in tree.body if isinstance(node, ast.If) and is_main_guard(node)]
        if not guards:
            return imports
        for guard in guards:
            guard.body = [ast.copy_location(ast.Pass(), guard.body[0])]
        return list(module_imports(compile(tree, name, "exec", dont_inherit=True)))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return imports  # every import, as when the guard is not looked for


def _strings(code: CodeType) -> set[str]:
    return {constant for constant in code.co_consts if isinstance(constant, str)}


def module_imports(code: CodeType) -> Iterator[str]:
    """Top-level names of the modules `code` imports, in its functions and classes too
    (`live_imports` leaves out those of a `__main__` block).

    Read from the bytecode, which compiling costs next to nothing, rather than from a syntax
    tree (seconds for a hostile 1 MiB file): `import a.b` and `from a.b import c` name `a`,
    and `from . import x` names `x`. Code the compiler drops (`if 0: import x`) never runs
    and imports nothing. `__import__` and importlib are dynamic access, which the source
    rules refuse anyway.
    """
    relative = False
    for instruction in dis.get_instructions(code):
        if instruction.opname == "IMPORT_NAME":
            relative = not instruction.argval
            if not relative:
                yield str(instruction.argval).split(".")[0]
        elif instruction.opname == "IMPORT_FROM" and relative:
            yield str(instruction.argval)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            yield from module_imports(constant)


def decode_source(name: str, data: bytes) -> tuple[str, str]:
    """Source text, UTF-8 with BOM and CRLF normalised, or a message saying why it is unusable.

    A PEP 263 coding line (`# -*- coding: latin-1 -*-`) is honoured, as Python would, and
    rewritten to utf-8, because the clean copy is stored (and read back) as UTF-8.
    """
    if b"\0" in data:
        return "", f"{name} is not a text file (it contains NUL bytes); submit the .py source."
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "unknown encoding" in str(error.msg):
            return "", f"{name}: {error.msg}; save the file as UTF-8 in your editor."
        encoding = "utf-8"  # no usable coding line: Python reads UTF-8, so do we
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        declared = "" if encoding.startswith("utf-8") else f" (its coding line says {encoding})"
        return "", (
            f"{name} is not valid {encoding.upper()}{declared} at byte {error.start}; save it "
            "as UTF-8 in your editor."
        )
    except LookupError:  # a binary codec such as hex or zlib: Python refuses it too
        return "", (
            f"{name}: its coding line names {encoding!r}, which is not a text encoding; "
            "remove that line and save the file as UTF-8 in your editor."
        )
    except (UnicodeError, ValueError, TypeError) as error:
        return "", (
            f"{name} cannot be decoded as {encoding} ({type(error).__name__}); remove its "
            "coding line and save it as UTF-8 in your editor."
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return "", (
            f"{name} decodes to characters that are not valid Unicode (at character "
            f"{error.start}); save it as UTF-8 in your editor."
        )
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n", 2)
    for index in range(min(2, len(lines))):
        lines[index], replaced = CODING_LINE.subn(r"\g<1>utf-8", lines[index], count=1)
        if replaced or not BLANK_OR_COMMENT.match(lines[index]):
            break  # a declaration on line 1, or code there: line 2 is not read
    return "\n".join(lines), ""


def import_closure(imports: Mapping[str, Iterable[str]], start: str) -> list[str]:
    """`start`, then every file of `imports` it imports, directly or through another.

    The files a part's jobs can import and its source rules read: the same list for both, so
    no file runs in a job without its rules having read it.
    """
    by_module = {Path(name).stem: name for name in imports if name.endswith(".py")}
    queue, reached = [start], [start]
    while queue:
        for module in imports.get(queue.pop(0), ()):
            imported = by_module.get(module)
            if imported is not None and imported not in reached:
                reached.append(imported)
                queue.append(imported)
    return reached
